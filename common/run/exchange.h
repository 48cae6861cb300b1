/*
 * exchange: the life of one request, decided here for both engines. An engine keeps a struct
 * exchange (opaque) beside its per-request record, reports what happened, and carries out what
 * the call returns (an enum exchange_do), with the answer exchange_answer_of gives; it never
 * reads or writes the state itself.
 *
 *   what happened                           call                    what it may return
 *   the request line and headers are in     exchange_on_head        READ, ANSWER, CLOSE
 *   body bytes arrived                      exchange_on_body        READ, ANSWER, CLOSE
 *   the body ended; the engine runs the     exchange_next           HOLD, ANSWER, RESET, CLOSE,
 *     request again after a resume; a                               and what was decided last;
 *     parked request was handed back                                after a hand-back, as
 *                                                                   exchange_hold
 *   the engine suspended it (after HOLD)    exchange_hold           WAIT, PARK, ANSWER, RESET,
 *                                                                   CLOSE
 *   its timer popped (or the server gives   exchange_on_timer       ANSWER, SEND, DROP, RESET,
 *     up on it)                                                     CLOSE
 *   a blocking model sleeps out the delay   exchange_sleep          ANSWER, RESET, CLOSE
 *   it must answer (ANSWER)                 exchange_answer_of      (struct answer)
 *   the answer's head was queued            exchange_answer
 *   a paced body wants its next bytes       exchange_body_take      (enum exchange_body)
 *   the request is over                     exchange_end
 *
 * The edge cases have one answer on both binaries, decided here: a request that still waits when
 * --grace runs out, or is still queued for a worker when the server stops, is answered 503
 * {"error": "server stopping"} with Connection: close; one that finds the timer heap full is
 * answered 503 "too many waiting requests" (the engines size the heap so that this cannot
 * happen); a drip cut short by the stop is closed mid-body, as its head is out already; every
 * answer given once the stop began (service_stop) carries Connection: close.
 *
 * An exchange belongs to the loop that began it. Calls on it come from one thread at a time: the
 * loop's, or the library thread that runs the request (thread-per-connection, the poll model),
 * with the loop's lock held around every call that takes the loop's heap where a library thread
 * shares it. exchange_on_timer runs on the thread that popped the timer, for a request whose
 * connection is suspended (nothing else runs it then).
 */
#ifndef SLOWSRV_EXCHANGE_H
#define SLOWSRV_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "plan/route.h"
#include "run/conn.h"
#include "run/service.h"
#include "run/wsloop.h"
#include "base/stats.h"
#include "base/timer.h"
#include "http/answer.h"
#include "http/upload.h"

/* What the engine does next. */
enum exchange_do {
    EXCHANGE_DO_READ = 0, /* read on: bytes to exchange_on_body, the end to exchange_next */
    EXCHANGE_DO_HOLD,     /* the request waits (a delay or a worker): suspend it so that a wake
                             from another thread finds it suspended, then call exchange_hold */
    EXCHANGE_DO_WAIT,     /* its timer is queued (exchange_on_timer when it pops); with no heap
                             (a blocking model), sleep it out with exchange_sleep */
    EXCHANGE_DO_PARK,     /* queued for a worker: leave it until `admit` hands it back, then
                             call exchange_next */
    EXCHANGE_DO_ANSWER,   /* send the plan's answer now (exchange_answer, then a paced body by
                             exchange_body_take); an engine that cannot answer mid-body may
                             read on and answer at exchange_next */
    EXCHANGE_DO_SEND,     /* a paced body: its next chunk is due (exchange_body_take) */
    EXCHANGE_DO_DONE,     /* the answer is out already: nothing more to do */
    EXCHANGE_DO_RESET,    /* reset the connection (--overflow reset, ?fault=reset) */
    EXCHANGE_DO_CLOSE,    /* close the connection without (the rest of) an answer */
    EXCHANGE_DO_DROP,     /* the client is gone: end the request, nothing to send */
};

/* What comes next of a paced body (exchange_body_take). */
enum exchange_body {
    EXCHANGE_BODY_SEND = 0, /* send the next bytes now */
    EXCHANGE_BODY_WAIT,     /* nothing is due yet: queue the next chunk (exchange_pace) */
    EXCHANGE_BODY_DONE,     /* the whole body is out */
    EXCHANGE_BODY_CUT,      /* ?fault=truncate: close the connection here */
    EXCHANGE_BODY_RESET,    /* reset-after: reset the connection here (HTTP/2: the stream), its
                               bytes before it sent */
};

/* Opaque to engines: its fields are the core's (exchange_impl.h). An engine keeps one in its
 * per-request record, in exchange_size() bytes aligned to EXCHANGE_ALIGN. */
struct exchange;

#define EXCHANGE_ALIGN 16

/* Bytes an exchange takes. */
size_t exchange_size(void);

/* The engine's record x belongs to, as given to exchange_on_head. */
void *exchange_owner(const struct exchange *x);

/* The head is in: plans the answer to rq through svc's routes (on the control listener: the
 * control API, service.h), takes its worker pool and access log from svc, and counts the request
 * on shard sh and on its connection conn (NULL: none known; --max-requests is counted there, and
 * the connection's clocks follow the request, conn.h); all three must outlive the exchange; rq
 * is only read during the call; owner is the engine's record (exchange_owner). `admit` is the
 * engine's hand-back of a request parked for a worker: it is called later, from any thread with the
 * pool's lock held, and must only hand x back to its loop, which then calls exchange_next. A POST
 * /write starts counting its body here (its Content-Type and Content-Length, read through
 * rq->lookup, and --max-body). A head that fails head_check (rq->head) is answered at once with its
 * 4xx or 501 and Connection: close (the engine drops any body). Returns READ; ANSWER when the
 * answer is known from the head alone (an upload's 415, 400 or 413; the control API's 401, 403, 413
 * or a preflight: the engine may answer before the body and drop it); CLOSE if out of memory. */
enum exchange_do exchange_on_head(struct exchange *x, void *owner, struct conn *conn,
                                  struct service *svc, struct stats_shard *sh,
                                  const struct route_request *rq,
                                  void (*admit)(struct pool_entry *e));

/* The engine found the framing of x's body bad below its library (h1frame.h): x is refused
 * with `status` and `why` as a bad head is, counted under its route, and the connection closes
 * after the answer. Returns ANSWER (the engine writes it around its library), or CLOSE if x has
 * answered already. */
enum exchange_do exchange_refuse(struct exchange *x, unsigned status, const char *why);

/* Most bytes an engine reads and drops after an upload error, before it gives up on the client
 * and closes the connection. */
#define EXCHANGE_DISCARD_MAX (64ULL << 20)

/* len body bytes arrived (buf may be NULL on a route that does not read its body: they are only
 * counted). Returns READ; ANSWER once an upload's error is found mid-body (x's plan holds it),
 * and with every piece after it until the engine has answered (exchange_answer); CLOSE once
 * more than EXCHANGE_DISCARD_MAX bytes came after that error. */
enum exchange_do exchange_on_body(struct exchange *x, const void *buf, size_t len);

/* The body is in (the first call after the body), or the engine runs the request again after a
 * resume: what to do now. The first time, HOLD if the request waits for a worker or a delay,
 * else ANSWER, RESET or CLOSE. After a parked request was handed back by `admit`: HOLD again
 * when it has its worker and a delay to wait (the engine suspends it again before exchange_hold
 * queues the timer), the plan's ANSWER, RESET or CLOSE when it has no delay, or ANSWER with the
 * 503 "server stopping". Otherwise what exchange_hold or exchange_on_timer decided last (PARK
 * while still queued), and DONE once answered. */
enum exchange_do exchange_next(struct exchange *x);

/* After HOLD, with the request suspended: takes a worker and queues the delay's timer in heap h
 * (NULL for a blocking model: WAIT then means exchange_sleep). Returns PARK, WAIT, or what is
 * answered at once: ANSWER (no delay; the pool's 503; a full heap's 503), RESET or CLOSE. */
enum exchange_do exchange_hold(struct exchange *x, struct timer_heap *h);

/* Returns the exchange whose pool entry is e. */
struct exchange *exchange_of_entry(struct pool_entry *e);

/* Returns the exchange whose timer node n is (as popped from the heap). */
struct exchange *exchange_of_timer(struct timer_node *n);

/* x's timer was popped from its heap. `peer_gone`: the engine saw the connection closed;
 * `give_up`: the server stops and --grace is over. A delay: ANSWER (the plan's, or 503 "server
 * stopping" on give_up), RESET or CLOSE (a fault), or DROP (the client left: a cancel). A paced
 * body: SEND, or CLOSE on give_up. */
enum exchange_do exchange_on_timer(struct exchange *x, int peer_gone, int give_up);

/* Blocking models, after WAIT with no heap: waits out the delay by calling sleep_fn(arg,
 * delay_us) in the caller's thread. sleep_fn returns 0 when the delay is over, or non-zero if it
 * was cut short (the server gave up draining). After a full sleep, gone_fn(arg) (NULL: never)
 * returns non-zero if the client left meanwhile. Returns as exchange_on_timer: DROP (a cancel)
 * for a client that left. */
enum exchange_do exchange_sleep(struct exchange *x, int (*sleep_fn)(void *arg, uint64_t delay_us),
                                int (*gone_fn)(void *arg), void *arg);

/* After ANSWER: fills *a with the answer to send now, every part of it decided here
 * (http/answer.h): the plan's, or the report (/stats, /metrics) or control API answer the core
 * builds now, or a 503 "out of memory" in place of one it cannot build. *a points into x and the
 * route table: valid until exchange_end. */
void exchange_answer_of(struct exchange *x, struct answer *a);

/* Writes x's answer (exchange_answer_of), head and body, to the cleartext socket fd without
 * blocking, for an engine that must answer around its library. Returns 1 if all of it went, 0 if
 * nothing did, -1 if part of it did. The caller then calls exchange_answer if anything went. */
int exchange_write_h1(struct exchange *x, int fd);

/* x's answer (exchange_answer_of), head and body, as HTTP/1.1 bytes in a buffer of the caller's
 * (free), for an engine that must write it through its library's TLS session. NULL if out of
 * memory; *len its bytes. */
char *exchange_h1_bytes(struct exchange *x, size_t *len);

/* An engine that prebuilds one answer per route of the start table: fills *a with route i's
 * default answer (what exchange_answer_of gives with a->cached == i). Returns 0, or -1 if the
 * route has none fixed. Any thread, while svc lives. */
int exchange_cached_answer(const struct service *svc, size_t i, struct answer *a);

/* After a 101 answer (answer.upgrade): the socket's plan, the caller's to hand to wsloop_adopt
 * (which copies it) and then free(); NULL if taken already. The engine takes it before the
 * request ends (exchange_end frees one not taken). */
struct wsloop_ticket *exchange_ws_take(struct exchange *x);

/* The engine queued the answer: records its service time and, for a delayed request, the
 * intended delay and how late the answer came after it was due. An answer sent whole frees its
 * worker of --workers here (the next queued request is admitted now); a paced one keeps it until
 * exchange_body_take hands over its last byte. */
void exchange_answer(struct exchange *x);

/* Returns 1 once an answer's head was queued (exchange_answer): a fault or a stop then cuts the
 * answer short instead of replacing it. */
int exchange_has_answered(const struct exchange *x);

/* A paced body, of which `sent` bytes went out, at now_us: SEND with *len bytes from the
 * answer's body + sent to send now; WAIT with *due_us when the next chunk is due; DONE; CUT
 * (truncate: close the connection without the rest); or RESET (reset-after: once the bytes
 * before it have left the socket, or a second has passed). The chunks of a drip go out one every
 * over_us / chunks after the answer was queued, so the last one leaves over_us after it; a rate
 * and a stall follow pace.h. With slow-close, the last byte is followed by a WAIT of its
 * duration before DONE. */
enum exchange_body exchange_body_next(struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t *len, uint64_t *due_us);

/* The engine's step through a paced body: exchange_body_next, with at most `max` bytes to SEND,
 * found at *bytes (valid until exchange_end). When the step hands over the body's last byte (a
 * SEND up to its end, DONE, or CUT), x's worker of --workers is free, as for an answer sent
 * whole. */
enum exchange_body exchange_body_take(struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t max, const char **bytes, size_t *len,
                                      uint64_t *due_us);

/* The slow-close of x's answer: how long its connection stays open and silent after the last
 * byte, for an engine whose library cannot hold the end of an answer (exchange_body_take's
 * last SEND is its last call) and closes the connection itself (loop_linger). 0: none. */
uint64_t exchange_slow_close_us(const struct exchange *x);

/* read-rate: of `avail` request body bytes at hand at now_us, how many the engine may hand to
 * exchange_on_body now: all of them without a read-rate. When it is 0, *due_us says when more
 * may be read: the engine stops reading (its library's buffer fills, and TCP's window pushes
 * back on the client) and calls exchange_read_pace. */
uint64_t exchange_read_allowed(struct exchange *x, uint64_t now_us, uint64_t avail,
                               uint64_t *due_us);

/* After exchange_read_allowed gave 0, with the connection's reading paused: queues x's timer in
 * heap h for due_us. Returns WAIT (its popped timer then says READ: read on; CLOSE when the
 * server gives up on it, and exchange_on_body says CLOSE from then on), or CLOSE if the heap is
 * full. */
enum exchange_do exchange_read_pace(struct exchange *x, struct timer_heap *h, uint64_t due_us);

/* After a WAIT step of a paced body: queues x's timer in heap h for the next chunk, due at
 * due_us (h NULL: a blocking model sleeps until then and calls exchange_on_timer). Returns WAIT
 * (its popped timer then says SEND), or CLOSE if the heap is full. */
enum exchange_do exchange_pace(struct exchange *x, struct timer_heap *h, uint64_t due_us);

/* An answer the engine's library gave by itself, before any exchange began (libh2o's 413 for a
 * body over --max-body, libmicrohttpd's 400 for a bad Content-Length): counted on shard sh
 * under the route the request's path would have reached (rq->target; "other" without one) by
 * its status, and logged (rq->method may be "-" where the library does not say it). Any thread
 * of the loop that owns sh. */
void exchange_library_answer(struct service *svc, struct stats_shard *sh,
                             const struct route_request *rq, unsigned status);

/* The request is over. If x still waits, its timer is removed from h; its worker passes on, or
 * it leaves the queue. A request that ends without an answer is counted as a client cancel.
 * Frees what x allocated. */
void exchange_end(struct exchange *x, struct timer_heap *h);

#endif
