#include "route.h"

#include <stdio.h>
#include <string.h>

#include "timer.h"

static const char ct_text[] = "text/plain";
static const char ct_json[] = "application/json";

static void add(struct route_table *t, const char *path, const char *method, enum route_kind kind,
                const char *body, const struct delay_spec *delay)
{
    struct route *r = &t->routes[t->count];
    memset(r, 0, sizeof *r);
    r->path = path;
    r->method = method;
    r->kind = kind;
    r->status = 200;
    r->content_type = ct_text;
    r->body = body;
    r->body_len = body ? strlen(body) : 0;
    r->counted = 1;
    if (delay) {
        r->delayed = 1;
        r->delay = *delay;
        if (delay_spec_is_fixed(delay)) {
            char ms[32];
            delay_format_ms(delay_spec_draw(delay, 0, 0, 0), ms, sizeof ms);
            snprintf(r->timing, sizeof r->timing, "delay;dur=%s", ms);
        }
    }
    atomic_init(&t->seq[t->count], 0);
    t->count++;
}

void route_table_init(struct route_table *t, const struct config *cfg)
{
    t->count = 0;
    t->seed = cfg->seed;
    add(t, "/test", "GET", ROUTE_STATIC, "ok", &cfg->delay);
    add(t, "/write", "POST", ROUTE_UPLOAD, NULL, NULL);
    add(t, "/", NULL, ROUTE_STATIC, "OK", NULL);
    add(t, "/echo", NULL, ROUTE_STATIC, "OK", NULL);
    add(t, "/healthz", "GET", ROUTE_STATIC, "ok", NULL);
    t->routes[t->count - 1].counted = 0;
    add(t, "/stats", "GET", ROUTE_STATS, NULL, NULL);
    t->routes[t->count - 1].counted = 0;
    t->routes[t->count - 1].content_type = ct_json;
}

size_t route_stats_count(const struct route_table *t)
{
    return t->count + 1;
}

char *route_stats_json(const struct route_table *t, const struct stats *st, uint64_t started_us)
{
    const char *names[ROUTE_MAX + 1];
    for (size_t i = 0; i < t->count; i++)
        names[i] = t->routes[i].path;
    names[t->count] = "other";
    return stats_to_json(st, names, t->count + 1, (double)(timer_now_us() - started_us) / 1e6);
}

size_t route_error_json(char *buf, size_t len, unsigned status, const char *msg)
{
    int n = snprintf(buf, len, "{\"error\": \"%s\", \"status\": %u}", msg, status);
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len - 1;
}

static int method_matches(const char *want, const char *method)
{
    if (!want || strcmp(want, method) == 0)
        return 1;
    return strcmp(want, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

static void plan_error(struct plan *out, unsigned status, const char *msg)
{
    out->action = PLAN_RESPOND;
    out->status = status;
    out->content_type = ct_json;
    out->body_len = route_error_json(out->text, sizeof out->text, status, msg);
    out->body = out->text;
}

void route_plan(struct route_table *t, const char *method, const char *path, size_t path_len,
                struct plan *out)
{
    const char *q = memchr(path, '?', path_len);
    if (q)
        path_len = (size_t)(q - path);

    out->route = NULL;
    out->stats_id = ROUTE_STATS_OTHER(t);
    out->delay_us = 0;
    out->timing = NULL;
    out->allow = NULL;
    out->cacheable = 0;

    const struct route *r = NULL;
    for (size_t i = 0; i < t->count; i++) {
        if (strlen(t->routes[i].path) == path_len &&
            memcmp(t->routes[i].path, path, path_len) == 0) {
            r = &t->routes[i];
            break;
        }
    }
    if (!r) {
        plan_error(out, 404, "no such route; try /test, /write, /echo or /healthz");
        return;
    }
    if (!method_matches(r->method, method)) {
        char msg[64];
        snprintf(msg, sizeof msg, "method not allowed; use %s", r->method);
        plan_error(out, 405, msg);
        out->allow = strcmp(r->method, "GET") == 0 ? "GET, HEAD" : r->method;
        return;
    }

    size_t id = (size_t)(r - t->routes);
    out->route = r;
    out->route_id = id;
    out->stats_id = r->counted ? id : STATS_UNCOUNTED;
    out->status = r->status;
    out->content_type = r->content_type;
    out->body = r->body;
    out->body_len = r->body_len;
    out->action = r->kind == ROUTE_UPLOAD  ? PLAN_UPLOAD
                  : r->kind == ROUTE_STATS ? PLAN_STATS
                                           : PLAN_RESPOND;
    out->cacheable = r->kind == ROUTE_STATIC;
    if (!r->delayed)
        return;
    if (r->timing[0]) {
        out->delay_us = r->delay.a_us;
        out->timing = r->timing;
        return;
    }
    /* A random delay: number the request within its route so the draw is reproducible. */
    uint64_t index = atomic_fetch_add_explicit(&t->seq[id], 1, memory_order_relaxed);
    char ms[32];
    out->delay_us = delay_spec_draw(&r->delay, t->seed, id, index);
    delay_format_ms(out->delay_us, ms, sizeof ms);
    snprintf(out->timing_buf, sizeof out->timing_buf, "delay;dur=%s", ms);
    out->timing = out->timing_buf;
    out->cacheable = 0;
}

const char *route_reason(unsigned status)
{
    static const struct {
        unsigned status;
        const char *reason;
    } reasons[] = {
        {100, "Continue"},
        {200, "OK"},
        {201, "Created"},
        {202, "Accepted"},
        {204, "No Content"},
        {301, "Moved Permanently"},
        {302, "Found"},
        {304, "Not Modified"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {413, "Content Too Large"},
        {414, "URI Too Long"},
        {415, "Unsupported Media Type"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
    };
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Unknown";
}
