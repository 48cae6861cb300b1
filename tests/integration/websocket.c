/*
 * WebSocket routes (a route's "websocket", doc/options.md §WebSocket): the handshake's 101 and
 * its refusals (400, 426), echo of text, binary and fragmented messages after their drawn
 * delay, ping and pong, the close handshake, the RFC's closes for bad input (1002, 1009, 1007)
 * and the flood budget's 1008, pushes and the plan's close, the seeded delays the same on both
 * binaries, a change through the control API that an open socket does not see, the drain's
 * 1001, the counters and the access log's line. The client is written here, on a raw socket:
 * masking is the client's job.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itest.h"

/* The RFC's example key and its accept value (RFC 6455 section 1.3). */
#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

/* A client's connection: what it read and has not used yet. */
struct wsc {
    int fd;
    unsigned char buf[1 << 17];
    size_t len;
    char head[2048]; /* the answer's head, up to its blank line */
};

/* A frame as read: its opcode, fin bit and payload (NUL-terminated). */
struct wsframe {
    int op, fin;
    size_t n;
    unsigned char data[1 << 16];
};

/* Reads more into c within timeout_ms. Returns the bytes read, 0 at the end, -1 on timeout. */
static long fill(struct wsc *c, int timeout_ms)
{
    struct pollfd p = {c->fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0)
        return -1;
    ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
    if (n > 0)
        c->len += (size_t)n;
    return n < 0 ? 0 : n;
}

/* Connects and sends a handshake to path with the fields `extra` (CRLF-ended lines), or the
 * usual ones when NULL; reads the head. Returns the status, 0 if none came. */
static long ws_open(struct wsc *c, unsigned port, const char *path, const char *extra)
{
    char req[1024];
    c->len = 0;
    c->head[0] = '\0';
    c->fd = raw_connect(port);
    if (c->fd < 0)
        return 0;
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path,
             extra ? extra
                   : "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " KEY
                     "\r\nSec-WebSocket-Version: 13\r\n");
    send_all(c->fd, req, strlen(req));
    unsigned char *end;
    while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4)))
        if (fill(c, 3000) <= 0)
            return 0;
    size_t hl = (size_t)(end - c->buf) + 4;
    snprintf(c->head, sizeof c->head, "%.*s", (int)hl, (const char *)c->buf);
    long status = strtol(c->head + 9, NULL, 10);
    /* A 4xx's body follows its head: left in buf; a 101's frames too. */
    memmove(c->buf, c->buf + hl, c->len - hl);
    c->len -= hl;
    return status;
}

/* Sends a frame, masked unless `unmasked`. */
static void ws_send(struct wsc *c, int fin, int op, const void *payload, size_t n, int unmasked)
{
    static unsigned char out[(1 << 16) + 16];
    static const unsigned char mask[4] = {0x9a, 0x1b, 0x2c, 0x3d};
    size_t at = 0;
    out[at++] = (unsigned char)((fin ? 0x80 : 0) | op);
    unsigned char m = unmasked ? 0 : 0x80;
    if (n < 126) {
        out[at++] = (unsigned char)(m | n);
    } else {
        out[at++] = (unsigned char)(m | 126);
        out[at++] = (unsigned char)(n >> 8);
        out[at++] = (unsigned char)n;
    }
    if (!unmasked) {
        memcpy(out + at, mask, 4);
        at += 4;
    }
    for (size_t i = 0; i < n; i++)
        out[at + i] =
            (unsigned char)(((const unsigned char *)payload)[i] ^ (unmasked ? 0 : mask[i % 4]));
    send_all(c->fd, (const char *)out, at + n);
}

/* Reads the next frame within timeout_ms. Returns 0, or -1 (timeout or end). */
static int ws_read(struct wsc *c, struct wsframe *f, int timeout_ms)
{
    double until = now_seconds() + timeout_ms / 1000.0;
    for (;;) {
        if (c->len >= 2) {
            size_t n = c->buf[1] & 0x7f, off = 2;
            if (n == 126 && c->len >= 4) {
                n = (size_t)c->buf[2] << 8 | c->buf[3];
                off = 4;
            }
            if ((c->buf[1] & 0x7f) != 126 || c->len >= 4) {
                if (c->len >= off + n && n < sizeof f->data) {
                    f->op = c->buf[0] & 0x0f;
                    f->fin = c->buf[0] >> 7;
                    f->n = n;
                    memcpy(f->data, c->buf + off, n);
                    f->data[n] = '\0';
                    memmove(c->buf, c->buf + off + n, c->len - off - n);
                    c->len -= off + n;
                    return 0;
                }
            }
        }
        int left = (int)((until - now_seconds()) * 1000);
        if (left <= 0 || fill(c, left) <= 0)
            return -1;
    }
}

/* The close code of a close frame, 0 if it has none. */
static unsigned close_code(const struct wsframe *f)
{
    return f->op == 8 && f->n >= 2 ? (unsigned)f->data[0] << 8 | f->data[1] : 0;
}

/* Reads frames until a close (skipping pongs and data); returns its code, 0 if none came. */
static unsigned await_close(struct wsc *c, int timeout_ms)
{
    struct wsframe f;
    while (ws_read(c, &f, timeout_ms) == 0)
        if (f.op == 8)
            return close_code(&f);
    return 0;
}

/* Answers the server's close and reads the end of the connection. Returns 1 if it closed. */
static int close_back(struct wsc *c, unsigned code)
{
    unsigned char b[2] = {(unsigned char)(code >> 8), (unsigned char)code};
    ws_send(c, 1, 8, b, 2, 0);
    char rest[256];
    int closed = 0;
    read_until_close(c->fd, rest, sizeof rest, 2000, &closed);
    close(c->fd);
    return closed;
}

/* START with arguments made at run time (a file's path). */
#define START_WITH(env, s, ...)                                                                    \
    do {                                                                                           \
        const char *const start_args_[] = {__VA_ARGS__, NULL};                                     \
        if (server_start((s), (env)->bin, start_args_, NULL) != 0) {                               \
            CHECK_FAIL_("%s", "server did not start");                                             \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static const char routes[] =
    "{\"routes\": [{\"path\": \"/ws\", \"websocket\": \"echo,limit=1000\"},"
    " {\"path\": \"/slow\", \"websocket\": \"echo,delay=200ms\"},"
    " {\"path\": \"/push\", \"websocket\": \"echo,push=3,size=10,every=50ms,close=4000,after=3\"},"
    " {\"path\": \"/late\", \"websocket\": \"echo,close=1000,after=300ms\"}]}";

/* 101 with the RFC's accept value; a plain GET 426 with Upgrade: websocket; a wrong version 426
 * with Sec-WebSocket-Version: 13; a bad key, no Upgrade token, no Connection token and a POST
 * 400; each refusal a JSON error. */
static void websocket_handshake_and_its_refusals(const struct itest_env *env)
{
    struct server s;
    static struct wsc c;
    START_WITH(env, &s, "--config", write_file(env, "ws.json", routes));
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    CHECK(strstr(c.head, "\r\nSec-WebSocket-Accept: " ACCEPT "\r\n") != NULL);
    CHECK(strstr(c.head, "\r\nUpgrade: websocket\r\n") != NULL);
    CHECK(strstr(c.head, "\r\nConnection: upgrade\r\n") != NULL);
    close(c.fd);
    static const struct {
        const char *method, *fields;
        long status;
        const char *want_field, *want_error;
    } cases[] = {
        {"GET", "Host2: x\r\n", 426, "\r\nUpgrade: websocket\r\n", "this route speaks WebSocket"},
        {"GET",
         "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " KEY
         "\r\nSec-WebSocket-Version: 8\r\n",
         426, "\r\nSec-WebSocket-Version: 13\r\n", "only Sec-WebSocket-Version 13"},
        {"GET",
         "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c2hvcnQ=\r\n"
         "Sec-WebSocket-Version: 13\r\n",
         400, NULL, "Sec-WebSocket-Key must be the base64 of 16"},
        {"GET",
         "Upgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " KEY
         "\r\nSec-WebSocket-Version: 13\r\n",
         400, NULL, "the Upgrade field must name websocket"},
        {"GET",
         "Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Key: " KEY
         "\r\nSec-WebSocket-Version: 13\r\n",
         400, NULL, "the Connection field must hold the token upgrade"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_INT(ws_open(&c, s.port, "/ws", cases[i].fields), cases[i].status);
        if (cases[i].want_field)
            CHECK(strstr(c.head, cases[i].want_field) != NULL);
        CHECK(strstr(c.head, "Content-Type: application/json") != NULL);
        while (!memmem(c.buf, c.len, "}", 1) && fill(&c, 2000) > 0)
            ;
        c.buf[c.len < sizeof c.buf ? c.len : sizeof c.buf - 1] = '\0';
        CHECK(strstr((const char *)c.buf, cases[i].want_error) != NULL);
        close(c.fd);
    }
    struct reply r;
    const char *hdrs[] = {"Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " KEY,
                          "Sec-WebSocket-Version: 13", NULL};
    http_request(s.port, "POST", "/ws", "x", hdrs, &r);
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "\"websocket: the handshake must be a GET\"") != NULL);
    /* Connection on two lines is one list (RFC 9110 section 5.3). */
    CHECK_INT(ws_open(&c, s.port, "/ws",
                      "Upgrade: websocket\r\nConnection: keep-alive\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: " KEY "\r\nSec-WebSocket-Version: 13\r\n"),
              101);
    close(c.fd);
    /* HTTP/1.0 has no upgrade (RFC 6455 section 4.1): a 400 on both binaries. */
    int h10fd = raw_connect(s.port);
    static const char h10[] = "GET /ws HTTP/1.0\r\nHost: x\r\nUpgrade: websocket\r\n"
                              "Connection: Upgrade\r\nSec-WebSocket-Key: " KEY "\r\n"
                              "Sec-WebSocket-Version: 13\r\n\r\n";
    char got[1024];
    int closed = 0;
    send_all(h10fd, h10, sizeof h10 - 1);
    read_until_close(h10fd, got, sizeof got, 2000, &closed);
    close(h10fd);
    CHECK(strncmp(got, "HTTP/1.0 400", 12) == 0 || strncmp(got, "HTTP/1.1 400", 12) == 0);
    CHECK(strstr(got, "the handshake needs HTTP/1.1") != NULL);
    /* Clients that reset right after their handshake, before or while the 101 goes: the server
     * goes on, and (sanitized build) leaks no plan of a socket never handed over. */
    static const char hs[] = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Key: " KEY "\r\n"
                             "Sec-WebSocket-Version: 13\r\n\r\n";
    for (int i = 0; i < 20; i++) {
        int fd = raw_connect(s.port);
        if (fd < 0)
            continue;
        send_all(fd, hs, sizeof hs - 1);
        struct linger lg = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fd);
    }
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    CHECK_INT(close_back(&c, 1000), 1);
    stop_expect_clean(&s);
}

/* Text, binary and a fragmented message come back whole; a ping between fragments gets its
 * pong; a 200 ms delay holds the echo 200 ms; the close handshake ends the socket, and the
 * access log has its one line; /stats counts it. */
static void websocket_echo_ping_and_close(const struct itest_env *env)
{
    struct server s;
    static struct wsc c;
    static struct wsframe f;
    char log[300];
    snprintf(log, sizeof log, "%s/access.log", env->tmpdir);
    START_WITH(env, &s, "--config", write_file(env, "ws.json", routes), "--access-log", log);
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    ws_send(&c, 1, 1, "hello", 5, 0);
    CHECK_INT(ws_read(&c, &f, 2000), 0);
    CHECK_INT(f.op, 1);
    CHECK_STR((char *)f.data, "hello");
    unsigned char bin[300];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)i;
    ws_send(&c, 1, 2, bin, sizeof bin, 0);
    CHECK_INT(ws_read(&c, &f, 2000), 0);
    CHECK_INT(f.op, 2);
    CHECK_INT(f.n, sizeof bin);
    CHECK(f.n == sizeof bin && memcmp(f.data, bin, sizeof bin) == 0);
    ws_send(&c, 0, 1, "frag", 4, 0);
    ws_send(&c, 0, 0, "men", 3, 0);
    ws_send(&c, 1, 9, "ping!", 5, 0);
    ws_send(&c, 1, 0, "ted", 3, 0);
    CHECK_INT(ws_read(&c, &f, 2000), 0);
    CHECK_INT(f.op, 10);
    CHECK_STR((char *)f.data, "ping!");
    CHECK_INT(ws_read(&c, &f, 2000), 0);
    CHECK_INT(f.op, 1);
    CHECK_INT(f.fin, 1);
    CHECK_STR((char *)f.data, "fragmented");
    unsigned char bye[2] = {0x03, 0xe8};
    ws_send(&c, 1, 8, bye, 2, 0);
    CHECK_INT(ws_read(&c, &f, 2000), 0);
    CHECK_INT(close_code(&f), 1000);
    char rest[64];
    int closed = 0;
    read_until_close(c.fd, rest, sizeof rest, 2000, &closed);
    CHECK_INT(closed, 1);
    close(c.fd);

    CHECK_INT(ws_open(&c, s.port, "/slow", NULL), 101);
    double t0 = now_seconds();
    ws_send(&c, 1, 1, "later", 5, 0);
    CHECK_INT(ws_read(&c, &f, 3000), 0);
    double took = now_seconds() - t0;
    CHECK_STR((char *)f.data, "later");
    if (took < 0.2 || took > 0.2 + LONE_SLACK)
        CHECK_FAIL_("echo after delay=200ms took %.3f s", took);
    else
        check_passed++;
    CHECK_INT(close_back(&c, 1000), 1);

    CHECK_INT(await_stat(h1(&s), "websocket.closes.1000", 2, 3), 2);
    cJSON *st = settled_stats(h1(&s));
    CHECK_INT(json_number(st, "websocket.opened"), 2);
    CHECK_INT(json_number(st, "websocket.open"), 0);
    CHECK_INT(json_number(st, "websocket.messages_in"), 4);
    CHECK_INT(json_number(st, "websocket.messages_out"), 4);
    cJSON_Delete(st);
    /* /metrics is longer than a struct reply holds. */
    static char metrics[1 << 18];
    int mfd = raw_connect(s.port);
    static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    send_all(mfd, get, sizeof get - 1);
    read_until_close(mfd, metrics, sizeof metrics, 3000, &closed);
    close(mfd);
    CHECK(strstr(metrics, "slowsrv_websocket_messages_total{direction=\"in\"} 4\n") != NULL);
    CHECK(strstr(metrics, "slowsrv_websocket_closes_total{code=\"1000\"} 2\n") != NULL);
    stop_expect_clean(&s);
    char text[4096];
    CHECK(read_text(log, text, sizeof text) > 0);
    CHECK(strstr(text, "\"path\": \"/ws\", \"route\": \"/ws\", \"status\": 101") != NULL);
    CHECK(strstr(text, "\"messages_in\": 3, \"messages_out\": 3, \"close\": 1000}") != NULL);
    CHECK(strstr(text, "\"messages_in\": 1, \"messages_out\": 1, \"close\": 1000}") != NULL);
}

/* Bad input gets the RFC's close: an unmasked frame 1002, a message over the route's limit 1009,
 * a text message that is not UTF-8 1007, a flood of pings 1008 (counted); each counted by code. */
static void websocket_bad_input_gets_the_rfc_close(const struct itest_env *env)
{
    struct server s;
    static struct wsc c;
    START_WITH(env, &s, "--config", write_file(env, "ws.json", routes));
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    ws_send(&c, 1, 1, "plain", 5, 1);
    CHECK_INT(await_close(&c, 2000), 1002);
    close(c.fd);
    static char big[1001];
    memset(big, 'a', sizeof big);
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    ws_send(&c, 1, 1, big, sizeof big, 0);
    CHECK_INT(await_close(&c, 2000), 1009);
    close(c.fd);
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    ws_send(&c, 1, 1, "\xc3\x28", 2, 0);
    CHECK_INT(await_close(&c, 2000), 1007);
    close(c.fd);
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    for (int i = 0; i < 300; i++)
        ws_send(&c, 1, 9, "", 0, 0);
    CHECK_INT(await_close(&c, 2000), 1008);
    close(c.fd);
    CHECK_INT(await_stat(h1(&s), "websocket.open", 0, 3), 0);
    cJSON *st = settled_stats(h1(&s));
    CHECK_INT(json_number(st, "websocket.closes.1002"), 1);
    CHECK_INT(json_number(st, "websocket.closes.1009"), 1);
    CHECK_INT(json_number(st, "websocket.closes.1007"), 1);
    CHECK_INT(json_number(st, "websocket.closes.1008"), 1);
    CHECK_INT(json_number(st, "websocket.budget_closes"), 1);
    cJSON_Delete(st);
    stop_expect_clean(&s);
}

/* push=3 sends three messages 50 ms apart, then the plan's close 4000 after the third; after=
 * a time closes at that time. */
static void websocket_push_and_the_plans_close(const struct itest_env *env)
{
    struct server s;
    static struct wsc c;
    static struct wsframe f;
    START_WITH(env, &s, "--config", write_file(env, "ws.json", routes));
    CHECK_INT(ws_open(&c, s.port, "/push", NULL), 101);
    double t0 = now_seconds();
    int texts = 0;
    while (ws_read(&c, &f, 2000) == 0 && f.op == 1) {
        CHECK_STR((char *)f.data, "abcdefghij");
        texts++;
    }
    double took = now_seconds() - t0;
    CHECK_INT(texts, 3);
    CHECK_INT(close_code(&f), 4000);
    if (took < 0.15 || took > 0.15 + LONE_SLACK)
        CHECK_FAIL_("three pushes 50 ms apart took %.3f s", took);
    else
        check_passed++;
    CHECK_INT(close_back(&c, 4000), 1);
    CHECK_INT(ws_open(&c, s.port, "/late", NULL), 101);
    t0 = now_seconds();
    CHECK_INT(await_close(&c, 2000), 1000);
    took = now_seconds() - t0;
    if (took < 0.3 || took > 0.3 + LONE_SLACK)
        CHECK_FAIL_("close after=300ms came at %.3f s", took);
    else
        check_passed++;
    CHECK_INT(close_back(&c, 1000), 1);
    stop_expect_clean(&s);
}

/* Eight messages sent at once to a route of drawn delays (--seed): when each one's echo came
 * back, by message. Returns the echoes read. */
static int seeded_echoes(const char *bin, const char *seed, double at[8])
{
    struct server s;
    static struct wsc c;
    static struct wsframe f;
    static const char *cfg =
        "{\"routes\": [{\"path\": \"/ws\", \"websocket\": \"echo,delay=20ms..600ms\"}]}";
    char path[] = "/tmp/slowsrv-ws-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, cfg, strlen(cfg)) != (ssize_t)strlen(cfg))
        return -1;
    close(fd);
    const char *args[] = {"--config", path, "--seed", seed, NULL};
    int n = -1;
    if (server_start(&s, bin, args, NULL) != 0) {
        unlink(path);
        return -1;
    }
    if (ws_open(&c, s.port, "/ws", NULL) == 101) {
        double t0 = now_seconds();
        for (int i = 0; i < 8; i++) {
            char m[2] = {(char)('0' + i), 0};
            ws_send(&c, 1, 1, m, 1, 0);
        }
        for (n = 0; n < 8 && ws_read(&c, &f, 3000) == 0 && f.op == 1; n++)
            if (f.data[0] >= '0' && f.data[0] < '8')
                at[f.data[0] - '0'] = now_seconds() - t0;
        close_back(&c, 1000);
    }
    server_stop(&s, 15000, NULL, 0);
    unlink(path);
    return n;
}

/* The echo delays are drawn per socket and message from --seed: the same on every run and both
 * binaries (each echo within 50 ms of the other run's), another seed others. The 101 head is the
 * same bytes on both but its Date. */
static void websocket_seeded_delays_equal_on_both_binaries(const struct itest_env *env)
{
    double a[8], b[8], c[8], d[8];
    if (!env->other_bin) {
        CHECK_FAIL_("%s", "needs the second binary as third argument");
        return;
    }
    CHECK_INT(seeded_echoes(env->bin, "7", a), 8);
    CHECK_INT(seeded_echoes(env->bin, "7", b), 8);
    CHECK_INT(seeded_echoes(env->other_bin, "7", c), 8);
    CHECK_INT(seeded_echoes(env->bin, "8", d), 8);
    int differ = 0;
    for (int i = 0; i < 8; i++) {
        if (b[i] < a[i] - 0.05 || b[i] > a[i] + 0.05 || c[i] < a[i] - 0.05 || c[i] > a[i] + 0.05)
            CHECK_FAIL_("echo %d came at %.3f s, then %.3f s, and %.3f s on the other binary", i,
                        a[i], b[i], c[i]);
        else
            check_passed++;
        differ += d[i] < a[i] - 0.05 || d[i] > a[i] + 0.05;
    }
    CHECK(differ >= 4);
    /* Drawn per message: spread over the range, not one draw for all. */
    double lo = a[0], hi = a[0];
    for (int i = 1; i < 8; i++) {
        lo = a[i] < lo ? a[i] : lo;
        hi = a[i] > hi ? a[i] : hi;
    }
    CHECK(hi - lo > 0.1);
    /* The heads, Date aside. */
    char heads[2][2048];
    const char *bins[2] = {env->bin, env->other_bin};
    for (int i = 0; i < 2; i++) {
        struct server s;
        static struct wsc w;
        const char *args[] = {"--config", write_file(env, "ws.json", routes), NULL};
        heads[i][0] = '\0';
        if (server_start(&s, bins[i], args, NULL) != 0)
            continue;
        if (ws_open(&w, s.port, "/ws", NULL) == 101) {
            char *date = strstr(w.head, "\r\nDate: ");
            char *eol = date ? strstr(date + 2, "\r\n") : NULL;
            if (eol)
                memmove(date, eol, strlen(eol) + 1);
            snprintf(heads[i], sizeof heads[i], "%s", w.head);
            close_back(&w, 1000);
        }
        server_stop(&s, 15000, NULL, 0);
    }
    CHECK_STR(heads[0], "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
                        "Upgrade: websocket\r\nSec-WebSocket-Accept: " ACCEPT "\r\n\r\n");
    CHECK_STR(heads[1], heads[0]);
}

/* A change of the route through the control API reaches the next socket, not one open already;
 * SIGTERM closes the open socket 1001 and the server exits 0. */
static void websocket_keeps_its_plan_and_the_drain_closes_1001(const struct itest_env *env)
{
    struct server s;
    static struct wsc a, b;
    static struct wsframe f;
    START_WITH(env, &s, "--config", write_file(env, "ws.json", routes), "--control", "0");
    const char *p = strstr(s.startup, " control=http");
    unsigned cport = p && (p = strrchr(p, ':')) ? (unsigned)strtoul(p + 1, NULL, 10) : 0;
    CHECK_INT(ws_open(&a, s.port, "/ws", NULL), 101);
    struct reply r;
    const char *json[] = {"Content-Type: application/json", NULL};
    http_request(cport, "PATCH", "/routes/ws", "{\"websocket\": \"echo,delay=300ms\"}", json, &r);
    CHECK_INT(r.status, 200);
    double t0 = now_seconds();
    ws_send(&a, 1, 1, "old", 3, 0);
    CHECK_INT(ws_read(&a, &f, 2000), 0);
    CHECK(now_seconds() - t0 < 0.15);
    CHECK_INT(ws_open(&b, s.port, "/ws", NULL), 101);
    t0 = now_seconds();
    ws_send(&b, 1, 1, "new", 3, 0);
    CHECK_INT(ws_read(&b, &f, 2000), 0);
    CHECK(now_seconds() - t0 >= 0.3);
    CHECK_INT(close_back(&b, 1000), 1);
    /* A request that waits keeps the drain going: the socket is closed at its start. */
    int held = raw_connect(s.port);
    static const char get[] = "GET /test?delay=2s HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(held, get, sizeof get - 1);
    CHECK_INT(await_stat(h1(&s), "waiting", 1, 3), 1);
    kill(s.pid, SIGTERM);
    CHECK_INT(await_close(&a, 1000), 1001);
    CHECK_INT(close_back(&a, 1001), 1);
    CHECK_INT(server_stop(&s, 15000, NULL, 0), 0);
    close(held);
}

/* A masked binary frame of n bytes (n < 65536) into out; returns its length. */
static size_t binary_frame(unsigned char *out, size_t n)
{
    size_t at = 0;
    out[at++] = 0x82;
    out[at++] = 0x80 | 126;
    out[at++] = (unsigned char)(n >> 8);
    out[at++] = (unsigned char)n;
    memset(out + at, 0, 4); /* a mask of zeros: the payload as it is */
    at += 4;
    memset(out + at, 'b', n);
    return at + n;
}

/* A client that sends and never reads holds back: the loop stops reading it and pushing to it
 * once it holds two message limits unread, so the server's memory stays flat; a push route with
 * every=0 does not take the loop for itself; a client whose close comes after data it does not
 * read ends within the close wait without the loop spinning. */
static void websocket_client_that_does_not_read_is_held_back(const struct itest_env *env)
{
    struct server s;
    static struct wsc a, b, c, d;
    static struct wsframe f;
    static unsigned char frame[60016];
    START_WITH(env, &s, "--config",
               write_file(env, "held.json",
                          "{\"routes\": [{\"path\": \"/big\", \"websocket\": \"echo\"},"
                          " {\"path\": \"/flood\", \"websocket\": "
                          "\"echo,push=100000,size=1000,every=0\"}]}"));
    long rss0 = proc_status_kb(s.pid, "VmRSS");
    CHECK_INT(ws_open(&a, s.port, "/big", NULL), 101);
    CHECK_INT(ws_open(&b, s.port, "/flood", NULL), 101);
    size_t flen = binary_frame(frame, 60000), sent = 0;
    double t0 = now_seconds();
    while (now_seconds() - t0 < 2.0) {
        /* Whole frames, a partial send carried on from where it stopped. */
        ssize_t n =
            send(a.fd, frame + sent % flen, flen - sent % flen, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0)
            sent += (size_t)n;
        else
            usleep(1000);
    }
    /* Beside them, another socket is echoed at once. */
    CHECK_INT(ws_open(&c, s.port, "/big", NULL), 101);
    double t1 = now_seconds();
    ws_send(&c, 1, 1, "x", 1, 0);
    CHECK_INT(ws_read(&c, &f, 2000), 0);
    if (now_seconds() - t1 > 0.1)
        CHECK_FAIL_("an echo beside them took %.3f s", now_seconds() - t1);
    else
        check_passed++;
    long rss1 = proc_status_kb(s.pid, "VmRSS");
    fprintf(stderr, "sent %zu bytes unread; RSS %ld -> %ld KiB\n", sent, rss0, rss1);
    if (rss0 < 0 || rss1 < 0 || rss1 - rss0 > 48 * 1024)
        CHECK_FAIL_("RSS grew from %ld to %ld KiB with %zu bytes sent and nothing read", rss0, rss1,
                    sent);
    else
        check_passed++;
    /* A close behind echoes the client never reads (a small receive window, set before the
     * connection): the server's answer to the close cannot go, and the socket ends within the
     * close wait, without the loop spinning meanwhile. */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d.fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(d.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    CHECK_INT(connect(d.fd, (struct sockaddr *)&sa, sizeof sa), 0);
    static const char hs[] = "GET /big HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Key: " KEY "\r\n"
                             "Sec-WebSocket-Version: 13\r\n\r\n";
    send_all(d.fd, hs, sizeof hs - 1);
    size_t dsent = 0;
    for (double t2 = now_seconds(); dsent < 30 * flen && now_seconds() - t2 < 1.0;) {
        ssize_t n =
            send(d.fd, frame + dsent % flen, flen - dsent % flen, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0)
            dsent += (size_t)n;
        else
            usleep(1000);
    }
    /* The close goes after whole frames only. */
    if (dsent % flen)
        send_all(d.fd, (const char *)frame + dsent % flen, flen - dsent % flen);
    static const unsigned char bye[] = {0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8};
    send(d.fd, bye, sizeof bye, MSG_NOSIGNAL);
    shutdown(d.fd, SHUT_WR);
    double cpu0 = proc_cpu_seconds(s.pid);
    double open = await_stat(h1(&s), "websocket.open", 3, 3);
    double cpu = proc_cpu_seconds(s.pid) - cpu0;
    CHECK_INT(open, 3);
    if (cpu > 0.5)
        CHECK_FAIL_("the server used %.2f s of CPU while the socket waited to end", cpu);
    else
        check_passed++;
    close(a.fd);
    close(b.fd);
    close_back(&c, 1000);
    close(d.fd);
    stop_expect_clean(&s);
}

/* Seconds from sending one message on a new socket to /ws to its echo, or -1. */
static double echo_time(unsigned port)
{
    static struct wsc c;
    static struct wsframe f;
    if (ws_open(&c, port, "/ws", NULL) != 101)
        return -1;
    double t0 = now_seconds();
    ws_send(&c, 1, 1, "x", 1, 0);
    double t = ws_read(&c, &f, 3000) == 0 ? now_seconds() - t0 : -1;
    close_back(&c, 1000);
    return t;
}

/* A scenario ramps a WebSocket route's echo delay ("of": "websocket-delay") for the sockets
 * that open as it goes; a ramp of a route that is no WebSocket route is a config error. */
static void websocket_echo_delay_ramps_in_a_scenario(const struct itest_env *env)
{
    struct server s;
    START_WITH(env, &s, "--config",
               write_file(env, "wsramp.json",
                          "{\"routes\": [{\"path\": \"/ws\", \"websocket\": \"echo\"}], "
                          "\"scenario\": [{\"at\": \"0s\", \"ramp\": {\"/ws\": {\"of\": "
                          "\"websocket-delay\", \"from\": \"0ms\", \"to\": \"600ms\", "
                          "\"over\": \"1s\"}}}]}"));
    double t0 = now_seconds(), early = echo_time(s.port);
    if (early < 0 || early > 0.1 + (now_seconds() - t0) * 0.6)
        CHECK_FAIL_("an echo at the ramp's start took %.3f s, want under 0.1 s", early);
    else
        check_passed++;
    while (now_seconds() - t0 < 1.3)
        usleep(10000);
    double late = echo_time(s.port);
    if (late < 0.59 || late > 0.6 + LONE_SLACK)
        CHECK_FAIL_("an echo after the ramp took %.3f s, want 0.6 s", late);
    else
        check_passed++;
    stop_expect_clean(&s);
    struct bad_case c = {
        {"--check-config",
         write_file(
             env, "wsramp-bad.json",
             "{\"scenario\": [{\"at\": \"0s\", \"ramp\": {\"/echo\": {\"of\": "
             "\"websocket-delay\", \"from\": \"0ms\", \"to\": \"1s\", \"over\": \"1s\"}}}]}")},
        {NULL},
        "scenario[0].ramp./echo.from: the route is no WebSocket route to ramp the echo delay of"};
    expect_refused(env, &c, 2);
}

/* Over HTTP/2 a WebSocket route answers 400: RFC 8441 is not spoken. */
static void websocket_over_h2_is_refused(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    long version = 0;
    START_WITH(env, &s, "--config", write_file(env, "ws.json", routes));
    struct target t = {s.port, 0, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE, 0};
    http_request_to(&t, "GET", "/ws", NULL, NULL, &r, &version);
    CHECK_INT(version, CURL_HTTP_VERSION_2_0);
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "WebSocket over HTTP/2, RFC 8441, is not supported") != NULL);
    stop_expect_clean(&s);
}

/* A socket on every thread model of both binaries. */
static void websocket_on_every_model(const struct itest_env *env)
{
    struct server s;
    static struct wsc c;
    static struct wsframe f;
    START_WITH(env, &s, "--config", write_file(env, "ws.json", routes), "--model", env->model);
    CHECK_INT(ws_open(&c, s.port, "/ws", NULL), 101);
    ws_send(&c, 1, 1, "model", 5, 0);
    CHECK_INT(ws_read(&c, &f, 2000), 0);
    CHECK_STR((char *)f.data, "model");
    CHECK_INT(close_back(&c, 1000), 1);
    /* libmicrohttpd let go of the connection: the core counts it closed. */
    CHECK_INT(await_stat(h1(&s), "connections.open", 1, 3), 1);
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"websocket_handshake_and_its_refusals", websocket_handshake_and_its_refusals, ITEST_PLAIN, 0},
    {"websocket_echo_ping_and_close", websocket_echo_ping_and_close, ITEST_PLAIN, 0},
    {"websocket_bad_input_gets_the_rfc_close", websocket_bad_input_gets_the_rfc_close, ITEST_PLAIN,
     0},
    {"websocket_push_and_the_plans_close", websocket_push_and_the_plans_close, ITEST_PLAIN, 0},
    {"websocket_seeded_delays_equal_on_both_binaries",
     websocket_seeded_delays_equal_on_both_binaries, ITEST_BOTH, 0},
    {"websocket_keeps_its_plan_and_the_drain_closes_1001",
     websocket_keeps_its_plan_and_the_drain_closes_1001, ITEST_PLAIN, 0},
    {"websocket_echo_delay_ramps_in_a_scenario", websocket_echo_delay_ramps_in_a_scenario,
     ITEST_PLAIN, 0},
    {"websocket_client_that_does_not_read_is_held_back",
     websocket_client_that_does_not_read_is_held_back, ITEST_PLAIN, 0},
    {"websocket_over_h2_is_refused", websocket_over_h2_is_refused, ITEST_PLAIN, ENGINE_HTTP2},
    {"websocket_on_every_model", websocket_on_every_model, ITEST_PER_MODEL, 0},
};

const struct itest_suite itest_suite_websocket = {"websocket", cases,
                                                  sizeof cases / sizeof cases[0]};
