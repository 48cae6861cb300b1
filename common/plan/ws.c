#include "plan/ws.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The draw streams of an echo's delay and a push's gap, under the socket's key. */
#define DRAW_ECHO 1ULL
#define DRAW_PUSH 2ULL

enum { K_DELAY, K_PUSH, K_SIZE, K_EVERY, K_CLOSE, K_AFTER, K_LIMIT, K_COUNT };
static const char *const keys[K_COUNT] = {
    "delay=", "push=", "size=", "every=", "close=", "after=", "limit="};

/* A close code a server may send (RFC 6455 section 7.4): the registered ones that make sense
 * from a server, and the ranges for libraries and applications. */
static int close_code_ok(uint64_t c)
{
    return c == 1000 || c == 1001 || c == 1003 || c == 1008 || c == 1011 ||
           (c >= 3000 && c <= 4999);
}

static int spec_of(struct delay_spec *d, const char *what, const char *v, size_t vlen, char *err,
                   size_t errlen)
{
    char spec[256], why[200];
    if (vlen >= sizeof spec) {
        snprintf(err, errlen, "%s too long", what);
        return -EINVAL;
    }
    memcpy(spec, v, vlen);
    spec[vlen] = '\0';
    int rc = delay_spec_parse(d, spec, why, sizeof why);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", what, why);
    return rc;
}

int ws_spec_parse(struct ws_spec *out, const char *s, char *err, size_t errlen)
{
    static const char want[] = "want echo[,delay=D][,push=N,size=B,every=D][,close=CODE,after=N|"
                               "DURATION][,limit=B]";
    struct ws_spec o = {0};
    const char *comma = strchr(s, ',');
    size_t flen = comma ? (size_t)(comma - s) : strlen(s);
    if (flen == 4 && strncmp(s, "none", 4) == 0 && !comma) {
        *out = o;
        return 0;
    }
    if (flen != 4 || strncmp(s, "echo", 4) != 0) {
        snprintf(err, errlen, "bad websocket kind '%.*s' (%s)", (int)(flen < 40 ? flen : 40), s,
                 want);
        return -EINVAL;
    }
    o.on = 1;
    o.size = WS_PUSH_SIZE_DEFAULT;
    o.limit = WS_LIMIT_DEFAULT;
    delay_spec_fixed(&o.delay, 0);
    delay_spec_fixed(&o.every, 1000000);
    unsigned seen = 0;
    const char *p = comma;
    while (p) {
        const char *k = p + 1;
        const char *eq = strchr(k, '=');
        size_t ki;
        for (ki = 0; ki < K_COUNT; ki++)
            if (strncmp(k, keys[ki], strlen(keys[ki])) == 0)
                break;
        if (!eq || ki == K_COUNT) {
            const char *e = strchr(k, ',');
            size_t n = e ? (size_t)(e - k) : strlen(k);
            snprintf(err, errlen, "unknown websocket key '%.*s' (%s)", (int)(n < 40 ? n : 40), k,
                     want);
            return -EINVAL;
        }
        if (seen & (1u << ki)) {
            snprintf(err, errlen, "websocket key '%.*s' given twice", (int)(eq - k), k);
            return -EINVAL;
        }
        seen |= 1u << ki;
        const char *v = eq + 1;
        const char *end = strchr(v, ',');
        if (ki == K_DELAY || ki == K_EVERY)
            while (end && !delay_list_at_key(end + 1, keys, K_COUNT))
                end = strchr(end + 1, ',');
        size_t vlen = end ? (size_t)(end - v) : strlen(v);
        uint64_t n;
        int rc = 0;
        switch (ki) {
        case K_DELAY:
            rc = spec_of(&o.delay, "delay", v, vlen, err, errlen);
            break;
        case K_EVERY:
            rc = spec_of(&o.every, "every", v, vlen, err, errlen);
            break;
        case K_PUSH:
            if ((rc = delay_list_uint(v, vlen, WS_PUSH_MAX, &n)) != 0)
                snprintf(err, errlen, "push '%.*s' is not a number of messages from 0 to %u",
                         (int)(vlen < 40 ? vlen : 40), v, WS_PUSH_MAX);
            o.push = (uint32_t)n;
            break;
        case K_SIZE:
            if ((rc = delay_list_uint(v, vlen, WS_PUSH_SIZE_MAX, &n)) != 0 || n == 0) {
                snprintf(err, errlen, "size '%.*s' is not bytes from 1 to %u",
                         (int)(vlen < 40 ? vlen : 40), v, WS_PUSH_SIZE_MAX);
                rc = rc ? rc : -ERANGE;
            }
            o.size = (uint32_t)n;
            break;
        case K_CLOSE:
            if ((rc = delay_list_uint(v, vlen, 4999, &n)) != 0 || !close_code_ok(n)) {
                snprintf(err, errlen,
                         "close '%.*s' is not a code a server sends (1000, 1001, 1003, 1008, "
                         "1011, 3000 to 4999)",
                         (int)(vlen < 40 ? vlen : 40), v);
                rc = rc ? rc : -EINVAL;
            }
            o.close_code = (uint16_t)n;
            break;
        case K_AFTER: {
            /* Bare digits count messages; a duration carries its unit. */
            if (vlen && strspn(v, "0123456789") >= vlen) {
                if ((rc = delay_list_uint(v, vlen, WS_AFTER_MAX, &n)) != 0 || n == 0) {
                    snprintf(err, errlen, "after '%.*s' is not 1 to %u messages",
                             (int)(vlen < 40 ? vlen : 40), v, WS_AFTER_MAX);
                    rc = rc ? rc : -ERANGE;
                }
                o.close_after_n = (uint32_t)n;
            } else {
                char d[64];
                snprintf(d, sizeof d, "%.*s", (int)(vlen < 63 ? vlen : 63), v);
                if (vlen >= sizeof d || (rc = delay_duration_parse(d, &o.close_after_us)) != 0 ||
                    o.close_after_us == 0) {
                    snprintf(err, errlen,
                             "after '%.*s' is not a count of messages or a duration such as 5s",
                             (int)(vlen < 40 ? vlen : 40), v);
                    rc = rc ? rc : -EINVAL;
                }
            }
            break;
        }
        default:
            if ((rc = delay_list_uint(v, vlen, WS_LIMIT_MAX, &n)) != 0 || n < WS_LIMIT_MIN) {
                snprintf(err, errlen, "limit '%.*s' is not bytes from %u to %u",
                         (int)(vlen < 40 ? vlen : 40), v, WS_LIMIT_MIN, WS_LIMIT_MAX);
                rc = rc ? rc : -ERANGE;
            }
            o.limit = (uint32_t)n;
            break;
        }
        if (rc)
            return rc;
        p = end;
    }
    if ((seen & (1u << K_AFTER)) && !o.close_code) {
        snprintf(err, errlen, "after needs close=CODE");
        return -EINVAL;
    }
    if ((seen & ((1u << K_SIZE) | (1u << K_EVERY))) && !o.push) {
        snprintf(err, errlen, "size and every need push=N");
        return -EINVAL;
    }
    *out = o;
    return 0;
}

size_t ws_spec_format(const struct ws_spec *s, char *buf, size_t len)
{
    if (!s->on)
        return (size_t)snprintf(buf, len, "none");
    char delay[512], every[512], after[64] = "";
    delay_spec_format(&s->delay, delay, sizeof delay);
    delay_spec_format(&s->every, every, sizeof every);
    int n = snprintf(buf, len, "echo,delay=%s", delay);
    if (n >= 0 && s->push && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ",push=%u,size=%u,every=%s", s->push, s->size,
                      every);
    if (s->close_code) {
        if (s->close_after_n)
            snprintf(after, sizeof after, ",after=%u", s->close_after_n);
        else if (s->close_after_us) {
            char ms[32];
            delay_format_ms(s->close_after_us, ms, sizeof ms);
            snprintf(after, sizeof after, ",after=%sms", ms);
        }
        if (n >= 0 && (size_t)n < len)
            n += snprintf(buf + n, len - (size_t)n, ",close=%u%s", s->close_code, after);
    }
    if (n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ",limit=%u", s->limit);
    return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

uint64_t ws_spec_max_us(const struct ws_spec *s)
{
    uint64_t a = delay_spec_max_us(&s->delay), b = s->push ? delay_spec_max_us(&s->every) : 0;
    return a > b ? a : b;
}

uint64_t ws_echo_delay_us(const struct ws_spec *s, uint64_t key, uint64_t k)
{
    return delay_spec_draw(&s->delay, key, DRAW_ECHO, k);
}

uint64_t ws_push_gap_us(const struct ws_spec *s, uint64_t key, uint64_t k)
{
    return delay_spec_draw(&s->every, key, DRAW_PUSH, k);
}

void ws_push_fill(char *dst, size_t n)
{
    static const char pattern[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (size_t i = 0; i < n; i++)
        dst[i] = pattern[i % (sizeof pattern - 1)];
}
