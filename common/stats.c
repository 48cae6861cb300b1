#include "stats.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTATUS (STATS_STATUS_MAX - STATS_STATUS_MIN + 2) /* slot 0 is "no answer" */

struct route_counters {
    _Atomic uint64_t begun;
    _Atomic uint64_t cancels;
    _Atomic uint64_t status[NSTATUS];
};

/* Aligned to a cache line so that two loops never write the same line. */
struct stats_shard {
    _Alignas(64) _Atomic uint64_t begun;
    _Atomic uint64_t ended;
    _Atomic uint64_t answered;
    _Atomic uint64_t wait_begun;
    _Atomic uint64_t wait_ended;
    _Atomic uint64_t cancels;
    _Atomic uint64_t bytes_in;
    size_t nroutes;
    struct route_counters *routes;
};

struct stats {
    size_t nshards;
    size_t nroutes;
    struct stats_shard *shards;
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
    for (size_t i = 0; i < st->nshards; i++) {
        st->shards[i].nroutes = st->nroutes;
        st->shards[i].routes = calloc(st->nroutes, sizeof(struct route_counters));
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
    free(st);
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
    if (route < sh->nroutes)
        add(&sh->routes[route].begun, 1);
}

void stats_request_end(struct stats_shard *sh, size_t route, unsigned status)
{
    if (route == STATS_UNCOUNTED)
        return;
    add(&sh->ended, 1);
    if (status_slot(status))
        add(&sh->answered, 1);
    if (route < sh->nroutes)
        add(&sh->routes[route].status[status_slot(status)], 1);
}

void stats_wait_begin(struct stats_shard *sh)
{
    add(&sh->wait_begun, 1);
}

void stats_wait_end(struct stats_shard *sh)
{
    add(&sh->wait_ended, 1);
}

void stats_cancel(struct stats_shard *sh, size_t route)
{
    if (route == STATS_UNCOUNTED)
        return;
    add(&sh->cancels, 1);
    if (route < sh->nroutes)
        add(&sh->routes[route].cancels, 1);
}

void stats_bytes_in(struct stats_shard *sh, uint64_t n)
{
    add(&sh->bytes_in, n);
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
        out->bytes_in += get(&sh->bytes_in);
    }
    out->requests = begun;
    out->in_flight = begun > ended ? begun - ended : 0;
    out->waiting = wb > we ? wb - we : 0;
}

uint64_t stats_route_requests(const struct stats *st, size_t route)
{
    uint64_t n = 0;
    if (route >= st->nroutes)
        return 0;
    for (size_t i = 0; i < st->nshards; i++)
        n += get(&st->shards[i].routes[route].begun);
    return n;
}

uint64_t stats_route_status(const struct stats *st, size_t route, unsigned status)
{
    uint64_t n = 0;
    if (route >= st->nroutes || (status != 0 && !status_slot(status)))
        return 0;
    for (size_t i = 0; i < st->nshards; i++)
        n += get(&st->shards[i].routes[route].status[status_slot(status)]);
    return n;
}

char *stats_to_json(const struct stats *st, const char *const *names, size_t nroutes,
                    double uptime_s, const struct pool_counts *workers)
{
    struct stats_totals t;
    cJSON *root = cJSON_CreateObject();
    cJSON *routes = cJSON_CreateObject();
    char *out = NULL;

    if (!root || !routes)
        goto done;
    stats_totals_get(st, &t);
    cJSON_AddNumberToObject(root, "uptime_s", uptime_s);
    cJSON_AddNumberToObject(root, "requests", (double)t.requests);
    cJSON_AddNumberToObject(root, "answered", (double)t.answered);
    cJSON_AddNumberToObject(root, "in_flight", (double)t.in_flight);
    cJSON_AddNumberToObject(root, "waiting", (double)t.waiting);
    cJSON_AddNumberToObject(root, "cancels", (double)t.cancels);
    cJSON_AddNumberToObject(root, "bytes_received", (double)t.bytes_in);
    if (workers) {
        cJSON *w = cJSON_AddObjectToObject(root, "workers");
        if (!w)
            goto done;
        cJSON_AddNumberToObject(w, "size", workers->workers);
        cJSON_AddNumberToObject(w, "active", workers->active);
        cJSON_AddNumberToObject(w, "queued", workers->queued);
        cJSON_AddNumberToObject(w, "rejected", (double)workers->rejected);
    }
    for (size_t r = 0; r < nroutes && r < st->nroutes; r++) {
        cJSON *o = cJSON_AddObjectToObject(routes, names[r]);
        cJSON *by = o ? cJSON_AddObjectToObject(o, "status") : NULL;
        uint64_t cancels = 0;
        if (!by)
            goto done;
        for (size_t i = 0; i < st->nshards; i++)
            cancels += get(&st->shards[i].routes[r].cancels);
        cJSON_AddNumberToObject(o, "requests", (double)stats_route_requests(st, r));
        cJSON_AddNumberToObject(o, "cancels", (double)cancels);
        for (unsigned code = STATS_STATUS_MIN; code <= STATS_STATUS_MAX; code++) {
            uint64_t n = stats_route_status(st, r, code);
            char key[8];
            if (!n)
                continue;
            snprintf(key, sizeof key, "%u", code);
            cJSON_AddNumberToObject(by, key, (double)n);
        }
    }
    cJSON_AddItemToObject(root, "routes", routes);
    routes = NULL;
    out = cJSON_PrintUnformatted(root);
done:
    cJSON_Delete(routes);
    cJSON_Delete(root);
    return out;
}
