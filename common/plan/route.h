/*
 * route: what to answer, and after how long. Given a request's method, target and a way to read
 * its query parameters and headers, route_plan() fills a struct plan (status, headers, body,
 * delay) that an engine carries out through its HTTP library without deciding anything itself.
 *
 * The table is built once from the config (the built-in routes, replaced or extended by the
 * config file's "routes") and then only read, except for per-route counters (atomic) that number
 * the random draws, and a filler buffer for ?size= made on first use; any thread may plan. Its
 * routes are an array sized to them. An exact path is found through a hash table (strmap.h);
 * templates ("/api/orders/{id}") and wildcards ("/api/\*") through a segment trie (pathtrie.h),
 * when no exact path matches. A lookup takes the same time with 10 routes or ROUTE_MAX: a hash
 * probe, then a walk of the request's own segments. A template is one route: its counters, its
 * draw stream and its name in the reports are the template's, whatever id a request carries.
 *
 * Per-request overrides, unless --no-overrides: query delay=, status=, size=, drip=, fault=,
 * rate=, read-rate=, reset-after=, stall=, slow-close=, stream= and the headers X-Slowsrv-Delay,
 * X-Slowsrv-Status, X-Slowsrv-Drip, X-Slowsrv-Fault, X-Slowsrv-Rate, X-Slowsrv-Read-Rate,
 * X-Slowsrv-Reset-After, X-Slowsrv-Stall, X-Slowsrv-Slow-Close, X-Slowsrv-Stream (the query
 * wins). A stream reads Last-Event-ID to go on after the client's last event. A value out of
 * range gets 400 naming the parameter, never a clamp. Draws of the unbounded distributions (normal,
 * log-normal) are truncated at 0 and at --max-delay.
 */
#ifndef SLOWSRV_ROUTE_H
#define SLOWSRV_ROUTE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/config.h"
#include "plan/delay.h"
#include "plan/pace.h"
#include "plan/pathtrie.h"
#include "plan/stream.h"
#include "plan/ws.h"
#include "http/answer.h"
#include "http/head.h"
#include "http/target.h"
#include "base/stats.h"
#include "base/strmap.h"

/* The built-in routes (/test, /write, /, /echo, /healthz, /stats, /metrics and the /ui page's
 * three files), and the most routes a table holds: every config route beside them. */
#define ROUTE_BUILTINS 10
#define ROUTE_MAX (CONFIG_ROUTES_MAX + ROUTE_BUILTINS)
#define ROUTE_TIMING_LEN 72

enum route_kind {
    ROUTE_STATIC = 0, /* a fixed answer, possibly delayed */
    ROUTE_UPLOAD,     /* POST /write: count the multipart data part */
    ROUTE_STATS,      /* GET /stats: the counters as JSON */
    ROUTE_METRICS,    /* GET /metrics: the counters for Prometheus */
};

struct route {
    const char *path;         /* as configured: a template or wildcard as written */
    enum pathtrie_kind match; /* exact, template or wildcard */
    const char *method;       /* NULL: any method; "GET" also takes HEAD */
    enum route_kind kind;
    unsigned status;
    const char *content_type;
    const char *body;
    size_t body_len;
    const struct config_header *headers; /* extra answer headers, from the config */
    size_t nheaders;
    int counted;               /* 0 for /healthz and /stats: never counted as load */
    int delayed;               /* 1 if the route waits and carries Server-Timing */
    struct delay_spec delay;   /* when delayed */
    struct delay_drip drip;    /* chunks 0: the body at once */
    enum config_fault fault;   /* a fault instead of the answer, or none */
    struct pace_spec pace;     /* rate, read-rate and mid-body faults (pace.h) */
    struct stream_spec stream; /* an event stream in place of the body (stream.h), or none */
    struct ws_spec ws;         /* a WebSocket route (ws.h): the handshake, then the socket loop */
    unsigned workers, queue;   /* its own worker pool (service.h), or 0 */
    double error_rate;         /* share answered error_status instead (--error-rate, or its
                                  own "error-rate") */
    unsigned error_status;
    int own_error;                 /* 1 if error_rate is the route's own */
    size_t slot;                   /* its stats id, draw stream and pool, kept by path across
                                      generations of the table (service.h); the index at first */
    char timing[ROUTE_TIMING_LEN]; /* Server-Timing value of a fixed delay, else "" */
    char error_body[96];           /* the JSON body of its injected errors (error-rate) */
    size_t error_body_len;
    struct config_header own_headers[CONFIG_ROUTE_HEADERS];
};

/* The ?size= filler: max_size bytes mapped on first use, shared by every generation. */
struct route_filler {
    _Atomic(char *) bytes;
    size_t span; /* bytes mapped */
};

struct route_table {
    struct route *routes; /* count of them, in room for as many as it was built for */
    size_t count;
    struct strmap index;        /* path as configured -> index in routes (templates included) */
    struct pathtrie templates;  /* the templates and wildcards -> index in routes */
    const struct config *cfg;   /* what it was built from (the built-in routes, the limits) */
    uint64_t generation;        /* 1 for the table of the start; each change makes the next */
    int live;                   /* the table can change (--control, a scenario) or has (a
                                   reload, a change): every answer
                                   names its generation in Server-Timing ("gen;desc=N") */
    struct config_route *owned; /* the config routes it was built from, its own copies */
    size_t nowned;
    size_t other_slot;   /* stats id of requests that matched no route */
    char not_found[140]; /* the 404's error: the routes a client may call */
    unsigned holder;     /* its place among the service's live generations */
    uint64_t seed;
    uint64_t max_delay_us;
    int overrides; /* 1 unless --no-overrides */
    uint64_t max_size;
    uint64_t max_target;  /* --max-request-line: longer targets get 414 */
    uint64_t max_headers; /* --max-header-size: larger header blocks get 431 */
    uint64_t max_body;    /* --max-body: larger uploads get 413 */
    double error_rate;
    unsigned error_status;
    _Atomic uint64_t *seq;       /* requests planned per slot: the draw index (own_seq unless
                                    the service shares one array between generations) */
    struct route_filler *filler; /* &own_filler unless shared */
    _Atomic uint64_t *own_seq;   /* one per route and one for ROUTE_STATS_OTHER */
    struct route_filler own_filler;
};

/* Stats id shared by every request that matched no route (404) or no method (405). */
#define ROUTE_STATS_OTHER(table) ((table)->other_slot)

enum plan_action {
    PLAN_RESPOND = 0, /* answer status/body after delay_us */
    PLAN_UPLOAD,      /* read the body through an upload (exchange.h), then answer its result */
    PLAN_STATS,       /* answer the service's report (service.h) as JSON */
    PLAN_METRICS,     /* answer the service's report in Prometheus text format */
    PLAN_RESET,       /* answer nothing: reset the connection */
    PLAN_CLOSE,       /* answer nothing: close the connection */
    PLAN_CONTROL,     /* a request of the control listener: the control API answers it */
    PLAN_UPGRADE,     /* a WebSocket handshake: 101, then the socket goes to the core's socket
                         loop (run/wsloop.h) with the route's ws plan */
};

struct plan {
    enum plan_action action;
    unsigned status;
    const struct route *route; /* NULL when no route matched */
    size_t route_id;           /* index of route in the table, when route is not NULL */
    size_t stats_id; /* for the stats module: route index, ROUTE_STATS_OTHER or STATS_UNCOUNTED */
    const char *content_type;
    const char *body; /* valid as long as the plan and the table */
    size_t body_len;
    const struct config_header *headers; /* extra headers to send, valid as long as the table */
    size_t nheaders;
    uint64_t generation;    /* of the table that planned it */
    uint64_t delay_us;      /* 0: answer at once */
    const char *timing;     /* Server-Timing header value, or NULL for none */
    const char *allow;      /* Allow header value for 405, or NULL */
    struct delay_drip drip; /* send the body in drip.chunks pieces over drip.over_us */
    struct pace_spec pace;  /* its rate, read-rate and mid-body faults (pace.h) */
    /* An event stream in place of the body (stream.h), or NULL: the route's, or the request's
     * own in its stream_room. Its events' draws are keyed by stream_key, its first id is
     * stream_first, and without a count it ends once its next event would come after
     * stream_until_us (--max-delay) from its start. */
    const struct stream_spec *stream;
    uint64_t stream_key;
    uint64_t stream_first;
    uint64_t stream_until_us;
    /* A WebSocket route's (PLAN_UPGRADE): its Sec-WebSocket-Accept value and the key of its
     * draws; or a field its 4xx carries (426: Upgrade or Sec-WebSocket-Version), else NULL. */
    char ws_accept[32];
    uint64_t ws_key;
    const char *hdr_name, *hdr_value;
    int stream_head; /* HEAD of a stream: the stream's head (its Content-Type, no length), no
                        body */
    int cacheable;   /* 1 if this is the route's default answer: an engine may reuse one
                        prebuilt response per route for it */
    int truncate;    /* announce body_len, send half of it, then close */
    int close;       /* close the connection after this answer (Connection: close) */
    /* A plan needs one or the other, never both: an error of route_plan_error is answered at
     * once, with no Server-Timing, and an injected error (error-rate), which keeps its delay,
     * answers its route's prebuilt body. Every waiting request carries this record. */
    union {
        char timing_buf[ROUTE_TIMING_LEN];
        char text[192]; /* storage for bodies built per request */
    };
};

/* Reads the request's header `name` (case-insensitive) into buf (len bytes, NUL-terminated).
 * Returns the whole value's length, or -1 if the request has no such header. A length of len or
 * more means the value did not fit: buf holds only its start, and the route refuses it (never
 * reads a cut value). route_value_copy() does the copying. Query parameters are the core's to
 * read, from the target as received. */
typedef long (*route_lookup_fn)(void *ctx, const char *name, char *buf, size_t len);

/* What route_plan needs to know of a request. */
struct route_request {
    const char *method; /* NUL-terminated */
    const char *target; /* path, optionally followed by '?' and the query */
    size_t target_len;
    route_lookup_fn lookup; /* NULL: the request has no headers to read */
    void *ctx;
    const struct sockaddr *peer; /* the client's address, for the access log; may be NULL */
    const char *raw_target;      /* the target as received, for the query and the access log;
                                    NULL: `target` */
    size_t raw_target_len;       /* its length; 0: NUL-terminated */
    size_t header_bytes;         /* size of the header block; 0 where the engine limits it */
    size_t target_bytes; /* length of the target as received, when `target` lacks its query */
    int last;            /* close after its answer (the exchange also counts --max-requests on its
                            connection) */
    const struct head *head;  /* the head, checked first (head.h): HTTP/1.x as received, HTTP/2
                                 as decoded; NULL where the engine cannot give it */
    int h2;                   /* it came over HTTP/2 (no --max-requests, no head of its own) */
    unsigned refused;         /* the engine found its framing bad below its library (h1frame.h):
                                 refused as a bad head is, with this status */
    const char *refused_why;  /* and this one-line reason */
    const char *whole_bodies; /* non-NULL: the engine's library reads the body whole before the
                                 core sees it, and read-rate is refused (400) with this reason */
    struct stream_spec *stream_room; /* where a ?stream= of the request is planned (the plan
                                        points to it); NULL: ?stream= is refused (400) */
};

/* Fills *t with the built-in routes (GET /test, POST /write, any method / and /echo,
 * GET /healthz, GET /stats, GET /metrics) as configured by cfg, then cfg's "routes" (at most
 * CONFIG_ROUTES_MAX, with distinct paths and no two templates that match the same paths:
 * config_load checks all three), which replace a built-in route of the same path or are added.
 * cfg must outlive the table. Returns 0, -EEXIST for two such templates, or -ENOMEM, with
 * nothing to free; route_table_cleanup frees a table made. */
int route_table_init(struct route_table *t, const struct config *cfg);

/* Fills *t as route_table_init does, but with `routes` (n of them, at most CONFIG_ROUTES_MAX,
 * deep-copied: t owns its copies) in place of cfg's "routes", as generation `generation`.
 * Returns 0, -ENOSPC for more than CONFIG_ROUTES_MAX, -EEXIST for two templates that match the
 * same paths (config_routes_clash finds them first), or -ENOMEM, with nothing to free. */
int route_table_init_routes(struct route_table *t, const struct config *cfg,
                            const struct config_route *routes, size_t n, uint64_t generation);

/* Sets the Content-Security-Policy of the /ui page (csp must outlive t; NULL: its own origin
 * only). */
void route_table_set_csp(struct route_table *t, const char *csp);

/* Describes route r as a config route would (its strings are r's, borrowed). */
void route_describe(const struct route *r, struct config_route *out);

/* 1 if route r may be changed at runtime: a counted fixed answer (not /write, /stats, /metrics,
 * /healthz). */
int route_editable(const struct route *r);

/* Index of the route whose configured path is `path` in t (a template by its text,
 * "/api/orders/{id}"), or -1. Constant time (a hash lookup). */
long route_find(const struct route_table *t, const char *path);

/* Index of the route that answers a request for `path` (len bytes, decoded, without the query):
 * the exact path, else the best template, else the best wildcard (pathtrie.h), or -1. */
long route_match(const struct route_table *t, const char *path, size_t len);

/* Fills *out with an error answer: status, the JSON body {"error": msg, "status": status}, no
 * delay, nothing shaped. */
void route_plan_error(struct plan *out, unsigned status, const char *msg);

/* Frees what the table holds: its routes, its index, what it made on demand. */
void route_table_cleanup(struct route_table *t);

/* Number of stats ids the table needs: one per route plus ROUTE_STATS_OTHER. */
size_t route_stats_count(const struct route_table *t);

/* Plans the answer to rq. Always fills *out: a target over max_target gives 414, headers over
 * max_headers 431, an unknown path 404, a wrong method 405, an override out of
 * range 400, each with a JSON error body. Thread-safe. */
void route_plan(struct route_table *t, const struct route_request *rq, struct plan *out);

/* Fills *out with route `id`'s own answer (status, content type, body, headers, fixed
 * Server-Timing) for an engine that builds that answer once and reuses it for every request whose
 * plan is `cacheable`. Returns 0, or -1 if the route has no fixed answer (not a static route, or
 * a random delay). Reads only the table: any thread, any time while the table lives. */
int route_cached_plan(const struct route_table *t, size_t id, struct plan *out);

/* A route_lookup_fn's copy of a value v of vlen bytes into buf (len >= 1 bytes), without the
 * spaces and tabs around it: at most len - 1 bytes, NUL-terminated. Returns the trimmed value's
 * length. */
long route_value_copy(const char *v, size_t vlen, char *buf, size_t len);

/* Writes the JSON error body {"error": "<msg>", "status": N} into buf. Returns its length. */
size_t route_error_json(char *buf, size_t len, unsigned status, const char *msg);

#endif
