/*
 * bench_routes: time of one route_plan (the core's whole routing of a request: limits, path
 * lookup, method, the route's answer) against the number of routes in the table.
 *
 * For tables of 10, 1 000, 10 000 and 65 536 config routes ("/r/00000", ...) it plans GET of the
 * first route, the last one and a path the table lacks (a 404), 2 000 000 times each, and prints
 * nanoseconds per plan (best of 5 runs). A lookup independent of the count shows as one flat
 * row per column; a linear search would grow about a thousandfold from 10 to 10 000. It exits 1
 * if a plan is not the route's answer.
 *
 * Build and run (from the repository root, after a build in build/):
 *   gcc -std=gnu11 -O2 -Icommon tests/bench/bench_routes.c build/libslowsrv_core.a \
 *       $(pkg-config --libs libcjson) -lpthread -lm -o /tmp/bench_routes && /tmp/bench_routes
 */
#include "plan/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PLANS 2000000
#define RUNS 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Best time of RUNS runs of PLANS plans of GET target, in ns a plan; sets *status. */
static double time_plans(struct route_table *t, const char *target, unsigned *status)
{
    struct route_request rq = {.method = "GET", .target = target, .target_len = strlen(target)};
    struct plan p;
    double best = 1e9;
    for (int run = 0; run < RUNS; run++) {
        double t0 = now_s();
        for (int i = 0; i < PLANS; i++)
            route_plan(t, &rq, &p);
        double ns = (now_s() - t0) / PLANS * 1e9;
        best = ns < best ? ns : best;
    }
    *status = p.status;
    return best;
}

int main(void)
{
    static const size_t sizes[] = {10, 1000, 10000, CONFIG_ROUTES_MAX};
    size_t max = CONFIG_ROUTES_MAX;
    struct config_route *routes = calloc(max, sizeof *routes);
    char(*paths)[16] = calloc(max, sizeof *paths);
    if (!routes || !paths)
        return 1;
    for (size_t i = 0; i < max; i++) {
        snprintf(paths[i], sizeof paths[i], "/r/%05zu", i);
        routes[i].path = paths[i];
        routes[i].status = 200;
        routes[i].body = paths[i];
        routes[i].body_len = strlen(paths[i]);
    }
    int bad = 0;
    printf("%8s %12s %12s %12s\n", "routes", "first ns", "last ns", "miss ns");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        struct config cfg = config_defaults;
        struct route_table t;
        cfg.routes = routes;
        cfg.nroutes = sizes[k];
        cfg.no_overrides = 1;
        if (route_table_init(&t, &cfg) != 0)
            return 1;
        unsigned s1, s2, s3;
        double first = time_plans(&t, paths[0], &s1);
        double last = time_plans(&t, paths[sizes[k] - 1], &s2);
        double miss = time_plans(&t, "/r/nowhere", &s3);
        bad |= s1 != 200 || s2 != 200 || s3 != 404;
        printf("%8zu %12.1f %12.1f %12.1f\n", sizes[k], first, last, miss);
        route_table_cleanup(&t);
    }
    free(routes);
    free(paths);
    if (bad)
        fprintf(stderr, "bench_routes: a plan was not the route's answer\n");
    return bad;
}
