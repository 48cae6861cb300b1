/*
 * core: the conventions every module of common/ follows, in one place.
 *
 * - A fallible call returns 0, or a negative errno (-EINVAL for a bad value or setting,
 *   -ENOMEM, -EADDRINUSE, ...), and never half-succeeds: on failure it has released what it
 *   took and left its outputs unset.
 * - A set-up call that can fail for a reason a user must read takes the caller's buffer and its
 *   size last, `char *err, size_t errlen`, and fills it with one line, "<what>: <why>" (e.g.
 *   "bind 127.0.0.1:8080: Address already in use"); CORE_ERR_LEN bytes always suffice.
 *   Modules return errors and let the caller decide what to print (only log writes).
 * - A parser returns the bytes it consumed, or a negative code for invalid input or need-more.
 * - A call that decides among outcomes that are not errors returns a value of its own enum
 *   (exchange_next: enum exchange_do; pool_enter; drain_step; route plan actions), never a bare
 *   1 or 2.
 * - Ownership is stated with each declaration: who frees, how long a pointer stays valid, and
 *   which thread or loop may call.
 */
#ifndef SLOWSRV_CORE_H
#define SLOWSRV_CORE_H

/* Size of an error buffer for any set-up call of the core or an engine. */
#define CORE_ERR_LEN 512

#endif
