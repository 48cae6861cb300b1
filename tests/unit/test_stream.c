/* Unit tests for plan/stream.c: the grammar, the draws, the events, and a stream's plan
 * (route_plan with ?stream=, the header, a route's key and Last-Event-ID). */
#include <string.h>
#include <strings.h>

#include "plan/route.h"
#include "plan/stream.h"

#include "check.h"

static void stream_parses_every_key_and_defaults(void)
{
    struct stream_spec s;
    char err[200];
    CHECK_INT(stream_spec_parse(&s, "sse", err, sizeof err), 0);
    CHECK_INT(s.format, STREAM_SSE);
    CHECK_INT(s.count, 0);
    CHECK_INT(s.size_lo, STREAM_SIZE_DEFAULT);
    CHECK_INT(s.size_hi, STREAM_SIZE_DEFAULT);
    CHECK_STR(s.event, "tick");
    CHECK_INT(delay_spec_is_fixed(&s.gap), 1);
    CHECK_U64(s.gap.a_us, 1000000);
    CHECK_INT(stream_spec_parse(&s, "ndjson,count=10,size=4..64,retry=3000,event=tok.1,gap=50ms",
                                err, sizeof err),
              0);
    CHECK_INT(s.format, STREAM_NDJSON);
    CHECK_INT(s.count, 10);
    CHECK_INT(s.size_lo, 4);
    CHECK_INT(s.size_hi, 64);
    CHECK_INT(s.retry_ms, 3000);
    CHECK_STR(s.event, "tok.1");
    CHECK_U64(s.gap.a_us, 50000);
    /* A gap's own commas are its own, up to the next key, wherever it stands. */
    CHECK_INT(stream_spec_parse(&s, "sse,gap=p50=20ms,p90=80ms,count=3", err, sizeof err), 0);
    CHECK_INT(s.gap.kind, DELAY_PERCENTILES);
    CHECK_INT(s.count, 3);
    CHECK_INT(stream_spec_parse(&s, "sse,gap=10ms:90,1s:10", err, sizeof err), 0);
    CHECK_INT(s.gap.kind, DELAY_MIX);
    CHECK_INT(stream_spec_parse(&s, "none", err, sizeof err), 0);
    CHECK_INT(s.format, STREAM_NONE);
    char buf[640];
    CHECK_INT(stream_spec_parse(&s, "sse,count=2,size=1..9,gap=normal:1s,50ms", err, sizeof err),
              0);
    stream_spec_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "sse,count=2,size=1..9,retry=0,event=tick,gap=normal:1000ms,50ms");
    struct stream_spec back;
    CHECK_INT(stream_spec_parse(&back, buf, err, sizeof err), 0);
    CHECK_INT(back.size_hi, 9);
    CHECK_INT(back.gap.kind, DELAY_NORMAL);
}

static void stream_refuses_bad_values_with_their_reason(void)
{
    static const struct {
        const char *in;
        const char *err;
    } cases[] = {
        {"", "bad stream format '' (want "
             "sse|ndjson[,count=N][,size=B][,retry=MS][,event=NAME][,gap=D])"},
        {"sse,count=1000001", "count '1000001' is not a number of events from 0 to 1000000"},
        {"sse,count=", "count '' is not a number of events from 0 to 1000000"},
        {"sse,size=65537", "size '65537' is not BYTES or LO..HI from 0 to 65536"},
        {"sse,size=5..", "size '5..' is not BYTES or LO..HI from 0 to 65536"},
        {"sse,retry=-5", "retry '-5' is not milliseconds from 0 to 86400000"},
        {"sse,event=", "event name is 1 to 32 of A-Z a-z 0-9 _ . -, not ''"},
        {"sse,event=a:b", "event name is 1 to 32 of A-Z a-z 0-9 _ . -, not 'a:b'"},
        {"sse,gap=1sec",
         "gap: bad duration '1sec' (want a number with us, ms, s, m or h, e.g. 250ms or 1.5s)"},
        {"sse,,count=1", "unknown stream key '' (want "
                         "sse|ndjson[,count=N][,size=B][,retry=MS][,event=NAME][,gap=D])"},
        {"sse,size=1,size=2", "stream key 'size' given twice"},
        {"none,count=1", "bad stream format 'none' (want "
                         "sse|ndjson[,count=N][,size=B][,retry=MS][,event=NAME][,gap=D])"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct stream_spec s = {.format = STREAM_SSE, .count = 77};
        char err[200] = "";
        CHECK(stream_spec_parse(&s, cases[i].in, err, sizeof err) < 0);
        CHECK_STR(err, cases[i].err);
        CHECK_INT(s.count, 77); /* untouched */
    }
}

static void stream_draws_are_pure_per_request_and_event(void)
{
    struct stream_spec s;
    char err[200];
    CHECK_INT(stream_spec_parse(&s, "sse,size=1..1000,gap=1ms..1s", err, sizeof err), 0);
    uint64_t k0 = stream_key(7, 3, 0), k1 = stream_key(7, 3, 1);
    CHECK(k0 != k1);
    CHECK_U64(stream_key(7, 3, 0), k0);
    int differ = 0;
    for (uint64_t id = 1; id <= 20; id++) {
        uint64_t g = stream_gap_us(&s, k0, id);
        size_t z = stream_size(&s, k0, id);
        CHECK(g >= 1000 && g <= 1000000);
        CHECK(z >= 1 && z <= 1000);
        CHECK_U64(stream_gap_us(&s, k0, id), g);
        CHECK_INT(stream_size(&s, k0, id), z);
        differ += stream_gap_us(&s, k1, id) != g;
    }
    CHECK(differ >= 18);
    CHECK(stream_gap_us(&s, k0, 1) != stream_gap_us(&s, k0, 2));
}

static void stream_events_carry_their_fields_and_times(void)
{
    struct stream_spec s;
    char err[200], buf[256];
    CHECK_INT(stream_spec_parse(&s, "sse,retry=2000,event=tok", err, sizeof err), 0);
    size_t n = stream_event_format(&s, 3, 200000, 200131, 5, 1, buf, sizeof buf);
    buf[n] = '\0';
    CHECK_STR(buf, "id: 3\nevent: tok\nretry: 2000\n: intended_us=200000 sent_us=200131\n"
                   "data: abcde\n\n");
    n = stream_event_format(&s, 4, 300000, 300002, 0, 0, buf, sizeof buf);
    buf[n] = '\0';
    CHECK_STR(buf, "id: 4\nevent: tok\n: intended_us=300000 sent_us=300002\ndata: \n\n");
    CHECK_INT(stream_spec_parse(&s, "ndjson", err, sizeof err), 0);
    n = stream_event_format(&s, 1, 0, 64, 3, 1, buf, sizeof buf);
    buf[n] = '\0';
    CHECK_STR(buf, "{\"id\":1,\"intended_us\":0,\"sent_us\":64,\"data\":\"abc\"}\n");
    CHECK_INT(stream_event_format(&s, 1, 0, 64, 250, 1, buf, sizeof buf), 0); /* no room */
    CHECK_STR(stream_content_type(STREAM_SSE), "text/event-stream");
    CHECK_STR(stream_content_type(STREAM_NDJSON), "application/x-ndjson");
    uint64_t id = 0;
    CHECK_INT(stream_last_id_parse("42", &id), 0);
    CHECK_U64(id, 42);
    CHECK_INT(stream_last_id_parse("", &id), -22);
    CHECK_INT(stream_last_id_parse("4x", &id), -22);
    CHECK_INT(stream_last_id_parse("-1", &id), -22);
}

static const char *const *test_headers;

static long lookup(void *ctx, const char *name, char *buf, size_t len)
{
    (void)ctx;
    for (size_t i = 0; test_headers && test_headers[i]; i++) {
        size_t n = strlen(name);
        if (strncasecmp(test_headers[i], name, n) == 0 && test_headers[i][n] == ':')
            return route_value_copy(test_headers[i] + n + 1, strlen(test_headers[i] + n + 1), buf,
                                    len);
    }
    return -1;
}

static void plan(struct route_table *t, const char *method, const char *target,
                 const char *const *headers, struct stream_spec *room, struct plan *p)
{
    test_headers = headers;
    struct route_request rq = {.method = method,
                               .target = target,
                               .target_len = strlen(target),
                               .lookup = lookup,
                               .stream_room = room};
    route_plan(t, &rq, p);
}

static void stream_plans_override_route_and_last_event_id(void)
{
    struct config cfg = config_defaults;
    char path[] = "/events";
    struct config_route routes[1] = {{.path = path, .status = 200}};
    char err[200];
    CHECK_INT(stream_spec_parse(&routes[0].stream, "ndjson,count=4,gap=10ms", err, sizeof err), 0);
    cfg.routes = routes;
    cfg.nroutes = 1;
    cfg.seed = 7;
    struct route_table t;
    CHECK_INT(route_table_init(&t, &cfg), 0);
    struct stream_spec room;
    struct plan p;

    plan(&t, "GET", "/echo?stream=sse,count=3,gap=100ms", NULL, &room, &p);
    CHECK_INT(p.status, 200);
    CHECK(p.stream == &room);
    CHECK_INT(p.stream->count, 3);
    CHECK_STR(p.content_type, "text/event-stream");
    CHECK_INT(p.body_len, 0);
    CHECK_INT(p.cacheable, 0);
    CHECK_U64(p.stream_first, 1);
    CHECK_U64(p.stream_until_us, cfg.max_delay_us);
    uint64_t key0 = p.stream_key;
    /* The next request of the route draws with its own key. */
    plan(&t, "GET", "/echo?stream=sse,count=3,gap=100ms", NULL, &room, &p);
    CHECK(p.stream_key != key0);

    static const char *const hdr[] = {"X-Slowsrv-Stream: ndjson,count=2", "Last-Event-ID: 1", NULL};
    plan(&t, "GET", "/echo", hdr, &room, &p);
    CHECK_INT(p.stream->format, STREAM_NDJSON);
    CHECK_U64(p.stream_first, 2);
    static const char *const over[] = {"X-Slowsrv-Stream: ndjson,count=2", "Last-Event-ID: 2",
                                       NULL};
    plan(&t, "GET", "/echo", over, &room, &p);
    CHECK_INT(p.status, 204);
    CHECK(p.stream == NULL);
    static const char *const huge[] = {"X-Slowsrv-Stream: ndjson",
                                       "Last-Event-ID: 10000000000000000000", NULL};
    plan(&t, "GET", "/echo", huge, &room, &p);
    CHECK_INT(p.status, 400);
    CHECK_STR(p.body, "{\"error\": \"Last-Event-ID: '10000000000000000000' is not an event "
                      "number from this stream\", \"status\": 400}");

    /* A route's own stream is the table's; HEAD is the head alone. */
    plan(&t, "GET", "/events", NULL, &room, &p);
    CHECK(p.stream == &t.routes[route_find(&t, "/events")].stream);
    CHECK_STR(p.content_type, "application/x-ndjson");
    plan(&t, "HEAD", "/events", NULL, &room, &p);
    CHECK(p.stream == NULL);
    plan(&t, "GET", "/events?stream=none", NULL, &room, &p);
    CHECK(p.stream == NULL);
    CHECK_STR(p.content_type, "text/plain");

    /* Without room for a request's own stream, it is refused. */
    plan(&t, "GET", "/echo?stream=sse", NULL, NULL, &p);
    CHECK_INT(p.status, 400);
    CHECK(p.stream == NULL);
    plan(&t, "GET", "/echo?stream=sse&drip=2,1s&size=10", NULL, &room, &p);
    CHECK_INT(p.status, 400);
    CHECK(p.stream == NULL);
    plan(&t, "GET", "/echo?stream=sse,gap=2m", NULL, &room, &p);
    CHECK_INT(p.status, 400);
    CHECK_STR(p.body, "{\"error\": \"stream: gap 120000 ms is over --max-delay 60000 ms\", "
                      "\"status\": 400}");
    route_table_cleanup(&t);
}

int main(void)
{
    stream_parses_every_key_and_defaults();
    stream_refuses_bad_values_with_their_reason();
    stream_draws_are_pure_per_request_and_event();
    stream_events_carry_their_fields_and_times();
    stream_plans_override_route_and_last_event_id();
    return CHECK_DONE();
}
