#include "base/accesslog.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "base/utf8.h"

int accesslog_open(struct accesslog *al, const char *path, char *err, size_t errlen)
{
    memset(al, 0, sizeof *al);
    if (strlen(path) >= sizeof al->path) {
        snprintf(err, errlen, "access-log: path too long");
        return -ENAMETOOLONG;
    }
    memcpy(al->path, path, strlen(path) + 1);
    al->is_stdout = strcmp(path, "-") == 0;
    al->f = al->is_stdout ? stdout : fopen(path, "a");
    if (!al->f) {
        int e = errno;
        snprintf(err, errlen, "access-log: %.200s: %s", path, strerror(e));
        return -e;
    }
    pthread_mutex_init(&al->lock, NULL);
    return 0;
}

int accesslog_reopen(struct accesslog *al)
{
    if (al->is_stdout)
        return 0;
    FILE *f = fopen(al->path, "a");
    if (!f)
        return -errno;
    pthread_mutex_lock(&al->lock);
    FILE *old = al->f;
    al->f = f;
    pthread_mutex_unlock(&al->lock);
    fclose(old);
    return 0;
}

void accesslog_close(struct accesslog *al)
{
    if (al->f && !al->is_stdout)
        fclose(al->f);
    else if (al->f)
        fflush(al->f);
    al->f = NULL;
    pthread_mutex_destroy(&al->lock);
}

struct out {
    char *buf;
    size_t len, used;
    int full;
};

__attribute__((format(printf, 2, 3))) static void emit(struct out *o, const char *fmt, ...)
{
    va_list ap;
    if (o->full)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->len - o->used)
        o->full = 1;
    else
        o->used += (size_t)n;
}

/* A JSON string that is valid UTF-8 whatever the client sent: quotes, backslashes and control
 * bytes escaped, well-formed UTF-8 kept, and each other byte written as the code point of its
 * value (\u0080 to \u00ff), so that the line parses and the bytes can be read back. */
static void emit_string(struct out *o, const char *s)
{
    emit(o, "\"");
    while (*s && !o->full) {
        unsigned char c = (unsigned char)*s;
        size_t n = c >= 0x80 ? utf8_seq_len((const unsigned char *)s, 4) : 1;
        if (c == '"' || c == '\\')
            emit(o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f || n == 0)
            emit(o, "\\u%04x", c);
        else
            emit(o, "%.*s", (int)n, s);
        s += n ? n : 1;
    }
    emit(o, "\"");
}

static double ms(uint64_t us)
{
    return (double)us / 1000.0;
}

size_t accesslog_format(char *buf, size_t len, const struct accesslog_entry *e)
{
    struct out o = {buf, len, 0, 0};
    time_t secs = (time_t)(e->time_ms / 1000);
    struct tm tm;
    char when[32];
    gmtime_r(&secs, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    emit(&o, "{\"time\": \"%s.%03dZ\", \"client\": ", when, (int)(e->time_ms % 1000));
    emit_string(&o, e->client);
    emit(&o, ", \"method\": ");
    emit_string(&o, e->method);
    emit(&o, ", \"path\": ");
    emit_string(&o, e->target);
    emit(&o, ", \"route\": ");
    if (e->route)
        emit_string(&o, e->route);
    else
        emit(&o, "null");
    emit(&o,
         ", \"status\": %u, \"bytes_in\": %llu, \"bytes_out\": %llu, \"delay_ms\": %.3f, "
         "\"waited_ms\": %.3f, \"service_ms\": %.3f",
         e->status, (unsigned long long)e->bytes_in, (unsigned long long)e->bytes_out,
         ms(e->delay_us), ms(e->waited_us), ms(e->service_us));
    if (e->ws)
        emit(&o, ", \"messages_in\": %llu, \"messages_out\": %llu, \"close\": %u",
             (unsigned long long)e->ws_in, (unsigned long long)e->ws_out, e->ws_close);
    if (e->stream_end)
        emit(&o, ", \"events\": %llu, \"stream_end\": \"%s\"", (unsigned long long)e->events,
             e->stream_end);
    emit(&o, "}\n");
    if (o.full) {
        buf[0] = '\0';
        return 0;
    }
    return o.used;
}

void accesslog_write(struct accesslog *al, const struct accesslog_entry *e)
{
    char line[1024];
    size_t n = accesslog_format(line, sizeof line, e);
    if (!n)
        return;
    pthread_mutex_lock(&al->lock);
    fwrite(line, 1, n, al->f);
    fflush(al->f);
    pthread_mutex_unlock(&al->lock);
}
