/*
 * multipart: streaming multipart/form-data parser. See multipart.h for the contract.
 *
 * The body is read as a sequence of scan regions (preamble, then each part's content) separated
 * by delimiter lines and part header blocks. A delimiter is "\r\n--" + boundary. Boundary
 * characters (RFC 2046 bchars) never include CR, so the delimiter holds exactly one CR, at its
 * start: a scan region is searched with memchr() for CR and only candidates are compared. For
 * the same reason, a partial match carried over a chunk end is always a prefix of the delimiter,
 * so the carry is just its length and its bytes can be re-emitted from p->delim when the match
 * fails: no copy of the caller's data is kept.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem, memrchr */
#endif
#include "http/multipart.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

enum {
    S_SCAN,       /* preamble (in_part false) or part content (in_part true) */
    S_DELIM_TAIL, /* a whole delimiter matched: the next byte decides what it was */
    S_DELIM_DASH, /* "-" after the delimiter: the close delimiter needs a second one */
    S_DELIM_PAD,  /* transport padding after the delimiter */
    S_DELIM_CR,   /* CR right after the delimiter */
    S_PAD_CR,     /* CR after the padding */
    S_HEADERS,    /* a part's header block, copied into p->hdr until its empty line */
    S_EPILOGUE,   /* after the close delimiter: everything is ignored */
};

/* A value inside p->hdr, NUL-terminated in place once the whole block has been parsed. */
struct span {
    size_t off;
    size_t len;
    bool set;
};

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* RFC 7230 tchar: header names, parameter names and the disposition type. */
static bool is_tchar(char ch)
{
    unsigned char c = (unsigned char)ch;

    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* RFC 2046 bchars; the space is allowed except as the last character. */
static bool is_bchar(char ch)
{
    unsigned char c = (unsigned char)ch;

    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr("'()+_,-./:=? ", c) != NULL;
}

/* Control characters other than tab are refused in header values and quoted strings. */
static bool is_ctl(char ch)
{
    unsigned char c = (unsigned char)ch;

    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static size_t skip_ows(const char *s, size_t i, size_t len)
{
    while (i < len && is_ows(s[i]))
        i++;
    return i;
}

void mp_limits_default(struct mp_limits *limits)
{
    limits->max_header_bytes = MP_DEFAULT_HEADER_BYTES;
    limits->max_parts = MP_DEFAULT_MAX_PARTS;
    limits->max_body = MP_DEFAULT_MAX_BODY;
}

int mp_boundary_check(const char *boundary, size_t len)
{
    size_t i;

    if (len == 0)
        return MP_ERR_NO_BOUNDARY;
    if (len > MP_BOUNDARY_MAX)
        return MP_ERR_BOUNDARY_TOO_LONG;
    if (!boundary)
        return MP_ERR_PARAM;
    for (i = 0; i < len; i++)
        if (!is_bchar(boundary[i]))
            return MP_ERR_BAD_BOUNDARY;
    if (boundary[len - 1] == ' ')
        return MP_ERR_BAD_BOUNDARY;
    return 0;
}

int mp_boundary_parse(const char *ct, size_t ct_len, char out[MP_BOUNDARY_MAX + 1], size_t *out_len)
{
    static const char media[] = "multipart/form-data";
    const size_t media_len = sizeof(media) - 1;
    size_t i, blen = 0;
    bool found = false;
    int rc;

    if (!out || !out_len)
        return MP_ERR_PARAM;
    if (!ct)
        return MP_ERR_CONTENT_TYPE;
    i = skip_ows(ct, 0, ct_len);
    if (ct_len - i < media_len || strncasecmp(ct + i, media, media_len) != 0)
        return MP_ERR_CONTENT_TYPE;
    i += media_len;
    /* "multipart/form-dataX" is another media type, not a bad parameter list. */
    if (i < ct_len && !is_ows(ct[i]) && ct[i] != ';')
        return MP_ERR_CONTENT_TYPE;

    for (;;) {
        size_t name, name_len, vlen = 0;
        bool is_boundary;

        i = skip_ows(ct, i, ct_len);
        if (i == ct_len)
            break;
        if (ct[i] != ';')
            return MP_ERR_BAD_BOUNDARY;
        i = skip_ows(ct, i + 1, ct_len);
        if (i == ct_len || ct[i] == ';')
            continue;
        name = i;
        while (i < ct_len && is_tchar(ct[i]))
            i++;
        name_len = i - name;
        i = skip_ows(ct, i, ct_len);
        if (name_len == 0 || i == ct_len || ct[i] != '=')
            return MP_ERR_BAD_BOUNDARY;
        i = skip_ows(ct, i + 1, ct_len);
        is_boundary = name_len == 8 && strncasecmp(ct + name, "boundary", 8) == 0;
        /* Two boundaries would let two parsers of the same request disagree: refuse. */
        if (is_boundary && found)
            return MP_ERR_BAD_BOUNDARY;

        if (i < ct_len && ct[i] == '"') {
            for (i++;; i++) {
                char c;

                if (i == ct_len)
                    return MP_ERR_BAD_BOUNDARY;
                c = ct[i];
                if (c == '"')
                    break;
                if (c == '\\') {
                    if (++i == ct_len)
                        return MP_ERR_BAD_BOUNDARY;
                    c = ct[i];
                }
                if (is_ctl(c))
                    return MP_ERR_BAD_BOUNDARY;
                /* Count past the ceiling without writing, to tell "too long" apart. */
                if (is_boundary && vlen < MP_BOUNDARY_MAX)
                    out[vlen] = c;
                vlen++;
            }
            i++;
        } else {
            for (; i < ct_len && !is_ows(ct[i]) && ct[i] != ';' && ct[i] != '"'; i++) {
                if (is_ctl(ct[i]))
                    return MP_ERR_BAD_BOUNDARY;
                if (is_boundary && vlen < MP_BOUNDARY_MAX)
                    out[vlen] = ct[i];
                vlen++;
            }
        }
        if (is_boundary) {
            found = true;
            blen = vlen;
        }
    }

    if (!found || blen == 0)
        return MP_ERR_NO_BOUNDARY;
    if (blen > MP_BOUNDARY_MAX)
        return MP_ERR_BOUNDARY_TOO_LONG;
    rc = mp_boundary_check(out, blen);
    if (rc)
        return rc;
    out[blen] = '\0';
    *out_len = blen;
    return 0;
}

int mp_parser_init(struct mp_parser *p, const char *boundary, size_t boundary_len,
                   const struct mp_limits *limits, const struct mp_callbacks *cb, void *user)
{
    struct mp_limits lim;
    int rc;

    if (!p)
        return MP_ERR_PARAM;
    /* The header buffer is left alone: only the bytes of the current block are ever read. */
    memset(p, 0, offsetof(struct mp_parser, hdr));
    if (limits)
        lim = *limits;
    else
        mp_limits_default(&lim);
    rc = mp_boundary_check(boundary, boundary_len);
    if (rc == 0 && (lim.max_header_bytes == 0 || lim.max_header_bytes > MP_HEADER_BYTES_CAP ||
                    lim.max_parts == 0))
        rc = MP_ERR_PARAM;
    if (rc) {
        p->error = rc;
        return rc;
    }
    p->limits = lim;
    if (cb)
        p->cb = *cb;
    p->user = user;
    memcpy(p->delim, "\r\n--", 4);
    memcpy(p->delim + 4, boundary, boundary_len);
    p->delim_len = (uint32_t)boundary_len + 4;
    p->state = S_SCAN;
    /*
     * The first delimiter may open the body with no CRLF before it: act as if a CRLF had been
     * read. If the body starts otherwise, those two bytes are "emitted" into the preamble,
     * which discards them.
     */
    p->match = 2;
    return 0;
}

/* Content bytes of the current scan region: counted and reported in a part, dropped outside. */
static int emit(struct mp_parser *p, const char *data, size_t n)
{
    if (!p->in_part || n == 0)
        return 0;
    p->part_size += n;
    if (p->counting)
        p->data_size += n;
    if (p->cb.on_part_data && p->cb.on_part_data(p->user, data, n) != 0)
        return MP_ERR_ABORTED;
    return 0;
}

/*
 * A search switches from memchr to memmem when DENSE_CR CRs that did not start a delimiter were
 * found within DENSE_CR * 64 bytes (one in 64; random binary content has one in 256).
 */
#define DENSE_CR 16

/*
 * Returns the first place in [q, end) where the delimiter d (dlen bytes) starts, whole or cut
 * by end, or NULL. memchr on CR is the fastest search on ordinary content but costs a call per
 * CR, which is every other byte in a CRLF-dense body; there, the rest of the buffer is searched
 * with memmem, whose cost does not depend on how many CRs there are. Both find the same place:
 * with no whole delimiter in [q, end), only the last CR of the final dlen - 1 bytes can start a
 * cut one, because the delimiter holds no other CR.
 */
static const char *find_delimiter(const char *q, const char *end, const char *d, size_t dlen)
{
    const char *tail, *c, *mark = q;
    unsigned misses = 0;

    for (; (q = memchr(q, '\r', (size_t)(end - q))) != NULL; q++) {
        size_t n = (size_t)(end - q) < dlen ? (size_t)(end - q) : dlen;

        if ((n < 2 || q[1] == '\n') && memcmp(q, d, n) == 0)
            return q;
        if (++misses == DENSE_CR) {
            if (q - mark < DENSE_CR * 64) {
                q++;
                break;
            }
            misses = 0;
            mark = q;
        }
    }
    if (!q)
        return NULL;
    c = memmem(q, (size_t)(end - q), d, dlen);
    if (c)
        return c;
    tail = (size_t)(end - q) < dlen - 1 ? q : end - (dlen - 1);
    c = memrchr(tail, '\r', (size_t)(end - tail));
    return c && memcmp(c, d, (size_t)(end - c)) == 0 ? c : NULL;
}

/*
 * Scans buf[*pos, len) of a preamble or part content for the delimiter. Stops after a whole
 * delimiter (state S_DELIM_TAIL) or at the end of the chunk, holding a partial match in
 * p->match.
 */
static int scan(struct mp_parser *p, const char *buf, size_t len, size_t *pos)
{
    const char *start = buf + *pos, *end = buf + len, *q;
    size_t dlen = p->delim_len;
    int rc;

    if (p->match) {
        size_t need = dlen - p->match;
        size_t n = (size_t)(end - start) < need ? (size_t)(end - start) : need;

        if (memcmp(start, p->delim + p->match, n) == 0) {
            if (n < need) {
                p->match += (uint32_t)n;
                *pos = len;
            } else {
                p->match = 0;
                *pos += n;
                p->state = S_DELIM_TAIL;
            }
            return 0;
        }
        /*
         * The carried bytes were content after all. The only CR of the delimiter is its first
         * byte, so no delimiter starts inside them, and the search goes on from buf[*pos].
         */
        rc = emit(p, p->delim, p->match);
        p->match = 0;
        if (rc)
            return rc;
    }

    q = find_delimiter(start, end, p->delim, dlen);
    if (!q) {
        *pos = len;
        return emit(p, start, (size_t)(end - start));
    }
    rc = emit(p, start, (size_t)(q - start));
    if (rc)
        return rc;
    if ((size_t)(end - q) < dlen) {
        p->match = (uint32_t)(end - q);
        *pos = len;
    } else {
        *pos = (size_t)(q - buf) + dlen;
        p->state = S_DELIM_TAIL;
    }
    return 0;
}

static int part_end(struct mp_parser *p)
{
    p->in_part = false;
    p->counting = false;
    if (p->cb.on_part_end && p->cb.on_part_end(p->user, p->part_size) != 0)
        return MP_ERR_ABORTED;
    return 0;
}

/* A delimiter line ended: the previous part (if any) is complete and a new one begins. */
static int delimiter_line_done(struct mp_parser *p)
{
    if (p->in_part) {
        int rc = part_end(p);

        if (rc)
            return rc;
    }
    if (p->parts >= p->limits.max_parts)
        return MP_ERR_TOO_MANY_PARTS;
    p->parts++;
    p->hdr_len = 0;
    p->line_start = 0;
    p->state = S_HEADERS;
    return 0;
}

/*
 * Parses one Content-Disposition value h[b, e): "form-data" and its parameters. Quoted values
 * are unescaped in place (the result is never longer than the quoted text), so the spans can
 * be NUL-terminated later without copying.
 */
static int parse_disposition(char *h, size_t b, size_t e, struct span *name, struct span *filename)
{
    size_t j = b;

    while (j < e && is_tchar(h[j]))
        j++;
    if (j - b != 9 || strncasecmp(h + b, "form-data", 9) != 0)
        return MP_ERR_BAD_HEADERS;

    for (;;) {
        size_t pname, pname_len, vb, vlen;
        struct span *dst = NULL;

        j = skip_ows(h, j, e);
        if (j == e)
            break;
        if (h[j] != ';')
            return MP_ERR_BAD_HEADERS;
        j = skip_ows(h, j + 1, e);
        if (j == e || h[j] == ';')
            continue;
        pname = j;
        while (j < e && is_tchar(h[j]))
            j++;
        pname_len = j - pname;
        j = skip_ows(h, j, e);
        if (pname_len == 0 || j == e || h[j] != '=')
            return MP_ERR_BAD_HEADERS;
        j = skip_ows(h, j + 1, e);

        if (j < e && h[j] == '"') {
            size_t d = j;

            vb = j;
            for (j++;; j++) {
                char c;

                if (j == e)
                    return MP_ERR_BAD_HEADERS;
                c = h[j];
                if (c == '"')
                    break;
                /* Browsers send "C:\dir\f.txt" raw: only \" and \\ are escapes. */
                if (c == '\\' && j + 1 < e && (h[j + 1] == '"' || h[j + 1] == '\\'))
                    c = h[++j];
                h[d++] = c;
            }
            j++;
            vlen = d - vb;
        } else {
            vb = j;
            while (j < e && !is_ows(h[j]) && h[j] != ';' && h[j] != '"')
                j++;
            vlen = j - vb;
        }

        if (pname_len == 4 && strncasecmp(h + pname, "name", 4) == 0)
            dst = name;
        else if (pname_len == 8 && strncasecmp(h + pname, "filename", 8) == 0)
            dst = filename;
        if (dst) {
            if (dst->set)
                return MP_ERR_BAD_HEADERS;
            dst->off = vb;
            dst->len = vlen;
            dst->set = true;
        }
    }
    return name->set ? 0 : MP_ERR_BAD_HEADERS;
}

/*
 * Parses the header block in p->hdr (its lines before the empty one that ends it) and starts
 * the part.
 */
static int headers_done(struct mp_parser *p)
{
    char *h = p->hdr;
    size_t i = 0, end = p->line_start;
    struct span name = {0, 0, false}, filename = {0, 0, false}, ctype = {0, 0, false};
    bool have_cd = false;
    int rc;

    while (i < end) {
        /* Every line of the block ends with LF: the block was cut at LFs. */
        size_t eol = (size_t)((const char *)memchr(h + i, '\n', end - i) - h);
        size_t e = eol, j = i, vb, ve;

        if (e > i && h[e - 1] == '\r')
            e--;
        /* Obsolete line folding has no place in multipart (RFC 7578 section 4.8). */
        if (e > i && is_ows(h[i]))
            return MP_ERR_BAD_HEADERS;
        while (j < e && is_tchar(h[j]))
            j++;
        if (j == i || j == e || h[j] != ':')
            return MP_ERR_BAD_HEADERS;
        vb = skip_ows(h, j + 1, e);
        ve = e;
        while (ve > vb && is_ows(h[ve - 1]))
            ve--;
        for (size_t k = vb; k < ve; k++)
            if (is_ctl(h[k]))
                return MP_ERR_BAD_HEADERS;

        if (j - i == 19 && strncasecmp(h + i, "content-disposition", 19) == 0) {
            if (have_cd)
                return MP_ERR_BAD_HEADERS;
            have_cd = true;
            rc = parse_disposition(h, vb, ve, &name, &filename);
            if (rc)
                return rc;
        } else if (j - i == 12 && strncasecmp(h + i, "content-type", 12) == 0) {
            if (ctype.set)
                return MP_ERR_BAD_HEADERS;
            ctype.off = vb;
            ctype.len = ve - vb;
            ctype.set = true;
        }
        i = eol + 1;
    }
    if (!have_cd)
        return MP_ERR_BAD_HEADERS;

    /*
     * Each span is followed by a byte that is no longer needed (a closing quote, ';', padding
     * or the line end), and the spans are disjoint, so terminating them in place is safe now.
     */
    h[name.off + name.len] = '\0';
    if (filename.set)
        h[filename.off + filename.len] = '\0';
    if (ctype.set)
        h[ctype.off + ctype.len] = '\0';

    p->in_part = true;
    p->part_size = 0;
    p->counting = !p->data_found && name.len == 4 && memcmp(h + name.off, "data", 4) == 0;
    if (p->counting)
        p->data_found = true;
    p->match = 0;
    p->state = S_SCAN;
    if (p->cb.on_part_begin &&
        p->cb.on_part_begin(p->user, h + name.off, filename.set ? h + filename.off : NULL,
                            ctype.set ? h + ctype.off : NULL) != 0)
        return MP_ERR_ABORTED;
    return 0;
}

/* Copies header bytes line by line until the empty line; the block size is the ceiling. */
static int headers(struct mp_parser *p, const char *buf, size_t len, size_t *pos)
{
    while (*pos < len) {
        size_t room = p->limits.max_header_bytes - p->hdr_len;
        size_t n = len - *pos < room ? len - *pos : room;
        const char *nl, *src = buf + *pos;
        size_t line_len;

        if (room == 0)
            return MP_ERR_HEADERS_TOO_LARGE;
        nl = memchr(src, '\n', n);
        if (nl)
            n = (size_t)(nl - src) + 1;
        memcpy(p->hdr + p->hdr_len, src, n);
        p->hdr_len += (uint32_t)n;
        *pos += n;
        if (!nl)
            continue;
        line_len = p->hdr_len - p->line_start;
        if (line_len == 1 || (line_len == 2 && p->hdr[p->line_start] == '\r'))
            return headers_done(p);
        p->line_start = p->hdr_len;
    }
    return 0;
}

/*
 * One byte after a whole delimiter, its padding or its CR. A "-" or a CR after the delimiter
 * gets one byte of lookahead: if the line cannot be a delimiter line, the bytes were content
 * (as in Go's mime/multipart) and are emitted from constants, so nothing is buffered. Padding
 * has no such lookahead (it could be any length): once seen, the line must be a delimiter.
 */
static int delimiter_byte(struct mp_parser *p, char c, size_t *pos)
{
    int rc;

    switch (p->state) {
    case S_DELIM_TAIL:
        if (c != '-' && c != '\r' && c != '\n' && !is_ows(c)) {
            p->state = S_SCAN;
            return emit(p, p->delim, p->delim_len);
        }
        p->state = c == '-' ? S_DELIM_DASH : c == '\r' ? S_DELIM_CR : S_DELIM_PAD;
        break;
    case S_DELIM_DASH:
        if (c != '-') {
            p->state = S_SCAN;
            rc = emit(p, p->delim, p->delim_len);
            return rc ? rc : emit(p, "-", 1);
        }
        p->closed = true;
        p->state = S_EPILOGUE;
        (*pos)++;
        return p->in_part ? part_end(p) : 0;
    case S_DELIM_PAD:
        if (c == '\r')
            p->state = S_PAD_CR;
        else if (c != '\n' && !is_ows(c))
            return MP_ERR_BAD_DELIMITER;
        break;
    case S_PAD_CR:
        if (c != '\n')
            return MP_ERR_BAD_DELIMITER;
        break;
    default: /* S_DELIM_CR */
        if (c == '\n')
            break;
        /* The CR is not followed by LF, so no delimiter starts at it: go on scanning at c. */
        p->state = S_SCAN;
        rc = emit(p, p->delim, p->delim_len);
        return rc ? rc : emit(p, "\r", 1);
    }
    (*pos)++;
    return c == '\n' ? delimiter_line_done(p) : 0;
}

/*
 * Parses buf[0, len) and sets *used to the bytes taken. On an error they stop at a place that
 * does not depend on the chunking: before the offending byte, or after the header block or
 * delimiter line that was refused as a whole.
 */
static int run(struct mp_parser *p, const char *buf, size_t len, size_t *used)
{
    size_t pos = 0;
    int rc = 0;

    while (pos < len && rc == 0) {
        switch (p->state) {
        case S_SCAN:
            rc = scan(p, buf, len, &pos);
            break;
        case S_HEADERS:
            rc = headers(p, buf, len, &pos);
            break;
        case S_EPILOGUE:
            pos = len;
            break;
        default:
            rc = delimiter_byte(p, buf[pos], &pos);
            break;
        }
    }
    *used = pos;
    return rc;
}

ssize_t mp_parser_feed(struct mp_parser *p, const void *buf, size_t len)
{
    size_t take = len, used;
    int rc;

    if (!p)
        return MP_ERR_PARAM;
    if (p->error)
        return p->error;
    if ((!buf && len) || len > SSIZE_MAX)
        return MP_ERR_PARAM;
    /* Parse up to the limit first, so the first error in byte order wins whatever the split. */
    if (p->limits.max_body - p->total < len)
        take = (size_t)(p->limits.max_body - p->total);
    rc = run(p, buf, take, &used);
    p->total += used;
    if (rc == 0 && take < len)
        rc = MP_ERR_BODY_TOO_LARGE;
    if (rc) {
        p->error = rc;
        return rc;
    }
    return (ssize_t)len;
}

int mp_parser_finish(struct mp_parser *p)
{
    if (!p)
        return MP_ERR_PARAM;
    if (p->error == 0 && !p->closed)
        p->error = MP_ERR_TRUNCATED;
    return p->error;
}

bool mp_parser_data_found(const struct mp_parser *p)
{
    return p->data_found;
}

uint64_t mp_parser_data_size(const struct mp_parser *p)
{
    return p->data_size;
}

uint32_t mp_parser_parts(const struct mp_parser *p)
{
    return p->parts;
}

uint64_t mp_parser_bytes(const struct mp_parser *p)
{
    return p->total;
}

const char *mp_strerror(int err)
{
    switch (err) {
    case MP_OK:
        return "ok";
    case MP_ERR_PARAM:
        return "invalid argument";
    case MP_ERR_CONTENT_TYPE:
        return "not multipart/form-data";
    case MP_ERR_NO_BOUNDARY:
        return "malformed multipart: missing or empty boundary";
    case MP_ERR_BOUNDARY_TOO_LONG:
        return "malformed multipart: boundary longer than 70 characters";
    case MP_ERR_BAD_BOUNDARY:
        return "malformed multipart: invalid boundary in Content-Type";
    case MP_ERR_BAD_DELIMITER:
        return "malformed multipart: bad boundary line";
    case MP_ERR_BAD_HEADERS:
        return "malformed multipart: bad part headers";
    case MP_ERR_HEADERS_TOO_LARGE:
        return "malformed multipart: part headers too large";
    case MP_ERR_TOO_MANY_PARTS:
        return "too many parts in the form";
    case MP_ERR_BODY_TOO_LARGE:
        return "body too large";
    case MP_ERR_TRUNCATED:
        return "truncated multipart body: no closing boundary";
    case MP_ERR_NO_DATA_PART:
        return "no data part in the form";
    case MP_ERR_ABORTED:
        return "multipart parsing aborted";
    default:
        return "unknown multipart error";
    }
}

int mp_error_status(int err)
{
    switch (err) {
    case MP_OK:
        return 200;
    case MP_ERR_CONTENT_TYPE:
        return 415;
    case MP_ERR_BODY_TOO_LARGE:
        return 413;
    case MP_ERR_NO_BOUNDARY:
    case MP_ERR_BOUNDARY_TOO_LONG:
    case MP_ERR_BAD_BOUNDARY:
    case MP_ERR_BAD_DELIMITER:
    case MP_ERR_BAD_HEADERS:
    case MP_ERR_HEADERS_TOO_LARGE:
    case MP_ERR_TOO_MANY_PARTS:
    case MP_ERR_TRUNCATED:
    case MP_ERR_NO_DATA_PART:
        return 400;
    default:
        return 500;
    }
}
