/*
 * timer: a binary min-heap of deadlines with O(log n) insert, cancel and pop, beside a list
 * for deadlines that come in order: a deadline no earlier than the last one listed is appended
 * there, O(1) each way. With one fixed delay (the common case) every deadline takes the list and
 * the heap stays empty; at 10 000 waiting requests the heap's pops, each a walk over nodes spread
 * through memory, were 2.5 % of slowsrv's CPU.
 *
 * A pure data structure: it never sleeps, reads no clock on its own and owns no thread. An engine
 * keeps one heap per event loop and drives it: it asks for the earliest deadline to size its
 * wait, then pops the due entries and resumes their requests. Nodes are intrusive: the caller
 * embeds a struct timer_node in its own request record (which it owns and frees), so pushing
 * allocates nothing. A heap and its nodes belong to one thread; there is no locking.
 */
#ifndef SLOWSRV_TIMER_H
#define SLOWSRV_TIMER_H

#include <stddef.h>
#include <stdint.h>

struct timer_node {
    uint64_t due_us;                /* deadline on the timer_now_us() clock */
    size_t index;                   /* position in the heap, TIMER_LISTED, or TIMER_NOT_QUEUED */
    struct timer_node *prev, *next; /* while listed */
};

#define TIMER_NOT_QUEUED ((size_t)-1)
#define TIMER_LISTED ((size_t)-2)

struct timer_heap {
    struct timer_node **nodes;      /* owned; capacity `max` fixed at init */
    size_t count;                   /* nodes in the heap */
    size_t max;                     /* nodes in the heap and the list together */
    struct timer_node *head, *tail; /* the list, in deadline order */
    size_t listed;
};

/* Returns the CLOCK_MONOTONIC time in microseconds. Thread-safe. */
uint64_t timer_now_us(void);

/* Marks a node as not queued; call before its first push. */
void timer_node_init(struct timer_node *node);

/* Prepares an empty heap that holds at most `max` nodes (max >= 1). Returns 0, or -ENOMEM. */
int timer_heap_init(struct timer_heap *heap, size_t max);

/* Frees the heap's storage; the nodes are the caller's and are left as they are. */
void timer_heap_cleanup(struct timer_heap *heap);

/* Queues `node` (not already queued) to fire at node->due_us. Returns 0, or -ENOSPC when the
 * heap already holds `max` nodes; the node is then left unqueued. */
int timer_heap_push(struct timer_heap *heap, struct timer_node *node);

/* Removes `node` if it is queued (in this heap); does nothing otherwise, so cancelling twice is
 * harmless. */
void timer_heap_cancel(struct timer_heap *heap, struct timer_node *node);

/* Returns the node with the earliest deadline without removing it, or NULL if empty. */
struct timer_node *timer_heap_peek(const struct timer_heap *heap);

/* The node listed after `node`, in deadline order: NULL when `node` is the list's last or sits
 * in the heap (whose nodes are never linked; a heap node may still fall due before it). For
 * looking ahead, e.g. to prefetch what the next answers read; pop_due says what is due. */
static inline struct timer_node *timer_heap_next_listed(const struct timer_node *node)
{
    return node->next;
}

/* Removes and returns the earliest node if its deadline is <= now_us, else returns NULL.
 * Call in a loop to drain everything that is due. */
struct timer_node *timer_heap_pop_due(struct timer_heap *heap, uint64_t now_us);

/* Microseconds from now_us until the earliest deadline, at most `idle_us`; 0 if one is due;
 * `idle_us` if the heap is empty. */
uint64_t timer_heap_wait_us(const struct timer_heap *heap, uint64_t now_us, uint64_t idle_us);

#endif
