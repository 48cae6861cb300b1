/*
 * The helpers of itest.h, and the engine records that say how the two binaries differ.
 */
#include "itest.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const mhd_models[] = {"epoll", "poll", "select", "thread-per-connection", NULL};
static const char *const h2o_models[] = {"epoll", NULL};

static const struct engine_caps engines[] = {
    {"mhd", "slowsrv", mhd_models,
     ENGINE_STREAMS_UPLOADS | ENGINE_JSON_413 | ENGINE_DRAINS_AFTER_ERROR | ENGINE_LENGTH_ON_304 |
         ENGINE_LENGTH_ON_HEAD_OF_STREAM | ENGINE_DAEMONS_OF_128},
    {"h2o", "slowsrv-h2o", h2o_models,
     ENGINE_HTTP2 | ENGINE_SPOOLS_BODIES | ENGINE_ANSWERS_NOT_HTTP},
};

const struct engine_caps *engine_caps_from_version(const char *version)
{
    const char *p = strstr(version, "(engine ");
    if (!p)
        return NULL;
    p += strlen("(engine ");
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++) {
        size_t len = strlen(engines[i].name);
        if (strncmp(p, engines[i].name, len) == 0 && (p[len] == ',' || p[len] == ')'))
            return &engines[i];
    }
    return NULL;
}

int engine_has_model(const struct engine_caps *caps, const char *model)
{
    for (size_t i = 0; caps->models[i]; i++)
        if (strcmp(caps->models[i], model) == 0)
            return 1;
    return 0;
}

int itest_has(const struct itest_env *env, unsigned features)
{
    return (env->caps->features & features) == features;
}

void stop_expect_clean(struct server *s)
{
    CHECK_INT(server_stop(s, 15000, NULL, 0), 0);
}

int server_stop_with(struct server *s, int sig, int wait_ms, char *log, size_t loglen)
{
    double deadline = now_seconds() + wait_ms / 1000.0;
    kill(s->pid, sig);
    /* WNOWAIT leaves the exited server a zombie: server_stop's SIGTERM then reaches nothing and
     * its wait collects the status that `sig` alone brought about. */
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid == s->pid)
            break;
        if (now_seconds() > deadline) {
            fprintf(stderr, "server_stop_with: no exit %d ms after signal %d\n", wait_ms, sig);
            kill(s->pid, SIGKILL);
            break;
        }
        usleep(5 * 1000);
    }
    return server_stop(s, 5000, log, loglen);
}

const char *stdout_to_file(const struct itest_env *env, const char *cwd, const char *out)
{
    static char path[512];
    char text[2048];
    snprintf(text, sizeof text, "#!/bin/sh\ncd '%s' || exit 126\nexec '%s' \"$@\" >>'%s'\n", cwd,
             env->bin, out);
    snprintf(path, sizeof path, "%s", write_file(env, "stdout-wrapper.sh", text));
    chmod(path, 0700);
    return path;
}

long read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        buf[0] = '\0';
        return -1;
    }
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return (long)n;
}

const char *write_file(const struct itest_env *env, const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", env->tmpdir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return path;
    fputs(text, f);
    fclose(f);
    return path;
}

double json_number(const cJSON *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, "."))
        o = cJSON_GetObjectItemCaseSensitive(o, tok);
    return cJSON_IsNumber(o) ? o->valuedouble : -1;
}

const struct target *h1(const struct server *s)
{
    static struct target t;
    t = (struct target){s->port, 0, CURL_HTTP_VERSION_1_1, 0};
    return &t;
}

cJSON *settled_stats(const struct target *t)
{
    struct reply r;
    cJSON *j = NULL;
    double t0 = now_seconds();
    do {
        cJSON_Delete(j);
        http_request_to(t, "GET", "/stats", NULL, NULL, &r, NULL);
        j = cJSON_Parse(r.body);
        if (json_number(j, "in_flight") == 0)
            break;
        usleep(20 * 1000);
    } while (now_seconds() - t0 < 3);
    return j;
}

double await_stat(const struct target *t, const char *path, double want, double timeout)
{
    struct reply *r = malloc(sizeof *r);
    double v = -1, t0 = now_seconds();
    for (; r;) {
        http_request_to(t, "GET", "/stats", NULL, NULL, r, NULL);
        cJSON *j = cJSON_Parse(r->body);
        v = json_number(j, path);
        cJSON_Delete(j);
        if (v == want || now_seconds() - t0 > timeout)
            break;
        usleep(10 * 1000);
    }
    free(r);
    if (v != want)
        fprintf(stderr, "await_stat: %s is %.0f after %.1f s, want %.0f\n", path, v, timeout, want);
    return v;
}

void answers_within(unsigned port, const char *path, const char *want, double lo, double hi)
{
    struct reply r;
    http_request(port, "GET", path, NULL, NULL, &r);
    if (r.status != 200 || strcmp(r.body, want) != 0 || r.seconds < lo || r.seconds > hi)
        CHECK_FAIL_("GET %s: %ld '%s' in %.3f s (want '%s' in %.3f..%.3f s)", path, r.status,
                    r.body, r.seconds, want, lo, hi);
    else
        check_passed++;
}

void all_answered_within(size_t n, const long *status, const double *secs, const int *ok, double lo,
                         double hi)
{
    unsigned good = 0, in_bounds = 0;
    double fastest = 1e9, slowest = 0;
    for (size_t i = 0; i < n; i++) {
        good += status[i] == 200 && ok[i];
        in_bounds += secs[i] >= lo && secs[i] <= hi;
        fastest = secs[i] < fastest ? secs[i] : fastest;
        slowest = secs[i] > slowest ? secs[i] : slowest;
    }
    CHECK_INT(good, n);
    CHECK_INT(in_bounds, n);
    if (in_bounds != n)
        fprintf(stderr, "want %.3f..%.3f s: fastest %.3f s, slowest %.3f s\n", lo, hi, fastest,
                slowest);
}

/* Listens on 127.0.0.1:8080, the default port, if it is free; returns the socket or -1. */
static int hold_default_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(8080)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

void expect_refused(const struct itest_env *env, const struct bad_case *c, int want_status)
{
    char out[4096], err[4096];
    /* A bad configuration is reported (exit 2) before anything is bound, whatever holds the
     * default port: `./dev run` serving in another shell while `./dev test` runs, here made
     * sure of by holding the port when it is free. */
    int held = want_status == 2 ? hold_default_port() : -1;
    int rc = run_to_exit(env->bin, c->args, c->env, out, sizeof out, err, sizeof err);
    if (held >= 0)
        close(held);
    CHECK_INT(rc, want_status);
    if (!strstr(err, c->want))
        CHECK_FAIL_("stderr '%s' lacks '%s'", err, c->want);
    else
        check_passed++;
    /* One line, no more. */
    char *nl = strchr(err, '\n');
    CHECK(nl && nl[1] == '\0');
}

long proc_status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':')
            kb = strtol(line + strlen(field) + 1, NULL, 10);
    fclose(f);
    return kb;
}

int listen_backlogs(unsigned port, unsigned *out, size_t max)
{
    struct {
        struct nlmsghdr nh;
        struct inet_diag_req_v2 req;
    } msg;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    long buf[4096]; /* aligned for the headers */
    int n = 0, done = 0;
    memset(&msg, 0, sizeof msg);
    msg.nh.nlmsg_len = sizeof msg;
    msg.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.req.sdiag_family = AF_INET;
    msg.req.sdiag_protocol = IPPROTO_TCP;
    msg.req.idiag_states = 1u << TCP_LISTEN;
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return -1;
    if (sendto(fd, &msg, sizeof msg, 0, (struct sockaddr *)&kernel, sizeof kernel) !=
        (ssize_t)sizeof msg) {
        close(fd);
        return -1;
    }
    while (!done) {
        ssize_t got = recv(fd, buf, sizeof buf, 0);
        if (got <= 0) {
            n = -1;
            break;
        }
        const char *p = (const char *)buf;
        size_t left = (size_t)got;
        while (!done && left >= sizeof(struct nlmsghdr)) {
            const struct nlmsghdr *h = (const void *)p;
            if (h->nlmsg_len < sizeof *h || h->nlmsg_len > left || h->nlmsg_type == NLMSG_ERROR) {
                n = -1;
                done = 1;
            } else if (h->nlmsg_type == NLMSG_DONE) {
                done = 1;
            } else {
                const struct inet_diag_msg *m = NLMSG_DATA(h);
                /* For a listening socket the "send queue" is its backlog (sk_max_ack_backlog). */
                if (ntohs(m->id.idiag_sport) == port) {
                    if ((size_t)n < max)
                        out[n] = m->idiag_wqueue;
                    n++;
                }
                size_t step = NLMSG_ALIGN(h->nlmsg_len);
                left = step < left ? left - step : 0;
                p += step;
            }
        }
    }
    close(fd);
    return n;
}

int raw_connect(unsigned port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int send_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int count_fds_of(pid_t pid, const char *kind)
{
    char dir[64], path[512], target[64];
    int n = 0;
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        target[len > 0 ? len : 0] = '\0';
        n += strncmp(target, kind, strlen(kind)) == 0;
    }
    closedir(d);
    return n;
}

int count_sockets(pid_t pid)
{
    return count_fds_of(pid, "socket:");
}

size_t read_until_close(int fd, char *buf, size_t len, int timeout_ms, int *closed)
{
    size_t used = 0;
    *closed = 0;
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, timeout_ms) <= 0)
            break;
        ssize_t n = recv(fd, buf + used, len - used - 1, 0);
        if (n <= 0) {
            *closed = 1;
            break;
        }
        used += (size_t)n;
        if (used + 1 >= len)
            break;
    }
    buf[used] = '\0';
    return used;
}

size_t read_until_text(int fd, char *buf, size_t len, const char *want, int timeout_ms)
{
    size_t n = 0;
    double until = now_seconds() + timeout_ms / 1000.0;
    buf[0] = '\0';
    while (!strstr(buf, want) && n + 1 < len && now_seconds() < until) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t got = recv(fd, buf + n, len - 1 - n, 0);
        if (got <= 0)
            break;
        n += (size_t)got;
        buf[n] = '\0';
    }
    return n;
}

int hold_port(const char *ip, unsigned *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 8) != 0 ||
                    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)) {
        close(fd);
        fd = -1;
    }
    *port = fd >= 0 ? ntohs(sa.sin_port) : 0;
    return fd;
}

int holder_reached(int holder)
{
    struct pollfd pfd = {holder, POLLIN, 0};
    if (poll(&pfd, 1, 1000) != 1)
        return 0;
    int c = accept(holder, NULL, NULL);
    if (c < 0)
        return 0;
    close(c);
    return 1;
}

/* CPU seconds (user + system) a process has used so far. */
double proc_cpu_seconds(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The control API's port, from the startup line (" control=http://127.0.0.1:PORT"). */
unsigned control_port_of(const struct server *s)
{
    const char *p = strstr(s->startup, " control=http");
    if (!p)
        return 0;
    p = strrchr(p, ':');
    return p ? (unsigned)strtoul(p + 1, NULL, 10) : 0;
}
