/*
 * accesslog: one JSON line per request, when --access-log names a file (or "-" for stdout).
 * Off by default, and then it costs nothing: exchanges only record when a log is open.
 *
 * Any thread may write; each line goes out whole under the log's lock. accesslog_reopen()
 * (on SIGHUP) lets logrotate move the file away.
 */
#ifndef SLOWSRV_ACCESSLOG_H
#define SLOWSRV_ACCESSLOG_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ACCESSLOG_PATH_LEN 4096

struct accesslog {
    pthread_mutex_t lock;
    FILE *f;
    int is_stdout;
    char path[ACCESSLOG_PATH_LEN];
};

/* What one line says. Strings are NUL-terminated and only read during the call. */
struct accesslog_entry {
    int64_t time_ms;    /* wall clock, ms since the epoch */
    const char *client; /* "127.0.0.1:50012" */
    const char *method;
    const char *target;     /* path and query as received (possibly cut short) */
    const char *route;      /* the route that answered, as configured (a template as written:
                               "/api/orders/{id}"), or NULL for none (a 404, a refused head) */
    unsigned status;        /* 0: no answer (the client left) */
    uint64_t bytes_in;      /* request body bytes */
    uint64_t bytes_out;     /* answer body bytes */
    uint64_t delay_us;      /* intended delay */
    uint64_t waited_us;     /* how long it really waited */
    uint64_t service_us;    /* request in to answer out */
    const char *stream_end; /* an event stream's end ("complete", "max-delay", "client-left",
                               "stopped"), or NULL for an answer that is not one */
    uint64_t events;        /* an event stream's events sent */
    /* A WebSocket's line, written when its socket ends (ws 1): messages received and sent, and
     * the close code it ended with (1006: it ended without a close frame). */
    int ws;
    uint64_t ws_in, ws_out;
    unsigned ws_close;
};

/* Opens `path` for appending ("-": standard output). Returns 0, or -errno with
 * "access-log: <path>: <why>" in err. */
int accesslog_open(struct accesslog *al, const char *path, char *err, size_t errlen);

/* Closes and opens the file again (after logrotate moved it). Returns 0 or -errno (the log then
 * keeps writing to the old file). Thread-safe. */
int accesslog_reopen(struct accesslog *al);

/* Closes the log. No write may follow. */
void accesslog_close(struct accesslog *al);

/* Writes e as one JSON object and a newline into buf (len bytes, NUL-terminated, strings
 * escaped). Returns the line's length, or 0 if it does not fit. Pure. */
size_t accesslog_format(char *buf, size_t len, const struct accesslog_entry *e);

/* Appends e's line to the log. Thread-safe. */
void accesslog_write(struct accesslog *al, const struct accesslog_entry *e);

#endif
