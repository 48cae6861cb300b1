#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cpus.h"
#include "check.h"

/* A fake cgroup v2 mount under a temp dir: /proc/self/cgroup says "0::/<rel>", and cpu.max files
 * sit where `quotas` says (a dir relative to the mount, then its cpu.max text; NULL ends). */
static char root[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static unsigned usable(const char *self, struct cpus_limit *lim)
{
    char file[300], mount[300];
    snprintf(file, sizeof file, "%s/self.cgroup", root);
    snprintf(mount, sizeof mount, "%s/mnt", root);
    put("self.cgroup", self);
    return cpus_usable(lim, file, mount);
}

static void fresh(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (root[0] && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", root);
    snprintf(root, sizeof root, "/tmp/slowsrv-test-cpus.XXXXXX");
    if (!mkdtemp(root))
        root[0] = '\0';
    put("mnt/.keep", "");
}

static unsigned online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static unsigned in_mask(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : online();
}

static void quota_is_rounded_up(void)
{
    struct cpus_limit lim;
    char buf[80];
    fresh();
    put("mnt/pod/ctr/cpu.max", "100000 100000\n");
    unsigned n = usable("0::/pod/ctr\n", &lim);
    CHECK_INT(lim.quota, 1);
    CHECK_INT(n, 1);
    cpus_describe(&lim, n, buf, sizeof buf);
    CHECK_STR(buf, "cpu.max 100000/100000");
    /* 1.5 CPUs: two loops, one of them half-used, beat one loop throttled. */
    put("mnt/pod/ctr/cpu.max", "150000 100000\n");
    usable("0::/pod/ctr\n", &lim);
    CHECK_INT(lim.quota, 2);
    put("mnt/pod/ctr/cpu.max", "1 100000\n");
    usable("0::/pod/ctr\n", &lim);
    CHECK_INT(lim.quota, 1);
}

static void the_smallest_quota_up_the_tree_counts(void)
{
    struct cpus_limit lim;
    fresh();
    /* The pod is limited to 2 CPUs, the container itself to none ("max"). */
    put("mnt/pod/cpu.max", "200000 100000\n");
    put("mnt/pod/ctr/cpu.max", "max 100000\n");
    usable("0::/pod/ctr\n", &lim);
    CHECK_INT(lim.quota, 2);
    CHECK_STR(lim.quota_text, "cpu.max 200000/100000");
    /* A container in its own cgroup namespace sees its cgroup as the mount's root. */
    fresh();
    put("mnt/cpu.max", "300000 100000\n");
    usable("0::/\n", &lim);
    CHECK_INT(lim.quota, 3);
}

/* cgroup v1 (docker or podman on a v1 host): cpu.cfs_quota_us over cpu.cfs_period_us under the
 * cpu controller's mount, whatever name it has; -1 is no quota. */
static void cgroup_v1_quota_counts(void)
{
    struct cpus_limit lim;
    char buf[80];
    fresh();
    put("mnt/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n");
    put("mnt/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    put("mnt/cpu,cpuacct/docker/cpu.cfs_quota_us", "-1\n");
    put("mnt/cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n");
    unsigned n = usable("12:pids:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/docker/abc\n", &lim);
    CHECK_INT(lim.quota, 2);
    CHECK_STR(lim.quota_text, "cpu.cfs_quota_us 150000/100000");
    /* Inside the container the mount is its own cgroup, and the path names it from the host. */
    fresh();
    put("mnt/cpu/cpu.cfs_quota_us", "100000\n");
    put("mnt/cpu/cpu.cfs_period_us", "100000\n");
    n = usable("3:cpu:/machine.slice/libpod-123.scope\n", &lim);
    CHECK_INT(lim.quota, 1);
    CHECK_INT(n, 1);
    cpus_describe(&lim, n, buf, sizeof buf);
    CHECK_STR(buf, "cpu.cfs_quota_us 100000/100000");
    /* -1: none; "cpuacct" alone is not the cpu controller. */
    put("mnt/cpu/cpu.cfs_quota_us", "-1\n");
    usable("3:cpu:/\n", &lim);
    CHECK_INT(lim.quota, 0);
    put("mnt/cpu/cpu.cfs_quota_us", "100000\n");
    usable("3:cpuacct:/\n", &lim);
    CHECK_INT(lim.quota, 0);
}

static void no_quota_leaves_the_cpus(void)
{
    struct cpus_limit lim;
    char buf[80];
    fresh();
    put("mnt/pod/ctr/cpu.max", "max 100000\n");
    unsigned n = usable("0::/pod/ctr\n", &lim);
    CHECK_INT(lim.quota, 0);
    CHECK_INT(n, in_mask() < online() ? in_mask() : online());
    /* cgroup v1 only (no "0::" line), or garbage: no quota. */
    put("mnt/pod/ctr/cpu.max", "50000 100000\n");
    CHECK_INT(usable("4:cpu,cpuacct:/pod/ctr\n", &lim), n);
    CHECK_INT(lim.quota, 0);
    put("mnt/pod/ctr/cpu.max", "lots 100000\n");
    usable("0::/pod/ctr\n", &lim);
    CHECK_INT(lim.quota, 0);
    put("mnt/pod/ctr/cpu.max", "100000 0\n");
    usable("0::/pod/ctr\n", &lim);
    CHECK_INT(lim.quota, 0);
    CHECK_INT(cpus_usable(&lim, NULL, NULL), n);
    cpus_describe(&lim, n, buf, sizeof buf);
    CHECK(strstr(buf, in_mask() < online() ? "affinity" : "online") != NULL);
}

static void the_affinity_mask_counts(void)
{
    struct cpus_limit lim;
    char buf[80];
    cpu_set_t old, one;
    if (sched_getaffinity(0, sizeof old, &old) != 0)
        return;
    CPU_ZERO(&one);
    for (size_t i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &old)) {
            CPU_SET(i, &one);
            break;
        }
    CHECK_INT(sched_setaffinity(0, sizeof one, &one), 0);
    unsigned n = cpus_usable(&lim, NULL, NULL);
    CHECK_INT(n, 1);
    CHECK_INT(lim.affinity, 1);
    cpus_describe(&lim, n, buf, sizeof buf);
    char want[80];
    snprintf(want, sizeof want, online() > 1 ? "affinity 1 of %u CPUs" : "%u CPUs online",
             online());
    CHECK_STR(buf, want);
    sched_setaffinity(0, sizeof old, &old);
}

int main(void)
{
    quota_is_rounded_up();
    the_smallest_quota_up_the_tree_counts();
    cgroup_v1_quota_counts();
    no_quota_leaves_the_cpus();
    the_affinity_mask_counts();
    fresh();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", root);
    return CHECK_DONE();
}
