#include "harness.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Formats v in decimal into buf (at least 21 bytes) without the C library: it runs in a child
 * of a threaded process, between fork and exec, where only async-signal-safe calls belong. */
static void format_pid(char *buf, long v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && n < sizeof tmp);
    while (n > 0)
        *buf++ = tmp[--n];
    *buf = '\0';
}

/* Forks and execs bin. With listen_fd >= 0 the child gets it as descriptor 3 and the socket
 * activation variables LISTEN_FDS=1 and LISTEN_PID=<its own pid>. */
static pid_t spawn(const char *bin, const char *const *pre, const char *const *args,
                   const char *const *env, int listen_fd, int *out_fd, int *err_fd)
{
    static char listen_pid[40] = "LISTEN_PID=";
    int out[2], err[2];
    const char *argv[64];
    char *envp[256];
    size_t n = 0, e = 0;

    if (pipe(out) != 0 || pipe(err) != 0)
        return -1;
    argv[n++] = bin;
    for (size_t i = 0; pre && pre[i] && n < 62; i++)
        argv[n++] = pre[i];
    for (size_t i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    /* The child sees our environment less any SLOWSRV_* variable, plus the test's own. glibc
     * fills what malloc hands out with 0x5a (MALLOC_PERTURB_), so a field the server forgets
     * to set reads as garbage in every build, not as the zero a fresh heap page happens to
     * hold (an unset flag once passed here and failed only under ASan). */
    envp[e++] = (char *)(uintptr_t) "MALLOC_PERTURB_=165";
    for (char **p = environ; *p && e < 200; p++)
        if (strncmp(*p, "SLOWSRV_", 8) != 0 && strncmp(*p, "MALLOC_PERTURB_=", 16) != 0)
            envp[e++] = *p;
    for (size_t i = 0; env && env[i] && e < 252; i++)
        envp[e++] = (char *)(uintptr_t)env[i];
    if (listen_fd >= 0) {
        envp[e++] = (char *)(uintptr_t) "LISTEN_FDS=1";
        envp[e++] = listen_pid;
    }
    envp[e] = NULL;

    pid_t pid = fork();
    if (pid == 0) {
        if (listen_fd >= 0)
            format_pid(listen_pid + 11, (long)getpid());
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        close(out[1]);
        close(err[1]);
        int keep = 3;
        if (listen_fd >= 0) {
            if (listen_fd != 3)
                dup2(listen_fd, 3);
            keep = 4;
        }
        /* Nothing of the test runner's (ctest's log files) leaks into the server. */
        close_range((unsigned)keep, ~0U, 0);
        execve(bin, (char *const *)(uintptr_t)argv, envp);
        fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    *out_fd = out[0];
    *err_fd = err[0];
    return pid;
}

/* Reads the child's stderr up to its startup line and takes the port from it. */
static int await_startup(struct server *s, const char *bin);

int server_start(struct server *s, const char *bin, const char *const *args, const char *const *env)
{
    static const char *const pre[] = {"--port", "0", NULL};
    int out_fd;

    memset(s, 0, sizeof *s);
    s->pid = spawn(bin, pre, args, env, -1, &out_fd, &s->err_fd);
    if (s->pid < 0) {
        fprintf(stderr, "harness: cannot start %s\n", bin);
        return -1;
    }
    close(out_fd);
    return await_startup(s, bin);
}

int server_start_activated(struct server *s, const char *bin, const char *const *args)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    int out_fd;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(s, 0, sizeof *s);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        fprintf(stderr, "harness: cannot make a listening socket: %s\n", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    s->pid = spawn(bin, NULL, args, NULL, fd, &out_fd, &s->err_fd);
    close(fd);
    if (s->pid < 0)
        return -1;
    close(out_fd);
    if (await_startup(s, bin) != 0)
        return -1;
    if (s->port != ntohs(sa.sin_port)) {
        fprintf(stderr, "harness: the server says port %u, the socket it was handed is %u\n",
                s->port, ntohs(sa.sin_port));
        return -1;
    }
    return 0;
}

static int await_startup(struct server *s, const char *bin)
{
    size_t len = 0;
    double deadline = now_seconds() + 10;

    /* Read stderr byte by byte until the startup line: nothing after it may be consumed. */
    while (now_seconds() < deadline && len + 1 < sizeof s->startup) {
        struct pollfd pfd = {s->err_fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        char c;
        if (read(s->err_fd, &c, 1) != 1)
            break;
        if (c != '\n') {
            s->startup[len++] = c;
            continue;
        }
        s->startup[len] = '\0';
        const char *p = strstr(s->startup, " listening on http");
        if (p) {
            /* The port ends the URL (later words may hold other URLs: " control=..."). */
            char url[300];
            p += strlen(" listening on ");
            snprintf(url, sizeof url, "%.*s", (int)strcspn(p, " "), p);
            const char *colon = strrchr(url, ':');
            s->port = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
            return s->port ? 0 : -1;
        }
        fprintf(stderr, "server said: %s\n", s->startup);
        len = 0;
    }
    s->startup[len] = '\0';
    fprintf(stderr, "harness: %s gave no startup line within 10 s (last: '%s')\n", bin, s->startup);
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    close(s->err_fd);
    return -1;
}

static size_t drain_fd(int fd, char *buf, size_t len, size_t used)
{
    for (;;) {
        if (used + 1 >= len) {
            char junk[4096];
            if (read(fd, junk, sizeof junk) <= 0)
                break;
            continue;
        }
        ssize_t n = read(fd, buf + used, len - used - 1);
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    return used;
}

static int wait_exit(pid_t pid, int wait_ms)
{
    int status;
    double deadline = now_seconds() + wait_ms / 1000.0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (now_seconds() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(5000);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

int server_stop(struct server *s, int wait_ms, char *log, size_t loglen)
{
    char local[8192];
    kill(s->pid, SIGTERM);
    int rc = wait_exit(s->pid, wait_ms);
    if (!log) {
        log = local;
        loglen = sizeof local;
    }
    drain_fd(s->err_fd, log, loglen, 0);
    close(s->err_fd);
    if (rc != 0)
        fprintf(stderr, "harness: server exit status %d; its stderr:\n%s\n", rc, log);
    return rc;
}

int run_to_exit(const char *bin, const char *const *args, const char *const *env, char *out,
                size_t outlen, char *err, size_t errlen)
{
    int out_fd, err_fd;
    pid_t pid = spawn(bin, NULL, args, env, -1, &out_fd, &err_fd);
    if (pid < 0)
        return -1;
    int rc = wait_exit(pid, 10000);
    drain_fd(out_fd, out, outlen, 0);
    drain_fd(err_fd, err, errlen, 0);
    close(out_fd);
    close(err_fd);
    return rc;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct reply *r = userdata;
    size_t n = size * nmemb;
    size_t cap = sizeof r->body - 1;
    size_t stored = r->body_len < cap ? r->body_len : cap;
    size_t take = n < cap - stored ? n : cap - stored;
    memcpy(r->body + stored, ptr, take);
    r->body[stored + take] = '\0';
    r->body_len += n;
    if (n && !r->body_writes++)
        r->first_body_at = now_seconds() - r->started;
    if (n)
        r->last_body_at = now_seconds() - r->started;
    return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct reply *r = userdata;
    size_t n = size * nmemb;
    size_t used = strlen(r->headers);
    if (used + n < sizeof r->headers) {
        memcpy(r->headers + used, ptr, n);
        r->headers[used + n] = '\0';
    }
    return n;
}

static CURL *easy_for(const struct target *t, const char *method, const char *path, struct reply *r)
{
    size_t ulen = strlen(path) + 64;
    char *url = malloc(ulen);
    CURL *c = curl_easy_init();
    memset(r, 0, sizeof *r);
    r->started = now_seconds();
    snprintf(url, ulen, "%s://127.0.0.1:%u%s", t->tls ? "https" : "http", t->port, path);
    curl_easy_setopt(c, CURLOPT_URL, url); /* libcurl keeps a copy */
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS,
                     1L); /* the path as the test wrote it: no ../ squashed */
    free(url);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION,
                     t->http_version ? t->http_version : (long)CURL_HTTP_VERSION_1_1);
    if (t->tls) {
        /* The tests' certificate is a throw-away self-signed one. */
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (t->timeout_ms > 0)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, t->timeout_ms);
    else
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    return c;
}

void *http_easy(const struct target *t, const char *method, const char *path, struct reply *r)
{
    return easy_for(t, method, path, r);
}

int http_request(unsigned port, const char *method, const char *path, const char *body,
                 const char *const *headers, struct reply *r)
{
    struct target t = {port, 0, 0, 0};
    return http_request_to(&t, method, path, body, headers, r, NULL);
}

int http_request_to(const struct target *t, const char *method, const char *path, const char *body,
                    const char *const *headers, struct reply *r, long *version_out)
{
    struct curl_slist *hl = NULL;
    CURL *c = easy_for(t, method, path, r);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    for (size_t i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    if (hl)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    r->curl_code = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->seconds);
    curl_easy_getinfo(c, CURLINFO_STARTTRANSFER_TIME, &r->head_at);
    if (version_out)
        curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, version_out);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return r->curl_code;
}

const char *reply_header(const struct reply *r, const char *name, char *buf, size_t len)
{
    size_t nlen = strlen(name);
    for (const char *p = r->headers; *p;) {
        const char *eol = strstr(p, "\r\n");
        if (!eol)
            break;
        if (strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            while (*v == ' ')
                v++;
            size_t vlen = (size_t)(eol - v);
            if (vlen >= len)
                vlen = len - 1;
            memcpy(buf, v, vlen);
            buf[vlen] = '\0';
            return buf;
        }
        p = eol + 2;
    }
    return NULL;
}

const char *reply_timing(const struct reply *r, char *buf, size_t len)
{
    if (!reply_header(r, "Server-Timing", buf, len))
        return NULL;
    char *w = strstr(buf, "wait;dur=");
    if (w) {
        while (w > buf && (w[-1] == ' ' || w[-1] == ','))
            w--;
        *w = '\0';
    }
    return buf;
}

double reply_wait_ms(const struct reply *r)
{
    char v[256];
    const char *w = reply_header(r, "Server-Timing", v, sizeof v) ? strstr(v, "wait;dur=") : NULL;
    return w ? strtod(w + strlen("wait;dur="), NULL) : -1;
}

double http_concurrent(unsigned port, const char *path, size_t n, long *status, double *seconds,
                       int *body_ok, const char *want_body)
{
    struct target t = {port, 0, 0, 0};
    return http_concurrent_to(&t, path, n, n, status, seconds, body_ok, want_body);
}

double http_concurrent_to(const struct target *t, const char *path, size_t n, size_t max_conns,
                          long *status, double *seconds, int *body_ok, const char *want_body)
{
    CURLM *m = curl_multi_init();
    int multiplex = t->http_version >= (long)CURL_HTTP_VERSION_2_0;
    CURL **easies = calloc(n, sizeof *easies);
    struct reply *replies = calloc(n, sizeof *replies);
    int running = 0;
    double start = now_seconds();

    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)max_conns);
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)max_conns);
    curl_multi_setopt(m, CURLMOPT_PIPELINING, multiplex ? CURLPIPE_MULTIPLEX : CURLPIPE_NOTHING);
    if (multiplex)
        curl_multi_setopt(m, CURLMOPT_MAX_CONCURRENT_STREAMS,
                          (long)((n + max_conns - 1) / max_conns));
    for (size_t i = 0; i < n; i++) {
        easies[i] = easy_for(t, "GET", path, &replies[i]);
        if (multiplex)
            curl_easy_setopt(easies[i], CURLOPT_PIPEWAIT, 1L);
        if (!t->timeout_ms && max_conns >= n) /* a connection of its own each, opened at once */
            curl_easy_setopt(easies[i], CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(easies[i], CURLOPT_PRIVATE, (void *)&replies[i]);
        curl_multi_add_handle(m, easies[i]);
    }
    do {
        curl_multi_perform(m, &running);
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    } while (running);
    for (size_t i = 0; i < n; i++) {
        curl_easy_getinfo(easies[i], CURLINFO_RESPONSE_CODE, &status[i]);
        curl_easy_getinfo(easies[i], CURLINFO_TOTAL_TIME, &seconds[i]);
        body_ok[i] = strcmp(replies[i].body, want_body) == 0;
        curl_multi_remove_handle(m, easies[i]);
        curl_easy_cleanup(easies[i]);
    }
    double wall = now_seconds() - start;
    free(easies);
    free(replies);
    curl_multi_cleanup(m);
    return wall;
}

int *open_requests(unsigned port, const char *path, size_t n, size_t *sent_out)
{
    int *fds = calloc(n, sizeof *fds);
    char req[256];
    size_t sent = 0;
    struct sockaddr_in sa;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    for (size_t i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] < 0)
            continue;
        if (connect(fds[i], (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(fds[i]);
            fds[i] = -1;
            continue;
        }
        if (write(fds[i], req, (size_t)len) == len)
            sent++;
    }
    *sent_out = sent;
    return fds;
}

void close_requests(int *fds, size_t n)
{
    for (size_t i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

struct gen {
    size_t size;
    size_t pos;
    size_t *sent;       /* total bytes handed to libcurl, shared by all parts */
    size_t abort_after; /* 0: never */
};

static size_t on_gen_read(char *buf, size_t size, size_t nitems, void *arg)
{
    struct gen *g = arg;
    size_t n = size * nitems;
    if (n > g->size - g->pos)
        n = g->size - g->pos;
    if (g->abort_after && *g->sent + n > g->abort_after)
        return CURL_READFUNC_ABORT;
    /* A pattern with the bytes a boundary scan must not be fooled by. */
    static const char pattern[] = "\r\n--abc-\r\n0123456789abcdefghijklmnopqrstuvwxyz-\r";
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern[(g->pos + i) % (sizeof pattern - 1)];
    g->pos += n;
    *g->sent += n;
    return n;
}

static int on_gen_seek(void *arg, curl_off_t offset, int origin)
{
    struct gen *g = arg;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > g->size)
        return CURL_SEEKFUNC_FAIL;
    g->pos = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

int http_upload(const struct target *t, const char *path, const struct part *parts, size_t n,
                struct reply *r, size_t abort_after)
{
    return http_upload_chunked(t, path, parts, n, r, abort_after, 0, NULL);
}

int http_upload_chunked(const struct target *t, const char *path, const struct part *parts,
                        size_t n, struct reply *r, size_t abort_after, int chunked,
                        size_t *sent_out)
{
    CURL *c = easy_for(t, "POST", path, r);
    struct curl_slist *hl = NULL;
    if (chunked) {
        hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    }
    curl_mime *mime = curl_mime_init(c);
    struct gen gens[8];
    size_t sent = 0;
    for (size_t i = 0; i < n && i < 8; i++) {
        curl_mimepart *mp = curl_mime_addpart(mime);
        curl_mime_name(mp, parts[i].name);
        if (parts[i].filename)
            curl_mime_filename(mp, parts[i].filename);
        if (parts[i].data) {
            curl_mime_data(mp, parts[i].data, CURL_ZERO_TERMINATED);
        } else {
            gens[i] = (struct gen){parts[i].size, 0, &sent, abort_after};
            curl_mime_data_cb(mp, (curl_off_t)parts[i].size, on_gen_read, on_gen_seek, NULL,
                              &gens[i]);
        }
    }
    curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    r->curl_code = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->seconds);
    curl_mime_free(mime);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    if (sent_out)
        *sent_out = sent;
    return r->curl_code;
}
