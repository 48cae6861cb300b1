/*
 * net: listening sockets for the engines, in the manner of redis anet: set-up calls that either
 * succeed whole or fill a caller's error buffer with "<what>: <why>".
 *
 * Both engines give each event loop its own listening socket (SO_REUSEPORT), so that the kernel
 * spreads new connections evenly over the loops instead of waking them all for one accept.
 */
#ifndef SLOWSRV_NET_H
#define SLOWSRV_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/core.h"

/* Opens `n` (>= 1) non-blocking TCP listening sockets on host:port with SO_REUSEADDR and, when
 * n > 1, SO_REUSEPORT, each with its own listen `backlog` (which the kernel caps at
 * net.core.somaxconn); `host` is a numeric IPv4/IPv6 address or a name resolved once. Port 0
 * lets the kernel pick a port for the first socket and the others join it. On success fills
 * fds[0..n) (the caller closes them) and *bound_port, and returns 0. On failure closes whatever
 * it opened, writes e.g. "bind 127.0.0.1:8080: Address already in use" into err and returns a
 * negative errno (-EADDRINUSE for a port in use). */
int net_listen(const char *host, unsigned port, size_t n, int backlog, int *fds,
               unsigned *bound_port, char *err, size_t errlen);

/* Socket activation: shares one listening socket `fd` handed over by the service manager among
 * n loops (fds[0] = fd, the others dup()s of it), made non-blocking; *bound_port gets its port.
 * Returns 0, or a negative errno with err filled if fd is not a listening TCP socket. */
int net_adopt(int fd, size_t n, int *fds, unsigned *bound_port, char *err, size_t errlen);

/* net_adopt(inherited) when the service manager handed over a socket (inherited >= 0: its
 * backlog stays the one the manager set, and `backlog` is unused), else net_listen(host, port). */
int net_open(const char *host, unsigned port, size_t n, int backlog, int inherited, int *fds,
             unsigned *bound_port, char *err, size_t errlen);

/* Connections a loop accepts per wake-up at most, so that a flood of them cannot starve the
 * requests of those already open. */
#define NET_ACCEPT_BATCH 64

/* How long a loop leaves its listening socket out of its wait after net_accept_starved. */
#define NET_ACCEPT_PAUSE_US (100 * 1000)

/* accept() failed with `err`. For want of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM) the pending connections stay ready, so a loop would wake for them on every turn:
 * returns 1, and the loop pauses its listener for NET_ACCEPT_PAUSE_US; `msg` then holds a
 * one-line warning to log, or "" if one was given less than 10 s ago (per *last_us, with the
 * current time now_us). Returns 0 for the rest (EAGAIN, a client gone before its accept). */
int net_accept_starved(int err, uint64_t now_us, uint64_t *last_us, char *msg, size_t len);

/* Closes the n descriptors in fds that are >= 0 and sets them to -1. */
void net_close_all(int *fds, size_t n);

/* Writes the base URL of a listener ("http://127.0.0.1:8080", "http://[::1]:8080") into buf.
 * `scheme` is "http" or "https". */
void net_format_url(char *buf, size_t len, const char *scheme, const char *host, unsigned port);

/* Writes a peer address as "127.0.0.1:50012" or "[::1]:50012" into buf ("-" when addr is NULL
 * or not IP). */
void net_format_peer(const struct sockaddr *addr, char *buf, size_t len);

/* Returns 1 if the peer of connected socket fd has closed or reset the connection, else 0.
 * Reads nothing from the stream (MSG_PEEK), never blocks. */
int net_peer_gone(int fd);

/* Bytes socket fd holds that its peer has not acknowledged (SIOCOUTQ); 0 if it cannot tell. */
long net_unsent(int fd);

/* What TCP moved on socket fd so far: bytes received from the peer and bytes of ours it
 * acknowledged. Returns 0, or -1 if fd is not a TCP socket (then both are 0). */
int net_tcp_progress(int fd, uint64_t *received, uint64_t *acked);

/* The local port socket fd is bound to, or 0 if it has none. */
unsigned net_local_port(int fd);

/* Aborts the TCP connection of socket fd with a reset (RST), now, without closing fd: its owner
 * (the HTTP library) then finds it broken and closes it. Unsent data is dropped. */
void net_reset(int fd);

/* Closes *fd if it is open (>= 0), and marks it closed (-1). */
void net_close(int *fd);

#endif
