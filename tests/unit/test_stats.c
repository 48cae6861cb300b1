#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/stats.h"
#include "check.h"

static void stats_totals_follow_a_known_sequence(void)
{
    struct stats *st = stats_new(2, 3);
    struct stats_shard *a = stats_shard(st, 0), *b = stats_shard(st, 1);
    struct stats_totals t;
    stats_request_begin(a, 0);
    stats_request_begin(b, 0);
    stats_request_begin(b, 2);
    stats_wait_begin(a, 0);
    stats_totals_get(st, &t);
    CHECK_U64(t.requests, 3);
    CHECK_U64(t.in_flight, 3);
    CHECK_U64(t.waiting, 1);
    stats_wait_end(a, 0);
    stats_request_end(a, 0, 200);
    stats_cancel(b, 0);
    stats_request_end(b, 0, 0);
    stats_request_end(b, 2, 404);
    stats_bytes_in(a, 10);
    stats_bytes_in(b, 5);
    stats_totals_get(st, &t);
    CHECK_U64(t.in_flight, 0);
    CHECK_U64(t.waiting, 0);
    CHECK_U64(t.answered, 2);
    CHECK_U64(t.cancels, 1);
    CHECK_U64(t.bytes_in, 15);
    CHECK_U64(stats_route_requests(st, 0), 2);
    CHECK_U64(stats_route_status(st, 0, 200), 1);
    CHECK_U64(stats_route_status(st, 0, 0), 1);
    CHECK_U64(stats_route_status(st, 2, 404), 1);
    CHECK_U64(stats_route_status(st, 2, 700), 0);
    stats_free(st);
}

static void stats_uncounted_routes_leave_no_trace(void)
{
    struct stats *st = stats_new(1, 1);
    struct stats_totals t;
    stats_request_begin(stats_shard(st, 0), STATS_UNCOUNTED);
    stats_request_end(stats_shard(st, 0), STATS_UNCOUNTED, 200);
    stats_cancel(stats_shard(st, 0), STATS_UNCOUNTED);
    stats_totals_get(st, &t);
    CHECK_U64(t.requests, 0);
    CHECK_U64(t.answered, 0);
    CHECK_U64(t.cancels, 0);
    stats_free(st);
}

struct worker {
    struct stats_shard *sh;
};

static void *hammer(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 100000; i++) {
        stats_request_begin(w->sh, 1);
        stats_request_end(w->sh, 1, 200);
    }
    return NULL;
}

static void stats_shards_sum_exactly_across_threads(void)
{
    struct stats *st = stats_new(2, 2);
    pthread_t th[4];
    struct worker w[4];
    /* Four writers on two shards: shared shards must stay exact too. */
    for (size_t i = 0; i < 4; i++) {
        w[i].sh = stats_shard(st, i);
        pthread_create(&th[i], NULL, hammer, &w[i]);
    }
    for (size_t i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK_U64(stats_route_requests(st, 1), 400000);
    CHECK_U64(stats_route_status(st, 1, 200), 400000);
    stats_free(st);
}

static void stats_json_names_routes_and_statuses(void)
{
    struct stats *st = stats_new(1, 2);
    const char *names[] = {"/test", "other"};
    stats_request_begin(stats_shard(st, 0), 1);
    stats_request_end(stats_shard(st, 0), 1, 404);
    struct pool_counts pc = {200, 3, 2, 9};
    struct stats_conns cc = {7, 100, 2, 1.25};
    char *json = stats_to_json(st, names, 2, 1.5, &pc, &cc);
    cJSON *j = cJSON_Parse(json);
    CHECK(j != NULL);
    cJSON *routes = cJSON_GetObjectItem(j, "routes");
    cJSON *other = cJSON_GetObjectItem(routes, "other");
    CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(other, "status"), "404")->valueint, 1);
    CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(routes, "/test"), "requests")->valueint, 0);
    CHECK(cJSON_GetObjectItem(j, "uptime_s")->valuedouble == 1.5);
    cJSON *c = cJSON_GetObjectItem(j, "connections");
    CHECK_INT(cJSON_GetObjectItem(c, "open")->valueint, 7);
    CHECK_INT(cJSON_GetObjectItem(c, "max")->valueint, 100);
    CHECK_INT(cJSON_GetObjectItem(c, "limit_reached")->valueint, 2);
    CHECK(cJSON_GetObjectItem(c, "limit_seconds")->valuedouble == 1.25);
    cJSON *w = cJSON_GetObjectItem(j, "workers");
    CHECK_INT(cJSON_GetObjectItem(w, "size")->valueint, 200);
    CHECK_INT(cJSON_GetObjectItem(w, "active")->valueint, 3);
    CHECK_INT(cJSON_GetObjectItem(w, "queued")->valueint, 2);
    CHECK_INT(cJSON_GetObjectItem(w, "rejected")->valueint, 9);
    cJSON_Delete(j);
    free(json);
    stats_free(st);
}

static void stats_histograms_place_observations_by_bound(void)
{
    struct stats *st = stats_new(2, 1);
    const char *names[] = {"/test"};
    stats_observe(stats_shard(st, 0), 0, STATS_HIST_INTENDED, 100);      /* le 0.0001 */
    stats_observe(stats_shard(st, 1), 0, STATS_HIST_INTENDED, 101);      /* le 0.00025 */
    stats_observe(stats_shard(st, 0), 0, STATS_HIST_INTENDED, 1000000);  /* le 1 */
    stats_observe(stats_shard(st, 0), 0, STATS_HIST_INTENDED, 90000000); /* +Inf only */
    stats_observe(stats_shard(st, 0), STATS_UNCOUNTED, STATS_HIST_INTENDED, 5);
    /* The overshoot's bounds: 10 µs steps up to 100 µs, then 0.25 ms up to 1 s (le printed
     * with %g, as Prometheus' Go client prints them: 1e-05). */
    static const uint64_t over_us[] = {10, 11, 20, 95, 100, 101, 999999, 1000001};
    for (size_t i = 0; i < sizeof over_us / sizeof over_us[0]; i++)
        stats_observe(stats_shard(st, i % 2), 0, STATS_HIST_OVERSHOOT, over_us[i]);
    char *text = stats_to_prometheus(st, names, 1, 2.0, NULL, NULL);
    CHECK(text != NULL);
    static const char *const want[] = {
        "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"0.0001\"} 1\n",
        "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"0.00025\"} 2\n",
        "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"0.5\"} 2\n",
        "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"1\"} 3\n",
        "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"60\"} 3\n",
        "slowsrv_delay_intended_seconds_bucket{route=\"/test\",le=\"+Inf\"} 4\n",
        "slowsrv_delay_intended_seconds_count{route=\"/test\"} 4\n",
        "slowsrv_delay_intended_seconds_sum{route=\"/test\"} 91.000201\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"1e-05\"} 1\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"2e-05\"} 3\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"9e-05\"} 3\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"0.0001\"} 5\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"0.00025\"} 6\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"0.5\"} 6\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"1\"} 7\n",
        "slowsrv_delay_overshoot_seconds_bucket{route=\"/test\",le=\"+Inf\"} 8\n",
        "slowsrv_delay_overshoot_seconds_count{route=\"/test\"} 8\n",
        "# TYPE slowsrv_service_seconds histogram\n",
        "slowsrv_uptime_seconds 2.000\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!text || !strstr(text, want[i]))
            CHECK_FAIL_("missing line: %s", want[i]);
        else
            check_passed++;
    }
    CHECK(text && strstr(text, "slowsrv_workers") == NULL);
    /* 67 histogram series a route: 18 bounds, +Inf, _sum and _count for the intended delay and
     * the service time, 22 bounds and the same three for the overshoot. */
    size_t series = 0;
    for (const char *l = text; l && (l = strstr(l, "\nslowsrv_")); l++)
        if (strncmp(l, "\nslowsrv_delay_", 15) == 0 || strncmp(l, "\nslowsrv_service_", 17) == 0)
            series += strstr(l, "{route=\"/test\"") < strchr(l + 1, '\n') &&
                      strstr(l, "{route=\"/test\"") != NULL;
    CHECK_INT(series, 67);
    free(text);
    stats_free(st);
}

/* The buckets follow each other without a gap, and every value from 0 to 2^38 µs falls in one
 * whose middle is within STATS_PRECISION (under 1 %) of it. */
static void stats_buckets_hold_every_value_to_one_percent(void)
{
    for (size_t b = 0; b + 1 < STATS_BUCKETS; b++)
        if (stats_bucket_low(b) + stats_bucket_width(b) != stats_bucket_low(b + 1))
            CHECK_FAIL_("bucket %zu ends at %llu, bucket %zu starts at %llu", b,
                        (unsigned long long)(stats_bucket_low(b) + stats_bucket_width(b)), b + 1,
                        (unsigned long long)stats_bucket_low(b + 1));
    CHECK(STATS_PRECISION < 0.01);
    double worst = 0;
    uint64_t v = 0;
    for (; v < (1ULL << 38); v = v < 200000 ? v + 1 : v + v / 997 + 1) {
        size_t b = stats_bucket_of(v);
        uint64_t lo = stats_bucket_low(b), w = stats_bucket_width(b), mid = lo + (w - 1) / 2;
        if (v < lo || v >= lo + w) {
            CHECK_FAIL_("%llu µs in bucket %zu [%llu, %llu)", (unsigned long long)v, b,
                        (unsigned long long)lo, (unsigned long long)(lo + w));
            break;
        }
        double err = v ? (mid > v ? (double)(mid - v) : (double)(v - mid)) / (double)v : 0;
        worst = err > worst ? err : worst;
    }
    CHECK(worst <= STATS_PRECISION);
    CHECK_INT(stats_bucket_of(UINT64_MAX), STATS_BUCKETS - 1);
    CHECK_INT(stats_bucket_of(127), 127);
    CHECK_INT(stats_bucket_low(stats_bucket_of(128)), 128);
}

/* /stats reads percentiles to 1 % and the largest value exactly: 1..1000 ms, one each. */
static void stats_json_reads_percentiles_to_one_percent(void)
{
    struct stats *st = stats_new(2, 1);
    const char *names[] = {"/test"};
    for (uint64_t ms = 1; ms <= 1000; ms++)
        stats_observe(stats_shard(st, ms % 2), 0, STATS_HIST_SERVICE, ms * 1000);
    char *json = stats_to_json(st, names, 1, 1.0, NULL, NULL);
    cJSON *j = cJSON_Parse(json);
    const cJSON *h = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(j, "routes"), "/test"), "service_ms");
    static const struct {
        const char *name;
        double want;
    } qs[] = {{"p50", 500}, {"p90", 900}, {"p99", 990}, {"p99_9", 999}, {"p99_99", 1000}};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        double got = cJSON_GetNumberValue(cJSON_GetObjectItem(h, qs[i].name));
        if (got < qs[i].want * 0.99 || got > qs[i].want * 1.01)
            CHECK_FAIL_("%s: %.3f ms, want %.0f ms within 1 %%", qs[i].name, got, qs[i].want);
        else
            check_passed++;
    }
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(h, "max")) == 1000);
    CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(h, "count")), 1000);
    /* One [lowest, count] pair per bucket that holds a value. */
    size_t buckets = 0;
    for (uint64_t ms = 1; ms <= 1000; ms++)
        buckets += ms == 1 || stats_bucket_of(ms * 1000) != stats_bucket_of((ms - 1) * 1000);
    CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(h, "dist")), (long long)buckets);
    cJSON_Delete(j);
    free(json);
    /* After a reset the largest is that of the new run. */
    stats_reset(st, 1.0);
    stats_observe(stats_shard(st, 0), 0, STATS_HIST_SERVICE, 7000);
    json = stats_to_json(st, names, 1, 1.0, NULL, NULL);
    j = cJSON_Parse(json);
    h = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "routes"), "/test"),
                            "service_ms");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(h, "max")) == 7);
    CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(h, "count")), 1);
    cJSON_Delete(j);
    free(json);
    stats_free(st);
}

static void stats_prometheus_escapes_route_labels(void)
{
    struct stats *st = stats_new(1, 1);
    const char *names[] = {"/a\"b\\c\nd"};
    stats_request_begin(stats_shard(st, 0), 0);
    stats_request_end(stats_shard(st, 0), 0, 200);
    char *text = stats_to_prometheus(st, names, 1, 1.0, NULL, NULL);
    CHECK(text && strstr(text, "slowsrv_requests_total{route=\"/a\\\"b\\\\c\\nd\",status=\"200\"} "
                               "1\n"));
    free(text);
    stats_free(st);
}

/* A fault or a cancel on a route counts for that route only, in the totals, in /stats' JSON
 * (totals and per-route "faults"/"cancels") and in /metrics (slowsrv_faults_total and
 * slowsrv_cancels_total by route). */
static void stats_faults_and_cancels_count_per_route_in_every_report(void)
{
    struct stats *st = stats_new(2, 3);
    const char *names[] = {"/test", "/echo", "other"};
    struct stats_totals t;
    stats_fault(stats_shard(st, 0), 1);
    stats_fault(stats_shard(st, 1), 1);
    stats_fault(stats_shard(st, 0), 2);
    stats_fault(stats_shard(st, 0), STATS_UNCOUNTED);
    stats_cancel(stats_shard(st, 1), 0);
    stats_cancel(stats_shard(st, 0), 2);
    stats_cancel(stats_shard(st, 1), 2);
    stats_totals_get(st, &t);
    CHECK_U64(t.faults, 3);
    CHECK_U64(t.cancels, 3);

    static const struct {
        const char *route;
        int faults, cancels;
    } want[] = {{"/test", 0, 1}, {"/echo", 2, 0}, {"other", 1, 2}};
    char *json = stats_to_json(st, names, 3, 1.0, NULL, NULL);
    cJSON *j = cJSON_Parse(json);
    CHECK(j != NULL);
    cJSON *faults = cJSON_GetObjectItem(j, "faults"), *cancels = cJSON_GetObjectItem(j, "cancels");
    CHECK_INT(cJSON_IsNumber(faults) ? faults->valueint : -1, 3);
    CHECK_INT(cJSON_IsNumber(cancels) ? cancels->valueint : -1, 3);
    cJSON *routes = cJSON_GetObjectItem(j, "routes");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cJSON *r = cJSON_GetObjectItem(routes, want[i].route);
        cJSON *f = cJSON_GetObjectItem(r, "faults"), *c = cJSON_GetObjectItem(r, "cancels");
        if (!cJSON_IsNumber(f) || f->valueint != want[i].faults)
            CHECK_FAIL_("%s: JSON faults %d, want %d", want[i].route,
                        cJSON_IsNumber(f) ? f->valueint : -1, want[i].faults);
        else
            check_passed++;
        if (!cJSON_IsNumber(c) || c->valueint != want[i].cancels)
            CHECK_FAIL_("%s: JSON cancels %d, want %d", want[i].route,
                        cJSON_IsNumber(c) ? c->valueint : -1, want[i].cancels);
        else
            check_passed++;
    }
    cJSON_Delete(j);
    free(json);

    char *text = stats_to_prometheus(st, names, 3, 1.0, NULL, NULL);
    CHECK(text != NULL);
    static const char *const lines[] = {
        "# TYPE slowsrv_faults_total counter\n",      "slowsrv_faults_total{route=\"/test\"} 0\n",
        "slowsrv_faults_total{route=\"/echo\"} 2\n",  "slowsrv_faults_total{route=\"other\"} 1\n",
        "# TYPE slowsrv_cancels_total counter\n",     "slowsrv_cancels_total{route=\"/test\"} 1\n",
        "slowsrv_cancels_total{route=\"/echo\"} 0\n", "slowsrv_cancels_total{route=\"other\"} 2\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        if (!text || !strstr(text, lines[i]))
            CHECK_FAIL_("missing line: %s", lines[i]);
        else
            check_passed++;
    }
    free(text);
    stats_free(st);
}

int main(void)
{
    stats_buckets_hold_every_value_to_one_percent();
    stats_json_reads_percentiles_to_one_percent();
    stats_histograms_place_observations_by_bound();
    stats_prometheus_escapes_route_labels();
    stats_totals_follow_a_known_sequence();
    stats_uncounted_routes_leave_no_trace();
    stats_shards_sum_exactly_across_threads();
    stats_json_names_routes_and_statuses();
    stats_faults_and_cancels_count_per_route_in_every_report();
    return CHECK_DONE();
}
