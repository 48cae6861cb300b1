#include "base/timer.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

uint64_t timer_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void timer_node_init(struct timer_node *node)
{
    node->due_us = 0;
    node->index = TIMER_NOT_QUEUED;
    node->prev = node->next = NULL;
}

int timer_heap_init(struct timer_heap *heap, size_t max)
{
    /* The whole array is reserved up front: the ceiling is known (one timer per connection) and
     * untouched pages of a large calloc cost no memory until they are used. */
    heap->nodes = calloc(max ? max : 1, sizeof *heap->nodes);
    if (!heap->nodes)
        return -ENOMEM;
    heap->count = heap->listed = 0;
    heap->max = max ? max : 1;
    heap->head = heap->tail = NULL;
    return 0;
}

void timer_heap_cleanup(struct timer_heap *heap)
{
    free(heap->nodes);
    heap->nodes = NULL;
    heap->count = heap->max = heap->listed = 0;
    heap->head = heap->tail = NULL;
}

static void place(struct timer_heap *heap, size_t i, struct timer_node *node)
{
    heap->nodes[i] = node;
    node->index = i;
}

static void sift_up(struct timer_heap *heap, size_t i)
{
    struct timer_node *node = heap->nodes[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (heap->nodes[parent]->due_us <= node->due_us)
            break;
        place(heap, i, heap->nodes[parent]);
        i = parent;
    }
    place(heap, i, node);
}

static void sift_down(struct timer_heap *heap, size_t i)
{
    struct timer_node *node = heap->nodes[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= heap->count)
            break;
        if (child + 1 < heap->count && heap->nodes[child + 1]->due_us < heap->nodes[child]->due_us)
            child++;
        if (node->due_us <= heap->nodes[child]->due_us)
            break;
        place(heap, i, heap->nodes[child]);
        i = child;
    }
    place(heap, i, node);
}

int timer_heap_push(struct timer_heap *heap, struct timer_node *node)
{
    if (heap->count + heap->listed == heap->max)
        return -ENOSPC;
    if (!heap->tail || node->due_us >= heap->tail->due_us) {
        node->prev = heap->tail;
        node->next = NULL;
        if (heap->tail)
            heap->tail->next = node;
        else
            heap->head = node;
        heap->tail = node;
        node->index = TIMER_LISTED;
        heap->listed++;
        return 0;
    }
    place(heap, heap->count++, node);
    sift_up(heap, heap->count - 1);
    return 0;
}

void timer_heap_cancel(struct timer_heap *heap, struct timer_node *node)
{
    size_t i = node->index;
    if (i == TIMER_LISTED) {
        if (node->prev)
            node->prev->next = node->next;
        else
            heap->head = node->next;
        if (node->next)
            node->next->prev = node->prev;
        else
            heap->tail = node->prev;
        node->prev = node->next = NULL;
        node->index = TIMER_NOT_QUEUED;
        heap->listed--;
        return;
    }
    if (i == TIMER_NOT_QUEUED || i >= heap->count || heap->nodes[i] != node)
        return;
    node->index = TIMER_NOT_QUEUED;
    struct timer_node *last = heap->nodes[--heap->count];
    if (i == heap->count)
        return;
    place(heap, i, last);
    /* The moved node may belong above or below its new place. */
    if (i > 0 && heap->nodes[(i - 1) / 2]->due_us > last->due_us)
        sift_up(heap, i);
    else
        sift_down(heap, i);
}

struct timer_node *timer_heap_peek(const struct timer_heap *heap)
{
    struct timer_node *top = heap->count ? heap->nodes[0] : NULL;
    if (!top || (heap->head && heap->head->due_us <= top->due_us))
        return heap->head;
    return top;
}

struct timer_node *timer_heap_pop_due(struct timer_heap *heap, uint64_t now_us)
{
    struct timer_node *top = timer_heap_peek(heap);
    if (!top || top->due_us > now_us)
        return NULL;
    timer_heap_cancel(heap, top);
    return top;
}

uint64_t timer_heap_wait_us(const struct timer_heap *heap, uint64_t now_us, uint64_t idle_us)
{
    struct timer_node *top = timer_heap_peek(heap);
    if (!top)
        return idle_us;
    if (top->due_us <= now_us)
        return 0;
    uint64_t us = top->due_us - now_us;
    return us > idle_us ? idle_us : us;
}
