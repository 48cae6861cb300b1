#include "http/target.h"

#include <string.h>
#include <strings.h>

int target_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t target_path_resolve(const char *path, size_t len, char *out)
{
    size_t n = 0;
    const char *p = path, *end = path + len;
    while (p < end) {
        /* One segment: from this '/' to the next (or the end). */
        const char *next = memchr(p + 1, '/', (size_t)(end - p - 1));
        const char *seg_end = next ? next : end;
        size_t seg = (size_t)(seg_end - p);
        if (seg == 2 && p[1] == '.') {
            /* "/.": dropped; "/." at the end leaves the "/" */
            if (!next)
                out[n++] = '/';
        } else if (seg == 3 && p[1] == '.' && p[2] == '.') {
            /* "/..": drops the last segment written */
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
            if (!next)
                out[n++] = '/';
        } else {
            memcpy(out + n, p, seg);
            n += seg;
        }
        p = seg_end;
    }
    if (n == 0)
        out[n++] = '/';
    return n;
}

/* 1 if the query parameter name k[0..end), percent-decoded ('+' is a space), is `name` exactly. */
static int name_is(const char *k, const char *end, const char *name, size_t nlen)
{
    size_t i = 0;
    for (; k < end; k++, i++) {
        char c = *k == '+' ? ' ' : *k;
        if (*k == '%' && end - k >= 3 && target_hex_digit(k[1]) >= 0 &&
            target_hex_digit(k[2]) >= 0) {
            c = (char)(target_hex_digit(k[1]) * 16 + target_hex_digit(k[2]));
            k += 2;
        }
        if (i >= nlen || c != name[i])
            return 0;
    }
    return i == nlen;
}

long target_query_param(const char *query, size_t len, const char *name, char *buf, size_t buflen)
{
    size_t nlen = strlen(name);
    const char *p = query, *end = query + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        const char *kend = eq ? eq : stop;
        if (name_is(p, kend, name, nlen)) {
            /* The whole decoded length is counted; what fits is stored. */
            size_t n = 0;
            for (const char *v = eq ? eq + 1 : stop; v < stop; v++, n++) {
                char c = *v == '+' ? ' ' : *v;
                if (*v == '%' && stop - v >= 3 && target_hex_digit(v[1]) >= 0 &&
                    target_hex_digit(v[2]) >= 0) {
                    c = (char)(target_hex_digit(v[1]) * 16 + target_hex_digit(v[2]));
                    v += 2;
                }
                if (n + 1 < buflen)
                    buf[n] = c;
            }
            buf[n + 1 < buflen ? n : buflen - 1] = '\0';
            return (long)n;
        }
        p = stop + 1;
    }
    return -1;
}

size_t target_absolute_prefix(const char *t, size_t len)
{
    size_t i = 0;
    while (i < len && i < 5 && ((t[i] | 0x20) >= 'a' && (t[i] | 0x20) <= 'z'))
        i++;
    int http = i == 4 && strncasecmp(t, "http", 4) == 0;
    int https = i == 5 && strncasecmp(t, "https", 5) == 0;
    if (!(http || https) || len - i < 3 || memcmp(t + i, "://", 3) != 0)
        return 0;
    for (i += 3; i < len && t[i] != '/'; i++)
        if (t[i] == '?' || t[i] == '#')
            return 0;
    return i < len ? i : 0;
}
