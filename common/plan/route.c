#include "plan/route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/timer.h"
#include "http/wshs.h"
#include "ui/ui.h"

static const char ct_text[] = "text/plain";
static const char ct_json[] = "application/json";

/* Streams of the counter-based generator, so different decisions on one request never share a
 * draw: the route's delay, an override's delay, the error-rate coin. */
#define STREAM_DELAY 0ULL
#define STREAM_OVERRIDE (1ULL << 32)
#define STREAM_ERROR (2ULL << 32)
#define STREAM_EVENTS (3ULL << 32)
#define STREAM_WS (4ULL << 32)

static void set_delay(struct route *r, const struct delay_spec *delay)
{
    r->delayed = 1;
    r->delay = *delay;
}

/* The Server-Timing value of an answer delayed `us` (delayed) planned by t: "delay;dur=1000",
 * and ", gen;desc=N" when the table is live. */
static void format_timing(const struct route_table *t, int delayed, uint64_t us, char *buf,
                          size_t len)
{
    char ms[32];
    int n = 0;
    buf[0] = '\0';
    if (delayed) {
        delay_format_ms(us, ms, sizeof ms);
        n = snprintf(buf, len, "delay;dur=%s", ms);
    }
    if (t->live && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%sgen;desc=%llu", n ? ", " : "",
                 (unsigned long long)t->generation);
}

/* A route's fixed Server-Timing value (a fixed delay; the generation), "" for a random delay. */
static void set_timing(const struct route_table *t, struct route *r)
{
    r->timing[0] = '\0';
    if (!r->counted && !r->delayed)
        return;
    if (!r->delayed || delay_spec_is_fixed(&r->delay))
        format_timing(t, r->delayed, r->delayed ? r->delay.a_us : 0, r->timing, sizeof r->timing);
}

/* Adds a route at a path the table does not hold yet; the table was made with room for it. */
static struct route *add(struct route_table *t, const char *path, const char *method,
                         enum route_kind kind, const char *body, const struct delay_spec *delay)
{
    struct route *r = &t->routes[t->count];
    memset(r, 0, sizeof *r);
    strmap_put(&t->index, path, strlen(path), t->count);
    r->path = path;
    r->match = PATHTRIE_EXACT;
    r->method = method;
    r->kind = kind;
    r->status = 200;
    r->content_type = ct_text;
    r->body = body;
    r->body_len = body ? strlen(body) : 0;
    r->counted = 1;
    r->error_rate = t->error_rate;
    r->error_status = t->error_status;
    r->slot = t->count;
    if (delay)
        set_delay(r, delay);
    t->count++;
    return r;
}

/* A config route replaces the built-in one of its path, or is added; a template or wildcard also
 * goes in the trie. Returns 0, -EEXIST for a template that matches the same paths as one added
 * before, or -ENOMEM. */
static int add_configured(struct route_table *t, const struct config_route *c)
{
    long at = route_find(t, c->path);
    struct route *r = at >= 0 ? &t->routes[at] : NULL;
    char why[8];
    int match = pathtrie_kind_of(c->path, why, sizeof why);
    if (!r && t->count == t->index.max)
        return 0;
    if (match == PATHTRIE_TEMPLATE || match == PATHTRIE_WILDCARD) {
        int rc = pathtrie_add(&t->templates, c->path, at >= 0 ? (size_t)at : t->count, NULL);
        if (rc != 0)
            return rc;
    }
    if (!r)
        r = add(t, c->path, NULL, ROUTE_STATIC, NULL, NULL);
    size_t slot = r->slot;
    memset(r, 0, sizeof *r);
    r->slot = slot;
    r->path = c->path;
    r->match = match < 0 ? PATHTRIE_EXACT : (enum pathtrie_kind)match;
    r->method = c->method;
    r->kind = ROUTE_STATIC;
    r->status = c->status;
    r->content_type = ct_text;
    r->body = c->body ? c->body : "";
    r->body_len = c->body ? c->body_len : 0;
    r->counted = 1;
    if (c->has_delay)
        set_delay(r, &c->delay);
    r->drip = c->drip;
    r->fault = c->fault;
    r->pace = c->pace;
    r->stream = c->stream;
    r->ws = c->ws;
    r->workers = c->workers;
    r->queue = c->queue;
    r->own_error = c->has_error_rate;
    r->error_rate = c->has_error_rate ? c->error_rate : t->error_rate;
    r->error_status = c->error_status ? c->error_status : t->error_status;
    /* Content-Type goes where the engines put it; the others are sent as given. */
    for (size_t h = 0; h < c->nheaders; h++) {
        if (strcasecmp(c->headers[h].name, "Content-Type") == 0)
            r->content_type = c->headers[h].value;
        else
            r->own_headers[r->nheaders++] = c->headers[h];
    }
    r->headers = r->own_headers;
    return 0;
}

/* The Content-Security-Policy of /ui without the control API: its own origin only. */
static const char ui_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                             "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                             "form-action 'none'; frame-ancestors 'none'";

/* A file of the /ui page: a fixed answer, never delayed or counted, with the headers that keep
 * a browser from guessing its type or caching an old version. */
static void add_ui(struct route_table *t, const char *path, const char *body, size_t len,
                   const char *content_type)
{
    if (route_find(t, path) >= 0 || t->count == t->index.max)
        return;
    struct route *r = add(t, path, "GET", ROUTE_STATIC, body, NULL);
    r->counted = 0;
    r->body_len = len;
    r->content_type = content_type;
    static const char *const fixed[][2] = {{"X-Content-Type-Options", "nosniff"},
                                           {"Cache-Control", "no-cache"},
                                           {"Referrer-Policy", "no-referrer"}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        r->own_headers[r->nheaders].name = (char *)(uintptr_t)fixed[i][0];
        r->own_headers[r->nheaders++].value = (char *)(uintptr_t)fixed[i][1];
    }
    r->headers = r->own_headers;
}

void route_table_set_csp(struct route_table *t, const char *csp)
{
    long i = route_find(t, "/ui");
    if (i < 0 || t->routes[i].body != (const char *)ui_index_html)
        return; /* a config route took the path */
    struct route *r = &t->routes[i];
    size_t h = 0;
    while (h < r->nheaders && strcmp(r->own_headers[h].name, "Content-Security-Policy") != 0)
        h++;
    if (h == CONFIG_ROUTE_HEADERS)
        return;
    r->own_headers[h].name = (char *)(uintptr_t) "Content-Security-Policy";
    r->own_headers[h].value = (char *)(uintptr_t)(csp ? csp : ui_csp);
    if (h == r->nheaders)
        r->nheaders++;
}

static const char *const not_found_builtin[] = {"/test", "/write", "/echo", "/healthz"};
#define NOT_FOUND_BUILTINS (sizeof not_found_builtin / sizeof not_found_builtin[0])

static int is_not_found_builtin(const char *path)
{
    for (size_t i = 0; i < NOT_FOUND_BUILTINS; i++)
        if (strcmp(path, not_found_builtin[i]) == 0)
            return 1;
    return 0;
}

/* The 404's advice: the config's routes first (what a user added), then the built-in ones a
 * client calls, as many as fit, and how many more there are. */
static void not_found_text(struct route_table *t, const struct config_route *routes, size_t n)
{
    size_t k = NOT_FOUND_BUILTINS, len, shown = 0, next = 0, b = 0;
    for (size_t i = 0; i < n; i++)
        k += !is_not_found_builtin(routes[i].path);
    len = (size_t)snprintf(t->not_found, sizeof t->not_found, "no such route; try ");
    for (; shown < k; shown++) {
        while (next < n && is_not_found_builtin(routes[next].path))
            next++;
        const char *name = next < n ? routes[next].path : not_found_builtin[b];
        const char *sep = shown == 0 ? "" : shown + 1 == k ? " or " : ", ";
        if (len + strlen(sep) + strlen(name) + 16 >= sizeof t->not_found)
            break;
        len += (size_t)snprintf(t->not_found + len, sizeof t->not_found - len, "%s%s", sep, name);
        if (next < n)
            next++;
        else
            b++;
    }
    if (shown < k)
        snprintf(t->not_found + len, sizeof t->not_found - len, " (%zu more)", k - shown);
}

static int init_with(struct route_table *t, const struct config *cfg,
                     const struct config_route *routes, size_t n, uint64_t generation)
{
    size_t cap = n + ROUTE_BUILTINS;
    t->routes = calloc(cap, sizeof *t->routes);
    t->own_seq = calloc(cap + 1, sizeof *t->own_seq);
    if (!t->routes || !t->own_seq || strmap_init(&t->index, cap) != 0 ||
        pathtrie_init(&t->templates) != 0) {
        route_table_cleanup(t);
        return -ENOMEM;
    }
    t->count = 0;
    t->cfg = cfg;
    t->generation = generation;
    /* A table that can change, or has: its answers name their generation. */
    t->live = cfg->control_host[0] != '\0' || cfg->scenario != NULL || generation > 1;
    t->seed = cfg->seed;
    t->max_delay_us = cfg->max_delay_us;
    t->overrides = !cfg->no_overrides;
    t->max_size = cfg->max_size;
    t->max_target = cfg->max_request_line;
    t->max_body = cfg->max_body;
    t->max_headers = cfg->max_header_size;
    t->error_rate = cfg->error_rate;
    t->error_status = cfg->error_status;
    for (size_t i = 0; i <= cap; i++)
        atomic_init(&t->own_seq[i], 0);
    t->seq = t->own_seq;
    t->filler = &t->own_filler;
    add(t, "/test", "GET", ROUTE_STATIC, "ok", &cfg->delay);
    add(t, "/write", "POST", ROUTE_UPLOAD, NULL, NULL);
    add(t, "/", NULL, ROUTE_STATIC, "OK", NULL);
    add(t, "/echo", NULL, ROUTE_STATIC, "OK", NULL);
    add(t, "/healthz", "GET", ROUTE_STATIC, "ok", NULL)->counted = 0;
    struct route *st = add(t, "/stats", "GET", ROUTE_STATS, NULL, NULL);
    st->counted = 0;
    st->content_type = ct_json;
    struct route *m = add(t, "/metrics", "GET", ROUTE_METRICS, NULL, NULL);
    m->counted = 0;
    m->content_type = "text/plain; version=0.0.4";
    for (size_t i = 0; i < n; i++) {
        int rc = add_configured(t, &routes[i]);
        if (rc != 0) {
            route_table_cleanup(t);
            return rc;
        }
    }
    /* After the config's routes, whose index is their draw stream (--seed: the same draws as
     * before the page existed); a config route of the same path wins. */
    add_ui(t, "/ui", (const char *)ui_index_html, ui_index_html_len, "text/html; charset=utf-8");
    add_ui(t, "/ui/app.js", (const char *)ui_app_js, ui_app_js_len,
           "text/javascript; charset=utf-8");
    add_ui(t, "/ui/style.css", (const char *)ui_style_css, ui_style_css_len,
           "text/css; charset=utf-8");
    route_table_set_csp(t, NULL);
    t->other_slot = t->count;
    not_found_text(t, routes, n);
    for (size_t i = 0; i < t->count; i++) {
        struct route *r = &t->routes[i];
        set_timing(t, r);
        r->error_body_len = route_error_json(r->error_body, sizeof r->error_body, r->error_status,
                                             r->own_error ? "injected by the route's error-rate"
                                                          : "injected by --error-rate");
    }
    return 0;
}

/* Empty, so that route_table_cleanup may run on it at any step of its making. */
static void init_empty(struct route_table *t)
{
    t->routes = NULL;
    t->count = 0;
    t->index = (struct strmap){0};
    t->templates = (struct pathtrie){0};
    t->own_seq = NULL;
    t->owned = NULL;
    t->nowned = 0;
    atomic_init(&t->own_filler.bytes, NULL);
    t->own_filler.span = 0;
}

int route_table_init(struct route_table *t, const struct config *cfg)
{
    init_empty(t);
    return init_with(t, cfg, cfg->routes, cfg->nroutes, 1);
}

int route_table_init_routes(struct route_table *t, const struct config *cfg,
                            const struct config_route *routes, size_t n, uint64_t generation)
{
    init_empty(t);
    if (n > CONFIG_ROUTES_MAX)
        return -ENOSPC;
    t->owned = calloc(n ? n : 1, sizeof *t->owned);
    if (!t->owned)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (config_route_copy(&t->owned[i], &routes[i]) != 0) {
            route_table_cleanup(t);
            return -ENOMEM;
        }
        t->nowned++;
    }
    return init_with(t, cfg, t->owned, n, generation);
}

void route_describe(const struct route *r, struct config_route *out)
{
    memset(out, 0, sizeof *out);
    out->path = (char *)(uintptr_t)r->path;
    out->method = (char *)(uintptr_t)r->method;
    out->status = r->status;
    out->body = (char *)(uintptr_t)r->body;
    out->body_len = r->body_len;
    out->has_delay = r->delayed;
    out->delay = r->delay;
    out->drip = r->drip;
    out->fault = r->fault;
    out->pace = r->pace;
    out->stream = r->stream;
    out->ws = r->ws;
    out->workers = r->workers;
    out->queue = r->queue;
    out->has_error_rate = r->own_error;
    out->error_rate = r->own_error ? r->error_rate : 0;
    out->error_status = r->error_status;
    /* The own headers, and the Content-Type when it is not the default. */
    for (size_t h = 0; h < r->nheaders && out->nheaders < CONFIG_ROUTE_HEADERS; h++)
        out->headers[out->nheaders++] = r->headers[h];
    if (r->content_type != ct_text && out->nheaders < CONFIG_ROUTE_HEADERS) {
        out->headers[out->nheaders].name = (char *)(uintptr_t) "Content-Type";
        out->headers[out->nheaders++].value = (char *)(uintptr_t)r->content_type;
    }
}

int route_editable(const struct route *r)
{
    return r->kind == ROUTE_STATIC && r->counted;
}

long route_find(const struct route_table *t, const char *path)
{
    return strmap_get(&t->index, path, strlen(path));
}

long route_match(const struct route_table *t, const char *path, size_t len)
{
    /* The index holds templates by their text too: a request for "/a/{x}" itself is matched
     * as any other path, by the trie. */
    long at = strmap_get(&t->index, path, len);
    if (at >= 0 && t->routes[at].match == PATHTRIE_EXACT)
        return at;
    return pathtrie_match(&t->templates, path, len);
}

void route_table_cleanup(struct route_table *t)
{
    struct route_filler *f = &t->own_filler;
    char *bytes = atomic_load(&f->bytes);
    if (bytes)
        munmap(bytes, f->span);
    atomic_store(&f->bytes, NULL);
    for (size_t i = 0; t->owned && i < t->nowned; i++)
        config_route_free(&t->owned[i]);
    free(t->owned);
    t->owned = NULL;
    t->nowned = 0;
    free(t->routes);
    t->routes = NULL;
    t->count = 0;
    free(t->own_seq);
    t->own_seq = NULL;
    strmap_cleanup(&t->index);
    pathtrie_cleanup(&t->templates);
}

size_t route_stats_count(const struct route_table *t)
{
    return t->other_slot + 1;
}

size_t route_error_json(char *buf, size_t len, unsigned status, const char *msg)
{
    static const char head[] = "{\"error\": \"";
    char tail[40];
    int tn = snprintf(tail, sizeof tail, "\", \"status\": %u}", status);
    if (tn < 0 || len < sizeof head + (size_t)tn + 1) {
        if (len)
            buf[0] = '\0';
        return 0;
    }
    /* The message may quote what the client sent: escape it, and cut it rather than the
     * JSON around it when it is too long. */
    size_t room = len - 1 - (sizeof head - 1) - (size_t)tn, n = sizeof head - 1;
    memcpy(buf, head, n);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        char esc[8];
        size_t k;
        if (*p == '"' || *p == '\\')
            k = (size_t)snprintf(esc, sizeof esc, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            k = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
        else
            esc[0] = (char)*p, k = 1;
        if (k > room)
            break;
        memcpy(buf + n, esc, k);
        n += k;
        room -= k;
    }
    memcpy(buf + n, tail, (size_t)tn + 1);
    return n + (size_t)tn;
}

static int method_matches(const char *want, const char *method)
{
    if (!want || strcmp(want, method) == 0)
        return 1;
    return strcmp(want, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

/* The plan answers status with body (JSON), at once, as an error. */
static void plan_error_body(struct plan *out, unsigned status, const char *body, size_t len)
{
    out->action = PLAN_RESPOND;
    out->status = status;
    out->content_type = ct_json;
    out->body_len = len;
    out->body = body;
    out->headers = NULL;
    out->nheaders = 0;
    out->delay_us = 0;
    out->timing = NULL;
    out->cacheable = 0;
    out->drip = (struct delay_drip){0, 0};
    out->pace = (struct pace_spec){0};
    out->stream = NULL;
    out->hdr_name = out->hdr_value = NULL;
    out->stream_head = 0;
    out->truncate = 0;
}

void route_plan_error(struct plan *out, unsigned status, const char *msg)
{
    plan_error_body(out, status, out->text,
                    route_error_json(out->text, sizeof out->text, status, msg));
}

long route_value_copy(const char *v, size_t vlen, char *buf, size_t len)
{
    /* The whitespace around a field value is not part of it (RFC 9110 section 5.5). */
    while (vlen && (v[0] == ' ' || v[0] == '\t')) {
        v++;
        vlen--;
    }
    while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
        vlen--;
    size_t n = vlen < len - 1 ? vlen : len - 1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    return (long)vlen;
}

/* An override from the query (which wins) or its header, into buf. Returns its length, -1 if
 * the request has none, or -2 with a 400 in out if it is longer than buf holds (a cut value
 * would be read as another one). */
static long override_input(const struct route_request *rq, const char *param, const char *header,
                           char *buf, size_t len, struct plan *out)
{
    const char *t = rq->raw_target ? rq->raw_target : rq->target;
    size_t tlen = !rq->raw_target      ? rq->target_len
                  : rq->raw_target_len ? rq->raw_target_len
                                       : strlen(rq->raw_target);
    const char *q = memchr(t, '?', tlen);
    long n = q ? target_query_param(q + 1, tlen - (size_t)(q + 1 - t), param, buf, len) : -1;
    if (n < 0 && header && rq->lookup)
        n = rq->lookup(rq->ctx, header, buf, len);
    if (n >= (long)len) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s: value over %zu bytes", param, len - 1);
        route_plan_error(out, 400, msg);
        return -2;
    }
    return n;
}

/* The ?size= body: max_size bytes of a 64-byte line, over and over. One block of it is written
 * to a memfd that is mapped again and again side by side over the whole span, so the span costs
 * one block of memory, nothing is written when it is made, and a page is touched only when an
 * answer sends it. (Filling max_size bytes, 16 MiB by default, stalled the loop that did it for
 * 20 to 50 ms.) The block is a multiple of the page size, so the line runs on across blocks.
 * Sets *span to the length mapped; returns NULL when it cannot be made. */
#define FILLER_LINE 64

static char *filler_map(uint64_t size, size_t *span)
{
    static const char line[FILLER_LINE + 1] =
        "slowsrv filler 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ\n";
    size_t block = 64 * 1024;
    while (size / block > 256)
        block *= 2;
    size_t count = (size_t)((size + block - 1) / block);
    *span = count * block;
    char *buf = malloc(block);
    int fd = memfd_create("slowsrv-filler", MFD_CLOEXEC);
    char *base = MAP_FAILED;
    if (buf && fd >= 0) {
        for (size_t i = 0; i < block; i += FILLER_LINE)
            memcpy(buf + i, line, FILLER_LINE);
        if (pwrite(fd, buf, block, 0) == (ssize_t)block)
            base = mmap(NULL, *span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    for (size_t i = 0; base != MAP_FAILED && i < count; i++) {
        if (mmap(base + i * block, block, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
            munmap(base, *span);
            base = MAP_FAILED;
        }
    }
    free(buf);
    if (fd >= 0)
        close(fd); /* the mappings keep the memfd */
    return base == MAP_FAILED ? NULL : base;
}

static const char *filler(struct route_table *t)
{
    char *f = atomic_load(&t->filler->bytes);
    if (f)
        return f;
    size_t span;
    char *mine = filler_map(t->max_size ? t->max_size : 1, &span);
    if (!mine)
        return NULL;
    char *expected = NULL;
    if (atomic_compare_exchange_strong(&t->filler->bytes, &expected, mine)) {
        t->filler->span = span; /* read only by route_table_cleanup, once every thread is done */
        return mine;
    }
    munmap(mine, span);
    return expected;
}

static uint64_t clamp_draw(const struct route_table *t, uint64_t us)
{
    return us > t->max_delay_us ? t->max_delay_us : us;
}

/* Applies ?delay=, ?status=, ?size= and their headers. Returns 0, or fills a 400 and returns
 * -1. `index` numbers the request in its route. */
static int apply_overrides(struct route_table *t, const struct route_request *rq, size_t id,
                           uint64_t *index, struct plan *out, enum config_fault *fault)
{
    char val[128], msg[160];
    long got;
    if ((got = override_input(rq, "delay", "X-Slowsrv-Delay", val, sizeof val, out)) < -1)
        return -1;
    if (got >= 0) {
        struct delay_spec spec;
        char why[128];
        if (delay_spec_parse(&spec, val, why, sizeof why) != 0) {
            snprintf(msg, sizeof msg, "delay: %s", why);
            route_plan_error(out, 400, msg);
            return -1;
        }
        uint64_t max = delay_spec_max_us(&spec);
        if (max == UINT64_MAX)
            max = spec.a_us; /* unbounded: the mean or median must fit */
        if (max > t->max_delay_us) {
            char a[32], b[32];
            delay_format_ms(max, a, sizeof a);
            delay_format_ms(t->max_delay_us, b, sizeof b);
            snprintf(msg, sizeof msg, "delay: %s ms is over --max-delay %s ms", a, b);
            route_plan_error(out, 400, msg);
            return -1;
        }
        size_t slot = t->routes[id].slot;
        if (*index == UINT64_MAX)
            *index = atomic_fetch_add_explicit(&t->seq[slot], 1, memory_order_relaxed);
        out->delay_us =
            clamp_draw(t, delay_spec_draw(&spec, t->seed, STREAM_OVERRIDE | slot, *index));
        format_timing(t, 1, out->delay_us, out->timing_buf, sizeof out->timing_buf);
        out->timing = out->timing_buf;
        out->cacheable = 0;
    }
    if ((got = override_input(rq, "status", "X-Slowsrv-Status", val, sizeof val, out)) < -1)
        return -1;
    if (got >= 0) {
        char *end;
        unsigned long code = strtoul(val, &end, 10);
        if (end == val || *end || code < CONFIG_STATUS_MIN || code > CONFIG_STATUS_MAX ||
            val[0] == '-' || val[0] == '+') {
            snprintf(msg, sizeof msg, "status: '%.40s' is not an HTTP status from %d to %d", val,
                     CONFIG_STATUS_MIN, CONFIG_STATUS_MAX);
            route_plan_error(out, 400, msg);
            return -1;
        }
        out->status = (unsigned)code;
        out->cacheable = 0;
    }
    if ((got = override_input(rq, "size", NULL, val, sizeof val, out)) < -1)
        return -1;
    if (got >= 0) {
        char *end;
        unsigned long long n = strtoull(val, &end, 10);
        if (end == val || *end || val[0] == '-' || val[0] == '+' || n > t->max_size) {
            snprintf(msg, sizeof msg, "size: '%.40s' is not a byte count from 0 to --max-size %llu",
                     val, (unsigned long long)t->max_size);
            route_plan_error(out, 400, msg);
            return -1;
        }
        const char *f = n ? filler(t) : "";
        if (!f) {
            route_plan_error(out, 503, "out of memory for size=");
            return -1;
        }
        out->body = f;
        out->body_len = (size_t)n;
        out->content_type = ct_text;
        out->cacheable = 0;
    }
    if ((got = override_input(rq, "drip", "X-Slowsrv-Drip", val, sizeof val, out)) < -1)
        return -1;
    if (got >= 0) {
        char why[128];
        if (delay_drip_parse(&out->drip, val, why, sizeof why) != 0) {
            snprintf(msg, sizeof msg, "drip: %s", why);
            route_plan_error(out, 400, msg);
            return -1;
        }
        if (out->drip.over_us > t->max_delay_us) {
            char a[32], b[32];
            delay_format_ms(out->drip.over_us, a, sizeof a);
            delay_format_ms(t->max_delay_us, b, sizeof b);
            snprintf(msg, sizeof msg, "drip: %s ms is over --max-delay %s ms", a, b);
            route_plan_error(out, 400, msg);
            return -1;
        }
        out->cacheable = 0;
    }
    static const struct {
        const char *param, *header;
        int (*parse)(struct pace_spec *p, const char *s, char *err, size_t errlen);
    } paces[] = {{"rate", "X-Slowsrv-Rate", pace_rate_parse},
                 {"read-rate", "X-Slowsrv-Read-Rate", pace_read_rate_parse},
                 {"reset-after", "X-Slowsrv-Reset-After", pace_reset_parse},
                 {"stall", "X-Slowsrv-Stall", pace_stall_parse},
                 {"slow-close", "X-Slowsrv-Slow-Close", pace_slow_close_parse}};
    for (size_t i = 0; i < sizeof paces / sizeof paces[0]; i++) {
        if ((got = override_input(rq, paces[i].param, paces[i].header, val, sizeof val, out)) < -1)
            return -1;
        if (got < 0)
            continue;
        char why[140];
        if (paces[i].parse(&out->pace, val, why, sizeof why) != 0) {
            snprintf(msg, sizeof msg, "%s: %s", paces[i].param, why);
            route_plan_error(out, 400, msg);
            return -1;
        }
        out->cacheable = 0;
    }
    if ((got = override_input(rq, "stream", "X-Slowsrv-Stream", val, sizeof val, out)) < -1)
        return -1;
    if (got >= 0) {
        char why[140];
        struct stream_spec own;
        if (stream_spec_parse(&own, val, why, sizeof why) != 0) {
            snprintf(msg, sizeof msg, "stream: %s", why);
            route_plan_error(out, 400, msg);
            return -1;
        }
        if (!rq->stream_room) {
            route_plan_error(out, 400, "stream: not available on this listener");
            return -1;
        }
        *rq->stream_room = own;
        out->stream = own.format != STREAM_NONE ? rq->stream_room : NULL;
        out->cacheable = 0;
    }
    if ((got = override_input(rq, "fault", "X-Slowsrv-Fault", val, sizeof val, out)) < -1)
        return -1;
    if (got >= 0) {
        if (config_fault_parse(val, fault) != 0) {
            snprintf(msg, sizeof msg, "fault: '%.40s' is not close, reset, truncate or none", val);
            route_plan_error(out, 400, msg);
            return -1;
        }
        out->cacheable = 0;
    }
    return 0;
}

/* Checks the plan's drip and fault against its body and turns a fault into the plan's action.
 * Returns 0, or fills a 400 and returns -1. */
static int apply_shape(struct plan *out, enum config_fault fault, uint64_t max_us)
{
    char msg[160];
    /* Answers that carry no body by definition, whether configured or asked for. */
    if (answer_bodiless(out->status))
        out->body_len = 0;
    int shaped = pace_shapes_body(&out->pace) || out->pace.slow_close_us;
    if ((out->drip.chunks || fault != CONFIG_FAULT_NONE || shaped) && out->action != PLAN_RESPOND) {
        route_plan_error(out, 400,
                         out->drip.chunks || fault != CONFIG_FAULT_NONE
                             ? "drip, fault: only on routes with a fixed answer (not /write)"
                             : "rate, reset-after, stall, slow-close: only on routes with a fixed "
                               "answer (not /write)");
        return -1;
    }
    if (out->drip.chunks && (out->pace.rate || out->pace.stall)) {
        route_plan_error(out, 400, "drip: cannot be paced by rate or stall too; keep one");
        return -1;
    }
    if (pace_check(&out->pace, out->body_len, max_us, msg, sizeof msg) != 0) {
        route_plan_error(out, 400, msg);
        return -1;
    }
    if (out->pace.slow_close_us && out->body_len == 0) {
        route_plan_error(out, 400, "slow-close: needs a body to hold the end of; add size=");
        return -1;
    }
    /* slow-close: the answer ends its connection (Connection: close), and the close is late. */
    if (out->pace.slow_close_us)
        out->close = 1;
    if (out->drip.chunks > out->body_len) {
        snprintf(msg, sizeof msg,
                 "drip: %u chunks need a body of at least %u bytes (this one has %zu); add size=",
                 out->drip.chunks, out->drip.chunks, out->body_len);
        route_plan_error(out, 400, msg);
        return -1;
    }
    switch (fault) {
    case CONFIG_FAULT_NONE:
        break;
    case CONFIG_FAULT_CLOSE:
        out->action = PLAN_CLOSE;
        break;
    case CONFIG_FAULT_RESET:
        out->action = PLAN_RESET;
        break;
    case CONFIG_FAULT_TRUNCATE:
        if (out->body_len == 0) {
            route_plan_error(out, 400, "fault: truncate needs a body to cut; add size=");
            return -1;
        }
        out->truncate = 1;
        break;
    }
    return 0;
}

/* A stream's checks and its per-request part: the key of its draws, its first id (after the
 * client's Last-Event-ID), its end without a count, its Content-Type. Returns 0, or fills a 4xx
 * (or the 204 of a sequence already over) and returns -1. */
static int plan_stream(struct route_table *t, const struct route_request *rq, const struct route *r,
                       uint64_t *index, struct plan *out)
{
    const struct stream_spec *s = out->stream;
    char msg[200];
    if (out->action != PLAN_RESPOND || answer_bodiless(out->status)) {
        route_plan_error(out, 400,
                         "stream: only on routes with a fixed answer (not /write), and a status "
                         "with a body");
        return -1;
    }
    if (out->drip.chunks || out->truncate || pace_shapes_body(&out->pace) ||
        out->pace.slow_close_us) {
        route_plan_error(out, 400,
                         "stream: cannot be shaped by drip, rate, stall, reset-after, slow-close "
                         "or truncate too; keep the stream");
        return -1;
    }
    uint64_t gmax = delay_spec_max_us(&s->gap);
    if (gmax == UINT64_MAX)
        gmax = s->gap.a_us; /* unbounded: the mean or median must fit */
    if (gmax > t->max_delay_us) {
        char a[32], b[32];
        delay_format_ms(gmax, a, sizeof a);
        delay_format_ms(t->max_delay_us, b, sizeof b);
        snprintf(msg, sizeof msg, "stream: gap %s ms is over --max-delay %s ms", a, b);
        route_plan_error(out, 400, msg);
        return -1;
    }
    /* A HEAD answer is GET's head alone: the stream's Content-Type, no length, no body. */
    if (strcmp(rq->method, "HEAD") == 0) {
        out->stream = NULL;
        out->stream_head = 1;
        out->content_type = stream_content_type(s->format);
        out->body = "";
        out->body_len = 0;
        out->cacheable = 0;
        return 0;
    }
    uint64_t last = 0;
    char val[32];
    long got = rq->lookup ? rq->lookup(rq->ctx, "Last-Event-ID", val, sizeof val) : -1;
    /* Ids stay far below the top of uint64: a stream goes on from last + 1 for up to
     * STREAM_COUNT_MAX events. */
    if (got >= (long)sizeof val ||
        (got >= 0 && (stream_last_id_parse(val, &last) != 0 || last > UINT64_MAX / 2))) {
        snprintf(msg, sizeof msg, "Last-Event-ID: '%.24s' is not an event number from this stream",
                 val);
        route_plan_error(out, 400, msg);
        return -1;
    }
    if (s->count && last >= s->count) {
        /* 204 tells an EventSource not to reconnect: the sequence is over. */
        plan_error_body(out, 204, "", 0);
        return -1;
    }
    if (*index == UINT64_MAX)
        *index = atomic_fetch_add_explicit(&t->seq[r->slot], 1, memory_order_relaxed);
    out->stream_key = stream_key(t->seed, STREAM_EVENTS | r->slot, *index);
    out->stream_first = last + 1;
    out->stream_until_us = t->max_delay_us;
    out->content_type = stream_content_type(s->format);
    out->body = "";
    out->body_len = 0;
    out->cacheable = 0;
    return 0;
}

/* The route's own answer, before any per-request draw, override or shape. */
static void plan_defaults(const struct route_table *t, size_t id, struct plan *out)
{
    const struct route *r = &t->routes[id];
    out->route = r;
    out->route_id = id;
    out->stats_id = r->counted ? r->slot : STATS_UNCOUNTED;
    out->generation = t->generation;
    out->allow = NULL;
    out->status = r->status;
    out->content_type = r->content_type;
    out->body = r->body;
    out->body_len = answer_bodiless(r->status) ? 0 : r->body_len;
    out->headers = r->headers;
    out->nheaders = r->nheaders;
    out->action = r->kind == ROUTE_UPLOAD    ? PLAN_UPLOAD
                  : r->kind == ROUTE_STATS   ? PLAN_STATS
                  : r->kind == ROUTE_METRICS ? PLAN_METRICS
                                             : PLAN_RESPOND;
    out->cacheable = r->kind == ROUTE_STATIC && !r->drip.chunks && r->fault == CONFIG_FAULT_NONE &&
                     !pace_shapes_body(&r->pace) && !r->pace.slow_close_us && !r->pace.read_rate &&
                     r->stream.format == STREAM_NONE && !r->ws.on;
    out->delay_us = r->delayed && r->timing[0] ? r->delay.a_us : 0;
    out->timing = r->timing[0] ? r->timing : NULL;
    out->drip = r->drip;
    out->pace = r->pace;
    out->stream = r->stream.format != STREAM_NONE ? &r->stream : NULL;
    out->hdr_name = out->hdr_value = NULL;
    out->stream_head = 0;
    out->truncate = 0;
    out->close = 0;
}

/* A field of the head as received, every line of it joined (head_values_joined). */
static long head_lookup(void *ctx, const char *name, char *buf, size_t len)
{
    return head_values_joined(ctx, name, buf, len);
}

/* A WebSocket route's handshake (http/wshs.h): 101 with its accept value and the key of the
 * socket's draws (the socket's index within its route), or the 4xx. */
static void plan_ws(struct route_table *t, const struct route_request *rq, const struct route *r,
                    struct plan *out)
{
    struct wshs_result hs;
    /* The fields as received where the engine has them: libh2o folds Upgrade away from its
     * header list. */
    if (rq->head && !rq->h2)
        wshs_check(rq->method, head_lookup, (void *)(uintptr_t)rq->head, 0, rq->head->minor == 0,
                   t->cfg->tls_cert[0] != '\0', &hs);
    else
        wshs_check(rq->method, rq->lookup, rq->ctx, rq->h2, 0, t->cfg->tls_cert[0] != '\0', &hs);
    if (hs.status != 101) {
        route_plan_error(out, hs.status, hs.why);
        out->hdr_name = hs.hdr_name;
        out->hdr_value = hs.hdr_value;
        return;
    }
    uint64_t index = atomic_fetch_add_explicit(&t->seq[r->slot], 1, memory_order_relaxed);
    out->action = PLAN_UPGRADE;
    out->status = 101;
    out->body = "";
    out->body_len = 0;
    out->delay_us = 0;
    out->timing = NULL;
    out->cacheable = 0;
    memcpy(out->ws_accept, hs.accept, sizeof hs.accept);
    out->ws_key = delay_random(t->seed, STREAM_WS | r->slot, index);
}

int route_cached_plan(const struct route_table *t, size_t id, struct plan *out)
{
    if (id >= t->count)
        return -1;
    const struct route *r = &t->routes[id];
    if (r->kind != ROUTE_STATIC || (r->delayed && !r->timing[0]))
        return -1;
    plan_defaults(t, id, out);
    return 0;
}

void route_plan(struct route_table *t, const struct route_request *rq, struct plan *out)
{
    size_t path_len = rq->target_len;
    const char *q = memchr(rq->target, '?', path_len);
    if (q)
        path_len = (size_t)(q - rq->target);

    out->route = NULL;
    out->stats_id = ROUTE_STATS_OTHER(t);
    out->generation = t->generation;
    out->allow = NULL;
    out->close = 0;
    if ((rq->target_bytes ? rq->target_bytes : rq->target_len) > t->max_target) {
        char msg[96];
        snprintf(msg, sizeof msg, "request target over %llu bytes (--max-request-line)",
                 (unsigned long long)t->max_target);
        route_plan_error(out, 414, msg);
        return;
    }
    if (rq->header_bytes > t->max_headers) {
        char msg[96];
        snprintf(msg, sizeof msg, "request headers over %llu bytes (--max-header-size)",
                 (unsigned long long)t->max_headers);
        route_plan_error(out, 431, msg);
        return;
    }

    /* A path with dot segments is matched as it resolves (RFC 3986 section 5.2.4), as libh2o
     * hands it over: /test/../echo is /echo on both binaries. */
    const char *path = rq->target;
    char resolved[256];
    if (path_len && path[0] == '/' && memmem(path, path_len, "/.", 2) &&
        path_len < sizeof resolved) {
        path_len = target_path_resolve(path, path_len, resolved);
        path = resolved;
    }
    long at = route_match(t, path, path_len);
    const struct route *r = at >= 0 ? &t->routes[at] : NULL;
    if (!r) {
        route_plan_error(out, 404, t->not_found);
        return;
    }
    if (!method_matches(r->method, rq->method)) {
        char msg[64];
        snprintf(msg, sizeof msg, "method not allowed; use %s", r->method);
        route_plan_error(out, 405, msg);
        out->allow = strcmp(r->method, "GET") == 0 ? "GET, HEAD" : r->method;
        return;
    }

    size_t id = (size_t)(r - t->routes);
    uint64_t index = UINT64_MAX; /* taken from seq[slot] when a draw needs it */
    plan_defaults(t, id, out);
    if (r->ws.on) {
        plan_ws(t, rq, r, out);
        return;
    }
    enum config_fault fault = r->fault;
    if (r->delayed && !r->timing[0]) {
        /* A random delay: number the request within its route so the draw is reproducible. */
        index = atomic_fetch_add_explicit(&t->seq[r->slot], 1, memory_order_relaxed);
        out->delay_us =
            clamp_draw(t, delay_spec_draw(&r->delay, t->seed, STREAM_DELAY | r->slot, index));
        format_timing(t, 1, out->delay_us, out->timing_buf, sizeof out->timing_buf);
        out->timing = out->timing_buf;
        out->cacheable = 0;
    }
    if (r->counted && t->overrides && apply_overrides(t, rq, id, &index, out, &fault) != 0)
        return;
    if (r->counted && r->error_rate > 0 && out->action == PLAN_RESPOND) {
        if (index == UINT64_MAX)
            index = atomic_fetch_add_explicit(&t->seq[r->slot], 1, memory_order_relaxed);
        uint64_t coin = delay_random(t->seed, STREAM_ERROR | r->slot, index);
        if ((double)(coin >> 11) * (1.0 / 9007199254740992.0) < r->error_rate) {
            /* The injected error still takes the request's delay, as a real failure would. */
            uint64_t delay = out->delay_us;
            const char *timing = out->timing;
            plan_error_body(out, r->error_status, r->error_body, r->error_body_len);
            out->delay_us = delay;
            out->timing = timing;
            return;
        }
    }
    if (apply_shape(out, fault, t->max_delay_us) != 0)
        return;
    if (out->stream && plan_stream(t, rq, r, &index, out) != 0)
        return;
    if (out->pace.read_rate && rq->whole_bodies) {
        char msg[200];
        snprintf(msg, sizeof msg, "read-rate: %s", rq->whole_bodies);
        route_plan_error(out, 400, msg);
        return;
    }
    /* A HEAD answer has no body to pace or break: GET's head (its status, its Connection:
     * close), at once, on both binaries (libmicrohttpd never asks for its body). */
    if (strcmp(rq->method, "HEAD") == 0) {
        out->pace.rate = 0;
        out->pace.reset = 0;
        out->pace.stall = 0;
        out->pace.slow_close_us = 0;
    }
}
