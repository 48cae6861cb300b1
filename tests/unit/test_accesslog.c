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
        .status = 200,
        .bytes_in = 5,
        .bytes_out = 2,
        .delay_us = 250000,
        .waited_us = 250400,
        .service_us = 251000,
    };
    size_t n = accesslog_format(buf, sizeof buf, &e);
    CHECK_STR(buf, "{\"time\": \"2026-11-30T00:00:00.123Z\", \"client\": \"127.0.0.1:5000\", "
                   "\"method\": \"GET\", \"path\": \"/test?q=\\\"x\\\"\\\\y\\u000a\", \"status\": "
                   "200, \"bytes_in\": 5, \"bytes_out\": 2, \"delay_ms\": 250.000, "
                   "\"waited_ms\": 250.400, \"service_ms\": 251.000}\n");
    CHECK_INT(n, strlen(buf));
    CHECK_INT(accesslog_format(buf, 40, &e), 0);
}

static void accesslog_reopen_follows_a_rotated_file(void)
{
    char path[] = "/tmp/slowsrv-access-XXXXXX", moved[64], err[256];
    int fd = mkstemp(path);
    close(fd);
    struct accesslog al;
    struct accesslog_entry e = {0, "-", "GET", "/", 200, 0, 2, 0, 0, 0};
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
    accesslog_format_writes_one_escaped_json_line();
    accesslog_reopen_follows_a_rotated_file();
    return CHECK_DONE();
}
