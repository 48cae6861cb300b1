#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/exchange_impl.h"
#include "run/loop.h"
#include "run/service.h"
#include "check.h"

/* A fake backend: it records what the core loop asks of it, and carries nothing out but
 * exchange_answer for an ANSWER, so that every request's state stays true. */
struct fake {
    struct core_loop l;
    struct service svc;
    size_t carried[EXCHANGE_DO_DROP + 1]; /* actions handed to carry, by kind */
    int defer;                            /* carry says the answer goes out at the turn's end */
    struct exchange *gone;                /* peer_gone says this one's client left */
    unsigned quiesced, gave_up, woken, earliest, prefetched, adopted, waits;
    atomic_int stopping;
};

static int fake_carry(void *ctx, struct exchange *x, enum exchange_do d)
{
    struct fake *f = ctx;
    f->carried[d]++;
    if (d == EXCHANGE_DO_ANSWER)
        exchange_answer(x);
    return f->defer;
}

static int fake_gone(void *ctx, struct exchange *x)
{
    return ((struct fake *)ctx)->gone == x;
}

static void fake_prefetch(void *ctx, struct exchange *x, unsigned ahead)
{
    (void)x;
    CHECK(ahead >= 1 && ahead <= 3);
    ((struct fake *)ctx)->prefetched++;
}

static void fake_quiesce(void *ctx)
{
    ((struct fake *)ctx)->quiesced++;
}

static void fake_give_up(void *ctx)
{
    ((struct fake *)ctx)->gave_up++;
}

static void fake_wake(void *ctx)
{
    __atomic_add_fetch(&((struct fake *)ctx)->woken, 1, __ATOMIC_SEQ_CST);
}

static void fake_earliest(void *ctx)
{
    ((struct fake *)ctx)->earliest++;
}

/* Takes over an accepted connection by closing it, and counts it (the fake has no library). */
static int fake_adopt(void *ctx, int fd, const struct sockaddr *peer, socklen_t len, int control)
{
    struct fake *f = ctx;
    (void)peer;
    (void)len;
    f->adopted += control ? 101u : 1u;
    close(fd);
    return 0;
}

/* loop_run's wait: the server is asked to stop after three turns. */
static void fake_wait(void *ctx, uint64_t wait_us)
{
    struct fake *f = ctx;
    CHECK(wait_us <= LOOP_TICK_US);
    if (++f->waits == 3)
        atomic_store(&f->stopping, 1);
}

static const struct loop_backend fake_backend = {
    .adopt = fake_adopt,
    .wait = fake_wait,
    .carry = fake_carry,
    .peer_gone = fake_gone,
    .prefetch = fake_prefetch,
    .quiesce = fake_quiesce,
    .give_up = fake_give_up,
    .wake = fake_wake,
    .earliest = fake_earliest,
};

static struct exchange *admitted;
static void note_admit(struct pool_entry *e)
{
    admitted = exchange_of_entry(e);
}

static void setup(struct fake *f, unsigned workers, size_t max_waiting, uint64_t grace_us)
{
    struct config cfg = config_defaults;
    memset(f, 0, sizeof *f);
    delay_spec_fixed(&cfg.delay, 10 * 1000 * 1000); /* 10 s: nothing falls due by itself */
    cfg.workers = workers;
    cfg.queue = workers ? 4 : 0;
    CHECK_INT(service_init(&f->svc, &cfg, 1, NULL), 0);
    CHECK_INT(loop_init(&f->l, &fake_backend, f, &f->svc, 0, max_waiting, grace_us), 0);
    atomic_init(&f->stopping, 0);
}

static void teardown(struct fake *f)
{
    loop_cleanup(&f->l);
    service_cleanup(&f->svc);
}

/* A GET of `target` that the core holds for its delay in f's heap: returns what loop_hold said. */
static enum exchange_do begin_waiting(struct fake *f, struct exchange *x, const char *target)
{
    struct route_request rq = {.method = "GET", .target = target, .target_len = strlen(target)};
    CHECK_INT(
        exchange_on_head(x, NULL, NULL, &f->svc, stats_shard(f->svc.stats, 0), &rq, note_admit),
        EXCHANGE_DO_READ);
    CHECK_INT(exchange_next(x), EXCHANGE_DO_HOLD);
    return loop_hold(&f->l, x);
}

static void end_all(struct fake *f, struct exchange *xs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        loop_end(&f->l, &xs[i]);
}

/* Due answers come in batches: nothing before its deadline, then everything due at once, and
 * after an answer no other for LOOP_BATCH_US; the next wake-up is sized to match. */
static void loop_batches_due_answers(void)
{
    struct fake f;
    struct exchange xs[3];
    setup(&f, 0, 8, 0);
    CHECK_U64(loop_next_fire_us(&f.l, 1), 0); /* nothing waits */
    CHECK_U64(loop_wait_us(&f.l, 1, 777), 777);
    for (int i = 0; i < 3; i++)
        CHECK_INT(begin_waiting(&f, &xs[i], "/test"), EXCHANGE_DO_WAIT);
    CHECK_INT(f.earliest, 1); /* the first only: later ones were not earlier */
    uint64_t due0 = xs[0].timer.due_us, due2 = xs[2].timer.due_us;
    CHECK_U64(loop_fire(&f.l, due0 - 1), 0);
    CHECK_U64(loop_next_fire_us(&f.l, due0 - 1), due0);
    CHECK_U64(loop_wait_us(&f.l, due0 - 10, 1000000), 10);
    CHECK_U64(loop_fire(&f.l, due0), 1 + (xs[1].timer.index == TIMER_NOT_QUEUED) +
                                         (xs[2].timer.index == TIMER_NOT_QUEUED));
    CHECK_U64(f.carried[EXCHANGE_DO_ANSWER], 1 + (due2 == due0) + (xs[1].timer.due_us == due0));
    if (xs[2].timer.index != TIMER_NOT_QUEUED) {
        /* Due again before a batch has passed: held back until it has. */
        uint64_t soon = due0 + LOOP_BATCH_US / 2;
        if (due2 <= soon) {
            CHECK_U64(loop_fire(&f.l, soon), 0);
            CHECK_U64(loop_next_fire_us(&f.l, soon), due0 + LOOP_BATCH_US);
        }
        CHECK(loop_fire(&f.l, due2 + LOOP_BATCH_US) >= 1);
    }
    CHECK_U64(f.carried[EXCHANGE_DO_ANSWER], 3);
    CHECK(f.prefetched >= 1);
    end_all(&f, xs, 3);
    teardown(&f);
}

/* A wave larger than a turn's cap is answered LOOP_ANSWERS_PER_TURN at a time, and the loop
 * asks to come back at once; answers that go out at the turn's end are capped lower. */
static void loop_caps_answers_per_turn(void)
{
    struct fake f;
    size_t n = LOOP_ANSWERS_PER_TURN + 100;
    struct exchange *xs = calloc(n, sizeof *xs);
    setup(&f, 0, n, 0);
    for (size_t i = 0; i < n; i++)
        CHECK_INT(begin_waiting(&f, &xs[i], "/test"), EXCHANGE_DO_WAIT);
    uint64_t late = xs[n - 1].timer.due_us;
    CHECK_U64(loop_fire(&f.l, late), LOOP_ANSWERS_PER_TURN);
    CHECK_U64(loop_next_fire_us(&f.l, late), late);
    CHECK_U64(loop_wait_us(&f.l, late, 1000), 0);
    f.defer = 1;
    CHECK_U64(loop_fire(&f.l, late), LOOP_DEFERRED_PER_TURN < 100 ? LOOP_DEFERRED_PER_TURN : 100);
    f.defer = 0;
    while (loop_fire(&f.l, late))
        ;
    CHECK_U64(f.carried[EXCHANGE_DO_ANSWER], n);
    CHECK_U64(loop_next_fire_us(&f.l, late), 0);
    end_all(&f, xs, n);
    free(xs);
    teardown(&f);
}

/* A client that left while waiting is told to the core: its action is DROP, not an answer. */
static void loop_drops_requests_whose_client_left(void)
{
    struct fake f;
    struct exchange xs[2];
    setup(&f, 0, 4, 0);
    CHECK_INT(begin_waiting(&f, &xs[0], "/test"), EXCHANGE_DO_WAIT);
    CHECK_INT(begin_waiting(&f, &xs[1], "/test"), EXCHANGE_DO_WAIT);
    f.gone = &xs[0];
    CHECK_U64(loop_fire(&f.l, xs[1].timer.due_us), 2);
    CHECK_U64(f.carried[EXCHANGE_DO_DROP], 1);
    CHECK_U64(f.carried[EXCHANGE_DO_ANSWER], 1);
    end_all(&f, xs, 2);
    teardown(&f);
}

/* The stop: quiesce once, serve within --grace, then give up: the backend's give_up, and every
 * timer answered at once, uncapped and unbatched, "server stopping"; waits are cut to the
 * drain's tick; the loop ends once its requests are gone. */
static void loop_stop_gives_up_after_grace(void)
{
    struct fake f;
    struct exchange xs[3];
    uint64_t wait, t0 = timer_now_us();
    setup(&f, 0, 4, 5000);
    for (int i = 0; i < 3; i++)
        CHECK_INT(begin_waiting(&f, &xs[i], "/test"), EXCHANGE_DO_WAIT);
    wait = 123456;
    CHECK_INT(loop_stop_step(&f.l, 0, 3, t0, &wait), 0);
    CHECK_U64(wait, 123456); /* serving: untouched */
    wait = LOOP_TICK_US;
    CHECK_INT(loop_stop_step(&f.l, 1, 3, t0, &wait), 0);
    CHECK_INT(f.quiesced, 1);
    CHECK(wait <= LOOP_DRAIN_TICK_US);
    wait = LOOP_TICK_US;
    CHECK_INT(loop_stop_step(&f.l, 1, 3, t0 + 1000, &wait), 0);
    CHECK_INT(f.quiesced, 1);
    CHECK_INT(f.gave_up, 0);
    CHECK_U64(f.carried[EXCHANGE_DO_ANSWER], 0);
    wait = LOOP_TICK_US;
    CHECK_INT(loop_stop_step(&f.l, 1, 3, t0 + 5000, &wait), 0);
    CHECK_INT(f.gave_up, 1);
    CHECK_U64(wait, 0);
    CHECK_U64(f.carried[EXCHANGE_DO_ANSWER], 3);
    for (int i = 0; i < 3; i++)
        CHECK_INT(xs[i].stopped, 1);
    /* Given up, whatever is queued later is answered on the next turn, without waiting. */
    end_all(&f, xs, 3);
    CHECK_INT(begin_waiting(&f, &xs[0], "/test"), EXCHANGE_DO_WAIT);
    CHECK_U64(loop_next_fire_us(&f.l, t0 + 6000), t0 + 6000);
    CHECK_U64(loop_fire(&f.l, t0 + 6000), 1);
    loop_end(&f.l, &xs[0]);
    wait = LOOP_TICK_US;
    CHECK_INT(loop_stop_step(&f.l, 1, 0, t0 + 7000, &wait), 1);
    teardown(&f);
}

struct admit_arg {
    struct fake *f;
    struct exchange *x;
};

static void *hand_back(void *arg)
{
    struct admit_arg *a = arg;
    loop_inbox_put(&a->f->l, a->x);
    return NULL;
}

/* A request handed back by another thread waits in the inbox, the loop is woken, and taking
 * the inbox carries out what the core says next; one that ends first is taken out of it. */
static void loop_inbox_hands_requests_back(void)
{
    struct fake f;
    struct exchange xs[2];
    setup(&f, 1, 4, 0);
    CHECK_INT(begin_waiting(&f, &xs[0], "/test"), EXCHANGE_DO_WAIT);
    admitted = NULL;
    CHECK_INT(begin_waiting(&f, &xs[1], "/test"), EXCHANGE_DO_PARK);
    CHECK_U64(loop_fire(&f.l, xs[0].timer.due_us), 1); /* answered: its worker goes to xs[1] */
    CHECK(admitted == &xs[1]);
    struct admit_arg a = {&f, &xs[1]};
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, hand_back, &a), 0);
    pthread_join(t, NULL);
    CHECK_INT(f.woken, 1);
    CHECK_INT(xs[1].in_inbox, 1);
    loop_inbox_take(&f.l);
    CHECK_INT(xs[1].in_inbox, 0);
    CHECK_U64(f.carried[EXCHANGE_DO_HOLD], 1); /* it has its worker: now its delay */
    loop_inbox_take(&f.l);                     /* empty: nothing carried again */
    CHECK_U64(f.carried[EXCHANGE_DO_HOLD], 1);
    CHECK_INT(loop_hold(&f.l, &xs[1]), EXCHANGE_DO_WAIT);
    end_all(&f, xs, 2);
    /* Ended while in the inbox: gone from it. */
    CHECK_INT(begin_waiting(&f, &xs[0], "/test"), EXCHANGE_DO_WAIT);
    CHECK_INT(begin_waiting(&f, &xs[1], "/test"), EXCHANGE_DO_PARK);
    loop_inbox_put(&f.l, &xs[1]);
    loop_end(&f.l, &xs[1]);
    CHECK(f.l.inbox == NULL);
    CHECK_INT(xs[1].in_inbox, 0);
    loop_end(&f.l, &xs[0]);
    teardown(&f);
}

/* loop_accept takes a batch from a listener, hands each connection over, and stops at
 * --max-connections (the limit's pause); a closed connection frees its place. */
static void loop_accepts_up_to_the_limit(void)
{
    struct fake f;
    struct config cfg = config_defaults;
    char msg[160];
    memset(&f, 0, sizeof f);
    cfg.max_connections = 2;
    CHECK_INT(service_init(&f.svc, &cfg, 1, NULL), 0);
    CHECK_INT(loop_init(&f.l, &fake_backend, &f, &f.svc, 0, 8, 0), 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), c[3];
    CHECK(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 8) == 0 &&
          getsockname(l, (struct sockaddr *)&a, &alen) == 0);
    CHECK_U64(loop_accept(&f.l, l, 0, timer_now_us(), msg, sizeof msg), 0); /* none pending */
    for (int i = 0; i < 3; i++) {
        c[i] = socket(AF_INET, SOCK_STREAM, 0);
        CHECK_INT(connect(c[i], (struct sockaddr *)&a, sizeof a), 0);
    }
    usleep(20000);
    CHECK_U64(loop_accept(&f.l, l, 1, timer_now_us(), msg, sizeof msg), SERVICE_LIMIT_RETRY_US);
    CHECK_INT(f.adopted, 2 * 101); /* two, both from the control listener as told */
    CHECK_STR(msg, "");
    struct conn k;
    loop_conn_opened(&f.l, &k, c[0], 0);
    CHECK_INT(conn_count(&f.l.conns), 1);
    loop_conn_closed(&f.l, &k); /* frees a place */
    CHECK_U64(loop_accept(&f.l, l, 0, timer_now_us(), msg, sizeof msg), SERVICE_LIMIT_RETRY_US);
    CHECK_INT(f.adopted, 2 * 101 + 1);
    for (int i = 0; i < 3; i++)
        close(c[i]);
    close(l);
    loop_cleanup(&f.l);
    service_cleanup(&f.svc);
}

/* loop_run turns until the stop is over: it waits through the backend, quiesces it once asked to
 * stop, and ends with nothing in flight. */
static void loop_run_turns_until_the_stop(void)
{
    struct fake f;
    setup(&f, 0, 8, 0);
    loop_run(&f.l, &f.stopping);
    CHECK(f.waits >= 3);
    CHECK_INT(f.quiesced, 1);
    CHECK_INT(f.gave_up, 0);
    teardown(&f);
}

int main(void)
{
    loop_accepts_up_to_the_limit();
    loop_run_turns_until_the_stop();
    loop_batches_due_answers();
    loop_caps_answers_per_turn();
    loop_drops_requests_whose_client_left();
    loop_stop_gives_up_after_grace();
    loop_inbox_hands_requests_back();
    return CHECK_DONE();
}
