/*
 * libFuzzer target for common/http/head: head_parse() on raw bytes, and head_check() on an
 * HTTP/1.x request head as an engine hands it over.
 *
 * Input: raw bytes, read as a request head the way picohttpparser and libmicrohttpd split one:
 * lines end at LF (a CR before it is dropped); the request line's method ends at its first
 * space and the target at its last; each further line up to an empty one is a field, its name
 * before the first ':' and its value after it (a line without ':' is skipped; one that starts
 * with a space or tab is a folded line). Every name, value, method and target is an exact-size
 * heap copy, so ASan reports any read past its end. The minor version is the input's first
 * byte & 1.
 *
 * Checked against a reference written apart from head.c:
 *   - the status is 0, 400, 417 or 431, with a one-line reason exactly when it is not 0;
 *   - an accepted head has a token method, a target without control bytes, spaces or DEL,
 *     token field names, no control byte but HTAB in any value, at most one Content-Length and
 *     that one digits only (after whitespace), never Content-Length with Transfer-Encoding,
 *     Transfer-Encoding only as one field "chunked" (any case, whitespace around), no folded
 *     line, at most HEAD_MAX_FIELDS fields, one Host over HTTP/1.1 (at most one over 1.0), and
 *     Expect only "100-continue";
 *   - a head with a NUL or CR in a value, two Content-Length fields, or Content-Length with
 *     Transfer-Encoding is refused with 400;
 *   - the answer is the same when asked twice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *copy(const uint8_t *p, size_t n)
{
    char *c = malloc(n ? n : 1);
    if (!c)
        abort();
    memcpy(c, p, n);
    return c;
}

static int tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int token(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!tchar((unsigned char)s[i]))
            return 0;
    return n > 0;
}

static int ieq(const char *s, size_t n, const char *w)
{
    return n == strlen(w) && strncasecmp(s, w, n) == 0;
}

/* v without its surrounding spaces and tabs. */
static void strip(const char **v, size_t *n)
{
    while (*n && ((*v)[0] == ' ' || (*v)[0] == '\t'))
        (*v)++, (*n)--;
    while (*n && ((*v)[*n - 1] == ' ' || (*v)[*n - 1] == '\t'))
        (*n)--;
}

/* head_parse on an exact-size copy of the input: its answer is -2, -1 or a length within the
 * input that ends in LF, everything it points at lies inside the input, and a head it accepts is
 * one HTTP/1.x request line then its fields; head_check then answers it as above. */
static void check_parse(const uint8_t *data, size_t size)
{
    char *buf = copy(data, size);
    struct head h;
    struct head_field f[HEAD_MAX_FIELDS];
    long n = head_parse(buf, size, &h, f);
    if (n != -1 && n != -2 && (n <= 0 || (size_t)n > size || buf[n - 1] != '\n'))
        __builtin_trap();
    if (n > 0) {
        const char *end = buf + n;
        if (h.method < buf || h.method + h.mlen > end || h.target + h.tlen > end || h.mlen == 0 ||
            h.tlen == 0 || h.minor > 9 || memchr(h.method, ' ', h.mlen) ||
            memchr(h.target, ' ', h.tlen))
            __builtin_trap();
        for (size_t i = 0; i < h.nfields && i < HEAD_MAX_FIELDS; i++)
            if (f[i].value < buf || f[i].value + f[i].vlen > end ||
                memchr(f[i].name, ':', f[i].nlen) || memchr(f[i].value, '\n', f[i].vlen))
                __builtin_trap();
        const char *why;
        unsigned st = head_check(&h, &why);
        if (st != 0 && st != 400 && st != 417 && st != 431)
            __builtin_trap();
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct head h = {0};
    struct head_field f[HEAD_MAX_FIELDS];
    char *owned[2 * HEAD_MAX_FIELDS + 2];
    size_t nowned = 0;
    if (size < 2)
        return 0;
    h.minor = data[0] & 1;
    data++;
    size--;
    check_parse(data, size);

    /* The request line. */
    const uint8_t *eol = memchr(data, '\n', size);
    size_t llen = eol ? (size_t)(eol - data) : size;
    size_t body = eol ? llen + 1 : size;
    if (llen && data[llen - 1] == '\r')
        llen--;
    const uint8_t *sp1 = memchr(data, ' ', llen), *sp2 = NULL;
    for (size_t i = llen; i-- > 0;)
        if (data[i] == ' ') {
            sp2 = data + i;
            break;
        }
    if (!sp1 || sp2 <= sp1)
        return 0;
    h.mlen = (size_t)(sp1 - data);
    h.tlen = (size_t)(sp2 - sp1 - 1);
    h.method = owned[nowned++] = copy(data, h.mlen);
    h.target = owned[nowned++] = copy(sp1 + 1, h.tlen);
    h.fields = f;

    /* The fields. */
    int folded = 0;
    size_t pos = body;
    while (pos < size) {
        const uint8_t *p = data + pos;
        const uint8_t *e = memchr(p, '\n', size - pos);
        size_t n = e ? (size_t)(e - p) : size - pos;
        pos += e ? n + 1 : n;
        if (n && p[n - 1] == '\r')
            n--;
        if (n == 0)
            break;
        if (p[0] == ' ' || p[0] == '\t') {
            folded = 1;
            continue;
        }
        const uint8_t *colon = memchr(p, ':', n);
        if (!colon)
            continue;
        if (h.nfields < HEAD_MAX_FIELDS) {
            size_t nl = (size_t)(colon - p), vl = n - nl - 1;
            f[h.nfields] = (struct head_field){owned[nowned++] = copy(p, nl), nl,
                                               owned[nowned++] = copy(colon + 1, vl), vl};
        }
        h.nfields++;
    }
    h.folded = folded;

    const char *why = NULL, *why2 = NULL;
    unsigned st = head_check(&h, &why);
    if (head_check(&h, &why2) != st)
        __builtin_trap();
    if (st != 0 && st != 400 && st != 417 && st != 431)
        __builtin_trap();
    if ((st != 0) != (why != NULL && why[0] != '\0') || (why && strchr(why, '\n')))
        __builtin_trap();

    /* The reference. */
    size_t m = h.nfields < HEAD_MAX_FIELDS ? h.nfields : HEAD_MAX_FIELDS;
    size_t cl = 0, te = 0, host = 0;
    int ctl = 0, names = 1, nul_or_cr = 0, cl_digits = 1, te_chunked = 1, expect_ok = 1;
    for (size_t i = 0; i < m; i++) {
        names &= token(f[i].name, f[i].nlen);
        for (size_t j = 0; j < f[i].vlen; j++) {
            unsigned char c = (unsigned char)f[i].value[j];
            ctl |= (c < 0x20 && c != '\t') || c == 0x7f;
            nul_or_cr |= c == 0 || c == '\r';
        }
        const char *v = f[i].value;
        size_t vn = f[i].vlen;
        strip(&v, &vn);
        if (ieq(f[i].name, f[i].nlen, "content-length")) {
            cl++;
            for (size_t j = 0; j < vn; j++)
                cl_digits &= v[j] >= '0' && v[j] <= '9';
            cl_digits &= vn > 0;
        } else if (ieq(f[i].name, f[i].nlen, "transfer-encoding")) {
            te++;
            te_chunked &= ieq(v, vn, "chunked");
        } else if (ieq(f[i].name, f[i].nlen, "host")) {
            host++;
        } else if (ieq(f[i].name, f[i].nlen, "expect")) {
            expect_ok &= ieq(v, vn, "100-continue");
        }
    }
    int target_ok = 1;
    for (size_t i = 0; i < h.tlen; i++)
        target_ok &= (unsigned char)h.target[i] > ' ' && (unsigned char)h.target[i] != 0x7f;
    if (st == 0) {
        int ok = token(h.method, h.mlen) && target_ok && names && !ctl && cl <= 1 &&
                 (cl == 0 || cl_digits) && !(cl && te) && te <= 1 && (te == 0 || te_chunked) &&
                 !folded && h.nfields <= HEAD_MAX_FIELDS && (h.minor ? host == 1 : host <= 1) &&
                 expect_ok && !(te && h.minor == 0);
        if (!ok)
            __builtin_trap();
    }
    if (h.nfields <= HEAD_MAX_FIELDS && token(h.method, h.mlen) && target_ok && !folded &&
        (nul_or_cr || cl > 1 || (cl && te)) && st != 400)
        __builtin_trap();

    for (size_t i = 0; i < nowned; i++)
        free(owned[i]);
    return 0;
}
