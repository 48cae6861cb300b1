/*
 * stats: request counters that /stats and /metrics read, cheap enough for every request.
 *
 * Counters are sharded: each event loop (or thread group) writes its own shard with relaxed
 * atomic adds, so the hot path shares no lock and no cache line with other loops; a reader sums
 * the shards. Totals are derived from monotonic counters (begun - ended), never decremented, so a
 * reader racing with writers can see a slightly stale sum but never a negative one.
 */
#ifndef SLOWSRV_STATS_H
#define SLOWSRV_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"

/* Statuses counted per route: 100..599. Status 0 means "no answer" (the client went away). */
#define STATS_STATUS_MIN 100
#define STATS_STATUS_MAX 599

/* Route id of requests that are never counted as load (/healthz, /stats): every call taking a
 * route ignores it. */
#define STATS_UNCOUNTED ((size_t)-1)

/* Latency histograms kept per route, log-linear in the manner of HdrHistogram: every
 * microsecond up to 128 µs, then 64 buckets per power of two, up to 2^38 µs (about 76 h). A value
 * is reported as the middle of its bucket, so it is off by at most half a bucket: 1/128 of it,
 * under 1 % (STATS_PRECISION). Memory and the cost of a record are fixed. */
enum stats_hist {
    STATS_HIST_INTENDED = 0, /* the delay the request was meant to wait */
    STATS_HIST_OVERSHOOT,    /* how late its answer started after the delay was due */
    STATS_HIST_SERVICE,      /* from request in to answer out */
    STATS_HIST_EVENT_LATE,   /* how late each event of a stream left after it was due */
    STATS_HIST_COUNT,
};

#define STATS_SUB_BUCKETS 64 /* per power of two, above 2 * STATS_SUB_BUCKETS µs */
#define STATS_BUCKETS (2 * STATS_SUB_BUCKETS + 31 * STATS_SUB_BUCKETS)
#define STATS_PRECISION (1.0 / (2 * STATS_SUB_BUCKETS)) /* the largest relative error */

/* The bucket of a value of us microseconds (values past the last bucket go in it), and the
 * lowest value of bucket b and its width. */
size_t stats_bucket_of(uint64_t us);
uint64_t stats_bucket_low(size_t b);
uint64_t stats_bucket_width(size_t b);

/* Upper bounds (µs) of the buckets of /metrics' classic histogram `which` (the last one,
 * le="+Inf", takes the rest): sets *bound_us, returns their number. The delays and service
 * times have 18 (100 µs to 60 s), the overshoot 22 (10 µs steps up to 100 µs, then up to 1 s). */
#define STATS_METRIC_BOUNDS_MAX 22
size_t stats_metric_bounds(enum stats_hist which, const uint64_t **bound_us);

struct stats;
struct stats_shard;

/* What the HTTP/2 budgets did to connections (common/http/h2budget.h): those sent GOAWAY
 * ENHANCE_YOUR_CALM, by the kind of frame that found no credit left; those sent GOAWAY
 * FLOW_CONTROL_ERROR; and the times reading a connection was paused for the acknowledgements it
 * owed. */
enum stats_h2 {
    STATS_H2_PING = 0,
    STATS_H2_SETTINGS,
    STATS_H2_RST_STREAM,
    STATS_H2_PRIORITY,
    STATS_H2_WINDOW_UPDATE,
    STATS_H2_EMPTY_DATA,
    STATS_H2_HEADERS, /* an empty HEADERS, or a CONTINUATION */
    STATS_H2_UNKNOWN_FRAME,
    STATS_H2_CALM_KINDS, /* the kinds above are ENHANCE_YOUR_CALM's reasons */
    STATS_H2_FLOW_CONTROL = STATS_H2_CALM_KINDS,
    STATS_H2_PAUSED,
    STATS_H2_COUNT,
};

/* The name of kind k in /stats and /metrics ("ping", "flow_control", ...). */
const char *stats_h2_name(enum stats_h2 k);

/* Connection figures kept by the service, for the reports. */
struct stats_conns {
    size_t open;
    size_t max;
    uint64_t limit_reached; /* times the open connections reached max */
    double limit_seconds;   /* time spent at max, the current spell included */
};

struct stats_totals {
    uint64_t requests;  /* begun */
    uint64_t answered;  /* ended with a status */
    uint64_t in_flight; /* begun and not ended */
    uint64_t waiting;   /* waiting on a delay right now */
    uint64_t cancels;   /* clients that went away before their answer */
    uint64_t faults;    /* requests given an injected fault instead of their answer */
    uint64_t bytes_in;  /* request body bytes received */
};

/* Creates counters for `nroutes` routes split into `nshards` shards (both >= 1), all zero.
 * Returns NULL if out of memory. Free with stats_free. */
struct stats *stats_new(size_t nshards, size_t nroutes);

/* Frees the counters. No shard pointer may be used afterwards. */
void stats_free(struct stats *st);

/* Returns shard `i % nshards`; valid until stats_free. Writers on different threads should use
 * different shards when they can; sharing one is correct, only slower. */
struct stats_shard *stats_shard(struct stats *st, size_t i);

/* A request for route `route` (< nroutes) has begun. */
void stats_request_begin(struct stats_shard *sh, size_t route);

/* The request has ended with `status` (100..599), or 0 if it got no answer. */
void stats_request_end(struct stats_shard *sh, size_t route, unsigned status);

/* A request of `route` starts / stops waiting on its delay. */
void stats_wait_begin(struct stats_shard *sh, size_t route);
void stats_wait_end(struct stats_shard *sh, size_t route);

/* A request of `route` is queued for a worker / leaves the queue (admitted, refused at the stop,
 * or gone). */
void stats_queue_begin(struct stats_shard *sh, size_t route);
void stats_queue_end(struct stats_shard *sh, size_t route);

/* The client of a request on `route` went away before its answer. */
void stats_cancel(struct stats_shard *sh, size_t route);

/* A request on `route` got an injected fault (?fault=) instead of its answer. */
void stats_fault(struct stats_shard *sh, size_t route);

/* Adds an observation of `us` microseconds to histogram `which` of `route`: a bucket, the sum,
 * and the largest seen. */
void stats_observe(struct stats_shard *sh, size_t route, enum stats_hist which, uint64_t us);

/* An event stream of the route began; it ended, `cut` if before its last event (the client
 * left, or the server stopped); one of its events left late_us after it was due (counted and
 * put in STATS_HIST_EVENT_LATE). */
void stats_stream_begin(struct stats_shard *sh, size_t route);
void stats_stream_end(struct stats_shard *sh, size_t route, int cut);
void stats_event(struct stats_shard *sh, size_t route, uint64_t late_us);

/* An HTTP/2 budget acted on a connection (enum stats_h2). */
void stats_h2(struct stats_shard *sh, enum stats_h2 k);

/* Events of kind k, summed over the shards (never reset: /stats and /metrics alike). */
uint64_t stats_h2_get(const struct stats *st, enum stats_h2 k);

/* `n` request body bytes were received. */
void stats_bytes_in(struct stats_shard *sh, uint64_t n);

/* Sums every shard into *out. Thread-safe. */
void stats_totals_get(const struct stats *st, struct stats_totals *out);

/* Requests begun on `route`, summed over the shards. */
uint64_t stats_route_requests(const struct stats *st, size_t route);

/* Requests on `route` answered with `status` (0 for "no answer"), summed over the shards. */
uint64_t stats_route_status(const struct stats *st, size_t route, unsigned status);

/* Renders every counter as a JSON object (cJSON, unformatted): uptime, totals and, per route
 * (named by names[0..nroutes); a NULL name is left out), requests, cancels and answers by
 * status, and each latency histogram's count, mean, p50, p90, p99, p99.9, p99.99 and max (ms,
 * each within STATS_PRECISION, "precision" beside them) and its non-empty buckets as
 * [lowest ms, count] pairs ("dist"), counted since the last stats_reset; with `workers` (may be
 * NULL) the worker pool's size, active, queued and rejected counts; with `conns` (may be NULL)
 * the open, maximum and refused connections. Returns a malloc'd
 * NUL-terminated string the caller frees with free(), or NULL if out of memory. */
char *stats_to_json(const struct stats *st, const char *const *names, size_t nroutes,
                    double uptime_s, const struct pool_counts *workers,
                    const struct stats_conns *conns);

/* stats_to_json, then add(ctx, root) adds what the caller keeps (a struct cJSON object); add runs
 * without the counters' lock held, and may take locks of its own. */
struct cJSON;
typedef void (*stats_json_fn)(void *ctx, struct cJSON *root);
char *stats_to_json_with(const struct stats *st, const char *const *names, size_t nroutes,
                         double uptime_s, const struct pool_counts *workers,
                         const struct stats_conns *conns, stats_json_fn extra, void *ctx);

/* Starts a new run for /stats: its counters and histograms count from zero again (requests,
 * answers, cancels, faults, bytes, latencies; the gauges in flight and waiting stay as they
 * are). /metrics is not reset: its counters stay monotonic, with slowsrv_resets_total and the
 * time of the last reset beside them. Thread-safe; the request path takes no part in it. */
void stats_reset(struct stats *st, double now_unix);

/* The resets so far and the Unix time of the last one (0 if none). */
void stats_resets(struct stats *st, uint64_t *count, double *at);

/* Zeroes route `route`'s counters, for a slot given to a new path. No request may count on it
 * now. */
void stats_route_zero(struct stats *st, size_t route);

/* The index of shard sh (what stats_shard was given, modulo the shard count). */
size_t stats_shard_index(const struct stats_shard *sh);

/* Renders the same figures in the Prometheus text exposition format 0.0.4, with the latency
 * histograms. Returns a malloc'd string the caller frees with free(), or NULL if out of
 * memory. */
char *stats_to_prometheus(const struct stats *st, const char *const *names, size_t nroutes,
                          double uptime_s, const struct pool_counts *workers,
                          const struct stats_conns *conns);

#endif
