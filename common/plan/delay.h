/*
 * delay: delay specs (fixed durations and random distributions) and reproducible draws.
 *
 * A spec is parsed once (from --delay, the config file or a per-request override) into a
 * struct delay_spec, which is plain data: copy it freely, share it read-only between threads.
 * Draws are pure functions of (spec, seed, stream, index), so request number i of a route gets
 * the same delay on every run, in every thread model and on both engines.
 *
 * Accepted forms (times take a unit us, ms, s, m or h; a bare number is milliseconds):
 *   1000, 1s, 250ms, 1.5s, 800us      fixed
 *   800ms..1200ms                     uniform between the bounds, inclusive
 *   normal:1s,50ms                    normal (mean, standard deviation), truncated at 0
 *   lognormal:1s,0.25                 log-normal (median, sigma)
 *   10ms:90,1s:9,5s:1                 weighted mix in percent; the remainder is 0 ms
 *   p50=20ms,p90=80ms,p99=400ms,max=2s  percentiles (below)
 *
 * Percentiles: `[min=D,]pNN=D[,pNN=D...][,max=D]`, comma-separated, no spaces: "a fraction NN %
 * of draws is at most D". NN is above 0 and below 100 (else -ERANGE), with at most four
 * decimals (p99.9, p99.99); 1 to DELAY_PCT_MAX points, their NN strictly increasing in the order
 * given and their durations never decreasing. min= (the 0th percentile) may only come first,
 * max= (the 100th) only last. A draw takes u uniform in [0, 1) (the top 53 bits of
 * delay_random()) and evaluates the quantile function through the points:
 *   - between two points (q_i, v_i), (q_j, v_j) it interpolates in log space,
 *     v = exp(ln v_i + (u - q_i) / (q_j - q_i) * (ln v_j - ln v_i)). Latencies are roughly
 *     log-normal, whose quantiles are spread geometrically: p50=20ms,p90=80ms puts p70 at 40 ms,
 *     the geometric mean, near the 35 ms of the log-normal through those two points; linear
 *     interpolation would put it at 50 ms and make every segment's upper half too slow;
 *   - a segment with a 0 ms end (ln 0 is undefined) is linear instead;
 *   - without min=, the 0th percentile is 0 ms, so the first segment is linear from 0: nothing
 *     is invented below the first point; give min= for a realistic fast end (min=5ms);
 *   - without max=, the last segment's slope (in log space, or linear if it starts at 0 ms) goes
 *     on to the 100th percentile, and that end bounds the draws: p90=80ms,p99=400ms ends at
 *     478.325 ms, p50=20ms alone at 40 ms. Capping at the last value instead would pile the
 *     remaining draws (1 % after p99) on exactly 400 ms, a spike no real service shows. An end
 *     past DELAY_DURATION_MAX_US is refused (-ERANGE): give max= then.
 * The given points are exact quantiles of the draws, and no value is drawn more often than its
 * neighbours unless two points have the same value.
 */
#ifndef SLOWSRV_DELAY_H
#define SLOWSRV_DELAY_H

#include <stddef.h>
#include <stdint.h>

/* Longest duration any spec may name: one day. Longer values are refused, not clamped. */
#define DELAY_DURATION_MAX_US (24ULL * 3600 * 1000000)

/* Most entries in a weighted mix. */
#define DELAY_MIX_MAX 16

/* Most pNN= points in a percentile spec (min= and max= not counted). */
#define DELAY_PCT_MAX 16

/* A percentile's rank in millionths: p99.9 is 999000, min= 0, max= 1000000. */
#define DELAY_PCT_RANK_MAX 1000000U

enum delay_kind {
    DELAY_FIXED = 0,
    DELAY_UNIFORM,
    DELAY_NORMAL,
    DELAY_LOGNORMAL,
    DELAY_MIX,
    DELAY_PERCENTILES,
};

struct delay_mix_entry {
    uint64_t us;
    unsigned percent;
};

/* One point of the quantile function: a fraction `rank` / DELAY_PCT_RANK_MAX of draws is at
 * most `us`. */
struct delay_pct_point {
    uint64_t us;
    uint32_t rank;
};

struct delay_spec {
    enum delay_kind kind;
    uint64_t a_us; /* fixed value; uniform low bound; normal mean; log-normal median */
    uint64_t b_us; /* uniform high bound; normal standard deviation */
    double sigma;  /* log-normal shape */
    size_t nmix;   /* entries used in mix[] */
    struct delay_mix_entry mix[DELAY_MIX_MAX];
    /* Percentiles: npct points in pct[], ranks strictly increasing from 0 (min=, or 0 ms) to
     * DELAY_PCT_RANK_MAX (max=, or the extrapolated end), values non-decreasing. */
    size_t npct;
    struct delay_pct_point pct[DELAY_PCT_MAX + 2];
};

/* Parses a duration ("1.5s", "250ms", "800us", "2m", "1h", or bare "1000" ms) into *us.
 * Returns 0; -EINVAL for a malformed value, an unknown unit or a fraction finer than 1 us;
 * -ERANGE above DELAY_DURATION_MAX_US. */
int delay_duration_parse(const char *s, uint64_t *us);

/* Parses a delay spec (see the forms above) into *out. On failure returns -EINVAL or -ERANGE
 * and writes a one-phrase reason ("unknown unit 'sec' in '1sec'") into err (errlen bytes).
 * *out is only written on success. */
int delay_spec_parse(struct delay_spec *out, const char *s, char *err, size_t errlen);

/* Sets *out to the fixed delay `us`. */
void delay_spec_fixed(struct delay_spec *out, uint64_t us);

/* Returns 1 if every draw of the spec is the same value (a fixed delay), else 0. */
int delay_spec_is_fixed(const struct delay_spec *spec);

/* Returns the largest value a draw can take (for percentiles: max=, or where the last segment
 * ends), or UINT64_MAX for the unbounded distributions (normal, log-normal). */
uint64_t delay_spec_max_us(const struct delay_spec *spec);

/* Draws the delay of request `index` in stream `stream` (a route's id) under `seed`, in
 * microseconds. Pure: the same arguments always give the same value. Thread-safe. */
uint64_t delay_spec_draw(const struct delay_spec *spec, uint64_t seed, uint64_t stream,
                         uint64_t index);

/* Writes a duration as milliseconds for humans and headers: "1000", "0.8", "1.5". Returns the
 * length written (always NUL-terminated; len >= 24 is always enough). */
size_t delay_format_ms(uint64_t us, char *buf, size_t len);

/* Writes spec as delay_spec_parse reads it back ("1000ms", "normal:1000ms,50ms"). Returns the
 * length written (always NUL-terminated; 512 bytes hold every spec). */
size_t delay_spec_format(const struct delay_spec *spec, char *buf, size_t len);

/* A slow body: sent in `chunks` pieces spread over `over_us` (?drip=, a route's "drip"). */
struct delay_drip {
    unsigned chunks; /* 0: no drip */
    uint64_t over_us;
};

/* Most chunks a drip may have. */
#define DELAY_DRIP_CHUNKS_MAX 100000

/* Parses "N,DURATION" (N chunks over DURATION, e.g. "10,2s"; a bare "N" is N chunks over 0 s)
 * into *out. Returns 0, or -EINVAL/-ERANGE with a one-phrase reason in err (errlen bytes). */
int delay_drip_parse(struct delay_drip *out, const char *s, char *err, size_t errlen);

/* Returns a uniform 64-bit value that depends only on (seed, stream, index): the counter-based
 * generator behind every random decision of the core. */
uint64_t delay_random(uint64_t seed, uint64_t stream, uint64_t index);

/* For the comma-separated grammars of the route keys that take delay specs (stream.h, ws.h):
 * reads len bytes of decimal digits at s into *v, at most max. Returns 0, or -EINVAL (empty, not
 * digits, over 20 of them) or -ERANGE. */
int delay_list_uint(const char *s, size_t len, uint64_t max, uint64_t *v);

/* 1 if s starts with one of the n keys ("count=", ...): where a spec that holds commas ends. */
int delay_list_at_key(const char *s, const char *const *keys, size_t n);

#endif
