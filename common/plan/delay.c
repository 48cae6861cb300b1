#include "plan/delay.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses the leading duration of s[0..len) and reports its length through *used. Accepts
 * digits, an optional fraction and an optional unit. */
static int parse_duration_n(const char *s, size_t len, uint64_t *us)
{
    size_t i = 0;
    uint64_t whole = 0;
    uint64_t frac = 0, frac_scale = 1;
    int digits = 0;

    while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (whole > DELAY_DURATION_MAX_US)
            return -ERANGE;
        whole = whole * 10 + (uint64_t)(s[i] - '0');
        i++;
        digits++;
    }
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (frac_scale >= 1000000000ULL)
                return -EINVAL;
            frac = frac * 10 + (uint64_t)(s[i] - '0');
            frac_scale *= 10;
            i++;
            digits++;
        }
    }
    if (digits == 0)
        return -EINVAL;

    const char *unit = s + i;
    size_t ulen = len - i;
    uint64_t mult;
    if (ulen == 0 || (ulen == 2 && memcmp(unit, "ms", 2) == 0))
        mult = 1000;
    else if (ulen == 2 && memcmp(unit, "us", 2) == 0)
        mult = 1;
    else if (ulen == 1 && unit[0] == 's')
        mult = 1000000;
    else if (ulen == 1 && unit[0] == 'm')
        mult = 60000000;
    else if (ulen == 1 && unit[0] == 'h')
        mult = 3600000000ULL;
    else
        return -EINVAL;

    if (whole > DELAY_DURATION_MAX_US / mult)
        return -ERANGE;
    uint64_t total = whole * mult;
    /* The fraction must land on a whole microsecond: "1.5us" is refused rather than rounded. */
    if (frac) {
        uint64_t scaled = frac * mult;
        if (scaled % frac_scale != 0)
            return -EINVAL;
        total += scaled / frac_scale;
    }
    if (total > DELAY_DURATION_MAX_US)
        return -ERANGE;
    *us = total;
    return 0;
}

int delay_duration_parse(const char *s, uint64_t *us)
{
    return parse_duration_n(s, strlen(s), us);
}

static int duration_err(int rc, const char *what, size_t len, char *err, size_t errlen)
{
    if (rc == -ERANGE)
        snprintf(err, errlen, "duration '%.*s' is over the 24h limit", (int)len, what);
    else
        snprintf(err, errlen,
                 "bad duration '%.*s' (want a number with us, ms, s, m or h, e.g. 250ms or 1.5s)",
                 (int)len, what);
    return rc;
}

static int parse_part(const char *s, size_t len, uint64_t *us, char *err, size_t errlen)
{
    int rc = parse_duration_n(s, len, us);
    return rc ? duration_err(rc, s, len, err, errlen) : 0;
}

int delay_drip_parse(struct delay_drip *out, const char *s, char *err, size_t errlen)
{
    const char *comma = strchr(s, ',');
    size_t nlen = comma ? (size_t)(comma - s) : strlen(s);
    unsigned long n = 0;
    size_t i;
    for (i = 0; i < nlen && isdigit((unsigned char)s[i]) && n <= DELAY_DRIP_CHUNKS_MAX; i++)
        n = n * 10 + (unsigned long)(s[i] - '0');
    if (nlen == 0 || i < nlen || n < 1 || n > DELAY_DRIP_CHUNKS_MAX) {
        snprintf(err, errlen,
                 "bad drip '%.40s' (want CHUNKS,DURATION with 1 to %d chunks, e.g. 10,2s)", s,
                 DELAY_DRIP_CHUNKS_MAX);
        return -EINVAL;
    }
    uint64_t us = 0;
    if (comma) {
        int rc = parse_duration_n(comma + 1, strlen(comma + 1), &us);
        if (rc)
            return duration_err(rc, comma + 1, strlen(comma + 1), err, errlen);
    }
    out->chunks = (unsigned)n;
    out->over_us = us;
    return 0;
}

static int parse_double(const char *s, size_t len, double *out)
{
    char tmp[32];
    char *end;
    if (len == 0 || len >= sizeof tmp)
        return -EINVAL;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    errno = 0;
    double v = strtod(tmp, &end);
    if (*end != '\0' || errno != 0 || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

static int parse_uniform(struct delay_spec *sp, const char *s, const char *dots, char *err,
                         size_t errlen)
{
    uint64_t lo, hi;
    int rc = parse_part(s, (size_t)(dots - s), &lo, err, errlen);
    if (rc)
        return rc;
    rc = parse_part(dots + 2, strlen(dots + 2), &hi, err, errlen);
    if (rc)
        return rc;
    if (lo > hi) {
        snprintf(err, errlen, "uniform range '%s' has its low bound above its high bound", s);
        return -EINVAL;
    }
    sp->kind = DELAY_UNIFORM;
    sp->a_us = lo;
    sp->b_us = hi;
    return 0;
}

/* "normal:MEAN,SD" and "lognormal:MEDIAN,SIGMA" share the two-argument shape. */
static int parse_two_args(const char *args, const char *form, const char **second, char *err,
                          size_t errlen)
{
    const char *comma = strchr(args, ',');
    if (!comma || strchr(comma + 1, ',')) {
        snprintf(err, errlen, "'%s' wants two values, as in %s", args, form);
        return -EINVAL;
    }
    *second = comma + 1;
    return 0;
}

static int parse_normal(struct delay_spec *sp, const char *args, char *err, size_t errlen)
{
    const char *second;
    uint64_t mean, sd;
    int rc = parse_two_args(args, "normal:1s,50ms", &second, err, errlen);
    if (rc == 0)
        rc = parse_part(args, (size_t)(second - 1 - args), &mean, err, errlen);
    if (rc == 0)
        rc = parse_part(second, strlen(second), &sd, err, errlen);
    if (rc)
        return rc;
    sp->kind = DELAY_NORMAL;
    sp->a_us = mean;
    sp->b_us = sd;
    return 0;
}

static int parse_lognormal(struct delay_spec *sp, const char *args, char *err, size_t errlen)
{
    const char *second;
    uint64_t median;
    double sigma;
    int rc = parse_two_args(args, "lognormal:1s,0.25", &second, err, errlen);
    if (rc == 0)
        rc = parse_part(args, (size_t)(second - 1 - args), &median, err, errlen);
    if (rc)
        return rc;
    if (parse_double(second, strlen(second), &sigma) != 0 || sigma < 0 || sigma > 10) {
        snprintf(err, errlen, "log-normal sigma '%s' must be a number from 0 to 10", second);
        return -EINVAL;
    }
    sp->kind = DELAY_LOGNORMAL;
    sp->a_us = median;
    sp->sigma = sigma;
    return 0;
}

static int parse_mix(struct delay_spec *sp, const char *s, char *err, size_t errlen)
{
    unsigned total = 0;
    const char *p = s;
    sp->kind = DELAY_MIX;
    sp->nmix = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (!colon) {
            snprintf(err, errlen, "mix entry '%.*s' wants DURATION:PERCENT, as in 1s:9", (int)len,
                     p);
            return -EINVAL;
        }
        if (sp->nmix == DELAY_MIX_MAX) {
            snprintf(err, errlen, "a mix takes at most %d entries", DELAY_MIX_MAX);
            return -EINVAL;
        }
        uint64_t us;
        int rc = parse_part(p, (size_t)(colon - p), &us, err, errlen);
        if (rc)
            return rc;
        const char *w = colon + 1;
        size_t wlen = len - (size_t)(w - p);
        unsigned pct = 0;
        if (wlen == 0 || wlen > 3)
            pct = 1000;
        for (size_t i = 0; i < wlen && pct <= 100; i++) {
            if (w[i] < '0' || w[i] > '9')
                pct = 1000;
            else
                pct = pct * 10 + (unsigned)(w[i] - '0');
        }
        if (pct > 100) {
            snprintf(err, errlen, "mix weight '%.*s' must be a whole percent from 0 to 100",
                     (int)wlen, w);
            return -EINVAL;
        }
        total += pct;
        sp->mix[sp->nmix].us = us;
        sp->mix[sp->nmix].percent = pct;
        sp->nmix++;
        if (!end)
            break;
        p = end + 1;
    }
    if (total > 100) {
        snprintf(err, errlen, "mix weights add up to %u%%, more than 100%%", total);
        return -EINVAL;
    }
    return 0;
}

/* The number after the 'p' of "p99.9", in millionths of rank. Returns 0, -EINVAL if
 * malformed or finer than 0.0001, -ERANGE outside (0, 100). */
static int parse_rank(const char *s, size_t len, uint32_t *rank)
{
    size_t i = 0;
    uint32_t whole = 0, frac = 0, scale = DELAY_PCT_RANK_MAX / 100;

    while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (whole < 1000)
            whole = whole * 10 + (uint32_t)(s[i] - '0');
        i++;
    }
    if (i == 0)
        return -EINVAL;
    if (i < len && s[i] == '.') {
        if (++i == len)
            return -EINVAL;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            if (scale == 1)
                return -EINVAL;
            scale /= 10;
            frac += (uint32_t)(s[i] - '0') * scale;
        }
    }
    if (i != len)
        return -EINVAL;
    if (whole >= 100 || whole + frac == 0)
        return -ERANGE;
    *rank = whole * (DELAY_PCT_RANK_MAX / 100) + frac;
    return 0;
}

/* Without max=, the last segment goes on with its slope up to rank 1 (delay.h says why). */
static int extend_to_max(struct delay_spec *sp, const char *s, char *err, size_t errlen)
{
    const struct delay_pct_point *a = &sp->pct[sp->npct - 2], *b = &sp->pct[sp->npct - 1];
    double rest = (double)(DELAY_PCT_RANK_MAX - b->rank) / (double)(b->rank - a->rank);
    double end;

    if (a->us == 0)
        end = (double)b->us * (1.0 + rest);
    else
        end = (double)b->us * exp(log((double)b->us / (double)a->us) * rest);
    if (!(end <= (double)DELAY_DURATION_MAX_US)) {
        snprintf(err, errlen, "percentiles '%s' reach over the 24h limit at p100; give max=", s);
        return -ERANGE;
    }
    uint64_t us = (uint64_t)llround(end);
    sp->pct[sp->npct].us = us < b->us ? b->us : us;
    sp->pct[sp->npct].rank = DELAY_PCT_RANK_MAX;
    sp->npct++;
    return 0;
}

static int parse_percentiles(struct delay_spec *sp, const char *s, char *err, size_t errlen)
{
    const char *p = s, *prev = NULL;
    size_t prevlen = 0, prevklen = 0, points = 0;
    int rc;

    sp->kind = DELAY_PERCENTILES;
    sp->pct[0].us = 0;
    sp->pct[0].rank = 0;
    sp->npct = 1;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len == 0) {
            snprintf(err, errlen, "empty item in '%s'", s);
            return -EINVAL;
        }
        if (!eq) {
            snprintf(err, errlen, "'%.*s' wants pNN=DURATION, as in p50=20ms,p99=400ms", (int)len,
                     p);
            return -EINVAL;
        }
        size_t klen = (size_t)(eq - p);
        uint32_t rank;
        if (klen == 3 && memcmp(p, "min", 3) == 0) {
            if (prev) {
                snprintf(err, errlen, "min= must come first in '%s'", s);
                return -EINVAL;
            }
            rank = 0;
        } else if (klen == 3 && memcmp(p, "max", 3) == 0) {
            if (end) {
                snprintf(err, errlen, "max= must come last in '%s'", s);
                return -EINVAL;
            }
            rank = DELAY_PCT_RANK_MAX;
        } else if (klen > 0 && p[0] == 'p') {
            rc = parse_rank(p + 1, klen - 1, &rank);
            if (rc == -ERANGE) {
                snprintf(err, errlen,
                         "percentile '%.*s' must be above 0 and below 100 (min= is p0, max= p100)",
                         (int)klen, p);
                return rc;
            }
            if (rc) {
                snprintf(err, errlen, "bad percentile '%.*s' (want p and a number, e.g. p99.9)",
                         (int)klen, p);
                return rc;
            }
            if (points == DELAY_PCT_MAX) {
                snprintf(err, errlen, "percentiles take at most %d pNN= points", DELAY_PCT_MAX);
                return -EINVAL;
            }
            if (rank <= sp->pct[sp->npct - 1].rank) {
                snprintf(err, errlen, "percentiles must increase: %.*s after %.*s in '%s'",
                         (int)klen, p, (int)prevklen, prev, s);
                return -EINVAL;
            }
            points++;
        } else {
            snprintf(err, errlen, "unknown key '%.*s' (want pNN=, min= or max=, as in p50=20ms)",
                     (int)klen, p);
            return -EINVAL;
        }
        uint64_t us;
        rc = parse_part(eq + 1, len - klen - 1, &us, err, errlen);
        if (rc)
            return rc;
        if (us < sp->pct[sp->npct - 1].us) {
            snprintf(err, errlen, "values must not decrease: %.*s after %.*s in '%s'", (int)len, p,
                     (int)prevlen, prev, s);
            return -EINVAL;
        }
        if (rank == 0) {
            sp->pct[0].us = us;
        } else {
            sp->pct[sp->npct].us = us;
            sp->pct[sp->npct].rank = rank;
            sp->npct++;
        }
        prev = p;
        prevlen = len;
        prevklen = klen;
        if (!end)
            break;
        p = end + 1;
    }
    if (points == 0) {
        snprintf(err, errlen, "'%s' has no pNN= point, as in p50=20ms,p99=400ms", s);
        return -EINVAL;
    }
    if (sp->pct[sp->npct - 1].rank < DELAY_PCT_RANK_MAX)
        return extend_to_max(sp, s, err, errlen);
    return 0;
}

int delay_spec_parse(struct delay_spec *out, const char *s, char *err, size_t errlen)
{
    struct delay_spec sp;
    int rc;

    memset(&sp, 0, sizeof sp);
    if (*s == '\0') {
        snprintf(err, errlen, "empty delay");
        return -EINVAL;
    }
    const char *dots = strstr(s, "..");
    if (strncmp(s, "normal:", 7) == 0)
        rc = parse_normal(&sp, s + 7, err, errlen);
    else if (strncmp(s, "lognormal:", 10) == 0)
        rc = parse_lognormal(&sp, s + 10, err, errlen);
    else if (strchr(s, '='))
        rc = parse_percentiles(&sp, s, err, errlen);
    else if (dots)
        rc = parse_uniform(&sp, s, dots, err, errlen);
    else if (strchr(s, ':'))
        rc = parse_mix(&sp, s, err, errlen);
    else {
        sp.kind = DELAY_FIXED;
        rc = parse_part(s, strlen(s), &sp.a_us, err, errlen);
    }
    if (rc == 0)
        *out = sp;
    return rc;
}

void delay_spec_fixed(struct delay_spec *out, uint64_t us)
{
    memset(out, 0, sizeof *out);
    out->kind = DELAY_FIXED;
    out->a_us = us;
}

int delay_spec_is_fixed(const struct delay_spec *spec)
{
    switch (spec->kind) {
    case DELAY_FIXED:
        return 1;
    case DELAY_UNIFORM:
        return spec->a_us == spec->b_us;
    case DELAY_NORMAL:
        return spec->b_us == 0;
    case DELAY_LOGNORMAL:
        return spec->sigma == 0.0;
    case DELAY_MIX:
        return 0;
    case DELAY_PERCENTILES:
        return spec->npct == 0 || spec->pct[0].us == spec->pct[spec->npct - 1].us;
    }
    return 0;
}

uint64_t delay_spec_max_us(const struct delay_spec *spec)
{
    uint64_t max = 0;
    switch (spec->kind) {
    case DELAY_FIXED:
        return spec->a_us;
    case DELAY_UNIFORM:
        return spec->b_us;
    case DELAY_NORMAL:
        return spec->b_us == 0 ? spec->a_us : UINT64_MAX;
    case DELAY_LOGNORMAL:
        return spec->sigma == 0.0 ? spec->a_us : UINT64_MAX;
    case DELAY_MIX:
        for (size_t i = 0; i < spec->nmix; i++)
            if (spec->mix[i].percent && spec->mix[i].us > max)
                max = spec->mix[i].us;
        return max;
    case DELAY_PERCENTILES:
        return spec->npct ? spec->pct[spec->npct - 1].us : 0;
    }
    return max;
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t delay_random(uint64_t seed, uint64_t stream, uint64_t index)
{
    /* Chained finalisers make every argument affect every output bit; unlike a shared stream,
     * the value does not depend on the order in which threads draw. */
    return splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ index);
}

/* Uniform double in (0, 1), never 0 so that log() is defined. */
static double unit_open(uint64_t r)
{
    return ((double)(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* One standard normal deviate per index (Box-Muller on two derived uniforms). */
static double standard_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    double u1 = unit_open(delay_random(seed, stream, 2 * index));
    double u2 = unit_open(delay_random(seed, stream, 2 * index + 1));
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static uint64_t us_from_double(double v)
{
    if (!(v > 0))
        return 0;
    if (v >= (double)DELAY_DURATION_MAX_US)
        return DELAY_DURATION_MAX_US;
    return (uint64_t)llround(v);
}

/* The quantile function through the points at u, the top 53 bits of r as a fraction in
 * [0, 1). The result is clamped to its segment so that rounding cannot make the draws
 * non-monotone in u or step outside [min, max]. */
static uint64_t draw_percentiles(const struct delay_spec *spec, uint64_t r)
{
    double q = (double)(r >> 11) * (1.0 / 9007199254740992.0) * DELAY_PCT_RANK_MAX;
    size_t j = 1;
    while (j + 1 < spec->npct && q >= (double)spec->pct[j].rank)
        j++;
    const struct delay_pct_point *a = &spec->pct[j - 1], *b = &spec->pct[j];
    if (a->us == b->us)
        return a->us;
    double t = (q - a->rank) / (double)(b->rank - a->rank);
    double v;
    if (a->us == 0) {
        v = t * (double)b->us;
    } else {
        double la = log((double)a->us);
        v = exp(la + t * (log((double)b->us) - la));
    }
    uint64_t us = (uint64_t)llround(v);
    return us < a->us ? a->us : us > b->us ? b->us : us;
}

uint64_t delay_spec_draw(const struct delay_spec *spec, uint64_t seed, uint64_t stream,
                         uint64_t index)
{
    switch (spec->kind) {
    case DELAY_FIXED:
        return spec->a_us;
    case DELAY_UNIFORM: {
        uint64_t span = spec->b_us - spec->a_us + 1;
        return spec->a_us + delay_random(seed, stream, index) % span;
    }
    case DELAY_NORMAL:
        return us_from_double((double)spec->a_us +
                              (double)spec->b_us * standard_normal(seed, stream, index));
    case DELAY_LOGNORMAL:
        return us_from_double((double)spec->a_us *
                              exp(spec->sigma * standard_normal(seed, stream, index)));
    case DELAY_MIX: {
        unsigned pick = (unsigned)(delay_random(seed, stream, index) % 100);
        unsigned acc = 0;
        for (size_t i = 0; i < spec->nmix; i++) {
            acc += spec->mix[i].percent;
            if (pick < acc)
                return spec->mix[i].us;
        }
        return 0;
    }
    case DELAY_PERCENTILES:
        return draw_percentiles(spec, delay_random(seed, stream, index));
    }
    return 0;
}

size_t delay_format_ms(uint64_t us, char *buf, size_t len)
{
    int n;
    if (us % 1000 == 0) {
        n = snprintf(buf, len, "%llu", (unsigned long long)(us / 1000));
    } else {
        unsigned frac = (unsigned)(us % 1000);
        unsigned width = 3;
        while (frac % 10 == 0) {
            frac /= 10;
            width--;
        }
        n = snprintf(buf, len, "%llu.%0*u", (unsigned long long)(us / 1000), (int)width, frac);
    }
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len - 1;
}

/* A duration as delay_spec_parse reads it back: "1000ms", "0.8ms". */
static size_t format_duration(uint64_t us, char *buf, size_t len)
{
    size_t n = delay_format_ms(us, buf, len);
    int m = snprintf(buf + n, len - n, "ms");
    return m < 0 ? n : (n + (size_t)m < len ? n + (size_t)m : len - 1);
}

size_t delay_spec_format(const struct delay_spec *spec, char *buf, size_t len)
{
    char a[32], b[32];
    int n = 0;
    buf[0] = '\0';
    switch (spec->kind) {
    case DELAY_FIXED:
        format_duration(spec->a_us, a, sizeof a);
        n = snprintf(buf, len, "%s", a);
        break;
    case DELAY_UNIFORM:
        format_duration(spec->a_us, a, sizeof a);
        format_duration(spec->b_us, b, sizeof b);
        n = snprintf(buf, len, "%s..%s", a, b);
        break;
    case DELAY_NORMAL:
        format_duration(spec->a_us, a, sizeof a);
        format_duration(spec->b_us, b, sizeof b);
        n = snprintf(buf, len, "normal:%s,%s", a, b);
        break;
    case DELAY_LOGNORMAL:
        format_duration(spec->a_us, a, sizeof a);
        n = snprintf(buf, len, "lognormal:%s,%.15g", a, spec->sigma);
        break;
    case DELAY_MIX:
        for (size_t i = 0; i < spec->nmix && n >= 0 && (size_t)n < len; i++) {
            format_duration(spec->mix[i].us, a, sizeof a);
            int m = snprintf(buf + n, len - (size_t)n, "%s%s:%u", i ? "," : "", a,
                             spec->mix[i].percent);
            n = m < 0 ? -1 : n + m;
        }
        break;
    case DELAY_PERCENTILES:
        /* Every point, min= and max= included: the form parses back to the same spec. */
        for (size_t i = 0; i < spec->npct && n >= 0 && (size_t)n < len; i++) {
            const struct delay_pct_point *p = &spec->pct[i];
            int m;
            format_duration(p->us, a, sizeof a);
            if (p->rank == 0)
                m = snprintf(buf + n, len - (size_t)n, "min=%s", a);
            else if (p->rank == DELAY_PCT_RANK_MAX)
                m = snprintf(buf + n, len - (size_t)n, ",max=%s", a);
            else
                m = snprintf(buf + n, len - (size_t)n, ",p%.4g=%s",
                             (double)p->rank * 100.0 / DELAY_PCT_RANK_MAX, a);
            n = m < 0 ? -1 : n + m;
        }
        break;
    }
    if (n < 0)
        return 0;
    return (size_t)n < len ? (size_t)n : len - 1;
}

int delay_list_uint(const char *s, size_t len, uint64_t max, uint64_t *v)
{
    uint64_t n = 0;
    if (len == 0 || len > 20)
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -EINVAL;
        if (n > (UINT64_MAX - 9) / 10)
            return -ERANGE;
        n = n * 10 + (uint64_t)(s[i] - '0');
    }
    if (n > max)
        return -ERANGE;
    *v = n;
    return 0;
}

int delay_list_at_key(const char *s, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(s, keys[i], strlen(keys[i])) == 0)
            return 1;
    return 0;
}
