#include "plan/pace.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan/delay.h"

int pace_shapes_body(const struct pace_spec *p)
{
    return p->rate > 0 || p->reset || p->stall;
}

uint64_t pace_burst(const struct pace_spec *p)
{
    if (p->burst)
        return p->burst;
    uint64_t tick = p->rate / (1000000 / PACE_TICK_US);
    return tick ? tick : 1;
}

static int none(const char *s)
{
    return strcmp(s, "none") == 0;
}

/* The unit's factor, or 0 if it is none of them. */
static uint64_t unit_factor(const char *u)
{
    static const struct {
        const char *name;
        uint64_t factor;
    } units[] = {{"", 1},
                 {"K", 1000ULL},
                 {"KB", 1000ULL},
                 {"M", 1000000ULL},
                 {"MB", 1000000ULL},
                 {"G", 1000000000ULL},
                 {"GB", 1000000000ULL},
                 {"Ki", 1ULL << 10},
                 {"KiB", 1ULL << 10},
                 {"Mi", 1ULL << 20},
                 {"MiB", 1ULL << 20},
                 {"Gi", 1ULL << 30},
                 {"GiB", 1ULL << 30}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].name) == 0)
            return units[i].factor;
    return 0;
}

/* A count of n bytes at s, with a unit: into *out, at most `max`. */
static int parse_count(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    size_t i = 0;
    uint64_t v = 0;
    for (; isdigit((unsigned char)buf[i]); i++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -ERANGE;
        v = v * 10 + (uint64_t)(buf[i] - '0');
    }
    uint64_t f = i ? unit_factor(buf + i) : 0;
    if (!f)
        return -EINVAL;
    if (v > max / f)
        return -ERANGE;
    *out = v * f;
    return 0;
}

static int count_err(int rc, const char *what, size_t n, uint64_t max, char *err, size_t errlen)
{
    if (rc == -ERANGE)
        snprintf(err, errlen, "'%.*s' is over %llu", (int)(n < 40 ? n : 40), what,
                 (unsigned long long)max);
    else
        snprintf(err, errlen,
                 "bad byte count '%.*s' (want a whole number with an optional unit K, M, G, Ki, "
                 "Mi or Gi, e.g. 100K or 1MiB)",
                 (int)(n < 40 ? n : 40), what);
    return rc;
}

int pace_bytes_parse(const char *s, uint64_t *out, char *err, size_t errlen)
{
    size_t n = strlen(s);
    int rc = parse_count(s, n, PACE_BYTES_MAX, out);
    return rc ? count_err(rc, s, n, PACE_BYTES_MAX, err, errlen) : 0;
}

/* A rate of n bytes at s: 1 to PACE_RATE_MAX bytes a second, or 0. */
static int parse_rate(const char *s, size_t n, uint64_t *out, char *err, size_t errlen)
{
    int rc = parse_count(s, n, PACE_RATE_MAX, out);
    if (rc)
        return count_err(rc, s, n, PACE_RATE_MAX, err, errlen);
    return 0;
}

int pace_rate_parse(struct pace_spec *p, const char *s, char *err, size_t errlen)
{
    if (none(s)) {
        p->rate = p->burst = 0;
        p->has_rate = 0;
        return 0;
    }
    const char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    uint64_t rate, burst = 0;
    if (parse_rate(s, n, &rate, err, errlen) != 0)
        return -EINVAL;
    if (comma) {
        const char *b = comma + 1;
        if (strncmp(b, "burst=", 6) != 0) {
            snprintf(err, errlen,
                     "bad rate '%.40s' (want BYTES_PER_SECOND or BYTES_PER_SECOND,burst=BYTES, "
                     "e.g. 1M,burst=64K)",
                     s);
            return -EINVAL;
        }
        if (pace_bytes_parse(b + 6, &burst, err, errlen) != 0)
            return -EINVAL;
        if (burst == 0) {
            snprintf(err, errlen, "burst must be at least 1 byte");
            return -EINVAL;
        }
    }
    if (rate == 0 && burst) {
        snprintf(err, errlen, "burst needs a rate above 0");
        return -EINVAL;
    }
    p->rate = rate;
    p->burst = burst;
    p->has_rate = rate > 0;
    return 0;
}

int pace_read_rate_parse(struct pace_spec *p, const char *s, char *err, size_t errlen)
{
    uint64_t rate = 0;
    if (!none(s) && parse_rate(s, strlen(s), &rate, err, errlen) != 0)
        return -EINVAL;
    p->read_rate = rate;
    return 0;
}

int pace_reset_parse(struct pace_spec *p, const char *s, char *err, size_t errlen)
{
    if (none(s)) {
        p->reset = 0;
        p->reset_after = 0;
        return 0;
    }
    if (pace_bytes_parse(s, &p->reset_after, err, errlen) != 0)
        return -EINVAL;
    p->reset = 1;
    return 0;
}

int pace_stall_parse(struct pace_spec *p, const char *s, char *err, size_t errlen)
{
    if (none(s)) {
        p->stall = 0;
        p->stall_at = p->stall_us = 0;
        return 0;
    }
    const char *comma = strchr(s, ',');
    uint64_t at, us;
    if (!comma) {
        snprintf(err, errlen, "bad stall '%.40s' (want BYTES,DURATION, e.g. 64K,5s)", s);
        return -EINVAL;
    }
    int rc = parse_count(s, (size_t)(comma - s), PACE_BYTES_MAX, &at);
    if (rc)
        return count_err(rc, s, (size_t)(comma - s), PACE_BYTES_MAX, err, errlen);
    rc = delay_duration_parse(comma + 1, &us);
    if (rc || us == 0) {
        snprintf(err, errlen,
                 "bad duration '%.40s' (want a number above 0 with us, ms, s, m or h, e.g. 5s)",
                 comma + 1);
        return -EINVAL;
    }
    p->stall = 1;
    p->stall_at = at;
    p->stall_us = us;
    return 0;
}

int pace_slow_close_parse(struct pace_spec *p, const char *s, char *err, size_t errlen)
{
    uint64_t us = 0;
    if (!none(s) && delay_duration_parse(s, &us) != 0) {
        snprintf(err, errlen,
                 "bad duration '%.40s' (want a number with us, ms, s, m or h, e.g. 5s)", s);
        return -EINVAL;
    }
    p->slow_close_us = us;
    return 0;
}

int pace_check(const struct pace_spec *p, uint64_t body_len, uint64_t max_us, char *why,
               size_t whylen)
{
    char a[32], b[32];
    if (p->reset && p->reset_after >= body_len) {
        snprintf(why, whylen,
                 "reset-after: %llu bytes is not inside the body of %llu bytes; add size=",
                 (unsigned long long)p->reset_after, (unsigned long long)body_len);
        return -EINVAL;
    }
    if (p->stall && p->stall_at >= body_len) {
        snprintf(why, whylen, "stall: %llu bytes is not inside the body of %llu bytes; add size=",
                 (unsigned long long)p->stall_at, (unsigned long long)body_len);
        return -EINVAL;
    }
    if (p->stall && p->reset && p->stall_at >= p->reset_after) {
        snprintf(why, whylen,
                 "stall: at %llu bytes it would come after reset-after's %llu; stall earlier",
                 (unsigned long long)p->stall_at, (unsigned long long)p->reset_after);
        return -EINVAL;
    }
    const struct {
        const char *key;
        uint64_t us;
    } d[] = {{"stall", p->stall ? p->stall_us : 0}, {"slow-close", p->slow_close_us}};
    for (size_t i = 0; i < 2; i++) {
        if (d[i].us > max_us) {
            delay_format_ms(d[i].us, a, sizeof a);
            delay_format_ms(max_us, b, sizeof b);
            snprintf(why, whylen, "%s: %s ms is over --max-delay %s ms", d[i].key, a, b);
            return -EINVAL;
        }
    }
    return 0;
}

/* Writes n bytes as the parsers read them back: with the largest unit that divides them. */
static void format_bytes(uint64_t n, char *buf, size_t len)
{
    static const struct {
        const char *name;
        uint64_t f;
    } units[] = {{"Gi", 1ULL << 30}, {"G", 1000000000ULL}, {"Mi", 1ULL << 20},
                 {"M", 1000000ULL},  {"Ki", 1ULL << 10},   {"K", 1000ULL}};
    for (size_t i = 0; n && i < sizeof units / sizeof units[0]; i++) {
        if (n % units[i].f == 0) {
            snprintf(buf, len, "%llu%s", (unsigned long long)(n / units[i].f), units[i].name);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)n);
}

void pace_describe(const struct pace_spec *p,
                   void (*add)(void *ctx, const char *key, const char *value), void *ctx)
{
    char v[96], n[32], ms[32];
    if (p->rate) {
        format_bytes(p->rate, v, sizeof v);
        if (p->burst) {
            format_bytes(p->burst, n, sizeof n);
            size_t l = strlen(v);
            snprintf(v + l, sizeof v - l, ",burst=%s", n);
        }
        add(ctx, "rate", v);
    }
    if (p->read_rate) {
        format_bytes(p->read_rate, v, sizeof v);
        add(ctx, "read-rate", v);
    }
    if (p->reset) {
        format_bytes(p->reset_after, v, sizeof v);
        add(ctx, "reset-after", v);
    }
    if (p->stall) {
        format_bytes(p->stall_at, n, sizeof n);
        delay_format_ms(p->stall_us, ms, sizeof ms);
        snprintf(v, sizeof v, "%s,%sms", n, ms);
        add(ctx, "stall", v);
    }
    if (p->slow_close_us) {
        delay_format_ms(p->slow_close_us, ms, sizeof ms);
        snprintf(v, sizeof v, "%sms", ms);
        add(ctx, "slow-close", v);
    }
}

void pace_start(struct pace_state *s, uint64_t start_us)
{
    s->base_us = start_us;
    s->stall_until_us = 0;
}

/* Bytes a rate lets through in us microseconds (128 bits: hours at 10 GB/s). */
static uint64_t bytes_in(uint64_t rate, uint64_t us)
{
    return (uint64_t)((unsigned __int128)rate * us / 1000000);
}

/* Microseconds until a rate has let n bytes through, rounded up. */
static uint64_t time_for(uint64_t rate, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)n * 1000000 + rate - 1) / rate);
}

enum pace_step pace_next(const struct pace_spec *p, struct pace_state *s, uint64_t end,
                         uint64_t now_us, uint64_t sent, uint64_t *len, uint64_t *due_us)
{
    if (sent >= end)
        return PACE_END;
    uint64_t limit = end;
    if (p->stall && sent >= p->stall_at && p->stall_at < end) {
        if (!s->stall_until_us)
            s->stall_until_us = now_us + p->stall_us;
        if (now_us < s->stall_until_us) {
            *due_us = s->stall_until_us;
            return PACE_WAIT;
        }
    } else if (p->stall && p->stall_at < limit) {
        limit = p->stall_at;
    }
    if (!p->rate) {
        *len = limit - sent;
        return PACE_SEND;
    }
    uint64_t burst = pace_burst(p);
    uint64_t t = now_us > s->base_us ? now_us - s->base_us : 0;
    uint64_t allowed = burst + bytes_in(p->rate, t);
    /* A bucket holds `burst`, and makes up for at most PACE_CATCHUP_US of lost time: a step
     * that left a little late (the loop's timers, the library's write) is made up, so the
     * average holds; time the client did not take (a stall, a full window) is not made up in
     * one rush. */
    uint64_t most = burst + bytes_in(p->rate, PACE_CATCHUP_US);
    if (allowed > sent + most) {
        uint64_t back = time_for(p->rate, sent + most - burst);
        s->base_us = now_us > back ? now_us - back : 0;
        allowed = sent + most;
    }
    /* A step is PACE_TICK_US of the rate (at least a byte), or what is left up to the limit:
     * after the burst that leaves with the head, bytes leave only a whole step at a time, so
     * that a library that asks for more as soon as it has written (libh2o's proceed) is not
     * handed a few bytes per write, a busy loop. */
    uint64_t step = pace_burst(&(struct pace_spec){.rate = p->rate});
    uint64_t next = sent + step < limit ? sent + step : limit;
    if (allowed >= next || (!sent && allowed)) {
        uint64_t upto = allowed < limit ? allowed : limit;
        *len = upto - sent;
        return PACE_SEND;
    }
    *due_us = s->base_us + time_for(p->rate, next - burst);
    return PACE_WAIT;
}

uint64_t pace_read_allowed(const struct pace_spec *p, uint64_t start_us, uint64_t now_us,
                           uint64_t got, uint64_t avail, uint64_t *due_us)
{
    if (!p->read_rate)
        return avail;
    uint64_t first = pace_burst(&(struct pace_spec){.rate = p->read_rate});
    uint64_t t = now_us > start_us ? now_us - start_us : 0;
    uint64_t allowed = first + bytes_in(p->read_rate, t);
    if (allowed > got) {
        uint64_t n = allowed - got;
        return n < avail ? n : avail;
    }
    uint64_t step = first;
    *due_us = start_us + time_for(p->read_rate, got + step - first);
    return 0;
}
