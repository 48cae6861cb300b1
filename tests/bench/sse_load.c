/*
 * sse_load: a light SSE load client for bench_streams.sh. One thread, one epoll set, plain
 * non-blocking sockets: it opens N HTTP/1.1 connections to 127.0.0.1:PORT (spread over a ramp),
 * sends one GET for an event stream on each, and reads the events as they come.
 *
 * Per event, from slowsrv's own comment line (": intended_us=I sent_us=S"), two latenesses:
 *   server  S - I: how late the server sent it after its plan (as /stats' stream_event_late_ms)
 *   client  (arrival - arrival of the stream's first event) - (I - I of the first event): how
 *           much later than planned it reached this client, relative to the stream's first
 *           event (the client's clock; it includes the kernel, loopback and this client)
 * Only events that arrive inside the measuring window (after the ramp and a settle second, to
 * the end) count. It prints one line of key=value pairs: connections, events, the rate, and the
 * p50, p99, p99.9 and max of both latenesses in milliseconds.
 *
 * The body is read as lines, with no chunked decoding: each event is one chunk, so a chunk's
 * size line is a line of its own and is skipped.
 *
 * With "poll GAP_MS" it is the floor to compare with instead: each connection asks for PATH (a
 * static body, from nginx) once every GAP_MS on a kept-alive connection, on a fixed schedule,
 * and "client" is each answer's time from its request to its last byte (the server figures are
 * -1). The same messages per second, as requests and answers.
 *
 *   sse_load PORT CONNECTIONS RAMP_S MEASURE_S PATH [poll GAP_MS]
 *
 * Build: gcc -std=gnu11 -O2 -Wall -o sse_load tests/bench/sse_load.c
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_LEN 256
/* Lateness histograms: 10 us buckets up to 10 s. */
#define BUCKET_US 10
#define NBUCKETS 1000000

struct conn {
    int fd;
    int sent;                /* the request went */
    int busy;                /* poll: an answer is awaited */
    int late;                /* poll: its next request is due already */
    int in_body;             /* poll: the answer's head is in */
    uint64_t body_left;      /* poll: bytes of the answer's body still to come */
    uint64_t clen;           /* poll: the answer's Content-Length */
    uint64_t asked_at;       /* poll: when the request went (us) */
    int have_first;          /* the first event's arrival and intended time are known */
    uint64_t first_arrival;  /* us, CLOCK_MONOTONIC */
    uint64_t first_intended; /* us */
    size_t len;              /* bytes of an unfinished line in line */
    char line[LINE_MAX_LEN];
};

struct hist {
    uint32_t *b;
    uint64_t n, max_us;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void hist_add(struct hist *h, int64_t us)
{
    uint64_t v = us < 0 ? 0 : (uint64_t)us;
    uint64_t i = v / BUCKET_US;
    h->b[i < NBUCKETS ? i : NBUCKETS - 1]++;
    h->n++;
    if (v > h->max_us)
        h->max_us = v;
}

/* The upper bound (ms) of the bucket holding quantile q. */
static double hist_q(const struct hist *h, double q)
{
    if (!h->n)
        return -1;
    uint64_t need = (uint64_t)((double)h->n * q);
    uint64_t acc = 0;
    if (need == 0)
        need = 1;
    for (uint64_t i = 0; i < NBUCKETS; i++) {
        acc += h->b[i];
        if (acc >= need)
            return (double)((i + 1) * BUCKET_US) / 1000.0;
    }
    return (double)h->max_us / 1000.0;
}

static int open_conn(struct conn *c, int ep, unsigned port, uint32_t idx)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    memset(c, 0, sizeof *c);
    c->fd = fd;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = idx};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* poll: the schedule, a FIFO of (connection, due): every connection asks again one gap after
 * its last due time, so entries go in in order of their due times. */
struct due {
    uint32_t c;
    uint64_t at;
};

/* poll: sends c's request now. Returns 0 or -1. */
static int ask(struct conn *c, const char *req, int reqlen, uint64_t now)
{
    if (write(c->fd, req, (size_t)reqlen) != reqlen)
        return -1;
    c->busy = 1;
    c->late = 0;
    c->in_body = 0;
    c->clen = 0;
    c->len = 0;
    c->asked_at = now;
    return 0;
}

/* poll: reads answers' bytes of c; each whole answer's time goes to h (when now >= from).
 * Returns 1 when an answer ended. */
static int take_answer(struct conn *c, const char *buf, size_t got, uint64_t now, uint64_t from,
                       struct hist *h)
{
    int ended = 0;
    for (size_t i = 0; i < got; i++) {
        if (c->in_body) {
            size_t take = got - i < c->body_left ? got - i : (size_t)c->body_left;
            c->body_left -= take;
            i += take - 1;
        } else if (buf[i] != '\n') {
            if (c->len < LINE_MAX_LEN - 1)
                c->line[c->len++] = buf[i];
            continue;
        } else {
            c->line[c->len] = '\0';
            c->len = 0;
            unsigned long long n;
            if (sscanf(c->line, "Content-Length: %llu", &n) == 1)
                c->clen = n;
            if (strcmp(c->line, "\r") != 0)
                continue;
            c->in_body = 1;
            c->body_left = c->clen;
        }
        if (c->in_body && c->body_left == 0) {
            if (now >= from)
                hist_add(h, (int64_t)(now - c->asked_at));
            c->busy = 0;
            c->in_body = 0;
            ended = 1;
        }
    }
    return ended;
}

int main(int argc, char **argv)
{
    if (argc != 6 && !(argc == 8 && strcmp(argv[6], "poll") == 0)) {
        fprintf(stderr, "usage: sse_load PORT CONNECTIONS RAMP_S MEASURE_S PATH [poll GAP_MS]\n");
        return 2;
    }
    uint64_t gap_us = argc == 8 ? strtoull(argv[7], NULL, 10) * 1000 : 0;
    unsigned port = (unsigned)strtoul(argv[1], NULL, 10);
    uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
    double ramp = strtod(argv[3], NULL), measure = strtod(argv[4], NULL);
    const char *path = argv[5];
    char req[1024];
    int reqlen = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    struct conn *cs = calloc(n, sizeof *cs);
    struct hist server = {calloc(NBUCKETS, sizeof(uint32_t)), 0, 0};
    struct hist client = {calloc(NBUCKETS, sizeof(uint32_t)), 0, 0};
    int ep = epoll_create1(0);
    struct due *q = calloc(n, sizeof *q);
    size_t qhead = 0, qlen = 0;
    if (!cs || !server.b || !client.b || ep < 0 || !q) {
        fprintf(stderr, "sse_load: out of memory\n");
        return 1;
    }
    uint64_t t0 = now_us();
    uint64_t from = t0 + (uint64_t)((ramp + 1.0) * 1e6);
    uint64_t until = from + (uint64_t)(measure * 1e6);
    uint32_t opened = 0, failed = 0, closed = 0;
    uint64_t events_all = 0;
    struct epoll_event evs[512];
    char buf[65536];
    for (;;) {
        uint64_t now = now_us();
        if (now >= until)
            break;
        /* Open the connections due by now on the ramp. */
        uint32_t due = ramp > 0 ? (uint32_t)((double)(now - t0) / (ramp * 1e6) * n) : n;
        if (due > n)
            due = n;
        while (opened < due) {
            if (open_conn(&cs[opened], ep, port, opened) != 0) {
                failed++;
                cs[opened].fd = -1;
            }
            opened++;
        }
        /* poll: the requests due by now; one whose answer is still out goes when it ends. */
        while (qlen && q[qhead].at <= now) {
            struct due d = q[qhead];
            qhead = (qhead + 1) % n;
            qlen--;
            struct conn *c = &cs[d.c];
            if (c->fd < 0)
                continue;
            if (c->busy)
                c->late = 1;
            else if (ask(c, req, reqlen, now) != 0)
                failed++;
            q[(qhead + qlen) % n] = (struct due){d.c, d.at + gap_us};
            qlen++;
        }
        int k = epoll_wait(ep, evs, 512, 1);
        now = now_us();
        for (int e = 0; e < k; e++) {
            struct conn *c = &cs[evs[e].data.u32];
            if (c->fd < 0)
                continue;
            if (!c->sent && (evs[e].events & EPOLLOUT)) {
                if (write(c->fd, req, (size_t)reqlen) != reqlen) {
                    failed++;
                    close(c->fd);
                    c->fd = -1;
                    continue;
                }
                c->sent = 1;
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = evs[e].data.u32};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                if (gap_us) {
                    c->busy = 1;
                    c->asked_at = now;
                    q[(qhead + qlen) % n] = (struct due){evs[e].data.u32, now + gap_us};
                    qlen++;
                }
            }
            if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                continue;
            ssize_t got = read(c->fd, buf, sizeof buf);
            if (got <= 0) {
                if (got < 0 && errno == EAGAIN)
                    continue;
                closed++;
                close(c->fd);
                c->fd = -1;
                continue;
            }
            if (gap_us) {
                if (take_answer(c, buf, (size_t)got, now, from, &client) && c->late &&
                    ask(c, req, reqlen, now) != 0)
                    failed++;
                continue;
            }
            for (ssize_t i = 0; i < got; i++) {
                if (buf[i] != '\n') {
                    if (c->len < LINE_MAX_LEN - 1)
                        c->line[c->len++] = buf[i];
                    continue;
                }
                c->line[c->len] = '\0';
                c->len = 0;
                unsigned long long in, sent;
                if (sscanf(c->line, ": intended_us=%llu sent_us=%llu", &in, &sent) != 2)
                    continue;
                events_all++;
                if (!c->have_first) {
                    c->have_first = 1;
                    c->first_arrival = now;
                    c->first_intended = in;
                }
                if (now < from)
                    continue;
                hist_add(&server, (int64_t)sent - (int64_t)in);
                hist_add(&client,
                         (int64_t)(now - c->first_arrival) - (int64_t)(in - c->first_intended));
            }
        }
    }
    uint32_t open_now = 0;
    for (uint32_t i = 0; i < opened; i++)
        if (cs[i].fd >= 0) {
            open_now += gap_us ? cs[i].sent : cs[i].have_first;
            close(cs[i].fd);
        }
    printf("connections=%u streaming=%u failed=%u closed_early=%u events=%llu "
           "events_per_s=%.0f server_p50_ms=%.3f server_p99_ms=%.3f server_p999_ms=%.3f "
           "server_max_ms=%.3f client_p50_ms=%.3f client_p99_ms=%.3f client_p999_ms=%.3f "
           "client_max_ms=%.3f\n",
           opened, open_now, failed, closed, (unsigned long long)(gap_us ? client.n : server.n),
           (double)(gap_us ? client.n : server.n) / measure, hist_q(&server, 0.5),
           hist_q(&server, 0.99), hist_q(&server, 0.999), (double)server.max_us / 1000.0,
           hist_q(&client, 0.5), hist_q(&client, 0.99), hist_q(&client, 0.999),
           (double)client.max_us / 1000.0);
    (void)events_all;
    return failed || closed ? 1 : 0;
}
