/* Unit tests for plan/ws.c (the websocket route key: grammar, draws) and the framing path of the
 * socket loop (run/wsloop.c, wsloop_feed): echo, fragments, the RFC's closes, the budget. */
#include <stdio.h>
#include <string.h>

#include "plan/ws.h"
#include "run/wsloop.h"

#include "check.h"

static void ws_parses_every_key_and_defaults(void)
{
    struct ws_spec s;
    char err[300], buf[1200];
    CHECK_INT(ws_spec_parse(&s, "echo", err, sizeof err), 0);
    CHECK_INT(s.on, 1);
    CHECK_U64(s.delay.a_us, 0);
    CHECK_INT(s.push, 0);
    CHECK_INT(s.limit, WS_LIMIT_DEFAULT);
    CHECK_INT(s.close_code, 0);
    CHECK_INT(ws_spec_parse(&s,
                            "echo,delay=p50=20ms,p99=400ms,push=5,size=32,every=100ms,close=4000,"
                            "after=3,limit=4096",
                            err, sizeof err),
              0);
    CHECK_INT(s.delay.kind, DELAY_PERCENTILES);
    CHECK_INT(s.push, 5);
    CHECK_INT(s.size, 32);
    CHECK_U64(s.every.a_us, 100000);
    CHECK_INT(s.close_code, 4000);
    CHECK_INT(s.close_after_n, 3);
    CHECK_INT(s.limit, 4096);
    CHECK_INT(ws_spec_parse(&s, "echo,close=1001,after=2.5s", err, sizeof err), 0);
    CHECK_INT(s.close_after_n, 0);
    CHECK_U64(s.close_after_us, 2500000);
    ws_spec_format(&s, buf, sizeof buf);
    CHECK_STR(buf, "echo,delay=0ms,close=1001,after=2500ms,limit=1048576");
    struct ws_spec back;
    CHECK_INT(ws_spec_parse(&back, buf, err, sizeof err), 0);
    CHECK_U64(back.close_after_us, 2500000);
    CHECK_INT(ws_spec_parse(&s, "none", err, sizeof err), 0);
    CHECK_INT(s.on, 0);
}

static void ws_refuses_bad_values_with_their_reason(void)
{
    static const struct {
        const char *in;
        const char *err;
    } cases[] = {
        {"chat", "bad websocket kind 'chat' (want echo[,delay=D][,push=N,size=B,every=D][,close="
                 "CODE,after=N|DURATION][,limit=B])"},
        {"echo,color=red", "unknown websocket key 'color=red' (want echo[,delay=D][,push=N,size=B,"
                           "every=D][,close=CODE,after=N|DURATION][,limit=B])"},
        {"echo,delay=1s,delay=2s", "websocket key 'delay' given twice"},
        {"echo,delay=soon",
         "delay: bad duration 'soon' (want a number with us, ms, s, m or h, e.g. 250ms or 1.5s)"},
        {"echo,push=2000000", "push '2000000' is not a number of messages from 0 to 1000000"},
        {"echo,push=1,size=0", "size '0' is not bytes from 1 to 65536"},
        {"echo,close=1005", "close '1005' is not a code a server sends (1000, 1001, 1003, 1008, "
                            "1011, 3000 to 4999)"},
        {"echo,close=1000,after=0", "after '0' is not 1 to 1000000000 messages"},
        {"echo,close=1000,after=later",
         "after 'later' is not a count of messages or a duration such as 5s"},
        {"echo,after=3", "after needs close=CODE"},
        {"echo,size=3", "size and every need push=N"},
        {"echo,limit=10", "limit '10' is not bytes from 125 to 67108864"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ws_spec s;
        char err[300] = "";
        CHECK(ws_spec_parse(&s, cases[i].in, err, sizeof err) < 0);
        CHECK_STR(err, cases[i].err);
    }
}

static void ws_draws_are_pure_per_socket_and_message(void)
{
    struct ws_spec s;
    char err[200];
    CHECK_INT(ws_spec_parse(&s, "echo,delay=10ms..500ms,push=3,every=1ms..900ms", err, sizeof err),
              0);
    int differ = 0;
    for (uint64_t k = 0; k < 16; k++) {
        uint64_t a = ws_echo_delay_us(&s, 77, k);
        CHECK_U64(a, ws_echo_delay_us(&s, 77, k));
        CHECK(a >= 10000 && a <= 500000);
        differ += a != ws_echo_delay_us(&s, 78, k);
        CHECK(ws_push_gap_us(&s, 77, k) != ws_echo_delay_us(&s, 77, k));
    }
    CHECK(differ >= 14);
}

/* A client's frame: masked unless `unmasked`. Returns its length. */
static size_t frame(unsigned char *out, int fin, int op, const char *payload, size_t n,
                    int unmasked)
{
    static const unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
    size_t at = 0;
    out[at++] = (unsigned char)((fin ? 0x80 : 0) | op);
    unsigned char m = unmasked ? 0 : 0x80;
    if (n < 126) {
        out[at++] = (unsigned char)(m | n);
    } else {
        out[at++] = (unsigned char)(m | 126);
        out[at++] = (unsigned char)(n >> 8);
        out[at++] = (unsigned char)n;
    }
    if (!unmasked) {
        memcpy(out + at, mask, 4);
        at += 4;
    }
    for (size_t i = 0; i < n; i++)
        out[at + i] = (unsigned char)(payload[i] ^ (unmasked ? 0 : mask[i % 4]));
    return at + n;
}

static void ws_framing_echoes_and_closes_as_the_rfc_says(void)
{
    struct ws_spec s;
    char err[200];
    CHECK_INT(ws_spec_parse(&s, "echo,limit=200", err, sizeof err), 0);
    unsigned char buf[4096];
    struct wsloop_feed_result r;
    size_t n;

    /* Text, binary, a fragmented message with a ping between its pieces, then a close. */
    n = frame(buf, 1, 1, "hello", 5, 0);
    n += frame(buf + n, 1, 2, "\x00\x01", 2, 0);
    n += frame(buf + n, 0, 1, "ab", 2, 0);
    n += frame(buf + n, 1, 9, "p", 1, 0);
    n += frame(buf + n, 1, 0, "cd", 2, 0);
    n += frame(buf + n, 1, 8, "\x03\xe8", 2, 0);
    CHECK_INT(wsloop_feed(&s, buf, n, &r), 0);
    CHECK_U64(r.messages_in, 3);
    CHECK_U64(r.messages_out, 3);
    CHECK_INT(r.close, 1000);

    n = frame(buf, 1, 1, "x", 1, 1);
    CHECK_INT(wsloop_feed(&s, buf, n, &r), 0);
    CHECK_INT(r.close, 1002); /* unmasked */

    char big[300];
    memset(big, 'a', sizeof big);
    n = frame(buf, 1, 1, big, sizeof big, 0);
    CHECK_INT(wsloop_feed(&s, buf, n, &r), 0);
    CHECK_INT(r.close, 1009); /* over limit=200 */

    n = frame(buf, 1, 1, "\xff\xfe", 2, 0);
    CHECK_INT(wsloop_feed(&s, buf, n, &r), 0);
    CHECK_INT(r.close, 1007); /* not UTF-8 */

    n = 0;
    for (int i = 0; i < WSLOOP_CONTROL_PER_S + 1; i++)
        n += frame(buf + n, 1, 9, "", 0, 0);
    CHECK_INT(wsloop_feed(&s, buf, n, &r), 0);
    CHECK_INT(r.flood, 1);
    CHECK_INT(r.close, 1008); /* a ping flood */

    n = 0;
    for (int i = 0; i < WSLOOP_CONTROL_PER_S; i++)
        n += frame(buf + n, 1, 9, "", 0, 0);
    CHECK_INT(wsloop_feed(&s, buf, n, &r), 0);
    CHECK_INT(r.flood, 0); /* within the budget */
    CHECK_INT(r.close, 1006);
}

int main(void)
{
    ws_parses_every_key_and_defaults();
    ws_refuses_bad_values_with_their_reason();
    ws_draws_are_pure_per_socket_and_message();
    ws_framing_echoes_and_closes_as_the_rfc_says();
    return CHECK_DONE();
}
