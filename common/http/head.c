#include "http/head.h"

#include <stdint.h>
#include <string.h>

/* RFC 9110 section 5.6.2: tchar. */
static int is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return 1;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

int head_is_token(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_tchar((unsigned char)s[i]))
            return 0;
    return 1;
}

/* A byte a field value may not hold: a control byte other than HTAB, or DEL. */
static int is_bad_value_byte(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int name_is(const struct head_field *f, const char *name)
{
    size_t n = strlen(name);
    if (f->nlen != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char a = (unsigned char)f->name[i], b = (unsigned char)name[i];
        if ((a | 0x20) != (b | 0x20) || !is_tchar(a))
            return 0;
    }
    return 1;
}

/* v[0..*n) without the whitespace around it. */
static const char *trim(const char *v, size_t *n)
{
    while (*n && (v[0] == ' ' || v[0] == '\t')) {
        v++;
        (*n)--;
    }
    while (*n && (v[*n - 1] == ' ' || v[*n - 1] == '\t'))
        (*n)--;
    return v;
}

static int equals_ci(const char *s, size_t n, const char *want)
{
    size_t w = strlen(want);
    if (n != w)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((s[i] | 0x20) != want[i])
            return 0;
    return 1;
}

/* 1 if v is one plain decimal number of at most 18 digits (a length no client sends more of). */
static int plain_number(const char *v, size_t n)
{
    v = trim(v, &n);
    if (n == 0 || n > 18)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] < '0' || v[i] > '9')
            return 0;
    return 1;
}

/* RFC 3986 section 3.2.2 reg-name bytes: unreserved, sub-delims and the '%' of pct-encoded. */
static int is_host_byte(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return 1;
    return c != 0 && strchr("-._~!$&'()*+,;=%", c) != NULL;
}

/* 1 if v is uri-host [ ":" port ] (RFC 9110 section 7.2): a reg-name or IPv4 address, or an IP
 * literal in brackets, then an optional port of digits. Empty is allowed (an empty authority). */
static int valid_host(const char *v, size_t n)
{
    v = trim(v, &n);
    size_t i = 0;
    if (n && v[0] == '[') {
        for (i = 1; i < n && v[i] != ']'; i++) {
            unsigned char c = (unsigned char)v[i];
            if (!(c == ':' || c == '.' || (c >= '0' && c <= '9') ||
                  ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')))
                return 0;
        }
        if (i == n)
            return 0;
        i++;
    } else {
        while (i < n && is_host_byte((unsigned char)v[i]))
            i++;
    }
    if (i < n && v[i] == ':')
        for (i++; i < n && v[i] >= '0' && v[i] <= '9'; i++)
            ;
    return i == n;
}

static int method_is(const struct head *h, const char *m)
{
    return h->mlen == strlen(m) && memcmp(h->method, m, h->mlen) == 0;
}

/* 1 if the target of an HTTP/1.x head has one of RFC 9112 section 3.2's forms: origin ("/..."),
 * absolute ("http://..."), asterisk ("*", OPTIONS only) or authority (CONNECT only). */
static int valid_form(const struct head *h)
{
    if (h->tlen && h->target[0] == '/')
        return 1;
    if (method_is(h, "CONNECT"))
        return h->tlen > 0;
    if (h->tlen == 1 && h->target[0] == '*')
        return method_is(h, "OPTIONS");
    const char *colon = memchr(h->target, ':', h->tlen);
    return colon && colon > h->target && (size_t)(h->target + h->tlen - colon) > 3 &&
           memcmp(colon, "://", 3) == 0;
}

/* 1 if the path of target t (before any '?') holds a percent-encoded NUL. */
static int path_has_nul(const char *t, size_t n)
{
    for (size_t i = 0; i + 2 < n && t[i] != '?'; i++)
        if (t[i] == '%' && t[i + 1] == '0' && t[i + 2] == '0')
            return 1;
    return 0;
}

const char *head_value(const struct head *h, const char *name, size_t *len)
{
    size_t n = h->nfields < HEAD_MAX_FIELDS ? h->nfields : HEAD_MAX_FIELDS;
    for (size_t i = 0; i < n; i++) {
        if (name_is(&h->fields[i], name)) {
            *len = h->fields[i].vlen;
            return trim(h->fields[i].value, len);
        }
    }
    return NULL;
}

long head_values_joined(const struct head *h, const char *name, char *buf, size_t len)
{
    size_t n = h->nfields < HEAD_MAX_FIELDS ? h->nfields : HEAD_MAX_FIELDS, at = 0;
    long found = -1;
    for (size_t i = 0; i < n; i++) {
        if (!name_is(&h->fields[i], name))
            continue;
        size_t vlen = h->fields[i].vlen;
        const char *v = trim(h->fields[i].value, &vlen);
        size_t need = (found >= 0 ? 2 : 0) + vlen;
        if (len && at + need < len) {
            if (found >= 0)
                memcpy(buf + at, ", ", 2);
            memcpy(buf + at + (found >= 0 ? 2 : 0), v, vlen);
        }
        at += need;
        found = (long)at;
    }
    if (len)
        buf[at < len ? at : len - 1] = '\0';
    return found;
}

/* 1 if a Connection field of h lists `option`. */
static int connection_has(const struct head *h, const char *option)
{
    size_t n = h->nfields < HEAD_MAX_FIELDS ? h->nfields : HEAD_MAX_FIELDS;
    for (size_t i = 0; i < n; i++) {
        const struct head_field *f = &h->fields[i];
        if (!name_is(f, "Connection"))
            continue;
        /* A comma-separated list of options. */
        const char *v = f->value, *end = f->value + f->vlen;
        while (v < end) {
            const char *comma = memchr(v, ',', (size_t)(end - v));
            size_t len = (size_t)((comma ? comma : end) - v);
            const char *opt = trim(v, &len);
            if (equals_ci(opt, len, option))
                return 1;
            v = comma ? comma + 1 : end;
        }
    }
    return 0;
}

int head_wants_close(const struct head *h)
{
    if (h->h2)
        return 0;
    return connection_has(h, "close") || (h->minor == 0 && !connection_has(h, "keep-alive"));
}

/* RFC 9113 section 8.2.2: fields that are only about a connection, which HTTP/2 does not carry
 * ("te" only as "trailers"). */
static int connection_specific(const struct head_field *f)
{
    static const char *const names[] = {"Connection", "Keep-Alive", "Proxy-Connection",
                                        "Transfer-Encoding", "Upgrade"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name_is(f, names[i]))
            return 1;
    return name_is(f, "TE") && !equals_ci(f->value, f->vlen, "trailers");
}

/* The checks of an HTTP/2 request (RFC 9113 sections 8.2 and 8.3.1) that the library leaves to
 * the server, after those both protocols share (the method, the target's bytes, the count of
 * fields, their names and the bytes of their values). */
static unsigned h2_check(const struct head *h, size_t n, const char **why)
{
    if (!(h->tlen && h->target[0] == '/') &&
        !(h->tlen == 1 && h->target[0] == '*' && method_is(h, "OPTIONS"))) {
        *why = ":path must start with / (or be * for OPTIONS)";
        return 400;
    }
    for (size_t i = 0; i < n; i++) {
        const struct head_field *f = &h->fields[i];
        if (connection_specific(f)) {
            *why = "a connection-specific header field in an HTTP/2 request";
            return 400;
        }
        if (f->vlen && (f->value[0] == ' ' || f->value[0] == '\t' || f->value[f->vlen - 1] == ' ' ||
                        f->value[f->vlen - 1] == '\t')) {
            *why = "an HTTP/2 header field value starts or ends with whitespace";
            return 400;
        }
    }
    return 0;
}

unsigned head_check(const struct head *h, const char **why)
{
    size_t n = h->nfields < HEAD_MAX_FIELDS ? h->nfields : HEAD_MAX_FIELDS;
    size_t hosts = 0, lengths = 0, encodings = 0;
    int te_chunked = 1;
    int expect_unmet = 0;

    if (!head_is_token(h->method, h->mlen)) {
        *why = "the method is not a token";
        return 400;
    }
    for (size_t i = 0; i < h->tlen; i++) {
        unsigned char c = (unsigned char)h->target[i];
        if (c <= ' ' || c == 0x7f) {
            *why = "the request target holds a control byte or a space";
            return 400;
        }
    }
    if (!h->h2 && !valid_form(h)) {
        *why = "the request target must start with / (or be an absolute URL, or * for OPTIONS)";
        return 400;
    }
    if (path_has_nul(h->target, h->tlen)) {
        *why = "the request path holds a percent-encoded NUL (%00)";
        return 400;
    }
    if (h->nfields > HEAD_MAX_FIELDS) {
        *why = "more than 100 header fields";
        return 431;
    }
    if (h->folded) {
        *why = "a header field is folded over two lines (obs-fold)";
        return 400;
    }
    for (size_t i = 0; i < n; i++) {
        const struct head_field *f = &h->fields[i];
        if (!head_is_token(f->name, f->nlen)) {
            *why = "a header field name is not a token (a space before its colon?)";
            return 400;
        }
        for (size_t j = 0; j < f->vlen; j++) {
            if (is_bad_value_byte((unsigned char)f->value[j])) {
                *why = "a header field value holds a control byte";
                return 400;
            }
        }
        if (name_is(f, "Host")) {
            hosts++;
            if (!valid_host(f->value, f->vlen)) {
                *why = "Host is not a host name or address with an optional port";
                return 400;
            }
        } else if (name_is(f, "Content-Length")) {
            lengths++;
            if (!plain_number(f->value, f->vlen)) {
                *why = "Content-Length is not one plain number";
                return 400;
            }
        } else if (name_is(f, "Transfer-Encoding")) {
            size_t len = f->vlen;
            const char *v = trim(f->value, &len);
            encodings++;
            /* Whitespace after it is no part of the value, but neither library then frames
             * the body as chunked (libmicrohttpd would wait for ever): refused. */
            int trailing_ows =
                f->vlen && (f->value[f->vlen - 1] == ' ' || f->value[f->vlen - 1] == '\t');
            te_chunked &= equals_ci(v, len, "chunked") && !trailing_ows;
        } else if (name_is(f, "Expect")) {
            size_t len = f->vlen;
            const char *v = trim(f->value, &len);
            expect_unmet |= !equals_ci(v, len, "100-continue");
        }
    }
    if (h->h2)
        return h2_check(h, n, why);
    if (lengths > 1) {
        *why = "Content-Length is sent more than once";
        return 400;
    }
    if (encodings) {
        if (lengths) {
            *why = "both Content-Length and Transfer-Encoding are sent";
            return 400;
        }
        if (h->minor == 0) {
            *why = "Transfer-Encoding in an HTTP/1.0 request";
            return 400;
        }
        /* Exactly "chunked", once: what both libraries decode. RFC 9112 section 6.1 would allow
         * 501 for a known coding before chunked, and empty list elements ("chunked,"); libh2o
         * answers 400 to those before slowsrv sees the request, and libmicrohttpd would wait for
         * a body it cannot frame. */
        if (encodings > 1 || !te_chunked) {
            *why = "Transfer-Encoding must be chunked alone";
            return 400;
        }
    }
    if (hosts > 1 || (hosts == 0 && h->minor >= 1)) {
        *why = hosts ? "Host is sent more than once" : "an HTTP/1.1 request needs a Host header";
        return 400;
    }
    if (expect_unmet) {
        *why = "the only expectation met is 100-continue";
        return 417;
    }
    return 0;
}

/* The end of the line at p (before its CR LF or LF), and the start of the next in *next; NULL if
 * no LF comes before end. */
static const char *line(const char *p, const char *end, const char **next)
{
    const char *lf = memchr(p, '\n', (size_t)(end - p));
    if (!lf)
        return NULL;
    *next = lf + 1;
    return lf > p && lf[-1] == '\r' ? lf - 1 : lf;
}

long head_parse(const char *buf, size_t len, struct head *h, struct head_field *f)
{
    const char *p = buf, *end = buf + len, *next, *le;
    while (p < end && (*p == '\r' || *p == '\n'))
        p++;
    if (!(le = line(p, end, &next)))
        return -2;
    const char *sp1 = memchr(p, ' ', (size_t)(le - p));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(le - sp1 - 1)) : NULL;
    if (!sp2 || sp1 == p || sp2 == sp1 + 1 || le - sp2 != 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
        sp2[8] < '0' || sp2[8] > '9')
        return -1;
    *h = (struct head){.method = p,
                       .mlen = (size_t)(sp1 - p),
                       .target = sp1 + 1,
                       .tlen = (size_t)(sp2 - sp1 - 1),
                       .minor = (unsigned)(sp2[8] - '0'),
                       .fields = f};
    for (p = next; (le = line(p, end, &next)) != NULL; p = next) {
        if (le == p)
            return next - buf;
        struct head_field hf = {"", 0, p, (size_t)(le - p)};
        if (*p == ' ' || *p == '\t') {
            h->folded = 1;
        } else {
            const char *colon = memchr(p, ':', (size_t)(le - p));
            if (!colon)
                return -1;
            hf = (struct head_field){p, (size_t)(colon - p), colon + 1, (size_t)(le - colon - 1)};
        }
        if (h->nfields < HEAD_MAX_FIELDS)
            f[h->nfields] = hf;
        h->nfields++;
    }
    return -2;
}

void head_name_line(const char *buf, size_t len, struct head *h)
{
    const char *nl = memchr(buf, '\n', len);
    const char *end = nl ? nl : buf + len;
    if (end > buf && end[-1] == '\r')
        end--;
    const char *sp = memchr(buf, ' ', (size_t)(end - buf));
    *h = (struct head){.method = "-", .mlen = 1, .target = "", .tlen = 0};
    if (!sp)
        return;
    const char *t = sp + 1, *sp2 = memchr(t, ' ', (size_t)(end - t));
    h->method = buf;
    h->mlen = (size_t)(sp - buf);
    h->target = t;
    h->tlen = (size_t)((sp2 ? sp2 : end) - t);
}
