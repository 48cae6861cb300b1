#include <errno.h>
#include <stdlib.h>

#include "../../common/timer.h"
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

static void timer_now_is_monotonic(void)
{
    uint64_t a = timer_now_us(), b = timer_now_us();
    CHECK(b >= a);
    CHECK(a > 0);
}

int main(void)
{
    timer_pops_in_deadline_order();
    timer_pop_due_leaves_future_deadlines();
    timer_cancel_removes_any_node_and_twice_is_harmless();
    timer_push_beyond_max_is_refused();
    timer_wait_us_is_exact_and_capped();
    timer_now_is_monotonic();
    return CHECK_DONE();
}
