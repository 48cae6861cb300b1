/*
 * Cases on the limits a connection meets: requests per connection, the sizes of the request
 * line and headers, the idle timeout, and the addresses --bind listens on.
 */
#include "itest.h"

#include <netdb.h>
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
    /* libmicrohttpd counts its timeout in whole seconds from the last activity. */
    if (idle < 1.0 || idle > 2.5)
        CHECK_FAIL_("an idle connection was closed after %.2f s with --idle-timeout 1s", idle);
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
static void bind_addresses(const struct itest_env *env)
{
    struct server s;
    START(env, &s, "--delay", "0");
    CHECK(strstr(s.startup, "listening on http://127.0.0.1:") != NULL);
    CHECK_INT(echo_answers_at("127.0.0.1", s.port), 1);
    CHECK_INT(echo_answers_at("127.0.0.2", s.port), 0);
    stop_expect_clean(&s);

    START(env, &s, "--bind", "0.0.0.0", "--delay", "0");
    CHECK(strstr(s.startup, "listening on http://0.0.0.0:") != NULL);
    CHECK_INT(echo_answers_at("127.0.0.1", s.port), 1);
    CHECK_INT(echo_answers_at("127.0.0.2", s.port), 1);
    stop_expect_clean(&s);

    START(env, &s, "--bind", "::", "--delay", "0");
    CHECK(strstr(s.startup, "listening on http://[::]:") != NULL);
    CHECK_INT(echo_answers_at("::1", s.port), 1);
    stop_expect_clean(&s);

    START(env, &s, "--bind", "::1", "--delay", "0");
    CHECK_INT(echo_answers_at("::1", s.port), 1);
    CHECK_INT(echo_answers_at("127.0.0.1", s.port), 0);
    stop_expect_clean(&s);
}

static const struct itest_case cases[] = {
    {"max_requests_caps_pipelining", max_requests_caps_pipelining, ITEST_PLAIN, 0},
    {"request_limits_follow_options", request_limits_follow_options, ITEST_PLAIN, 0},
    {"request_limits_lowered", request_limits_lowered, ITEST_PLAIN, 0},
    {"idle_timeout_closes_idle_connections", idle_timeout_closes_idle_connections, ITEST_PLAIN, 0},
    {"bind_addresses", bind_addresses, ITEST_PLAIN, 0},
};

const struct itest_suite itest_suite_limits = {"limits", cases, sizeof cases / sizeof cases[0]};
