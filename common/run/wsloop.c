#include "run/wsloop.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "base/timer.h"

enum ws_timer_kind { T_IDLE, T_PUSH, T_CLOSE, T_ECHO };

struct ws_sock;

struct ws_timer {
    struct timer_node node; /* first: the heap hands back the node */
    unsigned char kind;
    struct ws_sock *s;
};

/* A message waiting for its echo. */
struct ws_echo {
    struct ws_timer t;
    struct ws_echo *prev, *next;
    uint8_t opcode;
    size_t len;
    unsigned char data[];
};

struct ws_sock {
    int fd;
    wslay_event_context_ptr ctx;
    struct wsloop *w;
    struct wsloop_ticket t;
    unsigned char *extra; /* bytes read by the engine's library after the head */
    size_t extra_len, extra_off;
    struct ws_timer idle, push, close_t;
    struct ws_echo *echoes; /* waiting, in no order */
    unsigned pending;
    size_t pending_bytes; /* of the echoes waiting */
    uint64_t last_us;     /* last frame either way */
    uint64_t in, out, pushed;
    uint64_t window_us; /* the budget's second began then */
    unsigned frames, controls;
    unsigned char closing; /* a close was queued: wait for the client's, then close */
    uint32_t events;       /* what epoll watches for it */
    unsigned char gone;    /* the peer or a write failed: end it */
    unsigned char flood;   /* over a budget: close 1008 */
    uint16_t close_after;  /* the plan's close, once the messages before it are written */
    struct ws_sock *prev, *next;
};

struct ws_inbox {
    struct ws_inbox *next;
    struct wsloop_ticket t;
    int fd;
    size_t n;
    unsigned char extra[];
};

struct wsloop {
    struct wsloop_config cfg;
    int epfd, wake_fd;
    pthread_t thread;
    struct timer_heap heap;
    struct ws_sock *socks; /* open ones */
    size_t nsocks;
    pthread_mutex_t lock; /* guards inbox */
    struct ws_inbox *inbox;
    atomic_int going_away, stop;
    char *scratch; /* a pushed message, WS_PUSH_SIZE_MAX bytes */
    _Atomic uint64_t open, opened, messages_in, messages_out, budget, closes[WSLOOP_CODES],
        closes_other;
};

/* The 1 ms resolution of epoll_wait: a wait rounds up, so that nothing fires early. */
static int wait_ms(uint64_t us)
{
    uint64_t ms = (us + 999) / 1000;
    return ms > 1000 ? 1000 : (int)ms;
}

/* A timer of a socket's, due then; a socket whose timer has no room in the heap ends. */
static void arm(struct wsloop *w, struct ws_timer *t, uint64_t due)
{
    timer_heap_cancel(&w->heap, &t->node);
    t->node.due_us = due;
    if (timer_heap_push(&w->heap, &t->node) != 0)
        t->s->gone = 1;
}

/* 1 if s holds as much as it may of what its client has not read (queued frames, echoes
 * waiting): the loop then reads nothing more from it and pushes nothing, so that a client that
 * does not read holds the server's memory to WSLOOP_HELD_LIMITS of its message limit. */
static int backed_up(const struct ws_sock *s)
{
    size_t most = (size_t)s->t.spec.limit * WSLOOP_HELD_LIMITS;
    if (most < WSLOOP_HELD_MIN)
        most = WSLOOP_HELD_MIN;
    return wslay_event_get_queued_msg_length(s->ctx) + s->pending_bytes > most ||
           wslay_event_get_queued_msg_count(s->ctx) >= WSLOOP_QUEUED_MAX;
}

/* wslay's reads: the bytes the library read first, then the socket. */
static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    struct ws_sock *s = user;
    (void)flags;
    if (s->extra_off < s->extra_len) {
        size_t n = s->extra_len - s->extra_off < len ? s->extra_len - s->extra_off : len;
        memcpy(buf, s->extra + s->extra_off, n);
        s->extra_off += n;
        return (ssize_t)n;
    }
    /* A socket fed from a buffer alone (wsloop_feed): nothing more for now. A client that
     * leaves unread what the socket may hold: nothing more until it reads (wslay reads on as
     * long as bytes come, so the hold is kept here, between two reads). */
    if (s->fd < 0 || backed_up(s)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    ssize_t r;
    while ((r = recv(s->fd, buf, len, 0)) < 0 && errno == EINTR)
        ;
    if (r > 0)
        return r;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    } else {
        s->gone = 1;
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    }
    return -1;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    struct ws_sock *s = user;
    (void)flags;
    if (s->fd < 0)
        return (ssize_t)len;
    ssize_t r;
    while ((r = send(s->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0 && errno == EINTR)
        ;
    if (r >= 0)
        return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    } else {
        s->gone = 1;
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    }
    return -1;
}

/* Every frame's start: the flood budgets, per second. */
static void on_frame_start(wslay_event_context_ptr ctx,
                           const struct wslay_event_on_frame_recv_start_arg *arg, void *user)
{
    struct ws_sock *s = user;
    uint64_t now = timer_now_us();
    (void)ctx;
    s->last_us = now;
    if (now - s->window_us >= 1000000) {
        s->window_us = now;
        s->frames = s->controls = 0;
    }
    s->frames++;
    if (arg->opcode & 0x8)
        s->controls++;
    if (s->frames > WSLOOP_FRAMES_PER_S || s->controls > WSLOOP_CONTROL_PER_S)
        s->flood = 1;
}

static void close_with(struct ws_sock *s, uint16_t code, const char *why)
{
    if (s->closing)
        return;
    s->closing = 1;
    wslay_event_queue_close(s->ctx, code, (const uint8_t *)why, strlen(why));
    if (s->w)
        arm(s->w, &s->idle, timer_now_us() + WSLOOP_CLOSE_WAIT_US);
}

static void sent_one(struct ws_sock *s)
{
    s->out++;
    if (s->w)
        atomic_fetch_add_explicit(&s->w->messages_out, 1, memory_order_relaxed);
    /* wslay sends a close ahead of the messages still queued: it waits for them (settle). */
    if (s->t.spec.close_code && s->t.spec.close_after_n && s->out >= s->t.spec.close_after_n)
        s->close_after = s->t.spec.close_code;
}

static void echo_now(struct ws_sock *s, struct ws_echo *e)
{
    struct wslay_event_msg m = {e->opcode, e->data, e->len};
    /* Nothing goes out after the plan's close is due, whatever is still queued before it. */
    if (!s->closing && !s->close_after && wslay_event_queue_msg(s->ctx, &m) == 0)
        sent_one(s);
}

static uint64_t cut(const struct ws_sock *s, uint64_t us)
{
    uint64_t max = s->w ? s->w->cfg.max_delay_us : us;
    return us > max ? max : us;
}

/* The gap before push k: its draw, cut at --max-delay, and at least WSLOOP_PUSH_MIN_GAP_US (a
 * gap of 0 would push every message in one turn of the loop). */
static uint64_t push_gap(const struct ws_sock *s, uint64_t k)
{
    uint64_t us = cut(s, ws_push_gap_us(&s->t.spec, s->t.key, k));
    return us < WSLOOP_PUSH_MIN_GAP_US ? WSLOOP_PUSH_MIN_GAP_US : us;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *user)
{
    struct ws_sock *s = user;
    (void)ctx;
    /* Pings are answered by wslay, a close is its handshake; a text message that is not UTF-8
     * never comes here: wslay closes it 1007. */
    if (arg->opcode != WSLAY_TEXT_FRAME && arg->opcode != WSLAY_BINARY_FRAME)
        return;
    uint64_t k = s->in++;
    if (s->w)
        atomic_fetch_add_explicit(&s->w->messages_in, 1, memory_order_relaxed);
    if (s->closing)
        return;
    if (s->pending >= WSLOOP_PENDING_MAX) {
        s->flood = 1;
        return;
    }
    struct ws_echo *e = malloc(sizeof *e + arg->msg_length);
    if (!e) {
        close_with(s, WSLAY_CODE_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    e->opcode = arg->opcode;
    e->len = arg->msg_length;
    if (arg->msg_length) /* an empty message has no buffer at all */
        memcpy(e->data, arg->msg, arg->msg_length);
    uint64_t delay = cut(s, ws_echo_delay_us(&s->t.spec, s->t.key, k));
    if (!delay || !s->w) {
        echo_now(s, e);
        free(e);
        return;
    }
    timer_node_init(&e->t.node);
    e->t.kind = T_ECHO;
    e->t.s = s;
    e->t.node.due_us = timer_now_us() + delay;
    if (timer_heap_push(&s->w->heap, &e->t.node) != 0) {
        free(e);
        close_with(s, WSLAY_CODE_INTERNAL_SERVER_ERROR, "too many messages waiting");
        return;
    }
    e->prev = NULL;
    e->next = s->echoes;
    if (s->echoes)
        s->echoes->prev = e;
    s->echoes = e;
    s->pending++;
    s->pending_bytes += e->len;
}

static const struct wslay_event_callbacks callbacks = {
    .recv_callback = on_recv,
    .send_callback = on_send,
    .on_frame_recv_start_callback = on_frame_start,
    .on_msg_recv_callback = on_msg,
};

/* The code a socket ended with: the close the server sent (which, when the client closed
 * first, repeats the client's), else the client's, else 1006. */
static unsigned end_code(const struct ws_sock *s)
{
    uint16_t sent = wslay_event_get_status_code_sent(s->ctx);
    uint16_t got = wslay_event_get_status_code_received(s->ctx);
    if (wslay_event_get_close_sent(s->ctx) && sent != WSLAY_CODE_ABNORMAL_CLOSURE)
        return sent;
    if (wslay_event_get_close_received(s->ctx))
        return got;
    return WSLAY_CODE_ABNORMAL_CLOSURE;
}

static void sock_free(struct ws_sock *s)
{
    while (s->echoes) {
        struct ws_echo *e = s->echoes;
        s->echoes = e->next;
        if (s->w)
            timer_heap_cancel(&s->w->heap, &e->t.node);
        free(e);
    }
    if (s->ctx)
        wslay_event_context_free(s->ctx);
    free(s->extra);
    free(s);
}

/* The socket is over: counted, logged, closed, freed. */
static void sock_end(struct wsloop *w, struct ws_sock *s)
{
    unsigned code = end_code(s);
    if (code >= 1000 && code < 1000 + WSLOOP_CODES)
        atomic_fetch_add_explicit(&w->closes[code - 1000], 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&w->closes_other, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&w->open, 1, memory_order_relaxed);
    if (w->cfg.access) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        uint64_t now = timer_now_us();
        struct accesslog_entry e = {
            .time_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000,
            .client = s->t.client,
            .method = "GET",
            .target = s->t.target,
            .route = s->t.route,
            .status = 101,
            .service_us = now - s->t.begun_us,
            .ws = 1,
            .ws_in = s->in,
            .ws_out = s->out,
            .ws_close = code,
        };
        accesslog_write(w->cfg.access, &e);
    }
    timer_heap_cancel(&w->heap, &s->idle.node);
    timer_heap_cancel(&w->heap, &s->push.node);
    timer_heap_cancel(&w->heap, &s->close_t.node);
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
    if (s->prev)
        s->prev->next = s->next;
    else
        w->socks = s->next;
    if (s->next)
        s->next->prev = s->prev;
    w->nsocks--;
    sock_free(s);
}

/* After any event on s: write what wslay holds, watch for what it wants, end it when it wants
 * nothing more. Returns 0 if s lives on, -1 if it ended. */
static int settle(struct wsloop *w, struct ws_sock *s)
{
    if (s->flood && !s->closing) {
        atomic_fetch_add_explicit(&w->budget, 1, memory_order_relaxed);
        close_with(s, WSLAY_CODE_POLICY_VIOLATION, "over the frame budget");
    }
    if (!s->gone && wslay_event_want_write(s->ctx) && wslay_event_send(s->ctx) != 0)
        s->gone = 1;
    if (!s->gone && s->close_after && !wslay_event_get_queued_msg_count(s->ctx)) {
        close_with(s, s->close_after, "closed by the route's plan");
        s->close_after = 0;
        if (wslay_event_send(s->ctx) != 0)
            s->gone = 1;
    }
    /* The client's close came first: wslay answers it; the socket then waits for that answer
     * to be written no longer than for the client's close after the server's. */
    if (!s->closing && wslay_event_get_close_received(s->ctx)) {
        s->closing = 1;
        arm(w, &s->idle, timer_now_us() + WSLOOP_CLOSE_WAIT_US);
    }
    int rd = wslay_event_want_read(s->ctx), wr = wslay_event_want_write(s->ctx);
    /* A close sent and the client's not yet in: wait for it (until the close timer), reading. */
    if (s->gone || (!rd && !wr)) {
        sock_end(w, s);
        return -1;
    }
    /* Read only what wslay wants, and nothing while the client leaves unread what it holds. */
    uint32_t events = (rd && !backed_up(s) ? EPOLLIN : 0) | (wr ? EPOLLOUT : 0);
    if (events != s->events) {
        struct epoll_event ev = {.events = events, .data.ptr = s};
        epoll_ctl(w->epfd, EPOLL_CTL_MOD, s->fd, &ev);
        s->events = events;
    }
    return 0;
}

static void sock_begin(struct wsloop *w, struct ws_inbox *in)
{
    struct ws_sock *s = calloc(1, sizeof *s);
    if (!s) {
        close(in->fd);
        return;
    }
    s->fd = in->fd;
    s->w = w;
    /* Whatever the library left it (thread-per-connection: blocking), the loop never blocks. */
    int fl = fcntl(s->fd, F_GETFL);
    if (fl >= 0)
        fcntl(s->fd, F_SETFL, fl | O_NONBLOCK);
    /* A message leaves when it is due, not when Nagle's algorithm lets it. */
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s->t = in->t;
    if (in->n && !(s->extra = malloc(in->n))) {
        close(s->fd); /* its first frames cannot be kept: it ends unframed */
        free(s);
        return;
    }
    if (in->n) {
        memcpy(s->extra, in->extra, in->n);
        s->extra_len = in->n;
    }
    uint64_t now = timer_now_us();
    s->last_us = s->window_us = now;
    struct ws_timer *ts[] = {&s->idle, &s->push, &s->close_t};
    unsigned char kinds[] = {T_IDLE, T_PUSH, T_CLOSE};
    for (size_t i = 0; i < 3; i++) {
        timer_node_init(&ts[i]->node);
        ts[i]->kind = kinds[i];
        ts[i]->s = s;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
    s->events = EPOLLIN;
    if (wslay_event_context_server_init(&s->ctx, &callbacks, s) != 0 ||
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->fd, &ev) != 0) {
        close(s->fd);
        sock_free(s);
        return;
    }
    wslay_event_config_set_max_recv_msg_length(s->ctx, s->t.spec.limit);
    s->next = w->socks;
    if (w->socks)
        w->socks->prev = s;
    w->socks = s;
    w->nsocks++;
    atomic_fetch_add_explicit(&w->open, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->opened, 1, memory_order_relaxed);
    if (atomic_load(&w->going_away)) {
        close_with(s, WSLAY_CODE_GOING_AWAY, "server stopping");
    } else if (w->nsocks > w->cfg.max_sockets) {
        close_with(s, 1013, "too many sockets open (--max-connections); try again later");
    } else {
        if (w->cfg.idle_us)
            arm(w, &s->idle, now + w->cfg.idle_us);
        if (s->t.spec.push)
            arm(w, &s->push, now + push_gap(s, 0));
        if (s->t.spec.close_code && !s->t.spec.close_after_n)
            arm(w, &s->close_t, now + s->t.spec.close_after_us);
    }
    /* Frames that came with the head are read now: epoll says nothing of them. */
    if (s->extra_len && wslay_event_recv(s->ctx) != 0)
        s->gone = 1;
    settle(w, s);
}

static void on_timer(struct wsloop *w, struct ws_timer *t, uint64_t now)
{
    struct ws_sock *s = t->s;
    switch (t->kind) {
    case T_ECHO: {
        struct ws_echo *e = (struct ws_echo *)t;
        if (e->prev)
            e->prev->next = e->next;
        else
            s->echoes = e->next;
        if (e->next)
            e->next->prev = e->prev;
        s->pending--;
        s->pending_bytes -= e->len;
        echo_now(s, e);
        free(e);
        s->last_us = now;
        break;
    }
    case T_PUSH: {
        if (s->closing || s->close_after)
            break;
        if (backed_up(s)) { /* the client reads too slowly: the push waits for it */
            arm(w, &s->push, now + WSLOOP_PUSH_MIN_GAP_US);
            break;
        }
        size_t n = s->t.spec.size;
        ws_push_fill(w->scratch, n);
        struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)w->scratch, n};
        if (wslay_event_queue_msg(s->ctx, &m) == 0) {
            s->pushed++;
            sent_one(s);
        }
        s->last_us = now;
        if (s->pushed < s->t.spec.push && !s->closing)
            arm(w, &s->push, now + push_gap(s, s->pushed));
        break;
    }
    case T_CLOSE:
        close_with(s, s->t.spec.close_code, "closed by the route's plan");
        break;
    default:
        if (s->closing) {
            s->gone = 1; /* the client's close never came */
        } else if (now - s->last_us >= w->cfg.idle_us || s->pending) {
            if (s->pending) /* an echo waits on purpose: not idle */
                arm(w, &s->idle, now + w->cfg.idle_us);
            else
                close_with(s, WSLAY_CODE_GOING_AWAY, "idle for --idle-timeout");
        } else {
            arm(w, &s->idle, s->last_us + w->cfg.idle_us);
        }
        break;
    }
    settle(w, s);
}

static void take_inbox(struct wsloop *w)
{
    uint64_t v;
    while (read(w->wake_fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&w->lock);
    struct ws_inbox *in = w->inbox;
    w->inbox = NULL;
    pthread_mutex_unlock(&w->lock);
    while (in) {
        struct ws_inbox *next = in->next;
        sock_begin(w, in);
        free(in);
        in = next;
    }
}

static void *run(void *arg)
{
    struct wsloop *w = arg;
    struct epoll_event evs[64];
    int went_away = 0;
    uint64_t stop_at = 0;
    for (;;) {
        uint64_t now = timer_now_us();
        if (atomic_load(&w->going_away) && !went_away) {
            went_away = 1;
            for (struct ws_sock *s = w->socks, *next; s; s = next) {
                next = s->next;
                close_with(s, WSLAY_CODE_GOING_AWAY, "server stopping");
                settle(w, s);
            }
        }
        if (atomic_load(&w->stop)) {
            if (!stop_at)
                stop_at = now + WSLOOP_CLOSE_WAIT_US;
            if (!w->socks || now >= stop_at)
                break;
        }
        int n = epoll_wait(w->epfd, evs, 64, wait_ms(timer_heap_wait_us(&w->heap, now, 1000000)));
        for (int i = 0; i < n; i++) {
            struct ws_sock *s = evs[i].data.ptr;
            if (!s) {
                take_inbox(w);
                continue;
            }
            if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && (s->events & EPOLLIN) &&
                wslay_event_want_read(s->ctx) && wslay_event_recv(s->ctx) != 0)
                s->gone = 1;
            settle(w, s);
        }
        now = timer_now_us();
        struct timer_node *t;
        while ((t = timer_heap_pop_due(&w->heap, now)) != NULL)
            on_timer(w, (struct ws_timer *)(void *)t, now);
    }
    while (w->socks)
        sock_end(w, w->socks);
    return NULL;
}

int wsloop_start(struct wsloop **out, const struct wsloop_config *c)
{
    struct wsloop *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->cfg = *c;
    if (!w->cfg.max_sockets)
        w->cfg.max_sockets = 1;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->scratch = malloc(WS_PUSH_SIZE_MAX);
    pthread_mutex_init(&w->lock, NULL);
    /* Room for every socket's three timers and its waiting echoes, and the sockets over the
     * limit on their way out. */
    size_t max = (w->cfg.max_sockets + 64) * (3 + WSLOOP_PENDING_MAX);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    int rc = w->epfd < 0 || w->wake_fd < 0 || !w->scratch ? -errno : 0;
    if (rc == 0)
        rc = timer_heap_init(&w->heap, max);
    if (rc == 0 && epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wake_fd, &ev) != 0)
        rc = -errno;
    if (rc == 0)
        rc = -pthread_create(&w->thread, NULL, run, w);
    if (rc != 0) {
        if (w->heap.nodes)
            timer_heap_cleanup(&w->heap);
        if (w->epfd >= 0)
            close(w->epfd);
        if (w->wake_fd >= 0)
            close(w->wake_fd);
        pthread_mutex_destroy(&w->lock);
        free(w->scratch);
        free(w);
        return rc ? rc : -ENOMEM;
    }
    *out = w;
    return 0;
}

int wsloop_adopt(const struct wsloop_ticket *t, int fd, const void *extra, size_t n)
{
    struct wsloop *w = t->loop;
    struct ws_inbox *in = malloc(sizeof *in + n);
    if (!w || !in) {
        free(in);
        close(fd);
        return -ENOMEM;
    }
    in->t = *t;
    in->fd = fd;
    in->n = n;
    if (n)
        memcpy(in->extra, extra, n);
    pthread_mutex_lock(&w->lock);
    in->next = w->inbox;
    w->inbox = in;
    pthread_mutex_unlock(&w->lock);
    uint64_t one = 1;
    ssize_t r = write(w->wake_fd, &one, sizeof one);
    (void)r; /* a full counter still wakes the loop */
    return 0;
}

static void wake(struct wsloop *w)
{
    uint64_t one = 1;
    ssize_t r = write(w->wake_fd, &one, sizeof one);
    (void)r;
}

void wsloop_going_away(struct wsloop *w)
{
    if (!w)
        return;
    atomic_store(&w->going_away, 1);
    wake(w);
}

void wsloop_stop(struct wsloop *w)
{
    if (!w)
        return;
    atomic_store(&w->going_away, 1);
    atomic_store(&w->stop, 1);
    wake(w);
    pthread_join(w->thread, NULL);
    /* Sockets handed over after the thread ended. */
    while (w->inbox) {
        struct ws_inbox *in = w->inbox;
        w->inbox = in->next;
        close(in->fd);
        free(in);
    }
    timer_heap_cleanup(&w->heap);
    close(w->epfd);
    close(w->wake_fd);
    pthread_mutex_destroy(&w->lock);
    free(w->scratch);
    free(w);
}

void wsloop_counts(const struct wsloop *cw, struct wsloop_counts *out)
{
    struct wsloop *w = (struct wsloop *)(uintptr_t)cw;
    memset(out, 0, sizeof *out);
    if (!w)
        return;
    out->open = atomic_load(&w->open);
    out->opened = atomic_load(&w->opened);
    out->messages_in = atomic_load(&w->messages_in);
    out->messages_out = atomic_load(&w->messages_out);
    out->budget = atomic_load(&w->budget);
    for (size_t i = 0; i < WSLOOP_CODES; i++)
        out->closes[i] = atomic_load(&w->closes[i]);
    out->closes_other = atomic_load(&w->closes_other);
}

int wsloop_feed(const struct ws_spec *spec, const void *buf, size_t n, struct wsloop_feed_result *r)
{
    struct ws_sock *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->fd = -1;
    s->t.spec = *spec;
    s->extra = malloc(n ? n : 1);
    if (!s->extra || wslay_event_context_server_init(&s->ctx, &callbacks, s) != 0) {
        sock_free(s);
        return -ENOMEM;
    }
    memcpy(s->extra, buf, n);
    s->extra_len = n;
    wslay_event_config_set_max_recv_msg_length(s->ctx, spec->limit);
    /* Read until the buffer ends (the end reads as a closed socket), then write what is due. */
    wslay_event_recv(s->ctx);
    if (s->flood)
        close_with(s, WSLAY_CODE_POLICY_VIOLATION, "over the frame budget");
    while (wslay_event_want_write(s->ctx) && wslay_event_send(s->ctx) == 0)
        ;
    if (s->close_after)
        close_with(s, s->close_after, "closed by the route's plan");
    while (wslay_event_want_write(s->ctx) && wslay_event_send(s->ctx) == 0)
        ;
    r->messages_in = s->in;
    r->messages_out = s->out;
    r->close = end_code(s);
    r->flood = s->flood;
    sock_free(s);
    return 0;
}
