/*
 * libFuzzer target for common/route: target_query_param() and route_plan() with per-request
 * overrides (?delay= ?status= ?size= ?drip= ?fault=, X-Slowsrv-Delay, X-Slowsrv-Status).
 *
 * Input layout (tests/fuzz/corpus/route/ holds examples; gen_seeds.py writes them):
 *   byte 0     flags: bits 0-1 pick the route table (built once, see init_tables):
 *                0 built-in routes, max-size 1 MiB;
 *                1 built-in routes plus configured ones (random delays, 204 and 418 routes,
 *                  methods, headers, templates and wildcards), max-delay 2 s, max-size 4 KiB;
 *                2 --no-overrides, a log-normal /test delay;
 *                3 --error-rate 0.5 with --error-status 500;
 *              bits 2-3 pick buflen for the target_query_param() check: 1, 3, 16 or 128
 *   the rest   NUL-separated fields: method, target (path, optionally '?' and a query),
 *              X-Slowsrv-Delay value, X-Slowsrv-Status value, a query parameter name;
 *              a missing field is an absent header (method "GET", target "/", name "delay")
 *
 * target_query_param() runs on the whole of `the rest` (NULs included) as a query, as an
 * exact-size heap copy (ASan reports any read past len), with the names delay, status, size
 * and the fifth field, into an exact-size heap buffer of buflen bytes; it must agree with a
 * simple reference decoder: -1, or a length < buflen with buf NUL-terminated there (the
 * length is strlen(buf) unless the decoded value holds a NUL byte, e.g. from %00).
 *
 * route_plan() plans the request (target an exact-size heap copy, not NUL-terminated), its
 * lookup serving the query through target_query_param() (also checked against the reference)
 * and the two headers. Checked: status 100..599; a matched route is the table's, with the
 * target's path and the allowed method (a template or wildcard: one that a reference matcher
 * says matches the path, beaten by no other route that matches, by a reference of the
 * precedence); no route means 404, when no route matches (405 with Allow for a wrong method);
 * body_len <= max-size unless the body is the route's own; a body is readable to its last byte; an
 * error body built by route_plan (404, 405, 400 for an override, error-rate) has the shape
 * {"error": "...", "status": N} and is valid JSON as a whole (cJSON, no trailing bytes, no raw
 * control characters) with "error" a string and "status" equal to plan.status; delay_us <=
 * max-delay; a delay has a Server-Timing value "delay;dur=<ms>" that reads back as delay_us; with
 * overrides on, 1xx/204/304 answers carry no body; with overrides off, status and body are the
 * route's (or error-rate's).
 *
 * Build: see CMakeLists.txt (route.c and what it uses, libcjson, -lm -lpthread).
 */
#include "plan/route.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            __builtin_trap();                                                                      \
    } while (0)

#define NTABLES 4
#define NFIELDS 5

static struct config cfgs[NTABLES];
static struct route_table tables[NTABLES];
static struct config_route croutes[11];

/* A heap copy that lives as long as the tables (config strings are char *). */
static char *keep(const char *s)
{
    char *d = strdup(s);

    REQUIRE(d != NULL);
    return d;
}

static void spec(struct delay_spec *out, const char *text)
{
    char err[128];

    REQUIRE(delay_spec_parse(out, text, err, sizeof err) == 0);
}

static void init_tables(void)
{
    for (size_t i = 0; i < NTABLES; i++) {
        cfgs[i] = config_defaults;
        cfgs[i].max_size = 1 << 20;
        cfgs[i].seed = 7 + i;
    }

    /* 1: configured routes */
    croutes[0] = (struct config_route){.path = keep("/slow"),
                                       .method = keep("GET"),
                                       .status = 200,
                                       .body = keep("slow"),
                                       .body_len = 4,
                                       .has_delay = 1};
    spec(&croutes[0].delay, "10ms..2s");
    croutes[1] = (struct config_route){.path = keep("/normal"), .status = 201, .has_delay = 1};
    spec(&croutes[1].delay, "normal:500ms,1s");
    croutes[2] = (struct config_route){.path = keep("/empty"),
                                       .method = keep("PUT"),
                                       .status = 204,
                                       .body = keep("no body with 204"),
                                       .body_len = 16};
    croutes[3] = (struct config_route){.path = keep("/teapot"),
                                       .method = keep("BREW"),
                                       .status = 418,
                                       .body = keep("teapot"),
                                       .body_len = 6,
                                       .nheaders = 2};
    croutes[3].headers[0] = (struct config_header){keep("Content-Type"), keep("application/json")};
    croutes[3].headers[1] = (struct config_header){keep("X-Teapot"), keep("short and stout")};
    croutes[4] = (struct config_route){.path = keep("/test"),
                                       .status = 200,
                                       .body = keep("replaced"),
                                       .body_len = 8,
                                       .has_delay = 1};
    spec(&croutes[4].delay, "10ms:50,1s:40,0:5");
    croutes[5] = (struct config_route){
        .path = keep("/fixed"), .method = keep("GET"), .status = 302, .has_delay = 1};
    spec(&croutes[5].delay, "1.5s");
    /* Templates and wildcards, orderable pairs only (config_load refuses the others). */
    static const char *const templates[] = {"/t/{id}", "/t/{id}/x", "/t/*", "/{a}/b/*",
                                            "/{a}/{b}/c"};
    for (size_t i = 0; i < 5; i++)
        croutes[6 + i] = (struct config_route){.path = keep(templates[i]),
                                               .status = 200,
                                               .body = keep(templates[i]),
                                               .body_len = strlen(templates[i])};
    cfgs[1].routes = croutes;
    cfgs[1].nroutes = sizeof croutes / sizeof croutes[0];
    cfgs[1].max_delay_us = 2000000;
    cfgs[1].max_size = 4096;
    spec(&cfgs[1].delay, "250ms");

    /* 2: no overrides */
    cfgs[2].no_overrides = 1;
    spec(&cfgs[2].delay, "lognormal:1s,0.5");

    /* 3: error rate */
    cfgs[3].error_rate = 0.5;
    cfgs[3].error_status = 500;
    spec(&cfgs[3].delay, "100ms..300ms");

    for (size_t i = 0; i < NTABLES; i++)
        route_table_init(&tables[i], &cfgs[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    init_tables();
    return 0;
}

static int hexv(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (unsigned char)(c | 0x20);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The reference: first `name` (exact key bytes) in query[0..len), value percent-decoded with
 * '+' as space, truncated to buflen - 1 bytes. Returns -1 if absent. */
static long ref_query_param(const char *query, size_t len, const char *name, char *buf,
                            size_t buflen, int *has_nul)
{
    size_t nlen = strlen(name), i = 0;

    *has_nul = 0;
    while (i < len) {
        size_t start = i, eq = SIZE_MAX, stop;
        while (i < len && query[i] != '&') {
            if (eq == SIZE_MAX && query[i] == '=')
                eq = i;
            i++;
        }
        stop = i;
        i++; /* past '&' */
        size_t kend = eq == SIZE_MAX ? stop : eq;
        /* The name is compared decoded ('+' and %XX, as the value), byte for byte. */
        char key[512];
        size_t kn = 0;
        for (size_t k = start; k < kend && kn < sizeof key; k++) {
            char c = query[k];
            if (c == '%' && kend - k >= 3 && hexv((unsigned char)query[k + 1]) >= 0 &&
                hexv((unsigned char)query[k + 2]) >= 0) {
                c = (char)(hexv((unsigned char)query[k + 1]) * 16 +
                           hexv((unsigned char)query[k + 2]));
                k += 2;
            } else if (c == '+') {
                c = ' ';
            }
            key[kn++] = c;
        }
        if (kn != nlen || memcmp(key, name, nlen) != 0)
            continue;
        size_t n = 0;
        for (size_t v = eq == SIZE_MAX ? stop : eq + 1; v < stop; v++) {
            char c = query[v];
            if (c == '%' && stop - v >= 3 && hexv((unsigned char)query[v + 1]) >= 0 &&
                hexv((unsigned char)query[v + 2]) >= 0) {
                c = (char)(hexv((unsigned char)query[v + 1]) * 16 +
                           hexv((unsigned char)query[v + 2]));
                v += 2;
            } else if (c == '+') {
                c = ' ';
            }
            if (c == '\0' && n + 1 < buflen)
                *has_nul = 1;
            if (n + 1 < buflen)
                buf[n] = c;
            n++;
        }
        buf[n + 1 < buflen ? n : buflen - 1] = '\0';
        return (long)n;
    }
    return -1;
}

/* target_query_param against the reference, out = exact-size heap block of buflen bytes. */
static long checked_query_param(const char *query, size_t len, const char *name, char *out,
                                size_t buflen)
{
    char ref[256];
    int has_nul;
    long got, want;

    REQUIRE(buflen >= 1 && buflen <= sizeof ref);
    got = target_query_param(query, len, name, out, buflen);
    want = ref_query_param(query, len, name, ref, buflen, &has_nul);
    REQUIRE(got == want);
    if (got >= 0) {
        /* The whole length comes back; what fits is stored, NUL-terminated. */
        size_t kept = (size_t)got < buflen ? (size_t)got : buflen - 1;
        REQUIRE(out[kept] == '\0');
        REQUIRE(memcmp(out, ref, kept) == 0);
        if (!has_nul)
            REQUIRE(strlen(out) == kept);
    }
    return got;
}

struct request_ctx {
    const char *query; /* inside the target copy; not NUL-terminated */
    size_t query_len;
    const char *hdr_delay, *hdr_status; /* NULL: header absent */
    unsigned lookups;
};

static long copy_out(const char *v, char *buf, size_t len)
{
    return route_value_copy(v, strlen(v), buf, len);
}

static long lookup(void *ctx, const char *name, char *buf, size_t len)
{
    struct request_ctx *c = ctx;

    c->lookups++;
    REQUIRE(name != NULL && buf != NULL && len >= 1);
    if (strcasecmp(name, "X-Slowsrv-Delay") == 0 && c->hdr_delay)
        return copy_out(c->hdr_delay, buf, len);
    if (strcasecmp(name, "X-Slowsrv-Status") == 0 && c->hdr_status)
        return copy_out(c->hdr_status, buf, len);
    return -1;
}

static void check_json_error(const struct plan *p)
{
    static const char head[] = "{\"error\": \"";
    const size_t hlen = sizeof head - 1;
    const char *parse_end = NULL;
    cJSON *root;
    const cJSON *status, *error;
    char tail[32];
    size_t tlen = (size_t)snprintf(tail, sizeof tail, "\", \"status\": %u}", p->status);

    /* The shape route_error_json() writes. */
    REQUIRE(p->body_len >= hlen + tlen && memcmp(p->body, head, hlen) == 0);
    REQUIRE(memcmp(p->body + p->body_len - tlen, tail, tlen) == 0);
    /* The whole body, not just a valid prefix (cJSON stops after the first value). */
    root = cJSON_ParseWithLengthOpts(p->body, p->body_len, &parse_end, 0);
    REQUIRE(root != NULL);
    REQUIRE(parse_end == p->body + p->body_len);
    REQUIRE(cJSON_IsObject(root));
    status = cJSON_GetObjectItemCaseSensitive(root, "status");
    error = cJSON_GetObjectItemCaseSensitive(root, "error");
    REQUIRE(cJSON_IsNumber(status) && status->valuedouble == (double)p->status);
    REQUIRE(cJSON_IsString(error));
    cJSON_Delete(root);
    /* cJSON takes raw control characters inside strings; RFC 8259 does not. */
    for (size_t i = 0; i < p->body_len; i++)
        REQUIRE((unsigned char)p->body[i] >= 0x20);
}

static int method_ok(const char *want, const char *method)
{
    return !want || strcmp(want, method) == 0 ||
           (strcmp(want, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

/* A segment of a route path: 0 a literal, 1 "{name}", 2 the last "*". */
static int segment_kind(const char *s, size_t n, int last)
{
    if (n == 1 && s[0] == '*' && last)
        return 2;
    return n >= 3 && s[0] == '{' && s[n - 1] == '}' ? 1 : 0;
}

/* The reference for the trie: 1 if route path pat matches path (len bytes), segment by
 * segment: a literal itself, {name} any non-empty segment, a last "*" the rest (zero or more). */
static int ref_matches(const char *pat, const char *path, size_t len)
{
    if (len == 0 || path[0] != '/')
        return 0;
    const char *p = pat + 1, *s = path + 1, *end = path + len;
    for (;;) {
        const char *pe = strchr(p, '/');
        if (!pe)
            pe = p + strlen(p);
        int kind = segment_kind(p, (size_t)(pe - p), *pe == '\0');
        if (kind == 2)
            return 1;
        if (!s)
            return 0;
        const char *se = memchr(s, '/', (size_t)(end - s));
        if (!se)
            se = end;
        if (kind == 1 ? se == s : (pe - p != se - s || memcmp(p, s, (size_t)(se - s)) != 0))
            return 0;
        if (*pe == '\0')
            return se == end;
        p = pe + 1;
        s = se == end ? NULL : se + 1;
    }
}

/* The precedence, as a reference: <0 if route path a beats b, >0 if b beats a, 0 if neither
 * (same kinds all along). An exact path beats a template, a template a wildcard; then the
 * first segment whose kinds differ decides, the lower kind winning. */
static int ref_order(const char *a, const char *b)
{
    int wa = a[strlen(a) - 1] == '*' && a[strlen(a) - 2] == '/';
    int wb = b[strlen(b) - 1] == '*' && b[strlen(b) - 2] == '/';
    int ta = strchr(a, '{') != NULL || wa, tb = strchr(b, '{') != NULL || wb;
    if (ta != tb)
        return ta - tb;
    if (wa != wb)
        return wa - wb;
    for (const char *p = a + 1, *q = b + 1;;) {
        const char *pe = strchr(p, '/'), *qe = strchr(q, '/');
        if (!pe)
            pe = p + strlen(p);
        if (!qe)
            qe = q + strlen(q);
        int ka = segment_kind(p, (size_t)(pe - p), *pe == '\0');
        int kb = segment_kind(q, (size_t)(qe - q), *qe == '\0');
        if (ka != kb)
            return ka - kb;
        if (!*pe || !*qe)
            return 0;
        p = pe + 1;
        q = qe + 1;
    }
}

static void check_plan(const struct route_table *t, const struct config *cfg,
                       const struct route_request *rq, const struct plan *p)
{
    size_t path_len = rq->target_len;
    const char *q = memchr(rq->target, '?', rq->target_len);

    if (q)
        path_len = (size_t)(q - rq->target);
    /* Routed as its dot segments resolve (RFC 3986 section 5.2.4), the same rule
     * target_path_resolve is unit-tested against. */
    const char *path = rq->target;
    char resolved[256];
    if (path_len && path[0] == '/' && memmem(path, path_len, "/.", 2) &&
        path_len < sizeof resolved) {
        path_len = target_path_resolve(path, path_len, resolved);
        path = resolved;
        REQUIRE(path_len >= 1 && path[0] == '/' && !memmem(path, path_len, "/../", 4));
    }

    REQUIRE(p->status >= 100 && p->status <= 599);
    REQUIRE((unsigned)p->action <= PLAN_CLOSE);
    REQUIRE(p->delay_us <= t->max_delay_us);
    /* A drip or a truncation shapes a fixed answer with a body big enough for it. */
    REQUIRE(p->drip.over_us <= t->max_delay_us);
    REQUIRE(p->drip.chunks <= p->body_len);
    REQUIRE(!p->truncate || p->body_len > 0);
    if (p->drip.chunks || p->truncate)
        REQUIRE(p->action == PLAN_RESPOND && p->body != p->text && !p->cacheable);
    if (p->action == PLAN_RESET || p->action == PLAN_CLOSE)
        REQUIRE(p->route != NULL && p->body != p->text);
    REQUIRE(p->body_len == 0 || p->body != NULL);
    if (p->body_len > 0) {
        volatile char first = p->body[0], last = p->body[p->body_len - 1];
        (void)first;
        (void)last;
    }
    if (p->body == p->text)
        REQUIRE(p->body_len < sizeof p->text);
    if (p->timing) {
        uint64_t us = UINT64_MAX;
        size_t n = strlen(p->timing);

        REQUIRE(n < ROUTE_TIMING_LEN && strncmp(p->timing, "delay;dur=", 10) == 0);
        REQUIRE(delay_duration_parse(p->timing + 10, &us) == 0 && us == p->delay_us);
    } else {
        REQUIRE(p->delay_us == 0);
    }

    if (!p->route) {
        /* 404, or 405 for a path whose method did not match */
        REQUIRE(p->stats_id == ROUTE_STATS_OTHER(t));
        REQUIRE(p->body == p->text);
        REQUIRE(p->delay_us == 0 && p->timing == NULL);
        if (p->status == 405) {
            REQUIRE(p->allow != NULL);
        } else {
            REQUIRE(p->status == 404 && p->allow == NULL);
            for (size_t i = 0; i < t->count; i++)
                REQUIRE(t->routes[i].match == PATHTRIE_EXACT
                            ? strlen(t->routes[i].path) != path_len ||
                                  memcmp(t->routes[i].path, path, path_len) != 0
                            : !ref_matches(t->routes[i].path, path, path_len));
        }
        check_json_error(p);
        return;
    }

    const struct route *r = p->route;
    int own_body = p->body == r->body && p->body_len <= r->body_len;

    REQUIRE(p->route_id < t->count && &t->routes[p->route_id] == r);
    REQUIRE(p->stats_id == (r->counted ? p->route_id : STATS_UNCOUNTED));
    if (r->match == PATHTRIE_EXACT) {
        REQUIRE(strlen(r->path) == path_len && memcmp(r->path, path, path_len) == 0);
    } else {
        /* A template or wildcard: it matches, and no other route that matches beats it. */
        REQUIRE(ref_matches(r->path, path, path_len));
        for (size_t i = 0; i < t->count; i++) {
            const struct route *o = &t->routes[i];
            if (o == r)
                continue;
            if (o->match == PATHTRIE_EXACT)
                REQUIRE(strlen(o->path) != path_len || memcmp(o->path, path, path_len) != 0);
            else if (ref_matches(o->path, path, path_len))
                REQUIRE(ref_order(r->path, o->path) < 0);
        }
    }
    REQUIRE(method_ok(r->method, rq->method));
    REQUIRE(p->allow == NULL);
    if (!own_body && p->body != p->text)
        REQUIRE(p->body_len <= t->max_size);
    if (p->body == p->text) {
        check_json_error(p);
        if (p->status != cfg->error_status || cfg->error_rate == 0)
            REQUIRE(p->status == 400 || p->status == 503);
    }
    if (t->overrides && r->counted && p->body != p->text &&
        (p->status < 200 || p->status == 204 || p->status == 304))
        REQUIRE(p->body_len == 0);
    if (!t->overrides && p->body != p->text) {
        REQUIRE(p->status == r->status);
        REQUIRE(own_body && p->body_len == r->body_len);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t buflens[4] = {1, 3, 16, 128};
    static const char *const names[] = {"delay", "status", "size", ""};
    uint8_t flags = size ? data[0] : 0;
    const uint8_t *rest = size ? data + 1 : data;
    size_t len = size ? size - 1 : 0;
    size_t which = flags & 3, buflen = buflens[(flags >> 2) & 3];
    struct route_table *t = &tables[which];
    const char *fields[NFIELDS] = {NULL, NULL, NULL, NULL, NULL};
    size_t field_len[NFIELDS] = {0, 0, 0, 0, 0};
    char *copies[NFIELDS] = {NULL, NULL, NULL, NULL, NULL};
    size_t off = 0;

    /* target_query_param on the raw bytes */
    {
        char *query = malloc(len ? len : 1);
        char *buf = malloc(buflen);

        REQUIRE(query && buf);
        memcpy(query, rest, len);
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            checked_query_param(query, len, names[i], buf, buflen);
        free(query);
        free(buf);
    }

    for (size_t f = 0; f < NFIELDS && off <= len; f++) {
        const uint8_t *nul = memchr(rest + off, '\0', len - off);
        size_t n = nul ? (size_t)(nul - (rest + off)) : len - off;

        if (off == len && f > 0)
            break;
        fields[f] = (const char *)rest + off;
        field_len[f] = n;
        off += n + 1;
    }
    for (size_t f = 0; f < NFIELDS; f++) {
        if (!fields[f])
            continue;
        copies[f] = malloc(field_len[f] + 1);
        REQUIRE(copies[f] != NULL);
        memcpy(copies[f], fields[f], field_len[f]);
        copies[f][field_len[f]] = '\0';
    }

    if (copies[4]) {
        char *query = malloc(len ? len : 1);
        char *buf = malloc(buflen);

        REQUIRE(query && buf);
        memcpy(query, rest, len);
        checked_query_param(query, len, copies[4], buf, buflen);
        free(query);
        free(buf);
    }

    /* route_plan */
    {
        const char *method = copies[0] && copies[0][0] ? copies[0] : "GET";
        size_t tlen = copies[1] ? field_len[1] : 1;
        char *target = malloc(tlen ? tlen : 1);
        struct request_ctx ctx;
        struct route_request rq;
        struct stream_spec room;
        struct plan plan;
        const char *qm;

        REQUIRE(target != NULL);
        memcpy(target, copies[1] ? copies[1] : "/", tlen);
        memset(&ctx, 0, sizeof ctx);
        qm = memchr(target, '?', tlen);
        if (qm) {
            ctx.query = qm + 1;
            ctx.query_len = tlen - (size_t)(qm + 1 - target);
        }
        ctx.hdr_delay = copies[2];
        ctx.hdr_status = copies[3];
        memset(&rq, 0, sizeof rq);
        rq.method = method;
        rq.target = target;
        rq.target_len = tlen;
        rq.lookup = lookup;
        rq.ctx = &ctx;
        rq.stream_room = &room;
        memset(&plan, 0x5a, sizeof plan);
        route_plan(t, &rq, &plan);
        check_plan(t, &cfgs[which], &rq, &plan);
        free(target);
    }

    for (size_t f = 0; f < NFIELDS; f++)
        free(copies[f]);
    return 0;
}
