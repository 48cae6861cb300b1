#include <stdlib.h>
#include <unistd.h>

#include "base/accesslog.h"
#include "check.h"

static void accesslog_format_writes_one_escaped_json_line(void)
{
    char buf[1024];
    struct accesslog_entry e = {
        .time_ms = 1795996800123LL, /* 2026-11-30T00:00:00.123Z */
        .client = "127.0.0.1:5000",
        .method = "GET",
        .target = "/test?q=\"x\"\\y\n",
        .route = "/test",
        .status = 200,
        .bytes_in = 5,
        .bytes_out = 2,
        .delay_us = 250000,
        .waited_us = 250400,
        .service_us = 251000,
    };
    size_t n = accesslog_format(buf, sizeof buf, &e);
    CHECK_STR(
        buf,
        "{\"time\": \"2026-11-30T00:00:00.123Z\", \"client\": \"127.0.0.1:5000\", "
        "\"method\": \"GET\", \"path\": \"/test?q=\\\"x\\\"\\\\y\\u000a\", \"route\": "
        "\"/test\", \"status\": 200, \"bytes_in\": 5, \"bytes_out\": 2, \"delay_ms\": 250.000, "
        "\"waited_ms\": 250.400, \"service_ms\": 251.000}\n");
    CHECK_INT(n, strlen(buf));
    CHECK_INT(accesslog_format(buf, 40, &e), 0);
    /* An event stream's line ends with its events and its end. */
    e.stream_end = "client-left";
    e.events = 7;
    accesslog_format(buf, sizeof buf, &e);
    CHECK(
        strstr(buf, "\"service_ms\": 251.000, \"events\": 7, \"stream_end\": \"client-left\"}\n") !=
        NULL);
}

/* Whatever bytes the client sent, the line is valid UTF-8 JSON: well-formed UTF-8 stays as it is,
 * every other byte (0xff, a cut sequence, an overlong form, a surrogate) is written as \u00XX. */
static void accesslog_lines_are_utf8_whatever_the_client_sent(void)
{
    char buf[1024];
    struct accesslog_entry e = {.client = "c", .method = "GET", .status = 200};
    static const struct {
        const char *target, *want;
    } cases[] = {
        {"/caf\xc3\xa9", "\"path\": \"/caf\xc3\xa9\""},
        {"/\xe2\x82\xac\xf0\x9f\x98\x80", "\"path\": \"/\xe2\x82\xac\xf0\x9f\x98\x80\""},
        {"/\xff", "\"path\": \"/\\u00ff\""},
        {"/\xe2\x82", "\"path\": \"/\\u00e2\\u0082\""},
        {"/\xc0\xaf", "\"path\": \"/\\u00c0\\u00af\""},
        {"/\xed\xa0\x80", "\"path\": \"/\\u00ed\\u00a0\\u0080\""},
        {"/\xf4\x90\x80\x80", "\"path\": \"/\\u00f4\\u0090\\u0080\\u0080\""},
        {"/\xf5\x80\x80", "\"path\": \"/\\u00f5\\u0080\\u0080\""},
        {"/\xf5\x80\x80\x80", "\"path\": \"/\\u00f5\\u0080\\u0080\\u0080\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        e.target = cases[i].target;
        CHECK(accesslog_format(buf, sizeof buf, &e) > 0);
        if (!strstr(buf, cases[i].want))
            CHECK_FAIL_("case %zu: %s lacks %s", i, buf, cases[i].want);
        else
            check_passed++;
    }
}

static void accesslog_reopen_follows_a_rotated_file(void)
{
    char path[] = "/tmp/slowsrv-access-XXXXXX", moved[64], err[256];
    int fd = mkstemp(path);
    close(fd);
    struct accesslog al;
    struct accesslog_entry e = {
        .client = "-", .method = "GET", .target = "/", .route = "/", .status = 200, .bytes_out = 2};
    CHECK_INT(accesslog_open(&al, path, err, sizeof err), 0);
    accesslog_write(&al, &e);
    snprintf(moved, sizeof moved, "%s.1", path);
    CHECK_INT(rename(path, moved), 0);
    CHECK_INT(accesslog_reopen(&al), 0);
    accesslog_write(&al, &e);
    accesslog_write(&al, &e);
    accesslog_close(&al);
    char line[512];
    int lines_old = 0, lines_new = 0;
    FILE *f = fopen(moved, "r");
    while (f && fgets(line, sizeof line, f))
        lines_old++;
    if (f)
        fclose(f);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        lines_new++;
    if (f)
        fclose(f);
    CHECK_INT(lines_old, 1);
    CHECK_INT(lines_new, 2);
    unlink(path);
    unlink(moved);
    CHECK(accesslog_open(&al, "/nonexistent/dir/log", err, sizeof err) < 0);
    CHECK_STR(err, "access-log: /nonexistent/dir/log: No such file or directory");
}

int main(void)
{
    accesslog_lines_are_utf8_whatever_the_client_sent();
    accesslog_format_writes_one_escaped_json_line();
    accesslog_reopen_follows_a_rotated_file();
    return CHECK_DONE();
}
