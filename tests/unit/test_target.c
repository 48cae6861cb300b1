/* Unit tests of http/target: dot segments, query parameters, hex digits. */
#include "http/target.h"

#include "check.h"

/* Dot segments resolve as RFC 3986 section 5.2.4 says, never above the root; a query name is
 * matched percent-decoded and exactly; a name without '=' has the empty value. */
static void target_paths_and_query_names_resolve(void)
{
    static const char *const cases[][2] = {
        {"/echo", "/echo"},       {"/test/../echo", "/echo"},
        {"/./echo", "/echo"},     {"/a/b/../../echo", "/echo"},
        {"/../echo", "/echo"},    {"/echo/.", "/echo/"},
        {"/echo/..", "/"},        {"/..", "/"},
        {"/.hidden", "/.hidden"}, {"/a/..b", "/a/..b"},
        {"/a/./", "/a/"},
    };
    char out[64], buf[16];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = target_path_resolve(cases[i][0], strlen(cases[i][0]), out);
        out[n] = '\0';
        CHECK_STR(out, cases[i][1]);
    }
    const char q[] = "%73tatus=503&delay&DELAY=9s&a+b=1";
    CHECK_INT(target_query_param(q, strlen(q), "status", buf, sizeof buf), 3);
    CHECK_STR(buf, "503");
    CHECK_INT(target_query_param(q, strlen(q), "delay", buf, sizeof buf), 0);
    CHECK_STR(buf, "");
    CHECK_INT(target_query_param(q, strlen(q), "a b", buf, sizeof buf), 1);
    CHECK_INT(target_query_param(q, strlen(q), "stat", buf, sizeof buf), -1);
    CHECK_INT(target_query_param(q, strlen(q), "Delay", buf, sizeof buf), -1);
}

static void target_query_param_decodes_and_finds_exact_names(void)
{
    char buf[32];
    static const char q[] = "xdelay=1&delay=2%30ms&a+b=c&empty=&flag&s=a+b%2";
    CHECK_INT(target_query_param(q, strlen(q), "delay", buf, sizeof buf), 4);
    CHECK_STR(buf, "20ms");
    CHECK_INT(target_query_param(q, strlen(q), "empty", buf, sizeof buf), 0);
    CHECK_INT(target_query_param(q, strlen(q), "flag", buf, sizeof buf), 0);
    CHECK_INT(target_query_param(q, strlen(q), "s", buf, sizeof buf), 5);
    CHECK_STR(buf, "a b%2");
    CHECK_INT(target_query_param(q, strlen(q), "missing", buf, sizeof buf), -1);
    /* A value that does not fit: its start is stored, its whole length returned. */
    CHECK_INT(target_query_param(q, strlen(q), "delay", buf, 3), 4);
    CHECK_STR(buf, "20");
}

/* An absolute-form target's scheme and authority are skipped; anything else is not. */
static void target_absolute_prefix_skips_scheme_and_authority(void)
{
    static const struct {
        const char *t;
        size_t want;
    } cases[] = {
        {"http://example.com/echo", 18},
        {"HTTPS://h:8443/test?x=1", 14},
        {"http://h/", 8},
        {"/echo", 0},
        {"http://h", 0},
        {"http://h?x=/a", 0},
        {"ftp://h/echo", 0},
        {"http:/h/echo", 0},
        {"httpx://h/", 0},
        {"*", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_INT(target_absolute_prefix(cases[i].t, strlen(cases[i].t)), cases[i].want);
}

static void target_hex_digits(void)
{
    CHECK_INT(target_hex_digit('0'), 0);
    CHECK_INT(target_hex_digit('9'), 9);
    CHECK_INT(target_hex_digit('a'), 10);
    CHECK_INT(target_hex_digit('F'), 15);
    CHECK_INT(target_hex_digit('g'), -1);
    CHECK_INT(target_hex_digit('/'), -1);
}

int main(void)
{
    target_paths_and_query_names_resolve();
    target_query_param_decodes_and_finds_exact_names();
    target_hex_digits();
    target_absolute_prefix_skips_scheme_and_authority();
    return CHECK_DONE();
}
