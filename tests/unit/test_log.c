#include <errno.h>
#include <stdlib.h>

#include "base/log.h"
#include "check.h"

static int evaluated;

static int side_effect(void)
{
    evaluated++;
    return 7;
}

static void log_level_parse_accepts_the_four_names_only(void)
{
    static const struct {
        const char *in;
        int rc;
        enum log_level want;
    } cases[] = {
        {"error", 0, LOG_LEVEL_ERROR},      {"warn", 0, LOG_LEVEL_WARN},
        {"info", 0, LOG_LEVEL_INFO},        {"debug", 0, LOG_LEVEL_DEBUG},
        {"INFO", -EINVAL, LOG_LEVEL_INFO},  {"", -EINVAL, LOG_LEVEL_INFO},
        {"trace", -EINVAL, LOG_LEVEL_INFO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum log_level lv = LOG_LEVEL_INFO;
        CHECK_INT(log_level_parse(cases[i].in, &lv), cases[i].rc);
        CHECK_INT(lv, cases[i].want);
    }
    CHECK_STR(log_level_name(LOG_LEVEL_WARN), "warn");
}

static void log_writes_one_prefixed_line_and_skips_dropped_levels(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    struct log lg;
    log_init(&lg, "slowsrv-h2o", LOG_LEVEL_INFO, mem);
    LOG(&lg, LOG_LEVEL_INFO, "listening on port %d", 8080);
    LOG(&lg, LOG_LEVEL_DEBUG, "dropped %d", side_effect());
    LOG(&lg, LOG_LEVEL_ERROR, "boom");
    fclose(mem);
    CHECK_STR(buf, "slowsrv-h2o: info: listening on port 8080\nslowsrv-h2o: error: boom\n");
    CHECK_INT(evaluated, 0);
    free(buf);
}

int main(void)
{
    log_level_parse_accepts_the_four_names_only();
    log_writes_one_prefixed_line_and_skips_dropped_levels();
    return CHECK_DONE();
}
