/*
 * bench_routes: time of one route_plan (the core's whole routing of a request: limits, path
 * lookup, method, the route's answer) against the number of routes in the table.
 *
 * For tables of 10, 1 000, 10 000 and 65 536 config routes it plans GET of the first route, the
 * last one and a path the table lacks (a 404), 2 000 000 times each, and prints nanoseconds per
 * plan (best of 5 runs): once with exact paths ("/r/00000", ...), found by a hash, and once with
 * templates ("/t/00000/{id}", ..., asked as "/t/00000/4711"), found by a walk of the trie; then
 * the ratio of each column at 10 000 and 65 536 routes to its value at 10. A lookup independent
 * of the count shows as one flat column; a linear search would grow about a thousandfold from 10
 * to 10 000. It exits 1 if a plan is not the route's answer.
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

/* Times the tables of every size with paths[i] as route i's path and asked[i] as the request for
 * it; prints a row each and the ratios to the first size. Returns 1 if a plan was wrong. */
static int run(const char *kind, struct config_route *routes, char (*paths)[24], char (*asked)[24],
               const char *miss)
{
    static const size_t sizes[] = {10, 1000, 10000, CONFIG_ROUTES_MAX};
    enum { NSIZES = sizeof sizes / sizeof sizes[0] };
    double ns[NSIZES][3];
    int bad = 0;
    for (size_t i = 0; i < CONFIG_ROUTES_MAX; i++) {
        routes[i].path = paths[i];
        routes[i].status = 200;
        routes[i].body = paths[i];
        routes[i].body_len = strlen(paths[i]);
    }
    printf("%-9s %8s %12s %12s %12s\n", kind, "routes", "first ns", "last ns", "miss ns");
    for (size_t k = 0; k < NSIZES; k++) {
        struct config cfg = config_defaults;
        struct route_table t;
        cfg.routes = routes;
        cfg.nroutes = sizes[k];
        cfg.no_overrides = 1;
        if (route_table_init(&t, &cfg) != 0)
            return 1;
        unsigned s1, s2, s3;
        ns[k][0] = time_plans(&t, asked[0], &s1);
        ns[k][1] = time_plans(&t, asked[sizes[k] - 1], &s2);
        ns[k][2] = time_plans(&t, miss, &s3);
        bad |= s1 != 200 || s2 != 200 || s3 != 404;
        printf("%-9s %8zu %12.1f %12.1f %12.1f\n", kind, sizes[k], ns[k][0], ns[k][1], ns[k][2]);
        route_table_cleanup(&t);
    }
    for (size_t k = 2; k < NSIZES; k++)
        printf("%-9s %8s %11.2fx %11.2fx %11.2fx   (%zu routes / 10)\n", kind, "ratio",
               ns[k][0] / ns[0][0], ns[k][1] / ns[0][1], ns[k][2] / ns[0][2], sizes[k]);
    return bad;
}

int main(void)
{
    size_t max = CONFIG_ROUTES_MAX;
    struct config_route *routes = calloc(max, sizeof *routes);
    char(*paths)[24] = calloc(max, sizeof *paths);
    char(*asked)[24] = calloc(max, sizeof *asked);
    if (!routes || !paths || !asked)
        return 1;
    for (size_t i = 0; i < max; i++)
        snprintf(paths[i], sizeof paths[i], "/r/%05zu", i);
    int bad = run("exact", routes, paths, paths, "/r/nowhere");
    for (size_t i = 0; i < max; i++) {
        snprintf(paths[i], sizeof paths[i], "/t/%05zu/{id}", i);
        snprintf(asked[i], sizeof asked[i], "/t/%05zu/4711", i);
    }
    bad |= run("template", routes, paths, asked, "/t/nowhere/4711");
    free(routes);
    free(paths);
    free(asked);
    if (bad)
        fprintf(stderr, "bench_routes: a plan was not the route's answer\n");
    return bad;
}
