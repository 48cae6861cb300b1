#include "base/cpus.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The quota in dir, rounded up, or 0 for none: cgroup v2's cpu.max "QUOTA PERIOD" ("max
 * PERIOD": none), or with v1 cpu.cfs_quota_us and cpu.cfs_period_us (-1: none). What was read goes
 * into text: "cpu.max 150000/100000". */
static unsigned read_quota(const char *dir, int v1, char *text, size_t len)
{
    char path[8300], q[32] = "", p[32] = "";
    int n = 0;
    FILE *f;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, v1 ? "cpu.cfs_quota_us" : "cpu.max") >=
        sizeof path)
        return 0;
    if ((f = fopen(path, "r")) != NULL) {
        n = v1 ? fscanf(f, "%31s", q) : fscanf(f, "%31s %31s", q, p);
        fclose(f);
    }
    if (v1 && n == 1) {
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if ((f = fopen(path, "r")) != NULL) {
            n += fscanf(f, "%31s", p);
            fclose(f);
        }
    }
    char *end1, *end2;
    unsigned long long quota = strtoull(q, &end1, 10), period = strtoull(p, &end2, 10);
    if (n != 2 || *end1 || *end2 || end1 == q || end2 == p || !quota || !period || q[0] == '-')
        return 0;
    snprintf(text, len, "%s %llu/%llu", v1 ? "cpu.cfs_quota_us" : "cpu.max", quota, period);
    unsigned long long cpus = (quota + period - 1) / period;
    return cpus > 4096 ? 4096 : (unsigned)cpus;
}

/* The smallest quota from the cgroup `rel` (under the mount `mount`) up to the mount. A
 * container's mount may be its own cgroup while rel names it from the host: the dirs that do not
 * exist are passed over on the way up. */
static unsigned walk(const char *mount, const char *rel, int v1, char *text, size_t len)
{
    char dir[8192];
    snprintf(dir, sizeof dir, "%s%s", mount, strcmp(rel, "/") == 0 ? "" : rel);
    size_t root = strlen(mount);
    unsigned best = 0;
    for (;;) {
        char t[64];
        unsigned q = read_quota(dir, v1, t, sizeof t);
        if (q && (!best || q < best)) {
            best = q;
            snprintf(text, len, "%s", t);
        }
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= root || !slash || (size_t)(slash - dir) < root)
            break;
        *slash = '\0';
    }
    return best;
}

/* 1 if the comma-separated list names controller c. */
static int has_controller(const char *list, size_t n, const char *c)
{
    size_t cl = strlen(c);
    for (const char *p = list; p < list + n;) {
        const char *comma = memchr(p, ',', (size_t)(list + n - p));
        size_t l = comma ? (size_t)(comma - p) : (size_t)(list + n - p);
        if (l == cl && memcmp(p, c, cl) == 0)
            return 1;
        p += l + 1;
    }
    return 0;
}

/* The process's CPU quota from cgroup_file (/proc/self/cgroup): the v2 line "0::/path" under
 * mount, or a v1 line "N:cpu,cpuacct:/path" under mount/cpu or mount/cpu,cpuacct. */
static unsigned cgroup_quota(const char *cgroup_file, const char *mount, char *text, size_t len)
{
    FILE *f = fopen(cgroup_file, "r");
    if (!f)
        return 0;
    char line[4096];
    unsigned best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        unsigned q = 0;
        char t[64], dir[4096];
        if (c2 == c1 + 1 && strncmp(line, "0:", 2) == 0) {
            q = walk(mount, c2 + 1, 0, t, sizeof t);
        } else if (has_controller(c1 + 1, (size_t)(c2 - c1 - 1), "cpu")) {
            static const char *const names[] = {"cpu", "cpu,cpuacct", "cpuacct,cpu"};
            for (size_t i = 0; !q && i < sizeof names / sizeof names[0]; i++) {
                snprintf(dir, sizeof dir, "%s/%s", mount, names[i]);
                if (access(dir, F_OK) == 0)
                    q = walk(dir, c2 + 1, 1, t, sizeof t);
            }
        }
        if (q && (!best || q < best)) {
            best = q;
            snprintf(text, len, "%s", t);
        }
    }
    fclose(f);
    return best;
}

unsigned cpus_usable(struct cpus_limit *lim, const char *cgroup_file, const char *cgroup_mount)
{
    memset(lim, 0, sizeof *lim);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    lim->online = online > 0 ? (unsigned)online : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        lim->affinity = (unsigned)CPU_COUNT(&set);
    if (cgroup_file && cgroup_mount)
        lim->quota =
            cgroup_quota(cgroup_file, cgroup_mount, lim->quota_text, sizeof lim->quota_text);
    unsigned n = lim->online;
    if (lim->affinity && lim->affinity < n)
        n = lim->affinity;
    if (lim->quota && lim->quota < n)
        n = lim->quota;
    return n ? n : 1;
}

void cpus_describe(const struct cpus_limit *lim, unsigned n, char *buf, size_t len)
{
    if (lim->quota && lim->quota == n)
        snprintf(buf, len, "%s", lim->quota_text);
    else if (lim->affinity && lim->affinity == n && lim->affinity < lim->online)
        snprintf(buf, len, "affinity %u of %u CPUs", lim->affinity, lim->online);
    else
        snprintf(buf, len, "%u CPUs online", lim->online);
}
