#include "service.h"

#include <errno.h>
#include <stdlib.h>

#include "timer.h"

int service_init(struct service *s, const struct config *cfg, size_t nshards,
                 struct accesslog *access)
{
    s->stats = NULL;
    s->max_connections = cfg->max_connections;
    s->max_requests = cfg->max_requests;
    atomic_init(&s->connections, 0);
    atomic_init(&s->refused, 0);
    if (route_table_init_pool(&s->routes, cfg) != 0) {
        route_table_cleanup(&s->routes);
        return -ENOMEM;
    }
    s->routes.access = access;
    s->started_us = timer_now_us();
    s->stats = stats_new(nshards, route_stats_count(&s->routes));
    if (!s->stats) {
        route_table_cleanup(&s->routes);
        return -ENOMEM;
    }
    return 0;
}

void service_cleanup(struct service *s)
{
    route_table_cleanup(&s->routes);
    stats_free(s->stats);
    s->stats = NULL;
}

int service_conn_admit(struct service *s)
{
    size_t before = atomic_fetch_add_explicit(&s->connections, 1, memory_order_relaxed);
    if (before < s->max_connections)
        return 0;
    atomic_fetch_sub_explicit(&s->connections, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->refused, 1, memory_order_relaxed);
    return -EBUSY;
}

int service_request_on_connection(const struct service *s, unsigned *requests)
{
    return ++*requests >= s->max_requests && s->max_requests;
}

void service_conn_closed(struct service *s)
{
    atomic_fetch_sub_explicit(&s->connections, 1, memory_order_relaxed);
}

struct stats_shard *service_shard(struct service *s, size_t i)
{
    return stats_shard(s->stats, i);
}

char *service_report(const struct service *s, enum plan_action what)
{
    struct stats_conns c = {atomic_load(&s->connections), s->max_connections,
                            atomic_load(&s->refused)};
    return route_report(&s->routes, s->stats, s->started_us, &c, what);
}
