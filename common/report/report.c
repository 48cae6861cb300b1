#include "report/report.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "control/control.h"
#include "control/scenario.h"
#include "run/wsloop.h"

struct report_ctx {
    struct service *s;
    const struct route_table *t;
};

/* The WebSocket sockets (run/wsloop.h): open now, adopted, messages each way, the closes for a
 * flood, and every socket's end by close code. */
static void add_websocket(const struct service *s, cJSON *root)
{
    struct wsloop_counts c;
    wsloop_counts(s->ws, &c);
    cJSON *o = cJSON_AddObjectToObject(root, "websocket");
    cJSON *closes = o ? cJSON_AddObjectToObject(o, "closes") : NULL;
    if (!closes)
        return;
    cJSON_AddNumberToObject(o, "open", (double)c.open);
    cJSON_AddNumberToObject(o, "opened", (double)c.opened);
    cJSON_AddNumberToObject(o, "messages_in", (double)c.messages_in);
    cJSON_AddNumberToObject(o, "messages_out", (double)c.messages_out);
    cJSON_AddNumberToObject(o, "budget_closes", (double)c.budget);
    char code[8];
    for (size_t i = 0; i < WSLOOP_CODES; i++) {
        if (!c.closes[i])
            continue;
        snprintf(code, sizeof code, "%zu", 1000 + i);
        cJSON_AddNumberToObject(closes, code, (double)c.closes[i]);
    }
    if (c.closes_other)
        cJSON_AddNumberToObject(closes, "other", (double)c.closes_other);
}

/* The same for Prometheus, appended to text (len bytes used of it). Returns the new text, or
 * NULL (text freed) when out of memory. */
static char *metrics_websocket(const struct service *s, char *text, size_t len)
{
    struct wsloop_counts c;
    wsloop_counts(s->ws, &c);
    char tail[2400];
    int n = snprintf(tail, sizeof tail,
                     "# HELP slowsrv_websocket_open WebSocket sockets open.\n"
                     "# TYPE slowsrv_websocket_open gauge\nslowsrv_websocket_open %llu\n"
                     "# HELP slowsrv_websocket_opened_total WebSocket sockets opened (101).\n"
                     "# TYPE slowsrv_websocket_opened_total counter\n"
                     "slowsrv_websocket_opened_total %llu\n"
                     "# HELP slowsrv_websocket_messages_total WebSocket messages, by direction.\n"
                     "# TYPE slowsrv_websocket_messages_total counter\n"
                     "slowsrv_websocket_messages_total{direction=\"in\"} %llu\n"
                     "slowsrv_websocket_messages_total{direction=\"out\"} %llu\n"
                     "# HELP slowsrv_websocket_budget_closes_total WebSocket sockets closed 1008 "
                     "for a flood of frames.\n"
                     "# TYPE slowsrv_websocket_budget_closes_total counter\n"
                     "slowsrv_websocket_budget_closes_total %llu\n"
                     "# HELP slowsrv_websocket_closes_total WebSocket sockets ended, by close "
                     "code.\n"
                     "# TYPE slowsrv_websocket_closes_total counter\n",
                     (unsigned long long)c.open, (unsigned long long)c.opened,
                     (unsigned long long)c.messages_in, (unsigned long long)c.messages_out,
                     (unsigned long long)c.budget);
    for (size_t i = 0; n > 0 && (size_t)n < sizeof tail && i <= WSLOOP_CODES; i++) {
        uint64_t v = i < WSLOOP_CODES ? c.closes[i] : c.closes_other;
        if (!v)
            continue;
        char code[8];
        snprintf(code, sizeof code, "%zu", 1000 + i);
        n += snprintf(tail + n, sizeof tail - (size_t)n,
                      "slowsrv_websocket_closes_total{code=\"%s\"} %llu\n",
                      i < WSLOOP_CODES ? code : "other", (unsigned long long)v);
    }
    if (n < 0 || (size_t)n >= sizeof tail)
        return text;
    char *out = realloc(text, len + (size_t)n + 1);
    if (!out) {
        free(text);
        return NULL;
    }
    memcpy(out + len, tail, (size_t)n + 1);
    return out;
}

/* What /stats shows of the live table, the scenario and the configuration (the /ui page). */
static void add_live(void *ctx, cJSON *root)
{
    struct report_ctx *rc = ctx;
    struct service *s = rc->s;
    cJSON *c = cJSON_AddObjectToObject(root, "control");
    if (!c)
        return;
    cJSON_AddBoolToObject(c, "live", s->live_enabled);
    if (s->control_url[0])
        cJSON_AddStringToObject(c, "url", s->control_url);
    else
        cJSON_AddNullToObject(c, "url");
    cJSON_AddBoolToObject(c, "token", s->cfg->control_bearer[0] != '\0');
    cJSON_AddNumberToObject(c, "generation", (double)rc->t->generation);
    cJSON_AddNumberToObject(c, "changes", (double)atomic_load(&s->changes));
    if (s->scenario)
        scenario_report(s->scenario, root);
    add_websocket(s, root);
    cJSON *cfg = cJSON_AddObjectToObject(root, "config");
    cJSON *routes = cfg ? cJSON_AddArrayToObject(cfg, "routes") : NULL;
    if (!routes)
        return;
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)s->cfg->seed);
    cJSON_AddStringToObject(cfg, "seed", seed); /* a string: 64 bits do not fit a double */
    cJSON_AddBoolToObject(cfg, "seed_given", s->cfg->seed_set);
    cJSON_AddNumberToObject(cfg, "workers", s->cfg->workers);
    cJSON_AddNumberToObject(cfg, "queue", s->cfg->queue);
    cJSON_AddStringToObject(cfg, "file", s->cfg->config_file);
    cJSON *rl = cJSON_AddObjectToObject(cfg, "reloads");
    if (rl) {
        cJSON_AddNumberToObject(rl, "ok", (double)atomic_load(&s->reloads_ok));
        cJSON_AddNumberToObject(rl, "error", (double)atomic_load(&s->reloads_error));
        pthread_mutex_lock(&s->reload_lock);
        cJSON_AddStringToObject(rl, "last_error", s->reload_error);
        cJSON_AddStringToObject(rl, "needs_restart", s->needs_restart);
        pthread_mutex_unlock(&s->reload_lock);
    }
    for (size_t i = 0; i < rc->t->count; i++) {
        const struct route *r = &rc->t->routes[i];
        cJSON *o = r->counted ? control_route_json(r) : NULL;
        if (!o)
            continue;
        cJSON_DeleteItemFromObject(o, "body");
        struct pool *p = r->workers ? s->route_pools[r->slot] : NULL;
        if (p) {
            struct pool_counts pc;
            pool_counts_get(p, &pc);
            cJSON *w = cJSON_AddObjectToObject(o, "pool");
            cJSON_AddNumberToObject(w, "active", pc.active);
            cJSON_AddNumberToObject(w, "queued", pc.queued);
            cJSON_AddNumberToObject(w, "rejected", (double)pc.rejected);
        }
        cJSON_AddItemToArray(routes, o);
    }
}

char *report_text(const struct service *cs, enum plan_action what)
{
    struct service *s = (struct service *)(uintptr_t)cs; /* its table is counted while read */
    struct route_table *t = service_table_acquire(s, s->nshards);
    uint64_t since = atomic_load(&s->limit_since), now = timer_now_us();
    uint64_t at_limit_us = atomic_load(&s->limit_us) + (since && now > since ? now - since : 0);
    struct stats_conns c = {atomic_load(&s->connections), s->max_connections,
                            atomic_load(&s->limit_reached), (double)at_limit_us / 1e6};
    /* The names by slot: a live table's routes may hold any of the service's slots. */
    size_t nnames = s->nslots;
    const char **names = calloc(nnames, sizeof *names);
    struct pool_counts pc = {0, 0, 0, 0}, one;
    int pools = 0;
    if (!names) {
        service_table_release(s, t, s->nshards);
        return NULL;
    }
    for (size_t i = 0; i < t->count; i++)
        names[t->routes[i].slot] = t->routes[i].path;
    names[t->other_slot] = "other";
    /* The global pool and the routes' own pools, added up. */
    for (size_t i = 0; i <= s->nslots; i++) {
        struct pool *p = i < s->nslots ? s->route_pools[i] : s->pool;
        if (!p)
            continue;
        pool_counts_get(p, &one);
        pc.workers += one.workers;
        pc.active += one.active;
        pc.queued += one.queued;
        pc.rejected += one.rejected;
        pools = 1;
    }
    double uptime = (double)(timer_now_us() - s->started_us) / 1e6;
    char *out;
    if (what == PLAN_METRICS) {
        char *text = stats_to_prometheus(s->stats, names, nnames, uptime, pools ? &pc : NULL, &c);
        int running = 0, phase = scenario_phase(s->scenario, &running);
        char tail[1600];
        int n = snprintf(tail, sizeof tail,
                         "# HELP slowsrv_control_changes_total Changes of the routes made by the "
                         "control API or the scenario.\n"
                         "# TYPE slowsrv_control_changes_total counter\n"
                         "slowsrv_control_changes_total %llu\n"
                         "# HELP slowsrv_generation Generation of the live route table (1 at the "
                         "start).\n"
                         "# TYPE slowsrv_generation gauge\nslowsrv_generation %llu\n"
                         "# HELP slowsrv_scenario_phase Index of the scenario phase in force, -1 "
                         "before the first or with no scenario.\n"
                         "# TYPE slowsrv_scenario_phase gauge\nslowsrv_scenario_phase %d\n"
                         "# HELP slowsrv_scenario_running 1 while the scenario runs.\n"
                         "# TYPE slowsrv_scenario_running gauge\nslowsrv_scenario_running %d\n"
                         "# HELP slowsrv_config_reloads_total Reloads of the config file (SIGHUP, "
                         "a change of the file), by result.\n"
                         "# TYPE slowsrv_config_reloads_total counter\n"
                         "slowsrv_config_reloads_total{result=\"ok\"} %llu\n"
                         "slowsrv_config_reloads_total{result=\"error\"} %llu\n",
                         (unsigned long long)atomic_load(&s->changes),
                         (unsigned long long)t->generation, phase, running,
                         (unsigned long long)atomic_load(&s->reloads_ok),
                         (unsigned long long)atomic_load(&s->reloads_error));
        size_t len = text ? strlen(text) : 0;
        out = text && n > 0 ? realloc(text, len + (size_t)n + 1) : NULL;
        if (out) {
            memcpy(out + len, tail, (size_t)n + 1);
            out = metrics_websocket(s, out, len + (size_t)n);
        } else {
            free(text);
        }
    } else {
        struct report_ctx rc = {s, t};
        out = stats_to_json_with(s->stats, names, nnames, uptime, pools ? &pc : NULL, &c, add_live,
                                 &rc);
    }
    free(names);
    service_table_release(s, t, s->nshards);
    return out;
}
