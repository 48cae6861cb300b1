#include "base/pool.h"

#include <errno.h>
#include <stddef.h>

int pool_init(struct pool *p, unsigned workers, unsigned queue_max)
{
    if (workers == 0)
        return -EINVAL;
    p->workers = workers;
    p->queue_max = queue_max;
    p->active = p->queued = 0;
    p->rejected = 0;
    p->stopping = 0;
    p->head = p->tail = NULL;
    return -pthread_mutex_init(&p->lock, NULL);
}

void pool_cleanup(struct pool *p)
{
    pthread_mutex_destroy(&p->lock);
}

enum pool_state pool_enter(struct pool *p, struct pool_entry *e)
{
    pthread_mutex_lock(&p->lock);
    e->next = NULL;
    e->flushed = p->stopping;
    if (p->stopping) {
        e->state = POOL_OUT;
    } else if (p->active < p->workers) {
        p->active++;
        e->state = POOL_ADMITTED;
    } else if (p->queued < p->queue_max) {
        p->queued++;
        e->state = POOL_QUEUED;
        if (p->tail)
            p->tail->next = e;
        else
            p->head = e;
        p->tail = e;
    } else {
        p->rejected++;
        e->state = POOL_OUT;
    }
    enum pool_state st = e->state;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static void unlink_queued(struct pool *p, struct pool_entry *e)
{
    struct pool_entry **pp = &p->head, *prev = NULL;
    while (*pp && *pp != e) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = e->next;
    if (p->tail == e)
        p->tail = prev;
    p->queued--;
}

void pool_leave(struct pool *p, struct pool_entry *e)
{
    pthread_mutex_lock(&p->lock);
    if (e->state == POOL_QUEUED) {
        unlink_queued(p, e);
    } else if (e->state == POOL_ADMITTED) {
        struct pool_entry *next = p->active <= p->workers ? p->head : NULL;
        if (next) {
            /* The worker passes straight to the oldest waiter. */
            p->head = next->next;
            if (!p->head)
                p->tail = NULL;
            p->queued--;
            next->state = POOL_ADMITTED;
            next->next = NULL;
            next->admit(next);
        } else {
            p->active--;
        }
    }
    e->state = POOL_OUT;
    pthread_mutex_unlock(&p->lock);
}

void pool_resize(struct pool *p, unsigned workers, unsigned queue_max)
{
    pthread_mutex_lock(&p->lock);
    p->workers = workers ? workers : 1;
    p->queue_max = queue_max;
    /* More workers: the oldest waiters take them now. Fewer: the busy ones finish, and a worker
     * that ends while the pool is over its size is not passed on. */
    while (p->head && p->active < p->workers && !p->stopping) {
        struct pool_entry *e = p->head;
        p->head = e->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        p->active++;
        e->state = POOL_ADMITTED;
        e->next = NULL;
        e->admit(e);
    }
    pthread_mutex_unlock(&p->lock);
}

void pool_flush(struct pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    while (p->head) {
        struct pool_entry *e = p->head;
        p->head = e->next;
        p->queued--;
        e->next = NULL;
        e->state = POOL_OUT;
        e->flushed = 1;
        e->admit(e);
    }
    p->tail = NULL;
    pthread_mutex_unlock(&p->lock);
}

void pool_counts_get(struct pool *p, struct pool_counts *out)
{
    pthread_mutex_lock(&p->lock);
    out->workers = p->workers;
    out->active = p->active;
    out->queued = p->queued;
    out->rejected = p->rejected;
    pthread_mutex_unlock(&p->lock);
}
