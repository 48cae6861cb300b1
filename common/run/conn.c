#include "run/conn.h"

#include <sys/socket.h>

#include "base/net.h"

void conn_registry_init(struct conn_registry *r, uint64_t header_us, uint64_t idle_us)
{
    pthread_mutex_init(&r->lock, NULL);
    r->head = NULL;
    r->count = 0;
    r->header_us = header_us;
    r->idle_us = idle_us;
    uint64_t shorter = !header_us            ? idle_us
                       : !idle_us            ? header_us
                       : header_us < idle_us ? header_us
                                             : idle_us;
    r->every_us = shorter / 20;
    if (shorter && r->every_us < CONN_SWEEP_MIN_US)
        r->every_us = CONN_SWEEP_MIN_US;
    if (r->every_us > CONN_SWEEP_MAX_US)
        r->every_us = CONN_SWEEP_MAX_US;
    r->next_us = 0;
}

void conn_registry_cleanup(struct conn_registry *r)
{
    pthread_mutex_destroy(&r->lock);
}

void conn_open(struct conn_registry *r, struct conn *c, int fd, int control, uint64_t now)
{
    c->fd = fd;
    c->control = control != 0;
    c->h2 = 0;
    c->shut = 0;
    c->requests = 0;
    atomic_init(&c->active, 0);
    atomic_init(&c->waiting, 0);
    atomic_init(&c->line, 0);
    atomic_init(&c->head_since, now);
    atomic_init(&c->quiet_since, now);
    c->received = c->acked = 0;
    c->looked_quiet = now;
    c->moved_us = now;
    c->ended_us = 0;
    c->prev = NULL;
    pthread_mutex_lock(&r->lock);
    c->next = r->head;
    if (c->next)
        c->next->prev = c;
    r->head = c;
    r->count++;
    pthread_mutex_unlock(&r->lock);
}

void conn_close(struct conn_registry *r, struct conn *c)
{
    pthread_mutex_lock(&r->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        r->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    r->count--;
    pthread_mutex_unlock(&r->lock);
}

void conn_head_begins(struct conn *c, uint64_t now)
{
    uint64_t none = 0;
    atomic_store_explicit(&c->line, 1, memory_order_release);
    atomic_compare_exchange_strong_explicit(&c->head_since, &none, now, memory_order_relaxed,
                                            memory_order_relaxed);
}

void conn_request_begin(struct conn *c, int h2)
{
    if (h2)
        c->h2 = 1;
    atomic_store_explicit(&c->head_since, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->active, 1, memory_order_release);
    atomic_store_explicit(&c->line, 0, memory_order_release);
}

void conn_request_end(struct conn *c, uint64_t now)
{
    atomic_store_explicit(&c->quiet_since, now, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c->active, 1, memory_order_relaxed);
}

void conn_wait(struct conn *c, int begins)
{
    if (begins)
        atomic_fetch_add_explicit(&c->waiting, 1, memory_order_relaxed);
    else
        atomic_fetch_sub_explicit(&c->waiting, 1, memory_order_relaxed);
}

void conn_end(struct conn *c, uint64_t now)
{
    if (!c->ended_us)
        c->ended_us = now ? now : 1;
}

/* 1 if c is past a timeout at now. */
static int overdue(struct conn_registry *r, struct conn *c, uint64_t now, conn_reading_fn reading,
                   void *ctx)
{
    unsigned active = atomic_load_explicit(&c->active, memory_order_relaxed);
    unsigned waiting = atomic_load_explicit(&c->waiting, memory_order_relaxed);
    uint64_t rx, ack;
    if (c->ended_us)
        return now - c->ended_us >= CONN_END_GRACE_US;
    if (active && waiting >= active) {
        c->moved_us = now; /* waiting on purpose is not silence */
        return 0;
    }
    if (net_tcp_progress(c->fd, &rx, &ack) != 0)
        return 0;
    uint64_t quiet = atomic_load_explicit(&c->quiet_since, memory_order_relaxed);
    if (!active && quiet != c->looked_quiet) {
        /* A request ended since the last look: what came before was its own, and silence counts
         * from its end. */
        c->looked_quiet = quiet;
        c->moved_us = quiet;
        /* Unless its library holds the start of the next head already. */
        if (reading && !c->h2 && reading(ctx, c))
            conn_head_begins(c, quiet);
    } else if (rx != c->received || ack != c->acked) {
        c->moved_us = now;
        /* Between requests, a byte received starts a head (on HTTP/2, frames are not heads). */
        if (!active && rx != c->received && !c->h2)
            conn_head_begins(c, now);
    }
    c->received = rx;
    c->acked = ack;
    uint64_t head = active ? 0 : atomic_load_explicit(&c->head_since, memory_order_relaxed);
    if (head && r->header_us && now - head >= r->header_us)
        return 1;
    return r->idle_us && now - c->moved_us >= r->idle_us;
}

size_t conn_sweep(struct conn_registry *r, uint64_t now, conn_reading_fn reading, void *ctx)
{
    size_t cut = 0;
    if (!r->every_us || now < r->next_us)
        return 0;
    r->next_us = now + r->every_us;
    pthread_mutex_lock(&r->lock);
    for (struct conn *c = r->head; c; c = c->next) {
        if (c->shut || !overdue(r, c, now, reading, ctx))
            continue;
        c->shut = 1;
        shutdown(c->fd, SHUT_RDWR);
        cut++;
    }
    pthread_mutex_unlock(&r->lock);
    return cut;
}

uint64_t conn_next_sweep(const struct conn_registry *r)
{
    return r->every_us ? r->next_us : 0;
}

void conn_close_idle(struct conn_registry *r)
{
    pthread_mutex_lock(&r->lock);
    for (struct conn *c = r->head; c; c = c->next)
        if (!atomic_load_explicit(&c->active, memory_order_acquire) &&
            !atomic_load_explicit(&c->line, memory_order_acquire) && !c->h2)
            shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&r->lock);
}

void conn_shut_all(struct conn_registry *r)
{
    pthread_mutex_lock(&r->lock);
    for (struct conn *c = r->head; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&r->lock);
}

size_t conn_count(struct conn_registry *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->count;
    pthread_mutex_unlock(&r->lock);
    return n;
}
