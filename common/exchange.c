#include "exchange.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net.h"

void exchange_begin(struct exchange *x, struct route_table *t, struct stats_shard *sh,
                    const struct route_request *rq)
{
    timer_node_init(&x->timer);
    x->state = EXCHANGE_NEW;
    x->answered = 0;
    x->shard = sh;
    x->upload = NULL;
    x->decided_at = 0;
    x->pe.state = POOL_OUT;
    x->refused = 0;
    x->begun_us = timer_now_us();
    x->due_us = 0;
    x->sent_us = 0;
    route_plan(t, rq, &x->plan);
    /* /healthz, /stats and /metrics are neither counted nor logged. */
    x->access = x->plan.stats_id != STATS_UNCOUNTED ? t->access : NULL;
    x->record = x->access ? calloc(1, sizeof *x->record) : NULL;
    if (x->record) {
        if (rq->raw_target) {
            snprintf(x->record->target, sizeof x->record->target, "%s", rq->raw_target);
        } else {
            size_t n = rq->target_len < sizeof x->record->target - 1 ? rq->target_len
                                                                     : sizeof x->record->target - 1;
            memcpy(x->record->target, rq->target, n);
        }
        snprintf(x->record->method, sizeof x->record->method, "%s", rq->method);
        net_format_peer(rq->peer, x->record->client, sizeof x->record->client);
    }
    /* A route's own pool, else the global one; /healthz, /stats, 404 and 405 take no worker. */
    x->pool = NULL;
    if (x->plan.route && x->plan.stats_id != STATS_UNCOUNTED)
        x->pool = x->plan.route->pool ? x->plan.route->pool : t->pool;
    x->overflow_reset = t->overflow_reset;
    stats_request_begin(sh, x->plan.stats_id);
}

/* Makes the upload's answer the plan's, so the engine answers it like any other. */
static void take_answer(struct exchange *x)
{
    struct upload_answer ans;
    upload_finish(x->upload, &ans);
    /* An upload error is answered at once; a success keeps the plan's delay (?delay=). */
    if (ans.status != 200) {
        x->plan.delay_us = 0;
        x->plan.timing = NULL;
    }
    x->plan.action = PLAN_RESPOND;
    x->plan.status = (unsigned)ans.status;
    x->plan.content_type = ans.content_type;
    x->plan.body = ans.body;
    x->plan.body_len = ans.body_len;
    x->plan.cacheable = 0;
    x->plan.drip = (struct delay_drip){0, 0};
    x->plan.truncate = 0;
}

int exchange_upload_begin(struct exchange *x, const char *content_type, int64_t content_length,
                          uint64_t max_body)
{
    /* About 9 KiB, so it is only taken by uploads, not by every request. */
    x->upload = malloc(sizeof *x->upload);
    if (!x->upload)
        return -ENOMEM;
    if (upload_init(x->upload, content_type, content_length, max_body) == 0)
        return EXCHANGE_UPLOAD_READING;
    take_answer(x);
    return EXCHANGE_UPLOAD_DECIDED;
}

void exchange_body_bytes(struct exchange *x, size_t n)
{
    stats_bytes_in(x->shard, n);
    if (x->record)
        x->record->bytes_in += n;
}

int exchange_upload_feed(struct exchange *x, const void *buf, size_t len)
{
    exchange_body_bytes(x, len);
    int decided = upload_error(x->upload) != 0;
    if (upload_feed(x->upload, buf, len) == 0)
        return EXCHANGE_UPLOAD_READING;
    if (!decided) {
        take_answer(x);
        x->decided_at = upload_received(x->upload);
    }
    if (upload_received(x->upload) - x->decided_at > EXCHANGE_DISCARD_MAX)
        return -EMSGSIZE;
    return EXCHANGE_UPLOAD_DECIDED;
}

void exchange_upload_finish(struct exchange *x)
{
    take_answer(x);
}

enum exchange_admission exchange_admit(struct exchange *x, void (*admit)(struct pool_entry *e))
{
    if (!x->pool)
        return EXCHANGE_GO;
    x->pe.admit = admit;
    switch (pool_enter(x->pool, &x->pe)) {
    case POOL_ADMITTED:
        x->state = EXCHANGE_ADMITTED;
        return EXCHANGE_GO;
    case POOL_QUEUED:
        x->state = EXCHANGE_QUEUED;
        return EXCHANGE_PARKED;
    case POOL_OUT:
        break;
    }
    x->refused = 1;
    x->state = EXCHANGE_READY; /* answer now, with the refusal */
    if (x->overflow_reset) {
        x->plan.action = PLAN_RESET;
        x->plan.status = 0;
        x->plan.delay_us = 0;
        x->plan.timing = NULL;
        x->plan.cacheable = 0;
    } else {
        char msg[128];
        struct pool_counts pc;
        pool_counts_get(x->pool, &pc);
        snprintf(msg, sizeof msg, "all %u workers are busy and the queue is full", pc.workers);
        route_plan_error(&x->plan, 503, msg);
    }
    return EXCHANGE_REFUSED;
}

enum exchange_admission exchange_admitted(struct exchange *x)
{
    x->state = x->pe.flushed ? EXCHANGE_CANCELLED : EXCHANGE_ADMITTED;
    return x->pe.flushed ? EXCHANGE_REFUSED : EXCHANGE_GO;
}

struct exchange *exchange_of_entry(struct pool_entry *e)
{
    return (struct exchange *)(void *)((char *)e - offsetof(struct exchange, pe));
}

int exchange_wait(struct exchange *x, struct timer_heap *h, uint64_t now_us)
{
    x->timer.due_us = now_us + x->plan.delay_us;
    x->due_us = x->timer.due_us;
    if (timer_heap_push(h, &x->timer) != 0) {
        x->state = EXCHANGE_CANCELLED;
        return -ENOSPC;
    }
    x->state = EXCHANGE_WAITING;
    stats_wait_begin(x->shard);
    return 0;
}

void exchange_sleep(struct exchange *x, int (*sleep_fn)(void *arg, uint64_t delay_us), void *arg)
{
    x->due_us = timer_now_us() + x->plan.delay_us;
    stats_wait_begin(x->shard);
    int cut = sleep_fn(arg, x->plan.delay_us);
    stats_wait_end(x->shard);
    x->state = cut ? EXCHANGE_CANCELLED : EXCHANGE_READY;
}

struct exchange *exchange_of_timer(struct timer_node *n)
{
    return (struct exchange *)(void *)((char *)n - offsetof(struct exchange, timer));
}

void exchange_fire(struct exchange *x, int client_gone, int give_up)
{
    if (x->state == EXCHANGE_SENDING) {
        /* The next chunk of a drip is due: sent on, unless the server gives up on it. */
        if (give_up)
            x->state = EXCHANGE_CANCELLED;
        return;
    }
    stats_wait_end(x->shard);
    x->state = client_gone || give_up ? EXCHANGE_CANCELLED : EXCHANGE_READY;
}

/* The request no longer needs its worker of --workers: the next queued request gets it. */
static void free_worker(struct exchange *x)
{
    if (x->pool)
        pool_leave(x->pool, &x->pe); /* once: the entry is POOL_OUT afterwards */
}

void exchange_answer(struct exchange *x)
{
    uint64_t now = timer_now_us();
    /* A worker is free once it has handed over a whole answer, as a servlet thread is once it
     * has written the response: a client that sends its next request as soon as it reads this
     * answer must find the worker free, not race the engine's end of the request. A paced body
     * keeps its worker until its last byte is handed over (exchange_body_take). */
    if (!exchange_paced(x))
        free_worker(x);
    x->answered = x->plan.status;
    x->sent_us = now;
    if (x->record)
        x->record->answered_us = now;
    stats_observe(x->shard, x->plan.stats_id, STATS_HIST_SERVICE, now - x->begun_us);
    if (x->plan.delay_us && x->due_us) {
        stats_observe(x->shard, x->plan.stats_id, STATS_HIST_INTENDED, x->plan.delay_us);
        stats_observe(x->shard, x->plan.stats_id, STATS_HIST_OVERSHOOT,
                      now > x->due_us ? now - x->due_us : 0);
    }
}

int exchange_paced(const struct exchange *x)
{
    return x->plan.drip.chunks > 0 || x->plan.truncate;
}

enum exchange_body exchange_body_next(const struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t *len, uint64_t *due_us)
{
    const struct plan *p = &x->plan;
    uint64_t total = p->body_len, end = p->truncate ? total / 2 : total;
    uint64_t n = p->drip.chunks ? p->drip.chunks : 1, over = p->drip.chunks ? p->drip.over_us : 0;
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
    if (sent >= end)
        return end < total ? EXCHANGE_BODY_CUT : EXCHANGE_BODY_DONE;
    *due_us = x->sent_us + (over * (due + 1)) / n;
    return EXCHANGE_BODY_WAIT;
}

enum exchange_body exchange_body_take(struct exchange *x, uint64_t now_us, uint64_t sent,
                                      size_t max, size_t *len, uint64_t *due_us)
{
    enum exchange_body b = exchange_body_next(x, now_us, sent, len, due_us);
    if (b == EXCHANGE_BODY_SEND && *len > max)
        *len = max;
    if (b == EXCHANGE_BODY_DONE || b == EXCHANGE_BODY_CUT ||
        (b == EXCHANGE_BODY_SEND && sent + *len == x->plan.body_len))
        free_worker(x);
    return b;
}

int exchange_pace(struct exchange *x, struct timer_heap *h, uint64_t due_us)
{
    timer_heap_cancel(h, &x->timer); /* queued once, whoever asks twice */
    x->timer.due_us = due_us;
    if (timer_heap_push(h, &x->timer) != 0) {
        x->state = EXCHANGE_CANCELLED;
        return -ENOSPC;
    }
    x->state = EXCHANGE_SENDING;
    return 0;
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
        .status = x->answered,
        .bytes_in = r->bytes_in,
        .bytes_out = x->answered ? x->plan.body_len : 0,
        .delay_us = x->plan.delay_us,
        .waited_us = wait_start && done > wait_start ? done - wait_start : 0,
        .service_us = done - x->begun_us,
    };
    accesslog_write(x->access, &e);
    free(r);
    x->record = NULL;
}

void exchange_end(struct exchange *x, struct timer_heap *h)
{
    if (x->state == EXCHANGE_WAITING) {
        timer_heap_cancel(h, &x->timer);
        stats_wait_end(x->shard);
        x->state = EXCHANGE_CANCELLED;
    } else if (x->state == EXCHANGE_SENDING) {
        timer_heap_cancel(h, &x->timer);
    }
    if (x->pool)
        pool_leave(x->pool, &x->pe);
    /* The line is written before the request stops counting as in flight, so that whoever
     * sees in_flight reach 0 finds every line written. */
    if (x->record)
        log_request(x);
    /* A request reset by --overflow reset (counted by the pool), or closed, reset or cut short
     * by ?fault=, was not abandoned by its client. */
    int broken = x->plan.action == PLAN_RESET || x->plan.action == PLAN_CLOSE;
    if (x->plan.truncate || (broken && !x->refused))
        stats_fault(x->shard, x->plan.stats_id);
    else if (!x->answered && !broken)
        stats_cancel(x->shard, x->plan.stats_id);
    stats_request_end(x->shard, x->plan.stats_id, x->answered);
    free(x->upload);
    x->upload = NULL;
}
