/*
 * Cases on the limits a connection meets: requests per connection, the sizes of the request
 * line and headers, the idle timeout, the addresses --bind listens on and the listen backlog.
 */
#include "itest.h"

#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* --max-requests 3: of 10 requests pipelined on one connection, exactly 3 are answered, the last
 * with Connection: close, and the connection closes; the next connection is served. */
static void max_requests_caps_pipelining(const struct itest_env *env)
{
    struct server s;
    char buf[65536];
    START(env, &s, "--max-requests", "3");
    int fd = raw_connect(s.port);
    static const char one[] = "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n";
    char req[sizeof one * 10] = "";
    for (size_t i = 0; i < 10; i++)
        memcpy(req + i * (sizeof one - 1), one, sizeof one);
    CHECK_INT(send_all(fd, req, strlen(req)), 0);
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = recv(fd, buf + got, sizeof buf - 1 - got, 0)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    CHECK(n == 0); /* closed by the server, not timed out */
    close(fd);
    size_t answers = 0, closes = 0;
    for (char *p = buf; (p = strstr(p, "HTTP/1.1 200")) != NULL; p++)
        answers++;
    for (char *p = buf; (p = strcasestr(p, "Connection: close")) != NULL; p++)
        closes++;
    CHECK_INT(answers, 3);
    CHECK_INT(closes, 1);
    answers_within(s.port, "/echo", "OK", 0, 0.5);
    stop_expect_clean(&s);
}

/* Against a server started with --max-request-line `line` --max-header-size `hdr`: a target of
 * `line_ok` bytes is served, one over `line` gets the JSON 414, a header block over `hdr` the
 * JSON 431. */
static void check_request_limits(const struct server *s, size_t line, size_t line_ok, size_t hdr)
{
    static char path[20000], big[20000];
    struct reply r;
    char want[160];
    const char *hdrs[] = {big, NULL};
    memcpy(path, "/echo?pad=", 10);
    memset(path + 10, 'a', line_ok - 10);
    path[line_ok] = '\0';
    http_request(s->port, "GET", path, NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "OK");
    memset(path + 10, 'a', line + 100 - 10);
    path[line + 100] = '\0';
    http_request(s->port, "GET", path, NULL, NULL, &r);
    CHECK_INT(r.status, 414);
    snprintf(want, sizeof want,
             "{\"error\": \"request target over %zu bytes (--max-request-line)\", \"status\": 414}",
             line);
    CHECK_STR(r.body, want);
    memcpy(big, "X-Big: ", 7);
    memset(big + 7, 'b', hdr + 50);
    big[hdr + 57] = '\0';
    http_request(s->port, "GET", "/echo", NULL, hdrs, &r);
    CHECK_INT(r.status, 431);
    snprintf(want, sizeof want,
             "{\"error\": \"request headers over %zu bytes (--max-header-size)\", \"status\": 431}",
             hdr);
    CHECK_STR(r.body, want);
}

/* --max-request-line and --max-header-size move the 414 and 431 limits, with JSON answers. */
static void request_limits_follow_options(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--max-request-line", "16K", "--max-header-size", "2K");
    check_request_limits(&s, 16384, 12010, 2048);
    answers_within(s.port, "/echo", "OK", 0, 0.5);
    stop_expect_clean(&s);
}

/* Lowered limits (slowsrv shrinks its per-connection pool with them): a request with a target
 * and a header block at the limits is served, one just over gets the JSON answer, one far over
 * still gets a 431, and the server goes on. */
static void request_limits_lowered(const struct itest_env *env)
{
    struct server s;
    struct reply r;
    static char path[1100], hdr[6000];
    START(env, &s, "--max-request-line", "1K", "--max-header-size", "1K");
    check_request_limits(&s, 1024, 1010, 1024);
    memcpy(path, "/echo?pad=", 10);
    memset(path + 10, 'a', 1000); /* a 1010-byte target */
    memcpy(hdr, "X-Big: ", 7);
    memset(hdr + 7, 'b', 900); /* with Host and curl's Accept, about 950 bytes of headers */
    const char *hdrs[] = {hdr, NULL};
    http_request(s.port, "GET", path, NULL, hdrs, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "OK");
    memset(hdr + 7, 'b', 5000);
    http_request(s.port, "GET", "/echo", NULL, hdrs, &r);
    CHECK_INT(r.status, 431);
    answers_within(s.port, "/echo", "OK", 0, 0.5);
    stop_expect_clean(&s);
}

/* --idle-timeout closes a kept-alive connection that stays idle that long, never one whose
 * request waits on a longer delay; --idle-timeout 0 never closes an idle one. */
static void idle_timeout_closes_idle_connections(const struct itest_env *env)
{
    struct server s;
    char buf[4096];
    int closed;
    static const char req[] = "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n";
    START(env, &s, "--idle-timeout", "1s", "--delay", "0");
    int fd = raw_connect(s.port);
    send_all(fd, req, sizeof req - 1);
    double t0 = now_seconds();
    read_until_close(fd, buf, sizeof buf, 4000, &closed);
    double idle = now_seconds() - t0;
    CHECK(strncmp(buf, "HTTP/1.1 200 ", 13) == 0 && strstr(buf, "\r\n\r\nOK"));
    CHECK_INT(closed, 1);
    /* The core's sweep counts from the end of the answer, which comes a little after our clock
     * started (when the request was sent). */
    if (idle < 0.95 || idle > 2.5)
        CHECK_FAIL_("an idle connection was closed after %.3f s with --idle-timeout 1s", idle);
    else
        check_passed++;
    answers_within(s.port, "/test?delay=1500ms", "ok", 1.5, 1.5 + LONE_SLACK);
    close(fd);
    stop_expect_clean(&s);

    START(env, &s, "--idle-timeout", "0", "--delay", "0");
    fd = raw_connect(s.port);
    send_all(fd, req, sizeof req - 1);
    read_until_close(fd, buf, sizeof buf, 1500, &closed);
    CHECK_INT(closed, 0);
    send_all(fd, req, sizeof req - 1);
    read_until_close(fd, buf, sizeof buf, 300, &closed);
    CHECK(strncmp(buf, "HTTP/1.1 200 ", 13) == 0 && strstr(buf, "\r\n\r\nOK"));
    close(fd);
    stop_expect_clean(&s);
}

/* --max-size defaults to 16 MiB: ?size=16777216 is answered with exactly that many bytes, one
 * more is the 400 naming the parameter and the limit. */
static void max_size_default_is_16_mib(const struct itest_env *env)
{
    struct server s;
    static struct reply r;
    char h[128];
    START(env, &s, "--delay", "0");
    http_request(s.port, "GET", "/test?size=16777216", NULL, NULL, &r);
    CHECK_INT(r.curl_code, CURLE_OK);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.body_len, 16777216);
    CHECK_STR(reply_header(&r, "Content-Length", h, sizeof h), "16777216");
    CHECK_INT(strncmp(r.body, "slowsrv filler", 14), 0);
    http_request(s.port, "GET", "/test?size=16777217", NULL, NULL, &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(r.body, "{\"error\": \"size: '16777217' is not a byte count from 0 to --max-size "
                      "16777216\", \"status\": 400}");
    CHECK_STR(reply_header(&r, "Content-Type", h, sizeof h), "application/json");
    stop_expect_clean(&s);
}

/* Sends "GET /echo" with its request line and Host at once, then one header line every 200 ms
 * for `seconds`, then the blank line. Returns 0, or -1 if the connection failed first. */
static int trickle_echo(int fd, double seconds)
{
    static const char head[] = "GET /echo HTTP/1.1\r\nHost: x\r\n";
    if (send_all(fd, head, sizeof head - 1) != 0)
        return -1;
    for (double t0 = now_seconds(); now_seconds() - t0 < seconds;) {
        usleep(200 * 1000);
        if (send_all(fd, "X-Slow: 1\r\n", 11) != 0)
            return -1;
    }
    return send_all(fd, "\r\n", 2);
}

/* Reads one answer to GET /echo on a kept-alive connection (at most timeout_ms); 1 if it is a
 * 200 with the body OK. */
static int echo_answered(int fd, int timeout_ms)
{
    char buf[2048];
    size_t used = 0;
    double t0 = now_seconds();
    while (used + 1 < sizeof buf && now_seconds() - t0 < timeout_ms / 1000.0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) < 0)
            break;
        if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t n = recv(fd, buf + used, sizeof buf - 1 - used, 0);
        if (n <= 0)
            break;
        used += (size_t)n;
        buf[used] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        if (end && strcmp(end + 4, "OK") == 0)
            return strncmp(buf, "HTTP/1.1 200 ", 13) == 0;
    }
    return 0;
}

/* --header-timeout 2s on a kept-alive connection. Its clock starts again for each request: two
 * requests whose headers each trickle in over 1.2 s are both served, though the second ends
 * 2.4 s after the connection opened, and so is one that begins after a 1.2 s pause and trickles
 * 1.2 s (the clock starts at its first byte, on both binaries). A request whose headers never end
 * is cut about 2 s after it began, never before. --header-timeout 0 is never: a request that
 * stops halfway through its headers for 1.5 s is still served when it ends. */
static void header_timeout_restarts_per_request(const struct itest_env *env)
{
    struct server s;
    char buf[2048];
    int closed;
    START(env, &s, "--header-timeout", "2s", "--delay", "0");
    int fd = raw_connect(s.port);
    CHECK_INT(trickle_echo(fd, 1.2), 0);
    CHECK_INT(echo_answered(fd, 1000), 1);
    CHECK_INT(trickle_echo(fd, 1.2), 0);
    CHECK_INT(echo_answered(fd, 1000), 1);

    usleep(1200 * 1000);
    CHECK_INT(trickle_echo(fd, 1.2), 0);
    CHECK_INT(echo_answered(fd, 1000), 1);
    close(fd);

    /* A request that never finishes its headers, after an answered one. */
    fd = raw_connect(s.port);
    CHECK_INT(trickle_echo(fd, 0), 0);
    CHECK_INT(echo_answered(fd, 1000), 1);
    double t0 = now_seconds();
    send_all(fd, "GET /echo HTTP/1.1\r\nHost: x\r\n", 29);
    read_until_close(fd, buf, sizeof buf, 6000, &closed);
    double cut = now_seconds() - t0;
    close(fd);
    CHECK_INT(closed, 1);
    CHECK(strstr(buf, "HTTP/1.1 200") == NULL);
    if (cut < 1.9 || cut > 4.5)
        CHECK_FAIL_("unfinished headers cut after %.2f s with --header-timeout 2s", cut);
    else
        check_passed++;
    answers_within(s.port, "/echo", "OK", 0, 0.5);
    stop_expect_clean(&s);

    START(env, &s, "--header-timeout", "0", "--delay", "0");
    fd = raw_connect(s.port);
    send_all(fd, "GET /echo HTTP/1.1\r\nHost: x\r\n", 29);
    size_t got = read_until_close(fd, buf, sizeof buf, 1500, &closed);
    CHECK_INT(closed, 0);
    CHECK_INT(got, 0);
    CHECK_INT(send_all(fd, "\r\n", 2), 0);
    CHECK_INT(echo_answered(fd, 1000), 1);
    close(fd);
    stop_expect_clean(&s);
}

/* A connection to host:port (IPv4 or IPv6 literal), or -1. */
static int raw_connect_to(const char *host, unsigned port)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai;
    char service[16];
    snprintf(service, sizeof service, "%u", port);
    if (getaddrinfo(host, service, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* 1 if GET /echo over a new connection to host:port answers 200 OK. */
static int echo_answers_at(const char *host, unsigned port)
{
    char buf[1024];
    int closed;
    int fd = raw_connect_to(host, port);
    if (fd < 0)
        return 0;
    send_all(fd, "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 50);
    read_until_close(fd, buf, sizeof buf, 2000, &closed);
    close(fd);
    return strncmp(buf, "HTTP/1.1 200 ", 13) == 0 && strstr(buf, "\r\n\r\nOK") != NULL;
}

/* --bind: 127.0.0.1 by default (another loopback address is refused), 0.0.0.0 takes every IPv4
 * address, :: every IPv6 one; the startup line shows the address. */
/* A connection to ip:port reaches `holder` (the test's own socket there), not the server. */
static void reaches_holder_not_server(const char *ip, unsigned port, int holder)
{
    int fd = raw_connect_to(ip, port);
    if (fd < 0 || !holder_reached(holder))
        CHECK_FAIL_("%s:%u did not reach the test's own socket there", ip, port);
    else
        check_passed++;
    if (fd >= 0)
        close(fd);
}

static void bind_addresses(const struct itest_env *env)
{
    struct server s;
    char port[16];
    unsigned p;
    /* The default, 127.0.0.1: on the port the test holds on 127.0.0.2. */
    int holder = hold_port("127.0.0.2", &p);
    CHECK(holder >= 0);
    snprintf(port, sizeof port, "%u", p);
    const char *args_default[] = {"--port", port, "--delay", "0", NULL};
    if (server_start(&s, env->bin, args_default, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        close(holder);
        return;
    }
    CHECK(strstr(s.startup, "listening on http://127.0.0.1:") != NULL);
    CHECK_INT(echo_answers_at("127.0.0.1", s.port), 1);
    reaches_holder_not_server("127.0.0.2", p, holder);
    stop_expect_clean(&s);
    close(holder);

    START(env, &s, "--bind", "0.0.0.0", "--delay", "0");
    CHECK(strstr(s.startup, "listening on http://0.0.0.0:") != NULL);
    CHECK_INT(echo_answers_at("127.0.0.1", s.port), 1);
    CHECK_INT(echo_answers_at("127.0.0.2", s.port), 1);
    stop_expect_clean(&s);

    START(env, &s, "--bind", "::", "--delay", "0");
    CHECK(strstr(s.startup, "listening on http://[::]:") != NULL);
    CHECK_INT(echo_answers_at("::1", s.port), 1);
    stop_expect_clean(&s);

    holder = hold_port("127.0.0.1", &p);
    CHECK(holder >= 0);
    snprintf(port, sizeof port, "%u", p);
    const char *args_v6[] = {"--bind", "::1", "--port", port, "--delay", "0", NULL};
    if (server_start(&s, env->bin, args_v6, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        close(holder);
        return;
    }
    CHECK_INT(echo_answers_at("::1", s.port), 1);
    reaches_holder_not_server("127.0.0.1", p, holder);
    stop_expect_clean(&s);
    close(holder);
}

/* The backlogs of s's listening sockets: checks there are `nsockets` and each is `want`. */
static void expect_backlogs(const struct server *s, int nsockets, unsigned want, const char *what)
{
    unsigned got[8] = {0};
    int n = listen_backlogs(s->port, got, 8);
    int good = n == nsockets;
    for (int i = 0; good && i < n; i++)
        good = got[i] == want;
    if (!good)
        CHECK_FAIL_("%s: %d listening sockets with backlog %u, %u; want %d with %u", what, n,
                    got[0], got[1], nsockets, want);
    else
        check_passed++;
}

/* --backlog reaches listen() on each loop's socket (what `ss -ltn` shows as Send-Q): 4096 by
 * default, capped by net.core.somaxconn; a socket from systemd keeps its own. */
static void backlog_sets_each_listening_socket(const struct itest_env *env)
{
    struct server s;
    char buf[32];
    unsigned somaxconn = 4096;
    if (read_text("/proc/sys/net/core/somaxconn", buf, sizeof buf) > 0)
        somaxconn = (unsigned)strtoul(buf, NULL, 10);
    START(env, &s, "--threads", "2", "--delay", "0");
    expect_backlogs(&s, 2, somaxconn < 4096 ? somaxconn : 4096, "default");
    stop_expect_clean(&s);
    START(env, &s, "--threads", "2", "--backlog", "5", "--delay", "0");
    expect_backlogs(&s, 2, 5, "--backlog 5");
    stop_expect_clean(&s);
    START(env, &s, "--threads", "1", "--backlog", "65535", "--delay", "0");
    expect_backlogs(&s, 1, somaxconn < 65535 ? somaxconn : 65535, "--backlog 65535");
    stop_expect_clean(&s);
    /* Socket activation: the socket keeps the backlog it was made with (the harness's 128,
     * systemd's Backlog=), shared by the loops. */
    const char *args[] = {"--threads", "2", "--backlog", "5", "--delay", "0", NULL};
    if (server_start_activated(&s, env->bin, args) != 0) {
        CHECK_FAIL_("%s", "server did not start with a socket handed over");
        return;
    }
    expect_backlogs(&s, 1, 128, "socket activation");
    answers_within(s.port, "/echo", "OK", 0, LONE_SLACK);
    stop_expect_clean(&s);
}

/* One clock for every model of both binaries: with --idle-timeout 200ms, a connection that sends
 * nothing, and a kept-alive one after its answer, are closed within 50 ms of 200 ms (the core's
 * sweep, not a library's whole seconds); --header-timeout 300ms cuts a head that trickles. */
static void idle_timeout_closes_on_time(const struct itest_env *env)
{
    struct server s;
    char buf[1024];
    int closed;
    const char *args[] = {"--idle-timeout", "200ms",    "--header-timeout",
                          "300ms",          "--delay",  "0",
                          "--model",        env->model, NULL};
    if (server_start(&s, env->bin, args, NULL) != 0) {
        CHECK_FAIL_("%s", "server did not start");
        return;
    }
    for (int round = 0; round < 3; round++) {
        double t0 = now_seconds();
        int fd = raw_connect(s.port);
        const char *what = "a silent connection";
        if (round == 1) {
            send_all(fd, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", 31);
            read_until_text(fd, buf, sizeof buf, "\r\n\r\nOK", 1000);
            t0 = now_seconds();
            what = "a kept-alive connection after its answer";
        }
        if (round == 2) {
            /* A byte every 100 ms: never silent for 200 ms, cut by the header clock. */
            what = "a trickled head";
            for (int i = 0; i < 8; i++) {
                if (read_until_close(fd, buf, sizeof buf, 100, &closed) != 0 || closed)
                    break;
                send_all(fd, "GET /echo" + i, 1);
            }
        }
        read_until_close(fd, buf, sizeof buf, 2000, &closed);
        double took = now_seconds() - t0, want = round == 2 ? 0.3 : 0.2;
        close(fd);
        CHECK_INT(closed, 1);
        if (took < want - 0.005 || took > want + 0.05)
            CHECK_FAIL_("%s closed after %.3f s, want %.3f s within 50 ms (%s)", what, took, want,
                        env->model);
        else
            check_passed++;
    }
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"idle_timeout_closes_on_time", idle_timeout_closes_on_time, ITEST_PER_MODEL, 0},
    {"max_requests_caps_pipelining", max_requests_caps_pipelining, ITEST_PLAIN, 0},
    {"request_limits_follow_options", request_limits_follow_options, ITEST_PLAIN, 0},
    {"request_limits_lowered", request_limits_lowered, ITEST_PLAIN, 0},
    {"idle_timeout_closes_idle_connections", idle_timeout_closes_idle_connections, ITEST_PLAIN, 0},
    {"bind_addresses", bind_addresses, ITEST_PLAIN, 0},
    {"backlog_sets_each_listening_socket", backlog_sets_each_listening_socket, ITEST_PLAIN, 0},
    {"max_size_default_is_16_mib", max_size_default_is_16_mib, ITEST_PLAIN, 0},
    {"header_timeout_restarts_per_request", header_timeout_restarts_per_request, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_limits = {"limits", cases, sizeof cases / sizeof cases[0]};
