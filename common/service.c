#include "service.h"

#include <errno.h>
#include <stdlib.h>

#include "timer.h"

static struct pool *new_pool(unsigned workers, unsigned queue, int *rc)
{
    struct pool *p = malloc(sizeof *p);
    *rc = p ? pool_init(p, workers, queue) : -ENOMEM;
    if (*rc != 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void free_pool(struct pool **p)
{
    if (*p) {
        pool_cleanup(*p);
        free(*p);
        *p = NULL;
    }
}

int service_init(struct service *s, const struct config *cfg, size_t nshards,
                 struct accesslog *access)
{
    int rc = 0;
    s->stats = NULL;
    s->pool = NULL;
    s->access = access;
    s->overflow_reset = cfg->overflow == CONFIG_OVERFLOW_RESET;
    s->max_connections = cfg->max_connections;
    s->max_requests = cfg->max_requests;
    atomic_init(&s->connections, 0);
    atomic_init(&s->limit_reached, 0);
    atomic_init(&s->limit_us, 0);
    atomic_init(&s->limit_since, 0);
    atomic_init(&s->stopping, 0);
    route_table_init(&s->routes, cfg);
    for (size_t i = 0; i < ROUTE_MAX; i++)
        s->route_pools[i] = NULL;
    if (cfg->workers)
        s->pool = new_pool(cfg->workers, cfg->queue, &rc);
    /* A route with "workers" has a pool of its own instead of the global one. */
    for (size_t i = 0; rc == 0 && i < s->routes.count; i++)
        if (s->routes.routes[i].workers)
            s->route_pools[i] =
                new_pool(s->routes.routes[i].workers, s->routes.routes[i].queue, &rc);
    s->started_us = timer_now_us();
    if (rc == 0)
        s->stats = stats_new(nshards, route_stats_count(&s->routes));
    if (!s->stats) {
        service_cleanup(s);
        return -ENOMEM;
    }
    return 0;
}

void service_cleanup(struct service *s)
{
    route_table_cleanup(&s->routes);
    free_pool(&s->pool);
    for (size_t i = 0; i < ROUTE_MAX; i++)
        free_pool(&s->route_pools[i]);
    stats_free(s->stats);
    s->stats = NULL;
}

struct pool *service_pool_of(const struct service *s, const struct plan *p)
{
    if (!p->route || p->stats_id == STATS_UNCOUNTED)
        return NULL;
    return s->route_pools[p->route_id] ? s->route_pools[p->route_id] : s->pool;
}

void service_flush(struct service *s)
{
    if (s->pool)
        pool_flush(s->pool);
    for (size_t i = 0; i < s->routes.count; i++)
        if (s->route_pools[i])
            pool_flush(s->route_pools[i]);
}

void service_stop(struct service *s)
{
    atomic_store_explicit(&s->stopping, 1, memory_order_release);
}

int service_stopping(const struct service *s)
{
    return atomic_load_explicit(&s->stopping, memory_order_acquire);
}

/* The open connections reached the limit: a spell at it begins. */
static void limit_begin(struct service *s)
{
    uint64_t zero = 0;
    atomic_fetch_add_explicit(&s->limit_reached, 1, memory_order_relaxed);
    atomic_compare_exchange_strong(&s->limit_since, &zero, timer_now_us());
}

/* One closed at the limit: the spell ends. */
static void limit_end(struct service *s)
{
    uint64_t since = atomic_exchange(&s->limit_since, 0);
    if (since)
        atomic_fetch_add_explicit(&s->limit_us, timer_now_us() - since, memory_order_relaxed);
}

int service_conn_reserve(struct service *s)
{
    size_t before = atomic_fetch_add_explicit(&s->connections, 1, memory_order_relaxed);
    if (before < s->max_connections) {
        if (before + 1 == s->max_connections)
            limit_begin(s);
        return 0;
    }
    atomic_fetch_sub_explicit(&s->connections, 1, memory_order_relaxed);
    return -EBUSY;
}

int service_request_on_connection(const struct service *s, unsigned *requests)
{
    return ++*requests >= s->max_requests && s->max_requests;
}

void service_conn_closed(struct service *s)
{
    size_t before = atomic_fetch_sub_explicit(&s->connections, 1, memory_order_relaxed);
    if (before == s->max_connections)
        limit_end(s);
}

struct stats_shard *service_shard(struct service *s, size_t i)
{
    return stats_shard(s->stats, i);
}

char *service_report(const struct service *s, enum plan_action what)
{
    const struct route_table *t = &s->routes;
    uint64_t since = atomic_load(&s->limit_since), now = timer_now_us();
    uint64_t at_limit_us = atomic_load(&s->limit_us) + (since && now > since ? now - since : 0);
    struct stats_conns c = {atomic_load(&s->connections), s->max_connections,
                            atomic_load(&s->limit_reached), (double)at_limit_us / 1e6};
    const char *names[ROUTE_MAX + 1];
    struct pool_counts pc = {0, 0, 0, 0}, one;
    int pools = 0;
    for (size_t i = 0; i < t->count; i++)
        names[i] = t->routes[i].path;
    names[t->count] = "other";
    /* The global pool and the routes' own pools, added up. */
    for (size_t i = 0; i <= t->count; i++) {
        struct pool *p = i < t->count ? s->route_pools[i] : s->pool;
        if (!p)
            continue;
        pool_counts_get(p, &one);
        pc.workers += one.workers;
        pc.active += one.active;
        pc.queued += one.queued;
        pc.rejected += one.rejected;
        pools = 1;
    }
    double uptime = (double)(timer_now_us() - s->started_us) / 1e6;
    if (what == PLAN_METRICS)
        return stats_to_prometheus(s->stats, names, t->count + 1, uptime, pools ? &pc : NULL, &c);
    return stats_to_json(s->stats, names, t->count + 1, uptime, pools ? &pc : NULL, &c);
}
