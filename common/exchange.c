#include "exchange.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
    x->begun_us = timer_now_us();
    route_plan(t, rq, &x->plan);
    x->pool = t->pool && x->plan.route && x->plan.stats_id != STATS_UNCOUNTED ? t->pool : NULL;
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
}

int exchange_upload_begin(struct exchange *x, const char *content_type, int64_t content_length,
                          uint64_t max_body)
{
    /* About 9 KiB, so it is only taken by uploads, not by every request. */
    x->upload = malloc(sizeof *x->upload);
    if (!x->upload)
        return -ENOMEM;
    if (upload_init(x->upload, content_type, content_length, max_body) == 0)
        return 0;
    take_answer(x);
    return 1;
}

int exchange_upload_feed(struct exchange *x, const void *buf, size_t len)
{
    stats_bytes_in(x->shard, len);
    int decided = upload_error(x->upload) != 0;
    if (upload_feed(x->upload, buf, len) == 0)
        return 0;
    if (!decided) {
        take_answer(x);
        x->decided_at = upload_received(x->upload);
    }
    if (upload_received(x->upload) - x->decided_at > EXCHANGE_DISCARD_MAX)
        return -EMSGSIZE;
    return 1;
}

void exchange_upload_finish(struct exchange *x)
{
    take_answer(x);
}

int exchange_admit(struct exchange *x, void (*admit)(struct pool_entry *e))
{
    if (!x->pool)
        return EXCHANGE_GO;
    x->pe.admit = admit;
    switch (pool_enter(x->pool, &x->pe)) {
    case POOL_ADMITTED:
        return EXCHANGE_GO;
    case POOL_QUEUED:
        x->state = EXCHANGE_QUEUED;
        return EXCHANGE_PARKED;
    case POOL_OUT:
        break;
    }
    if (x->overflow_reset) {
        x->plan.action = PLAN_RESET;
        x->plan.status = 0;
    } else {
        char msg[128];
        struct pool_counts pc;
        pool_counts_get(x->pool, &pc);
        snprintf(msg, sizeof msg, "all %u workers are busy and the queue is full", pc.workers);
        x->plan.action = PLAN_RESPOND;
        x->plan.status = 503;
        x->plan.content_type = "application/json";
        x->plan.body_len = route_error_json(x->plan.text, sizeof x->plan.text, 503, msg);
        x->plan.body = x->plan.text;
        x->plan.headers = NULL;
        x->plan.nheaders = 0;
    }
    x->plan.delay_us = 0;
    x->plan.timing = NULL;
    x->plan.cacheable = 0;
    return EXCHANGE_REFUSED;
}

struct exchange *exchange_of_entry(struct pool_entry *e)
{
    return (struct exchange *)(void *)((char *)e - offsetof(struct exchange, pe));
}

int exchange_wait(struct exchange *x, struct timer_heap *h, uint64_t now_us)
{
    x->timer.due_us = now_us + x->plan.delay_us;
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
    x->timer.due_us = timer_now_us() + x->plan.delay_us;
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
    stats_wait_end(x->shard);
    x->state = client_gone || give_up ? EXCHANGE_CANCELLED : EXCHANGE_READY;
}

void exchange_answer(struct exchange *x)
{
    uint64_t now = timer_now_us();
    x->answered = x->plan.status;
    stats_observe(x->shard, x->plan.stats_id, STATS_HIST_SERVICE, now - x->begun_us);
    if (x->plan.delay_us && x->timer.due_us) {
        stats_observe(x->shard, x->plan.stats_id, STATS_HIST_INTENDED, x->plan.delay_us);
        stats_observe(x->shard, x->plan.stats_id, STATS_HIST_OVERSHOOT,
                      now > x->timer.due_us ? now - x->timer.due_us : 0);
    }
}

void exchange_end(struct exchange *x, struct timer_heap *h)
{
    if (x->state == EXCHANGE_WAITING) {
        timer_heap_cancel(h, &x->timer);
        stats_wait_end(x->shard);
        x->state = EXCHANGE_CANCELLED;
    }
    if (x->pool)
        pool_leave(x->pool, &x->pe);
    /* A request reset by --overflow reset was refused, not abandoned by its client. */
    if (!x->answered && x->plan.action != PLAN_RESET)
        stats_cancel(x->shard, x->plan.stats_id);
    stats_request_end(x->shard, x->plan.stats_id, x->answered);
    free(x->upload);
    x->upload = NULL;
}
