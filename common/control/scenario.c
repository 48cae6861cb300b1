#include "control/scenario.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <time.h>

#include "control/control.h"
#include "plan/delay.h"
#include "plan/route.h"
#include "run/service.h"
#include "base/timer.h"

#define SCENARIO_PHASES_MAX 256
#define RAMPS_MAX 16

/* What a ramp moves ("of"), and the route key that sets it. */
enum { RAMP_DELAY, RAMP_STREAM_GAP, RAMP_WS_DELAY, RAMP_KINDS };
static const struct {
    const char *name, *key;
} ramp_of[RAMP_KINDS] = {
    {"delay", "delay"}, {"stream-gap", "stream"}, {"websocket-delay", "websocket"}};

struct ramp {
    char *path;
    struct delay_spec from, to;
    uint64_t over_us;
    int of; /* what it ramps: RAMP_DELAY, RAMP_STREAM_GAP or RAMP_WS_DELAY ("of") */
};

struct phase {
    uint64_t at_us;
    char *name;         /* or NULL */
    int restore;        /* every route back as at the start first */
    cJSON *routes;      /* path -> PATCH object, or NULL */
    struct ramp *ramps; /* nramps */
    size_t nramps;
};

/* A ramp under way. */
struct running_ramp {
    const struct ramp *r;
    uint64_t begun_us; /* timer_now_us clock */
    uint64_t next_us;  /* next step */
    size_t phase;
};

struct scenario {
    struct control *ctl;
    struct phase *phases;
    size_t n;
    pthread_t thread;
    int thread_started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int quit;
    int running;
    uint64_t runs;      /* starts so far */
    int64_t t0_us;      /* this run's start, timer clock (before the boot for an instant then) */
    double t0_unix;     /* and Unix time */
    size_t next;        /* the next phase to begin */
    double *began_unix; /* when each phase began in this run, 0 if not yet */
    struct running_ramp ramps[RAMPS_MAX];
    size_t nramps;
};

static double unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void free_phases(struct phase *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        free(p[i].name);
        cJSON_Delete(p[i].routes);
        for (size_t k = 0; k < p[i].nramps; k++)
            free(p[i].ramps[k].path);
        free(p[i].ramps);
    }
    free(p);
}

/* A duration as "at" and "over" take it: a string ("60s") or a number of milliseconds. */
static int json_duration(const cJSON *it, uint64_t *us)
{
    char buf[64];
    if (cJSON_IsString(it))
        return delay_duration_parse(it->valuestring, us);
    if (cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble < 1e12) {
        snprintf(buf, sizeof buf, "%.3f", it->valuedouble);
        /* trim a zero fraction the parser would refuse below 1 us */
        char *dot = strchr(buf, '.');
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '0')
            buf[--n] = '\0';
        if (dot && buf[n - 1] == '.')
            buf[--n] = '\0';
        return delay_duration_parse(buf, us);
    }
    return -EINVAL;
}

static int parse_ramp(const cJSON *o, struct ramp *r, char *why, size_t whylen)
{
    char derr[256];
    int have = 0;
    if (!cJSON_IsObject(o)) {
        snprintf(why, whylen, "must be {\"from\": SPEC, \"to\": SPEC, \"over\": TIME}");
        return -EINVAL;
    }
    for (const cJSON *it = o->child; it; it = it->next) {
        struct delay_spec *spec = strcmp(it->string, "from") == 0 ? &r->from
                                  : strcmp(it->string, "to") == 0 ? &r->to
                                                                  : NULL;
        if (spec) {
            if (!cJSON_IsString(it) || delay_spec_parse(spec, it->valuestring, derr, sizeof derr)) {
                snprintf(why, whylen, "%s: %s", it->string,
                         cJSON_IsString(it) ? derr : "must be a delay spec string");
                return -EINVAL;
            }
            have |= spec == &r->from ? 1 : 2;
        } else if (strcmp(it->string, "of") == 0) {
            r->of = -1;
            for (int k = 0; cJSON_IsString(it) && k < RAMP_KINDS; k++)
                if (strcmp(it->valuestring, ramp_of[k].name) == 0)
                    r->of = k;
            if (r->of < 0) {
                snprintf(why, whylen,
                         "of: must be \"delay\", \"stream-gap\" or \"websocket-delay\"");
                return -EINVAL;
            }
        } else if (strcmp(it->string, "over") == 0) {
            if (json_duration(it, &r->over_us) != 0 || r->over_us == 0) {
                snprintf(why, whylen, "over: must be a duration above 0 (e.g. \"30s\")");
                return -EINVAL;
            }
            have |= 4;
        } else {
            snprintf(why, whylen, "%s: unknown key (from, to, over, of)", it->string);
            return -EINVAL;
        }
    }
    if (have != 7) {
        snprintf(why, whylen, "%s: missing", !(have & 1) ? "from" : !(have & 2) ? "to" : "over");
        return -EINVAL;
    }
    const struct delay_spec *a = &r->from, *b = &r->to;
    int same = a->kind == b->kind && a->nmix == b->nmix && a->npct == b->npct;
    for (size_t i = 0; same && i < a->nmix; i++)
        same = a->mix[i].percent == b->mix[i].percent;
    for (size_t i = 0; same && i < a->npct; i++)
        same = a->pct[i].rank == b->pct[i].rank;
    if (!same) {
        snprintf(why, whylen,
                 "to: must be of the same form as from (e.g. 100ms to 2s, or normal:.. to "
                 "normal:..; mixes with the same weights, percentiles with the same ranks)");
        return -EINVAL;
    }
    return 0;
}

/* Parses the scenario JSON into phases (values only; routes are checked by simulate). */
static int parse(const char *json, struct phase **out, size_t *nout, char *why, size_t whylen)
{
    cJSON *arr = cJSON_Parse(json);
    int rc = 0;
    size_t n = arr ? (size_t)cJSON_GetArraySize(arr) : 0;
    struct phase *ph = NULL;
    if (!cJSON_IsArray(arr)) {
        snprintf(why, whylen, "scenario: must be an array of phases");
        cJSON_Delete(arr);
        return -EINVAL;
    }
    if (n > SCENARIO_PHASES_MAX) {
        snprintf(why, whylen, "scenario: at most %d phases", SCENARIO_PHASES_MAX);
        cJSON_Delete(arr);
        return -EINVAL;
    }
    ph = calloc(n ? n : 1, sizeof *ph);
    if (!ph) {
        cJSON_Delete(arr);
        return -ENOMEM;
    }
    size_t i = 0;
    for (const cJSON *o = arr->child; rc == 0 && o; o = o->next, i++) {
        struct phase *p = &ph[i];
        int has_at = 0;
        if (!cJSON_IsObject(o)) {
            snprintf(why, whylen, "scenario[%zu]: must be an object with \"at\"", i);
            rc = -EINVAL;
            break;
        }
        for (const cJSON *it = o->child; rc == 0 && it; it = it->next) {
            const char *k = it->string;
            if (strcmp(k, "at") == 0) {
                if (json_duration(it, &p->at_us) != 0) {
                    snprintf(why, whylen, "scenario[%zu].at: must be a duration such as \"60s\"",
                             i);
                    rc = -EINVAL;
                }
                has_at = 1;
            } else if (strcmp(k, "name") == 0) {
                if (!cJSON_IsString(it) || strlen(it->valuestring) > 64) {
                    snprintf(why, whylen,
                             "scenario[%zu].name: must be a string of at most 64 "
                             "bytes",
                             i);
                    rc = -EINVAL;
                } else {
                    free(p->name);
                    p->name = strdup(it->valuestring);
                }
            } else if (strcmp(k, "restore") == 0) {
                if (!cJSON_IsBool(it)) {
                    snprintf(why, whylen, "scenario[%zu].restore: must be true or false", i);
                    rc = -EINVAL;
                }
                p->restore = cJSON_IsTrue(it);
            } else if (strcmp(k, "routes") == 0) {
                if (!cJSON_IsObject(it)) {
                    snprintf(why, whylen,
                             "scenario[%zu].routes: must be an object of paths and changes, "
                             "e.g. {\"/test\": {\"delay\": \"2s\"}}",
                             i);
                    rc = -EINVAL;
                } else {
                    cJSON_Delete(p->routes);
                    p->routes = cJSON_Duplicate(it, 1);
                }
            } else if (strcmp(k, "ramp") == 0) {
                size_t nr = cJSON_IsObject(it) ? (size_t)cJSON_GetArraySize(it) : 0;
                if (!cJSON_IsObject(it) || nr > RAMPS_MAX) {
                    snprintf(
                        why, whylen,
                        "scenario[%zu].ramp: must be an object of at most %d paths, e.g. "
                        "{\"/test\": {\"from\": \"100ms\", \"to\": \"2s\", \"over\": \"60s\"}}",
                        i, RAMPS_MAX);
                    rc = -EINVAL;
                    break;
                }
                p->ramps = calloc(nr ? nr : 1, sizeof *p->ramps);
                if (!p->ramps) {
                    rc = -ENOMEM;
                    break;
                }
                for (const cJSON *r = it->child; rc == 0 && r; r = r->next) {
                    char rwhy[CORE_ERR_LEN];
                    struct ramp *rp = &p->ramps[p->nramps];
                    rp->path = strdup(r->string);
                    p->nramps++;
                    if (parse_ramp(r, rp, rwhy, sizeof rwhy) != 0) {
                        snprintf(why, whylen, "scenario[%zu].ramp.%.100s.%.300s", i, r->string,
                                 rwhy);
                        rc = -EINVAL;
                    }
                }
            } else {
                snprintf(why, whylen,
                         "scenario[%zu].%s: unknown key (at, name, routes, ramp, restore)", i, k);
                rc = -EINVAL;
            }
        }
        if (rc == 0 && !has_at) {
            snprintf(why, whylen, "scenario[%zu].at: missing", i);
            rc = -EINVAL;
        }
        if (rc == 0 && i > 0 && p->at_us < ph[i - 1].at_us) {
            snprintf(why, whylen, "scenario[%zu].at: phases must be in order of \"at\"", i);
            rc = -EINVAL;
        }
    }
    cJSON_Delete(arr);
    if (rc != 0) {
        free_phases(ph, n);
        return rc;
    }
    *out = ph;
    *nout = n;
    return 0;
}

struct delay_edit {
    const struct delay_spec *spec;
};

static int set_delay(struct config_route *r, void *ctx, char *why, size_t whylen)
{
    (void)why;
    (void)whylen;
    r->has_delay = 1;
    r->delay = *((const struct delay_edit *)ctx)->spec;
    return 0;
}

/* A ramp of a stream's gap: the route must have a stream already (its phase's routes, or an
 * earlier change, give it one). */
static int set_gap(struct config_route *r, void *ctx, char *why, size_t whylen)
{
    if (r->stream.format == STREAM_NONE) {
        snprintf(why, whylen,
                 "the route has no stream to ramp the gap of; give it one first (\"routes\": "
                 "{PATH: {\"stream\": \"sse\"}})");
        return -EINVAL;
    }
    r->stream.gap = *((const struct delay_edit *)ctx)->spec;
    return 0;
}

/* A ramp of a WebSocket route's echo delay: the route must be one already. */
static int set_ws_delay(struct config_route *r, void *ctx, char *why, size_t whylen)
{
    if (!r->ws.on) {
        snprintf(why, whylen,
                 "the route is no WebSocket route to ramp the echo delay of; give it one first "
                 "(\"routes\": {PATH: {\"websocket\": \"echo\"}})");
        return -EINVAL;
    }
    r->ws.delay = *((const struct delay_edit *)ctx)->spec;
    return 0;
}

/* The edit ramp r makes: the route's delay, its stream's gap or its WebSocket echo delay. */
static int (*ramp_edit(const struct ramp *r))(struct config_route *, void *, char *, size_t)
{
    return r->of == RAMP_STREAM_GAP ? set_gap : r->of == RAMP_WS_DELAY ? set_ws_delay : set_delay;
}

/* The spec at fraction f (0..1) of the way from a to b (of the same form). */
static struct delay_spec ramp_at(const struct ramp *r, double f)
{
    struct delay_spec s = r->from;
    const struct delay_spec *a = &r->from, *b = &r->to;
#define MIX(x, y) ((uint64_t)llround((double)(x) + ((double)(y) - (double)(x)) * f))
    s.a_us = MIX(a->a_us, b->a_us);
    s.b_us = MIX(a->b_us, b->b_us);
    s.sigma = a->sigma + (b->sigma - a->sigma) * f;
    for (size_t i = 0; i < a->nmix; i++)
        s.mix[i].us = MIX(a->mix[i].us, b->mix[i].us);
    for (size_t i = 0; i < a->npct; i++)
        s.pct[i].us = MIX(a->pct[i].us, b->pct[i].us);
#undef MIX
    return s;
}

/* Applies phase p's changes to l (made from table t; `start` the table of the config file last
 * loaded). Returns 0,
 * or -EINVAL with "routes./path.key: reason" in why. */
static int apply_phase(const struct phase *p, struct control_list *l, const struct route_table *t,
                       const struct route_table *start, const struct config *cfg, char *why,
                       size_t whylen)
{
    uint64_t max_delay_us = cfg->max_delay_us;
    char kwhy[CORE_ERR_LEN];
    if (p->restore) {
        control_list_free(l);
        if (control_list_of(l, start) != 0)
            return -ENOMEM;
        t = start;
    }
    for (const cJSON *it = p->routes ? p->routes->child : NULL; it; it = it->next) {
        int rc = control_list_edit(l, t, it->string, control_edit_json, (void *)(uintptr_t)it,
                                   max_delay_us, kwhy, sizeof kwhy);
        long at = rc == 0 ? control_list_find(l, it->string) : -1;
        if (at >= 0)
            rc = control_engine_refuses(cfg, &l->r[at], kwhy, sizeof kwhy);
        if (rc == -ENOENT)
            snprintf(why, whylen, "routes.%s: no such route", it->string);
        else if (rc == -EPERM)
            snprintf(why, whylen, "routes.%s: a built-in route that cannot change", it->string);
        else if (rc != 0)
            snprintf(why, whylen, "routes.%.100s.%.300s", it->string, kwhy);
        if (rc != 0)
            return rc == -ENOMEM ? rc : -EINVAL;
    }
    for (size_t k = 0; k < p->nramps; k++) {
        const struct ramp *r = &p->ramps[k];
        for (int end = 0; end < 2; end++) {
            struct delay_edit e = {end ? &r->to : &r->from};
            int rc =
                control_list_edit(l, t, r->path, ramp_edit(r), &e, max_delay_us, kwhy, sizeof kwhy);
            if (rc == -ENOENT)
                snprintf(why, whylen, "ramp.%s: no such route", r->path);
            else if (rc == -EPERM)
                snprintf(why, whylen, "ramp.%s: a built-in route that cannot change", r->path);
            else if (rc != 0)
                snprintf(why, whylen, "ramp.%.100s.%s: %.300s", r->path, end ? "to" : "from", kwhy);
            if (rc != 0)
                return rc == -ENOMEM ? rc : -EINVAL;
        }
        /* The phase leaves the ramp at its start; the steps follow. */
        struct delay_edit e = {&r->from};
        control_list_edit(l, t, r->path, ramp_edit(r), &e, max_delay_us, kwhy, sizeof kwhy);
    }
    return 0;
}

int scenario_check(const struct config *cfg, char *err, size_t errlen)
{
    struct phase *ph;
    size_t n;
    char why[CORE_ERR_LEN];
    const char *file = cfg->config_file[0] ? cfg->config_file : "config";
    if (!cfg->scenario)
        return 0;
    int rc = parse(cfg->scenario, &ph, &n, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", file, rc == -ENOMEM ? "out of memory" : why);
        return rc;
    }
    /* Runs the phases on a table of the start, as the server would. */
    struct route_table *start = malloc(sizeof *start);
    struct control_list *l = malloc(sizeof *l);
    if (!start || !l) {
        free(start);
        free(l);
        free_phases(ph, n);
        snprintf(err, errlen, "%s: out of memory", file);
        return -ENOMEM;
    }
    if (route_table_init(start, cfg) != 0) {
        free(start);
        free(l);
        free_phases(ph, n);
        snprintf(err, errlen, "%s: out of memory", file);
        return -ENOMEM;
    }
    rc = control_list_of(l, start);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = apply_phase(&ph[i], l, start, start, cfg, why, sizeof why);
        if (rc != 0)
            snprintf(err, errlen, "%s: scenario[%zu].%s", file, i, why);
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", file);
    control_list_free(l);
    route_table_cleanup(start);
    free(start);
    free(l);
    free_phases(ph, n);
    return rc;
}

/* 1 if phase p sets what ramp r moves: it restores every route, ramps the same on r's route,
 * or gives that route the key that sets it ("delay", "stream" or "websocket"). r ends
 * there. */
static int supersedes(const struct phase *p, const struct ramp *r)
{
    if (p->restore)
        return 1;
    for (size_t k = 0; k < p->nramps; k++)
        if (strcmp(p->ramps[k].path, r->path) == 0 && p->ramps[k].of == r->of)
            return 1;
    const cJSON *o = p->routes ? cJSON_GetObjectItemCaseSensitive(p->routes, r->path) : NULL;
    return cJSON_GetObjectItemCaseSensitive(o, ramp_of[r->of].key) != NULL;
}

/* When phase i is due on the run's clock (the timer clock; 0 for an instant before the boot). */
static uint64_t due_of(const struct scenario *s, size_t i)
{
    int64_t at = s->t0_us + (int64_t)s->phases[i].at_us;
    return at > 0 ? (uint64_t)at : 0;
}

/* Publishes phase i. Its ramps run from when it was due, so that a start at an instant already
 * past joins a ramp where the others are; a ramp of an earlier phase whose route this one sets
 * ends. With s->lock held. */
static void begin_phase(struct scenario *s, size_t i, uint64_t now)
{
    struct control *c = s->ctl;
    const struct phase *p = &s->phases[i];
    struct control_list l;
    char why[CORE_ERR_LEN], who[128], what[160];
    snprintf(who, sizeof who, "scenario phase %zu%s%s%s", i, p->name ? " (" : "",
             p->name ? p->name : "", p->name ? ")" : "");
    s->began_unix[i] = unix_now();
    if (!p->restore && !p->nramps && !(p->routes && p->routes->child)) {
        /* A phase that only names a stretch of time: nothing to publish. */
        LOG(c->log, LOG_LEVEL_INFO, "control: %s: at %.3f s: no change", who,
            (double)p->at_us / 1e6);
        return;
    }
    service_change_lock(c->svc);
    struct route_table *t = service_live(c->svc);
    int rc = control_list_of(&l, t);
    if (rc == 0)
        rc = apply_phase(p, &l, t, c->base ? c->base : &c->svc->routes, c->cfg, why, sizeof why);
    if (rc == 0) {
        const char *path = p->routes && p->routes->child ? p->routes->child->string
                           : p->nramps                   ? p->ramps[0].path
                                                         : NULL;
        snprintf(what, sizeof what, "at %.3f s%s%s", (double)p->at_us / 1e6,
                 p->restore ? ", restore" : "", p->nramps ? ", ramp begins" : "");
        long long gen = control_publish(c, &l, who, what, path, t);
        if (gen < 0)
            LOG(c->log, LOG_LEVEL_WARN, "control: %s: not applied: %s", who,
                gen == -ENOSPC ? "too many generations still answering" : "out of memory");
    } else {
        LOG(c->log, LOG_LEVEL_WARN, "control: %s: not applied: %s", who,
            rc == -ENOMEM ? "out of memory" : why);
    }
    service_change_unlock(c->svc);
    control_list_free(&l);
    for (size_t k = 0; k < s->nramps;) {
        if (supersedes(p, s->ramps[k].r))
            s->ramps[k] = s->ramps[--s->nramps];
        else
            k++;
    }
    for (size_t k = 0; k < p->nramps && s->nramps < RAMPS_MAX; k++)
        s->ramps[s->nramps++] = (struct running_ramp){&p->ramps[k], due_of(s, i), now, i};
}

static uint64_t step_of(const struct ramp *r)
{
    uint64_t step = r->over_us / 10;
    return step < SCENARIO_RAMP_STEP_US ? (step < 10000 ? 10000 : step) : SCENARIO_RAMP_STEP_US;
}

/* One step of ramp k; returns 1 when it has reached its end. With s->lock held. */
static int step_ramp(struct scenario *s, size_t k, uint64_t now)
{
    struct control *c = s->ctl;
    struct running_ramp *rr = &s->ramps[k];
    uint64_t el = now > rr->begun_us ? now - rr->begun_us : 0;
    int last = el >= rr->r->over_us;
    struct delay_spec spec = last ? rr->r->to : ramp_at(rr->r, (double)el / (double)rr->r->over_us);
    struct delay_edit e = {&spec};
    struct control_list l;
    char why[CORE_ERR_LEN];
    service_change_lock(c->svc);
    struct route_table *t = service_live(c->svc);
    if (control_list_of(&l, t) == 0 &&
        control_list_edit(&l, t, rr->r->path, ramp_edit(rr->r), &e, c->cfg->max_delay_us, why,
                          sizeof why) == 0) {
        if (last) {
            char who[64];
            snprintf(who, sizeof who, "scenario phase %zu", rr->phase);
            control_publish(c, &l, who, "ramp ends", rr->r->path, t);
        } else {
            service_publish(c->svc, l.r, l.n); /* a step: counted, not logged */
        }
        control_list_free(&l);
    }
    service_change_unlock(c->svc);
    rr->next_us = now + step_of(rr->r);
    return last;
}

static void *run(void *arg)
{
    struct scenario *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->quit) {
        if (!s->running) {
            pthread_cond_wait(&s->cond, &s->lock);
            continue;
        }
        uint64_t now = timer_now_us();
        while (s->next < s->n && s->t0_us + (int64_t)s->phases[s->next].at_us <= (int64_t)now) {
            begin_phase(s, s->next, now);
            s->next++;
        }
        for (size_t k = 0; k < s->nramps;) {
            if (s->ramps[k].next_us <= now && step_ramp(s, k, now))
                s->ramps[k] = s->ramps[--s->nramps];
            else
                k++;
        }
        if (s->next == s->n && !s->nramps) {
            /* Its last phase began and every ramp reached its end: the run is over. */
            s->running = 0;
            LOG(s->ctl->log, LOG_LEVEL_INFO, "control: scenario: run %llu ends after phase %zu",
                (unsigned long long)s->runs, s->n ? s->n - 1 : 0);
            continue;
        }
        uint64_t wake = UINT64_MAX;
        if (s->next < s->n)
            wake = (uint64_t)MAX(s->t0_us + (int64_t)s->phases[s->next].at_us, 0);
        for (size_t k = 0; k < s->nramps; k++)
            if (s->ramps[k].next_us < wake)
                wake = s->ramps[k].next_us;
        if (wake == UINT64_MAX) {
            pthread_cond_wait(&s->cond, &s->lock);
            continue;
        }
        now = timer_now_us();
        if (wake <= now)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        /* At most an hour at a time: an instant years ahead would overflow the nanoseconds. */
        uint64_t ahead = MIN(wake - now, 3600ULL * 1000000);
        uint64_t ns = (uint64_t)ts.tv_nsec + ahead * 1000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* The phases of json (NULL: none) and room for when each began. */
static int make_phases(const char *json, struct phase **ph, size_t *n, double **began, char *why,
                       size_t whylen)
{
    *ph = NULL;
    *n = 0;
    *began = NULL;
    int rc = json ? parse(json, ph, n, why, whylen) : 0;
    if (rc == 0 && !(*began = calloc(*n ? *n : 1, sizeof **began))) {
        free_phases(*ph, *n);
        *ph = NULL;
        snprintf(why, whylen, "out of memory");
        rc = -ENOMEM;
    }
    return rc;
}

int scenario_new(struct scenario **out, struct control *c, char *err, size_t errlen)
{
    char why[CORE_ERR_LEN];
    *out = NULL;
    int rc = scenario_check(c->cfg, err, errlen);
    if (rc != 0)
        return rc;
    struct scenario *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->ctl = c;
    rc = make_phases(c->cfg->scenario, &s->phases, &s->n, &s->began_unix, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "scenario: %s", why);
        free(s);
        return rc;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        snprintf(err, errlen, "scenario: cannot start its thread");
        scenario_free(s);
        return -ENOMEM;
    }
    s->thread_started = 1;
    *out = s;
    return 0;
}

/* Starts the run at Unix time at_unix (0: now). With s->lock held. */
static void start_locked(struct scenario *s, double at_unix, const char *who)
{
    uint64_t now_us = timer_now_us();
    double now_unix = unix_now();
    s->running = 1;
    s->runs++;
    s->t0_us = (int64_t)now_us;
    s->t0_unix = now_unix;
    if (at_unix > 0) {
        /* The instant on the monotonic clock: ahead, or behind for a start already past (its
         * phases due by now begin at once, so that a late replica joins the others' phase). */
        double ahead_us = (at_unix - now_unix) * 1e6;
        if (ahead_us >= 0)
            s->t0_us = (int64_t)now_us + (int64_t)ahead_us;
        else
            s->t0_us = (int64_t)now_us - (int64_t)-ahead_us;
        s->t0_unix = at_unix;
    }
    s->next = 0;
    s->nramps = 0;
    for (size_t i = 0; i < s->n; i++)
        s->began_unix[i] = 0;
    if (at_unix > 0)
        LOG(s->ctl->log, LOG_LEVEL_INFO,
            "control: %s: scenario starts at %.3f (in %.3f s; run %llu, %zu phases)", who, at_unix,
            at_unix - now_unix, (unsigned long long)s->runs, s->n);
    else
        LOG(s->ctl->log, LOG_LEVEL_INFO, "control: %s: scenario starts (run %llu, %zu phases)", who,
            (unsigned long long)s->runs, s->n);
    /* The phases due at once are in force when this returns (the API's answer shows them). */
    while (s->next < s->n && s->t0_us + (int64_t)s->phases[s->next].at_us <= (int64_t)now_us) {
        begin_phase(s, s->next, now_us);
        s->next++;
    }
    pthread_cond_signal(&s->cond);
}

void scenario_start(struct scenario *s, const char *who)
{
    pthread_mutex_lock(&s->lock);
    start_locked(s, 0, who);
    pthread_mutex_unlock(&s->lock);
}

void scenario_start_at(struct scenario *s, double at_unix, const char *who)
{
    pthread_mutex_lock(&s->lock);
    start_locked(s, at_unix, who);
    pthread_mutex_unlock(&s->lock);
}

/* 1 if ramp r (of a begun phase) is under way, 0 if it reached its end. With s->lock held. */
static int ramp_running(const struct scenario *s, const struct ramp *r)
{
    for (size_t k = 0; k < s->nramps; k++)
        if (s->ramps[k].r == r)
            return 1;
    return 0;
}

void scenario_reapply(struct scenario *s, const char *who)
{
    struct control *c = s->ctl;
    struct control_list l;
    char why[CORE_ERR_LEN];
    pthread_mutex_lock(&s->lock);
    if (!s->next) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    service_change_lock(c->svc);
    struct route_table *t = service_live(c->svc);
    const struct route_table *base = c->base ? c->base : &c->svc->routes;
    int rc = control_list_of(&l, t);
    for (size_t i = 0; rc == 0 && i < s->next; i++)
        rc = apply_phase(&s->phases[i], &l, t, base, c->cfg, why, sizeof why);
    /* A ramp that reached its end leaves its "to", unless a later phase set that route; one
     * under way goes on from its next step. */
    for (size_t i = 0; rc == 0 && i < s->next; i++)
        for (size_t k = 0; k < s->phases[i].nramps; k++) {
            const struct ramp *r = &s->phases[i].ramps[k];
            struct delay_edit e = {&r->to};
            size_t j = i + 1;
            while (j < s->next && !supersedes(&s->phases[j], r))
                j++;
            if (!ramp_running(s, r) && j == s->next)
                control_list_edit(&l, t, r->path, ramp_edit(r), &e, c->cfg->max_delay_us, why,
                                  sizeof why);
        }
    uint64_t from = t->generation; /* t may be retired by the publish */
    long long gen = rc == 0 ? service_publish(c->svc, l.r, l.n) : rc;
    if (gen >= 0)
        LOG(c->log, LOG_LEVEL_INFO,
            "control: %s: scenario phases 0 to %zu applied again: generation %llu -> %lld", who,
            s->next - 1, (unsigned long long)from, gen);
    else
        LOG(c->log, LOG_LEVEL_WARN, "control: %s: scenario phases not applied again: %s", who,
            rc == -EINVAL ? why : "out of memory, or too many generations still answering");
    service_change_unlock(c->svc);
    control_list_free(&l);
    pthread_mutex_unlock(&s->lock);
}

size_t scenario_phases(struct scenario *s)
{
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    size_t n = s->n;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int scenario_replace(struct scenario *s, const char *json, char *why, size_t whylen)
{
    struct phase *ph;
    size_t n;
    double *began;
    int rc = make_phases(json, &ph, &n, &began, why, whylen);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&s->lock);
    if (s->running)
        LOG(s->ctl->log, LOG_LEVEL_INFO, "control: reload: scenario stops before phase %zu",
            s->next);
    s->running = 0;
    s->nramps = 0;
    s->next = 0;
    free_phases(s->phases, s->n);
    free(s->began_unix);
    s->phases = ph;
    s->n = n;
    s->began_unix = began;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

void scenario_stop(struct scenario *s, const char *who)
{
    pthread_mutex_lock(&s->lock);
    if (s->running)
        LOG(s->ctl->log, LOG_LEVEL_INFO, "control: %s: scenario stops before phase %zu", who,
            s->next);
    s->running = 0;
    s->nramps = 0;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

void scenario_free(struct scenario *s)
{
    if (!s)
        return;
    if (s->thread_started) {
        pthread_mutex_lock(&s->lock);
        s->quit = 1;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
    }
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free_phases(s->phases, s->n);
    free(s->began_unix);
    free(s);
}

int scenario_phase(struct scenario *s, int *running)
{
    *running = 0;
    if (!s)
        return -1;
    pthread_mutex_lock(&s->lock);
    int phase = (int)s->next - 1;
    *running = s->running;
    pthread_mutex_unlock(&s->lock);
    return phase;
}

void scenario_report(struct scenario *s, cJSON *o)
{
    if (s)
        pthread_mutex_lock(&s->lock);
    if (!s || (!s->n && !s->runs)) {
        if (s)
            pthread_mutex_unlock(&s->lock);
        cJSON_AddNullToObject(o, "scenario");
        return;
    }
    cJSON *sc = cJSON_AddObjectToObject(o, "scenario");
    if (!sc) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    cJSON_AddBoolToObject(sc, "running", s->running);
    cJSON_AddNumberToObject(sc, "runs", (double)s->runs);
    cJSON_AddNumberToObject(sc, "phase", (double)s->next - 1);
    if (s->runs) {
        uint64_t now = timer_now_us();
        cJSON_AddNumberToObject(sc, "started_at", s->t0_unix);
        /* Negative while a start at a wall-clock instant is ahead. */
        cJSON_AddNumberToObject(sc, "elapsed_s", ((double)now - (double)s->t0_us) / 1e6);
    }
    cJSON *arr = cJSON_AddArrayToObject(sc, "phases");
    for (size_t i = 0; arr && i < s->n; i++) {
        const struct phase *p = &s->phases[i];
        cJSON *ph = cJSON_CreateObject();
        if (!ph)
            break;
        cJSON_AddNumberToObject(ph, "at_s", (double)p->at_us / 1e6);
        if (p->name)
            cJSON_AddStringToObject(ph, "name", p->name);
        if (p->restore)
            cJSON_AddBoolToObject(ph, "restore", 1);
        if (p->routes)
            cJSON_AddItemToObject(ph, "routes", cJSON_Duplicate(p->routes, 1));
        if (p->nramps) {
            cJSON *r = cJSON_AddObjectToObject(ph, "ramp");
            for (size_t k = 0; r && k < p->nramps; k++) {
                char a[512], b[512];
                cJSON *one = cJSON_AddObjectToObject(r, p->ramps[k].path);
                delay_spec_format(&p->ramps[k].from, a, sizeof a);
                delay_spec_format(&p->ramps[k].to, b, sizeof b);
                cJSON_AddStringToObject(one, "from", a);
                cJSON_AddStringToObject(one, "to", b);
                cJSON_AddNumberToObject(one, "over_s", (double)p->ramps[k].over_us / 1e6);
                if (p->ramps[k].of != RAMP_DELAY)
                    cJSON_AddStringToObject(one, "of", ramp_of[p->ramps[k].of].name);
            }
        }
        if (s->began_unix[i] > 0)
            cJSON_AddNumberToObject(ph, "began_at", s->began_unix[i]);
        else
            cJSON_AddNullToObject(ph, "began_at");
        cJSON_AddItemToArray(arr, ph);
    }
    pthread_mutex_unlock(&s->lock);
}
