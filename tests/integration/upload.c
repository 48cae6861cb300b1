/*
 * Cases on POST /write: exact counts for every size and encoding, the answer to every bad
 * upload, clients that leave mid-body, concurrent uploads, and what each engine does with a big
 * body (streamed in flat memory, cut after an error, or spooled to disk).
 */
#include "itest.h"

#include <poll.h>
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Number of the server's open descriptors that are files on disk (not sockets, pipes, devices or
 * anonymous inodes): a spooled upload shows here. */
static int open_disk_files(pid_t pid)
{
    char dir[64], link[512], path[600];
    int n = 0;
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t len = readlink(path, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = '\0';
        n += link[0] == '/' && strncmp(link, "/dev/", 5) != 0;
    }
    closedir(d);
    return n;
}

/* The answer is the exact byte count of the data part, for every size and both encodings. */
static void upload_sizes_are_exact(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--delay", "0");
    static const size_t sizes[] = {0, 1, 5120, 512000, 64u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct part file[] = {{"token", NULL, "abc", 0}, {"data", "blob.bin", NULL, sizes[i]}};
        struct part field[] = {{"data", NULL, NULL, sizes[i]}, {"token", NULL, "abc", 0}};
        char want[32];
        snprintf(want, sizeof want, "%zu", sizes[i]);
        http_upload(h1(&s), "/write", file, 2, &r, 0);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body, want);
        http_upload(h1(&s), "/write", field, 2, &r, 0);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body, want);
    }
    /* Only the first data part counts. */
    struct part two[] = {{"data", "a", "12345", 0}, {"data", "b", "1234567", 0}};
    http_upload(h1(&s), "/write", two, 2, &r, 0);
    CHECK_STR(r.body, "5");
    stop_expect_clean(&s);
}

/* Every bad upload gets its 4xx with a JSON error that says what was wrong, and the server goes
 * on serving. */
static void upload_bad_inputs_get_4xx(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--max-body", "4K");
    static const struct {
        const char *ctype, *body;
        long status;
        const char *want;
    } cases[] = {
        {"Content-Type: text/plain", "hello", 415,
         "{\"error\": \"expected multipart/form-data, got text/plain\", \"status\": 415}"},
        {"Content-Type:", "hello", 415,
         "{\"error\": \"expected multipart/form-data, got no Content-Type\", \"status\": 415}"},
        {"Content-Type: multipart/form-data", "--x\r\n", 400,
         "{\"error\": \"multipart/form-data without a boundary (or an empty one)\", "
         "\"status\": 400}"},
        {"Content-Type: multipart/form-data; boundary=", "--x\r\n", 400,
         "{\"error\": \"multipart/form-data without a boundary (or an empty one)\", "
         "\"status\": 400}"},
        {"Content-Type: multipart/form-data; boundary=XY",
         "--XY\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\nabc", 400,
         "{\"error\": \"truncated multipart body: no closing boundary\", \"status\": 400}"},
        {"Content-Type: multipart/form-data; boundary=XY",
         "--XY\r\nthis is not a header\r\n\r\nabc\r\n--XY--\r\n", 400,
         "{\"error\": \"malformed multipart: bad part headers\", \"status\": 400}"},
        {"Content-Type: multipart/form-data; boundary=XY",
         "--XY\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nabc\r\n--XY--\r\n", 400,
         "{\"error\": \"no data part in the form\", \"status\": 400}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *hdrs[] = {cases[i].ctype, NULL};
        http_request(s.port, "POST", "/write", cases[i].body, hdrs, &r);
        CHECK_INT(r.status, cases[i].status);
        CHECK_STR(r.body, cases[i].want);
        http_request(s.port, "GET", "/echo", NULL, NULL, &r);
        CHECK_STR(r.body, "OK");
    }
    /* Over --max-body: by Content-Length at once. libh2o answers this 413 itself, with its own
     * text body (a documented difference). */
    struct part big[] = {{"data", "f", NULL, 8192}};
    http_upload(h1(&s), "/write", big, 1, &r, 0);
    CHECK_INT(r.status, 413);
    if (itest_has(env, ENGINE_JSON_413))
        CHECK_STR(r.body, "{\"error\": \"body exceeds --max-body 4096 bytes\", \"status\": 413}");
    http_request(s.port, "GET", "/write", NULL, NULL, &r);
    CHECK_INT(r.status, 405);
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    stop_expect_clean(&s);
}

/* --max-body holds on every route, not only on /write: a body over it, announced by
 * Content-Length or sent chunked, gets 413 on /, /echo and /test (before the 405 its method
 * would get), and the server goes on. */
static void max_body_holds_on_every_route(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    const char *args[] = {"--delay", "0", "--max-body", "4K", "--model", env->model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    static char body[20000];
    memset(body, 'a', sizeof body - 1);
    static const char *const paths[] = {"/", "/echo", "/test"};
    const char *chunked[] = {"Transfer-Encoding: chunked", NULL};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        for (int te = 0; te < 2; te++) {
            http_request(s.port, "POST", paths[i], body, te ? chunked : NULL, &r);
            if (r.status != 413)
                CHECK_FAIL_("POST %s (%s, 20 KB over --max-body 4K): %ld, want 413", paths[i],
                            te ? "chunked" : "Content-Length", r.status);
            if (itest_has(env, ENGINE_JSON_413))
                CHECK_STR(r.body,
                          "{\"error\": \"body exceeds --max-body 4096 bytes\", \"status\": 413}");
        }
        http_request(s.port, "POST", paths[i], "small", NULL, &r);
        CHECK_INT(r.status, i == 2 ? 405 : 200); /* /test is GET only */
    }
    stop_expect_clean(&s);
}

/* Without Content-Length (chunked), the 413 comes when the body crosses --max-body. */
static void upload_chunked_over_max_body_gets_413(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--max-body", "4K");
    const char *hdrs[] = {"Transfer-Encoding: chunked",
                          "Content-Type: multipart/form-data; boundary=XY", NULL};
    char body[9000];
    int n =
        snprintf(body, sizeof body,
                 "--XY\r\nContent-Disposition: form-data; name=\"data\"; filename=\"f\"\r\n\r\n");
    memset(body + n, 'a', sizeof body - (size_t)n - 1);
    body[sizeof body - 1] = '\0';
    http_request(s.port, "POST", "/write", body, hdrs, &r);
    CHECK_INT(r.status, 413);
    if (itest_has(env, ENGINE_JSON_413))
        CHECK_STR(r.body, "{\"error\": \"body exceeds --max-body 4096 bytes\", \"status\": 413}");
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    /* A 1 GiB chunked upload gets its 413 when it crosses --max-body, not at its end: libcurl
     * stops sending early. slowsrv answers mid-body and reads on, so the 413 always arrives;
     * libh2o answers and closes at once, and its close resets a client still sending, which
     * may then never read the 413 (libcurl: a send or receive error after "100 Continue"). */
    struct part big[] = {{"token", NULL, "t", 0}, {"data", "f", NULL, 1u << 30}};
    size_t sent = 0;
    double t0 = now_seconds();
    int rc = http_upload_chunked(h1(&s), "/write", big, 2, &r, 0, 1, &sent);
    if (!itest_has(env, ENGINE_DRAINS_AFTER_ERROR) && r.status != 413)
        CHECK(rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR);
    else
        CHECK_INT(r.status, 413);
    if (itest_has(env, ENGINE_JSON_413))
        CHECK_STR(r.body, "{\"error\": \"body exceeds --max-body 4096 bytes\", \"status\": 413}");
    if (sent > (64u << 20) || now_seconds() - t0 > 10)
        CHECK_FAIL_("413 came after %zu bytes and %.1f s: not when --max-body was crossed", sent,
                    now_seconds() - t0);
    http_request(s.port, "GET", "/echo", NULL, NULL, &r);
    CHECK_STR(r.body, "OK");
    stop_expect_clean(&s);
}

/* A client that gives up mid-upload leaves the server serving everyone else. libmicrohttpd 0.9.75
 * in epoll mode can lose track of such a connection until --idle-timeout reclaims it. */
static void upload_client_leaving_mid_body(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    START(env, &s, "--idle-timeout", "1s");
    for (int i = 0; i < 20; i++) {
        struct part big[] = {{"data", "f", NULL, 4u << 20}};
        int rc = http_upload(h1(&s), "/write", big, 1, &r, 1u << 20);
        CHECK_INT(rc, CURLE_ABORTED_BY_CALLBACK);
    }
    struct part ok[] = {{"data", "f", NULL, 5120}};
    http_upload(h1(&s), "/write", ok, 1, &r, 0);
    CHECK_STR(r.body, "5120");
    /* The server may still be reading what the clients sent before they left. */
    cJSON *j = NULL;
    double t0 = now_seconds();
    do {
        cJSON_Delete(j);
        usleep(20 * 1000);
        http_request(s.port, "GET", "/stats", NULL, NULL, &r);
        j = cJSON_Parse(r.body);
    } while (json_number(j, "in_flight") != 0 && now_seconds() - t0 < 5);
    fprintf(stderr, "abandoned uploads settled after %.2f s\n", now_seconds() - t0);
    CHECK_INT(json_number(j, "in_flight"), 0);
    /* libmicrohttpd hands the handler the first chunks, so the abandoned requests exist and are
     * cancels; libh2o drops a connection whose body never completed before any handler runs. */
    CHECK_INT(json_number(j, "routes./write.cancels"),
              itest_has(env, ENGINE_STREAMS_UPLOADS) ? 20 : 0);
    CHECK_INT(json_number(j, "routes./write.status.200"), 1);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

struct uploader {
    unsigned port;
    size_t size;
    struct reply r;
};

static void *run_upload(void *arg)
{
    struct uploader *u = arg;
    struct target t = {u->port, 0, CURL_HTTP_VERSION_1_1, 0};
    struct part p[] = {{"token", NULL, "t", 0}, {"data", "f", NULL, u->size}};
    http_upload(&t, "/write", p, 2, &u->r, 0);
    return NULL;
}

/* 50 concurrent uploads of different sizes each get their own exact count. */
static void uploads_50_concurrent(const struct itest_env *env)
{
    struct server s;
    static struct uploader up[50];
    pthread_t th[50];
    START(env, &s, "--delay", "0");
    for (size_t i = 0; i < 50; i++) {
        up[i].port = s.port;
        up[i].size = 100000 + i * 777;
        pthread_create(&th[i], NULL, run_upload, &up[i]);
    }
    unsigned exact = 0;
    for (size_t i = 0; i < 50; i++) {
        char want[32];
        pthread_join(th[i], NULL);
        snprintf(want, sizeof want, "%zu", up[i].size);
        exact += up[i].r.status == 200 && strcmp(up[i].r.body, want) == 0;
    }
    CHECK_INT(exact, 50);
    stop_expect_clean(&s);
}

struct big_upload {
    struct server *s;
    size_t size;
    struct reply r;
    volatile int done;
};

static void *run_big_upload(void *arg)
{
    struct big_upload *b = arg;
    struct part p[] = {{"token", NULL, "t", 0}, {"data", "big.bin", NULL, b->size}};
    http_upload(h1(b->s), "/write", p, 2, &b->r, 0);
    b->done = 1;
    return NULL;
}

/* slowsrv streams: a 1 GiB upload is counted exactly while the server's peak memory stays flat
 * and nothing is written to disk. (libh2o buffers bodies: not a case for slowsrv-h2o.) */
static void upload_1gib_flat_memory(const struct itest_env *env)
{
    struct server s;
    static struct big_upload b;
    pthread_t th;
    START(env, &s, "--max-body", "2G");
    long before = proc_status_kb(s.pid, "VmHWM");
    int files_before = open_disk_files(s.pid);
    CHECK_INT(files_before, 0);
    b.s = &s;
    b.size = 1u << 30;
    pthread_create(&th, NULL, run_big_upload, &b);
    int disk_files = 0;
    while (!b.done) {
        int n = open_disk_files(s.pid);
        disk_files = n > disk_files ? n : disk_files;
        usleep(50 * 1000);
    }
    pthread_join(th, NULL);
    long after = proc_status_kb(s.pid, "VmHWM");
    CHECK_INT(b.r.status, 200);
    CHECK_STR(b.r.body, "1073741824");
    CHECK_INT(disk_files, 0);
    if (after - before > 16 * 1024)
        CHECK_FAIL_("peak RSS grew by %ld KiB during a 1 GiB upload", after - before);
    else
        check_passed++;
#ifndef SLOWSRV_SANITIZED
    /* Without the sanitizers' shadow memory, the whole process stays under 16 MiB. */
    if (after > 16 * 1024)
        CHECK_FAIL_("peak RSS %ld KiB, want under 16 MiB", after);
    else
        check_passed++;
#endif
    fprintf(stderr, "1 GiB upload: %.2f s, VmHWM %ld -> %ld KiB\n", b.r.seconds, before, after);
    stop_expect_clean(&s);
}

/* libmicrohttpd: an upload error found mid-body is answered at once, once, with
 * Connection: close; the rest of the body is read and dropped up to 64 MiB past the error, and
 * then the client is cut off. Also for a chunked body crossing --max-body. */
static void upload_error_cuts_after_64mib(const struct itest_env *env)
{
    struct server s;
    static char chunk[65536];
    char buf[1024];
    int closed;
    START(env, &s, "--max-body", "1G");
    memset(chunk, 'a', sizeof chunk);
    for (int kind = 0; kind < 2; kind++) {
        int fd = raw_connect(s.port);
        const char *head =
            kind == 0 ? "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 209715200\r\n"
                        "Content-Type: multipart/form-data; boundary=B\r\n\r\n--B\r\n"
                        "Content-Disposition: form-data; name=\"data\"\r\nBroken\r\n\r\n"
                      : "POST /write?x=1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                        "Content-Type: multipart/form-data; boundary=B\r\n\r\n";
        send_all(fd, head, strlen(head));
        size_t sent = 0;
        char size_line[16];
        snprintf(size_line, sizeof size_line, "%zx\r\n", sizeof chunk);
        while (sent < (200u << 20)) {
            if (kind == 1 && send_all(fd, size_line, strlen(size_line)) != 0)
                break;
            if (send_all(fd, chunk, sizeof chunk) != 0)
                break;
            if (kind == 1 && send_all(fd, "\r\n", 2) != 0)
                break;
            sent += sizeof chunk;
        }
        read_until_close(fd, buf, sizeof buf, 3000, &closed);
        close(fd);
        if (sent < (64u << 20) || sent > (100u << 20))
            CHECK_FAIL_("kind %d: the client sent %zu MiB before it was cut off (want 64..100)",
                        kind, sent >> 20);
        else
            check_passed++;
        CHECK(strncmp(buf, kind == 0 ? "HTTP/1.1 400 " : "HTTP/1.1 413 ", 13) == 0);
        CHECK(strstr(buf, "Connection: close") != NULL);
        /* One answer, not two. */
        CHECK(strstr(buf + 1, "HTTP/1.1 ") == NULL);
        if (kind == 1)
            break;
        stop_expect_clean(&s);
        START(env, &s, "--max-body", "1M");
    }
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* An upload error written mid-body promises Connection: close, and the server keeps it: once the
 * rest of the body is in, it closes the connection itself, even from a client that keeps its end
 * open, and answers nothing more. A small body over a slow client: the error comes with its
 * first piece, the rest follows after the answer. */
static void upload_error_closes_at_the_end_of_the_body(const struct itest_env *env)
{
    struct server s;
    char buf[2048];
    int closed = 0;
    START(env, &s, NULL);
    static const char head[] = "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n"
                               "Content-Type: multipart/form-data; boundary=B\r\n\r\n";
    static const char broken[] = "--B\r\nContent-Disposition: form-data; name=\"data\"\r\n"
                                 "Broken\r\n\r\n";
    static char rest[4096];
    memset(rest, 'a', sizeof rest);
    int fd = raw_connect(s.port);
    send_all(fd, head, sizeof head - 1);
    send_all(fd, broken, sizeof broken - 1);
    /* The early answer, read before the rest is sent: all that comes within 2 s, until a pause
     * of 200 ms after its first bytes. */
    size_t got = 0;
    struct pollfd pfd = {fd, POLLIN, 0};
    for (int wait = 2000; got + 1 < sizeof buf && poll(&pfd, 1, wait) > 0; wait = 200) {
        ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    CHECK(strncmp(buf, "HTTP/1.1 400 ", 13) == 0);
    CHECK(strstr(buf, "Connection: close") != NULL);
    send_all(fd, rest, 4096 - (sizeof broken - 1));
    /* Then the end of the stream, within a second, and no second answer. */
    size_t more = read_until_close(fd, buf, sizeof buf, 1000, &closed);
    close(fd);
    CHECK_INT(closed, 1);
    CHECK_INT(more, 0);
    cJSON *j = settled_stats(h1(&s));
    CHECK_INT(json_number(j, "in_flight"), 0);
    cJSON_Delete(j);
    stop_expect_clean(&s);
}

/* 1 if, within `seconds`, process pid holds a deleted file whose path starts with `prefix`:
 * how libh2o's spool shows, as it unlinks its temporary file at once. */
static int holds_deleted_file(pid_t pid, const char *prefix, double seconds)
{
    char dir[64], fdpath[600], target[700];
    double t0 = now_seconds();
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    for (;;) {
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            snprintf(fdpath, sizeof fdpath, "%s/%s", dir, e->d_name);
            ssize_t n = readlink(fdpath, target, sizeof target - 1);
            target[n > 0 ? n : 0] = '\0';
            if (strncmp(target, prefix, strlen(prefix)) == 0 && strstr(target, "(deleted)")) {
                closedir(d);
                return 1;
            }
        }
        if (d)
            closedir(d);
        if (now_seconds() - t0 >= seconds)
            return 0;
        usleep(20 * 1000);
    }
}

/* The bytes process pid has read so far (rchar of /proc/<pid>/io: sockets included), or -1. */
static long long bytes_read_by(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
    if (read_text(path, text, sizeof text) <= 0 || strncmp(text, "rchar: ", 7) != 0)
        return -1;
    return strtoll(text + 7, NULL, 10);
}

/* Opens a connection and sends a /write request whose `data` part has `size` bytes, all but its
 * closing delimiter (send_closing_delimiter completes it): the server holds the body. */
static int send_held_upload(unsigned port, size_t size)
{
    static char chunk[65536];
    char head[256];
    static const char part[] = "--B\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n";
    memset(chunk, 'a', sizeof chunk);
    int fd = raw_connect(port);
    if (fd < 0)
        return -1;
    snprintf(head, sizeof head,
             "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n"
             "Content-Type: multipart/form-data; boundary=B\r\n\r\n%s",
             sizeof part - 1 + size + 7, part);
    send_all(fd, head, strlen(head));
    for (size_t sent = 0; sent < size; sent += sizeof chunk)
        send_all(fd, chunk, size - sent < sizeof chunk ? size - sent : sizeof chunk);
    return fd;
}

/* Sends the closing delimiter on fd and checks that the answer is 200 with `count`. */
static void send_closing_delimiter(int fd, const char *count)
{
    char buf[1024], want[64];
    int closed;
    send_all(fd, "\r\n--B--", 7);
    read_until_close(fd, buf, sizeof buf, 5000, &closed);
    close(fd);
    snprintf(want, sizeof want, "\r\n\r\n%s", count);
    if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0 || !strstr(buf, want))
        CHECK_FAIL_("answer '%.300s', want 200 with body %s", buf, count);
    else
        check_passed++;
}

/* slowsrv-h2o: a body over 32 MiB is spooled to a temporary file in --spool-dir (unlinked at
 * once, so seen as a deleted file the process holds), and the count is exact. */
static void spool_dir_holds_big_bodies(const struct itest_env *env)
{
    struct server s;
    char dir[300], prefix[320];
    snprintf(dir, sizeof dir, "%s/spool", env->tmpdir);
    snprintf(prefix, sizeof prefix, "%s/", dir);
    mkdir(dir, 0700);
    const char *args[] = {"--spool-dir", dir, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    /* 40 MiB of the part, then a wait before the closing delimiter: the body is in the spool. */
    int fd = send_held_upload(s.port, 40u << 20);
    CHECK_INT(holds_deleted_file(s.pid, prefix, 5), 1);
    send_closing_delimiter(fd, "41943040");
    stop_expect_clean(&s);
}

/* slowsrv-h2o without --spool-dir: a body over 32 MiB is spooled to a deleted file in /tmp, the
 * default, and counted exactly; a small one (8 MiB) stays in memory: no spool file once the
 * server has read it all. (Bodies from 16 MiB up are spooled too, libh2o's buffer doubling to
 * its 32 MiB threshold, though the README says "over 32 MiB": not asserted either way.) */
static void spool_dir_defaults_to_tmp(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0");
    long long before = bytes_read_by(s.pid);
    CHECK(before >= 0);
    int fd = send_held_upload(s.port, 8u << 20);
    double t0 = now_seconds();
    while (bytes_read_by(s.pid) - before < (8ll << 20) && now_seconds() - t0 < 5)
        usleep(20 * 1000);
    if (bytes_read_by(s.pid) - before < (8ll << 20))
        CHECK_FAIL_("the server read %lld of the 8 MiB body in 5 s", bytes_read_by(s.pid) - before);
    CHECK_INT(holds_deleted_file(s.pid, "/tmp/", 0.3), 0);
    send_closing_delimiter(fd, "8388608");
    fd = send_held_upload(s.port, 40u << 20);
    CHECK_INT(holds_deleted_file(s.pid, "/tmp/slowsrv-h2o.b.", 5), 1);
    send_closing_delimiter(fd, "41943040");
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"upload_sizes_are_exact", upload_sizes_are_exact, ITEST_PLAIN, 0},
    {"upload_bad_inputs_get_4xx", upload_bad_inputs_get_4xx, ITEST_PLAIN, 0},
    {"max_body_holds_on_every_route", max_body_holds_on_every_route, ITEST_PER_MODEL, 0},
    {"upload_chunked_over_max_body_gets_413", upload_chunked_over_max_body_gets_413, ITEST_PLAIN,
     0},
    {"upload_client_leaving_mid_body", upload_client_leaving_mid_body, ITEST_PLAIN, 0},
    {"uploads_50_concurrent", uploads_50_concurrent, ITEST_PLAIN, 0},
    {"upload_1gib_flat_memory", upload_1gib_flat_memory, ITEST_PLAIN, ENGINE_STREAMS_UPLOADS},
    {"upload_error_cuts_after_64mib", upload_error_cuts_after_64mib, ITEST_PLAIN,
     ENGINE_DRAINS_AFTER_ERROR},
    {"upload_error_closes_at_the_end_of_the_body", upload_error_closes_at_the_end_of_the_body,
     ITEST_PLAIN, ENGINE_DRAINS_AFTER_ERROR},
    {"spool_dir_holds_big_bodies", spool_dir_holds_big_bodies, ITEST_PLAIN, ENGINE_SPOOLS_BODIES},
    {"spool_dir_defaults_to_tmp", spool_dir_defaults_to_tmp, ITEST_PLAIN, ENGINE_SPOOLS_BODIES},
};

const struct itest_suite itest_suite_upload = {"upload", cases, sizeof cases / sizeof cases[0]};
