/* Unit tests of run/conn: the connections' clocks, on real loopback TCP sockets, with the sweep
 * told the time. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "run/conn.h"
#include "check.h"

/* A connected pair of loopback TCP sockets: *server is the accepted end. */
static int tcp_pair(int *server, int *client)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        return -1;
    *client = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*client, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    *server = accept(l, NULL, NULL);
    close(l);
    return *server >= 0 ? 0 : -1;
}

/* 1 if the server end was shut down: the client reads an end of stream. */
static int was_shut(int client)
{
    char b[64];
    struct timeval tv = {0, 200000};
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return recv(client, b, sizeof b, 0) == 0;
}

#define MS 1000ULL
#define T0 (1000 * 1000 * MS) /* an arbitrary start on the sweep's clock */

/* A connection that sends nothing is shut at --idle-timeout, not a sweep before. */
static void conn_silent_is_cut_at_the_idle_timeout(void)
{
    struct conn_registry r;
    struct conn c;
    int s, cl;
    CHECK_INT(tcp_pair(&s, &cl), 0);
    conn_registry_init(&r, 0, 200 * MS);
    CHECK_U64(r.every_us, 10 * MS); /* a twentieth of 200 ms */
    conn_open(&r, &c, s, 0, T0);
    CHECK_INT(conn_count(&r), 1);
    CHECK_INT(conn_sweep(&r, T0 + 190 * MS, NULL, NULL), 0);
    CHECK_INT(conn_sweep(&r, T0 + 195 * MS, NULL, NULL), 0); /* no sweep due yet */
    CHECK_INT(conn_sweep(&r, T0 + 200 * MS, NULL, NULL), 1);
    CHECK_INT(c.shut, 1);
    CHECK_INT(conn_sweep(&r, T0 + 400 * MS, NULL, NULL), 0); /* once */
    CHECK(was_shut(cl));
    conn_close(&r, &c);
    CHECK_INT(conn_count(&r), 0);
    conn_registry_cleanup(&r);
    close(s);
    close(cl);
}

/* A request that waits on purpose is never cut; one that neither waits nor moves a byte is. */
static void conn_waiting_request_is_never_cut(void)
{
    struct conn_registry r;
    struct conn c;
    int s, cl;
    CHECK_INT(tcp_pair(&s, &cl), 0);
    conn_registry_init(&r, 100 * MS, 200 * MS);
    conn_open(&r, &c, s, 0, T0);
    conn_request_begin(&c, 0);
    conn_wait(&c, 1);
    for (uint64_t t = T0; t < T0 + 5000 * MS; t += 50 * MS)
        CHECK_INT(conn_sweep(&r, t, NULL, NULL), 0);
    conn_wait(&c, 0); /* now its answer should move */
    CHECK_INT(conn_sweep(&r, T0 + 5100 * MS, NULL, NULL), 0);
    CHECK_INT(conn_sweep(&r, T0 + 5200 * MS, NULL, NULL), 1);
    CHECK(was_shut(cl));
    conn_close(&r, &c);
    conn_registry_cleanup(&r);
    close(s);
    close(cl);
}

/* The first head is due from the opening: bytes that trickle in keep the connection from being
 * silent, not from --header-timeout. */
static void conn_head_is_due_from_the_opening(void)
{
    struct conn_registry r;
    struct conn c;
    int s, cl;
    CHECK_INT(tcp_pair(&s, &cl), 0);
    conn_registry_init(&r, 300 * MS, 200 * MS);
    conn_open(&r, &c, s, 0, T0);
    uint64_t t = T0;
    for (int i = 0; i < 5; i++) {
        CHECK_INT(send(cl, "G", 1, 0), 1);
        usleep(20000); /* the kernel counts it received */
        t += 50 * MS;
        CHECK_INT(conn_sweep(&r, t, NULL, NULL), 0);
    }
    CHECK_INT(conn_sweep(&r, T0 + 299 * MS, NULL, NULL), 0);
    CHECK_INT(conn_sweep(&r, T0 + 309 * MS, NULL, NULL), 1); /* the next sweep, 10 ms on */
    conn_close(&r, &c);
    conn_registry_cleanup(&r);
    close(s);
    close(cl);
}

static int always(void *ctx, struct conn *c)
{
    (void)c;
    return *(int *)ctx;
}

/* After a request: silence counts from its end; a head the library holds already, or the first
 * byte seen after it, starts the header clock; on HTTP/2, frames are no head and keep it alive. */
static void conn_clocks_restart_after_each_request(void)
{
    struct conn_registry r;
    struct conn c;
    int s, cl, yes = 1, no = 0;
    CHECK_INT(tcp_pair(&s, &cl), 0);
    conn_registry_init(&r, 300 * MS, 1000 * MS);
    conn_open(&r, &c, s, 0, T0);
    CHECK_INT(send(cl, "GET / HTTP/1.1\r\n\r\n", 18, 0), 18);
    usleep(20000);
    conn_request_begin(&c, 0);
    conn_request_end(&c, T0 + 100 * MS);
    /* The request's own bytes do not start a head. */
    CHECK_INT(conn_sweep(&r, T0 + 150 * MS, always, &no), 0);
    CHECK_U64(atomic_load(&c.head_since), 0);
    CHECK_INT(conn_sweep(&r, T0 + 1099 * MS, always, &no), 0);
    CHECK_INT(conn_sweep(&r, T0 + 1114 * MS, always, &no), 1); /* idle from its end; 15 ms on */
    conn_close(&r, &c);

    /* The library holds the next head's start: its clock runs from the last request's end. */
    conn_registry_cleanup(&r);
    conn_registry_init(&r, 300 * MS, 1000 * MS);
    conn_open(&r, &c, s, 0, T0);
    conn_request_begin(&c, 0);
    conn_request_end(&c, T0 + 100 * MS);
    CHECK_INT(conn_sweep(&r, T0 + 2000 * MS, always, &yes), 1); /* 300 ms after 100 ms */
    conn_close(&r, &c);

    /* HTTP/2: bytes after a stream are frames, not a head: no header clock. */
    conn_registry_cleanup(&r);
    conn_registry_init(&r, 300 * MS, 1000 * MS);
    conn_open(&r, &c, s, 0, T0);
    conn_request_begin(&c, 1);
    conn_request_end(&c, T0);
    CHECK_INT(conn_sweep(&r, T0 + 50 * MS, always, &yes), 0);
    CHECK_INT(send(cl, "PING", 4, 0), 4);
    usleep(20000);
    CHECK_INT(conn_sweep(&r, T0 + 900 * MS, always, &yes), 0);
    CHECK_U64(atomic_load(&c.head_since), 0);
    CHECK_INT(conn_sweep(&r, T0 + 1899 * MS, always, &yes), 0);
    CHECK_INT(conn_sweep(&r, T0 + 1914 * MS, always, &yes), 1);
    conn_close(&r, &c);
    conn_registry_cleanup(&r);
    close(s);
    close(cl);
}

/* The stop shuts the HTTP/1.x connections with nothing under way, not those with a request or a
 * request line in, nor HTTP/2 ones; no timeout at all means no sweep. */
static void conn_stop_shuts_only_idle_ones(void)
{
    struct conn_registry r;
    struct conn c[4];
    int s[4], cl[4];
    conn_registry_init(&r, 0, 0);
    CHECK_U64(conn_next_sweep(&r), 0);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(tcp_pair(&s[i], &cl[i]), 0);
        conn_open(&r, &c[i], s[i], i == 3, T0);
    }
    CHECK_INT(c[3].control, 1);
    conn_request_begin(&c[1], 0);
    conn_head_begins(&c[2], T0);
    conn_request_begin(&c[3], 1);
    conn_request_end(&c[3], T0);
    CHECK_INT(conn_sweep(&r, T0 + 3600000 * MS, NULL, NULL), 0);
    conn_close_idle(&r);
    CHECK(was_shut(cl[0]));
    CHECK(!was_shut(cl[1]));
    CHECK(!was_shut(cl[2]));
    CHECK(!was_shut(cl[3]));
    conn_shut_all(&r);
    CHECK(was_shut(cl[3]));
    for (int i = 0; i < 4; i++) {
        conn_close(&r, &c[i]);
        close(s[i]);
        close(cl[i]);
    }
    conn_registry_cleanup(&r);
}

int main(void)
{
    conn_silent_is_cut_at_the_idle_timeout();
    conn_waiting_request_is_never_cut();
    conn_head_is_due_from_the_opening();
    conn_clocks_restart_after_each_request();
    conn_stop_shuts_only_idle_ones();
    return CHECK_DONE();
}
