/*
 * route: what to answer, and after how long. Given a request's method and path, route_plan()
 * fills a struct plan (status, headers, body, delay) that an engine carries out through its HTTP
 * library without making any decision of its own.
 *
 * The table is built once from the config and then only read, except for per-route request
 * counters (atomic) that number the random delay draws; so any thread may plan through it.
 */
#ifndef SLOWSRV_ROUTE_H
#define SLOWSRV_ROUTE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "delay.h"
#include "stats.h"

#define ROUTE_MAX 64
#define ROUTE_TIMING_LEN 48

enum route_kind {
    ROUTE_STATIC = 0, /* a fixed answer, possibly delayed */
    ROUTE_UPLOAD,     /* POST /write: count the multipart data part */
    ROUTE_STATS,      /* GET /stats: the counters as JSON */
};

struct route {
    const char *path;
    const char *method; /* NULL: any method; "GET" also takes HEAD */
    enum route_kind kind;
    unsigned status;
    const char *content_type;
    const char *body;
    size_t body_len;
    int counted;                   /* 0 for /healthz and /stats: never counted as load */
    int delayed;                   /* 1 if the route waits and carries Server-Timing */
    struct delay_spec delay;       /* when delayed */
    char timing[ROUTE_TIMING_LEN]; /* Server-Timing value of a fixed delay, else "" */
};

struct route_table {
    struct route routes[ROUTE_MAX];
    size_t count;
    uint64_t seed;
    _Atomic uint64_t seq[ROUTE_MAX]; /* requests planned per route: the draw index */
};

/* Stats id shared by every request that matched no route (404) or no method (405). */
#define ROUTE_STATS_OTHER(table) ((table)->count)

enum plan_action {
    PLAN_RESPOND = 0, /* answer status/body after delay_us */
    PLAN_UPLOAD,      /* read the body through an upload (upload.h), then answer its result */
    PLAN_STATS,       /* answer route_stats_json() */
};

struct plan {
    enum plan_action action;
    const struct route *route; /* NULL when no route matched */
    size_t route_id;           /* index of route in the table, when route is not NULL */
    size_t stats_id; /* for the stats module: route index, ROUTE_STATS_OTHER or STATS_UNCOUNTED */
    unsigned status;
    const char *content_type;
    const char *body; /* valid as long as the plan and the table */
    size_t body_len;
    uint64_t delay_us;  /* 0: answer at once */
    const char *timing; /* Server-Timing header value, or NULL for none */
    const char *allow;  /* Allow header value for 405, or NULL */
    int cacheable;      /* 1 if this is the route's default answer: an engine may reuse one
                           prebuilt response per route for it */
    char timing_buf[ROUTE_TIMING_LEN];
    char text[160]; /* storage for bodies built per request */
};

/* Fills *t with the built-in routes configured by cfg: GET /test, POST /write, any method /
 * and /echo, GET /healthz, GET /stats. */
void route_table_init(struct route_table *t, const struct config *cfg);

/* Number of stats ids the table needs: one per route plus ROUTE_STATS_OTHER. */
size_t route_stats_count(const struct route_table *t);

/* The body of GET /stats for the counters `st` (sized by route_stats_count) of table t, started
 * at started_us (timer_now_us clock). Returns a malloc'd JSON string the caller frees with
 * free(), or NULL if out of memory. */
char *route_stats_json(const struct route_table *t, const struct stats *st, uint64_t started_us);

/* Plans the answer to `method` on `path` (path_len bytes; anything from a '?' on is ignored).
 * Always fills *out: an unknown path gives 404, a wrong method 405, both with a JSON error body.
 * Thread-safe. */
void route_plan(struct route_table *t, const char *method, const char *path, size_t path_len,
                struct plan *out);

/* Returns the standard reason phrase of an HTTP status ("Not Found"), "Unknown" if none. */
const char *route_reason(unsigned status);

/* Writes the JSON error body {"error": "<msg>", "status": N} into buf. Returns its length. */
size_t route_error_json(char *buf, size_t len, unsigned status, const char *msg);

#endif
