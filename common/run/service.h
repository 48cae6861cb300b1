/*
 * service: what a server keeps for its whole life, the same in both engines: the route table,
 * the worker pools, the access log, the sharded counters and the start time, and the reports
 * made of them.
 * Set up once before the loops start; the loops then use it from their threads (the table and
 * counters are safe to share, see route.h and stats.h).
 */
#ifndef SLOWSRV_SERVICE_H
#define SLOWSRV_SERVICE_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/accesslog.h"
#include "plan/config.h"
#include "base/pool.h"
#include "plan/route.h"
#include "base/stats.h"

/* Stats ids (slots) a service with a live table keeps: a route keeps its slot by path while any
 * table uses it, so room for the routes of the live table and of the retired ones still
 * answering. Without one, the start table's stats ids alone. The arrays by slot are allocated
 * whole but cost memory only where a slot is used. */
#define SERVICE_SLOTS (2 * ROUTE_MAX + 1)

/* Generations of the route table that may be alive at once: the live one and those retired
 * with requests still in flight. */
#define SERVICE_GENERATIONS 1024

/* Largest request body the control API reads; control_handle answers 413 beyond it. Room for
 * a PUT /routes of CONFIG_ROUTES_MAX routes of a few keys each. */
#define CONTROL_BODY_MAX (16 * 1024 * 1024)

/* A request on the control listener, as the core read it (the control API, control/api.h,
 * answers it; its types are here so that the exchange can carry them). */
struct control_request {
    const char *method; /* NUL-terminated */
    const char *target; /* path and query as received */
    size_t target_len;
    const char *body; /* body_len bytes; NULL when body_len is 0, or when more than
                         CONTROL_BODY_MAX came (control_handle answers 413) */
    size_t body_len;
    const char *authorization; /* the Authorization header's value, NULL if none */
    size_t authorization_len;
    const char *who;    /* the client's address, for the log line */
    const char *origin; /* the Origin header's value (a browser's page), NULL if none */
    size_t origin_len;
    const char *host; /* the Host header's value (HTTP/2: :authority), NULL if none */
    size_t host_len;
};

/* What to answer: status, JSON body (malloc'd, freed with free(); none for 204) and the headers
 * (Content-Type, Allow, WWW-Authenticate, the CORS ones). */
struct control_answer {
    unsigned status;
    char *body;
    size_t body_len;
    /* Every header of the answer, Content-Type included (none for a 204). */
    struct config_header headers[8];
    size_t nheaders;
    /* Close the connection after this answer. The API answers one request a connection: a
     * change is rare, and no client of it keeps a connection open beside the load. */
    int close;
    char origin[256]; /* storage for Access-Control-Allow-Origin */
};

/* The control API's entry points (control_hook), served through the exchange path on its own
 * listener. */
struct service_control {
    void *ctx; /* NULL: no control API */
    int (*check)(void *ctx, const struct control_request *rq, struct control_answer *out);
    void (*handle)(void *ctx, const struct control_request *rq, struct control_answer *out);
};

struct service;
struct wsloop;

/* The body of /stats or /metrics (report.h): malloc'd, or NULL if out of memory. */
typedef char *(*service_report_fn)(const struct service *s, enum plan_action what);

struct service {
    struct route_table routes; /* the table of the start (generation 1) */
    struct pool *pool;         /* --workers, or NULL when unbounded */
    size_t nslots;             /* SERVICE_SLOTS when live, else the start table's */
    struct pool **route_pools; /* a route's own pool ("workers"), by slot */
    /* The live table (--control, a scenario): tables[live] is the one new requests plan by.
     * A request counts itself in users[shard][its table] while it lives (on its loop's own
     * cache lines); a retired table is freed once no shard counts it. */
    int live_enabled;
    _Atomic unsigned live;
    struct route_table *tables[SERVICE_GENERATIONS];
    _Atomic long *users; /* (nshards + 1) rows of SERVICE_GENERATIONS; the last for reports */
    size_t nshards;
    pthread_mutex_t change_lock; /* serialises changes (never on the request path) */
    char **slot_path;            /* the path holding each slot, or NULL (live only) */
    unsigned *slot_refs;         /* tables using each slot (live only) */
    _Atomic uint64_t *seq;       /* draw indexes, shared by the generations (live only) */
    struct strmap slot_index;    /* path -> slot, for every slot_path (live only) */
    size_t slot_hint;            /* no free slot below it */
    _Atomic uint64_t changes;    /* changes made (control API, scenario) */
    const struct config *cfg;
    /* What the next generations are built from: cfg, with the options a reload changes live
     * (service_set_live) and without cfg's routes and scenario. Under change_lock. */
    struct config next_cfg;
    _Atomic uint64_t reloads_ok, reloads_error; /* config reloads (SIGHUP, the file changed) */
    pthread_mutex_t reload_lock;                /* guards the two strings below */
    char reload_error[256];                     /* why the last failed reload failed, or "" */
    char needs_restart[256];                    /* options a reload could not apply, or "" */
    struct scenario *scenario; /* the config's scenario (scenario.h), for the reports; or NULL */
    service_report_fn report;  /* report_text (report.h), set by the program; NULL: no reports */
    struct service_control control; /* the control API (control_hook), set by the program */
    unsigned main_port;             /* the port served (service_set_endpoints) */
    char control_url[300];          /* the control API's URL, "" when off */
    unsigned control_port;          /* its port, 0 when off */
    char ui_csp[600];               /* the /ui page's Content-Security-Policy */
    struct accesslog *access;       /* --access-log, or NULL when off */
    struct wsloop *ws;              /* the WebSocket sockets' loop (run/wsloop.h), set by the
                                       program; NULL: none */
    int overflow_reset;             /* beyond a pool: reset instead of 503 */
    struct stats *stats;
    uint64_t started_us;            /* timer_now_us clock */
    size_t max_connections;         /* --max-connections, over every loop */
    unsigned max_requests;          /* --max-requests per HTTP/1.1 connection; 0: unlimited */
    atomic_size_t connections;      /* open now */
    _Atomic uint64_t limit_reached; /* times the open connections reached --max-connections */
    _Atomic uint64_t limit_us;      /* time spent at the limit, in spells that ended */
    _Atomic uint64_t limit_since;   /* when the current spell at the limit began; 0: below */
    atomic_int stopping;            /* SIGTERM/SIGINT came: the drain is on (service_stop) */
};

/* Builds the routes and worker pool of cfg (which must outlive s) and counters split into
 * `nshards` shards, one per loop; requests are logged to `access` (NULL: no access log; it must
 * outlive s). Returns 0, or -ENOMEM with nothing left to free. */
int service_init(struct service *s, const struct config *cfg, size_t nshards,
                 struct accesslog *access);

/* The ports are bound: the main one, and the control API's URL (NULL when off), which the /ui
 * page may reach (its Content-Security-Policy) and whose CORS allows the page's origin. Call
 * before the engine starts. */
void service_set_endpoints(struct service *s, unsigned main_port, const char *control_url,
                           unsigned control_port);

/* Frees what service_init made. */
void service_cleanup(struct service *s);

/* The route table a request begun on loop `shard` plans by: the live one, counted as in use
 * until service_table_release. Without --control or a scenario, always the start table, and
 * nothing is counted. Lock-free; any thread. */
struct route_table *service_table_acquire(struct service *s, size_t shard);

/* The request planned by t ended. */
void service_table_release(struct service *s, struct route_table *t, size_t shard);

/* Replaces the live table by one made of cfg's built-in routes and `routes` (n, copied) as the
 * next generation. Requests begun before keep their table; the next ones get the new one, on
 * every thread. Retired tables no request uses any more are freed. Returns the new generation,
 * or a negative errno: -ENOSPC (too many routes, or generations still answering), -ENOMEM. The
 * caller serialises changes (service_change_lock). */
long long service_publish(struct service *s, const struct config_route *routes, size_t n);

/* The options of a reloaded config that apply live (delay, error-rate, error-status) are next's
 * from the next service_publish on. Under service_change_lock. */
void service_set_live(struct service *s, const struct config *next);

/* Records a reload: ok (with the options it could not apply, "" if none) or failed (why). */
void service_reloaded(struct service *s, int ok, const char *why, const char *needs_restart);

/* Frees the retired tables no request uses. Under service_change_lock. */
void service_reclaim(struct service *s);

/* Held around a change: read the live table, build the next, publish it. */
void service_change_lock(struct service *s);
void service_change_unlock(struct service *s);

/* The live table, for the one who holds service_change_lock (no count taken). */
struct route_table *service_live(struct service *s);

/* The server stops (SIGTERM, SIGINT): from now on every answer closes its connection
 * (exchange.h), and the engines close the connections that carry no request. Thread-safe. */
void service_stop(struct service *s);

/* 1 once service_stop ran. */
int service_stopping(const struct service *s);

/* --max-connections, for an engine that accepts connections itself: before it accepts one,
 * returns 0 and counts it open, or -EBUSY if the limit is reached: the engine then stops
 * accepting for a while (SERVICE_LIMIT_RETRY_US), and new connections wait in the listen
 * backlog (served as others close; the kernel refuses them once it is full). An engine whose
 * accept then finds nothing calls service_conn_closed. Thread-safe. */
int service_conn_reserve(struct service *s);

/* How long an engine at the limit leaves its listening socket alone before it looks again. */
#define SERVICE_LIMIT_RETRY_US (5 * 1000)

/* Counts a request on a connection whose count is *requests: returns 1 if it is the last one
 * --max-requests allows (the engine answers it with Connection: close), else 0. */
int service_request_on_connection(const struct service *s, unsigned *requests);

/* A connection counted open (reserved or opened) closed. Thread-safe. */
void service_conn_closed(struct service *s);

/* The counters' shard for loop i. */
struct stats_shard *service_shard(struct service *s, size_t i);

/* The worker pool a request planned as p takes a worker of: the route's own, else the global
 * one; NULL when it takes none (no pool, /healthz, /stats, /metrics, 404, 405). */
struct pool *service_pool_of(const struct service *s, const struct plan *p);

/* Server stopping: every worker pool lets its queued requests go, and turns later ones away
 * (pool_flush). Thread-safe; harmless when called again. */
void service_flush(struct service *s);

/* The body of /stats (what = PLAN_STATS) or /metrics (PLAN_METRICS) through s->report: malloc'd,
 * the caller frees it with free(); NULL if out of memory or when s has no report hook.
 * Thread-safe. */
char *service_report(const struct service *s, enum plan_action what);

#endif
