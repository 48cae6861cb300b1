#include <stdio.h>
#include <string.h>

#include "http/head.h"
#include "check.h"

/* Splits a raw head ("GET / HTTP/1.1\r\nName: value\r\n...", len bytes, NULs allowed) the way
 * an engine hands it over: the request line's three parts, then each field at its first colon. */
static void split(const char *raw, size_t len, struct head *h, struct head_field *f)
{
    const char *end = raw + len, *p = raw;
    const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    const char *sp2 = memrchr(p, ' ', (size_t)(eol - p));
    memset(h, 0, sizeof *h);
    h->method = p;
    h->mlen = (size_t)(sp1 - p);
    h->target = sp1 + 1;
    h->tlen = (size_t)(sp2 - sp1 - 1);
    h->minor = (unsigned)(sp2[8] - '0');
    h->fields = f;
    for (p = eol + 2; p < end && (eol = memmem(p, (size_t)(end - p), "\r\n", 2)) != NULL;
         p = eol + 2) {
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (eol == p || !colon)
            break;
        if (h->nfields < HEAD_MAX_FIELDS) {
            struct head_field *x = &f[h->nfields];
            x->name = p;
            x->nlen = (size_t)(colon - p);
            x->value = colon + 1;
            x->vlen = (size_t)(eol - colon - 1);
        }
        h->nfields++;
    }
}

struct head_case {
    const char *raw;
    size_t len; /* 0: strlen(raw) */
    unsigned want;
};

#define R(s) s, sizeof(s) - 1

static const struct head_case cases[] = {
    {R("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"), 0},
    {R("GET /echo HTTP/1.0\r\n\r\n"), 0},
    {R("GET /echo?a=%20 HTTP/1.1\r\nHost: x\r\nX-A:\r\nX-B:\tv\t\r\n\r\n"), 0},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"), 0},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length:  5 \r\n\r\n"), 0},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"), 0},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n"), 0},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n\r\n"), 0},
    /* the method, the target */
    {R("G\x01T /echo HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("G(T /echo HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R(" /echo HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("GET /ec\0ho HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("GET /ec\x7fho HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("GET /a b HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    /* field names and values */
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\n Content-Length: 5\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\0 12\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\x0b b\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\x7f\r\n\r\n"), 400},
    /* Content-Length */
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0, 5\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1234567890123456789\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 30\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n"), 400},
    /* Transfer-Encoding */
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
     400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"),
     400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \x0b"
       "chunked\r\n\r\n"),
     400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
       "chunked\r\n\r\n"),
     400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked;x=1\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: "
       "chunked\r\n\r\n"),
     400},
    /* Host, Expect */
    {R("GET /echo HTTP/1.1\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.0\r\nHost: x\r\nhost: x\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n"), 417},
    {R("GET /echo HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nExpect: 100-continue\r\n\r\n"), 417},
    /* found by fuzz_head: an empty list element after chunked */
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked,\r\n\r\n"), 400},
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \tchunked\r\n\r\n"), 0},
    /* whitespace after chunked: neither library frames the body then */
    {R("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \tchunked \r\n\r\n"), 400},
    /* Host must be uri-host [":" port] */
    {R("GET /echo HTTP/1.1\r\nHost: a b\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: a@b/c\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: x:8o\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: [::1\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: [::1]x\r\n\r\n"), 400},
    {R("GET /echo HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"), 0},
    {R("GET /echo HTTP/1.1\r\nHost: my-host.example_1:80\r\n\r\n"), 0},
    {R("GET /echo HTTP/1.1\r\nHost: 10.0.0.1:\r\n\r\n"), 0},
    {R("GET /echo HTTP/1.1\r\nHost:\r\n\r\n"), 0},
    /* a %00 in the path, not in the query */
    {R("GET /echo%00.png HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("GET /echo?a=%00 HTTP/1.1\r\nHost: x\r\n\r\n"), 0},
    {R("GET /echo%000 HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("GET /echo%01 HTTP/1.1\r\nHost: x\r\n\r\n"), 0},
    /* the target's form */
    {R("GET echo HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("GET * HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"), 0},
    {R("GET http://x/echo HTTP/1.1\r\nHost: x\r\n\r\n"), 0},
    {R("GET http:/x HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("GET ://x/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
    {R("CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n"), 0},
    {R("GET x:443 HTTP/1.1\r\nHost: x\r\n\r\n"), 400},
};

static void heads_get_their_answer(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct head h;
        struct head_field f[HEAD_MAX_FIELDS];
        const char *why = NULL;
        split(cases[i].raw, cases[i].len, &h, f);
        unsigned got = head_check(&h, &why);
        if (got != cases[i].want)
            CHECK_FAIL_("case %zu (%.40s...): %u, want %u", i, cases[i].raw, got, cases[i].want);
        else
            CHECK(got == 0 ? why == NULL : why != NULL && why[0] != '\0');
    }
}

static void too_many_fields_get_431_and_folded_lines_400(void)
{
    char raw[8192];
    size_t n = (size_t)snprintf(raw, sizeof raw, "GET /echo HTTP/1.1\r\nHost: x\r\n");
    for (int i = 0; i < HEAD_MAX_FIELDS - 1; i++)
        n += (size_t)snprintf(raw + n, sizeof raw - n, "X-%d: v\r\n", i);
    n += (size_t)snprintf(raw + n, sizeof raw - n, "\r\n");
    struct head h;
    struct head_field f[HEAD_MAX_FIELDS];
    const char *why;
    split(raw, n, &h, f);
    CHECK_INT(h.nfields, HEAD_MAX_FIELDS);
    CHECK_INT(head_check(&h, &why), 0);
    h.nfields++;
    CHECK_INT(head_check(&h, &why), 431);
    h.nfields--;
    h.folded = 1;
    CHECK_INT(head_check(&h, &why), 400);
}

/* head_parse splits a head as received: CRLF or LF line ends, empty lines before the request
 * line, a folded line as a field without a name; it says -2 for a head not yet whole and -1 for
 * what is not an HTTP/1.x head. */
static void head_parse_splits_heads_as_received(void)
{
    static const struct {
        const char *in;
        long want;  /* head_parse's return */
        size_t nf;  /* fields */
        int folded; /* h.folded */
    } splits[] = {
        {"GET /a?b HTTP/1.1\r\nHost: x\r\nX-A:  1 \r\n\r\nBODY", 40, 2, 0},
        {"\r\n\r\nGET / HTTP/1.0\nHost: x\n\n", 28, 1, 0},
        {"GET / HTTP/1.1\r\nA: 1\r\n  2\r\n\r\n", 29, 2, 1},
        {"GET / HTTP/1.1\r\nHost: x\r\n", -2, 0, 0},
        {"GET / HTTP/1.1", -2, 0, 0},
        {"GET / HTTP/2.0\r\n\r\n", -1, 0, 0},
        {"GET /  HTTP/1.1\r\n\r\n", -1, 0, 0},
        {"GET / HTTP/1.1\r\nno colon\r\n\r\n", -1, 0, 0},
        {"GET\r\n\r\n", -1, 0, 0},
    };
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        struct head h;
        struct head_field f[HEAD_MAX_FIELDS];
        long n = head_parse(splits[i].in, strlen(splits[i].in), &h, f);
        CHECK_INT(n, splits[i].want);
        if (n > 0) {
            CHECK_INT(h.nfields, splits[i].nf);
            CHECK_INT(h.folded, splits[i].folded);
        }
    }
    struct head h;
    struct head_field f[HEAD_MAX_FIELDS];
    static const char get[] = "GET /a?b HTTP/1.1\r\nHost: x\r\nX-A:  1 \r\n\r\n";
    CHECK_INT(head_parse(get, sizeof get - 1, &h, f), (long)sizeof get - 1);
    CHECK(h.mlen == 3 && memcmp(h.method, "GET", 3) == 0);
    CHECK(h.tlen == 4 && memcmp(h.target, "/a?b", 4) == 0);
    CHECK_INT(h.minor, 1);
    CHECK(f[1].nlen == 3 && memcmp(f[1].name, "X-A", 3) == 0);
    CHECK(f[1].vlen == 4 && memcmp(f[1].value, "  1 ", 4) == 0);
    const char *why;
    CHECK_INT(head_check(&h, &why), 0);
    /* More fields than HEAD_MAX_FIELDS: all counted, the first ones kept, 431. */
    static char many[16 + 110 * 6 + 3];
    size_t k = (size_t)snprintf(many, sizeof many, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < 110; i++)
        k += (size_t)snprintf(many + k, sizeof many - k, "A: 1\r\n");
    k += (size_t)snprintf(many + k, sizeof many - k, "\r\n");
    CHECK_INT(head_parse(many, k, &h, f), (long)k);
    CHECK_INT(h.nfields, 110);
    CHECK_INT(head_check(&h, &why), 431);
}

/* Connection: close closes, alone or among other options, in any case; HTTP/1.0 closes unless
 * it lists keep-alive; other options keep an HTTP/1.1 connection open. */
static void connection_close_in_a_list_closes(void)
{
    static const struct {
        const char *raw;
        int want;
    } lists[] = {
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: close, keep-alive\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive ,  CLOSE \r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: closed, xclose\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: x\r\nX-Connection: close\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: x\r\nConnection: TE\r\n\r\n", 0},
        {"GET / HTTP/1.0\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 0},
        {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", 1},
    };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        struct head h;
        struct head_field f[HEAD_MAX_FIELDS];
        split(lists[i].raw, strlen(lists[i].raw), &h, f);
        CHECK_INT(head_wants_close(&h), lists[i].want);
    }
}

/* An HTTP/2 request as decoded: RFC 9113's own checks beside the shared ones. */
static void h2_requests_are_held_to_rfc_9113(void)
{
    static const struct {
        const char *method, *path, *name, *value;
        unsigned want;
    } h2cases[] = {
        {"GET", "/echo", "x-a", "v", 0},
        {"GET", "/echo", "te", "trailers", 0},
        {"OPTIONS", "*", "x-a", "v", 0},
        {"GET", "", "x-a", "v", 400},
        {"GET", "echo", "x-a", "v", 400},
        {"GET", "*", "x-a", "v", 400},
        {"GET", "/echo%00", "x-a", "v", 400},
        {"GET", "/echo", "connection", "close", 400},
        {"GET", "/echo", "keep-alive", "1", 400},
        {"GET", "/echo", "proxy-connection", "x", 400},
        {"GET", "/echo", "transfer-encoding", "chunked", 400},
        {"GET", "/echo", "upgrade", "h2c", 400},
        {"GET", "/echo", "te", "gzip", 400},
        {"GET", "/echo", "x-a", " v", 400},
        {"GET", "/echo", "x-a", "v\t", 400},
        {"GET", "/echo", "x-a", "a\rb", 400},
        {"GET", "/echo", "", "v", 400},
        {"GET", "/echo", "x a", "v", 400},
    };
    for (size_t i = 0; i < sizeof h2cases / sizeof h2cases[0]; i++) {
        struct head_field f = {h2cases[i].name, strlen(h2cases[i].name), h2cases[i].value,
                               strlen(h2cases[i].value)};
        struct head h = {.method = h2cases[i].method,
                         .mlen = strlen(h2cases[i].method),
                         .target = h2cases[i].path,
                         .tlen = strlen(h2cases[i].path),
                         .fields = &f,
                         .nfields = 1,
                         .h2 = 1};
        const char *why = NULL;
        unsigned got = head_check(&h, &why);
        if (got != h2cases[i].want)
            CHECK_FAIL_("h2 case %zu (%s %s): %u, want %u", i, h2cases[i].name, h2cases[i].value,
                        got, h2cases[i].want);
    }
    /* No Host is needed over HTTP/2 (:authority), and 101 fields get 431. */
    struct head_field many[HEAD_MAX_FIELDS];
    for (size_t i = 0; i < HEAD_MAX_FIELDS; i++)
        many[i] = (struct head_field){"x-a", 3, "v", 1};
    struct head h = {.method = "GET",
                     .mlen = 3,
                     .target = "/",
                     .tlen = 1,
                     .fields = many,
                     .nfields = HEAD_MAX_FIELDS,
                     .h2 = 1};
    const char *why;
    CHECK_INT(head_check(&h, &why), 0);
    h.nfields++;
    CHECK_INT(head_check(&h, &why), 431);
}

/* A refused request is named by its request line, whole or cut short. */
static void head_name_line_names_a_refused_request(void)
{
    static const struct {
        const char *line, *method, *target;
    } lines[] = {
        {"GET /echo?x=1 HTTP/1.1\r\nHost: a\r\n", "GET", "/echo?x=1"},
        {"POST /write HTTP/1.1", "POST", "/write"},
        {"GET /a-target-cut-sh", "GET", "/a-target-cut-sh"},
        {"GET /cr\r\n", "GET", "/cr"},
        {"GARBAGE\r\n", "-", ""},
        {"", "-", ""},
        {"GET \nHost: a b\r\n", "GET", ""},
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        struct head h;
        char m[64], t[64];
        head_name_line(lines[i].line, strlen(lines[i].line), &h);
        snprintf(m, sizeof m, "%.*s", (int)h.mlen, h.method);
        snprintf(t, sizeof t, "%.*s", (int)h.tlen, h.target);
        CHECK_STR(m, lines[i].method);
        CHECK_STR(t, lines[i].target);
    }
}

int main(void)
{
    connection_close_in_a_list_closes();
    h2_requests_are_held_to_rfc_9113();
    head_parse_splits_heads_as_received();
    head_name_line_names_a_refused_request();
    heads_get_their_answer();
    too_many_fields_get_431_and_folded_lines_400();
    return CHECK_DONE();
}
