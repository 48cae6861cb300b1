/*
 * log: levelled, printf-checked logging to one stream, one line per event.
 *
 * Only the servers log; other core modules return error codes and strings and let their caller
 * decide what to print. A struct log is filled once at start-up and then only read, so any thread
 * may log through a const pointer; each line is written with one stdio call, which keeps lines
 * from different threads whole.
 */
#ifndef SLOWSRV_LOG_H
#define SLOWSRV_LOG_H

#include <stdio.h>

enum log_level {
    LOG_LEVEL_ERROR = 0,
    LOG_LEVEL_WARN = 1,
    LOG_LEVEL_INFO = 2,
    LOG_LEVEL_DEBUG = 3,
};

struct log {
    const char *name;     /* program name that starts every line; not owned */
    enum log_level level; /* lines above this level are dropped before formatting */
    FILE *out;            /* not owned; stderr in the servers */
};

/* Fills *lg. `name` and `out` must outlive every use of lg. */
void log_init(struct log *lg, const char *name, enum log_level level, FILE *out);

/* Parses "error", "warn", "info" or "debug" into *out. Returns 0, or -EINVAL for anything else. */
int log_level_parse(const char *s, enum log_level *out);

/* Returns the name of a level ("info"), a static string. */
const char *log_level_name(enum log_level level);

/* Writes "<name>: <level>: <message>\n". Prefer LOG(), which skips the formatting of dropped
 * lines. Thread-safe. */
void log_write(const struct log *lg, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Logs at `level` if lg's level lets it through; the arguments are evaluated only then. */
#define LOG(lg_, lvl_, ...)                                                                        \
    do {                                                                                           \
        if ((lvl_) <= (lg_)->level)                                                                \
            log_write((lg_), (lvl_), __VA_ARGS__);                                                 \
    } while (0)

#endif
