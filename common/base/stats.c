#include "base/stats.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NSTATUS (STATS_STATUS_MAX - STATS_STATUS_MIN + 2) /* slot 0 is "no answer" */

/* The delays and service times, 100 µs to 60 s at 1-2.5-5 a decade; the overshoot, in 10 µs
 * steps up to 100 µs and then 1-2.5-5 a decade up to 1 s, so that a 1 ms overshoot reads. */
static const uint64_t span_bounds[] = {
    100,    250,    500,    1000,    2500,    5000,    10000,    25000,    50000,
    100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};
static const uint64_t overshoot_bounds[] = {
    10,  20,   30,   40,   50,    60,    70,    80,     90,     100,    250,
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
};
_Static_assert(sizeof overshoot_bounds / sizeof overshoot_bounds[0] <= STATS_METRIC_BOUNDS_MAX &&
                   sizeof span_bounds / sizeof span_bounds[0] <= STATS_METRIC_BOUNDS_MAX,
               "STATS_METRIC_BOUNDS_MAX holds every histogram's bounds");

size_t stats_metric_bounds(enum stats_hist which, const uint64_t **bound_us)
{
    if (which == STATS_HIST_OVERSHOOT || which == STATS_HIST_EVENT_LATE) {
        *bound_us = overshoot_bounds;
        return sizeof overshoot_bounds / sizeof overshoot_bounds[0];
    }
    *bound_us = span_bounds;
    return sizeof span_bounds / sizeof span_bounds[0];
}

size_t stats_bucket_of(uint64_t us)
{
    if (us < 2 * STATS_SUB_BUCKETS)
        return (size_t)us;
    unsigned msb = 63u - (unsigned)__builtin_clzll(us), e = msb - 6; /* us >> e is 64..127 */
    size_t b = 2 * STATS_SUB_BUCKETS + (size_t)(e - 1) * STATS_SUB_BUCKETS +
               (size_t)((us >> e) - STATS_SUB_BUCKETS);
    return b < STATS_BUCKETS ? b : STATS_BUCKETS - 1;
}

uint64_t stats_bucket_low(size_t b)
{
    if (b < 2 * STATS_SUB_BUCKETS)
        return b;
    size_t k = b - 2 * STATS_SUB_BUCKETS;
    return (uint64_t)(k % STATS_SUB_BUCKETS + STATS_SUB_BUCKETS) << (k / STATS_SUB_BUCKETS + 1);
}

uint64_t stats_bucket_width(size_t b)
{
    return b < 2 * STATS_SUB_BUCKETS
               ? 1
               : 1ULL << ((b - 2 * STATS_SUB_BUCKETS) / STATS_SUB_BUCKETS + 1);
}

struct histogram {
    _Atomic uint64_t bucket[STATS_BUCKETS];
    _Atomic uint64_t sum_us;
};

struct route_counters {
    _Atomic uint64_t begun;
    _Atomic uint64_t cancels;
    _Atomic uint64_t faults;
    _Atomic uint64_t wait_begun, wait_ended;   /* the route's requests waiting on a delay */
    _Atomic uint64_t queue_begun, queue_ended; /* ... and queued for a worker */
    _Atomic uint64_t stream_begun, stream_ended, stream_cut, events; /* event streams */
    _Atomic uint64_t status[NSTATUS];
    struct histogram hist[STATS_HIST_COUNT];
    /* /metrics' classic buckets, counted as they come: exact at their bounds (the last one
     * past the last bound). */
    _Atomic uint64_t metric[STATS_HIST_COUNT][STATS_METRIC_BOUNDS_MAX + 1];
    /* Not a sum: what a reset or a base leaves out (ADDITIVE_WORDS). */
    _Atomic uint64_t max_us[STATS_HIST_COUNT];
};

/* The words of struct route_counters that add up over shards and subtract at a reset. */
#define ADDITIVE_WORDS (offsetof(struct route_counters, max_us) / sizeof(uint64_t))

/* A route's counters in a shard are made at its first count there (53 KiB each: made for every
 * route of a table of thousands, most never requested, they would cost gigabytes of address
 * space). They are carved from chunks mapped afresh, so a page of them costs memory only once a
 * request has written it, and are kept until stats_free. Each takes whole cache lines, so no
 * line is written by two loops. */
#define COUNTERS_SIZE ((sizeof(struct route_counters) + 63) / 64 * 64)
#define CHUNK_ROUTES 16
#define CHUNK_HEAD 64

struct chunk {
    struct chunk *next;
    size_t size;
};

/* Aligned to a cache line so that two loops never write the same line. */
struct stats_shard {
    _Alignas(64) _Atomic uint64_t begun;
    _Atomic uint64_t ended;
    _Atomic uint64_t answered;
    _Atomic uint64_t wait_begun;
    _Atomic uint64_t wait_ended;
    _Atomic uint64_t cancels;
    _Atomic uint64_t faults;
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t h2[STATS_H2_COUNT];
    size_t nroutes;
    size_t index;
    struct stats *owner;
    _Atomic(struct route_counters *) *routes; /* by route; NULL until its first count here */
};

struct stats {
    size_t nshards;
    size_t nroutes;
    struct stats_shard *shards;
    /* Where counters are carved from: the chunk being used, and every chunk for stats_free. */
    pthread_mutex_t chunk_lock;
    struct chunk *chunks;
    char *next;
    size_t left; /* counters left in the chunk at `next` */
    /* What /stats subtracts since the last reset (stats_reset): the sums at that time. */
    pthread_mutex_t base_lock;
    struct stats_shard base;
    uint64_t resets;
    double reset_at; /* Unix time of the last reset, 0 if none */
};

struct stats *stats_new(size_t nshards, size_t nroutes)
{
    struct stats *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->nshards = nshards ? nshards : 1;
    st->nroutes = nroutes ? nroutes : 1;
    st->shards = aligned_alloc(64, st->nshards * sizeof *st->shards);
    if (!st->shards) {
        free(st);
        return NULL;
    }
    memset(st->shards, 0, st->nshards * sizeof *st->shards);
    memset(&st->base, 0, sizeof st->base);
    pthread_mutex_init(&st->base_lock, NULL);
    pthread_mutex_init(&st->chunk_lock, NULL);
    st->base.routes = calloc(st->nroutes, sizeof *st->base.routes);
    st->base.nroutes = st->nroutes;
    st->base.owner = st;
    if (!st->base.routes) {
        free(st->shards);
        free(st);
        return NULL;
    }
    for (size_t i = 0; i < st->nshards; i++) {
        st->shards[i].nroutes = st->nroutes;
        st->shards[i].index = i;
        st->shards[i].owner = st;
        /* All NULL (calloc); large, so mapped afresh and paid for by the page as routes are
         * counted. */
        st->shards[i].routes = calloc(st->nroutes, sizeof *st->shards[i].routes);
        if (!st->shards[i].routes) {
            stats_free(st);
            return NULL;
        }
    }
    return st;
}

void stats_free(struct stats *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->nshards; i++)
        free(st->shards[i].routes);
    free(st->shards);
    free(st->base.routes);
    while (st->chunks) {
        struct chunk *c = st->chunks;
        st->chunks = c->next;
        munmap(c, c->size);
    }
    pthread_mutex_destroy(&st->base_lock);
    pthread_mutex_destroy(&st->chunk_lock);
    free(st);
}

/* New zeroed counters, or NULL if out of memory. Under chunk_lock. */
static struct route_counters *carve(struct stats *st)
{
    if (!st->left) {
        size_t size = CHUNK_HEAD + CHUNK_ROUTES * COUNTERS_SIZE;
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        struct chunk *c = m;
        c->next = st->chunks;
        c->size = size;
        st->chunks = c;
        st->next = (char *)m + CHUNK_HEAD;
        st->left = CHUNK_ROUTES;
    }
    struct route_counters *rc = (struct route_counters *)(void *)st->next;
    st->next += COUNTERS_SIZE;
    st->left--;
    return rc;
}

/* The counters of `route` (< nroutes) in sh, made at the first call; NULL if out of memory (the
 * count is then lost). A shard may be shared by threads (thread-per-connection): the first
 * ones to call make them under a lock, and every later call reads one pointer. */
static struct route_counters *counters(struct stats_shard *sh, size_t route)
{
    struct route_counters *rc = atomic_load_explicit(&sh->routes[route], memory_order_acquire);
    if (rc)
        return rc;
    pthread_mutex_lock(&sh->owner->chunk_lock);
    rc = atomic_load_explicit(&sh->routes[route], memory_order_relaxed);
    if (!rc && (rc = carve(sh->owner)) != NULL)
        atomic_store_explicit(&sh->routes[route], rc, memory_order_release);
    pthread_mutex_unlock(&sh->owner->chunk_lock);
    return rc;
}

/* The counters of `route` in sh, or NULL while none was counted there (all zero). */
static const struct route_counters *peek(const struct stats_shard *sh, size_t route)
{
    return atomic_load_explicit(&sh->routes[route], memory_order_acquire);
}

/* The counters of a route for a writer, or NULL for a route with none (STATS_UNCOUNTED, out of
 * range, out of memory). */
static struct route_counters *counters_of(struct stats_shard *sh, size_t route)
{
    return route < sh->nroutes ? counters(sh, route) : NULL;
}

size_t stats_shard_index(const struct stats_shard *sh)
{
    return sh->index;
}

struct stats_shard *stats_shard(struct stats *st, size_t i)
{
    return &st->shards[i % st->nshards];
}

static void add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static const _Atomic uint64_t *field_of(const struct route_counters *rc, size_t field)
{
    return (const _Atomic uint64_t *)(const void *)((const char *)rc + field);
}

/* 1 if a request was ever counted on `route`, in any shard. */
static int route_counted(const struct stats *st, size_t route)
{
    for (size_t i = 0; i < st->nshards; i++)
        if (peek(&st->shards[i], route))
            return 1;
    return 0;
}

/* A counter of struct route_counters (at offset `field`) for `route`, summed over the shards;
 * since the last reset when `since`. */
static uint64_t route_sum_since(const struct stats *st, size_t route, size_t field, int since)
{
    uint64_t n = 0;
    for (size_t i = 0; i < st->nshards; i++) {
        const struct route_counters *rc = peek(&st->shards[i], route);
        n += rc ? get(field_of(rc, field)) : 0;
    }
    const struct route_counters *base = since ? peek(&st->base, route) : NULL;
    if (base) {
        uint64_t b = get(field_of(base, field));
        n = n > b ? n - b : 0;
    }
    return n;
}

static uint64_t route_sum(const struct stats *st, size_t route, size_t field)
{
    return route_sum_since(st, route, field, 0);
}

static size_t status_slot(unsigned status)
{
    if (status < STATS_STATUS_MIN || status > STATS_STATUS_MAX)
        return 0;
    return status - STATS_STATUS_MIN + 1;
}

void stats_request_begin(struct stats_shard *sh, size_t route)
{
    if (route == STATS_UNCOUNTED)
        return;
    add(&sh->begun, 1);
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->begun, 1);
}

void stats_request_end(struct stats_shard *sh, size_t route, unsigned status)
{
    if (route == STATS_UNCOUNTED)
        return;
    add(&sh->ended, 1);
    if (status_slot(status))
        add(&sh->answered, 1);
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->status[status_slot(status)], 1);
}

void stats_wait_begin(struct stats_shard *sh, size_t route)
{
    add(&sh->wait_begun, 1);
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->wait_begun, 1);
}

void stats_wait_end(struct stats_shard *sh, size_t route)
{
    add(&sh->wait_ended, 1);
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->wait_ended, 1);
}

void stats_queue_begin(struct stats_shard *sh, size_t route)
{
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->queue_begun, 1);
}

void stats_queue_end(struct stats_shard *sh, size_t route)
{
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->queue_ended, 1);
}

/* A gauge of `route`: begun less ended (read ended first), whatever the resets. */
static uint64_t route_gauge(const struct stats *st, size_t route, size_t begun, size_t ended)
{
    uint64_t e = route_sum(st, route, ended), b = route_sum(st, route, begun);
    return b > e ? b - e : 0;
}

void stats_cancel(struct stats_shard *sh, size_t route)
{
    if (route == STATS_UNCOUNTED)
        return;
    add(&sh->cancels, 1);
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->cancels, 1);
}

void stats_fault(struct stats_shard *sh, size_t route)
{
    if (route == STATS_UNCOUNTED)
        return;
    add(&sh->faults, 1);
    struct route_counters *rc = counters_of(sh, route);
    if (rc)
        add(&rc->faults, 1);
}

void stats_stream_begin(struct stats_shard *sh, size_t route)
{
    struct route_counters *rc = route == STATS_UNCOUNTED ? NULL : counters_of(sh, route);
    if (rc)
        add(&rc->stream_begun, 1);
}

void stats_stream_end(struct stats_shard *sh, size_t route, int cut)
{
    struct route_counters *rc = route == STATS_UNCOUNTED ? NULL : counters_of(sh, route);
    if (!rc)
        return;
    if (cut)
        add(&rc->stream_cut, 1);
    add(&rc->stream_ended, 1);
}

void stats_event(struct stats_shard *sh, size_t route, uint64_t late_us)
{
    struct route_counters *rc = route == STATS_UNCOUNTED ? NULL : counters_of(sh, route);
    if (!rc)
        return;
    add(&rc->events, 1);
    stats_observe(sh, route, STATS_HIST_EVENT_LATE, late_us);
}

void stats_observe(struct stats_shard *sh, size_t route, enum stats_hist which, uint64_t us)
{
    struct route_counters *rc = which < STATS_HIST_COUNT ? counters_of(sh, route) : NULL;
    if (!rc)
        return;
    struct histogram *h = &rc->hist[which];
    add(&h->bucket[stats_bucket_of(us)], 1);
    add(&h->sum_us, us);
    const uint64_t *bound;
    size_t lo = 0, hi = stats_metric_bounds(which, &bound); /* the first bound not below us */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bound[mid] < us)
            lo = mid + 1;
        else
            hi = mid;
    }
    add(&rc->metric[which][lo], 1);
    /* A shard may be shared (thread-per-connection), so the largest is raised by a swap that
     * fails when another thread raised it first; most records raise nothing. */
    _Atomic uint64_t *max = &rc->max_us[which];
    uint64_t m = get(max);
    while (us > m && !atomic_compare_exchange_weak_explicit(max, &m, us, memory_order_relaxed,
                                                            memory_order_relaxed))
        ;
}

void stats_bytes_in(struct stats_shard *sh, uint64_t n)
{
    add(&sh->bytes_in, n);
}

static const char *const h2_names[STATS_H2_COUNT] = {
    "ping",       "settings", "rst_stream",    "priority",     "window_update",
    "empty_data", "headers",  "unknown_frame", "flow_control", "paused"};

const char *stats_h2_name(enum stats_h2 k)
{
    return k < STATS_H2_COUNT ? h2_names[k] : "";
}

void stats_h2(struct stats_shard *sh, enum stats_h2 k)
{
    if (k < STATS_H2_COUNT)
        add(&sh->h2[k], 1);
}

uint64_t stats_h2_get(const struct stats *st, enum stats_h2 k)
{
    uint64_t n = 0;
    for (size_t i = 0; k < STATS_H2_COUNT && i < st->nshards; i++)
        n += get(&st->shards[i].h2[k]);
    return n;
}

void stats_totals_get(const struct stats *st, struct stats_totals *out)
{
    uint64_t begun = 0, ended = 0, wb = 0, we = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < st->nshards; i++) {
        const struct stats_shard *sh = &st->shards[i];
        /* Read "ended" before "begun" so a racing request is never counted as ended only. */
        ended += get(&sh->ended);
        we += get(&sh->wait_ended);
        begun += get(&sh->begun);
        wb += get(&sh->wait_begun);
        out->answered += get(&sh->answered);
        out->cancels += get(&sh->cancels);
        out->faults += get(&sh->faults);
        out->bytes_in += get(&sh->bytes_in);
    }
    out->requests = begun;
    out->in_flight = begun > ended ? begun - ended : 0;
    out->waiting = wb > we ? wb - we : 0;
}

/* The totals since the last reset: counters less the base, gauges as they are. */
static void totals_since(const struct stats *st, struct stats_totals *out)
{
    stats_totals_get(st, out);
    const struct stats_shard *b = &st->base;
    uint64_t v;
#define SINCE(field, base)                                                                         \
    v = get(&b->base);                                                                             \
    out->field = out->field > v ? out->field - v : 0
    SINCE(requests, begun);
    SINCE(answered, answered);
    SINCE(cancels, cancels);
    SINCE(faults, faults);
    SINCE(bytes_in, bytes_in);
#undef SINCE
}

/* Adds the sums over the shards of every counter into base (which the caller zeroed, or holds
 * what to keep). */
static void sum_into_base(struct stats *st)
{
    struct stats_shard *b = &st->base;
    for (size_t i = 0; i < st->nshards; i++) {
        const struct stats_shard *sh = &st->shards[i];
        atomic_store(&b->begun, get(&b->begun) + get(&sh->begun));
        atomic_store(&b->answered, get(&b->answered) + get(&sh->answered));
        atomic_store(&b->cancels, get(&b->cancels) + get(&sh->cancels));
        atomic_store(&b->faults, get(&b->faults) + get(&sh->faults));
        atomic_store(&b->bytes_in, get(&b->bytes_in) + get(&sh->bytes_in));
        for (size_t r = 0; r < st->nroutes; r++) {
            const struct route_counters *from = peek(sh, r);
            struct route_counters *to = from ? counters(b, r) : NULL;
            if (!to)
                continue; /* nothing counted (or no memory for the base: /stats keeps all) */
            _Atomic uint64_t *dst = (_Atomic uint64_t *)(void *)to;
            const _Atomic uint64_t *src = (const _Atomic uint64_t *)(const void *)from;
            for (size_t w = 0; w < ADDITIVE_WORDS; w++)
                atomic_store(&dst[w], get(&dst[w]) + get(&src[w]));
        }
    }
}

void stats_reset(struct stats *st, double now_unix)
{
    pthread_mutex_lock(&st->base_lock);
    atomic_store(&st->base.begun, 0);
    atomic_store(&st->base.answered, 0);
    atomic_store(&st->base.cancels, 0);
    atomic_store(&st->base.faults, 0);
    atomic_store(&st->base.bytes_in, 0);
    for (size_t r = 0; r < st->nroutes; r++) {
        struct route_counters *b = (struct route_counters *)(uintptr_t)peek(&st->base, r);
        if (b)
            memset(b, 0, sizeof *b);
    }
    sum_into_base(st);
    /* The largest since the reset: each shard's starts again (a value being recorded in the
     * same instant may be lost to it; never one from before the reset kept). */
    for (size_t i = 0; i < st->nshards; i++) {
        for (size_t r = 0; r < st->nroutes; r++) {
            struct route_counters *rc = (struct route_counters *)(uintptr_t)peek(&st->shards[i], r);
            for (int w = 0; rc && w < STATS_HIST_COUNT; w++)
                atomic_store_explicit(&rc->max_us[w], 0, memory_order_relaxed);
        }
    }
    st->resets++;
    st->reset_at = now_unix;
    pthread_mutex_unlock(&st->base_lock);
}

void stats_resets(struct stats *st, uint64_t *count, double *at)
{
    pthread_mutex_lock(&st->base_lock);
    *count = st->resets;
    *at = st->reset_at;
    pthread_mutex_unlock(&st->base_lock);
}

void stats_route_zero(struct stats *st, size_t route)
{
    if (route >= st->nroutes)
        return;
    pthread_mutex_lock(&st->base_lock);
    for (size_t i = 0; i < st->nshards; i++) {
        const struct route_counters *rc = peek(&st->shards[i], route);
        _Atomic uint64_t *w = (_Atomic uint64_t *)(uintptr_t)rc;
        for (size_t k = 0; w && k < sizeof(struct route_counters) / sizeof(uint64_t); k++)
            atomic_store_explicit(&w[k], 0, memory_order_relaxed);
    }
    struct route_counters *b = (struct route_counters *)(uintptr_t)peek(&st->base, route);
    if (b)
        memset(b, 0, sizeof *b);
    pthread_mutex_unlock(&st->base_lock);
}

uint64_t stats_route_requests(const struct stats *st, size_t route)
{
    uint64_t n = 0;
    if (route >= st->nroutes)
        return 0;
    for (size_t i = 0; i < st->nshards; i++) {
        const struct route_counters *rc = peek(&st->shards[i], route);
        n += rc ? get(&rc->begun) : 0;
    }
    return n;
}

uint64_t stats_route_status(const struct stats *st, size_t route, unsigned status)
{
    uint64_t n = 0;
    if (route >= st->nroutes || (status != 0 && !status_slot(status)))
        return 0;
    for (size_t i = 0; i < st->nshards; i++) {
        const struct route_counters *rc = peek(&st->shards[i], route);
        n += rc ? get(&rc->status[status_slot(status)]) : 0;
    }
    return n;
}

static void json_latency(const struct stats *st, size_t route, cJSON *obj);

static uint64_t status_since(const struct stats *st, size_t route, unsigned code)
{
    return route_sum_since(
        st, route, offsetof(struct route_counters, status) + status_slot(code) * sizeof(uint64_t),
        1);
}

char *stats_to_json(const struct stats *st, const char *const *names, size_t nroutes,
                    double uptime_s, const struct pool_counts *workers,
                    const struct stats_conns *conns)
{
    return stats_to_json_with(st, names, nroutes, uptime_s, workers, conns, NULL, NULL);
}

char *stats_to_json_with(const struct stats *st, const char *const *names, size_t nroutes,
                         double uptime_s, const struct pool_counts *workers,
                         const struct stats_conns *conns, stats_json_fn extra, void *ctx)
{
    struct stats_totals t;
    cJSON *root = cJSON_CreateObject();
    cJSON *routes = cJSON_CreateObject();
    char *out = NULL;
    struct stats *mst = (struct stats *)(uintptr_t)st; /* the lock only */

    if (!root || !routes)
        goto done;
    pthread_mutex_lock(&mst->base_lock);
    totals_since(st, &t);
    cJSON_AddNumberToObject(root, "uptime_s", uptime_s);
    cJSON_AddNumberToObject(root, "resets", (double)st->resets);
    if (st->resets)
        cJSON_AddNumberToObject(root, "reset_at", st->reset_at);
    cJSON_AddNumberToObject(root, "requests", (double)t.requests);
    cJSON_AddNumberToObject(root, "answered", (double)t.answered);
    cJSON_AddNumberToObject(root, "in_flight", (double)t.in_flight);
    cJSON_AddNumberToObject(root, "waiting", (double)t.waiting);
    cJSON_AddNumberToObject(root, "cancels", (double)t.cancels);
    cJSON_AddNumberToObject(root, "faults", (double)t.faults);
    cJSON_AddNumberToObject(root, "bytes_received", (double)t.bytes_in);
    if (conns) {
        cJSON *c = cJSON_AddObjectToObject(root, "connections");
        if (!c)
            goto unlock;
        cJSON_AddNumberToObject(c, "open", (double)conns->open);
        cJSON_AddNumberToObject(c, "max", (double)conns->max);
        cJSON_AddNumberToObject(c, "limit_reached", (double)conns->limit_reached);
        cJSON_AddNumberToObject(c, "limit_seconds", conns->limit_seconds);
    }
    {
        cJSON *h2 = cJSON_AddObjectToObject(root, "h2");
        cJSON *calm = h2 ? cJSON_AddObjectToObject(h2, "calm") : NULL;
        if (!calm)
            goto unlock;
        for (int k = 0; k < STATS_H2_COUNT; k++)
            cJSON_AddNumberToObject(k < STATS_H2_CALM_KINDS ? calm : h2, h2_names[k],
                                    (double)stats_h2_get(st, (enum stats_h2)k));
    }
    if (workers) {
        cJSON *w = cJSON_AddObjectToObject(root, "workers");
        if (!w)
            goto unlock;
        cJSON_AddNumberToObject(w, "size", workers->workers);
        cJSON_AddNumberToObject(w, "active", workers->active);
        cJSON_AddNumberToObject(w, "queued", workers->queued);
        cJSON_AddNumberToObject(w, "rejected", (double)workers->rejected);
    }
    for (size_t r = 0; r < nroutes && r < st->nroutes; r++) {
        if (!names[r])
            continue;
        cJSON *o = cJSON_AddObjectToObject(routes, names[r]);
        cJSON *by = o ? cJSON_AddObjectToObject(o, "status") : NULL;
        if (!by)
            goto unlock;
        cJSON_AddNumberToObject(
            o, "requests",
            (double)route_sum_since(st, r, offsetof(struct route_counters, begun), 1));
        cJSON_AddNumberToObject(
            o, "cancels",
            (double)route_sum_since(st, r, offsetof(struct route_counters, cancels), 1));
        cJSON_AddNumberToObject(
            o, "faults",
            (double)route_sum_since(st, r, offsetof(struct route_counters, faults), 1));
        /* Begun and not ended (every status slot, "no answer" included), whatever the reset. */
        uint64_t ended = 0;
        for (size_t k = 0; k < NSTATUS; k++)
            ended +=
                route_sum(st, r, offsetof(struct route_counters, status) + k * sizeof(uint64_t));
        uint64_t begun = route_sum(st, r, offsetof(struct route_counters, begun));
        cJSON_AddNumberToObject(o, "in_flight", (double)(begun > ended ? begun - ended : 0));
        cJSON_AddNumberToObject(o, "waiting",
                                (double)route_gauge(st, r,
                                                    offsetof(struct route_counters, wait_begun),
                                                    offsetof(struct route_counters, wait_ended)));
        cJSON_AddNumberToObject(o, "queued",
                                (double)route_gauge(st, r,
                                                    offsetof(struct route_counters, queue_begun),
                                                    offsetof(struct route_counters, queue_ended)));
        {
            cJSON *sj = cJSON_AddObjectToObject(o, "streams");
            if (!sj)
                goto unlock;
            cJSON_AddNumberToObject(
                sj, "open",
                (double)route_gauge(st, r, offsetof(struct route_counters, stream_begun),
                                    offsetof(struct route_counters, stream_ended)));
            cJSON_AddNumberToObject(
                sj, "begun",
                (double)route_sum_since(st, r, offsetof(struct route_counters, stream_begun), 1));
            cJSON_AddNumberToObject(
                sj, "cut",
                (double)route_sum_since(st, r, offsetof(struct route_counters, stream_cut), 1));
            cJSON_AddNumberToObject(
                sj, "events",
                (double)route_sum_since(st, r, offsetof(struct route_counters, events), 1));
        }
        json_latency(st, r, o);
        for (unsigned code = STATS_STATUS_MIN; code <= STATS_STATUS_MAX; code++) {
            uint64_t n = status_since(st, r, code);
            char key[8];
            if (!n)
                continue;
            snprintf(key, sizeof key, "%u", code);
            cJSON_AddNumberToObject(by, key, (double)n);
        }
    }
    cJSON_AddItemToObject(root, "routes", routes);
    routes = NULL;
    pthread_mutex_unlock(&mst->base_lock);
    /* Outside the lock: extra takes locks of its own (the scenario's), whose holders may wait
     * for this one (a change that numbers a new route's counters). */
    if (extra)
        extra(ctx, root);
    out = cJSON_PrintUnformatted(root);
    goto done;
unlock:
    pthread_mutex_unlock(&mst->base_lock);
done:
    cJSON_Delete(routes);
    cJSON_Delete(root);
    return out;
}

/* Sums histogram `which` of `route` over the shards into bucket[] (STATS_BUCKETS entries),
 * since the last reset when `since`; returns the observation count and sets *sum_us and *max_us
 * (the largest since the reset). */
static uint64_t hist_sum_since(const struct stats *st, size_t route, enum stats_hist which,
                               uint64_t *bucket, uint64_t *sum_us, uint64_t *max_us, int since)
{
    uint64_t count = 0;
    *sum_us = *max_us = 0;
    if (!route_counted(st, route))
        return 0; /* never counted: bucket[] is not read */
    memset(bucket, 0, STATS_BUCKETS * sizeof *bucket);
    for (size_t i = 0; i < st->nshards; i++) {
        const struct route_counters *rc = peek(&st->shards[i], route);
        if (!rc)
            continue;
        for (size_t b = 0; b < STATS_BUCKETS; b++)
            bucket[b] += get(&rc->hist[which].bucket[b]);
        *sum_us += get(&rc->hist[which].sum_us);
        uint64_t m = get(&rc->max_us[which]);
        *max_us = m > *max_us ? m : *max_us;
    }
    const struct route_counters *base = since ? peek(&st->base, route) : NULL;
    if (base) {
        const struct histogram *h = &base->hist[which];
        for (size_t b = 0; b < STATS_BUCKETS; b++)
            bucket[b] = bucket[b] > get(&h->bucket[b]) ? bucket[b] - get(&h->bucket[b]) : 0;
        *sum_us = *sum_us > get(&h->sum_us) ? *sum_us - get(&h->sum_us) : 0;
    }
    for (size_t b = 0; b < STATS_BUCKETS; b++)
        count += bucket[b];
    return count;
}

/* Quantile q (ms) of a histogram of count observations: the middle of the bucket that holds its
 * rank, never above the largest value seen. */
static double quantile_ms(const uint64_t *bucket, uint64_t count, double q, uint64_t max_us)
{
    uint64_t need = (uint64_t)((double)count * q), acc = 0;
    if (need < 1 || (double)need < (double)count * q)
        need++;
    for (size_t b = 0; b < STATS_BUCKETS; b++) {
        acc += bucket[b];
        if (acc >= need) {
            uint64_t w = stats_bucket_width(b), mid = stats_bucket_low(b) + (w - 1) / 2;
            return (double)(max_us && mid > max_us ? max_us : mid) / 1000.0;
        }
    }
    return (double)max_us / 1000.0;
}

static void json_latency(const struct stats *st, size_t route, cJSON *obj)
{
    static const char *const names[STATS_HIST_COUNT] = {"delay_intended_ms", "delay_overshoot_ms",
                                                        "service_ms", "stream_event_late_ms"};
    static const struct {
        const char *name;
        double q;
    } qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99_9", 0.999}, {"p99_99", 0.9999}};
    uint64_t *bucket = malloc(STATS_BUCKETS * sizeof *bucket);
    for (int w = 0; bucket && w < STATS_HIST_COUNT; w++) {
        uint64_t sum, max;
        uint64_t n = hist_sum_since(st, route, (enum stats_hist)w, bucket, &sum, &max, 1);
        cJSON *h = cJSON_AddObjectToObject(obj, names[w]);
        if (!h)
            break;
        cJSON_AddNumberToObject(h, "count", (double)n);
        if (!n)
            continue;
        cJSON_AddNumberToObject(h, "mean", (double)sum / (double)n / 1000.0);
        for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++)
            cJSON_AddNumberToObject(h, qs[k].name, quantile_ms(bucket, n, qs[k].q, max));
        cJSON_AddNumberToObject(h, "max", (double)max / 1000.0);
        cJSON_AddNumberToObject(h, "precision", STATS_PRECISION);
        /* The non-empty buckets, [lowest ms, count], for a histogram or a CDF. */
        cJSON *d = cJSON_AddArrayToObject(h, "dist");
        for (size_t b = 0; d && b < STATS_BUCKETS; b++) {
            if (!bucket[b])
                continue;
            cJSON *pair = cJSON_CreateArray();
            cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)stats_bucket_low(b) / 1000.0));
            cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)bucket[b]));
            cJSON_AddItemToArray(d, pair);
        }
    }
    free(bucket);
}

/* A text buffer with a ceiling: appends fail once it would pass max. */
struct text {
    char *buf;
    size_t len, cap, max;
    int failed;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        if (t->failed)
            return;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        /* Doubled, and at the end the ceiling itself, so that all of it may be used. */
        size_t cap = t->cap * 2 < t->max ? t->cap * 2 : t->max;
        char *b = cap > t->cap ? realloc(t->buf, cap) : NULL;
        if (!b) {
            t->failed = 1;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
}

/* Prometheus label values escape backslash, double quote and newline. */
static void label(char *out, size_t len, const char *s)
{
    size_t n = 0;
    for (; *s && n + 3 < len; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n') {
            out[n++] = '\\';
            out[n++] = *s == '\n' ? 'n' : *s;
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
}

/* 1 if route r has begun an event stream: the stream series are written for those routes only,
 * so that /metrics stays its size where no stream is served. */
static int has_streams(const struct stats *st, size_t r)
{
    return route_sum(st, r, offsetof(struct route_counters, stream_begun)) != 0;
}

/* One Prometheus counter with a sample per route (`streams`: per route that has streams). */
static void put_route_counter_of(struct text *t, const struct stats *st, const char *const *names,
                                 size_t nroutes, const char *metric, const char *help, size_t field,
                                 int streams)
{
    put(t, "# HELP %s %s\n# TYPE %s counter\n", metric, help, metric);
    for (size_t r = 0; r < nroutes && r < st->nroutes; r++) {
        char l[256];
        if (!names[r] || (streams && !has_streams(st, r)))
            continue;
        label(l, sizeof l, names[r]);
        put(t, "%s{route=\"%s\"} %llu\n", metric, l, (unsigned long long)route_sum(st, r, field));
    }
}

static void put_route_counter(struct text *t, const struct stats *st, const char *const *names,
                              size_t nroutes, const char *metric, const char *help, size_t field)
{
    put_route_counter_of(t, st, names, nroutes, metric, help, field, 0);
}

char *stats_to_prometheus(const struct stats *st, const char *const *names, size_t nroutes,
                          double uptime_s, const struct pool_counts *workers,
                          const struct stats_conns *conns)
{
    /* The ceiling: a fixed part, and each named route's lines at their longest (every status,
     * the two counters and the histograms; a line's label is cut at 255 bytes). */
    size_t ceiling = 1u << 20;
    for (size_t r = 0; r < nroutes && r < st->nroutes; r++) {
        size_t label_max = names[r] ? 2 * strlen(names[r]) : 0;
        if (names[r])
            ceiling += (NSTATUS + 2 + STATS_HIST_COUNT * (STATS_METRIC_BOUNDS_MAX + 3)) *
                       (128 + (label_max < 255 ? label_max : 255));
    }
    struct text t = {malloc(16384), 0, 16384, ceiling, 0};
    struct stats_totals tot;
    static const char *const hist_names[STATS_HIST_COUNT] = {
        "slowsrv_delay_intended_seconds", "slowsrv_delay_overshoot_seconds",
        "slowsrv_service_seconds", "slowsrv_stream_event_late_seconds"};
    static const char *const hist_help[STATS_HIST_COUNT] = {
        "Delay each request was meant to wait.",
        "How late the answer started after the delay was due.",
        "Time from request to answer, delay included.",
        "How late each event of a stream left after it was due."};
    if (!t.buf)
        return NULL;
    t.buf[0] = '\0';
    stats_totals_get(st, &tot);
    put(&t,
        "# HELP slowsrv_uptime_seconds Seconds since the server started.\n"
        "# TYPE slowsrv_uptime_seconds gauge\nslowsrv_uptime_seconds %.3f\n",
        uptime_s);
    put(&t,
        "# HELP slowsrv_in_flight Requests begun and not yet ended.\n"
        "# TYPE slowsrv_in_flight gauge\nslowsrv_in_flight %llu\n",
        (unsigned long long)tot.in_flight);
    put(&t,
        "# HELP slowsrv_waiting Requests waiting on their delay.\n"
        "# TYPE slowsrv_waiting gauge\nslowsrv_waiting %llu\n",
        (unsigned long long)tot.waiting);
    put(&t,
        "# HELP slowsrv_received_bytes_total Request body bytes received.\n"
        "# TYPE slowsrv_received_bytes_total counter\nslowsrv_received_bytes_total %llu\n",
        (unsigned long long)tot.bytes_in);
    put(&t, "%s",
        "# HELP slowsrv_h2_calm_total HTTP/2 connections sent GOAWAY ENHANCE_YOUR_CALM, by the "
        "kind of frame past the budget.\n"
        "# TYPE slowsrv_h2_calm_total counter\n");
    for (int k = 0; k < STATS_H2_CALM_KINDS; k++)
        put(&t, "slowsrv_h2_calm_total{reason=\"%s\"} %llu\n", h2_names[k],
            (unsigned long long)stats_h2_get(st, (enum stats_h2)k));
    put(&t,
        "# HELP slowsrv_h2_flow_control_errors_total HTTP/2 connections sent GOAWAY "
        "FLOW_CONTROL_ERROR for a window past 2^31-1.\n"
        "# TYPE slowsrv_h2_flow_control_errors_total counter\n"
        "slowsrv_h2_flow_control_errors_total %llu\n"
        "# HELP slowsrv_h2_paused_total Times an HTTP/2 connection was not read while it owed "
        "acknowledgements it could not send.\n"
        "# TYPE slowsrv_h2_paused_total counter\nslowsrv_h2_paused_total %llu\n",
        (unsigned long long)stats_h2_get(st, STATS_H2_FLOW_CONTROL),
        (unsigned long long)stats_h2_get(st, STATS_H2_PAUSED));
    {
        uint64_t resets;
        double at;
        stats_resets((struct stats *)(uintptr_t)st, &resets, &at);
        put(&t,
            "# HELP slowsrv_resets_total Times POST /reset started a new run in /stats (the "
            "counters here never go back).\n"
            "# TYPE slowsrv_resets_total counter\nslowsrv_resets_total %llu\n"
            "# HELP slowsrv_last_reset_timestamp_seconds Unix time of the last reset, 0 if "
            "none.\n"
            "# TYPE slowsrv_last_reset_timestamp_seconds gauge\n"
            "slowsrv_last_reset_timestamp_seconds %.3f\n",
            (unsigned long long)resets, at);
    }
    if (conns) {
        put(&t,
            "# HELP slowsrv_connections_open Open connections.\n"
            "# TYPE slowsrv_connections_open gauge\nslowsrv_connections_open %zu\n"
            "# HELP slowsrv_connections_max The --max-connections limit.\n"
            "# TYPE slowsrv_connections_max gauge\nslowsrv_connections_max %zu\n"
            "# HELP slowsrv_connections_limit_reached_total Times the open connections reached "
            "--max-connections (new ones then wait in the listen backlog).\n"
            "# TYPE slowsrv_connections_limit_reached_total counter\n"
            "slowsrv_connections_limit_reached_total %llu\n"
            "# HELP slowsrv_connections_limit_seconds_total Time spent at --max-connections.\n"
            "# TYPE slowsrv_connections_limit_seconds_total counter\n"
            "slowsrv_connections_limit_seconds_total %.6f\n",
            conns->open, conns->max, (unsigned long long)conns->limit_reached,
            conns->limit_seconds);
    }
    if (workers) {
        put(&t,
            "# HELP slowsrv_workers Size of the worker pool (--workers).\n"
            "# TYPE slowsrv_workers gauge\nslowsrv_workers %u\n"
            "# HELP slowsrv_workers_active Requests holding a worker.\n"
            "# TYPE slowsrv_workers_active gauge\nslowsrv_workers_active %u\n"
            "# HELP slowsrv_workers_queued Requests waiting for a worker.\n"
            "# TYPE slowsrv_workers_queued gauge\nslowsrv_workers_queued %u\n"
            "# HELP slowsrv_workers_rejected_total Requests refused: workers and queue "
            "full.\n"
            "# TYPE slowsrv_workers_rejected_total counter\n"
            "slowsrv_workers_rejected_total %llu\n",
            workers->workers, workers->active, workers->queued,
            (unsigned long long)workers->rejected);
    }
    put(&t, "# HELP slowsrv_requests_total Requests answered, by route and status (0: no "
            "answer).\n# TYPE slowsrv_requests_total counter\n");
    for (size_t r = 0; r < nroutes && r < st->nroutes; r++) {
        char l[256];
        if (!names[r])
            continue;
        label(l, sizeof l, names[r]);
        for (unsigned code = 0; code <= STATS_STATUS_MAX; code = code ? code + 1 : 100) {
            uint64_t n = stats_route_status(st, r, code);
            if (n)
                put(&t, "slowsrv_requests_total{route=\"%s\",status=\"%u\"} %llu\n", l, code,
                    (unsigned long long)n);
        }
    }
    put_route_counter(&t, st, names, nroutes, "slowsrv_cancels_total",
                      "Requests whose client left before the answer.",
                      offsetof(struct route_counters, cancels));
    put_route_counter(&t, st, names, nroutes, "slowsrv_faults_total",
                      "Requests answered with an injected fault (?fault=).",
                      offsetof(struct route_counters, faults));
    put_route_counter_of(&t, st, names, nroutes, "slowsrv_streams_total",
                         "Event streams begun (?stream=).",
                         offsetof(struct route_counters, stream_begun), 1);
    put_route_counter_of(&t, st, names, nroutes, "slowsrv_streams_ended_total",
                         "Event streams ended (begun less ended: open now).",
                         offsetof(struct route_counters, stream_ended), 1);
    put_route_counter_of(&t, st, names, nroutes, "slowsrv_streams_cut_total",
                         "Event streams ended before their last event (the client left).",
                         offsetof(struct route_counters, stream_cut), 1);
    put_route_counter_of(&t, st, names, nroutes, "slowsrv_stream_events_total",
                         "Events sent on event streams.", offsetof(struct route_counters, events),
                         1);
    uint64_t *bucket = malloc(STATS_BUCKETS * sizeof *bucket);
    for (int w = 0; bucket && w < STATS_HIST_COUNT; w++) {
        put(&t, "# HELP %s %s\n# TYPE %s histogram\n", hist_names[w], hist_help[w], hist_names[w]);
        for (size_t r = 0; r < nroutes && r < st->nroutes; r++) {
            uint64_t sum, max, acc = 0;
            char l[256];
            if (!names[r] || (w == STATS_HIST_EVENT_LATE && !has_streams(st, r)))
                continue;
            uint64_t n = hist_sum_since(st, r, (enum stats_hist)w, bucket, &sum, &max, 0);
            label(l, sizeof l, names[r]);
            const uint64_t *bound;
            size_t nbounds = stats_metric_bounds((enum stats_hist)w, &bound);
            for (size_t k = 0; k < nbounds; k++) {
                acc += route_sum(st, r,
                                 offsetof(struct route_counters, metric) +
                                     ((size_t)w * (STATS_METRIC_BOUNDS_MAX + 1) + k) *
                                         sizeof(uint64_t));
                put(&t, "%s_bucket{route=\"%s\",le=\"%g\"} %llu\n", hist_names[w], l,
                    (double)bound[k] / 1e6, (unsigned long long)acc);
            }
            put(&t, "%s_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", hist_names[w], l,
                (unsigned long long)n);
            put(&t, "%s_sum{route=\"%s\"} %.6f\n", hist_names[w], l, (double)sum / 1e6);
            put(&t, "%s_count{route=\"%s\"} %llu\n", hist_names[w], l, (unsigned long long)n);
        }
    }
    if (!bucket)
        t.failed = 1;
    free(bucket);
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
