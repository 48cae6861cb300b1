#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_init(struct log *lg, const char *name, enum log_level level, FILE *out)
{
    lg->name = name;
    lg->level = level;
    lg->out = out;
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *log_level_name(enum log_level level)
{
    if ((unsigned)level < sizeof level_names / sizeof level_names[0])
        return level_names[level];
    return "?";
}

void log_write(const struct log *lg, enum log_level level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    /* Format the whole line first and emit it with one fputs, so that lines from different
     * threads never interleave. */
    int n = snprintf(line, sizeof line, "%s: %s: ", lg->name, log_level_name(level));
    if (n < 0)
        return;
    size_t used = (size_t)n;
    va_start(ap, fmt);
    int m = vsnprintf(line + used, sizeof line - used, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    used += (size_t)m;
    if (used > sizeof line - 2)
        used = sizeof line - 2;
    line[used] = '\n';
    line[used + 1] = '\0';
    fputs(line, lg->out);
    fflush(lg->out);
}
