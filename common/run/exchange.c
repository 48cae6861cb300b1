#include "run/exchange_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "base/net.h"
#include "http/target.h"

/* Sets what comes next and returns it. */
static enum exchange_do decide(struct exchange *x, enum exchange_do next)
{
    x->state = EXCHANGE_DECIDED;
    x->next = next;
    /* An answer given during the stop closes its connection (service_stop). */
    if (next == EXCHANGE_DO_ANSWER && x->svc && service_stopping(x->svc))
        x->plan.close = 1;
    return next;
}

/* What the plan itself asks for, once nothing is left to wait for. */
static enum exchange_do plan_do(struct exchange *x)
{
    switch (x->plan.action) {
    case PLAN_RESET:
        return decide(x, EXCHANGE_DO_RESET);
    case PLAN_CLOSE:
        return decide(x, EXCHANGE_DO_CLOSE);
    default:
        return decide(x, EXCHANGE_DO_ANSWER);
    }
}

/* Answers 503 with `why` instead of the plan, and closes the connection after it. The planned
 * delay stays for the access log; the delay histograms skip the answer (exchange_answer), the
 * service-time one records it. */
static enum exchange_do answer_instead(struct exchange *x, const char *why)
{
    uint64_t delay = x->plan.delay_us;
    route_plan_error(&x->plan, 503, why);
    x->plan.delay_us = delay;
    x->plan.close = 1; /* the stop's 503 ends its connection */
    x->stopped = 1;
    return decide(x, EXCHANGE_DO_ANSWER);
}

#define STOPPING "server stopping"

size_t exchange_size(void)
{
    return (sizeof(struct exchange) + EXCHANGE_ALIGN - 1) / EXCHANGE_ALIGN * EXCHANGE_ALIGN;
}

void *exchange_owner(const struct exchange *x)
{
    return x->owner;
}

/* The control listener's requests are planned by the control API, not by the route table:
 * neither counted nor logged, every answer closing its connection. */
static void plan_control(struct plan *p)
{
    memset(p, 0, sizeof *p);
    p->action = PLAN_CONTROL;
    p->stats_id = STATS_UNCOUNTED;
    p->content_type = "application/json";
    p->close = 1;
}

/* rq with an absolute-form target ("http://host/echo", RFC 9112 section 3.2.2) seen in origin
 * form ("/echo"), in *tmp; rq itself for any other target. Routing, the query and the control
 * API read the path; the access log keeps the target as received. Where the library decoded an
 * absolute target into something else, the path is read from the target as received. */
static const struct route_request *origin_form(const struct route_request *rq,
                                               struct route_request *tmp)
{
    const char *raw = rq->raw_target ? rq->raw_target : rq->target;
    size_t rlen = !rq->raw_target      ? rq->target_len
                  : rq->raw_target_len ? rq->raw_target_len
                                       : strlen(rq->raw_target);
    size_t rs = target_absolute_prefix(raw, rlen);
    if (!rs)
        return rq;
    *tmp = *rq;
    size_t ts = target_absolute_prefix(rq->target, rq->target_len);
    tmp->target = ts ? rq->target + ts : raw + rs;
    tmp->target_len = ts ? rq->target_len - ts : rlen - rs;
    if (rq->raw_target) {
        tmp->raw_target = raw + rs;
        tmp->raw_target_len = rlen - rs;
    }
    return tmp;
}

/* A WebSocket handshake answered 101: the socket's plan, copied for the socket loop. During the
 * stop, without a socket loop, or out of memory, a 503 in its place. */
static void ws_ticket(struct exchange *x, const struct route_request *rq)
{
    struct wsloop *loop = x->svc->ws;
    const char *why = service_stopping(x->svc) ? "server stopping"
                      : !loop                  ? "websocket: no socket loop"
                                               : NULL;
    if (!why && !(x->ws = calloc(1, sizeof *x->ws)))
        why = "out of memory";
    if (why) {
        route_plan_error(&x->plan, 503, why);
        x->plan.close = 1;
        x->stopped = 1;
        return;
    }
    struct wsloop_ticket *t = x->ws;
    t->loop = loop;
    t->spec = x->plan.route->ws;
    t->key = x->plan.ws_key;
    t->begun_us = x->begun_us;
    snprintf(t->route, sizeof t->route, "%s", x->plan.route->path);
    const char *target = rq->raw_target ? rq->raw_target : rq->target;
    size_t n = rq->raw_target ? (rq->raw_target_len ? rq->raw_target_len : strlen(target))
                              : rq->target_len;
    snprintf(t->target, sizeof t->target, "%.*s",
             (int)(n < sizeof t->target ? n : sizeof t->target - 1), target);
    net_format_peer(rq->peer, t->client, sizeof t->client);
    /* The socket outlives the handshake's connection: --max-requests does not close it. */
    x->plan.close = 0;
}

/* An event stream's run, with its own copy of the spec; a 503 in the plan's place when it cannot
 * be had. */
static void stream_run(struct exchange *x)
{
    const struct stream_spec *s = x->plan.stream;
    x->ev = malloc(sizeof *x->ev + s->size_hi + STREAM_EVENT_OVERHEAD);
    if (!x->ev) {
        route_plan_error(&x->plan, 503, "out of memory for the event stream");
        return;
    }
    x->ev->spec = *s;
    x->ev->len = 0;
    x->ev->base = 0;
    x->ev->id = x->plan.stream_first;
    x->ev->due_rel = 0;
    x->ev->sent = 0;
    x->ev->bytes = 0;
    x->ev->begun = 0;
    x->ev->done = 0;
    x->ev->end = STREAM_END_CLIENT_LEFT;
    x->plan.stream = &x->ev->spec;
}

static void begin(struct exchange *x, struct service *svc, struct stats_shard *sh,
                  const struct route_request *rq, int control, void (*admit)(struct pool_entry *e))
{
    timer_node_init(&x->timer);
    x->call = NULL;
    x->built = NULL;
    x->state = EXCHANGE_NEW;
    x->next = EXCHANGE_DO_READ;
    x->answered = 0;
    x->shard = sh;
    x->upload = NULL;
    x->decided_at = 0;
    x->body_refused = 0;
    x->pe.state = POOL_OUT;
    x->pe.flushed = 0;
    x->pe.admit = admit;
    x->refused = 0;
    x->stopped = 0;
    x->refused_head = 0;
    x->in_queue = 0;
    x->in_inbox = 0;
    x->begun_us = timer_now_us();
    x->due_us = 0;
    x->sent_us = 0;
    x->h2 = rq->h2 != 0;
    x->faulted = 0;
    x->flush_until_us = 0;
    x->linger_until_us = 0;
    x->read_got = 0;
    x->ev = NULL;
    x->ws = NULL;
    x->plan.stream = NULL;
    /* The plan is made by the live table, which stays this request's until exchange_end. */
    x->table = control ? NULL : service_table_acquire(svc, stats_shard_index(sh));
    struct route_request origin, in;
    struct stream_spec room;
    if (x->table) {
        in = *origin_form(rq, &origin);
        in.stream_room = &room;
        route_plan(x->table, &in, &x->plan);
    } else {
        plan_control(&x->plan);
    }
    if (x->plan.stream)
        stream_run(x);
    /* --max-requests' last request of an HTTP/1.x connection (an answer given during the stop
     * closes too: decide). */
    x->plan.close |=
        rq->last || (x->conn && !rq->h2 && service_request_on_connection(svc, &x->conn->requests));
    /* Whether the connection persists is decided here from the head as sent: libh2o keeps an
     * HTTP/1.1 connection open only on "keep-alive", whatever else the field lists. */
    x->plan.close |= rq->head && head_wants_close(rq->head);
    x->svc = svc;
    const char *why;
    unsigned bad = rq->head ? head_check(rq->head, &why) : 0;
    /* Without the head as sent (a library that could not say it), the method is still held to
     * being a token: libh2o takes an empty one. */
    if (!rq->head && !rq->h2 && !head_is_token(rq->method, strlen(rq->method))) {
        why = "the method is not a token";
        bad = 400;
    }
    if (!bad && rq->refused) {
        why = rq->refused_why;
        bad = rq->refused;
    }
    if (bad) {
        /* Refused as a whole: no route's answer, and where this request ends is in doubt, so
         * nothing more is read from the connection. Counted under the route its path reaches
         * (a route never counted, such as /healthz, counts it under "other"). */
        size_t reached = x->plan.stats_id;
        route_plan_error(&x->plan, bad, why);
        x->plan.action = PLAN_RESPOND;
        x->plan.route = NULL;
        x->plan.stats_id = !x->table                    ? STATS_UNCOUNTED
                           : reached != STATS_UNCOUNTED ? reached
                                                        : ROUTE_STATS_OTHER(x->table);
        x->plan.close = 1;
        x->refused_head = 1;
    }
    if (x->plan.action == PLAN_UPGRADE)
        ws_ticket(x, rq);
    /* /healthz, /stats and /metrics are neither counted nor logged; a WebSocket is logged by
     * the socket loop when its socket ends. */
    x->access =
        x->plan.stats_id != STATS_UNCOUNTED && x->plan.action != PLAN_UPGRADE ? svc->access : NULL;
    x->record = x->access ? calloc(1, sizeof *x->record) : NULL;
    if (x->record) {
        if (rq->raw_target) {
            size_t n = rq->raw_target_len ? rq->raw_target_len : strlen(rq->raw_target);
            snprintf(x->record->target, sizeof x->record->target, "%.*s",
                     (int)(n < sizeof x->record->target ? n : sizeof x->record->target - 1),
                     rq->raw_target);
        } else {
            size_t n = rq->target_len < sizeof x->record->target - 1 ? rq->target_len
                                                                     : sizeof x->record->target - 1;
            memcpy(x->record->target, rq->target, n);
        }
        snprintf(x->record->method, sizeof x->record->method, "%s", rq->method);
        net_format_peer(rq->peer, x->record->client, sizeof x->record->client);
    }
    x->pool = service_pool_of(svc, &x->plan);
    x->overflow_reset = svc->overflow_reset != 0;
    stats_request_begin(sh, x->plan.stats_id);
}

/* A body over --max-body on a route that drops its body: 413, at once, and the connection
 * closes after it, as for an upload. */
static enum exchange_do refuse_body(struct exchange *x)
{
    char msg[80];
    snprintf(msg, sizeof msg, "body exceeds --max-body %llu bytes",
             (unsigned long long)x->table->max_body);
    route_plan_error(&x->plan, 413, msg);
    x->plan.close = 1;
    x->body_refused = 1;
    x->decided_at = 0;
    return plan_do(x);
}

/* Makes the upload's answer the plan's, so the engine answers it like any other. */
static void take_answer(struct exchange *x)
{
    struct upload_answer ans;
    upload_finish(x->upload, &ans);
    /* An upload error is answered at once, and the connection is closed after it on both
     * binaries (slowsrv must answer an error found mid-body before the body ends, so it closes;
     * one behaviour); a success keeps the plan's delay (?delay=). */
    if (ans.status != 200) {
        x->plan.delay_us = 0;
        x->plan.timing = NULL;
        x->plan.close = 1; /* an upload error ends its connection */
    }
    x->plan.action = PLAN_RESPOND;
    x->plan.status = (unsigned)ans.status;
    x->plan.content_type = ans.content_type;
    x->plan.body = ans.body;
    x->plan.body_len = ans.body_len;
    x->plan.cacheable = 0;
    x->plan.drip = (struct delay_drip){0, 0};
    x->plan.stream = NULL;
    x->plan.stream_head = 0;
    x->plan.truncate = 0;
}

/* header_copy's answer when out of memory. */
static char bad_copy;
#define BAD_COPY (&bad_copy)

/* The whole value of header `name`, malloc'd and NUL-terminated; NULL if the request has none
 * (or cannot be read), BAD_COPY if out of memory. */
static char *header_copy(const struct route_request *rq, const char *name)
{
    char small[256];
    if (!rq->lookup)
        return NULL;
    long n = rq->lookup(rq->ctx, name, small, sizeof small);
    if (n < 0)
        return NULL;
    char *v = malloc((size_t)n + 1);
    if (!v)
        return BAD_COPY;
    if ((size_t)n < sizeof small)
        memcpy(v, small, (size_t)n + 1);
    else
        rq->lookup(rq->ctx, name, v, (size_t)n + 1);
    return v;
}

/* The announced Content-Length, or -1 when none or not a plain number (the library refuses
 * those before the handler runs). */
static int64_t content_length(const struct route_request *rq)
{
    char v[32], *end;
    /* Absent (-1) or longer than any size: unknown. */
    long n = rq->lookup ? rq->lookup(rq->ctx, "Content-Length", v, sizeof v) : -1;
    if (n < 0 || (size_t)n >= sizeof v)
        return -1;
    unsigned long long len = strtoull(v, &end, 10);
    return end != v && *end == '\0' && v[0] >= '0' && v[0] <= '9' && len <= INT64_MAX ? (int64_t)len
                                                                                      : -1;
}

/* A request of the control listener: what control_handle will be given is copied now (rq lives
 * only during exchange_on_head); the head alone may answer it (control_check). */
static enum exchange_do call_begin(struct exchange *x, const struct route_request *rq)
{
    struct exchange_call *c = x->call = calloc(1, sizeof *c);
    if (!c)
        return decide(x, EXCHANGE_DO_CLOSE);
    size_t tlen = rq->raw_target
                      ? (rq->raw_target_len ? rq->raw_target_len : strlen(rq->raw_target))
                      : rq->target_len;
    c->target = strndup(rq->raw_target ? rq->raw_target : rq->target, tlen);
    c->authorization = header_copy(rq, "Authorization");
    c->origin = header_copy(rq, "Origin");
    /* Host as sent: libh2o fills in a name of its own for an HTTP/1.0 request without one. */
    size_t hlen;
    const char *host = rq->head && !rq->head->h2 ? head_value(rq->head, "Host", &hlen) : NULL;
    if (host) {
        c->host = strndup(host, hlen);
        if (!c->host)
            c->host = BAD_COPY;
    } else if (!rq->head || rq->head->h2) {
        c->host = header_copy(rq, "Host");
    }
    if (!c->target || c->authorization == BAD_COPY || c->origin == BAD_COPY ||
        c->host == BAD_COPY) {
        if (c->authorization == BAD_COPY)
            c->authorization = NULL;
        if (c->origin == BAD_COPY)
            c->origin = NULL;
        if (c->host == BAD_COPY)
            c->host = NULL;
        return decide(x, EXCHANGE_DO_CLOSE);
    }
    snprintf(c->method, sizeof c->method, "%s", rq->method);
    net_format_peer(rq->peer, c->who, sizeof c->who);
    c->rq = (struct control_request){c->method,
                                     c->target,
                                     strlen(c->target),
                                     NULL,
                                     0,
                                     c->authorization,
                                     c->authorization ? strlen(c->authorization) : 0,
                                     c->who,
                                     c->origin,
                                     c->origin ? strlen(c->origin) : 0,
                                     c->host,
                                     c->host ? strlen(c->host) : 0};
    const struct service_control *api = &x->svc->control;
    if (!api->ctx) {
        route_plan_error(&x->plan, 404, "no control API here");
        return decide(x, EXCHANGE_DO_ANSWER);
    }
    /* The token, the Host and the origin are checked before any body is read. */
    if (api->check(api->ctx, &c->rq, &c->reply))
        return decide(x, EXCHANGE_DO_ANSWER);
    int64_t len = content_length(rq);
    if (len > CONTROL_BODY_MAX) {
        c->too_big = 1;
        c->rq.body_len = (size_t)len;
        api->handle(api->ctx, &c->rq, &c->reply);
        return decide(x, EXCHANGE_DO_ANSWER);
    }
    return EXCHANGE_DO_READ;
}

/* The body arrived whole, as far as the control API keeps it. */
static void call_body(struct exchange_call *c, const void *buf, size_t len)
{
    if (len == 0)
        return; /* an empty body (libh2o hands one over for Content-Length: 0) */
    if (!c->too_big && c->rq.body_len + len > CONTROL_BODY_MAX) {
        c->too_big = 1;
        free(c->body);
        c->body = NULL;
    }
    if (!c->too_big && c->rq.body_len + len > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->rq.body_len + len)
            cap *= 2;
        cap = cap < CONTROL_BODY_MAX ? cap : CONTROL_BODY_MAX;
        char *b = realloc(c->body, cap);
        if (!b) {
            c->too_big = 1; /* out of memory: refused as too large */
            free(c->body);
            c->body = NULL;
        } else {
            c->body = b;
            c->cap = cap;
        }
    }
    if (!c->too_big)
        memcpy(c->body + c->rq.body_len, buf, len);
    c->rq.body_len += len;
}

struct wsloop_ticket *exchange_ws_take(struct exchange *x)
{
    struct wsloop_ticket *t = x->ws;
    x->ws = NULL;
    return t;
}

enum exchange_do exchange_on_head(struct exchange *x, void *owner, struct conn *conn,
                                  struct service *svc, struct stats_shard *sh,
                                  const struct route_request *rq,
                                  void (*admit)(struct pool_entry *e))
{
    x->owner = owner;
    x->conn = conn;
    x->waits = 0;
    if (conn)
        conn_request_begin(conn, rq->h2);
    int control = conn && conn->control;
    begin(x, svc, sh, rq, control, admit);
    if (x->refused_head)
        return decide(x, EXCHANGE_DO_ANSWER);
    struct route_request origin;
    if (control)
        return call_begin(x, origin_form(rq, &origin));
    if (x->plan.action != PLAN_UPLOAD) {
        int64_t len = content_length(rq);
        if (x->table && len >= 0 && (uint64_t)len > x->table->max_body)
            return refuse_body(x);
        return EXCHANGE_DO_READ;
    }
    /* About 9 KiB, so it is only taken by uploads, not by every request. */
    x->upload = malloc(sizeof *x->upload);
    char *ctype = header_copy(rq, "Content-Type");
    if (!x->upload || ctype == BAD_COPY) {
        if (ctype != BAD_COPY)
            free(ctype);
        return decide(x, EXCHANGE_DO_CLOSE);
    }
    int rc = upload_init(x->upload, ctype, content_length(rq), x->table->max_body);
    free(ctype);
    if (rc == 0)
        return EXCHANGE_DO_READ;
    /* 415, 400 or 413 from the headers: answered before the body, which is dropped. */
    take_answer(x);
    return plan_do(x);
}

enum exchange_do exchange_refuse(struct exchange *x, unsigned status, const char *why)
{
    if (x->answered)
        return decide(x, EXCHANGE_DO_CLOSE);
    route_plan_error(&x->plan, status, why);
    x->plan.close = 1;
    x->refused_head = 1;
    return decide(x, EXCHANGE_DO_ANSWER);
}

enum exchange_do exchange_on_body(struct exchange *x, const void *buf, size_t len)
{
    /* Cut while its reading was paused (the stop gave up on it): nothing more is read. */
    if (x->state == EXCHANGE_DECIDED && x->next == EXCHANGE_DO_CLOSE)
        return EXCHANGE_DO_CLOSE;
    stats_bytes_in(x->shard, len);
    x->read_got += len;
    if (x->record)
        x->record->bytes_in += len;
    if (x->call) {
        if (!x->call->reply.status)
            call_body(x->call, buf, len);
        return EXCHANGE_DO_READ;
    }
    if (!x->upload) {
        /* Read and dropped: no other route needs a body; --max-body holds all the same. */
        x->decided_at += len;
        if (!x->table)
            return EXCHANGE_DO_READ;
        if (!x->body_refused) {
            if (x->answered || x->decided_at <= x->table->max_body)
                return EXCHANGE_DO_READ;
            refuse_body(x);
            return EXCHANGE_DO_ANSWER;
        }
        if (x->decided_at > EXCHANGE_DISCARD_MAX)
            return decide(x, EXCHANGE_DO_CLOSE);
        return x->answered ? EXCHANGE_DO_READ : EXCHANGE_DO_ANSWER;
    }
    int decided = upload_error(x->upload) != 0;
    if (upload_feed(x->upload, buf, len) == 0)
        return EXCHANGE_DO_READ;
    if (!decided) {
        take_answer(x);
        x->decided_at = upload_received(x->upload);
    }
    /* A client that keeps sending far past an error is cut off. */
    if (upload_received(x->upload) - x->decided_at > EXCHANGE_DISCARD_MAX)
        return decide(x, EXCHANGE_DO_CLOSE);
    /* Until the engine has answered, it is told again with every piece. */
    return x->answered ? EXCHANGE_DO_READ : EXCHANGE_DO_ANSWER;
}

/* Counted as waiting on purpose on its connection, or not (conn.h), once each way. */
static void set_waits(struct exchange *x, int waits)
{
    if (x->conn && x->waits != waits)
        conn_wait(x->conn, waits);
    x->waits = (unsigned char)waits;
}

static void queue_left(struct exchange *x);

enum exchange_do exchange_next(struct exchange *x)
{
    switch (x->state) {
    case EXCHANGE_NEW:
        break;
    case EXCHANGE_ANSWERED:
    case EXCHANGE_SENDING:
        return EXCHANGE_DO_DONE;
    case EXCHANGE_HOLDING:
        return EXCHANGE_DO_HOLD;
    case EXCHANGE_WAITING:
    case EXCHANGE_READ_PAUSED:
        return EXCHANGE_DO_WAIT;
    case EXCHANGE_QUEUED:
        /* Handed back by `admit` (the pool wrote the entry before): its worker, or the stop. */
        if (x->pe.state == POOL_QUEUED)
            return EXCHANGE_DO_PARK;
        queue_left(x);
        set_waits(x, 0);
        if (x->pe.flushed)
            return answer_instead(x, STOPPING);
        if (!x->plan.delay_us)
            return plan_do(x);
        x->state = EXCHANGE_HOLDING; /* with its worker: exchange_hold queues the delay */
        return EXCHANGE_DO_HOLD;
    case EXCHANGE_DECIDED:
        return x->next;
    }
    /* The body is in. */
    if (x->upload && upload_error(x->upload) == 0)
        take_answer(x);
    if (x->call) {
        const struct service_control *api = &x->svc->control;
        x->call->rq.body = x->call->too_big ? NULL : x->call->body;
        api->handle(api->ctx, &x->call->rq, &x->call->reply);
        return decide(x, EXCHANGE_DO_ANSWER);
    }
    if (x->pool || x->plan.delay_us) {
        x->state = EXCHANGE_HOLDING;
        return EXCHANGE_DO_HOLD;
    }
    return plan_do(x);
}

/* Counted as queued for a worker no more (once). */
static void queue_left(struct exchange *x)
{
    if (x->in_queue)
        stats_queue_end(x->shard, x->plan.stats_id);
    x->in_queue = 0;
}

/* Has its worker (or needs none): waits out its delay, or goes on with the plan. */
static enum exchange_do after_worker(struct exchange *x, struct timer_heap *h)
{
    if (!x->plan.delay_us)
        return plan_do(x);
    uint64_t now = timer_now_us();
    x->due_us = now + x->plan.delay_us;
    x->timer.due_us = x->due_us;
    if (h && timer_heap_push(h, &x->timer) != 0)
        return answer_instead(x, "too many waiting requests");
    /* With no heap, a blocking model sleeps it out (exchange_sleep). */
    x->state = EXCHANGE_WAITING;
    set_waits(x, 1);
    stats_wait_begin(x->shard, x->plan.stats_id);
    return EXCHANGE_DO_WAIT;
}

enum exchange_do exchange_hold(struct exchange *x, struct timer_heap *h)
{
    if (!x->pool || x->pe.state == POOL_ADMITTED)
        return after_worker(x, h);
    x->state = EXCHANGE_QUEUED; /* before an admission from another thread can hand it back */
    switch (pool_enter(x->pool, &x->pe)) {
    case POOL_ADMITTED:
        return after_worker(x, h);
    case POOL_QUEUED:
        x->in_queue = 1;
        set_waits(x, 1);
        stats_queue_begin(x->shard, x->plan.stats_id);
        return EXCHANGE_DO_PARK;
    case POOL_OUT:
        break;
    }
    if (x->pe.flushed)
        return answer_instead(x, STOPPING);
    x->refused = 1;
    if (x->overflow_reset) {
        x->plan.action = PLAN_RESET;
        x->plan.status = 0;
        x->plan.delay_us = 0;
        x->plan.timing = NULL;
        x->plan.cacheable = 0;
        return decide(x, EXCHANGE_DO_RESET);
    }
    char msg[128];
    struct pool_counts pc;
    pool_counts_get(x->pool, &pc);
    snprintf(msg, sizeof msg, "all %u workers are busy and the queue is full", pc.workers);
    route_plan_error(&x->plan, 503, msg);
    return decide(x, EXCHANGE_DO_ANSWER);
}

struct exchange *exchange_of_entry(struct pool_entry *e)
{
    return (struct exchange *)(void *)((char *)e - offsetof(struct exchange, pe));
}

enum exchange_do exchange_sleep(struct exchange *x, int (*sleep_fn)(void *arg, uint64_t delay_us),
                                int (*gone_fn)(void *arg), void *arg)
{
    int cut = sleep_fn(arg, x->plan.delay_us);
    return exchange_on_timer(x, !cut && gone_fn && gone_fn(arg), cut);
}

struct exchange *exchange_of_timer(struct timer_node *n)
{
    return (struct exchange *)(void *)((char *)n - offsetof(struct exchange, timer));
}

enum exchange_do exchange_on_timer(struct exchange *x, int peer_gone, int give_up)
{
    set_waits(x, 0);
    if (x->state == EXCHANGE_SENDING) {
        /* The next chunk of a paced body is due: sent on, unless the server gives up on it
         * (its head is out: all that is left is to close). */
        if (give_up) {
            if (x->ev && !x->ev->done)
                x->ev->end = STREAM_END_STOPPED;
            return decide(x, EXCHANGE_DO_CLOSE);
        }
        return EXCHANGE_DO_SEND;
    }
    if (x->state == EXCHANGE_READ_PAUSED) {
        /* Its body may be read on; when the server gives up on it, it is cut (its reading
         * would outlast the stop). */
        x->state = EXCHANGE_NEW;
        return give_up ? decide(x, EXCHANGE_DO_CLOSE) : EXCHANGE_DO_READ;
    }
    stats_wait_end(x->shard, x->plan.stats_id);
    if (peer_gone)
        return decide(x, EXCHANGE_DO_DROP);
    if (give_up)
        return answer_instead(x, STOPPING);
    return plan_do(x);
}

/* 1 if the plan's body leaves in pieces (?drip=, ?fault=truncate, a stream). */
static int paced(const struct exchange *x)
{
    return x->plan.drip.chunks > 0 || x->plan.truncate || pace_shapes_body(&x->plan.pace) ||
           x->plan.pace.slow_close_us || x->plan.stream;
}

/* The request no longer needs its worker of --workers: the next queued request gets it. */
static void free_worker(struct exchange *x)
{
    if (x->pool)
        pool_leave(x->pool, &x->pe); /* once: the entry is POOL_OUT afterwards */
}

void exchange_answer(struct exchange *x)
{
    /* exchange_answer_of has read the clock for this answer's wait;dur just before: the same
     * instant serves here. */
    uint64_t now = x->sent_us ? x->sent_us : timer_now_us();
    /* A worker is free once it has handed over a whole answer, as a servlet thread is once it
     * has written the response: a client that sends its next request as soon as it reads this
     * answer must find the worker free, not race the engine's end of the request. A paced body
     * keeps its worker until its last byte is handed over (exchange_body_take). */
    if (!paced(x))
        free_worker(x);
    x->answered = x->plan.status;
    x->state = EXCHANGE_ANSWERED;
    x->sent_us = now;
    pace_start(&x->pace, now);
    if (x->record)
        x->record->answered_us = now;
    stats_observe(x->shard, x->plan.stats_id, STATS_HIST_SERVICE, now - x->begun_us);
    if (x->plan.delay_us && x->due_us && !x->stopped) {
        stats_observe(x->shard, x->plan.stats_id, STATS_HIST_INTENDED, x->plan.delay_us);
        stats_observe(x->shard, x->plan.stats_id, STATS_HIST_OVERSHOOT,
                      now > x->due_us ? now - x->due_us : 0);
    }
}

/* Writes "<timing>, wait;dur=<us / 1000>.<us % 1000>" into buf (len bytes), without printf: it
 * runs on every delayed answer. Cut short, never overrun, if it does not fit. */
_Static_assert(ROUTE_TIMING_LEN + sizeof ", wait;dur=18446744073709551.615" <= ANSWER_TIMING_LEN,
               "an answer's Server-Timing holds the plan's and its wait");
static void timing_with_wait(const char *timing, uint64_t us, char *buf, size_t len)
{
    static const char field[] = ", wait;dur=";
    char digits[24];
    size_t n = 0, k = sizeof digits;
    digits[--k] = (char)('0' + us % 10);
    digits[--k] = (char)('0' + us / 10 % 10);
    digits[--k] = (char)('0' + us / 100 % 10);
    digits[--k] = '.';
    uint64_t ms = us / 1000;
    do
        digits[--k] = (char)('0' + ms % 10);
    while ((ms /= 10) != 0);
    size_t tlen = strlen(timing), dlen = sizeof digits - k;
    if (tlen + sizeof field - 1 + dlen >= len) {
        buf[0] = '\0';
        return;
    }
    memcpy(buf, timing, tlen);
    n = tlen;
    memcpy(buf + n, field, sizeof field - 1);
    n += sizeof field - 1;
    memcpy(buf + n, digits + k, dlen);
    buf[n + dlen] = '\0';
}

/* The plan's answer; its Server-Timing value is `timing` (NULL for none). */
static void answer_plan(const struct plan *p, const char *timing, struct answer *a)
{
    a->status = p->status;
    a->nheaders = 0;
    a->upgrade = p->action == PLAN_UPGRADE;
    if (a->upgrade) {
        /* The library adds Connection: upgrade (and its Date) to a 101 it sends. */
        answer_add_header(a, "Upgrade", "websocket");
        answer_add_header(a, "Sec-WebSocket-Accept", p->ws_accept);
        a->body = "";
        a->body_len = 0;
        a->paced = a->unsized = a->close = 0;
        a->cached = -1;
        return;
    }
    answer_add_header(a, "Content-Type", p->content_type);
    if (p->hdr_name)
        answer_add_header(a, p->hdr_name, p->hdr_value);
    if (timing)
        answer_add_header(a, "Server-Timing", timing);
    if (p->allow)
        answer_add_header(a, "Allow", p->allow);
    for (size_t i = 0; i < p->nheaders; i++)
        answer_add_header(a, p->headers[i].name, p->headers[i].value);
    a->body = p->body;
    a->body_len = p->body_len;
    a->paced = p->drip.chunks > 0 || p->truncate || pace_shapes_body(&p->pace) ||
               p->pace.slow_close_us || p->stream;
    a->unsized = p->stream != NULL || p->stream_head;
    if (a->unsized)
        answer_add_header(a, "Cache-Control", "no-cache");
    a->close = p->close;
    a->cached = -1;
}

/* The report of /stats or /metrics, made now; a 503 in its place when it cannot be made. */
static void build_report(struct exchange *x)
{
    if (!x->built)
        x->built = service_report(x->svc, x->plan.action);
    if (x->built) {
        x->plan.body = x->built;
        x->plan.body_len = strlen(x->built);
        return;
    }
    route_plan_error(&x->plan, 503, "out of memory: the report could not be made");
    x->plan.close = 1;
    x->stopped = 1;
}

void exchange_answer_of(struct exchange *x, struct answer *a)
{
    struct plan *p = &x->plan;
    if (x->call && x->call->reply.status) {
        const struct control_answer *r = &x->call->reply;
        a->status = r->status;
        a->nheaders = 0;
        for (size_t i = 0; i < r->nheaders; i++)
            answer_add_header(a, r->headers[i].name, r->headers[i].value);
        a->body = r->body;
        a->body_len = r->body ? r->body_len : 0;
        a->paced = 0;
        a->upgrade = 0;
        a->unsized = 0;
        a->close = 1;
        a->cached = -1;
    } else {
        if (p->action == PLAN_STATS || p->action == PLAN_METRICS)
            build_report(x);
        /* A delayed answer says how long it waited: from the end of its head (exchange_on_head)
         * to now, when it starts, to the microsecond, as one more metric of the plan's
         * Server-Timing ("delay;dur=1000, wait;dur=1000.173"). One field, not two: a value
         * unique to each answer is what HTTP/2's header compression indexes, and a second field
         * beside it would push the fixed ones out of the table sooner. */
        if (p->timing) {
            uint64_t now = timer_now_us(), us = now > x->begun_us ? now - x->begun_us : 0;
            timing_with_wait(p->timing, us, a->timing, sizeof a->timing);
            x->sent_us = now;
        }
        answer_plan(p, p->timing ? a->timing : NULL, a);
        /* A prebuilt answer has no Server-Timing of its own request. */
        if (p->cacheable && p->route && !p->close && p->generation == 1 && !p->timing)
            a->cached = (long)p->route_id;
    }
    if (a->close)
        answer_add_header(a, "Connection", "close");
    a->reason = answer_reason(a->status);
    a->bodiless = answer_bodiless(a->status);
}

int exchange_write_h1(struct exchange *x, int fd)
{
    struct answer a;
    char head[1024];
    exchange_answer_of(x, &a);
    size_t n = answer_format_h1(&a, head, sizeof head);
    struct iovec iov[2] = {{head, n}, {(void *)(uintptr_t)a.body, a.body_len}};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
    ssize_t w = n ? sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
    if (w <= 0)
        return 0;
    return (size_t)w == n + a.body_len ? 1 : -1;
}

char *exchange_h1_bytes(struct exchange *x, size_t *len)
{
    struct answer a;
    char head[1024];
    exchange_answer_of(x, &a);
    size_t n = answer_format_h1(&a, head, sizeof head);
    char *out = n ? malloc(n + a.body_len) : NULL;
    if (!out)
        return NULL;
    memcpy(out, head, n);
    if (a.body_len)
        memcpy(out + n, a.body, a.body_len);
    *len = n + a.body_len;
    return out;
}

int exchange_cached_answer(const struct service *svc, size_t i, struct answer *a)
{
    struct plan p;
    if (route_cached_plan(&svc->routes, i, &p) != 0 || p.timing)
        return -1;
    answer_plan(&p, NULL, a);
    a->cached = (long)i;
    a->reason = answer_reason(a->status);
    a->bodiless = answer_bodiless(a->status);
    return 0;
}

int exchange_has_answered(const struct exchange *x)
{
    return x->answered != 0;
}

/* How long a reset waits for the bytes before it to leave the socket, and how often it looks. */
#define FLUSH_WAIT_US (1000 * 1000)
#define FLUSH_LOOK_US 1000

/* At the reset: RESET once the bytes before it have left the socket (a TCP reset drops what
 * the socket still holds; an HTTP/2 library may drop DATA it has not written yet when the
 * stream is reset), else WAIT a little. Over HTTP/2 the library gets one turn first, to write
 * what it holds of the stream. */
static enum exchange_body reset_step(struct exchange *x, uint64_t now_us, uint64_t *due_us)
{
    if (!x->flush_until_us) {
        x->flush_until_us = now_us + FLUSH_WAIT_US;
        if (x->h2) {
            *due_us = now_us + FLUSH_LOOK_US;
            return EXCHANGE_BODY_WAIT;
        }
    }
    if (x->conn && now_us < x->flush_until_us && net_unsent(x->conn->fd) > 0) {
        *due_us = now_us + FLUSH_LOOK_US;
        return EXCHANGE_BODY_WAIT;
    }
    x->faulted = 1;
    return EXCHANGE_BODY_RESET;
}

/* The body is out: DONE, after the slow-close's silence if it has one. */
static enum exchange_body end_step(struct exchange *x, uint64_t now_us, uint64_t *due_us)
{
    if (!x->plan.pace.slow_close_us)
        return EXCHANGE_BODY_DONE;
    if (!x->linger_until_us) {
        x->linger_until_us = now_us + x->plan.pace.slow_close_us;
        x->faulted = 1;
    }
    if (now_us >= x->linger_until_us)
        return EXCHANGE_BODY_DONE;
    *due_us = x->linger_until_us;
    return EXCHANGE_BODY_WAIT;
}

/* The next step of an event stream: the rest of the event being sent, the next event once it
 * is due (made now, with its intended and actual times), or the end (the count reached, or,
 * without one, the next event past stream_until_us). */
static enum exchange_body stream_step(struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t *len, uint64_t *due_us)
{
    const struct plan *p = &x->plan;
    struct exchange_stream *ev = x->ev;
    const struct stream_spec *s = &ev->spec;
    if (sent < ev->base + ev->len) {
        *len = (size_t)(ev->base + ev->len - sent);
        return EXCHANGE_BODY_SEND;
    }
    if (!ev->begun) {
        ev->begun = 1;
        stats_stream_begin(x->shard, p->stats_id);
    }
    /* Without a count, the stream ends at --max-delay, or after STREAM_COUNT_MAX events (a gap
     * of 0 would otherwise send without end). */
    uint64_t last = s->count ? s->count : p->stream_first + STREAM_COUNT_MAX - 1;
    if (ev->id > last || (!s->count && ev->due_rel > p->stream_until_us)) {
        ev->done = 1;
        ev->end = ev->id > last ? STREAM_END_COMPLETE : STREAM_END_MAX_DELAY;
        return EXCHANGE_BODY_DONE;
    }
    uint64_t due = x->sent_us + ev->due_rel;
    if (now_us < due) {
        *due_us = due;
        return EXCHANGE_BODY_WAIT;
    }
    size_t size = stream_size(s, p->stream_key, ev->id);
    ev->len = stream_event_format(s, ev->id, ev->due_rel, now_us - x->sent_us, size,
                                  ev->id == p->stream_first, ev->buf,
                                  (size_t)s->size_hi + STREAM_EVENT_OVERHEAD);
    if (!ev->len)
        return EXCHANGE_BODY_CUT;
    ev->base = sent;
    ev->bytes += ev->len;
    ev->sent++;
    stats_event(x->shard, p->stats_id, now_us - due);
    ev->id++;
    ev->due_rel += stream_gap_us(s, p->stream_key, ev->id);
    *len = ev->len;
    return EXCHANGE_BODY_SEND;
}

enum exchange_body exchange_body_next(struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t *len, uint64_t *due_us)
{
    const struct plan *p = &x->plan;
    if (p->stream && x->ev)
        return stream_step(x, now_us, sent, len, due_us);
    uint64_t total = p->body_len, end = p->truncate ? total / 2 : total;
    int reset = p->pace.reset && p->pace.reset_after < end;
    if (reset)
        end = p->pace.reset_after;
    if (sent >= end)
        return reset         ? reset_step(x, now_us, due_us)
               : end < total ? EXCHANGE_BODY_CUT
                             : end_step(x, now_us, due_us);
    if (!p->drip.chunks) {
        uint64_t n;
        enum pace_step st = pace_next(&p->pace, &x->pace, end, now_us, sent, &n, due_us);
        if (st == PACE_WAIT && p->pace.stall && sent >= p->pace.stall_at)
            x->faulted = 1;
        if (st != PACE_SEND)
            return EXCHANGE_BODY_WAIT;
        *len = (size_t)n;
        return EXCHANGE_BODY_SEND;
    }
    uint64_t n = p->drip.chunks, over = p->drip.over_us;
    /* Chunks due by now: chunk k (from 0) leaves at sent_us + over * (k + 1) / n. */
    uint64_t due = n;
    if (over && now_us < x->sent_us + over)
        due = (now_us - x->sent_us) * n / over;
    uint64_t upto = (total * due) / n;
    if (upto > end)
        upto = end;
    if (sent < upto) {
        *len = (size_t)(upto - sent);
        return EXCHANGE_BODY_SEND;
    }
    *due_us = x->sent_us + (over * (due + 1)) / n;
    return EXCHANGE_BODY_WAIT;
}

enum exchange_body exchange_body_take(struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t max, const char **bytes, size_t *len, uint64_t *due_us)
{
    enum exchange_body b = exchange_body_next(x, now_us, sent, len, due_us);
    if (!x->plan.stream || !x->ev)
        *bytes = x->plan.body + sent;
    else
        *bytes = b == EXCHANGE_BODY_SEND ? x->ev->buf + (sent - x->ev->base) : x->ev->buf;
    if (b == EXCHANGE_BODY_SEND && *len > max)
        *len = max;
    if (b == EXCHANGE_BODY_DONE || b == EXCHANGE_BODY_CUT || b == EXCHANGE_BODY_RESET ||
        (b == EXCHANGE_BODY_SEND && sent + *len == x->plan.body_len))
        free_worker(x);
    return b;
}

uint64_t exchange_slow_close_us(const struct exchange *x)
{
    return x->plan.pace.slow_close_us;
}

uint64_t exchange_read_allowed(struct exchange *x, uint64_t now_us, uint64_t avail,
                               uint64_t *due_us)
{
    /* Once an answer is decided (an upload's error), the rest is read to be dropped. */
    if (x->state != EXCHANGE_NEW)
        return avail;
    return pace_read_allowed(&x->plan.pace, x->begun_us, now_us, x->read_got, avail, due_us);
}

enum exchange_do exchange_read_pace(struct exchange *x, struct timer_heap *h, uint64_t due_us)
{
    x->timer.due_us = due_us;
    if (h) {
        timer_heap_cancel(h, &x->timer);
        if (timer_heap_push(h, &x->timer) != 0)
            return decide(x, EXCHANGE_DO_CLOSE);
    }
    x->state = EXCHANGE_READ_PAUSED;
    set_waits(x, 1);
    return EXCHANGE_DO_WAIT;
}

enum exchange_do exchange_pace(struct exchange *x, struct timer_heap *h, uint64_t due_us)
{
    x->timer.due_us = due_us;
    if (h) {
        timer_heap_cancel(h, &x->timer); /* queued once, whoever asks twice */
        if (timer_heap_push(h, &x->timer) != 0)
            return decide(x, EXCHANGE_DO_CLOSE);
    }
    x->state = EXCHANGE_SENDING;
    set_waits(x, 1);
    return EXCHANGE_DO_WAIT;
}

static void log_request(struct exchange *x)
{
    struct exchange_record *r = x->record;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t done = r->answered_us ? r->answered_us : timer_now_us();
    uint64_t wait_start = x->due_us ? x->due_us - x->plan.delay_us : 0;
    struct accesslog_entry e = {
        .time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
        .client = r->client,
        .method = r->method,
        .target = r->target,
        .route = x->plan.route ? x->plan.route->path : NULL,
        .status = x->answered,
        .bytes_in = r->bytes_in,
        .bytes_out = x->ev         ? x->ev->bytes
                     : x->answered ? x->plan.body_len
                                   : 0,
        .delay_us = x->plan.delay_us,
        .waited_us = wait_start && done > wait_start ? done - wait_start : 0,
        .service_us = done - x->begun_us,
    };
    if (x->ev && x->ev->begun) {
        static const char *const ends[] = {"client-left", "complete", "max-delay", "stopped"};
        e.stream_end = ends[x->ev->end];
        e.events = x->ev->sent;
    }
    accesslog_write(x->access, &e);
    free(r);
    x->record = NULL;
}

void exchange_end(struct exchange *x, struct timer_heap *h)
{
    if (x->state == EXCHANGE_WAITING) {
        if (h)
            timer_heap_cancel(h, &x->timer);
        stats_wait_end(x->shard, x->plan.stats_id);
    } else if ((x->state == EXCHANGE_SENDING || x->state == EXCHANGE_READ_PAUSED) && h) {
        timer_heap_cancel(h, &x->timer);
    }
    x->state = EXCHANGE_DECIDED;
    x->next = EXCHANGE_DO_DROP;
    if (x->pool)
        pool_leave(x->pool, &x->pe);
    queue_left(x);
    set_waits(x, 0);
    if (x->conn)
        conn_request_end(x->conn, timer_now_us());
    /* The line is written before the request stops counting as in flight, so that whoever
     * sees in_flight reach 0 finds every line written. */
    if (x->record)
        log_request(x);
    /* A request reset by --overflow reset (counted by the pool), or closed, reset or cut short
     * by ?fault=, was not abandoned by its client. */
    int broken = x->plan.action == PLAN_RESET || x->plan.action == PLAN_CLOSE;
    if (x->plan.truncate || x->faulted || (broken && !x->refused))
        stats_fault(x->shard, x->plan.stats_id);
    else if (!x->answered && !broken)
        stats_cancel(x->shard, x->plan.stats_id);
    stats_request_end(x->shard, x->plan.stats_id, x->answered);
    free(x->ws);
    x->ws = NULL;
    if (x->ev) {
        if (x->ev->begun)
            stats_stream_end(x->shard, x->plan.stats_id, !x->ev->done);
        free(x->ev);
        x->ev = NULL;
    }
    free(x->upload);
    x->upload = NULL;
    free(x->built);
    x->built = NULL;
    if (x->call) {
        free(x->call->target);
        free(x->call->authorization);
        free(x->call->origin);
        free(x->call->host);
        free(x->call->body);
        free(x->call->reply.body);
        free(x->call);
        x->call = NULL;
    }
    /* Last: the plan's route, body and headers are the table's. */
    if (x->svc && x->table)
        service_table_release(x->svc, x->table, stats_shard_index(x->shard));
    x->table = NULL;
}

void exchange_library_answer(struct service *svc, struct stats_shard *sh,
                             const struct route_request *rq, unsigned status)
{
    const char *q = memchr(rq->target, '?', rq->target_len);
    size_t n = q ? (size_t)(q - rq->target) : rq->target_len;
    size_t shard = stats_shard_index(sh);
    struct route_table *t = service_table_acquire(svc, shard);
    long i = n ? route_match(t, rq->target, n) : -1;
    const struct route *r = i >= 0 ? &t->routes[i] : NULL;
    if (!r || r->counted) {
        size_t slot = r ? r->slot : ROUTE_STATS_OTHER(t);
        stats_request_begin(sh, slot);
        stats_request_end(sh, slot, status);
        if (svc->access) {
            char client[64], target[256];
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            net_format_peer(rq->peer, client, sizeof client);
            snprintf(target, sizeof target, "%.*s",
                     (int)(rq->target_len < 255 ? rq->target_len : 255), rq->target);
            struct accesslog_entry e = {.time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
                                        .client = client,
                                        .method = rq->method,
                                        .target = target,
                                        .route = r ? r->path : NULL,
                                        .status = status};
            accesslog_write(svc->access, &e);
        }
    }
    service_table_release(svc, t, shard);
}
