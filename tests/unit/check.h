/*
 * Minimal assertion helpers for the unit tests: every failed check prints the location and both
 * values, counts the failure and lets the test go on, so one run shows every broken case.
 * CHECK_DONE() prints the plain "N passed, N failed" line and gives the exit status.
 */
#ifndef SLOWSRV_TEST_CHECK_H
#define SLOWSRV_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* One executable from one file keeps its counts to itself. A program of several files defines
 * CHECK_SHARED_COUNTERS before including this header in each of them and defines
 * `unsigned check_passed, check_failed;` in exactly one, so that CHECK_DONE() counts them all. */
#ifdef CHECK_SHARED_COUNTERS
extern unsigned check_passed;
extern unsigned check_failed;
#else
static unsigned check_passed;
static unsigned check_failed;
#endif

#define CHECK_FAIL_(fmt, ...)                                                                      \
    do {                                                                                           \
        check_failed++;                                                                            \
        fprintf(stderr, "%s:%d: %s: " fmt "\n", __FILE__, __LINE__, __func__, __VA_ARGS__);        \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond)                                                                                  \
            check_passed++;                                                                        \
        else                                                                                       \
            CHECK_FAIL_("expected %s", #cond);                                                     \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ == check_b_)                                                                  \
            check_passed++;                                                                        \
        else                                                                                       \
            CHECK_FAIL_("%s == %s: got %lld, want %lld", #a, #b, check_a_, check_b_);              \
    } while (0)

#define CHECK_U64(a, b)                                                                            \
    do {                                                                                           \
        uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);                               \
        if (check_a_ == check_b_)                                                                  \
            check_passed++;                                                                        \
        else                                                                                       \
            CHECK_FAIL_("%s == %s: got %" PRIu64 ", want %" PRIu64, #a, #b, check_a_, check_b_);   \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        if (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0)                               \
            check_passed++;                                                                        \
        else                                                                                       \
            CHECK_FAIL_("%s == %s: got \"%s\", want \"%s\"", #a, #b,                               \
                        check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");           \
    } while (0)

#define CHECK_DONE()                                                                               \
    (printf("%s: %u passed, %u failed\n", __FILE__, check_passed, check_failed),                   \
     check_failed ? 1 : 0)

#endif
