/* A waiting request's memory pool, cut to what it holds.
 *
 * libh2o gives every request (every HTTP/2 stream) a pool whose first chunk is a fixed 4 KiB,
 * of which a waiting request fills a few hundred bytes: its header list, the pool's own
 * bookkeeping and slowsrv-h2o's record. At 100 000 waiting streams that chunk is four fifths of
 * the memory. pool_fit moves what the chunk holds into a block of its exact size and gives the
 * chunk back; an allocation after that (the answer's headers) takes a fresh chunk as before.
 *
 * The chunk's layout is libh2o's own (lib/common/memory.c, not in its headers), so it is checked
 * once at start (pool_fit_init) against the library actually linked; where it does not hold,
 * pool_fit does nothing. */
#ifndef SLOWSRV_H2O_POOL_FIT_H
#define SLOWSRV_H2O_POOL_FIT_H

#include <stddef.h>

#include <h2o.h>

/* Checks libh2o's pool layout; returns 1 when pool_fit may move pools, else 0. */
int pool_fit_init(void);

/* Moves req's pool chunk into a block of its own size, if the pool has one chunk. Every pointer
 * into the chunk held by the request (h2o_req_t) or by the chunk itself is moved with it;
 * `inside` is a pointer into the chunk held elsewhere (the caller's record). Returns where
 * `inside` is now: inside itself when nothing moved. Call it from the handler, before anything
 * else points into the pool: libh2o itself keeps no other pointer into it by then (an HTTP/1
 * body's reader, the one it had, is dropped before the handler runs). */
void *pool_fit(h2o_req_t *req, void *inside);

#endif
