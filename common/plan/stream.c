#include "plan/stream.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The draw streams of an event's gap and size, under the request's key. */
#define DRAW_GAP 1ULL
#define DRAW_SIZE 2ULL

static const char *const keys[] = {"count=", "size=", "retry=", "event=", "gap="};

static int bad(char *err, size_t errlen, int rc, const char *what, const char *s, size_t len)
{
    snprintf(err, errlen, "%s '%.*s'", what, (int)(len < 40 ? len : 40), s);
    return rc;
}

static int parse_size(struct stream_spec *o, const char *v, size_t len, char *err, size_t errlen)
{
    const char *dots = memmem(v, len, "..", 2);
    uint64_t lo, hi;
    size_t lolen = dots ? (size_t)(dots - v) : len;
    int rc = delay_list_uint(v, lolen, STREAM_SIZE_MAX, &lo);
    if (rc == 0 && dots)
        rc = delay_list_uint(dots + 2, len - lolen - 2, STREAM_SIZE_MAX, &hi);
    else
        hi = lo;
    if (rc == 0 && hi < lo)
        rc = -EINVAL;
    if (rc) {
        snprintf(err, errlen, "size '%.*s' is not BYTES or LO..HI from 0 to %u", (int)len, v,
                 STREAM_SIZE_MAX);
        return rc;
    }
    o->size_lo = (uint32_t)lo;
    o->size_hi = (uint32_t)hi;
    return 0;
}

int stream_spec_parse(struct stream_spec *out, const char *s, char *err, size_t errlen)
{
    static const char want[] = "want sse|ndjson[,count=N][,size=B][,retry=MS][,event=NAME][,gap=D]";
    struct stream_spec o = {0};
    const char *comma = strchr(s, ',');
    size_t flen = comma ? (size_t)(comma - s) : strlen(s);
    if (flen == 4 && strncmp(s, "none", 4) == 0 && !comma) {
        *out = o;
        return 0;
    }
    if (flen == 3 && strncmp(s, "sse", 3) == 0) {
        o.format = STREAM_SSE;
    } else if (flen == 6 && strncmp(s, "ndjson", 6) == 0) {
        o.format = STREAM_NDJSON;
    } else {
        snprintf(err, errlen, "bad stream format '%.*s' (%s)", (int)(flen < 40 ? flen : 40), s,
                 want);
        return -EINVAL;
    }
    o.size_lo = o.size_hi = STREAM_SIZE_DEFAULT;
    memcpy(o.event, "tick", 5);
    delay_spec_fixed(&o.gap, 1000000);
    unsigned seen = 0;
    const char *p = comma;
    while (p) {
        const char *k = p + 1;
        const char *eq = strchr(k, '=');
        size_t ki;
        for (ki = 0; ki < sizeof keys / sizeof keys[0]; ki++)
            if (strncmp(k, keys[ki], strlen(keys[ki])) == 0)
                break;
        if (!eq || ki == sizeof keys / sizeof keys[0]) {
            const char *e = strchr(k, ',');
            size_t n = e ? (size_t)(e - k) : strlen(k);
            snprintf(err, errlen, "unknown stream key '%.*s' (%s)", (int)(n < 40 ? n : 40), k,
                     want);
            return -EINVAL;
        }
        if (seen & (1u << ki)) {
            snprintf(err, errlen, "stream key '%.*s' given twice", (int)(eq - k), k);
            return -EINVAL;
        }
        seen |= 1u << ki;
        const char *v = eq + 1;
        /* The value ends at the next comma; a gap's at the next comma before another key. */
        const char *end = strchr(v, ',');
        if (ki == 4)
            while (end && !delay_list_at_key(end + 1, keys, sizeof keys / sizeof keys[0]))
                end = strchr(end + 1, ',');
        size_t vlen = end ? (size_t)(end - v) : strlen(v);
        uint64_t n;
        int rc;
        switch (ki) {
        case 0:
            if ((rc = delay_list_uint(v, vlen, STREAM_COUNT_MAX, &n)) != 0) {
                snprintf(err, errlen, "count '%.*s' is not a number of events from 0 to %u",
                         (int)(vlen < 40 ? vlen : 40), v, STREAM_COUNT_MAX);
                return rc;
            }
            o.count = (uint32_t)n;
            break;
        case 1:
            if ((rc = parse_size(&o, v, vlen, err, errlen)) != 0)
                return rc;
            break;
        case 2:
            if ((rc = delay_list_uint(v, vlen, STREAM_RETRY_MAX, &n)) != 0) {
                snprintf(err, errlen, "retry '%.*s' is not milliseconds from 0 to %u",
                         (int)(vlen < 40 ? vlen : 40), v, STREAM_RETRY_MAX);
                return rc;
            }
            o.retry_ms = (uint32_t)n;
            break;
        case 3:
            if (vlen == 0 || vlen > STREAM_EVENT_NAME_MAX ||
                strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") <
                    vlen)
                return bad(err, errlen, -EINVAL, "event name is 1 to 32 of A-Z a-z 0-9 _ . -, not",
                           v, vlen);
            memcpy(o.event, v, vlen);
            o.event[vlen] = '\0';
            break;
        default: {
            char spec[256], why[200];
            if (vlen >= sizeof spec)
                return bad(err, errlen, -EINVAL, "gap too long:", v, vlen);
            memcpy(spec, v, vlen);
            spec[vlen] = '\0';
            if ((rc = delay_spec_parse(&o.gap, spec, why, sizeof why)) != 0) {
                snprintf(err, errlen, "gap: %s", why);
                return rc;
            }
            break;
        }
        }
        p = end;
    }
    *out = o;
    return 0;
}

size_t stream_spec_format(const struct stream_spec *s, char *buf, size_t len)
{
    if (s->format == STREAM_NONE)
        return (size_t)snprintf(buf, len, "none");
    char gap[512], size[32];
    delay_spec_format(&s->gap, gap, sizeof gap);
    if (s->size_lo == s->size_hi)
        snprintf(size, sizeof size, "%u", s->size_lo);
    else
        snprintf(size, sizeof size, "%u..%u", s->size_lo, s->size_hi);
    int n = snprintf(buf, len, "%s,count=%u,size=%s,retry=%u,event=%s,gap=%s",
                     s->format == STREAM_SSE ? "sse" : "ndjson", s->count, size, s->retry_ms,
                     s->event, gap);
    return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

const char *stream_content_type(enum stream_format f)
{
    return f == STREAM_NDJSON ? "application/x-ndjson" : "text/event-stream";
}

uint64_t stream_key(uint64_t seed, uint64_t stream, uint64_t index)
{
    return delay_random(seed, stream, index);
}

uint64_t stream_gap_us(const struct stream_spec *s, uint64_t key, uint64_t id)
{
    return delay_spec_draw(&s->gap, key, DRAW_GAP, id);
}

size_t stream_size(const struct stream_spec *s, uint64_t key, uint64_t id)
{
    if (s->size_lo == s->size_hi)
        return s->size_lo;
    uint64_t span = (uint64_t)(s->size_hi - s->size_lo) + 1;
    return s->size_lo + (size_t)(delay_random(key, DRAW_SIZE, id) % span);
}

/* The data of every event: a line of letters, cut to the event's size (no byte needs escaping
 * in SSE or JSON). */
static void fill(char *dst, size_t n)
{
    static const char pattern[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (size_t i = 0; i < n; i++)
        dst[i] = pattern[i % (sizeof pattern - 1)];
}

size_t stream_event_format(const struct stream_spec *s, uint64_t id, uint64_t intended_us,
                           uint64_t sent_us, size_t size, int first, char *buf, size_t len)
{
    char head[STREAM_EVENT_OVERHEAD];
    int n;
    const char *tail;
    if (s->format == STREAM_NDJSON) {
        n = snprintf(
            head, sizeof head, "{\"id\":%llu,\"intended_us\":%llu,\"sent_us\":%llu,\"data\":\"",
            (unsigned long long)id, (unsigned long long)intended_us, (unsigned long long)sent_us);
        tail = "\"}\n";
    } else {
        char retry[32] = "";
        if (first && s->retry_ms)
            snprintf(retry, sizeof retry, "retry: %u\n", s->retry_ms);
        n = snprintf(head, sizeof head,
                     "id: %llu\nevent: %s\n%s: intended_us=%llu sent_us=%llu\ndata: ",
                     (unsigned long long)id, s->event, retry, (unsigned long long)intended_us,
                     (unsigned long long)sent_us);
        tail = "\n\n";
    }
    size_t tlen = strlen(tail);
    if (n < 0 || (size_t)n >= sizeof head || (size_t)n + size + tlen > len)
        return 0;
    memcpy(buf, head, (size_t)n);
    fill(buf + n, size);
    memcpy(buf + (size_t)n + size, tail, tlen);
    return (size_t)n + size + tlen;
}

int stream_last_id_parse(const char *s, uint64_t *id)
{
    return delay_list_uint(s, strlen(s), UINT64_MAX, id) == 0 ? 0 : -EINVAL;
}
