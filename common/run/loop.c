#include "run/loop.h"
#include "run/exchange_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/net.h"

#include "base/pool.h"
#include "run/service.h"

static void lock(struct core_loop *l)
{
    if (l->be->lock)
        l->be->lock(l->ctx);
}

static void unlock(struct core_loop *l)
{
    if (l->be->unlock)
        l->be->unlock(l->ctx);
}

int loop_init(struct core_loop *l, const struct loop_backend *be, void *ctx, struct service *svc,
              size_t index, size_t max_waiting, uint64_t grace_us)
{
    l->be = be;
    l->ctx = ctx;
    l->svc = svc;
    l->shard = service_shard(svc, index);
    atomic_init(&l->active, 0);
    l->fired_us = 0;
    l->more_due = 0;
    l->inbox = NULL;
    l->accept_warned = 0;
    drain_init(&l->drain, grace_us);
    conn_registry_init(&l->conns, svc ? svc->cfg->header_timeout_us : 0,
                       svc ? svc->cfg->idle_timeout_us : 0);
    pthread_mutex_init(&l->inbox_lock, NULL);
    l->nlinger = 0;
    l->lingers = NULL;
    if ((l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        loop_cleanup(l);
        return -EMFILE;
    }
    l->lingers = malloc(LOOP_LINGER_MAX * sizeof *l->lingers);
    if (!l->lingers || timer_heap_init(&l->timers, max_waiting ? max_waiting : 1) != 0) {
        loop_cleanup(l);
        return -ENOMEM;
    }
    return 0;
}

void loop_cleanup(struct core_loop *l)
{
    for (size_t i = 0; l->lingers && i < l->nlinger; i++)
        close(l->lingers[i].fd);
    free(l->lingers);
    l->lingers = NULL;
    l->nlinger = 0;
    timer_heap_cleanup(&l->timers);
    conn_registry_cleanup(&l->conns);
    pthread_mutex_destroy(&l->inbox_lock);
    net_close(&l->wake_fd);
}

/* Asks the CPU for the next three due requests, while one is answered: the third one's exchange
 * here, and what the backend will read of each (its prefetch). */
static void prefetch(struct core_loop *l, uint64_t now)
{
    struct timer_node *n = timer_heap_peek(&l->timers);
    if (!n || n->due_us > now)
        return;
    for (unsigned ahead = 1; n && ahead <= 3; ahead++, n = timer_heap_next_listed(n)) {
        struct exchange *x = exchange_of_timer(n);
        /* The third one's exchange, as far as its plan's head: what its timer and its answer
         * read first. */
        if (ahead == 3)
            for (size_t off = 0; off < offsetof(struct exchange, plan) + 128; off += 64)
                __builtin_prefetch((const char *)x + off);
        if (l->be->prefetch)
            l->be->prefetch(l->ctx, x, ahead);
    }
}

/* Answers up to a turn's worth of the requests due by now (all of them with give_up): each is
 * popped under the backend's lock and carried out outside it, so that no lock of ours is held
 * while the library takes its own. Returns how many were answered; *capped when the cap stopped
 * it with more due. */
static size_t fire_some(struct core_loop *l, uint64_t now, int give_up, int *capped)
{
    unsigned deferred = 0;
    *capped = 0;
    for (size_t n = 0;; n++) {
        if (!give_up && (n >= LOOP_ANSWERS_PER_TURN || deferred >= LOOP_DEFERRED_PER_TURN)) {
            lock(l);
            struct timer_node *top = timer_heap_peek(&l->timers);
            *capped = top && top->due_us <= now;
            unlock(l);
            return n;
        }
        lock(l);
        struct timer_node *node = timer_heap_pop_due(&l->timers, now);
        if (node)
            prefetch(l, now);
        unlock(l);
        if (!node)
            return n;
        struct exchange *x = exchange_of_timer(node);
        int gone = !give_up && l->be->peer_gone && l->be->peer_gone(l->ctx, x);
        deferred += (unsigned)l->be->carry(l->ctx, x, exchange_on_timer(x, gone, give_up));
    }
}

size_t loop_fire(struct core_loop *l, uint64_t now)
{
    int capped;
    if (drain_given_up(&l->drain))
        return fire_some(l, UINT64_MAX, 1, &capped);
    lock(l);
    struct timer_node *top = timer_heap_peek(&l->timers);
    int due = top && top->due_us <= now && (l->more_due || now >= l->fired_us + LOOP_BATCH_US);
    unlock(l);
    if (!due)
        return 0;
    l->fired_us = now;
    size_t n = fire_some(l, now, 0, &capped);
    l->more_due = capped;
    return n;
}

uint64_t loop_next_fire_us(struct core_loop *l, uint64_t now)
{
    if (l->more_due || drain_given_up(&l->drain))
        return now;
    lock(l);
    struct timer_node *top = timer_heap_peek(&l->timers);
    uint64_t due = top ? top->due_us : 0;
    unlock(l);
    if (due && due < l->fired_us + LOOP_BATCH_US)
        due = l->fired_us + LOOP_BATCH_US;
    return due;
}

int loop_linger(struct core_loop *l, struct exchange *x, int fd, uint64_t until_us)
{
    int rc = -1;
    pthread_mutex_lock(&l->inbox_lock);
    if (l->lingers && l->nlinger < LOOP_LINGER_MAX) {
        int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (dup_fd >= 0) {
            l->lingers[l->nlinger++] = (struct loop_linger){dup_fd, until_us};
            x->faulted = 1;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&l->inbox_lock);
    if (rc == 0)
        loop_wake(l); /* its wait is sized for the linger */
    return rc;
}

uint64_t loop_linger_step(struct core_loop *l, uint64_t now)
{
    uint64_t next = 0;
    pthread_mutex_lock(&l->inbox_lock);
    for (size_t i = 0; i < l->nlinger;) {
        if (l->lingers[i].until_us <= now) {
            close(l->lingers[i].fd);
            l->lingers[i] = l->lingers[--l->nlinger];
            continue;
        }
        if (!next || l->lingers[i].until_us < next)
            next = l->lingers[i].until_us;
        i++;
    }
    pthread_mutex_unlock(&l->inbox_lock);
    return next;
}

uint64_t loop_wait_us(struct core_loop *l, uint64_t now, uint64_t idle_us)
{
    uint64_t at = loop_next_fire_us(l, now), sweep = conn_next_sweep(&l->conns);
    if (sweep && (!at || sweep < at))
        at = sweep;
    uint64_t linger = loop_linger_step(l, now);
    if (linger && (!at || linger < at))
        at = linger;
    if (!at)
        return idle_us;
    return at <= now ? 0 : at - now < idle_us ? at - now : idle_us;
}

uint64_t loop_accept(struct core_loop *l, int lfd, int control, uint64_t now, char *msg, size_t len)
{
    msg[0] = '\0';
    for (int n = 0; n < NET_ACCEPT_BATCH; n++) {
        struct sockaddr_storage ss;
        socklen_t sslen = sizeof ss;
        if (service_conn_reserve(l->svc) != 0)
            return SERVICE_LIMIT_RETRY_US;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sslen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            service_conn_closed(l->svc);
            return net_accept_starved(e, now, &l->accept_warned, msg, len) ? NET_ACCEPT_PAUSE_US
                                                                           : 0;
        }
        if (l->be->adopt(l->ctx, fd, (struct sockaddr *)&ss, sslen, control) != 0)
            service_conn_closed(l->svc);
    }
    return 0;
}

void loop_conn_opened(struct core_loop *l, struct conn *c, int fd, int control)
{
    conn_open(&l->conns, c, fd, control, timer_now_us());
}

void loop_conn_closed(struct core_loop *l, struct conn *c)
{
    conn_close(&l->conns, c);
    service_conn_closed(l->svc); /* its --max-connections slot is free */
}

size_t loop_sweep(struct core_loop *l, uint64_t now)
{
    return conn_sweep(&l->conns, now, l->be->reading, l->ctx);
}

/* A timer was queued: if it is the earliest, a wait sized for a later one is shortened. */
static void queued(struct core_loop *l, struct exchange *x, enum exchange_do d)
{
    if (d == EXCHANGE_DO_WAIT && l->be->earliest && timer_heap_peek(&l->timers) == &x->timer)
        l->be->earliest(l->ctx);
}

enum exchange_do loop_hold(struct core_loop *l, struct exchange *x)
{
    lock(l);
    enum exchange_do d = exchange_hold(x, &l->timers);
    queued(l, x, d);
    unlock(l);
    return d;
}

enum exchange_do loop_pace(struct core_loop *l, struct exchange *x, uint64_t due_us)
{
    lock(l);
    enum exchange_do d = exchange_pace(x, &l->timers, due_us);
    queued(l, x, d);
    unlock(l);
    return d;
}

enum exchange_do loop_read_pace(struct core_loop *l, struct exchange *x, uint64_t due_us)
{
    lock(l);
    enum exchange_do d = exchange_read_pace(x, &l->timers, due_us);
    queued(l, x, d);
    unlock(l);
    return d;
}

/* The pool admitted a parked request (any thread, the pool's lock held). */
static void admitted(struct pool_entry *e)
{
    struct exchange *x = exchange_of_entry(e);
    struct core_loop *l = x->home;
    if (l->be->admit)
        l->be->admit(l->ctx, x);
    else
        loop_inbox_put(l, x);
}

enum exchange_do loop_begin(struct core_loop *l, struct exchange *x, void *owner, struct conn *c,
                            const struct route_request *rq)
{
    x->home = l;
    atomic_fetch_add_explicit(&l->active, 1, memory_order_relaxed);
    return exchange_on_head(x, owner, c, l->svc, l->shard, rq, admitted);
}

void loop_wake(struct core_loop *l)
{
    uint64_t one = 1;
    if (l->be->wake) {
        l->be->wake(l->ctx);
        return;
    }
    /* Only a full counter (EAGAIN) fails, and the loop is woken then anyway. */
    ssize_t n = write(l->wake_fd, &one, sizeof one);
    (void)n;
}

int loop_wake_fd(const struct core_loop *l)
{
    return l->wake_fd;
}

void loop_woken(struct core_loop *l)
{
    uint64_t v;
    if (read(l->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
        return;
    loop_inbox_take(l);
}

void loop_run(struct core_loop *l, const atomic_int *stopping)
{
    for (;;) {
        uint64_t now = timer_now_us();
        loop_sweep(l, now);
        if (!l->be->fires_in_wait && loop_fire(l, now) && l->be->fired)
            l->be->fired(l->ctx);
        /* The wait counts from now, not from the top of this turn (the library may have run
         * for a while since). */
        uint64_t wait_us = loop_wait_us(l, timer_now_us(), LOOP_TICK_US);
        if (loop_stop_step(l, atomic_load_explicit(stopping, memory_order_acquire),
                           atomic_load_explicit(&l->active, memory_order_relaxed), now, &wait_us))
            return;
        l->be->wait(l->ctx, wait_us);
    }
}

void loop_end(struct core_loop *l, struct exchange *x)
{
    atomic_fetch_sub_explicit(&l->active, 1, memory_order_relaxed);
    lock(l);
    exchange_end(x, &l->timers);
    unlock(l);
    /* Handed back by another thread but not yet taken: it must not be taken after this. Once
     * exchange_end has returned, no thread can hand it back again. */
    pthread_mutex_lock(&l->inbox_lock);
    if (x->in_inbox) {
        struct pool_entry **pp = &l->inbox;
        while (*pp && *pp != &x->pe)
            pp = &(*pp)->next;
        if (*pp)
            *pp = x->pe.next;
        x->in_inbox = 0;
    }
    pthread_mutex_unlock(&l->inbox_lock);
}

void loop_inbox_put(struct core_loop *l, struct exchange *x)
{
    pthread_mutex_lock(&l->inbox_lock);
    x->pe.next = l->inbox;
    l->inbox = &x->pe;
    x->in_inbox = 1;
    pthread_mutex_unlock(&l->inbox_lock);
    loop_wake(l);
}

void loop_inbox_take(struct core_loop *l)
{
    pthread_mutex_lock(&l->inbox_lock);
    struct pool_entry *e = l->inbox;
    l->inbox = NULL;
    for (struct pool_entry *i = e; i; i = i->next)
        exchange_of_entry(i)->in_inbox = 0;
    pthread_mutex_unlock(&l->inbox_lock);
    while (e) {
        struct pool_entry *next = e->next;
        struct exchange *x = exchange_of_entry(e);
        l->be->carry(l->ctx, x, exchange_next(x));
        e = next;
    }
}

int loop_stop_step(struct core_loop *l, int stopping, size_t active, uint64_t now,
                   uint64_t *wait_us)
{
    switch (drain_step(&l->drain, stopping, active, now)) {
    case DRAIN_SERVE:
        return 0;
    case DRAIN_QUIESCE:
        l->be->quiesce(l->ctx);
        conn_close_idle(&l->conns);
        break;
    case DRAIN_GIVE_UP:
        /* Parked requests of every loop are handed back; harmless if another loop did it. */
        service_flush(l->svc);
        if (l->be->give_up)
            l->be->give_up(l->ctx);
        loop_inbox_take(l);
        loop_fire(l, now);
        *wait_us = 0;
        break;
    case DRAIN_FINISH:
        loop_fire(l, now); /* what came due since is answered "server stopping" too */
        break;
    case DRAIN_DONE:
        return 1;
    case DRAIN_RUN:
        break;
    }
    if (*wait_us > LOOP_DRAIN_TICK_US)
        *wait_us = LOOP_DRAIN_TICK_US;
    *wait_us = drain_wait_us(&l->drain, timer_now_us(), *wait_us);
    return 0;
}
