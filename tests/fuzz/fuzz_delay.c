/*
 * libFuzzer target for common/delay: delay_spec_parse() and delay_duration_parse().
 *
 * Input: any bytes; a NUL-terminated copy (cut at the first NUL) is the spec text.
 * tests/fuzz/corpus/delay/ holds every form of delay.h's header comment and some errors.
 *
 * Checked (a violation calls __builtin_trap()):
 *   - both parsers return 0, -EINVAL or -ERANGE;
 *   - on failure *out / *us keep a sentinel value, and the error text is non-empty and
 *     NUL-terminated inside errlen (the error buffer is an exact-size heap block, so ASan
 *     reports any write past it); with a 16-byte buffer the same call gives the same result and
 *     a prefix of the long error text;
 *   - on success: the kind is valid; a few draws (fixed and input-derived seed/stream/index)
 *     never exceed delay_spec_max_us() when it is bounded, nor DELAY_DURATION_MAX_US; the same
 *     arguments give the same draw; uniform draws are >= the low bound, mix draws are one of the
 *     entries or 0, a spec with delay_spec_is_fixed() always draws the same value;
 *   - percentiles: ranks strictly increasing from 0 to DELAY_PCT_RANK_MAX, values
 *     non-decreasing, 1 to DELAY_PCT_MAX points between min and max; each draw lies between the
 *     two points around its u (the top 53 bits of delay_random(), as delay.h says), so within
 *     [min, max]; and draws are monotone in u (a larger u never draws less);
 *   - a text with no ':', no ".." and no '=' is a fixed delay exactly when delay_duration_parse()
 *     accepts it, with the same value;
 *   - delay_format_ms() of every value seen (parsed durations, bounds, draws) fits in 24 bytes,
 *     returns strlen, and parses back with delay_duration_parse() to within 1 us.
 *
 * Build: clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Icommon \
 *            tests/fuzz/fuzz_delay.c common/delay.c -lm -o fuzz_delay
 */
#include "plan/delay.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            __builtin_trap();                                                                      \
    } while (0)

#define ERR_LONG 512
#define ERR_SHORT 16

/* delay_format_ms() must fit in 24 bytes and read back within 1 us. */
static void check_format(uint64_t us)
{
    char buf[24];
    uint64_t back = UINT64_MAX - 7;
    size_t n;

    memset(buf, 'x', sizeof buf);
    n = delay_format_ms(us, buf, sizeof buf);
    REQUIRE(n < sizeof buf && memchr(buf, '\0', sizeof buf) != NULL && strlen(buf) == n);
    REQUIRE(n > 0);
    if (us < DELAY_DURATION_MAX_US) {
        REQUIRE(delay_duration_parse(buf, &back) == 0);
        REQUIRE(back + 1 >= us && back <= us + 1);
    }
}

/* Field by field: struct assignment need not copy padding. */
static int same_spec(const struct delay_spec *a, const struct delay_spec *b)
{
    if (a->kind != b->kind || a->a_us != b->a_us || a->b_us != b->b_us ||
        memcmp(&a->sigma, &b->sigma, sizeof a->sigma) != 0 || a->nmix != b->nmix ||
        a->nmix > DELAY_MIX_MAX)
        return 0;
    for (size_t i = 0; i < a->nmix; i++)
        if (a->mix[i].us != b->mix[i].us || a->mix[i].percent != b->mix[i].percent)
            return 0;
    if (a->npct != b->npct || a->npct > DELAY_PCT_MAX + 2)
        return 0;
    for (size_t i = 0; i < a->npct; i++)
        if (a->pct[i].us != b->pct[i].us || a->pct[i].rank != b->pct[i].rank)
            return 0;
    return 1;
}

static void check_error(int rc, const char *err, size_t errlen)
{
    REQUIRE(rc == -EINVAL || rc == -ERANGE);
    REQUIRE(memchr(err, '\0', errlen) != NULL);
    REQUIRE(err[0] != '\0');
}

/* The draw of a percentile spec lies between the points around its u. Returns u's 53 bits. */
static uint64_t check_percentile_draw(const struct delay_spec *sp, uint64_t r, uint64_t d)
{
    uint64_t u53 = r >> 11;
    double q = (double)u53 * (1.0 / 9007199254740992.0) * DELAY_PCT_RANK_MAX;
    size_t j = 1;

    while (j + 1 < sp->npct && q >= (double)sp->pct[j].rank)
        j++;
    REQUIRE(d >= sp->pct[j - 1].us && d <= sp->pct[j].us);
    return u53;
}

static void check_draws(const struct delay_spec *sp, uint64_t h)
{
    static const uint64_t fixed[][3] = {
        {0, 0, 0},
        {1, 2, 3},
        {UINT64_MAX, 1ULL << 32, 12345},
        {42, 7, UINT64_MAX},
    };
    uint64_t args[6][3];
    uint64_t max = delay_spec_max_us(sp);
    uint64_t first = 0;
    uint64_t drawn[6], u53[6];
    size_t n = 0;

    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++, n++)
        memcpy(args[n], fixed[i], sizeof args[n]);
    args[n][0] = h;
    args[n][1] = h >> 17;
    args[n][2] = h * 0x9e3779b97f4a7c15ULL;
    n++;
    args[n][0] = h ^ 0x5555;
    args[n][1] = 0;
    args[n][2] = h & 0xffff;
    n++;

    REQUIRE(max == UINT64_MAX || max <= DELAY_DURATION_MAX_US);
    if (max != UINT64_MAX)
        check_format(max);
    for (size_t i = 0; i < n; i++) {
        uint64_t d = delay_spec_draw(sp, args[i][0], args[i][1], args[i][2]);

        REQUIRE(d == delay_spec_draw(sp, args[i][0], args[i][1], args[i][2]));
        REQUIRE(d <= DELAY_DURATION_MAX_US);
        if (max != UINT64_MAX)
            REQUIRE(d <= max);
        if (i == 0)
            first = d;
        else if (delay_spec_is_fixed(sp))
            REQUIRE(d == first);
        switch (sp->kind) {
        case DELAY_FIXED:
            REQUIRE(d == sp->a_us);
            break;
        case DELAY_UNIFORM:
            REQUIRE(d >= sp->a_us && d <= sp->b_us);
            break;
        case DELAY_MIX: {
            int found = d == 0;
            for (size_t k = 0; k < sp->nmix && !found; k++)
                found = sp->mix[k].percent > 0 && sp->mix[k].us == d;
            REQUIRE(found);
            break;
        }
        case DELAY_PERCENTILES:
            u53[i] = check_percentile_draw(sp, delay_random(args[i][0], args[i][1], args[i][2]), d);
            drawn[i] = d;
            for (size_t k = 0; k < i; k++) {
                if (u53[k] < u53[i])
                    REQUIRE(drawn[k] <= d);
                else if (u53[k] > u53[i])
                    REQUIRE(drawn[k] >= d);
                else
                    REQUIRE(drawn[k] == d);
            }
            break;
        case DELAY_NORMAL:
        case DELAY_LOGNORMAL:
            break;
        }
        check_format(d);
    }
}

static void check_spec(const struct delay_spec *sp)
{
    unsigned total = 0;

    switch (sp->kind) {
    case DELAY_FIXED:
        REQUIRE(sp->a_us <= DELAY_DURATION_MAX_US);
        REQUIRE(delay_spec_is_fixed(sp));
        check_format(sp->a_us);
        break;
    case DELAY_UNIFORM:
        REQUIRE(sp->a_us <= sp->b_us && sp->b_us <= DELAY_DURATION_MAX_US);
        check_format(sp->a_us);
        check_format(sp->b_us);
        break;
    case DELAY_NORMAL:
        REQUIRE(sp->a_us <= DELAY_DURATION_MAX_US && sp->b_us <= DELAY_DURATION_MAX_US);
        break;
    case DELAY_LOGNORMAL:
        REQUIRE(sp->a_us <= DELAY_DURATION_MAX_US);
        REQUIRE(sp->sigma >= 0 && sp->sigma <= 10);
        break;
    case DELAY_MIX:
        REQUIRE(sp->nmix >= 1 && sp->nmix <= DELAY_MIX_MAX);
        for (size_t i = 0; i < sp->nmix; i++) {
            REQUIRE(sp->mix[i].us <= DELAY_DURATION_MAX_US && sp->mix[i].percent <= 100);
            total += sp->mix[i].percent;
        }
        REQUIRE(total <= 100);
        break;
    case DELAY_PERCENTILES:
        REQUIRE(sp->npct >= 3 && sp->npct <= DELAY_PCT_MAX + 2);
        REQUIRE(sp->pct[0].rank == 0 && sp->pct[sp->npct - 1].rank == DELAY_PCT_RANK_MAX);
        for (size_t i = 0; i < sp->npct; i++) {
            REQUIRE(sp->pct[i].us <= DELAY_DURATION_MAX_US);
            if (i > 0)
                REQUIRE(sp->pct[i].rank > sp->pct[i - 1].rank &&
                        sp->pct[i].us >= sp->pct[i - 1].us);
            check_format(sp->pct[i].us);
        }
        REQUIRE(delay_spec_max_us(sp) == sp->pct[sp->npct - 1].us);
        REQUIRE(delay_spec_is_fixed(sp) == (sp->pct[0].us == sp->pct[sp->npct - 1].us));
        break;
    default:
        REQUIRE(0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    char *err = malloc(ERR_LONG), *err_short = malloc(ERR_SHORT);
    struct delay_spec spec, sentinel, spec2;
    uint64_t us = 0, us_sentinel = 0xdeadbeefcafef00dULL;
    uint64_t h = 14695981039346656037ULL;
    int rc, rc2, drc;

    REQUIRE(s && err && err_short);
    memcpy(s, data, size);
    s[size] = '\0';
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;

    /* delay_duration_parse */
    us = us_sentinel;
    drc = delay_duration_parse(s, &us);
    REQUIRE(drc == 0 || drc == -EINVAL || drc == -ERANGE);
    if (drc == 0) {
        REQUIRE(us <= DELAY_DURATION_MAX_US);
        check_format(us);
    } else {
        REQUIRE(us == us_sentinel);
    }

    /* delay_spec_parse, long and short error buffers */
    memset(&sentinel, 0xa5, sizeof sentinel);
    memcpy(&spec, &sentinel, sizeof spec);
    memcpy(&spec2, &sentinel, sizeof spec2);
    memset(err, 'E', ERR_LONG);
    memset(err_short, 'E', ERR_SHORT);
    rc = delay_spec_parse(&spec, s, err, ERR_LONG);
    rc2 = delay_spec_parse(&spec2, s, err_short, ERR_SHORT);
    REQUIRE(rc == rc2);
    REQUIRE(rc == 0 || rc == -EINVAL || rc == -ERANGE);
    if (rc != 0) {
        REQUIRE(memcmp(&spec, &sentinel, sizeof spec) == 0);
        REQUIRE(memcmp(&spec2, &sentinel, sizeof spec2) == 0);
        check_error(rc, err, ERR_LONG);
        check_error(rc2, err_short, ERR_SHORT);
        REQUIRE(strncmp(err, err_short, strlen(err_short)) == 0);
    } else {
        REQUIRE(same_spec(&spec, &spec2));
        check_spec(&spec);
        check_draws(&spec, h);
    }

    /* A text that is neither a range nor has a ':' or '=' is a plain duration. */
    if (!strchr(s, ':') && !strstr(s, "..") && !strchr(s, '=')) {
        REQUIRE((rc == 0) == (drc == 0));
        if (rc == 0)
            REQUIRE(spec.kind == DELAY_FIXED && spec.a_us == us);
        else
            REQUIRE(rc == drc);
    }

    free(s);
    free(err);
    free(err_short);
    return 0;
}
