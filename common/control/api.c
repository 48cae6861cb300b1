#include "control/api.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/strmap.h"
#include "base/timer.h"
#include "base/utf8.h"
#include "control/scenario.h"

static void answer_json(struct control_answer *a, unsigned status, cJSON *o)
{
    a->status = status;
    a->body = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!a->body) {
        a->status = 500;
        a->body = strdup("{\"error\":\"out of memory\",\"status\":500}");
    }
    a->body_len = a->body ? strlen(a->body) : 0;
}

static void control_error(struct control_answer *a, unsigned status, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "error", msg);
        cJSON_AddNumberToObject(o, "status", status);
    }
    answer_json(a, status, o);
}

/* A 400 naming the field: why is "<key>: <reason>". */
static void field_error(struct control_answer *a, const char *why)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        const char *colon = strchr(why, ':');
        cJSON_AddStringToObject(o, "error", why);
        cJSON_AddNumberToObject(o, "status", 400);
        if (colon) {
            char field[64];
            size_t n =
                (size_t)(colon - why) < sizeof field - 1 ? (size_t)(colon - why) : sizeof field - 1;
            memcpy(field, why, n);
            field[n] = '\0';
            cJSON_AddStringToObject(o, "field", field);
        }
    }
    answer_json(a, 400, o);
}

static void add_header(struct control_answer *a, const char *name, const char *value);

static void not_allowed(struct control_answer *a, const char *allow)
{
    control_error(a, 405, "method not allowed");
    add_header(a, "Allow", allow);
}

/* Compares the whole of a and b in time that depends only on their lengths. */
static int same_secret(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char d = alen != blen;
    for (size_t i = 0; i < alen && i < blen; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

static int authorized(const struct control *c, const struct control_request *rq)
{
    const char *tok = c->cfg->control_bearer;
    if (!tok[0])
        return 1;
    if (!rq->authorization || rq->authorization_len < 7 ||
        strncasecmp(rq->authorization, "Bearer ", 7) != 0)
        return 0;
    return same_secret(rq->authorization + 7, rq->authorization_len - 7, tok, strlen(tok));
}

/* Percent-decodes PATH of a target "/routes/PATH" (p, n bytes) into out (len bytes) as the route
 * path "/PATH"; a PATH that starts with a slash, escaped or not, is the whole path, encoded as one
 * component ("%2Fapi%2Forders%2F%7Bid%7D": libmicrohttpd hands it over decoded once). Returns 0,
 * or -1 for a bad escape, a NUL or a path too long. */
static int route_path_of(const char *p, size_t n, char *out, size_t len)
{
    size_t o = 0;
    int whole = (n >= 1 && p[0] == '/') ||
                (n >= 3 && p[0] == '%' && p[1] == '2' && (p[2] == 'F' || p[2] == 'f'));
    if (!whole)
        out[o++] = '/';
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (ch == '%') {
            int hi = i + 2 < n + 1 && i + 1 < n ? target_hex_digit(p[i + 1]) : -1;
            int lo = i + 2 < n ? target_hex_digit(p[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -1;
            ch = (char)(hi * 16 + lo);
            i += 2;
        }
        if (ch == '\0' || o + 1 >= len)
            return -1;
        out[o++] = ch;
    }
    out[o] = '\0';
    return 0;
}

static void add_header(struct control_answer *a, const char *name, const char *value)
{
    if (a->nheaders < sizeof a->headers / sizeof a->headers[0]) {
        a->headers[a->nheaders].name = (char *)(uintptr_t)name;
        a->headers[a->nheaders++].value = (char *)(uintptr_t)value;
    }
}

static int is_loopback(const char *host)
{
    return strcmp(host, "127.0.0.1") == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

/* 1 if the Host of a request (host_len bytes) names the control listener: an IP address,
 * "localhost" or the --control address, with the listener's port or none. A DNS-rebinding page
 * reaches the listener under a name of its own, which is none of these. */
static int host_allowed(const struct control *c, const char *host, size_t len)
{
    char name[CONFIG_HOST_LEN + 2];
    const char *end = host + len;
    const char *colon = NULL;
    if (len && host[0] == '[') { /* [v6]:port */
        const char *close = memchr(host, ']', len);
        if (!close)
            return 0;
        colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
        if (close + 1 != end && !colon)
            return 0;
    } else {
        colon = memchr(host, ':', len);
    }
    size_t hl = (size_t)((colon ? colon : end) - host);
    if (colon) {
        char port[8];
        size_t pl = (size_t)(end - colon - 1);
        snprintf(port, sizeof port, "%u", c->svc->control_port);
        if (pl != strlen(port) || memcmp(colon + 1, port, pl) != 0)
            return 0;
    }
    if (hl == 0 || hl >= sizeof name)
        return 0;
    memcpy(name, host, hl);
    name[hl] = '\0';
    if (name[0] == '[') {
        memmove(name, name + 1, hl - 2);
        name[hl - 2] = '\0';
    }
    unsigned char addr[16];
    return inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1 ||
           strcasecmp(name, "localhost") == 0 || strcasecmp(name, c->cfg->control_host) == 0;
}

/* 1 if `origin` is the /ui page's: its scheme, a host the main port is reached by, the port. */
static int origin_allowed(const struct control *c, const char *origin, size_t len)
{
    const char *scheme = c->cfg->tls_cert[0] ? "https://" : "http://";
    size_t sl = strlen(scheme);
    char port[16], host[CONFIG_HOST_LEN + 2];
    snprintf(port, sizeof port, ":%u", c->svc->main_port);
    size_t pl = strlen(port);
    if (len <= sl + pl || strncmp(origin, scheme, sl) != 0 ||
        memcmp(origin + len - pl, port, pl) != 0)
        return 0;
    size_t hl = len - sl - pl;
    if (hl == 0 || hl >= sizeof host)
        return 0;
    memcpy(host, origin + sl, hl);
    host[hl] = '\0';
    if (host[0] == '[' && host[hl - 1] == ']') { /* [::1] */
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    if (strpbrk(host, "/@?#[] "))
        return 0;
    const char *bind = c->cfg->bind;
    if (strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0)
        return 1; /* any name of this host: the page came from wherever it was reached */
    if (strcmp(host, bind) == 0)
        return 1;
    return is_loopback(bind) && is_loopback(host);
}

static cJSON *routes_json(const struct route_table *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "routes") : NULL;
    if (!arr) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddNumberToObject(o, "generation", (double)t->generation);
    for (size_t i = 0; i < t->count; i++) {
        cJSON *r = control_route_json(&t->routes[i]);
        if (r)
            cJSON_AddItemToArray(arr, r);
    }
    return o;
}

/* After a change: {"generation": N, "route": {...}} (route may be absent). */
static void changed(struct control_answer *a, struct service *svc, long long gen, const char *path,
                    unsigned status)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        /* Taken like a request's: a later change (a ramp step, a reload) may retire it. */
        struct route_table *t = service_table_acquire(svc, svc->nshards);
        long i = path ? route_find(t, path) : -1;
        cJSON_AddNumberToObject(o, "generation", (double)gen);
        if (i >= 0)
            cJSON_AddItemToObject(o, "route", control_route_json(&t->routes[i]));
        service_table_release(svc, t, svc->nshards);
    }
    answer_json(a, status, o);
}

static void publish_failed(struct control_answer *a, long long rc)
{
    if (rc == -ENOSPC)
        control_error(a, 503,
                      "too many routes or generations still answering; retry when requests of "
                      "older generations have ended");
    else
        control_error(a, 500, "out of memory");
}

static void patch_route(struct control *c, const char *path, const cJSON *body, const char *who,
                        struct control_answer *a)
{
    struct control_list l;
    char why[CORE_ERR_LEN];
    if (!cJSON_IsObject(body)) {
        control_error(a, 400,
                      "body: must be a JSON object of route keys, e.g. {\"delay\": \"2s\"}");
        return;
    }
    service_change_lock(c->svc);
    struct route_table *t = service_live(c->svc);
    if (control_list_of(&l, t) != 0) {
        service_change_unlock(c->svc);
        control_error(a, 500, "out of memory");
        return;
    }
    int rc = control_list_edit(&l, t, path, control_edit_json, (void *)(uintptr_t)body,
                               c->cfg->max_delay_us, why, sizeof why);
    long at = rc == 0 ? control_list_find(&l, path) : -1;
    if (at >= 0)
        rc = control_engine_refuses(c->cfg, &l.r[at], why, sizeof why);
    long long gen = -1;
    if (rc == 0) {
        char *what = cJSON_PrintUnformatted(body);
        char line[512];
        snprintf(line, sizeof line, "PATCH %s %s", path, what ? what : "");
        free(what);
        gen = control_publish(c, &l, who, line, path, t);
    }
    service_change_unlock(c->svc);
    control_list_free(&l);
    if (rc == -ENOENT) {
        control_error(a, 404, "no such route; GET /routes lists them");
    } else if (rc == -EPERM) {
        control_error(a, 409,
                      "this route is built in and cannot change (/write, /healthz, /stats, "
                      "/metrics)");
    } else if (rc == -EINVAL) {
        field_error(a, why);
    } else if (rc != 0) {
        control_error(a, 500, "out of memory");
    } else if (gen < 0) {
        publish_failed(a, gen);
    } else {
        changed(a, c->svc, gen, path, 200);
    }
}

/* Reads one route object of a PUT or POST into r, checked as the config file does. */
static int read_route(const struct control *c, const cJSON *o, struct config_route *r, char *why,
                      size_t whylen)
{
    memset(r, 0, sizeof *r);
    r->status = 200;
    int rc = config_route_apply(r, o, 1, why, whylen);
    if (rc == 0 && !r->path) {
        snprintf(why, whylen, "path: missing");
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = config_route_check(r, c->cfg->max_delay_us, why, whylen);
    if (rc == 0)
        rc = control_engine_refuses(c->cfg, r, why, whylen);
    if (rc != 0)
        config_route_free(r);
    return rc;
}

/* 1 if path is a built-in route that no change may replace: one of the start table that is not a
 * fixed answer (/write, /healthz, /stats, /metrics, /ui and its files) and not a config route. */
static int built_in(const struct control *c, const char *path)
{
    const struct route_table *t = &c->svc->routes;
    long i = route_find(t, path);
    if (i < 0 || route_editable(&t->routes[i]))
        return 0;
    for (size_t k = 0; k < c->cfg->nroutes; k++)
        if (strcmp(c->cfg->routes[k].path, path) == 0)
            return 0;
    return 1;
}

/* PUT /routes: [route, ...] replaces the config's routes. */
static void put_routes(struct control *c, const cJSON *body, const char *who,
                       struct control_answer *a)
{
    struct control_list l = {0};
    struct strmap seen; /* the paths so far, to find one given twice */
    char why[CORE_ERR_LEN], msg[CORE_ERR_LEN + 32];
    const cJSON *arr =
        cJSON_IsObject(body) ? cJSON_GetObjectItemCaseSensitive(body, "routes") : body;
    if (!cJSON_IsArray(arr)) {
        control_error(a, 400, "body: must be an array of route objects (or {\"routes\": [...]})");
        return;
    }
    int n = cJSON_GetArraySize(arr);
    if (n > CONFIG_ROUTES_MAX) {
        snprintf(msg, sizeof msg, "routes: %d routes, over the limit of %d; send fewer", n,
                 CONFIG_ROUTES_MAX);
        control_error(a, 413, msg);
        return;
    }
    if (strmap_init(&seen, (size_t)n) != 0) {
        control_error(a, 500, "out of memory");
        return;
    }
    size_t i = 0;
    for (const cJSON *o = arr->child; o; o = o->next, i++) {
        struct config_route r;
        int rc = read_route(c, o, &r, why, sizeof why);
        if (rc != 0) {
            snprintf(msg, sizeof msg, "routes[%zu].%s", i, why);
        } else if (strmap_put(&seen, r.path, strlen(r.path), i) == -EEXIST) {
            snprintf(msg, sizeof msg, "routes[%zu].path: '%s' is given twice", i, r.path);
            config_route_free(&r);
            rc = -EINVAL;
        } else if (built_in(c, r.path)) {
            snprintf(msg, sizeof msg, "routes[%zu].path: %s is built in and cannot be replaced", i,
                     r.path);
            config_route_free(&r);
            rc = -EPERM;
        } else if ((rc = control_list_add(&l, &r)) != 0) {
            config_route_free(&r);
        }
        if (rc != 0) {
            strmap_cleanup(&seen);
            control_list_free(&l);
            if (rc == -EINVAL)
                field_error(a, msg);
            else if (rc == -EPERM)
                control_error(a, 409, msg);
            else
                control_error(a, 500, "out of memory");
            return;
        }
    }
    strmap_cleanup(&seen);
    size_t first, second;
    int clash = config_routes_clash(l.r, l.n, &first, &second);
    if (clash != 0) {
        if (clash > 0) {
            snprintf(msg, sizeof msg,
                     "routes[%zu].path: '%s' and routes[%zu] '%s' match the same paths and "
                     "neither is more precise; keep one",
                     second, l.r[second].path, first, l.r[first].path);
            control_error(a, 409, msg);
        } else {
            control_error(a, 500, "out of memory");
        }
        control_list_free(&l);
        return;
    }
    service_change_lock(c->svc);
    long long gen = control_publish(c, &l, who, "PUT /routes", NULL, service_live(c->svc));
    service_change_unlock(c->svc);
    control_list_free(&l);
    if (gen < 0)
        publish_failed(a, gen);
    else
        changed(a, c->svc, gen, NULL, 200);
}

/* POST /routes with CONFIG_ROUTES_MAX config routes already: 409. */
static void table_full(struct control_answer *a)
{
    char msg[128];
    snprintf(msg, sizeof msg, "path: the table holds %d routes, its limit; delete one first",
             CONFIG_ROUTES_MAX);
    control_error(a, 409, msg);
}

/* POST /routes: adds one route. */
static void add_route(struct control *c, const cJSON *body, const char *who,
                      struct control_answer *a)
{
    struct control_list l;
    struct config_route r;
    char why[CORE_ERR_LEN];
    if (read_route(c, body, &r, why, sizeof why) != 0) {
        field_error(a, why);
        return;
    }
    service_change_lock(c->svc);
    struct route_table *t = service_live(c->svc);
    long long gen = -1;
    int rc = control_list_of(&l, t);
    size_t first = 0, second = 0;
    char msg[CORE_ERR_LEN + 64];
    if (rc == 0 && route_find(t, r.path) >= 0) {
        rc = -EEXIST;
    } else if (rc == 0 && (rc = control_list_add(&l, &r)) == 0 &&
               (rc = config_routes_clash(l.r, l.n, &first, &second)) > 0) {
        snprintf(msg, sizeof msg,
                 "path: '%s' and the route '%s' match the same paths and neither is more "
                 "precise; PATCH or DELETE that one",
                 l.r[second].path, l.r[first].path);
        rc = -EBUSY;
    } else if (rc == 0) {
        char line[300];
        snprintf(line, sizeof line, "POST /routes %s", l.r[l.n - 1].path);
        gen = control_publish(c, &l, who, line, l.r[l.n - 1].path, t);
    }
    service_change_unlock(c->svc);
    if (rc == 0 && gen >= 0)
        changed(a, c->svc, gen, l.r[l.n - 1].path, 201); /* created */
    control_list_free(&l);
    config_route_free(&r);
    if (rc == -EEXIST)
        control_error(a, 409, "path: this route exists; PATCH /routes/PATH changes it");
    else if (rc == -EBUSY)
        control_error(a, 409, msg);
    else if (rc == -ENOSPC)
        table_full(a);
    else if (rc != 0)
        control_error(a, 500, "out of memory");
    else if (gen < 0)
        publish_failed(a, gen);
}

/* DELETE /routes/PATH: a route added at runtime goes. */
static void delete_route(struct control *c, const char *path, const char *who,
                         struct control_answer *a)
{
    struct control_list l;
    service_change_lock(c->svc);
    struct route_table *t = service_live(c->svc);
    long long gen = -1;
    int rc = control_list_of(&l, t);
    long i = rc == 0 ? control_list_find(&l, path) : -1;
    if (rc == 0 && route_find(&c->svc->routes, path) >= 0) {
        rc = -EPERM;
    } else if (rc == 0 && i < 0) {
        rc = -ENOENT;
    } else if (rc == 0) {
        config_route_free(&l.r[i]);
        memmove(&l.r[i], &l.r[i + 1], (l.n - (size_t)i - 1) * sizeof l.r[0]);
        l.n--;
        char line[300];
        snprintf(line, sizeof line, "DELETE %s", path);
        gen = control_publish(c, &l, who, line, path, t);
    }
    service_change_unlock(c->svc);
    control_list_free(&l);
    if (rc == -EPERM)
        control_error(a, 409,
                      "this route was there at the start; only routes added at runtime can be "
                      "deleted (PATCH changes it)");
    else if (rc == -ENOENT)
        control_error(a, 404, "no such route; GET /routes lists them");
    else if (rc != 0)
        control_error(a, 500, "out of memory");
    else if (gen < 0)
        publish_failed(a, gen);
    else
        changed(a, c->svc, gen, NULL, 200);
}

static void reset(struct control *c, const char *who, struct control_answer *a)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    stats_reset(c->svc->stats, now);
    uint64_t n;
    double at;
    stats_resets(c->svc->stats, &n, &at);
    LOG(c->log, LOG_LEVEL_INFO, "control: %s: POST /reset: run %llu of /stats begins", who,
        (unsigned long long)n + 1);
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddNumberToObject(o, "resets", (double)n);
        cJSON_AddNumberToObject(o, "reset_at", at);
    }
    answer_json(a, 200, o);
}

/* POST /scenario/start: now, or at the wall-clock instant of {"at": "<RFC 3339>"}. Returns 0
 * once started, or -EINVAL with the error answered. */
static int start_at(struct control *c, const cJSON *body, const char *who, struct control_answer *a)
{
    double at = 0;
    for (const cJSON *it = cJSON_IsObject(body) ? body->child : NULL; it; it = it->next) {
        if (strcmp(it->string, "at") != 0) {
            field_error(a, "body: unknown key (at)");
            return -EINVAL;
        }
        if (!cJSON_IsString(it) || config_time_parse(it->valuestring, &at) != 0) {
            field_error(a, "at: must be an RFC 3339 instant such as \"2026-12-04T10:00:00Z\"");
            return -EINVAL;
        }
    }
    if (body && !cJSON_IsObject(body)) {
        field_error(a, "body: must be {\"at\": \"<RFC 3339 instant>\"} or empty");
        return -EINVAL;
    }
    if (at > 0)
        scenario_start_at(c->scenario, at, who);
    else
        scenario_start(c->scenario, who);
    return 0;
}

static void scenario_answer(struct control *c, struct control_answer *a)
{
    cJSON *o = cJSON_CreateObject();
    if (o)
        scenario_report(c->scenario, o);
    answer_json(a, 200, o);
}

/* What is answered from the head alone: an Origin other than /ui's, a CORS preflight, a missing
 * or wrong token. Returns 1 when *out is the answer; an allowed Origin's CORS headers are added
 * to *out either way. */
static int gate(struct control *c, const struct control_request *rq, struct control_answer *out)
{
    /* A browser's page: only /ui's own origin, which the preflight lets send the token. */
    if (rq->origin) {
        if (!origin_allowed(c, rq->origin, rq->origin_len)) {
            control_error(out, 403,
                          "origin not allowed: only the /ui page of this server may call the "
                          "control API from a browser");
            return 1;
        }
        size_t n =
            rq->origin_len < sizeof out->origin - 1 ? rq->origin_len : sizeof out->origin - 1;
        memcpy(out->origin, rq->origin, n);
        out->origin[n] = '\0';
        add_header(out, "Access-Control-Allow-Origin", out->origin);
        add_header(out, "Vary", "Origin");
        if (strcmp(rq->method, "OPTIONS") == 0) {
            out->status = 204;
            add_header(out, "Access-Control-Allow-Methods", "GET, HEAD, PATCH, POST, PUT, DELETE");
            add_header(out, "Access-Control-Allow-Headers", "Authorization, Content-Type");
            add_header(out, "Access-Control-Max-Age", "600");
            return 1;
        }
    }
    /* Without a token, the Host must name the listener (a browser always sends one). */
    if (!c->cfg->control_bearer[0] && rq->host && !host_allowed(c, rq->host, rq->host_len)) {
        control_error(out, 403,
                      "Host does not name the control listener: use its address (127.0.0.1:PORT), "
                      "or give --control-token to call it by another name");
        return 1;
    }
    if (!authorized(c, rq)) {
        control_error(out, 401,
                      "missing or wrong token: send Authorization: Bearer <the --control-token "
                      "file's token>");
        add_header(out, "WWW-Authenticate", "Bearer realm=\"slowsrv control\"");
        return 1;
    }
    return 0;
}

static void handle(struct control *c, const struct control_request *rq, struct control_answer *out)
{
    const char *m = rq->method;
    const char *who = rq->who ? rq->who : "?";
    size_t plen = rq->target_len;
    const char *q = memchr(rq->target, '?', plen);
    if (q)
        plen = (size_t)(q - rq->target);
    char path[512];
    if (plen >= sizeof path) {
        control_error(out, 414, "path too long");
        return;
    }
    memcpy(path, rq->target, plen);
    path[plen] = '\0';

    if (gate(c, rq, out))
        return;
    if (rq->body_len > CONTROL_BODY_MAX || (rq->body_len && !rq->body)) {
        control_error(out, 413, "body over 16 MiB: send fewer routes at a time");
        return;
    }
    /* JSON is UTF-8 text (RFC 8259); a NUL, sent or escaped, would cut a string short. */
    if (rq->body_len &&
        (!utf8_valid(rq->body, rq->body_len) || memchr(rq->body, '\0', rq->body_len) ||
         memmem(rq->body, rq->body_len, "\\u0000", 6))) {
        control_error(out, 400, "body: must be UTF-8 JSON without NUL characters (\\u0000)");
        return;
    }
    cJSON *body = NULL;
    if (rq->body_len) {
        body = cJSON_ParseWithLength(rq->body, rq->body_len);
        if (!body) {
            control_error(out, 400, "body: malformed JSON");
            return;
        }
        char why[200];
        if (config_json_unique_keys(body, why, sizeof why) != 0) {
            field_error(out, why);
            cJSON_Delete(body);
            return;
        }
    }
    int get = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
    if (strcmp(path, "/routes") == 0) {
        if (get) {
            struct route_table *t = service_table_acquire(c->svc, c->svc->nshards);
            answer_json(out, 200, routes_json(t));
            service_table_release(c->svc, t, c->svc->nshards);
        } else if (strcmp(m, "PUT") == 0) {
            put_routes(c, body, who, out);
        } else if (strcmp(m, "POST") == 0) {
            add_route(c, body, who, out);
        } else {
            not_allowed(out, "GET, HEAD, PUT, POST");
        }
    } else if (strncmp(path, "/routes/", 8) == 0) {
        char rpath[512];
        if (route_path_of(rq->target + 8, plen - 8, rpath, sizeof rpath) != 0) {
            control_error(out, 400, "path: bad percent-encoding");
        } else if (get) {
            struct route_table *t = service_table_acquire(c->svc, c->svc->nshards);
            long i = route_find(t, rpath);
            if (i < 0)
                control_error(out, 404, "no such route; GET /routes lists them");
            else
                answer_json(out, 200, control_route_json(&t->routes[i]));
            service_table_release(c->svc, t, c->svc->nshards);
        } else if (strcmp(m, "PATCH") == 0) {
            patch_route(c, rpath, body, who, out);
        } else if (strcmp(m, "DELETE") == 0) {
            delete_route(c, rpath, who, out);
        } else {
            not_allowed(out, "GET, HEAD, PATCH, DELETE");
        }
    } else if (strcmp(path, "/reset") == 0) {
        if (strcmp(m, "POST") == 0)
            reset(c, who, out);
        else
            not_allowed(out, "POST");
    } else if (strcmp(path, "/scenario") == 0) {
        if (get)
            scenario_answer(c, out);
        else
            not_allowed(out, "GET, HEAD");
    } else if (strcmp(path, "/scenario/start") == 0 || strcmp(path, "/scenario/stop") == 0) {
        int start = path[10] == 's' && path[11] == 't' && path[12] == 'a';
        if (strcmp(m, "POST") != 0) {
            not_allowed(out, "POST");
        } else if (!scenario_phases(c->scenario)) {
            control_error(out, 409, "no scenario: give one in the config file's \"scenario\"");
        } else if (start && start_at(c, body, who, out) == 0) {
            scenario_answer(c, out);
        } else if (!start) {
            scenario_stop(c->scenario, who);
            scenario_answer(c, out);
        }
    } else {
        control_error(out, 404,
                      "no such control endpoint; try /routes, /reset, /scenario (see the README)");
    }
    cJSON_Delete(body);
}

/* The headers every answer of the API carries. */
static void finish(struct control_answer *out)
{
    if (out->status != 204)
        add_header(out, "Content-Type", "application/json");
    out->close = 1;
}

int control_check(struct control *c, const struct control_request *rq, struct control_answer *out)
{
    memset(out, 0, sizeof *out);
    if (!gate(c, rq, out)) {
        free(out->body);
        memset(out, 0, sizeof *out);
        return 0;
    }
    finish(out);
    return 1;
}

void control_handle(struct control *c, const struct control_request *rq, struct control_answer *out)
{
    memset(out, 0, sizeof *out);
    handle(c, rq, out);
    finish(out);
}

static int hook_check(void *c, const struct control_request *rq, struct control_answer *out)
{
    return control_check(c, rq, out);
}

static void hook_handle(void *c, const struct control_request *rq, struct control_answer *out)
{
    control_handle(c, rq, out);
}

void control_hook(struct control *c, struct service_control *out)
{
    *out = (struct service_control){c, hook_check, hook_handle};
}

int control_init(struct control *c, struct service *svc, const struct config *cfg,
                 const struct log *lg, char *err, size_t errlen)
{
    c->svc = svc;
    c->cfg = cfg;
    c->log = lg;
    c->scenario = NULL;
    c->base = NULL;
    c->scenario_manual = cfg->scenario_manual;
    c->scenario_at = cfg->scenario_at;
    c->scenario_json = cfg->scenario ? strdup(cfg->scenario) : NULL;
    if (cfg->scenario && !c->scenario_json) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    /* A config file may bring a scenario when it is reloaded. */
    if (!cfg->scenario && !cfg->config_file[0])
        return 0;
    int rc = scenario_new(&c->scenario, c, err, errlen);
    if (rc != 0)
        control_cleanup(c);
    return rc;
}

void control_cleanup(struct control *c)
{
    scenario_free(c->scenario);
    c->scenario = NULL;
    if (c->base) {
        route_table_cleanup(c->base);
        free(c->base);
        c->base = NULL;
    }
    free(c->scenario_json);
    c->scenario_json = NULL;
}
