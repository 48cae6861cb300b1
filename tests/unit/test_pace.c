/* Unit tests for plan/pace.c: the keys' values and the schedule of a paced body and read. */
#include "plan/pace.h"

#include "check.h"

static void pace_bytes_take_decimal_and_binary_units(void)
{
    static const struct {
        const char *in;
        int rc;
        uint64_t out;
    } cases[] = {
        {"0", 0, 0},         {"1000", 0, 1000},   {"100K", 0, 100000},     {"100KB", 0, 100000},
        {"1M", 0, 1000000},  {"1MB", 0, 1000000}, {"2G", 0, 2000000000},   {"64Ki", 0, 65536},
        {"64KiB", 0, 65536}, {"1Mi", 0, 1048576}, {"1GiB", 0, 1073741824}, {"", -22, 0},
        {"K", -22, 0},       {"1k", -22, 0},      {"-1", -22, 0},          {"1.5M", -22, 0},
        {"2048G", -34, 0},   {"1 M", -22, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 0;
        char err[160];
        CHECK_INT(pace_bytes_parse(cases[i].in, &v, err, sizeof err), cases[i].rc);
        if (cases[i].rc == 0)
            CHECK_U64(v, cases[i].out);
    }
}

static void pace_rate_parses_burst_and_none(void)
{
    struct pace_spec p = {0};
    char err[160];
    CHECK_INT(pace_rate_parse(&p, "1M,burst=64K", err, sizeof err), 0);
    CHECK_U64(p.rate, 1000000);
    CHECK_U64(p.burst, 64000);
    CHECK_U64(pace_burst(&p), 64000);
    CHECK_INT(pace_rate_parse(&p, "100K", err, sizeof err), 0);
    CHECK_U64(pace_burst(&p), 1000); /* 10 ms of the rate */
    CHECK_INT(pace_rate_parse(&p, "50", err, sizeof err), 0);
    CHECK_U64(pace_burst(&p), 1); /* at least a byte */
    CHECK_INT(pace_rate_parse(&p, "none", err, sizeof err), 0);
    CHECK_U64(p.rate, 0);
    CHECK_INT(pace_shapes_body(&p), 0);
    CHECK_INT(pace_rate_parse(&p, "1M,bust=1", err, sizeof err), -22);
    CHECK_STR(err, "bad rate '1M,bust=1' (want BYTES_PER_SECOND or BYTES_PER_SECOND,burst=BYTES, "
                   "e.g. 1M,burst=64K)");
    CHECK_INT(pace_rate_parse(&p, "0,burst=5", err, sizeof err), -22);
    CHECK_STR(err, "burst needs a rate above 0");
    CHECK_INT(pace_rate_parse(&p, "11G", err, sizeof err), -22);
    CHECK_STR(err, "'11G' is over 10000000000");
}

static void pace_stall_and_check_name_what_is_wrong(void)
{
    struct pace_spec p = {0};
    char err[160];
    CHECK_INT(pace_stall_parse(&p, "64K,5s", err, sizeof err), 0);
    CHECK_U64(p.stall_at, 64000);
    CHECK_U64(p.stall_us, 5000000);
    CHECK_INT(pace_stall_parse(&p, "64K,0", err, sizeof err), -22);
    CHECK_INT(pace_reset_parse(&p, "100", err, sizeof err), 0);
    CHECK_INT(pace_stall_parse(&p, "64K,5s", err, sizeof err), 0);
    CHECK_INT(pace_check(&p, 1000000, 60000000, err, sizeof err), -22);
    CHECK_STR(err, "stall: at 64000 bytes it would come after reset-after's 100; stall earlier");
    CHECK_INT(pace_reset_parse(&p, "none", err, sizeof err), 0);
    CHECK_INT(pace_check(&p, 1000000, 60000000, err, sizeof err), 0);
    CHECK_INT(pace_check(&p, 64000, 60000000, err, sizeof err), -22);
    CHECK_STR(err, "stall: 64000 bytes is not inside the body of 64000 bytes; add size=");
    CHECK_INT(pace_check(&p, 1000000, 1000000, err, sizeof err), -22);
    CHECK_STR(err, "stall: 5000 ms is over --max-delay 1000 ms");
}

/* One byte a millisecond (1000 B/s), burst 10: the schedule a client would see. */
static void pace_next_sends_burst_then_the_rate(void)
{
    struct pace_spec p = {.rate = 1000, .burst = 10};
    struct pace_state s;
    uint64_t len = 0, due = 0;
    pace_start(&s, 1000000);
    CHECK_INT(pace_next(&p, &s, 100, 1000000, 0, &len, &due), PACE_SEND);
    CHECK_U64(len, 10); /* the burst with the head */
    CHECK_INT(pace_next(&p, &s, 100, 1000000, 10, &len, &due), PACE_WAIT);
    CHECK_U64(due, 1010000); /* the next step: 10 ms of the rate (10 bytes) later */
    CHECK_INT(pace_next(&p, &s, 100, 1010000, 10, &len, &due), PACE_SEND);
    CHECK_U64(len, 10);
    /* Asked again 1 ms later (the library wrote the step): no byte or two, the next whole step
     * at its time. */
    CHECK_INT(pace_next(&p, &s, 100, 1011000, 20, &len, &due), PACE_WAIT);
    CHECK_U64(due, 1020000);
    /* A step 5 ms late is made up: the average holds. */
    CHECK_INT(pace_next(&p, &s, 100, 1025000, 20, &len, &due), PACE_SEND);
    CHECK_U64(len, 15);
    /* The end: the last byte due at (100 - 10) / 1000 s. */
    CHECK_INT(pace_next(&p, &s, 100, 1089000, 35, &len, &due), PACE_SEND);
    CHECK_U64(len, 64);
    CHECK_INT(pace_next(&p, &s, 100, 1089000, 99, &len, &due), PACE_WAIT);
    CHECK_U64(due, 1090000);
    CHECK_INT(pace_next(&p, &s, 100, 1090000, 99, &len, &due), PACE_SEND);
    CHECK_U64(len, 1);
    CHECK_INT(pace_next(&p, &s, 100, 1090000, 100, &len, &due), PACE_END);
}

/* A client that took nothing for 5 s gets at most PACE_CATCHUP_US of the rate at once. */
static void pace_next_makes_up_for_one_second_at_most(void)
{
    struct pace_spec p = {.rate = 1000, .burst = 10};
    struct pace_state s;
    uint64_t len = 0, due = 0;
    pace_start(&s, 0);
    CHECK_INT(pace_next(&p, &s, 100000, 5000000, 0, &len, &due), PACE_SEND);
    CHECK_U64(len, 10 + 1000);
    CHECK_INT(pace_next(&p, &s, 100000, 5000000, 1010, &len, &due), PACE_WAIT);
    CHECK_U64(due, 5010000);
}

static void pace_next_stalls_once_at_its_byte(void)
{
    struct pace_spec p = {.stall = 1, .stall_at = 40, .stall_us = 500000};
    struct pace_state s;
    uint64_t len = 0, due = 0;
    pace_start(&s, 0);
    CHECK_INT(pace_next(&p, &s, 100, 0, 0, &len, &due), PACE_SEND);
    CHECK_U64(len, 40);
    CHECK_INT(pace_next(&p, &s, 100, 1000, 40, &len, &due), PACE_WAIT);
    CHECK_U64(due, 501000);
    CHECK_INT(pace_next(&p, &s, 100, 300000, 40, &len, &due), PACE_WAIT);
    CHECK_U64(due, 501000);
    CHECK_INT(pace_next(&p, &s, 100, 501000, 40, &len, &due), PACE_SEND);
    CHECK_U64(len, 60);
    CHECK_INT(pace_next(&p, &s, 100, 501000, 100, &len, &due), PACE_END);
}

static void pace_read_allowed_follows_the_read_rate(void)
{
    struct pace_spec none = {0}, p = {.read_rate = 100000};
    uint64_t due = 0;
    CHECK_U64(pace_read_allowed(&none, 0, 0, 0, 65536, &due), 65536);
    CHECK_U64(pace_read_allowed(&p, 0, 0, 0, 65536, &due), 1000); /* 10 ms of the rate */
    CHECK_U64(pace_read_allowed(&p, 0, 0, 1000, 65536, &due), 0);
    CHECK_U64(due, 10000);
    CHECK_U64(pace_read_allowed(&p, 0, 500000, 1000, 65536, &due), 50000);
    CHECK_U64(pace_read_allowed(&p, 0, 500000, 1000, 300, &due), 300);
}

int main(void)
{
    pace_bytes_take_decimal_and_binary_units();
    pace_rate_parses_burst_and_none();
    pace_stall_and_check_name_what_is_wrong();
    pace_next_sends_burst_then_the_rate();
    pace_next_makes_up_for_one_second_at_most();
    pace_next_stalls_once_at_its_byte();
    pace_read_allowed_follows_the_read_rate();
    return CHECK_DONE();
}
