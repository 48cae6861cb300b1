/*
 * bench_ws: N WebSocket connections to 127.0.0.1:PORT PATH, each sending one 16-byte text
 * message a second (their starts spread over the first second) for SECONDS, one thread, epoll.
 * Prints the round trips (send to echo, microseconds) as count, p50, p99, p99.9 and max, and the
 * connections that failed. Built and run by bench_ws.sh.
 *
 *   bench_ws PORT PATH N SECONDS [PAUSE_FILE]
 *
 * With PAUSE_FILE, it writes "open\n" there once every connection is open and waits 2 s before
 * the messages begin (bench_ws.sh reads the server's RSS then).
 */
#include <arpa/inet.h>
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

struct wsconn {
    int fd;
    int open;      /* 101 read */
    uint64_t due;  /* next send */
    uint64_t sent; /* when the message in flight left; 0: none */
    char in[512];
    size_t len;
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_ws PORT PATH N SECONDS [PAUSE_FILE]\n");
        return 2;
    }
    int port = (int)strtol(argv[1], NULL, 10), n = (int)strtol(argv[3], NULL, 10),
        secs = (int)strtol(argv[4], NULL, 10);
    const char *path = argv[2], *pause_file = argc > 5 ? argv[5] : NULL;
    struct wsconn *c = calloc((size_t)n, sizeof *c);
    size_t cap = (size_t)n * (size_t)(secs + 2), nrtt = 0;
    uint64_t *rtt = malloc(cap * sizeof *rtt);
    int ep = epoll_create1(0), failed = 0, opened = 0;
    char req[512];
    int rlen = snprintf(req, sizeof req,
                        "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n",
                        path);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    /* Open them in batches, each handshake read before the next batch. */
    for (int i = 0; i < n; i++) {
        c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (c[i].fd < 0 || connect(c[i].fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
            write(c[i].fd, req, (size_t)rlen) != rlen) {
            failed++;
            continue;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev);
    }
    struct epoll_event evs[256];
    uint64_t until = now_us() + 30000000;
    while (opened + failed < n && now_us() < until) {
        int k = epoll_wait(ep, evs, 256, 1000);
        for (int j = 0; j < k; j++) {
            struct wsconn *w = &c[evs[j].data.u32];
            ssize_t r = read(w->fd, w->in + w->len, sizeof w->in - w->len - 1);
            if (r <= 0) {
                failed++;
                epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
                continue;
            }
            w->len += (size_t)r;
            w->in[w->len] = '\0';
            if (!w->open && strstr(w->in, "\r\n\r\n")) {
                w->open = strncmp(w->in, "HTTP/1.1 101", 12) == 0;
                if (w->open)
                    opened++;
                else
                    failed++;
                w->len = 0;
            }
        }
    }
    if (pause_file) {
        FILE *f = fopen(pause_file, "w");
        if (f) {
            fputs("open\n", f);
            fclose(f);
        }
        sleep(2);
    }
    uint64_t start = now_us(), end = start + (uint64_t)secs * 1000000;
    for (int i = 0; i < n; i++)
        c[i].due = start + (uint64_t)i * 1000000 / (uint64_t)n;
    /* A masked 16-byte text frame. */
    unsigned char frame[22] = {0x81, 0x80 | 16, 1, 2, 3, 4};
    for (int i = 0; i < 16; i++)
        frame[6 + i] = (unsigned char)('a' + i) ^ frame[2 + i % 4];
    int next = 0;
    while (now_us() < end + 1000000) {
        uint64_t t = now_us();
        /* Sends due, in index order: the dues rise by index within each second. */
        for (int scanned = 0; scanned < n; scanned++) {
            struct wsconn *w = &c[next];
            if (w->due > t || w->due >= end)
                break;
            /* A closed connection, or an echo still out, skips its turn. */
            if (w->open && !w->sent && write(w->fd, frame, sizeof frame) == (ssize_t)sizeof frame)
                w->sent = t;
            w->due += 1000000;
            next = (next + 1) % n;
        }
        int k = epoll_wait(ep, evs, 256, 1);
        t = now_us();
        for (int j = 0; j < k; j++) {
            struct wsconn *w = &c[evs[j].data.u32];
            ssize_t r = read(w->fd, w->in + w->len, sizeof w->in - w->len);
            if (r <= 0) {
                if (w->open)
                    failed++;
                w->open = 0;
                epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
                continue;
            }
            w->len += (size_t)r;
            while (w->len >= 18) { /* an unmasked 16-byte echo: 2 + 16 */
                if (w->sent && nrtt < cap)
                    rtt[nrtt++] = t - w->sent;
                w->sent = 0;
                memmove(w->in, w->in + 18, w->len - 18);
                w->len -= 18;
            }
        }
    }
    qsort(rtt, nrtt, sizeof *rtt, cmp_u64);
#define PCT(p) (nrtt ? rtt[(size_t)((double)(nrtt - 1) * (p))] : 0)
    printf("connections %d opened %d failed %d messages %zu rtt_us p50 %llu p99 %llu p99.9 %llu "
           "max %llu\n",
           n, opened, failed, nrtt, (unsigned long long)PCT(0.5), (unsigned long long)PCT(0.99),
           (unsigned long long)PCT(0.999), (unsigned long long)(nrtt ? rtt[nrtt - 1] : 0));
    return failed ? 1 : 0;
}
