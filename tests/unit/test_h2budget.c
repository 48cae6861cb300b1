#include "http/h2budget.h"

#include <string.h>

#include "check.h"

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* Appends a frame to buf at *n. */
static void frame(uint8_t *buf, size_t *n, uint8_t type, uint8_t flags, uint32_t stream,
                  const uint8_t *payload, uint32_t len)
{
    uint8_t *p = buf + *n;
    p[0] = (uint8_t)(len >> 16);
    p[1] = (uint8_t)(len >> 8);
    p[2] = (uint8_t)len;
    p[3] = type;
    p[4] = flags;
    for (int k = 0; k < 4; k++)
        p[5 + k] = (uint8_t)(stream >> (24 - 8 * k));
    if (len)
        memcpy(p + 9, payload, len);
    *n += 9 + len;
}

/* Feeds buf[0, n) one byte at a time; returns the first verdict that is not OK, or OK. */
static enum h2budget_verdict bytewise(struct h2budget *b, const uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        enum h2budget_verdict v = h2budget_feed(b, buf + i, 1, 0);
        if (v != H2BUDGET_OK)
            return v;
    }
    return H2BUDGET_OK;
}

/* Each kind of frame that does no work costs a credit: the first past H2BUDGET_CREDITS gets
 * the verdict CALM with that kind, whole or split at every byte, after the preface. */
static void h2budget_calms_every_no_work_kind_past_its_credits(void)
{
    static const uint8_t ping[8], setting[6] = {0, 3, 0, 0, 0, 100}, prio[5] = {0, 0, 0, 0, 16},
                                  rst[4] = {0, 0, 0, 8}, inc[4] = {0, 0, 0, 1};
    static const struct {
        uint8_t type, flags;
        const uint8_t *payload;
        uint32_t len;
        enum stats_h2 kind;
    } kinds[] = {
        {6, 0, ping, 8, STATS_H2_PING},         {4, 0, setting, 6, STATS_H2_SETTINGS},
        {3, 0, rst, 4, STATS_H2_RST_STREAM},    {2, 0, prio, 5, STATS_H2_PRIORITY},
        {8, 0, inc, 4, STATS_H2_WINDOW_UPDATE}, {0, 0, NULL, 0, STATS_H2_EMPTY_DATA},
        {9, 0, NULL, 0, STATS_H2_HEADERS},      {1, 0, NULL, 0, STATS_H2_HEADERS},
        {9, 0, setting, 6, STATS_H2_HEADERS},   {0x42, 0, ping, 8, STATS_H2_UNKNOWN_FRAME},
    };
    static uint8_t buf[24 + (H2BUDGET_CREDITS + 1) * 20];
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int split = 0; split < 2; split++) {
            struct h2budget b;
            size_t n = 24;
            memcpy(buf, preface, 24);
            for (int i = 0; i < H2BUDGET_CREDITS; i++)
                frame(buf, &n, kinds[k].type, kinds[k].flags, 1, kinds[k].payload, kinds[k].len);
            h2budget_init(&b);
            CHECK_INT(split ? bytewise(&b, buf, n) : h2budget_feed(&b, buf, n, 0), H2BUDGET_OK);
            size_t before = n;
            frame(buf, &n, kinds[k].type, kinds[k].flags, 1, kinds[k].payload, kinds[k].len);
            CHECK_INT(h2budget_feed(&b, buf + before, n - before, 0), H2BUDGET_CALM);
            CHECK_INT(h2budget_reason(&b), kinds[k].kind);
            CHECK_U64(h2budget_verdict_at(&b), 0);
            /* and every call after it */
            CHECK_INT(h2budget_feed(&b, buf, 1, 0), H2BUDGET_CALM);
        }
    }
}

/* Frames that do work cost nothing: DATA with a payload or END_STREAM, HEADERS with a block,
 * GOAWAY, and acknowledgements are PINGs too. */
static void h2budget_leaves_work_alone(void)
{
    static const uint8_t body[3] = {1, 2, 3}, block[4] = {0x82, 0x86, 0x84, 0x41};
    static uint8_t buf[(H2BUDGET_CREDITS * 3) * 16];
    struct h2budget b;
    size_t n = 0;
    for (uint32_t i = 0; i < H2BUDGET_CREDITS * 3; i++) {
        if (i % 3 == 0)
            frame(buf, &n, 1, 4, 2 * i + 1, block, 4);
        else if (i % 3 == 1)
            frame(buf, &n, 0, 0, 1, body, 3);
        else
            frame(buf, &n, 0, 1, 1, NULL, 0);
    }
    h2budget_init(&b);
    CHECK_INT(h2budget_feed(&b, buf, n, 0), H2BUDGET_OK);
    CHECK_INT(b.credits, H2BUDGET_CREDITS);
    uint8_t out[H2BUDGET_GOAWAY_LEN];
    CHECK_U64(h2budget_goaway(&b, out), 0);
}

/* Answers and output give credits back, never past H2BUDGET_CREDITS. */
static void h2budget_refills_with_answers_and_output(void)
{
    static const uint8_t ping[8];
    uint8_t buf[17 * 20];
    struct h2budget b;
    size_t n = 0;
    h2budget_init(&b);
    for (int i = 0; i < 20; i++)
        frame(buf, &n, 6, 0, 0, ping, 8);
    for (int i = 0; i < H2BUDGET_CREDITS / 20; i++)
        CHECK_INT(h2budget_feed(&b, buf, n, 0), H2BUDGET_OK);
    CHECK_INT(b.credits, 0);
    h2budget_answered(&b);
    CHECK_INT(b.credits, H2BUDGET_PER_ANSWER);
    h2budget_written(&b, 3 * H2BUDGET_OUTPUT_PER_CREDIT + 5);
    CHECK_INT(b.credits, H2BUDGET_PER_ANSWER + 3);
    h2budget_written(&b, 4 * H2BUDGET_OUTPUT_PER_CREDIT - 1);
    CHECK_INT(b.credits, H2BUDGET_PER_ANSWER + 3);
    h2budget_written(&b, 4 * H2BUDGET_OUTPUT_PER_CREDIT);
    CHECK_INT(b.credits, H2BUDGET_PER_ANSWER + 4);
    for (int i = 0; i < 200; i++)
        h2budget_answered(&b);
    CHECK_INT(b.credits, H2BUDGET_CREDITS);
}

/* RFC 9113 6.9.2: an INITIAL_WINDOW_SIZE that lifts a stream's window past 2^31-1 is
 * FLOW_CONTROL; one that does not, or a lowering, is not. The GOAWAY names the last stream. */
static void h2budget_initial_window_overflow_is_flow_control(void)
{
    uint8_t buf[128], inc[4], set[6] = {0, 4, 0, 0, 0, 0}, out[H2BUDGET_GOAWAY_LEN];
    static const uint8_t block[1] = {0x82};
    uint32_t add = 0x7fffffff - 65535;
    for (int k = 0; k < 4; k++)
        inc[k] = (uint8_t)(add >> (24 - 8 * k));
    for (int over = 0; over < 2; over++) {
        struct h2budget b;
        size_t n = 0;
        uint32_t v = over ? 65536 : 65535;
        for (int k = 0; k < 4; k++)
            set[2 + k] = (uint8_t)(v >> (24 - 8 * k));
        frame(buf, &n, 1, 5, 3, block, 1);
        frame(buf, &n, 8, 0, 3, inc, 4);
        size_t at = n;
        frame(buf, &n, 4, 0, 0, set, 6);
        h2budget_init(&b);
        CHECK_INT(bytewise(&b, buf, n), over ? H2BUDGET_FLOW_CONTROL : H2BUDGET_OK);
        if (!over)
            continue;
        CHECK_INT(h2budget_reason(&b), STATS_H2_FLOW_CONTROL);
        h2budget_init(&b);
        CHECK_INT(h2budget_feed(&b, buf, n, 0), H2BUDGET_FLOW_CONTROL);
        CHECK_U64(h2budget_verdict_at(&b), at);
        CHECK_U64(h2budget_goaway(&b, out), H2BUDGET_GOAWAY_LEN);
        static const uint8_t want[H2BUDGET_GOAWAY_LEN] = {0, 0, 8, 7, 0, 0, 0, 0, 0,
                                                          0, 0, 0, 3, 0, 0, 0, 3};
        CHECK(memcmp(out, want, sizeof want) == 0);
    }
}

/* While the write is blocked, each PING or SETTINGS owes its acknowledgement; past
 * H2BUDGET_OWED_MAX reading pauses, and an unblocked write clears the debt. */
static void h2budget_pauses_while_acknowledgements_pile_up(void)
{
    static const uint8_t ping[8];
    uint8_t buf[17];
    size_t n = 0;
    struct h2budget b;
    frame(buf, &n, 6, 0, 0, ping, 8);
    h2budget_init(&b);
    int fed = 0;
    while (!h2budget_must_pause(&b, 1) && fed < 1000) {
        CHECK_INT(h2budget_feed(&b, buf, n, 1), H2BUDGET_OK);
        fed++;
    }
    CHECK_INT(fed, H2BUDGET_OWED_MAX / 17 + 1);
    CHECK_INT(h2budget_must_pause(&b, 0), 0);
    CHECK_INT(h2budget_must_pause(&b, 1), 0);
    /* acknowledgements read while nothing is blocked owe nothing */
    for (int i = 0; i < 600; i++)
        h2budget_feed(&b, buf, n, 0);
    CHECK_INT(h2budget_must_pause(&b, 1), 0);
}

int main(void)
{
    h2budget_calms_every_no_work_kind_past_its_credits();
    h2budget_leaves_work_alone();
    h2budget_refills_with_answers_and_output();
    h2budget_initial_window_overflow_is_flow_control();
    h2budget_pauses_while_acknowledgements_pile_up();
    return CHECK_DONE();
}
