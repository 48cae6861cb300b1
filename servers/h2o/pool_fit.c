#include "pool_fit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The head of libh2o 2.2.5's pool chunk and of its "direct" block (lib/common/memory.c: a next
 * pointer and a size_t, then the bytes). A chunk holds 4096 bytes in all. */
struct block_head {
    struct block_head *next;
    size_t unused;
};

#define CHUNK_BYTES (4096 - sizeof(struct block_head))

static int usable;

int pool_fit_init(void)
{
    h2o_mem_pool_t p;
    h2o_mem_init_pool(&p);
    int ok = p.chunk_offset == CHUNK_BYTES;
    char *small = h2o_mem_alloc_pool(&p, 16);
    ok = ok && p.chunks && small == (char *)p.chunks + sizeof(struct block_head) &&
         p.chunk_offset == 16 && ((struct block_head *)(void *)p.chunks)->next == NULL;
    /* A quarter of a chunk or more is a block of its own, on the pool's list of directs. */
    char *large = h2o_mem_alloc_pool(&p, CHUNK_BYTES / 4);
    ok = ok && p.directs && large == (char *)p.directs + sizeof(struct block_head);
    h2o_mem_clear_pool(&p);
    usable = ok;
    return ok;
}

/* Every pointer-sized word of [area, area + len) that points into [from, from + used] now points
 * to the same place in `to`. libh2o's pool hands out 16-byte aligned blocks and h2o_req_t is
 * pointer-aligned, so its pointers sit on word boundaries. */
static void relocate(void *area, size_t len, uintptr_t from, size_t used, uintptr_t to)
{
    char *a = area;
    for (size_t off = 0; off + sizeof(uintptr_t) <= len; off += sizeof(uintptr_t)) {
        uintptr_t w;
        memcpy(&w, a + off, sizeof w);
        if (w >= from && w <= from + used) {
            w = w - from + to;
            memcpy(a + off, &w, sizeof w);
        }
    }
}

void *pool_fit(h2o_req_t *req, void *inside)
{
    h2o_mem_pool_t *pool = &req->pool;
    struct block_head *chunk = (struct block_head *)(void *)pool->chunks;
    if (!usable || !chunk || chunk->next)
        return inside;
    size_t used = pool->chunk_offset;
    struct block_head *fit = malloc(sizeof *fit + used);
    if (!fit)
        return inside;
    char *from = (char *)(chunk + 1), *to = (char *)(fit + 1);
    memcpy(to, from, used);
    relocate(req, sizeof *req, (uintptr_t)from, used, (uintptr_t)to);
    relocate(to, used, (uintptr_t)from, used, (uintptr_t)to);
    /* The block is freed with the pool, as libh2o frees its directs. */
    fit->next = (struct block_head *)(void *)pool->directs;
    pool->directs = (void *)fit;
    /* The chunk goes back the way libh2o's own pools give theirs back (its recycling list). */
    h2o_mem_pool_t spent;
    h2o_mem_init_pool(&spent);
    spent.chunks = pool->chunks;
    h2o_mem_clear_pool(&spent);
    pool->chunks = NULL;
    pool->chunk_offset = CHUNK_BYTES;
    return to + ((char *)inside - from);
}
