#include "http/h1frame.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/head.h"
#include "http/target.h"

void h1frame_init(struct h1frame *f, size_t max_trailer)
{
    memset(f, 0, sizeof *f);
    f->state = H1FRAME_HEAD;
    f->max_trailer = max_trailer;
}

void h1frame_init_stream(struct h1frame *f, size_t max_trailer)
{
    h1frame_init(f, max_trailer);
    f->stream = 1;
}

static unsigned refuse(struct h1frame *f, unsigned status, const char *why)
{
    f->state = H1FRAME_REFUSED;
    f->status = status;
    f->why = why;
    return status;
}

/* The next request's head is due at stream offset at. */
static void next_request(struct h1frame *f, uint64_t at)
{
    f->state = H1FRAME_HEAD;
    f->head_at = f->pos = at;
    f->lines = f->chunked = f->switches = f->prelen = 0;
    f->line = 0;
    f->length = 0;
    f->head_bytes = 0;
}

static void new_line(struct h1frame *f)
{
    f->line = 0;
    f->digits = f->ext = f->colon = f->bad = f->cr = 0;
    f->size = 0;
}

/* A whole head from f->head_at is in buf (base, len): checks it and says how its body is
 * framed. Returns 0, or the status of its refusal. */
static unsigned on_head(struct h1frame *f, const char *buf, size_t len, uint64_t base)
{
    const char *p = buf + (f->head_at - base);
    size_t n = (size_t)(base + len - f->head_at);
    struct head h;
    struct head_field fields[HEAD_MAX_FIELDS];
    long hl = head_parse(p, n, &h, fields);
    if (hl == -2) {
        if (n > H1FRAME_HEAD_MAX)
            f->state = H1FRAME_OFF;
        f->pos = base + len;
        return 0;
    }
    if (hl < 0) {
        f->state = H1FRAME_OFF; /* not HTTP/1.x: the HTTP/2 preface, or the library's to refuse */
        return 0;
    }
    const char *why;
    unsigned bad = head_check(&h, &why);
    if (bad)
        return refuse(f, bad, why);
    size_t vlen;
    if ((h.mlen == 7 && memcmp(h.method, "CONNECT", 7) == 0) || head_value(&h, "Upgrade", &vlen)) {
        f->state = H1FRAME_OFF; /* the protocol may change after this request */
        return 0;
    }
    uint64_t end = f->head_at + (uint64_t)hl;
    new_line(f);
    f->trailer_bytes = f->trailer_fields = 0;
    if (head_value(&h, "Transfer-Encoding", &vlen)) {
        f->state = H1FRAME_CHUNK_LINE;
        f->pos = end;
        return 0;
    }
    const char *cl = head_value(&h, "Content-Length", &vlen);
    uint64_t length = 0;
    for (size_t i = 0; cl && i < vlen; i++)
        length = length * 10 + (uint64_t)(cl[i] - '0'); /* a plain number (head_check) */
    if (length) {
        f->state = H1FRAME_BODY;
        f->left = length;
        f->pos = end;
    } else {
        next_request(f, end);
    }
    return 0;
}

/* 1 if line[0..n) starts with field name `name` and its colon (any case); *v is then its value,
 * without the whitespace before it. */
static int field_is(const char *line, size_t n, const char *name, const char **v, size_t *vlen)
{
    size_t k = strlen(name);
    if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0)
        return 0;
    size_t i = k + 1;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    *v = line + i;
    *vlen = n - i;
    return 1;
}

/* Stream mode: a line of the head ended (its start is in f->pre). Returns 1 at the blank line
 * that ends the head. */
static int head_line(struct h1frame *f)
{
    const char *v;
    size_t vlen;
    if (f->line == 0)
        return f->lines > 0; /* blank lines before a request line are skipped */
    if (f->lines < 255)
        f->lines++;
    if (f->lines == 1) {
        memcpy(f->first, f->pre, f->prelen);
        f->first_len = f->prelen;
        if ((f->prelen >= 8 && memcmp(f->pre, "CONNECT ", 8) == 0) ||
            (f->prelen >= 6 && memcmp(f->pre, "PRI * ", 6) == 0))
            f->switches = 1;
    } else if (field_is(f->pre, f->prelen, "Content-Length", &v, &vlen)) {
        f->length = 0;
        for (size_t i = 0; i < vlen && v[i] >= '0' && v[i] <= '9' && f->length < (1ULL << 60); i++)
            f->length = f->length * 10 + (uint64_t)(v[i] - '0');
    } else if (field_is(f->pre, f->prelen, "Transfer-Encoding", &v, &vlen)) {
        f->chunked = 1;
    } else if (field_is(f->pre, f->prelen, "Upgrade", &v, &vlen)) {
        f->switches = 1;
    }
    return 0;
}

/* Stream mode: one byte of a head. */
/* Stream mode: the bytes p[0..n) of a head, from f->pos, up to and including its next LF; f->pos
 * moves past them. */
static void head_run(struct h1frame *f, const char *p, size_t n)
{
    const char *lf = memchr(p, '\n', n);
    size_t take = lf ? (size_t)(lf - p) + 1 : n;
    f->pos += take;
    f->head_bytes += take;
    if (f->head_bytes > H1FRAME_HEAD_MAX) {
        f->state = H1FRAME_OFF; /* the library's own limit answers it */
        return;
    }
    /* The line's bytes, CR aside, the first sizeof pre of them kept. */
    for (size_t i = 0; i < take - (lf != NULL); i++) {
        if (p[i] == '\r')
            continue;
        if (f->prelen < sizeof f->pre)
            f->pre[f->prelen++] = p[i];
        f->line++;
    }
    if (!lf)
        return;
    int end = head_line(f);
    f->line = 0;
    f->prelen = 0;
    if (!end)
        return;
    if (f->switches) {
        f->state = H1FRAME_OFF;
    } else if (f->chunked) {
        f->state = H1FRAME_CHUNK_LINE;
        new_line(f);
    } else if (f->length) {
        f->state = H1FRAME_BODY;
        f->left = f->length;
    } else {
        next_request(f, f->pos);
    }
    f->trailer_bytes = f->trailer_fields = 0;
    return;
}

/* One byte of a chunk-size line. */
static unsigned chunk_line(struct h1frame *f, unsigned char c)
{
    if (++f->line > H1FRAME_CHUNK_LINE_MAX)
        return refuse(f, 400, "a chunk-size line over 4096 bytes (chunk extensions?)");
    if (f->cr && c != '\n')
        return refuse(f, 400, "a CR without LF in a chunk-size line");
    if (c == '\n') {
        if (!f->digits)
            return refuse(f, 400, "a chunk size that is not hex");
        uint64_t size = f->size;
        new_line(f);
        if (size == 0) {
            f->state = H1FRAME_TRAILER;
        } else {
            f->state = H1FRAME_CHUNK_DATA;
            f->left = size;
        }
        return 0;
    }
    if (c == '\r') {
        f->cr = 1;
        return 0;
    }
    if (f->ext)
        return 0;
    int v = target_hex_digit((char)c);
    if (v >= 0 && f->digits < 16) {
        f->size = f->size * 16 + (uint64_t)v;
        f->digits++;
    } else if (v >= 0) {
        return refuse(f, 400, "a chunk size past 64 bits");
    } else if (f->digits && (c == ';' || c == ' ' || c == '\t')) {
        f->ext = 1;
    } else {
        return refuse(f, 400, "a chunk size that is not hex");
    }
    return 0;
}

/* One byte of a trailer line; an empty line ends the request (at stream offset at + 1). */
static unsigned trailer(struct h1frame *f, unsigned char c, uint64_t at)
{
    if (c == '\n') {
        if (f->line == 0) {
            next_request(f, at + 1);
            return 0;
        }
        if (!f->colon || f->bad)
            return refuse(f, 400,
                          "a trailer field without a colon, with a name that is not a token or "
                          "with a control byte");
        if (++f->trailer_fields > HEAD_MAX_FIELDS)
            return refuse(f, 431, "more than 100 trailer fields");
        new_line(f);
        return 0;
    }
    if (++f->trailer_bytes > f->max_trailer)
        return refuse(f, 431, "trailer fields over --max-header-size");
    if (f->cr)
        f->bad = 1; /* a CR not before LF */
    if (c == '\r') {
        f->cr = 1;
        return 0;
    }
    f->line++;
    char ch = (char)c;
    if (!f->colon) {
        if (c == ':')
            f->colon = 1, f->bad |= f->line == 1; /* an empty name */
        else if (!head_is_token(&ch, 1))
            f->bad = 1;
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
        f->bad = 1;
    }
    return 0;
}

/* Looks at the bytes from f->pos to end, which are buf[f->pos - base ...]. */
static void run(struct h1frame *f, const char *buf, size_t len, uint64_t base, uint64_t end)
{
    while (f->state != H1FRAME_OFF && f->state != H1FRAME_REFUSED && f->pos < end) {
        unsigned char c = (unsigned char)buf[f->pos - base];
        switch (f->state) {
        case H1FRAME_HEAD:
            if (f->stream) {
                head_run(f, buf + (f->pos - base), (size_t)(end - f->pos));
            } else if (f->head_at < base) {
                f->state = H1FRAME_OFF;
            } else {
                on_head(f, buf, len, base);
            }
            break;
        case H1FRAME_BODY:
        case H1FRAME_CHUNK_DATA: {
            uint64_t take = end - f->pos < f->left ? end - f->pos : f->left;
            f->pos += take;
            f->left -= take;
            if (f->left == 0) {
                if (f->state == H1FRAME_BODY) {
                    next_request(f, f->pos);
                } else {
                    f->state = H1FRAME_CHUNK_END;
                    f->cr = 0;
                }
            }
            break;
        }
        case H1FRAME_CHUNK_END:
            f->pos++;
            if (c == '\r' && !f->cr) {
                f->cr = 1;
            } else if (c == '\n') {
                f->state = H1FRAME_CHUNK_LINE;
                new_line(f);
            } else {
                refuse(f, 400, "chunk data longer than its chunk size");
            }
            break;
        case H1FRAME_CHUNK_LINE:
            f->pos++;
            chunk_line(f, c);
            break;
        case H1FRAME_TRAILER:
            f->pos++;
            trailer(f, c, f->pos - 1);
            break;
        default:
            break;
        }
    }
}

unsigned h1frame_feed(struct h1frame *f, const char *buf, size_t len, size_t fresh,
                      const char **why, uint64_t *at)
{
    /* Stream offsets: buf ends where the fresh bytes do. */
    uint64_t end = f->pos + fresh;
    run(f, buf, len, end - len, end);
    if (f->state != H1FRAME_REFUSED)
        return 0;
    *why = f->why;
    *at = end - f->head_at;
    return f->status;
}

unsigned h1frame_feed_stream(struct h1frame *f, const char *buf, size_t len, const char **why)
{
    run(f, buf, len, f->pos, f->pos + len);
    if (f->state != H1FRAME_REFUSED)
        return 0;
    *why = f->why;
    return f->status;
}
