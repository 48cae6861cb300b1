#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "base/timer.h"
#include "check.h"

static void timer_pops_in_deadline_order(void)
{
    struct timer_heap h;
    struct timer_node nodes[64];
    CHECK_INT(timer_heap_init(&h, 64), 0);
    /* A fixed pseudo-random permutation of deadlines, with duplicates. */
    for (size_t i = 0; i < 64; i++) {
        timer_node_init(&nodes[i]);
        nodes[i].due_us = (i * 37) % 50;
        CHECK_INT(timer_heap_push(&h, &nodes[i]), 0);
    }
    uint64_t last = 0;
    size_t popped = 0;
    struct timer_node *n;
    while ((n = timer_heap_pop_due(&h, UINT64_MAX)) != NULL) {
        CHECK(n->due_us >= last);
        CHECK(n->index == TIMER_NOT_QUEUED);
        last = n->due_us;
        popped++;
    }
    CHECK_INT(popped, 64);
    timer_heap_cleanup(&h);
}

static void timer_pop_due_leaves_future_deadlines(void)
{
    struct timer_heap h;
    struct timer_node a, b;
    timer_heap_init(&h, 4);
    timer_node_init(&a);
    timer_node_init(&b);
    a.due_us = 100;
    b.due_us = 200;
    timer_heap_push(&h, &b);
    timer_heap_push(&h, &a);
    CHECK(timer_heap_pop_due(&h, 99) == NULL);
    CHECK(timer_heap_pop_due(&h, 150) == &a);
    CHECK(timer_heap_pop_due(&h, 150) == NULL);
    CHECK(timer_heap_peek(&h) == &b);
    timer_heap_cleanup(&h);
}

static void timer_cancel_removes_any_node_and_twice_is_harmless(void)
{
    struct timer_heap h;
    struct timer_node nodes[32];
    timer_heap_init(&h, 32);
    for (size_t i = 0; i < 32; i++) {
        timer_node_init(&nodes[i]);
        nodes[i].due_us = 1000 - i * 7;
        timer_heap_push(&h, &nodes[i]);
    }
    for (size_t i = 0; i < 32; i += 3) {
        timer_heap_cancel(&h, &nodes[i]);
        timer_heap_cancel(&h, &nodes[i]);
    }
    size_t count = 0;
    uint64_t last = 0;
    struct timer_node *n;
    while ((n = timer_heap_pop_due(&h, UINT64_MAX)) != NULL) {
        CHECK((size_t)(n - nodes) % 3 != 0);
        CHECK(n->due_us >= last);
        last = n->due_us;
        count++;
    }
    CHECK_INT(count, 32 - 11);
    timer_heap_cleanup(&h);
}

static void timer_push_beyond_max_is_refused(void)
{
    struct timer_heap h;
    struct timer_node a, b;
    timer_heap_init(&h, 1);
    timer_node_init(&a);
    timer_node_init(&b);
    CHECK_INT(timer_heap_push(&h, &a), 0);
    CHECK_INT(timer_heap_push(&h, &b), -ENOSPC);
    CHECK(b.index == TIMER_NOT_QUEUED);
    timer_heap_cleanup(&h);
}

static void timer_wait_us_is_exact_and_capped(void)
{
    struct timer_heap h;
    struct timer_node a;
    timer_heap_init(&h, 2);
    CHECK_INT(timer_heap_wait_us(&h, 0, 100000), 100000);
    timer_node_init(&a);
    a.due_us = 10500;
    timer_heap_push(&h, &a);
    CHECK_INT(timer_heap_wait_us(&h, 10000, 100000), 500);
    CHECK_INT(timer_heap_wait_us(&h, 0, 100000), 10500);
    CHECK_INT(timer_heap_wait_us(&h, 0, 5000), 5000);
    CHECK_INT(timer_heap_wait_us(&h, 10500, 100000), 0);
    CHECK_INT(timer_heap_wait_us(&h, 20000, 100000), 0);
    timer_heap_cleanup(&h);
}

static uint64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* timer_now_us is CLOCK_MONOTONIC in microseconds: it falls between two readings of that clock
 * taken around it (a wrong clock or unit lands far outside), and a 20 ms sleep moves it by at
 * least 20000 (coarse upper bound: only a wrong unit crosses 10 s). */
static void timer_now_is_the_monotonic_clock_in_microseconds(void)
{
    uint64_t before = monotonic_us();
    uint64_t a = timer_now_us();
    uint64_t after = monotonic_us();
    if (a < before || a > after)
        CHECK_FAIL_("timer_now_us() %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 "]", a, before,
                    after);
    else
        check_passed++;
    struct timespec nap = {0, 20000000};
    while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
        ;
    uint64_t b = timer_now_us();
    CHECK(b >= a + 20000);
    CHECK(b - a < 10000000);
}

static void timer_in_order_deadlines_take_the_list(void)
{
    struct timer_heap h;
    struct timer_node n[7];
    static const uint64_t due[7] = {10, 20, 20, 15, 30, 5, 40};
    static const size_t want[7] = {5, 0, 3, 1, 2, 4, 6}; /* pop order (ties: list first) */
    timer_heap_init(&h, 7);
    for (size_t i = 0; i < 7; i++) {
        timer_node_init(&n[i]);
        n[i].due_us = due[i];
        CHECK_INT(timer_heap_push(&h, &n[i]), 0);
    }
    /* 15 and 5 came after a later deadline: the heap; the rest were in order: the list. */
    CHECK_INT(h.listed, 5);
    CHECK_INT(h.count, 2);
    /* Looking ahead walks the list only: 10, 20, 20, 30, 40; a heap node has no next. */
    static const size_t listed[5] = {0, 1, 2, 4, 6};
    for (size_t i = 0; i < 5; i++)
        CHECK(timer_heap_next_listed(&n[listed[i]]) == (i < 4 ? &n[listed[i + 1]] : NULL));
    CHECK(timer_heap_next_listed(&n[3]) == NULL && timer_heap_next_listed(&n[5]) == NULL);
    for (size_t i = 0; i < 7; i++) {
        struct timer_node *got = timer_heap_pop_due(&h, UINT64_MAX);
        CHECK(got == &n[want[i]]);
        CHECK(got && got->index == TIMER_NOT_QUEUED && !got->prev && !got->next);
    }
    CHECK(timer_heap_peek(&h) == NULL);
    /* The list's head, middle and tail cancelled (twice), the heap's one too. */
    for (size_t i = 0; i < 7; i++)
        timer_heap_push(&h, &n[i]);
    static const size_t gone[4] = {0, 1, 6, 5};
    for (size_t i = 0; i < 4; i++) {
        timer_heap_cancel(&h, &n[gone[i]]);
        timer_heap_cancel(&h, &n[gone[i]]);
    }
    CHECK(timer_heap_pop_due(&h, 15) == &n[3]);
    CHECK(timer_heap_pop_due(&h, 15) == NULL);
    CHECK(timer_heap_peek(&h) == &n[2]);
    CHECK_INT(timer_heap_wait_us(&h, 15, 1000), 5);
    CHECK(timer_heap_pop_due(&h, 30) == &n[2]);
    CHECK(timer_heap_pop_due(&h, 30) == &n[4]);
    CHECK(timer_heap_peek(&h) == NULL);
    /* Capacity counts both. */
    timer_heap_cleanup(&h);
    timer_heap_init(&h, 2);
    n[0].due_us = 10;
    n[1].due_us = 5;
    n[2].due_us = 20;
    CHECK_INT(timer_heap_push(&h, &n[0]), 0);
    CHECK_INT(timer_heap_push(&h, &n[1]), 0);
    CHECK_INT(timer_heap_push(&h, &n[2]), -ENOSPC);
    CHECK(n[2].index == TIMER_NOT_QUEUED);
    timer_heap_cleanup(&h);
}

/* Random pushes (runs in order and out of order), cancels and partial drains against a plain
 * record of what is queued: every pop is the earliest queued deadline and is due. */
static void timer_random_operations_match_a_reference(void)
{
    enum { N = 512 };
    static struct timer_node n[N];
    static int queued[N];
    struct timer_heap h;
    uint64_t seed = 12345, base = 0;
    timer_heap_init(&h, N);
    for (size_t i = 0; i < N; i++)
        timer_node_init(&n[i]);
    for (int step = 0; step < 20000; step++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        unsigned r = (unsigned)(seed >> 33);
        size_t i = r % N;
        switch ((r >> 10) % 4) {
        case 0: /* push in order (a fixed delay) */
        case 1: /* push anywhere */
            if (queued[i])
                break;
            n[i].due_us = (r >> 10) % 4 == 0 ? base + 1000 : base + (r >> 12) % 2000;
            CHECK_INT(timer_heap_push(&h, &n[i]), 0);
            queued[i] = 1;
            break;
        case 2:
            timer_heap_cancel(&h, &n[i]);
            queued[i] = 0;
            break;
        case 3: { /* time moves on: drain what is due */
            base += (r >> 12) % 50;
            struct timer_node *t;
            while ((t = timer_heap_pop_due(&h, base)) != NULL) {
                size_t k = (size_t)(t - n);
                CHECK(queued[k] && t->due_us <= base);
                for (size_t j = 0; j < N; j++)
                    if (queued[j] && n[j].due_us < t->due_us)
                        CHECK_FAIL_("popped %llu before %llu", (unsigned long long)t->due_us,
                                    (unsigned long long)n[j].due_us);
                queued[k] = 0;
            }
            struct timer_node *top = timer_heap_peek(&h);
            CHECK(!top || top->due_us > base);
            break;
        }
        }
    }
    size_t left = 0;
    for (size_t j = 0; j < N; j++)
        left += (size_t)queued[j];
    CHECK_INT(h.count + h.listed, left);
    timer_heap_cleanup(&h);
}

int main(void)
{
    timer_pops_in_deadline_order();
    timer_pop_due_leaves_future_deadlines();
    timer_cancel_removes_any_node_and_twice_is_harmless();
    timer_push_beyond_max_is_refused();
    timer_wait_us_is_exact_and_capped();
    timer_now_is_the_monotonic_clock_in_microseconds();
    timer_in_order_deadlines_take_the_list();
    timer_random_operations_match_a_reference();
    return CHECK_DONE();
}
