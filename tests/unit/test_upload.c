/*
 * Unit tests for common/upload: the exact status, content type and body of every POST /write
 * answer, with bodies fed whole and split at every byte.
 */
#include "http/upload.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define B "bNd"
#define CT "multipart/form-data; boundary=" B
#define FIELD(name, value)                                                                         \
    "--" B "\r\nContent-Disposition: form-data; name=\"" name "\"\r\n\r\n" value "\r\n"
#define FILEPART(name, value)                                                                      \
    "--" B "\r\nContent-Disposition: form-data; name=\"" name "\"; filename=\"f.bin\"\r\n"         \
    "Content-Type: application/octet-stream\r\n\r\n" value "\r\n"
#define CLOSE "--" B "--\r\n"
#define GIB ((uint64_t)1 << 30)

struct upload_case {
    const char *name;
    const char *ct;
    int64_t content_length;
    uint64_t max_body;
    const char *body; /* NULL: nothing fed */
    int want_init;    /* upload_init()'s return */
    int want_status;
    const char *want_body;
};

static const struct upload_case cases[] = {
    {"answers_size_of_file_part", CT, -1, GIB,
     FIELD("token", "abc") FILEPART("data", "hello") CLOSE, 0, 200, "5"},
    {"answers_size_of_plain_field", CT, -1, GIB,
     FIELD("token", "abc") FIELD("data", "1234567") CLOSE, 0, 200, "7"},
    {"answers_zero_for_empty_data_part", CT, -1, GIB,
     FIELD("token", "abc") FILEPART("data", "") CLOSE, 0, 200, "0"},
    {"counts_first_data_part", CT, -1, GIB, FIELD("data", "ab") FIELD("data", "abcdef") CLOSE, 0,
     200, "2"},
    {"ignores_content_length_for_the_count", CT, 10, GIB,
     FIELD("token", "abc") FIELD("data", "0123456789abcdef") CLOSE, 0, 200, "16"},
    {"accepts_quoted_mixed_case_boundary", "Multipart/Form-Data; Charset=utf-8; BOUNDARY=\"" B "\"",
     -1, GIB, FIELD("data", "xyz") CLOSE, 0, 200, "3"},
    {"accepts_content_length_equal_to_max_body", CT, 68, 68, FIELD("data", "xyz") CLOSE, 0, 200,
     "3"},
    {"refuses_text_plain_with_415", "text/plain", -1, GIB, NULL, 415, 415,
     "{\"error\": \"expected multipart/form-data, got text/plain\", \"status\": 415}"},
    {"refuses_urlencoded_with_415_naming_only_the_media_type",
     " application/x-www-form-urlencoded ; charset=utf-8", 100, GIB, NULL, 415, 415,
     "{\"error\": \"expected multipart/form-data, got application/x-www-form-urlencoded\", "
     "\"status\": 415}"},
    {"refuses_missing_content_type_with_415", NULL, -1, GIB, NULL, 415, 415,
     "{\"error\": \"expected multipart/form-data, got no Content-Type\", \"status\": 415}"},
    {"refuses_blank_content_type_with_415", "  ", -1, GIB, NULL, 415, 415,
     "{\"error\": \"expected multipart/form-data, got no Content-Type\", \"status\": 415}"},
    {"names_empty_media_type_in_415_message", " ; boundary=x", -1, GIB, NULL, 415, 415,
     "{\"error\": \"expected multipart/form-data, got an empty media type\", \"status\": 415}"},
    {"escapes_client_bytes_in_415_message", "te\"xt/\\pl\x01\xc3\xa9", -1, GIB, NULL, 415, 415,
     "{\"error\": \"expected multipart/form-data, got "
     "te\\u0022xt/\\u005cpl\\u0001\\u00c3\\u00a9\", "
     "\"status\": 415}"},
    {"shortens_long_media_type_in_415_message",
     "application/"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaa",
     -1, GIB, NULL, 415, 415,
     "{\"error\": \"expected multipart/form-data, got application/" /* 80 bytes, then ... */
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\", \"status\": 415}"},
    {"judges_content_type_before_content_length", "text/plain", 2 * (int64_t)GIB, GIB, NULL, 415,
     415, "{\"error\": \"expected multipart/form-data, got text/plain\", \"status\": 415}"},
    {"refuses_missing_boundary_with_400", "multipart/form-data", -1, GIB, NULL, 400, 400,
     "{\"error\": \"multipart/form-data without a boundary (or an empty one)\", \"status\": 400}"},
    {"refuses_empty_boundary_with_400", "multipart/form-data; boundary=\"\"", -1, GIB, NULL, 400,
     400,
     "{\"error\": \"multipart/form-data without a boundary (or an empty one)\", \"status\": 400}"},
    {"refuses_too_long_boundary_with_400",
     "multipart/form-data; boundary="
     "12345678901234567890123456789012345678901234567890123456789012345678901",
     -1, GIB, NULL, 400, 400,
     "{\"error\": \"boundary longer than 70 characters\", \"status\": 400}"},
    {"refuses_invalid_boundary_with_400", "multipart/form-data; boundary=a@b", -1, GIB, NULL, 400,
     400, "{\"error\": \"invalid boundary parameter in Content-Type\", \"status\": 400}"},
    {"refuses_content_length_over_max_body_at_once", CT, 1073741825, GIB, NULL, 413, 413,
     "{\"error\": \"body exceeds --max-body 1073741824 bytes\", \"status\": 413}"},
    {"refuses_streamed_body_over_max_body", CT, -1, 20, FIELD("data", "xyz") CLOSE, 0, 413,
     "{\"error\": \"body exceeds --max-body 20 bytes\", \"status\": 413}"},
    {"refuses_form_without_data_part", CT, -1, GIB, FIELD("token", "abc") CLOSE, 0, 400,
     "{\"error\": \"no data part in the form\", \"status\": 400}"},
    {"refuses_truncated_body", CT, -1, GIB, FIELD("token", "abc") FIELD("data", "abc"), 0, 400,
     "{\"error\": \"truncated multipart body: no closing boundary\", \"status\": 400}"},
    {"refuses_empty_body", CT, 0, GIB, "", 0, 400,
     "{\"error\": \"empty body: expected a multipart/form-data body\", \"status\": 400}"},
    {"refuses_bad_part_headers", CT, -1, GIB,
     "--" B "\r\nContent-Disposition: attachment\r\n\r\n"
     "x\r\n" CLOSE,
     0, 400, "{\"error\": \"malformed multipart: bad part headers\", \"status\": 400}"},
    {"refuses_bad_boundary_line", CT, -1, GIB, "--" B " x\r\n", 0, 400,
     "{\"error\": \"malformed multipart: bad boundary line\", \"status\": 400}"},
};

/* Feeds c->body split once at cut (cut > len: whole) and returns the answer. */
static int run_case(const struct upload_case *c, size_t cut, struct upload *u,
                    struct upload_answer *a)
{
    int rc = upload_init(u, c->ct, c->content_length, c->max_body);

    if (rc != c->want_init)
        return -1;
    if (c->body) {
        size_t len = strlen(c->body), first = cut < len ? cut : len;

        upload_feed(u, c->body, first);
        upload_feed(u, c->body + first, len - first);
        if (upload_received(u) != len)
            return -2;
    }
    return upload_finish(u, a);
}

static void upload_cases_answer_exact_status_and_body(void)
{
    static struct upload u;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct upload_case *c = &cases[i];
        size_t len = c->body ? strlen(c->body) : 0;
        struct upload_answer a;
        int rc = run_case(c, SIZE_MAX, &u, &a);

        if (rc != c->want_status || strcmp(a.body, c->want_body) != 0)
            fprintf(stderr, "upload_%s: whole\n", c->name);
        CHECK_INT(rc, c->want_status);
        CHECK_INT(a.status, c->want_status);
        CHECK_STR(a.body, c->want_body);
        CHECK_INT(a.body_len, strlen(c->want_body));
        CHECK_STR(a.content_type, c->want_status == 200 ? "text/plain" : "application/json");

        for (size_t cut = 0; cut <= len; cut++) {
            rc = run_case(c, cut, &u, &a);
            if (rc != c->want_status || strcmp(a.body, c->want_body) != 0) {
                fprintf(stderr, "upload_%s: split at %zu\n", c->name, cut);
                CHECK_INT(rc, c->want_status);
                CHECK_STR(a.body, c->want_body);
                break;
            }
        }
    }
}

static void upload_ignores_feeds_after_error_but_counts_them(void)
{
    static struct upload u;
    static const char bad[] = "--" B " x\r\n";
    struct upload_answer a;

    CHECK_INT(upload_init(&u, CT, -1, GIB), 0);
    CHECK_INT(upload_feed(&u, bad, sizeof(bad) - 1), 400);
    CHECK_INT(upload_error(&u), MP_ERR_BAD_DELIMITER);
    CHECK_INT(upload_feed(&u, FIELD("data", "abc") CLOSE, 5), 400);
    CHECK_INT(upload_feed(&u, NULL, 0), 400);
    CHECK_U64(upload_received(&u), sizeof(bad) - 1 + 5);
    CHECK_INT(upload_finish(&u, &a), 400);
    CHECK_STR(a.body, "{\"error\": \"malformed multipart: bad boundary line\", \"status\": 400}");

    /* A 413 decided at init: the whole body can still be counted as it is dropped. */
    CHECK_INT(upload_init(&u, CT, 5000, 100), 413);
    CHECK_INT(upload_error(&u), MP_ERR_BODY_TOO_LARGE);
    for (int i = 0; i < 50; i++)
        CHECK_INT(upload_feed(&u, "0123456789", 10), 413);
    CHECK_U64(upload_received(&u), 500);
    CHECK_INT(upload_finish(&u, &a), 413);
    CHECK_STR(a.body, "{\"error\": \"body exceeds --max-body 100 bytes\", \"status\": 413}");
}

static void upload_finish_is_repeatable(void)
{
    static struct upload u;
    static const char body[] = FIELD("data", "abcd") CLOSE;
    struct upload_answer a, b;

    CHECK_INT(upload_init(&u, CT, sizeof(body) - 1, GIB), 0);
    CHECK_INT(upload_feed(&u, body, sizeof(body) - 1), 0);
    CHECK_INT(upload_finish(&u, &a), 200);
    CHECK_INT(upload_finish(&u, &b), 200);
    CHECK_STR(b.body, "4");
    CHECK_INT(upload_error(&u), 0);
    /* Bytes after the answer are only counted. */
    CHECK_INT(upload_feed(&u, "zz", 2), 0);
    CHECK_U64(upload_received(&u), sizeof(body) - 1 + 2);
    CHECK_INT(upload_finish(&u, &b), 200);
    CHECK_STR(b.body, "4");
}

/* Builds, in buf, a form with n small parts ("p") and returns its length. */
static size_t many_parts(char *buf, size_t size, unsigned n, bool with_data)
{
    static const char part[] = FIELD("p", "x");
    static const char data[] = FIELD("data", "abc");
    size_t off = 0;

    for (unsigned i = 0; i < n; i++) {
        const char *src = with_data && i == 0 ? data : part;
        size_t len = with_data && i == 0 ? sizeof(data) - 1 : sizeof(part) - 1;

        if (off + len + sizeof(CLOSE) > size)
            return 0;
        memcpy(buf + off, src, len);
        off += len;
    }
    memcpy(buf + off, CLOSE, sizeof(CLOSE) - 1);
    return off + sizeof(CLOSE) - 1;
}

static void upload_limits_parts_to_a_thousand(void)
{
    static char buf[1100 * 64];
    static struct upload u;
    struct upload_answer a;
    size_t len;

    len = many_parts(buf, sizeof(buf), 1000, true);
    CHECK(len > 0);
    CHECK_INT(upload_init(&u, CT, (int64_t)len, GIB), 0);
    CHECK_INT(upload_feed(&u, buf, len), 0);
    CHECK_INT(upload_finish(&u, &a), 200);
    CHECK_STR(a.body, "3");

    len = many_parts(buf, sizeof(buf), 1001, true);
    CHECK_INT(upload_init(&u, CT, (int64_t)len, GIB), 0);
    CHECK_INT(upload_feed(&u, buf, len), 400);
    CHECK_INT(upload_finish(&u, &a), 400);
    CHECK_STR(a.body, "{\"error\": \"more than 1000 parts in the form\", \"status\": 400}");
}

static void upload_limits_part_headers_to_8_kib(void)
{
    static char buf[10000];
    static struct upload u;
    static const char head[] = "--" B "\r\nContent-Disposition: form-data; name=data\r\nX-Pad: ";
    struct upload_answer a;
    size_t off, pad;

    /* Header block = head after the delimiter line + padding + CRLF CRLF: exactly 8192, then
     * 8193 bytes. */
    for (int extra = 0; extra < 2; extra++) {
        pad = 8192 - (sizeof(head) - 1 - (2 + strlen(B) + 2)) - 4 + (size_t)extra;
        memcpy(buf, head, sizeof(head) - 1);
        off = sizeof(head) - 1;
        memset(buf + off, 'a', pad);
        off += pad;
        memcpy(buf + off, "\r\n\r\nab\r\n" CLOSE, 8 + sizeof(CLOSE) - 1);
        off += 8 + sizeof(CLOSE) - 1;
        CHECK_INT(upload_init(&u, CT, -1, GIB), 0);
        upload_feed(&u, buf, off);
        CHECK_INT(upload_finish(&u, &a), extra ? 400 : 200);
        CHECK_STR(a.body,
                  extra ? "{\"error\": \"part headers exceed 8192 bytes\", \"status\": 400}" : "2");
    }
}

/* A large upload in chunks: the count is exact and the struct is all the memory there is. */
static void upload_counts_large_data_in_chunks(void)
{
    static char chunk[65536];
    static struct upload u;
    static const char head[] = FIELD("token", "abc") "--" B "\r\nContent-Disposition: form-data; "
                                                     "name=\"data\"; filename=\"big.bin\"\r\n\r\n";
    static const char tail[] = "\r\n" CLOSE;
    struct upload_answer a;
    char want[32];

    for (size_t i = 0; i < sizeof(chunk); i++)
        chunk[i] = (char)(i % 251 == 0 ? '\r' : i % 7 == 0 ? '\n' : (char)('-' + i % 3));
    CHECK_INT(upload_init(&u, CT, -1, 64 * 1024 * 1024), 0);
    CHECK_INT(upload_feed(&u, head, sizeof(head) - 1), 0);
    for (int i = 0; i < 512; i++)
        CHECK_INT(upload_feed(&u, chunk, sizeof(chunk) - 1), 0);
    CHECK_INT(upload_feed(&u, tail, sizeof(tail) - 1), 0);
    CHECK_INT(upload_finish(&u, &a), 200);
    snprintf(want, sizeof(want), "%zu", (sizeof(chunk) - 1) * 512);
    CHECK_STR(a.body, want);
    CHECK(sizeof(struct upload) < 9 * 1024);
}

int main(void)
{
    upload_cases_answer_exact_status_and_body();
    upload_ignores_feeds_after_error_but_counts_them();
    upload_finish_is_repeatable();
    upload_limits_parts_to_a_thousand();
    upload_limits_part_headers_to_8_kib();
    upload_counts_large_data_in_chunks();
    return CHECK_DONE();
}
