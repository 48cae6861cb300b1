/*
 * wsloop: the core's WebSocket sockets (RFC 6455), served for both engines from one thread of
 * the core's own: an epoll set and the core's timer heap (base/timer.h), no thread per socket
 * and no busy loop. An engine answers a WebSocket route's handshake 101 (the core decides it:
 * plan/route.h PLAN_UPGRADE, http/wshs.h), takes the socket from its library, and hands the
 * descriptor and the bytes its library read past the head to wsloop_adopt. From then on the
 * socket is the core's: framing by wslay (its frames parsed, fragmented messages reassembled,
 * pings answered, the close handshake), the route's plan (plan/ws.h) carried out by timers.
 *
 * What a client sees, on both binaries:
 *   a message (text or binary)       echoed as it came, after its drawn delay
 *   an unmasked frame, a bad frame   close 1002 (wslay)
 *   a message over the route's limit close 1009 (wslay)
 *   a text message not UTF-8         close 1007 (wslay)
 *   a client that does not read       the loop stops reading it and pushing to it once it
 *                                    holds WSLOOP_HELD_LIMITS messages' worth unread
 *   over WSLOOP_FRAMES_PER_S frames, or WSLOOP_CONTROL_PER_S pings, pongs and closes, in a
 *   second; or over WSLOOP_PENDING_MAX messages waiting for their echo
 *                                    close 1008 (counted as a budget close)
 *   no frame either way for --idle-timeout                     close 1001
 *   the server stops (SIGTERM)                                 close 1001
 *   a socket past --max-connections open sockets              close 1013
 * A close the server sends waits WSLOOP_CLOSE_WAIT_US for the client's, then the socket is
 * closed. Each socket ends with one access-log line (its messages and its close code) and is
 * counted (wsloop_counts).
 *
 * Thread-safety: wsloop_adopt and wsloop_counts from any thread; the rest from the thread that
 * started it.
 */
#ifndef SLOWSRV_WSLOOP_H
#define SLOWSRV_WSLOOP_H

#include <stddef.h>
#include <stdint.h>

#include "base/accesslog.h"
#include "plan/ws.h"

#define WSLOOP_FRAMES_PER_S 1000
#define WSLOOP_CONTROL_PER_S 100
#define WSLOOP_PENDING_MAX 64
#define WSLOOP_CLOSE_WAIT_US 1000000ULL
/* What a socket may hold that its client has not read (frames queued to it and echoes
 * waiting): this many times its message limit, at least WSLOOP_HELD_MIN bytes, and at most
 * WSLOOP_QUEUED_MAX frames queued. Beyond it the loop reads nothing more from the socket and
 * pushes nothing until the client reads: TCP's window then holds the client back. */
#define WSLOOP_HELD_LIMITS 2
#define WSLOOP_HELD_MIN (256 * 1024)
#define WSLOOP_QUEUED_MAX 1024
/* Pushes are at least this far apart, whatever the route's every= draws. */
#define WSLOOP_PUSH_MIN_GAP_US 1000

/* Close codes counted one by one: 1000 to 1015; others under "other". */
#define WSLOOP_CODES 16

struct wsloop;

struct wsloop_config {
    size_t max_sockets;       /* open at once (--max-connections) */
    uint64_t idle_us;         /* --idle-timeout; 0: never */
    uint64_t max_delay_us;    /* --max-delay: every drawn delay is cut there */
    struct accesslog *access; /* NULL: no access log */
};

/* What a socket needs of its handshake's plan: a copy, so that a socket that has begun keeps its
 * plan whatever the control API changes. */
struct wsloop_ticket {
    struct wsloop *loop;
    struct ws_spec spec;
    uint64_t key; /* of its draws (plan's ws_key) */
    uint64_t begun_us;
    char route[128];  /* the route as configured */
    char target[256]; /* as received */
    char client[64];
};

struct wsloop_counts {
    uint64_t open;        /* sockets open now */
    uint64_t opened;      /* sockets adopted */
    uint64_t messages_in; /* whole messages received (text and binary) */
    uint64_t messages_out;
    uint64_t budget;               /* closes 1008 for a flood */
    uint64_t closes[WSLOOP_CODES]; /* sockets ended by code 1000 + i */
    uint64_t closes_other;
};

/* Starts the loop's thread. Returns 0, or -errno. */
int wsloop_start(struct wsloop **out, const struct wsloop_config *c);

/* Any thread: the socket fd (its handshake answered), with n bytes at extra that its library
 * read after the head, is the loop's from now on, served by t's plan. fd is closed on failure.
 * Returns 0 or -errno. */
int wsloop_adopt(const struct wsloop_ticket *t, int fd, const void *extra, size_t n);

/* The server stops: every open socket is closed 1001, and a socket adopted from now on too. */
void wsloop_going_away(struct wsloop *w);

/* Waits up to WSLOOP_CLOSE_WAIT_US for the sockets to end, closes the rest, ends the thread and
 * frees the loop. NULL: nothing. */
void wsloop_stop(struct wsloop *w);

/* Its counters now. Any thread. */
void wsloop_counts(const struct wsloop *w, struct wsloop_counts *out);

/* What wsloop_feed saw. */
struct wsloop_feed_result {
    uint64_t messages_in, messages_out;
    unsigned close; /* the code the socket ended with */
    int flood;      /* a budget was crossed */
};

/* The framing path of one socket fed from buf alone (n bytes, as if read from a socket that then
 * stays silent), with spec's plan and every echo at once, its writes dropped: for the fuzzer and
 * the unit tests. Returns 0 or -ENOMEM. Any thread. */
int wsloop_feed(const struct ws_spec *spec, const void *buf, size_t n,
                struct wsloop_feed_result *r);

#endif
