#include "service.h"

#include <errno.h>
#include <stdlib.h>

#include "timer.h"

int service_init(struct service *s, const struct config *cfg, size_t nshards)
{
    s->stats = NULL;
    if (route_table_init_pool(&s->routes, cfg) != 0) {
        route_table_cleanup(&s->routes);
        return -ENOMEM;
    }
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

struct stats_shard *service_shard(struct service *s, size_t i)
{
    return stats_shard(s->stats, i);
}

char *service_report(const struct service *s, enum plan_action what)
{
    return route_report(&s->routes, s->stats, s->started_us, what);
}
