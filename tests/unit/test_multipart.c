/*
 * Unit tests for common/multipart: boundary extraction, then a table of bodies, each fed whole,
 * split in two at every byte, in three at every pair of positions (short bodies), one byte at a
 * time and in random 1-7 byte chunks; every way must give the same answer. Then the bodies that
 * real clients sent (tests/fixtures/multipart, directory given as argv[1]). Last, an oracle:
 * generated forms whose answer is known by construction (tests/fuzz/mpform.h), parsed in random
 * chunkings, whole and cut short.
 *
 * Usage: test_multipart FIXTURE_DIR
 */
#include "http/multipart.h"
#include "mpform.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---------------------------------------------------------------- boundary extraction */

struct boundary_case {
    const char *name;
    const char *ct;
    int want;
    const char *boundary;
};

#define B71 "12345678901234567890123456789012345678901234567890123456789012345678901"
#define B70 "1234567890123456789012345678901234567890123456789012345678901234567890"

static const struct boundary_case boundary_cases[] = {
    {"plain_token", "multipart/form-data; boundary=abc", 0, "abc"},
    {"media_type_any_case", "Multipart/Form-Data; boundary=abc", 0, "abc"},
    {"param_name_any_case", "multipart/form-data; Boundary=abc", 0, "abc"},
    {"param_name_upper_case", "MULTIPART/FORM-DATA; BOUNDARY=AbC", 0, "AbC"},
    {"no_space_after_semicolon", "multipart/form-data;boundary=abc", 0, "abc"},
    {"spaces_around_separators", "multipart/form-data ; boundary = abc ; charset=utf-8", 0, "abc"},
    {"tabs_around_separators", "\tmultipart/form-data\t;\tboundary\t=\tabc\t", 0, "abc"},
    {"other_param_first", "multipart/form-data; charset=utf-8; boundary=abc", 0, "abc"},
    {"other_quoted_param_with_semicolon", "multipart/form-data; x=\"a;boundary=no\"; boundary=y", 0,
     "y"},
    {"trailing_semicolon", "multipart/form-data; boundary=abc;", 0, "abc"},
    {"empty_params_skipped", "multipart/form-data;; ;boundary=abc", 0, "abc"},
    {"quoted_with_space_and_colon", "multipart/form-data; boundary=\"a b:c\"", 0, "a b:c"},
    {"quoted_pair_unescaped", "multipart/form-data; boundary=\"a\\bc\"", 0, "abc"},
    {"all_bchars", "multipart/form-data; boundary=\"09azAZ'()+_,-./:=? x\"", 0,
     "09azAZ'()+_,-./:=? x"},
    {"unquoted_with_equals_kept", "multipart/form-data; boundary=----=_Part_0_1.2", 0,
     "----=_Part_0_1.2"},
    {"webkit_style", "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW", 0,
     "----WebKitFormBoundary7MA4YWxkTrZu0gW"},
    {"seventy_chars_accepted", "multipart/form-data; boundary=" B70, 0, B70},
    {"seventy_chars_quoted_accepted", "multipart/form-data; boundary=\"" B70 "\"", 0, B70},
    {"absent_header_is_415", NULL, MP_ERR_CONTENT_TYPE, NULL},
    {"empty_header_is_415", "", MP_ERR_CONTENT_TYPE, NULL},
    {"text_plain_is_415", "text/plain", MP_ERR_CONTENT_TYPE, NULL},
    {"urlencoded_is_415", "application/x-www-form-urlencoded", MP_ERR_CONTENT_TYPE, NULL},
    {"multipart_mixed_is_415", "multipart/mixed; boundary=abc", MP_ERR_CONTENT_TYPE, NULL},
    {"longer_media_type_is_415", "multipart/form-datax; boundary=abc", MP_ERR_CONTENT_TYPE, NULL},
    {"shorter_media_type_is_415", "multipart/form", MP_ERR_CONTENT_TYPE, NULL},
    {"no_params_is_no_boundary", "multipart/form-data", MP_ERR_NO_BOUNDARY, NULL},
    {"other_params_only_is_no_boundary", "multipart/form-data; charset=utf-8", MP_ERR_NO_BOUNDARY,
     NULL},
    {"empty_value_is_no_boundary", "multipart/form-data; boundary=", MP_ERR_NO_BOUNDARY, NULL},
    {"empty_value_before_semicolon_is_no_boundary", "multipart/form-data; boundary=; a=b",
     MP_ERR_NO_BOUNDARY, NULL},
    {"empty_quoted_is_no_boundary", "multipart/form-data; boundary=\"\"", MP_ERR_NO_BOUNDARY, NULL},
    {"seventy_one_chars_too_long", "multipart/form-data; boundary=" B71, MP_ERR_BOUNDARY_TOO_LONG,
     NULL},
    {"seventy_one_quoted_too_long", "multipart/form-data; boundary=\"" B71 "\"",
     MP_ERR_BOUNDARY_TOO_LONG, NULL},
    {"trailing_space_invalid", "multipart/form-data; boundary=\"abc \"", MP_ERR_BAD_BOUNDARY, NULL},
    {"at_sign_invalid", "multipart/form-data; boundary=a@b", MP_ERR_BAD_BOUNDARY, NULL},
    {"escaped_quote_invalid", "multipart/form-data; boundary=\"a\\\"b\"", MP_ERR_BAD_BOUNDARY,
     NULL},
    {"tab_inside_quotes_invalid", "multipart/form-data; boundary=\"a\tb\"", MP_ERR_BAD_BOUNDARY,
     NULL},
    {"non_ascii_invalid", "multipart/form-data; boundary=caf\xc3\xa9", MP_ERR_BAD_BOUNDARY, NULL},
    {"two_boundaries_invalid", "multipart/form-data; boundary=a; BOUNDARY=b", MP_ERR_BAD_BOUNDARY,
     NULL},
    {"param_without_equals_invalid", "multipart/form-data; boundary", MP_ERR_BAD_BOUNDARY, NULL},
    {"junk_after_media_type_invalid", "multipart/form-data junk; boundary=a", MP_ERR_BAD_BOUNDARY,
     NULL},
    {"unterminated_quote_invalid", "multipart/form-data; boundary=\"abc", MP_ERR_BAD_BOUNDARY,
     NULL},
    {"control_char_invalid", "multipart/form-data; boundary=a\x01z", MP_ERR_BAD_BOUNDARY, NULL},
};

static void boundary_parse_table(void)
{
    for (size_t i = 0; i < sizeof(boundary_cases) / sizeof(boundary_cases[0]); i++) {
        const struct boundary_case *c = &boundary_cases[i];
        char out[MP_BOUNDARY_MAX + 1];
        size_t out_len = 0;
        int rc = mp_boundary_parse(c->ct, c->ct ? strlen(c->ct) : 0, out, &out_len);

        if (rc != c->want)
            fprintf(stderr, "boundary case %s\n", c->name);
        CHECK_INT(rc, c->want);
        if (rc == 0 && c->want == 0) {
            CHECK_STR(out, c->boundary);
            CHECK_INT(out_len, strlen(c->boundary));
        }
    }
}

static void boundary_parse_stops_at_given_length(void)
{
    /* The header value need not be NUL-terminated: bytes past ct_len are not read. */
    const char ct[] = "multipart/form-data; boundary=abcXYZ";
    char out[MP_BOUNDARY_MAX + 1];
    size_t out_len = 0;

    CHECK_INT(mp_boundary_parse(ct, sizeof(ct) - 4, out, &out_len), 0);
    CHECK_STR(out, "abc");
    CHECK_INT(mp_boundary_parse(ct, 10, out, &out_len), MP_ERR_CONTENT_TYPE);
}

static void boundary_check_refuses_bad_values(void)
{
    CHECK_INT(mp_boundary_check("abc", 3), 0);
    CHECK_INT(mp_boundary_check("", 0), MP_ERR_NO_BOUNDARY);
    CHECK_INT(mp_boundary_check(B71, 71), MP_ERR_BOUNDARY_TOO_LONG);
    CHECK_INT(mp_boundary_check("a\rb", 3), MP_ERR_BAD_BOUNDARY);
    CHECK_INT(mp_boundary_check("ab ", 3), MP_ERR_BAD_BOUNDARY);
    CHECK_INT(mp_boundary_check("a b", 3), 0);
}

/* ---------------------------------------------------------------- parser cases */

#define B "XbOuNdArY"
#define DL "--" B "\r\n"
#define CLOSE "--" B "--\r\n"
#define FIELD(name, value)                                                                         \
    DL "Content-Disposition: form-data; name=\"" name "\"\r\n\r\n" value "\r\n"
#define FILEPART(name, fn, value)                                                                  \
    DL "Content-Disposition: form-data; name=\"" name "\"; filename=\"" fn "\"\r\n"                \
       "Content-Type: application/octet-stream\r\n\r\n" value "\r\n"
#define BODY(lit) lit, sizeof(lit) - 1
#define DATA(lit) lit, sizeof(lit) - 1

struct mp_case {
    const char *name;
    const char *body;
    size_t len;
    int want_err;
    bool want_found;
    uint64_t want_size;
    uint32_t want_parts;
    const char *want_data; /* content of the first data part; NULL: not checked */
    size_t want_data_len;
    uint32_t max_header_bytes; /* 0: default */
    uint32_t max_parts;        /* 0: default */
    uint64_t max_body;         /* 0: default */
    const char *boundary;      /* NULL: B */
};

static const struct mp_case cases[] = {
    {.name = "counts_file_part_after_token",
     .body = BODY(FIELD("token", "abc") FILEPART("data", "f.bin", "hello world") CLOSE),
     .want_found = true,
     .want_parts = 2,
     .want_data = DATA("hello world")},
    {.name = "counts_plain_field",
     .body = BODY(FIELD("token", "abc") FIELD("data", "12345") CLOSE),
     .want_found = true,
     .want_parts = 2,
     .want_data = DATA("12345")},
    {.name = "counts_data_part_before_token",
     .body = BODY(FILEPART("data", "x", "0123456789") FIELD("token", "abc") CLOSE),
     .want_found = true,
     .want_size = 10,
     .want_parts = 2},
    {.name = "counts_empty_data_part_as_zero",
     .body = BODY(FIELD("token", "abc") FILEPART("data", "empty.bin", "") CLOSE),
     .want_found = true,
     .want_parts = 2,
     .want_data = DATA("")},
    {.name = "counts_first_of_two_data_parts",
     .body = BODY(FIELD("data", "first") FIELD("data", "second part") CLOSE),
     .want_found = true,
     .want_parts = 2,
     .want_data = DATA("first")},
    {.name = "reports_no_data_part_when_absent",
     .body = BODY(FIELD("token", "abc") FIELD("file", "zzz") CLOSE),
     .want_parts = 2},
    {.name = "name_match_is_exact_and_case_sensitive",
     .body = BODY(FIELD("Data", "a") FIELD("data2", "b") FIELD("dat", "c") FIELD("", "d") CLOSE),
     .want_parts = 4},
    {.name = "ignores_preamble_and_epilogue",
     .body = BODY("This is the preamble.\r\n--" B "-ish line\r\n\r\n" FIELD(
         "data", "abc") "--" B "--\r\nepilogue --" B "\r\ngarbage"),
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "accepts_empty_preamble_line",
     .body = BODY("\r\n" FIELD("data", "abc") CLOSE),
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "accepts_close_delimiter_without_crlf",
     .body = BODY(FIELD("data", "abc") "--" B "--"),
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "accepts_form_without_parts", .body = BODY("--" B "--\r\n")},
    {.name = "keeps_boundary_prefix_inside_data",
     .body = BODY(FIELD("data", "a\r\n--XbOuNdAr\r\n--XbOuN\r\n--\r\n\r\r\n--X") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("a\r\n--XbOuNdAr\r\n--XbOuN\r\n--\r\n\r\r\n--X")},
    {.name = "keeps_boundary_followed_by_other_byte_inside_data",
     .body = BODY(FIELD("data", "x\r\n--" B "z\r\n--" B "Z--") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("x\r\n--" B "z\r\n--" B "Z--")},
    {.name = "keeps_boundary_then_dash_and_other_byte_inside_data",
     .body = BODY(FIELD("data", "ab\r\n--" B "-x\r\n--" B "-") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("ab\r\n--" B "-x\r\n--" B "-")},
    {.name = "keeps_boundary_then_cr_and_other_byte_inside_data",
     .body = BODY(FIELD("data", "ab\r\n--" B "\rx\r\n--" B "\r\r\n--" B "\r") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("ab\r\n--" B "\rx\r\n--" B "\r\r\n--" B "\r")},
    {.name = "ignores_boundary_then_cr_and_other_byte_in_preamble",
     .body = BODY("--" B "\rx\r\n--" B "-\r\n" FIELD("data", "abc") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("abc")},
    {.name = "keeps_lf_only_boundary_inside_data",
     .body = BODY(FIELD("data", "x\n--" B "\n--" B "--\r\n") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("x\n--" B "\n--" B "--\r\n")},
    {.name = "keeps_cr_and_crlf_at_data_end",
     .body = BODY(FIELD("data", "\r\n\r") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("\r\n\r")},
    {.name = "keeps_nul_and_high_bytes_inside_data",
     .body = BODY(FIELD("data", "\0\xff\x80\r\0--") CLOSE),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("\0\xff\x80\r\0--")},
    {.name = "accepts_transport_padding",
     .body =
         BODY("--" B " \t \r\nContent-Disposition: form-data; name=data\r\n\r\nabc\r\n--" B "\t\r\n"
              "Content-Disposition: form-data; name=t\r\n\r\nx\r\n" CLOSE),
     .want_found = true,
     .want_size = 3,
     .want_parts = 2},
    {.name = "accepts_bare_lf_in_headers_and_delimiter_lines",
     .body =
         BODY("--" B "\nContent-Disposition: form-data; name=\"data\"\nX-A: b\n\nabc\r\n--" B " \n"
              "content-disposition: form-data; name=x\n\n\r\n--" B "--"),
     .want_found = true,
     .want_parts = 2,
     .want_data = DATA("abc")},
    {.name = "matches_header_and_param_names_in_any_case",
     .body = BODY("--" B "\r\nCONTENT-DISPOSITION: Form-Data; NAME=\"data\"; FileName=\"a\"\r\n"
                  "content-TYPE: text/plain\r\n\r\nabcd\r\n" CLOSE),
     .want_found = true,
     .want_size = 4,
     .want_parts = 1},
    {.name = "accepts_token_name_and_spaces_around_equals",
     .body = BODY("--" B "\r\nContent-Disposition:form-data ;name = data ; filename = f.txt \r\n"
                  "\r\nab\r\n" CLOSE),
     .want_found = true,
     .want_size = 2,
     .want_parts = 1},
    {.name = "accepts_escaped_quote_and_raw_backslash_in_filename",
     .body = BODY("--" B "\r\nContent-Disposition: form-data; filename=\"C:\\dir\\a\\\"b.txt\"; "
                  "name=\"data\"\r\n\r\nxyz\r\n" CLOSE),
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "ignores_filename_star_and_unknown_params_and_headers",
     .body = BODY("--" B "\r\nX-Other: 1\r\nContent-Disposition: form-data; name=\"data\"; "
                  "filename*=UTF-8''%e2%82%ac; size=3; creation-date=\"x;y\"\r\n"
                  "Content-Transfer-Encoding: binary\r\n\r\nabc\r\n" CLOSE),
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "accepts_utf8_filename",
     .body = BODY("--" B "\r\nContent-Disposition: form-data; name=\"data\"; "
                  "filename=\"caf\xc3\xa9.txt\"\r\n\r\nabc\r\n" CLOSE),
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "uses_boundary_with_spaces_and_punctuation",
     .boundary = "a'()+_,-./:=? z",
     .body = BODY("--a'()+_,-./:=? z\r\nContent-Disposition: form-data; name=data\r\n\r\n"
                  "--a'()+_,-./:=? \r\n--a'()+_,-./:=? z--"),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("--a'()+_,-./:=? ")},
    {.name = "uses_one_char_boundary",
     .boundary = "-",
     .body = BODY("---\r\nContent-Disposition: form-data; name=data\r\n\r\n-\r\n--\r\r\n-----"),
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("-\r\n--\r")},
    /* Truncated bodies: mp_parser_finish() without the close delimiter. */
    {.name = "truncated_empty_body", .body = BODY(""), .want_err = MP_ERR_TRUNCATED},
    {.name = "truncated_preamble_only",
     .body = BODY("just some text\r\n"),
     .want_err = MP_ERR_TRUNCATED},
    {.name = "truncated_inside_data",
     .body = BODY(FIELD("token", "abc") DL "Content-Disposition: form-data; name=data\r\n\r\nab"),
     .want_err = MP_ERR_TRUNCATED,
     .want_found = true,
     .want_size = 2,
     .want_parts = 2},
    {.name = "truncated_inside_delimiter",
     .body = BODY(FIELD("data", "ab") "--" B),
     .want_err = MP_ERR_TRUNCATED,
     .want_found = true,
     .want_size = 2,
     .want_parts = 1},
    {.name = "truncated_after_delimiter_line",
     .body = BODY(FIELD("data", "ab") DL),
     .want_err = MP_ERR_TRUNCATED,
     .want_found = true,
     .want_size = 2,
     .want_parts = 2},
    {.name = "truncated_inside_headers",
     .body = BODY(DL "Content-Disposition: form-data; name=data\r\n"),
     .want_err = MP_ERR_TRUNCATED,
     .want_parts = 1},
    {.name = "truncated_after_single_dash",
     .body = BODY(FIELD("data", "ab") "--" B "-"),
     .want_err = MP_ERR_TRUNCATED,
     .want_found = true,
     .want_size = 2,
     .want_parts = 1},
    {.name = "truncated_when_close_is_for_other_boundary",
     .body = BODY(FIELD("data", "ab") "--XbOuNdArZ--\r\n"),
     .want_err = MP_ERR_TRUNCATED,
     .want_found = true,
     .want_parts = 1,
     .want_data = DATA("ab\r\n--XbOuNdArZ--")},
    /* Bad delimiter lines. */
    {.name = "refuses_padding_then_other_byte",
     .body = BODY("--" B " x\r\n"),
     .want_err = MP_ERR_BAD_DELIMITER},
    {.name = "refuses_padding_then_cr_then_other_byte",
     .body = BODY(FIELD("data", "ab") "--" B "\t\rx"),
     .want_err = MP_ERR_BAD_DELIMITER,
     .want_found = true,
     .want_size = 2,
     .want_parts = 1},
    /* Bad part headers. */
    {.name = "refuses_part_without_headers",
     .body = BODY(DL "\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_part_without_disposition",
     .body = BODY(DL "Content-Type: text/plain\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_attachment_disposition",
     .body = BODY(DL "Content-Disposition: attachment; name=data\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_disposition_without_name",
     .body = BODY(DL "Content-Disposition: form-data; filename=a\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_header_without_colon",
     .body = BODY(DL "Content-Disposition form-data; name=data\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_space_before_colon",
     .body = BODY(DL "Content-Disposition : form-data; name=data\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_folded_header",
     .body = BODY(DL "Content-Disposition: form-data;\r\n name=data\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_two_dispositions",
     .body = BODY(DL "Content-Disposition: form-data; name=data\r\n"
                     "Content-Disposition: form-data; name=x\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_two_name_params",
     .body = BODY(DL "Content-Disposition: form-data; name=x; name=data\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_unterminated_quoted_name",
     .body = BODY(DL "Content-Disposition: form-data; name=\"data\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_cr_inside_header_line",
     .body = BODY(DL "Content-Disposition: form-data;\r name=data\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_nul_inside_header_value",
     .body = BODY(DL "Content-Disposition: form-data; name=\"da\0ta\"\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    {.name = "refuses_garbage_after_quoted_name",
     .body = BODY(DL "Content-Disposition: form-data; name=\"data\"x\r\n\r\nabc\r\n" CLOSE),
     .want_err = MP_ERR_BAD_HEADERS,
     .want_parts = 1},
    /* Limits. */
    {.name = "accepts_header_block_at_limit",
     .body = BODY(DL "Content-Disposition: form-data; name=data\r\n\r\nabc\r\n" CLOSE),
     .max_header_bytes = 45,
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "refuses_header_block_over_limit",
     .body = BODY(DL "Content-Disposition: form-data; name=data\r\n\r\nabc\r\n" CLOSE),
     .max_header_bytes = 44,
     .want_err = MP_ERR_HEADERS_TOO_LARGE,
     .want_parts = 1},
    {.name = "refuses_endless_header_line",
     .body = BODY(DL "X-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
     .max_header_bytes = 32,
     .want_err = MP_ERR_HEADERS_TOO_LARGE,
     .want_parts = 1},
    {.name = "accepts_parts_at_limit",
     .body = BODY(FIELD("a", "1") FIELD("data", "22") CLOSE),
     .max_parts = 2,
     .want_found = true,
     .want_size = 2,
     .want_parts = 2},
    {.name = "refuses_parts_over_limit",
     .body = BODY(FIELD("a", "1") FIELD("data", "22") FIELD("c", "3") CLOSE),
     .max_parts = 2,
     .want_err = MP_ERR_TOO_MANY_PARTS,
     .want_found = true,
     .want_size = 2,
     .want_parts = 2},
    {.name = "accepts_body_at_max_body",
     .body = BODY(FIELD("data", "abc") CLOSE),
     .max_body = 80,
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "refuses_body_over_max_body",
     .body = BODY(FIELD("data", "abc") CLOSE),
     .max_body = 79,
     .want_err = MP_ERR_BODY_TOO_LARGE,
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "refuses_epilogue_over_max_body",
     .body = BODY(FIELD("data", "abc") CLOSE "epilogue"),
     .max_body = 80,
     .want_err = MP_ERR_BODY_TOO_LARGE,
     .want_found = true,
     .want_size = 3,
     .want_parts = 1},
    {.name = "reports_first_error_in_byte_order_before_max_body",
     .body = BODY("--" B " x and then a lot more bytes than allowed"),
     .max_body = 20,
     .want_err = MP_ERR_BAD_DELIMITER},
};

struct result {
    int err;
    bool found;
    uint64_t size;
    uint32_t parts;
    uint64_t bytes;
    unsigned begins;
    unsigned ends;
    int part_index;    /* index (from 0) of the part being read */
    int data_index;    /* index of the first part named "data", -1 if none */
    uint64_t cb_data;  /* bytes reported for the first data part */
    uint64_t end_size; /* size reported by on_part_end for the first data part */
    size_t data_len;   /* bytes kept in data (at most sizeof(data)) */
    char data[256];
};

static int on_begin(void *user, const char *name, const char *filename, const char *ctype)
{
    struct result *r = user;

    (void)filename;
    (void)ctype;
    r->part_index = (int)r->begins++;
    if (r->data_index < 0 && strcmp(name, "data") == 0)
        r->data_index = r->part_index;
    return 0;
}

static int on_data(void *user, const void *data, size_t len)
{
    struct result *r = user;

    if (r->part_index == r->data_index) {
        r->cb_data += len;
        for (size_t i = 0; i < len && r->data_len < sizeof(r->data); i++)
            r->data[r->data_len++] = ((const char *)data)[i];
    }
    return 0;
}

static int on_end(void *user, uint64_t size)
{
    struct result *r = user;

    if (r->part_index == r->data_index)
        r->end_size = size;
    r->ends++;
    return 0;
}

static const struct mp_callbacks recording = {on_begin, on_data, on_end};

static void case_limits(const struct mp_case *c, struct mp_limits *lim)
{
    mp_limits_default(lim);
    if (c->max_header_bytes)
        lim->max_header_bytes = c->max_header_bytes;
    if (c->max_parts)
        lim->max_parts = c->max_parts;
    if (c->max_body)
        lim->max_body = c->max_body;
}

/*
 * Feeds body in chunks of the given sizes (the last one runs to the end) and records the
 * outcome. Also checks that an error sticks: the next feed and finish give it again.
 */
static void run_chunks(const char *boundary, const struct mp_limits *lim, const char *body,
                       size_t len, const size_t *sizes, size_t nsizes, struct result *r)
{
    struct mp_parser p;
    size_t off = 0;
    int rc;

    memset(r, 0, sizeof(*r));
    r->data_index = -1;
    r->part_index = -1;
    rc = mp_parser_init(&p, boundary, strlen(boundary), lim, &recording, r);
    if (rc) {
        r->err = rc;
        return;
    }
    for (size_t i = 0; off < len || i == 0; i++) {
        size_t n = i < nsizes && sizes[i] < len - off ? sizes[i] : len - off;
        ssize_t got = mp_parser_feed(&p, body + off, n);

        if (got < 0) {
            r->err = (int)got;
            break;
        }
        if ((size_t)got != n)
            r->err = 1000; /* impossible by contract: shows up as a mismatch */
        off += n;
        if (i >= nsizes && off < len)
            break;
    }
    if (r->err == 0)
        r->err = mp_parser_finish(&p);
    if (r->err < 0) {
        if (mp_parser_feed(&p, "x", 1) != r->err || mp_parser_finish(&p) != r->err)
            r->err = 2000; /* the error did not stick */
    }
    r->found = mp_parser_data_found(&p);
    r->size = mp_parser_data_size(&p);
    r->parts = mp_parser_parts(&p);
    r->bytes = mp_parser_bytes(&p);
}

/* Mismatches against the case's expectation, described in why (for the first failure). */
static bool result_ok(const struct mp_case *c, const struct result *r, char *why, size_t size)
{
    /* A case that gives the content expects its length as the count. */
    uint64_t want_size = c->want_data ? c->want_data_len : c->want_size;

    if (r->err != c->want_err)
        snprintf(why, size, "err %d, want %d", r->err, c->want_err);
    else if (r->found != c->want_found)
        snprintf(why, size, "found %d, want %d", r->found, c->want_found);
    else if (r->size != want_size)
        snprintf(why, size, "size %llu, want %llu", (unsigned long long)r->size,
                 (unsigned long long)want_size);
    else if (r->parts != c->want_parts)
        snprintf(why, size, "parts %u, want %u", r->parts, c->want_parts);
    else if (r->cb_data != r->size)
        snprintf(why, size, "callbacks saw %llu data bytes, counted %llu",
                 (unsigned long long)r->cb_data, (unsigned long long)r->size);
    else if (r->err == 0 && (r->begins != r->parts || r->ends != r->parts))
        snprintf(why, size, "begin/end callbacks %u/%u for %u parts", r->begins, r->ends, r->parts);
    else if (r->err == 0 && r->found && r->end_size != r->size)
        snprintf(why, size, "on_part_end size %llu, counted %llu", (unsigned long long)r->end_size,
                 (unsigned long long)r->size);
    else if (c->want_data &&
             (r->data_len != c->want_data_len || memcmp(r->data, c->want_data, r->data_len) != 0))
        snprintf(why, size, "data content differs (%zu bytes, want %zu)", r->data_len,
                 c->want_data_len);
    else
        return true;
    return false;
}

/* Counts cases whose answer differs; prints the first difference of each case. */
static unsigned check_case(const struct mp_case *c, const char *how, const size_t *sizes,
                           size_t nsizes)
{
    struct mp_limits lim;
    struct result r;
    char why[160];

    case_limits(c, &lim);
    run_chunks(c->boundary ? c->boundary : B, &lim, c->body, c->len, sizes, nsizes, &r);
    if (result_ok(c, &r, why, sizeof(why))) {
        struct result whole;

        /* Where parsing stopped must not depend on the chunking either. */
        run_chunks(c->boundary ? c->boundary : B, &lim, c->body, c->len, NULL, 0, &whole);
        if (r.bytes == whole.bytes && (r.err != 0 || r.bytes == c->len))
            return 0;
        snprintf(why, sizeof(why), "took %llu bytes, whole took %llu of %zu",
                 (unsigned long long)r.bytes, (unsigned long long)whole.bytes, c->len);
    }
    fprintf(stderr, "multipart_%s: %s: %s\n", c->name, how, why);
    return 1;
}

#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void multipart_cases_fed_whole(void)
{
    for (size_t i = 0; i < NCASES; i++)
        CHECK_INT(check_case(&cases[i], "whole", NULL, 0), 0);
}

static void multipart_cases_split_at_every_byte(void)
{
    for (size_t i = 0; i < NCASES; i++) {
        unsigned bad = 0;

        for (size_t cut = 0; cut <= cases[i].len && !bad; cut++) {
            char how[64];

            snprintf(how, sizeof(how), "split at %zu", cut);
            bad += check_case(&cases[i], how, &cut, 1);
        }
        CHECK_INT(bad, 0);
    }
}

static void multipart_short_cases_split_in_three_everywhere(void)
{
    for (size_t i = 0; i < NCASES; i++) {
        unsigned bad = 0;

        if (cases[i].len > 200)
            continue;
        for (size_t a = 0; a <= cases[i].len && !bad; a++) {
            for (size_t b = a; b <= cases[i].len && !bad; b++) {
                size_t sizes[2] = {a, b - a};
                char how[64];

                snprintf(how, sizeof(how), "split at %zu and %zu", a, b);
                bad += check_case(&cases[i], how, sizes, 2);
            }
        }
        CHECK_INT(bad, 0);
    }
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void multipart_cases_fed_in_random_small_chunks(void)
{
    uint64_t seed = 0x5eed5eed12345678u;

    for (size_t i = 0; i < NCASES; i++) {
        unsigned bad = 0;

        for (int round = 0; round < 50 && !bad; round++) {
            size_t sizes[512], n = 0, total = 0;
            char how[64];

            while (total < cases[i].len && n < sizeof(sizes) / sizeof(sizes[0])) {
                sizes[n] = 1 + (size_t)(rng_next(&seed) % 7);
                total += sizes[n++];
            }
            snprintf(how, sizeof(how), "random chunks, round %d", round);
            bad += check_case(&cases[i], how, sizes, n);
        }
        CHECK_INT(bad, 0);
    }
}

static void multipart_cases_fed_one_byte_at_a_time(void)
{
    static size_t ones[1024];

    for (size_t i = 0; i < sizeof(ones) / sizeof(ones[0]); i++)
        ones[i] = 1;
    for (size_t i = 0; i < NCASES; i++) {
        CHECK(cases[i].len <= sizeof(ones) / sizeof(ones[0]));
        CHECK_INT(check_case(&cases[i], "one byte at a time", ones, cases[i].len), 0);
    }
}

/* ---------------------------------------------------------------- API contract */

struct names {
    int n;
    char name[2][16];
    char filename[2][16];
    char ctype[2][16];
};

static void copy_or_null(char *dst, const char *src)
{
    snprintf(dst, 16, "%s", src ? src : "(null)");
}

static int record_names(void *user, const char *name, const char *filename, const char *ctype)
{
    struct names *s = user;

    if (s->n < 2) {
        copy_or_null(s->name[s->n], name);
        copy_or_null(s->filename[s->n], filename);
        copy_or_null(s->ctype[s->n], ctype);
    }
    s->n++;
    return 0;
}

static void multipart_passes_name_filename_and_content_type(void)
{
    static const char body[] =
        "--" B "\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nabc\r\n"
        "--" B "\r\nContent-Type:  image/png \r\nContent-Disposition: form-data; "
        "filename=\"a \\\"b\\\".png\"; name=data\r\n\r\n12\r\n--" B "--";
    struct mp_callbacks cb = {record_names, NULL, NULL};
    struct names s;
    struct mp_parser p;

    memset(&s, 0, sizeof(s));
    CHECK_INT(mp_parser_init(&p, B, strlen(B), NULL, &cb, &s), 0);
    CHECK_INT(mp_parser_feed(&p, body, sizeof(body) - 1), (long long)(sizeof(body) - 1));
    CHECK_INT(mp_parser_finish(&p), 0);
    CHECK_INT(s.n, 2);
    CHECK_STR(s.name[0], "token");
    CHECK_STR(s.filename[0], "(null)");
    CHECK_STR(s.ctype[0], "(null)");
    CHECK_STR(s.name[1], "data");
    CHECK_STR(s.filename[1], "a \"b\".png");
    CHECK_STR(s.ctype[1], "image/png");
    CHECK_U64(mp_parser_data_size(&p), 2);
    CHECK_U64(mp_parser_bytes(&p), sizeof(body) - 1);
}

static int abort_on_data(void *user, const void *data, size_t len)
{
    (void)user;
    (void)data;
    (void)len;
    return 1;
}

static void multipart_callback_can_abort(void)
{
    static const char body[] = FIELD("data", "abc") CLOSE;
    struct mp_callbacks cb = {NULL, abort_on_data, NULL};
    struct mp_parser p;

    CHECK_INT(mp_parser_init(&p, B, strlen(B), NULL, &cb, NULL), 0);
    CHECK_INT(mp_parser_feed(&p, body, sizeof(body) - 1), MP_ERR_ABORTED);
    CHECK_INT(mp_parser_feed(&p, body, 1), MP_ERR_ABORTED);
    CHECK_INT(mp_parser_finish(&p), MP_ERR_ABORTED);
    CHECK_INT(mp_error_status(MP_ERR_ABORTED), 500);
}

static void multipart_init_refuses_bad_arguments(void)
{
    struct mp_parser p;
    struct mp_limits lim;

    mp_limits_default(&lim);
    CHECK_INT(lim.max_header_bytes, 8192);
    CHECK_INT(lim.max_parts, 1000);
    CHECK_U64(lim.max_body, (uint64_t)1 << 30);
    CHECK_INT(mp_parser_init(NULL, "a", 1, NULL, NULL, NULL), MP_ERR_PARAM);
    CHECK_INT(mp_parser_init(&p, "", 0, NULL, NULL, NULL), MP_ERR_NO_BOUNDARY);
    /* A parser whose init failed keeps answering the error. */
    CHECK_INT(mp_parser_feed(&p, "--", 2), MP_ERR_NO_BOUNDARY);
    CHECK_INT(mp_parser_finish(&p), MP_ERR_NO_BOUNDARY);
    CHECK_INT(mp_parser_init(&p, "a@", 2, NULL, NULL, NULL), MP_ERR_BAD_BOUNDARY);
    CHECK_INT(mp_parser_init(&p, B71, 71, NULL, NULL, NULL), MP_ERR_BOUNDARY_TOO_LONG);
    lim.max_header_bytes = MP_HEADER_BYTES_CAP + 1;
    CHECK_INT(mp_parser_init(&p, "a", 1, &lim, NULL, NULL), MP_ERR_PARAM);
    lim.max_header_bytes = 0;
    CHECK_INT(mp_parser_init(&p, "a", 1, &lim, NULL, NULL), MP_ERR_PARAM);
    mp_limits_default(&lim);
    lim.max_parts = 0;
    CHECK_INT(mp_parser_init(&p, "a", 1, &lim, NULL, NULL), MP_ERR_PARAM);
    CHECK_INT(mp_parser_init(&p, "a", 1, NULL, NULL, NULL), 0);
    CHECK_INT(mp_parser_feed(&p, NULL, 1), MP_ERR_PARAM);
    CHECK_INT(mp_parser_feed(&p, NULL, 0), 0);
    CHECK_INT(mp_parser_feed(&p, "--a--", 5), 5);
    CHECK_INT(mp_parser_finish(&p), 0);
    CHECK_INT(mp_parser_finish(&p), 0);
}

static void multipart_maps_errors_to_text_and_status(void)
{
    static const struct {
        int err;
        int status;
        const char *text;
    } t[] = {
        {MP_OK, 200, "ok"},
        {MP_ERR_PARAM, 500, "invalid argument"},
        {MP_ERR_CONTENT_TYPE, 415, "not multipart/form-data"},
        {MP_ERR_NO_BOUNDARY, 400, "malformed multipart: missing or empty boundary"},
        {MP_ERR_BOUNDARY_TOO_LONG, 400, "malformed multipart: boundary longer than 70 characters"},
        {MP_ERR_BAD_BOUNDARY, 400, "malformed multipart: invalid boundary in Content-Type"},
        {MP_ERR_BAD_DELIMITER, 400, "malformed multipart: bad boundary line"},
        {MP_ERR_BAD_HEADERS, 400, "malformed multipart: bad part headers"},
        {MP_ERR_HEADERS_TOO_LARGE, 400, "malformed multipart: part headers too large"},
        {MP_ERR_TOO_MANY_PARTS, 400, "too many parts in the form"},
        {MP_ERR_BODY_TOO_LARGE, 413, "body too large"},
        {MP_ERR_TRUNCATED, 400, "truncated multipart body: no closing boundary"},
        {MP_ERR_NO_DATA_PART, 400, "no data part in the form"},
        {MP_ERR_ABORTED, 500, "multipart parsing aborted"},
        {-99, 500, "unknown multipart error"},
        {7, 500, "unknown multipart error"},
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        CHECK_INT(mp_error_status(t[i].err), t[i].status);
        CHECK_STR(mp_strerror(t[i].err), t[i].text);
    }
}

/* A large part in big chunks: the count is exact and nothing grows. */
static void multipart_counts_large_part_in_big_chunks(void)
{
    static char chunk[65536];
    static const char head[] = "--" B "\r\nContent-Disposition: form-data; name=\"data\"; "
                               "filename=\"big\"\r\n\r\n";
    static const char tail[] = "\r\n--" B "--\r\n";
    struct mp_parser p;
    uint64_t want = 0;

    for (size_t i = 0; i < sizeof(chunk); i++)
        chunk[i] = (char)((i * 131u) ^ (i >> 7)); /* includes CR, LF and '-' */
    CHECK_INT(mp_parser_init(&p, B, strlen(B), NULL, NULL, NULL), 0);
    CHECK_INT(mp_parser_feed(&p, head, sizeof(head) - 1), (long long)(sizeof(head) - 1));
    for (int i = 0; i < 160; i++) {
        size_t n = sizeof(chunk) - (size_t)i; /* odd sizes move the chunk edges */

        CHECK_INT(mp_parser_feed(&p, chunk, n), (long long)n);
        want += n;
    }
    CHECK_INT(mp_parser_feed(&p, tail, sizeof(tail) - 1), (long long)(sizeof(tail) - 1));
    CHECK_INT(mp_parser_finish(&p), 0);
    CHECK_U64(mp_parser_data_size(&p), want);
}

/* ---------------------------------------------------------------- real clients' bodies */

static char *read_file(const char *dir, const char *name, const char *ext, size_t *len)
{
    char path[1024];
    FILE *f;
    char *buf = NULL;
    long size;

    snprintf(path, sizeof(path), "%s/%s%s", dir, name, ext);
    f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)size + 1);
        if (buf && fread(buf, 1, (size_t)size, f) == (size_t)size) {
            buf[size] = '\0';
            *len = (size_t)size;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static void strip_newline(char *s, size_t *len)
{
    while (*len > 0 && (s[*len - 1] == '\n' || s[*len - 1] == '\r'))
        s[--*len] = '\0';
}

/* One fixture: whole, split at every byte, random chunks; all must give the recorded size. */
static void check_fixture(const char *dir, const char *name)
{
    char *ct, *body, *size_text, boundary[MP_BOUNDARY_MAX + 1];
    size_t ct_len, body_len, size_len, blen;
    struct mp_case c;
    uint64_t seed = 42;
    unsigned bad = 0;

    ct = read_file(dir, name, ".ctype", &ct_len);
    body = read_file(dir, name, ".body", &body_len);
    size_text = read_file(dir, name, ".size", &size_len);
    CHECK(ct && body && size_text);
    if (!ct || !body || !size_text)
        goto out;
    strip_newline(ct, &ct_len);
    CHECK_INT(mp_boundary_parse(ct, ct_len, boundary, &blen), 0);

    memset(&c, 0, sizeof(c));
    c.name = name;
    c.body = body;
    c.len = body_len;
    c.boundary = boundary;
    c.want_found = true;
    c.want_size = strtoull(size_text, NULL, 10);
    c.want_parts = 2;
    bad += check_case(&c, "whole", NULL, 0);
    for (size_t cut = 0; cut <= body_len && !bad; cut++)
        bad += check_case(&c, "split at every byte", &cut, 1);
    for (int round = 0; round < 20 && !bad; round++) {
        static size_t sizes[16384];
        size_t n = 0, total = 0;

        while (total < body_len && n < sizeof(sizes) / sizeof(sizes[0])) {
            sizes[n] = 1 + (size_t)(rng_next(&seed) % 7);
            total += sizes[n++];
        }
        bad += check_case(&c, "random chunks", sizes, n);
    }
    CHECK_INT(bad, 0);
out:
    free(ct);
    free(body);
    free(size_text);
}

static void multipart_counts_real_clients_bodies(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "cannot open fixture directory %s\n", dir);
        return;
    }
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char name[256];

        if (len <= 6 || len >= sizeof(name) || strcmp(e->d_name + len - 6, ".ctype") != 0)
            continue;
        memcpy(name, e->d_name, len - 6);
        name[len - 6] = '\0';
        check_fixture(dir, name);
        n++;
    }
    closedir(d);
    printf("fixtures: %d real-client bodies checked\n", n);
    CHECK(n >= 3);
}

/* ---------------------------------------------------------------- generated forms (oracle) */

static uint32_t pick_rng(void *ctx, uint32_t n)
{
    return (uint32_t)(rng_next(ctx) % n);
}

/*
 * Forms with a random boundary, 1-8 parts (several "data", "token" and others), content dense in
 * CR, LF, '-' and near-misses of the delimiter, each parsed in four random chunkings (whole, one
 * byte at a time, small or large chunks, cuts around the delimiters): the parser must report the
 * first data part's known size and bytes, the part count and names, and no error.
 */
static void multipart_counts_generated_forms_at_random_splits(void)
{
    static struct mpform form;
    static struct mpform_plan plan;
    uint64_t seed = 0x6d70666f726d3031u;
    unsigned bad = 0, with_data = 0, bytes = 0;

    for (int i = 0; i < 4000; i++) {
        mpform_make(&form, pick_rng, &seed);
        with_data += form.found;
        bytes += (unsigned)form.len;
        for (int k = 0; k < 4; k++) {
            char why[256];

            mpform_plan(&plan, &form, form.len, pick_rng, &seed);
            if (mpform_check(&form, form.len, &plan, why, sizeof(why)) != 0 && ++bad <= 5) {
                fprintf(stderr, "form %d (boundary \"%s\", %zu bytes), chunking %d: %s\n", i,
                        form.boundary, form.len, k, why);
            }
        }
    }
    printf("oracle: 4000 forms (%u with a data part, %u bytes), 4 chunkings each: %u wrong\n",
           with_data, bytes, bad);
    CHECK_INT(bad, 0);
    CHECK(with_data > 1000 && with_data < 4000);
}

/*
 * The same forms cut short: before the close delimiter's "--" ends, finish reports
 * MP_ERR_TRUNCATED, never a count; cut in the epilogue, the answer of the whole form.
 */
static void multipart_reports_truncated_generated_forms(void)
{
    static struct mpform form;
    static struct mpform_plan plan;
    uint64_t seed = 0x7472756e63617465u;
    unsigned bad = 0, truncated = 0;

    for (int i = 0; i < 2000; i++) {
        mpform_make(&form, pick_rng, &seed);
        for (int k = 0; k < 4; k++) {
            /* Half the cuts land in the last 80 bytes, where the close delimiter is. */
            size_t cut = k % 2 || form.len < 80 ? (size_t)(rng_next(&seed) % (form.len + 1))
                                                : form.len - (size_t)(rng_next(&seed) % 80);
            char why[256];

            truncated += cut < form.close_end;
            mpform_plan(&plan, &form, cut, pick_rng, &seed);
            if (mpform_check(&form, cut, &plan, why, sizeof(why)) != 0 && ++bad <= 5) {
                fprintf(stderr, "form %d (boundary \"%s\", %zu bytes), cut at %zu: %s\n", i,
                        form.boundary, form.len, cut, why);
            }
        }
    }
    printf("oracle: 8000 cuts (%u before the close delimiter ends): %u wrong\n", truncated, bad);
    CHECK_INT(bad, 0);
    CHECK(truncated > 4000 && truncated < 8000);
}

int main(int argc, char **argv)
{
    boundary_parse_table();
    boundary_parse_stops_at_given_length();
    boundary_check_refuses_bad_values();
    multipart_cases_fed_whole();
    multipart_cases_split_at_every_byte();
    multipart_short_cases_split_in_three_everywhere();
    multipart_cases_fed_in_random_small_chunks();
    multipart_cases_fed_one_byte_at_a_time();
    multipart_passes_name_filename_and_content_type();
    multipart_callback_can_abort();
    multipart_init_refuses_bad_arguments();
    multipart_maps_errors_to_text_and_status();
    multipart_counts_large_part_in_big_chunks();
    multipart_counts_generated_forms_at_random_splits();
    multipart_reports_truncated_generated_forms();
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR (tests/fixtures/multipart)\n", argv[0]);
        CHECK(argc >= 2);
    } else {
        multipart_counts_real_clients_bodies(argv[1]);
    }
    return CHECK_DONE();
}
