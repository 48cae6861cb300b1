#include "run/service.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <stdint.h>

#include "base/timer.h"
#include "run/wsloop.h"

static struct pool *new_pool(unsigned workers, unsigned queue, int *rc)
{
    struct pool *p = malloc(sizeof *p);
    *rc = p ? pool_init(p, workers, queue) : -ENOMEM;
    if (*rc != 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void free_pool(struct pool **p)
{
    if (*p) {
        pool_cleanup(*p);
        free(*p);
        *p = NULL;
    }
}

/* users[shard][holder] */
static _Atomic long *users_of(struct service *s, size_t shard, unsigned holder)
{
    return &s->users[shard * SERVICE_GENERATIONS + holder];
}

int service_init(struct service *s, const struct config *cfg, size_t nshards,
                 struct accesslog *access)
{
    int rc = 0;
    s->stats = NULL;
    s->pool = NULL;
    s->cfg = cfg;
    s->nshards = nshards ? nshards : 1;
    /* A config file may be reloaded (SIGHUP, a change of the file): its routes can change. */
    s->live_enabled =
        cfg->control_host[0] != '\0' || cfg->scenario != NULL || cfg->config_file[0] != '\0';
    s->next_cfg = *cfg;
    s->next_cfg.routes = NULL;
    s->next_cfg.nroutes = 0;
    s->next_cfg.scenario = NULL;
    atomic_init(&s->reloads_ok, 0);
    atomic_init(&s->reloads_error, 0);
    pthread_mutex_init(&s->reload_lock, NULL);
    s->reload_error[0] = s->needs_restart[0] = '\0';
    atomic_init(&s->live, 0);
    atomic_init(&s->changes, 0);
    s->scenario = NULL;
    s->report = NULL;
    s->control = (struct service_control){0};
    s->main_port = 0;
    s->control_url[0] = '\0';
    s->users = NULL;
    for (size_t i = 0; i < SERVICE_GENERATIONS; i++)
        s->tables[i] = NULL;
    s->nslots = 0;
    s->route_pools = NULL;
    s->slot_path = NULL;
    s->slot_refs = NULL;
    s->seq = NULL;
    s->slot_index = (struct strmap){0};
    s->slot_hint = 0;
    pthread_mutex_init(&s->change_lock, NULL);
    s->access = access;
    s->ws = NULL;
    s->overflow_reset = cfg->overflow == CONFIG_OVERFLOW_RESET;
    s->max_connections = cfg->max_connections;
    s->max_requests = cfg->max_requests;
    atomic_init(&s->connections, 0);
    atomic_init(&s->limit_reached, 0);
    atomic_init(&s->limit_us, 0);
    atomic_init(&s->limit_since, 0);
    atomic_init(&s->stopping, 0);
    if (route_table_init(&s->routes, cfg) != 0) {
        pthread_mutex_destroy(&s->change_lock);
        pthread_mutex_destroy(&s->reload_lock);
        return -ENOMEM;
    }
    service_set_endpoints(s, 0, NULL, 0);
    s->routes.holder = 0;
    s->tables[0] = &s->routes;
    /* Zeroed by calloc: these are large, and a page of them costs memory once a slot on it is
     * used. */
    s->nslots = s->live_enabled ? SERVICE_SLOTS : route_stats_count(&s->routes);
    s->route_pools = calloc(s->nslots, sizeof *s->route_pools);
    if (!s->route_pools)
        rc = -ENOMEM;
    if (rc == 0 && s->live_enabled) {
        s->slot_path = calloc(s->nslots, sizeof *s->slot_path);
        s->slot_refs = calloc(s->nslots, sizeof *s->slot_refs);
        s->seq = calloc(s->nslots, sizeof *s->seq);
        if (!s->slot_path || !s->slot_refs || !s->seq ||
            strmap_init(&s->slot_index, 2 * route_stats_count(&s->routes)) != 0)
            rc = -ENOMEM;
    }
    if (rc == 0 && s->live_enabled) {
        size_t n = (s->nshards + 1) * SERVICE_GENERATIONS;
        s->users = aligned_alloc(64, (n * sizeof *s->users + 63) / 64 * 64);
        if (!s->users)
            rc = -ENOMEM;
        for (size_t i = 0; s->users && i < n; i++)
            atomic_init(&s->users[i], 0);
        /* Slots by path, kept across generations; the draw indexes go on from one to the next. */
        s->routes.seq = s->seq;
        for (size_t i = 0; rc == 0 && i < s->routes.count; i++) {
            s->slot_path[i] = strdup(s->routes.routes[i].path);
            s->slot_refs[i] = 1;
            if (!s->slot_path[i] ||
                strmap_put(&s->slot_index, s->slot_path[i], strlen(s->slot_path[i]), i) != 0)
                rc = -ENOMEM;
        }
        s->slot_refs[s->routes.other_slot] = 1; /* "other" is never given to a path */
        s->slot_hint = s->routes.other_slot + 1;
    }
    if (rc == 0 && cfg->workers)
        s->pool = new_pool(cfg->workers, cfg->queue, &rc);
    /* A route with "workers" has a pool of its own instead of the global one. */
    for (size_t i = 0; rc == 0 && i < s->routes.count; i++)
        if (s->routes.routes[i].workers)
            s->route_pools[i] =
                new_pool(s->routes.routes[i].workers, s->routes.routes[i].queue, &rc);
    s->started_us = timer_now_us();
    if (rc == 0)
        s->stats = stats_new(nshards, s->nslots);
    if (!s->stats) {
        service_cleanup(s);
        return -ENOMEM;
    }
    return 0;
}

void service_cleanup(struct service *s)
{
    wsloop_stop(s->ws);
    s->ws = NULL;
    for (size_t i = 0; i < SERVICE_GENERATIONS; i++) {
        if (s->tables[i] && s->tables[i] != &s->routes) {
            route_table_cleanup(s->tables[i]);
            free(s->tables[i]);
        }
        s->tables[i] = NULL;
    }
    route_table_cleanup(&s->routes);
    free(s->users);
    s->users = NULL;
    strmap_cleanup(&s->slot_index);
    for (size_t i = 0; s->slot_path && i < s->nslots; i++)
        free(s->slot_path[i]);
    free(s->slot_path);
    s->slot_path = NULL;
    free(s->slot_refs);
    s->slot_refs = NULL;
    free(s->seq);
    s->seq = NULL;
    pthread_mutex_destroy(&s->change_lock);
    pthread_mutex_destroy(&s->reload_lock);
    free_pool(&s->pool);
    for (size_t i = 0; s->route_pools && i < s->nslots; i++)
        free_pool(&s->route_pools[i]);
    free(s->route_pools);
    s->route_pools = NULL;
    stats_free(s->stats);
    s->stats = NULL;
}

struct pool *service_pool_of(const struct service *s, const struct plan *p)
{
    if (!p->route || p->stats_id == STATS_UNCOUNTED)
        return NULL;
    return p->route->workers && s->route_pools[p->route->slot] ? s->route_pools[p->route->slot]
                                                               : s->pool;
}

void service_flush(struct service *s)
{
    if (s->pool)
        pool_flush(s->pool);
    for (size_t i = 0; i < s->nslots; i++)
        if (s->route_pools[i])
            pool_flush(s->route_pools[i]);
}

struct route_table *service_table_acquire(struct service *s, size_t shard)
{
    if (!s->live_enabled)
        return &s->routes;
    shard = shard < s->nshards ? shard : s->nshards;
    for (;;) {
        unsigned h = atomic_load_explicit(&s->live, memory_order_acquire);
        _Atomic long *u = users_of(s, shard, h);
        atomic_fetch_add_explicit(u, 1, memory_order_seq_cst);
        /* Still live after the count: a change that retires it from now on sees the count, and
         * tables[h] is not freed or reused under us. */
        if (atomic_load_explicit(&s->live, memory_order_seq_cst) == h)
            return s->tables[h];
        atomic_fetch_sub_explicit(u, 1, memory_order_release);
    }
}

void service_table_release(struct service *s, struct route_table *t, size_t shard)
{
    if (!s->live_enabled || !t)
        return;
    shard = shard < s->nshards ? shard : s->nshards;
    atomic_fetch_sub_explicit(users_of(s, shard, t->holder), 1, memory_order_release);
}

void service_change_lock(struct service *s)
{
    pthread_mutex_lock(&s->change_lock);
}

void service_change_unlock(struct service *s)
{
    pthread_mutex_unlock(&s->change_lock);
}

struct route_table *service_live(struct service *s)
{
    return s->tables[atomic_load(&s->live)];
}

static int table_in_use(struct service *s, unsigned h)
{
    if (h == atomic_load(&s->live))
        return 1;
    for (size_t sh = 0; sh <= s->nshards; sh++)
        if (atomic_load_explicit(users_of(s, sh, h), memory_order_seq_cst) != 0)
            return 1;
    return 0;
}

static void slot_unref(struct service *s, size_t slot)
{
    if (slot < s->nslots && s->slot_refs[slot] && --s->slot_refs[slot] == 0) {
        if (s->slot_path[slot])
            strmap_del(&s->slot_index, s->slot_path[slot], strlen(s->slot_path[slot]));
        free(s->slot_path[slot]);
        s->slot_path[slot] = NULL;
        if (slot < s->slot_hint)
            s->slot_hint = slot;
    }
}

void service_reclaim(struct service *s)
{
    if (!s->live_enabled)
        return;
    for (unsigned h = 0; h < SERVICE_GENERATIONS; h++) {
        struct route_table *t = s->tables[h];
        if (!t || table_in_use(s, h))
            continue;
        for (size_t i = 0; i < t->count; i++)
            slot_unref(s, t->routes[i].slot);
        if (t != &s->routes) {
            route_table_cleanup(t);
            free(t);
        }
        s->tables[h] = NULL;
    }
}

/* Room in the slot index for one more path: a map twice as large when it is full. 0 or
 * -ENOMEM. */
static int slot_index_room(struct service *s)
{
    if (s->slot_index.count < s->slot_index.max)
        return 0;
    struct strmap bigger;
    if (strmap_init(&bigger, 2 * s->slot_index.max) != 0)
        return -ENOMEM;
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slot_path[i])
            strmap_put(&bigger, s->slot_path[i], strlen(s->slot_path[i]), i);
    strmap_cleanup(&s->slot_index);
    s->slot_index = bigger;
    return 0;
}

/* The slot of `path`: the one it holds, else the lowest free one (its counters zeroed). */
static long slot_for(struct service *s, const char *path)
{
    long held = strmap_get(&s->slot_index, path, strlen(path));
    if (held >= 0)
        return held;
    size_t i = s->slot_hint;
    while (i < s->nslots && s->slot_refs[i])
        i++;
    if (i == s->nslots || slot_index_room(s) != 0)
        return -1;
    s->slot_path[i] = strdup(path);
    if (!s->slot_path[i])
        return -1;
    strmap_put(&s->slot_index, s->slot_path[i], strlen(s->slot_path[i]), i);
    s->slot_hint = i + 1;
    stats_route_zero(s->stats, i);
    atomic_store(&s->seq[i], 0);
    return (long)i;
}

long long service_publish(struct service *s, const struct config_route *routes, size_t n)
{
    if (!s->live_enabled)
        return -EPERM;
    service_reclaim(s);
    unsigned h = 0;
    while (h < SERVICE_GENERATIONS && s->tables[h])
        h++;
    if (h == SERVICE_GENERATIONS)
        return -ENOSPC;
    struct route_table *cur = service_live(s);
    struct route_table *t = malloc(sizeof *t);
    if (!t)
        return -ENOMEM;
    if (route_table_init_routes(t, &s->next_cfg, routes, n, cur->generation + 1) != 0) {
        free(t);
        return -ENOMEM;
    }
    t->holder = h;
    route_table_set_csp(t, s->ui_csp);
    t->seq = s->seq;
    t->filler = &s->routes.own_filler;
    t->other_slot = s->routes.other_slot;
    int rc = 0;
    size_t nrefs = 0; /* routes of t counted in slot_refs, from the first */
    for (size_t i = 0; i < t->count && rc == 0; i++) {
        struct route *r = &t->routes[i];
        long slot = slot_for(s, r->path);
        if (slot < 0) {
            rc = -ENOSPC;
            break;
        }
        s->slot_refs[slot]++;
        nrefs++;
        r->slot = (size_t)slot;
        if (r->workers && s->route_pools[slot])
            pool_resize(s->route_pools[slot], r->workers, r->queue);
        else if (r->workers)
            s->route_pools[slot] = new_pool(r->workers, r->queue, &rc);
    }
    if (rc != 0) {
        for (size_t i = 0; i < nrefs; i++)
            slot_unref(s, t->routes[i].slot);
        route_table_cleanup(t);
        free(t);
        return rc;
    }
    s->tables[h] = t;
    atomic_store_explicit(&s->live, h, memory_order_seq_cst);
    atomic_fetch_add_explicit(&s->changes, 1, memory_order_relaxed);
    service_reclaim(s);
    return (long long)t->generation;
}

void service_set_live(struct service *s, const struct config *next)
{
    s->next_cfg.delay = next->delay;
    s->next_cfg.error_rate = next->error_rate;
    s->next_cfg.error_status = next->error_status;
}

void service_reloaded(struct service *s, int ok, const char *why, const char *needs_restart)
{
    atomic_fetch_add_explicit(ok ? &s->reloads_ok : &s->reloads_error, 1, memory_order_relaxed);
    pthread_mutex_lock(&s->reload_lock);
    if (ok)
        snprintf(s->needs_restart, sizeof s->needs_restart, "%s", needs_restart);
    snprintf(s->reload_error, sizeof s->reload_error, "%s", ok ? "" : why);
    pthread_mutex_unlock(&s->reload_lock);
}

void service_stop(struct service *s)
{
    atomic_store_explicit(&s->stopping, 1, memory_order_release);
    wsloop_going_away(s->ws);
}

int service_stopping(const struct service *s)
{
    return atomic_load_explicit(&s->stopping, memory_order_acquire);
}

/* The open connections reached the limit: a spell at it begins. */
static void limit_begin(struct service *s)
{
    uint64_t zero = 0;
    atomic_fetch_add_explicit(&s->limit_reached, 1, memory_order_relaxed);
    atomic_compare_exchange_strong(&s->limit_since, &zero, timer_now_us());
}

/* One closed at the limit: the spell ends. */
static void limit_end(struct service *s)
{
    uint64_t since = atomic_exchange(&s->limit_since, 0);
    if (since)
        atomic_fetch_add_explicit(&s->limit_us, timer_now_us() - since, memory_order_relaxed);
}

int service_conn_reserve(struct service *s)
{
    size_t before = atomic_fetch_add_explicit(&s->connections, 1, memory_order_relaxed);
    if (before < s->max_connections) {
        if (before + 1 == s->max_connections)
            limit_begin(s);
        return 0;
    }
    atomic_fetch_sub_explicit(&s->connections, 1, memory_order_relaxed);
    return -EBUSY;
}

int service_request_on_connection(const struct service *s, unsigned *requests)
{
    return ++*requests >= s->max_requests && s->max_requests;
}

void service_conn_closed(struct service *s)
{
    size_t before = atomic_fetch_sub_explicit(&s->connections, 1, memory_order_relaxed);
    if (before == s->max_connections)
        limit_end(s);
}

struct stats_shard *service_shard(struct service *s, size_t i)
{
    return stats_shard(s->stats, i);
}

void service_set_endpoints(struct service *s, unsigned main_port, const char *control_url,
                           unsigned control_port)
{
    s->main_port = main_port;
    s->control_port = control_url ? control_port : 0;
    snprintf(s->control_url, sizeof s->control_url, "%s", control_url ? control_url : "");
    /* The page may fetch its own origin and the control API, nothing else. */
    snprintf(s->ui_csp, sizeof s->ui_csp,
             "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
             "connect-src 'self'%s%s; base-uri 'none'; form-action 'none'; frame-ancestors "
             "'none'",
             s->control_url[0] ? " " : "", s->control_url);
    route_table_set_csp(&s->routes, s->ui_csp);
}

char *service_report(const struct service *s, enum plan_action what)
{
    return s->report ? s->report(s, what) : NULL;
}
