#include "control/control.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/timer.h"
#include "control/api.h"
#include "control/scenario.h"

void control_list_free(struct control_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        config_route_free(&l->r[i]);
    free(l->r);
    l->r = NULL;
    l->n = l->cap = 0;
}

/* Room for `want` routes in l. 0 or -ENOMEM. */
static int reserve(struct control_list *l, size_t want)
{
    if (want <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : 8;
    while (cap < want)
        cap *= 2;
    struct config_route *r = realloc(l->r, cap * sizeof *r);
    if (!r)
        return -ENOMEM;
    l->r = r;
    l->cap = cap;
    return 0;
}

int control_list_add(struct control_list *l, struct config_route *r)
{
    if (l->n >= CONFIG_ROUTES_MAX)
        return -ENOSPC;
    if (reserve(l, l->n + 1) != 0)
        return -ENOMEM;
    l->r[l->n++] = *r;
    memset(r, 0, sizeof *r);
    return 0;
}

int control_list_of(struct control_list *l, const struct route_table *t)
{
    const struct config_route *src = t->owned ? t->owned : t->cfg->routes;
    size_t n = t->owned ? t->nowned : t->cfg->nroutes;
    *l = (struct control_list){0};
    /* One more than it holds: most changes add one route. */
    if (reserve(l, n + 1) != 0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (config_route_copy(&l->r[i], &src[i]) != 0) {
            control_list_free(l);
            return -ENOMEM;
        }
        l->n++;
    }
    return 0;
}

long control_list_find(const struct control_list *l, const char *path)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->r[i].path, path) == 0)
            return (long)i;
    return -1;
}

int control_list_edit(struct control_list *l, const struct route_table *t, const char *path,
                      control_edit_fn edit, void *ctx, uint64_t max_delay_us, char *why,
                      size_t whylen)
{
    long at = route_find(t, path);
    if (at < 0)
        return -ENOENT;
    if (!route_editable(&t->routes[at]))
        return -EPERM;
    struct config_route next;
    long i = control_list_find(l, path);
    int rc;
    if (i >= 0) {
        rc = config_route_copy(&next, &l->r[i]);
    } else {
        /* A built-in route, changed for the first time: it becomes a config route. */
        struct config_route d;
        route_describe(&t->routes[at], &d);
        rc = config_route_copy(&next, &d);
    }
    if (rc != 0)
        return rc;
    rc = edit(&next, ctx, why, whylen);
    if (rc == 0)
        rc = config_route_check(&next, max_delay_us, why, whylen);
    if (rc != 0) {
        config_route_free(&next);
        return rc;
    }
    if (i >= 0) {
        config_route_free(&l->r[i]);
        l->r[i] = next;
    } else if ((rc = control_list_add(l, &next)) != 0) {
        config_route_free(&next);
        if (rc == -ENOSPC) {
            snprintf(why, whylen, "path: the table holds %d routes, its limit; delete one first",
                     CONFIG_ROUTES_MAX);
            rc = -EINVAL;
        }
        return rc;
    }
    return 0;
}

int control_engine_refuses(const struct config *cfg, const struct config_route *r, char *why,
                           size_t whylen)
{
    if (!r->pace.read_rate || !cfg->whole_bodies)
        return 0;
    snprintf(why, whylen, "read-rate: %s", cfg->whole_bodies);
    return -EINVAL;
}

int control_edit_json(struct config_route *r, void *json, char *why, size_t whylen)
{
    return config_route_apply(r, json, 0, why, whylen);
}

/* pace_describe's writer: one string member of the object ctx. */
static void add_string(void *ctx, const char *key, const char *value)
{
    cJSON_AddStringToObject(ctx, key, value);
}

cJSON *control_route_json(const struct route *r)
{
    cJSON *o = cJSON_CreateObject();
    char buf[512];
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "path", r->path);
    cJSON_AddStringToObject(o, "method", r->method ? r->method : "*");
    cJSON_AddStringToObject(o, "kind",
                            r->kind == ROUTE_UPLOAD    ? "upload"
                            : r->kind == ROUTE_STATS   ? "stats"
                            : r->kind == ROUTE_METRICS ? "metrics"
                                                       : "static");
    cJSON_AddBoolToObject(o, "editable", route_editable(r));
    cJSON_AddNumberToObject(o, "status", r->status);
    if (r->kind == ROUTE_STATIC)
        cJSON_AddNumberToObject(o, "body_size", (double)r->body_len);
    if (route_editable(r))
        cJSON_AddStringToObject(o, "body", r->body ? r->body : "");
    if (r->delayed) {
        delay_spec_format(&r->delay, buf, sizeof buf);
        cJSON_AddStringToObject(o, "delay", buf);
    }
    if (r->drip.chunks) {
        char ms[32];
        delay_format_ms(r->drip.over_us, ms, sizeof ms);
        snprintf(buf, sizeof buf, "%u,%sms", r->drip.chunks, ms);
        cJSON_AddStringToObject(o, "drip", buf);
    }
    if (r->stream.format != STREAM_NONE) {
        char sbuf[640];
        stream_spec_format(&r->stream, sbuf, sizeof sbuf);
        cJSON_AddStringToObject(o, "stream", sbuf);
    }
    if (r->ws.on) {
        char wbuf[1200];
        ws_spec_format(&r->ws, wbuf, sizeof wbuf);
        cJSON_AddStringToObject(o, "websocket", wbuf);
    }
    static const char *const faults[] = {"none", "close", "reset", "truncate"};
    if (r->fault != CONFIG_FAULT_NONE)
        cJSON_AddStringToObject(o, "fault", faults[r->fault]);
    pace_describe(&r->pace, add_string, o);
    if (r->workers) {
        cJSON_AddNumberToObject(o, "workers", r->workers);
        cJSON_AddNumberToObject(o, "queue", r->queue);
    }
    if (r->kind == ROUTE_STATIC && r->counted) {
        cJSON_AddNumberToObject(o, "error-rate", r->error_rate);
        cJSON_AddNumberToObject(o, "error-status", r->error_status);
    }
    if (route_editable(r) && (r->nheaders || strcmp(r->content_type, "text/plain") != 0)) {
        cJSON *h = cJSON_AddObjectToObject(o, "headers");
        for (size_t i = 0; h && i < r->nheaders; i++)
            cJSON_AddStringToObject(h, r->headers[i].name, r->headers[i].value);
        if (h && r->kind == ROUTE_STATIC && strcmp(r->content_type, "text/plain") != 0)
            cJSON_AddStringToObject(h, "Content-Type", r->content_type);
    }
    return o;
}

/* A route of t as one line of JSON for the log, "none" if t has no such route. */
static void route_line(const struct route_table *t, const char *path, char *buf, size_t len)
{
    long i = path ? route_find(t, path) : -1;
    cJSON *o = i >= 0 ? control_route_json(&t->routes[i]) : NULL;
    if (o)
        cJSON_DeleteItemFromObject(o, "body");
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    snprintf(buf, len, "%s", s ? s : "none");
    free(s);
    cJSON_Delete(o);
}

long long control_publish(struct control *c, const struct control_list *l, const char *who,
                          const char *what, const char *path, const struct route_table *before)
{
    char was[1024], now[1024];
    route_line(before, path, was, sizeof was);
    uint64_t from = before->generation;
    long long gen = service_publish(c->svc, l->r, l->n);
    if (gen < 0)
        return gen;
    route_line(service_live(c->svc), path, now, sizeof now);
    LOG(c->log, LOG_LEVEL_INFO, "control: %s: %s: generation %llu -> %lld: before %s after %s", who,
        what, (unsigned long long)from, gen, was, now);
    return gen;
}

/* Starts the scenario as the loaded config says: at an instant, now, or not (POST
 * /scenario/start). */
static void start_scenario(struct control *c, const char *who)
{
    if (!scenario_phases(c->scenario))
        return;
    if (c->scenario_at > 0)
        scenario_start_at(c->scenario, c->scenario_at, who);
    else if (!c->scenario_manual)
        scenario_start(c->scenario, who);
}

void control_start(struct control *c)
{
    start_scenario(c, "start");
}

long long control_reload(struct control *c, const struct config *next, uint64_t *from, char *why,
                         size_t whylen)
{
    struct control_list l = {0};
    struct route_table *base = malloc(sizeof *base);
    char *json = next->scenario ? strdup(next->scenario) : NULL;
    int rc = base && (json || !next->scenario) ? 0 : -ENOMEM;
    int base_made = 0;
    for (size_t i = 0; rc == 0 && i < next->nroutes; i++) {
        struct config_route r;
        rc = config_route_copy(&r, &next->routes[i]);
        if (rc == 0 && (rc = control_list_add(&l, &r)) != 0)
            config_route_free(&r);
    }
    if (rc == 0 &&
        (rc = route_table_init_routes(base, next, next->routes, next->nroutes, 0)) == 0) {
        base_made = 1;
        base->cfg = &c->svc->next_cfg; /* next goes once this returns; the table owns its routes */
    }
    int scenario_changed =
        c->scenario &&
        (c->scenario_manual != next->scenario_manual || c->scenario_at != next->scenario_at ||
         (json ? !c->scenario_json || strcmp(json, c->scenario_json) != 0
               : c->scenario_json != NULL));
    if (rc != 0)
        snprintf(why, whylen, "out of memory");
    long long gen = rc;
    if (rc == 0) {
        service_change_lock(c->svc);
        *from = service_live(c->svc)->generation;
        struct config was = c->svc->next_cfg; /* to undo the live options on a failure */
        service_set_live(c->svc, next);
        gen = service_publish(c->svc, l.r, l.n);
        if (gen >= 0) {
            struct route_table *old = c->base;
            c->base = base;
            base = old;
        } else {
            service_set_live(c->svc, &was);
        }
        service_change_unlock(c->svc);
        if (gen < 0)
            snprintf(why, whylen, "%s",
                     gen == -ENOSPC ? "too many generations still answering; try again"
                                    : "out of memory");
    }
    /* A new scenario replaces the old one, and starts as it says; one that did not change goes
     * on, its phases so far applied again over the new routes. */
    if (gen >= 0 && scenario_changed && scenario_replace(c->scenario, json, why, whylen) == 0) {
        free(c->scenario_json);
        c->scenario_json = json;
        json = NULL;
        c->scenario_manual = next->scenario_manual;
        c->scenario_at = next->scenario_at;
        start_scenario(c, "config");
    } else if (gen >= 0 && scenario_changed) {
        LOG(c->log, LOG_LEVEL_WARN, "control: config: the scenario was not replaced: %s", why);
    } else if (gen >= 0 && c->scenario) {
        scenario_reapply(c->scenario, "config");
    }
    if (gen >= 0) {
        /* Swapped above: base is the one that was in place, made here by a reload or NULL. */
        base_made = base != NULL;
    }
    if (base && base_made)
        route_table_cleanup(base);
    free(base);
    free(json);
    control_list_free(&l);
    return gen;
}
