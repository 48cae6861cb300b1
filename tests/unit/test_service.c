#include <string.h>

#include "run/service.h"
#include "check.h"

/* --max-requests 3: the third request of a connection is its last; 0 never ends one. */
static void service_counts_requests_per_connection(void)
{
    struct config cfg = config_defaults;
    struct service svc;
    unsigned n = 0;
    cfg.max_requests = 3;
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    CHECK_INT(service_request_on_connection(&svc, &n), 0);
    CHECK_INT(service_request_on_connection(&svc, &n), 0);
    CHECK_INT(service_request_on_connection(&svc, &n), 1);
    CHECK_INT(n, 3);
    service_cleanup(&svc);
    cfg.max_requests = 0;
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    for (n = 0; n < 1000;)
        CHECK_INT(service_request_on_connection(&svc, &n), 0);
    service_cleanup(&svc);
}

/* The pools: --workers is the global one; a config route with "workers" has its own; /healthz,
 * /stats and 404 take none. The flush turns every pool's later entries away. */
static void service_makes_the_pools(void)
{
    struct config cfg = config_defaults;
    struct config_route routes[1];
    struct service svc;
    struct route_request rq = {.method = "GET", .target_len = 0};
    struct plan p;
    memset(routes, 0, sizeof routes);
    static char db[] = "/db";
    routes[0].path = db;
    routes[0].status = 200;
    routes[0].workers = 2;
    routes[0].queue = 1;
    cfg.routes = routes;
    cfg.nroutes = 1;
    cfg.workers = 7;
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    const char *targets[] = {"/db", "/test", "/healthz", "/nowhere"};
    struct pool *want[] = {NULL, svc.pool, NULL, NULL};
    for (size_t i = 0; i < 4; i++) {
        rq.target = targets[i];
        rq.target_len = strlen(targets[i]);
        route_plan(&svc.routes, &rq, &p);
        struct pool *got = service_pool_of(&svc, &p);
        if (i == 0) {
            CHECK(got != NULL && got != svc.pool);
            CHECK_INT(got ? got->workers : 0, 2);
            CHECK_INT(got ? got->queue_max : 0, 1);
            want[0] = got;
        }
        CHECK(got == want[i]);
    }
    CHECK_INT(svc.pool->workers, 7);
    service_flush(&svc);
    struct pool_entry e = {0};
    CHECK_INT(pool_enter(want[0], &e), POOL_OUT);
    CHECK_INT(e.flushed, 1);
    CHECK_INT(pool_enter(svc.pool, &e), POOL_OUT);
    service_cleanup(&svc);
    CHECK(svc.pool == NULL);
}

int main(void)
{
    service_makes_the_pools();
    service_counts_requests_per_connection();
    return CHECK_DONE();
}
