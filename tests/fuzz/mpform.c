/*
 * mpform: generated multipart bodies with a known answer, and the check of the parser against
 * it (see mpform.h).
 */
#include "mpform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RFC 2046 bchars; the space must not be last. */
static const char bchars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "'()+_,-./:=? ";

static const char *const other_names[] = {"token", "file", "Data", "data2", "", "dat"};
static const char *const filenames[] = {"a.bin", "C:\\dir\\x.bin", "empty"};

/*
 * Room kept after content for what must still follow it: up to MPFORM_MAX_PARTS delimiters
 * (74 bytes), padding, header blocks (under 160 bytes) and the close delimiter.
 */
#define RESERVE (MPFORM_MAX_PARTS * 320 + 128)

struct gen {
    struct mpform *f;
    mpform_pick_cb pick;
    void *ctx;
    char delim[MP_BOUNDARY_MAX + 4]; /* CRLF "--" boundary */
    size_t dlen;
};

static uint32_t pick(struct gen *g, uint32_t n)
{
    return n <= 1 ? 0 : g->pick(g->ctx, n) % n;
}

/* Appends structure; RESERVE guarantees room, so running out is a bug in this file. */
static void put(struct mpform *f, const void *s, size_t n)
{
    if (n > sizeof(f->body) - f->len) {
        fprintf(stderr, "mpform: body over %d bytes\n", MPFORM_BODY_CAP);
        abort();
    }
    memcpy(f->body + f->len, s, n);
    f->len += n;
}

static void put_str(struct mpform *f, const char *s)
{
    put(f, s, strlen(s));
}

/* A line end: CRLF, or now and then the bare LF the parser also accepts. */
static void put_eol(struct gen *g)
{
    put_str(g->f, pick(g, 5) == 0 ? "\n" : "\r\n");
}

/* One piece of content into buf (at least 128 bytes); returns its length. */
static size_t piece(struct gen *g, char *buf)
{
    static const char dense[] = "\r\n-\r\n-a\0\xff";
    const char *b = g->f->boundary;
    size_t blen = g->f->blen, n = 0, k;

    switch (pick(g, 13)) {
    case 0: /* one byte, often CR, LF or '-', else a boundary byte */
        buf[n++] = pick(g, 2) ? dense[pick(g, sizeof(dense) - 1)] : b[pick(g, (uint32_t)blen)];
        break;
    case 1:
        memcpy(buf, "\r\n", 2);
        n = 2;
        break;
    case 2: /* a run of CRLFs: enough CRs to switch the search to memmem */
        for (k = 1 + pick(g, 48); k > 0; k--) {
            buf[n++] = '\r';
            buf[n++] = '\n';
        }
        break;
    case 3: /* CRLF "--" and a proper prefix of the boundary */
    case 4:
        k = pick(g, (uint32_t)blen);
        memcpy(buf, g->delim, 4 + k);
        n = 4 + k;
        break;
    case 5: /* the longest proper prefix of the delimiter */
        memcpy(buf, g->delim, g->dlen - 1);
        n = g->dlen - 1;
        break;
    case 6: /* "--" boundary without its CRLF, after a bare LF, or after a bare CR */
        k = pick(g, 3);
        if (k)
            buf[n++] = k == 1 ? '\n' : '\r';
        memcpy(buf + n, g->delim + 2, g->dlen - 2);
        n += g->dlen - 2;
        break;
    case 7: /* CRLF "-" boundary */
        memcpy(buf, "\r\n-", 3);
        memcpy(buf + 3, b, blen);
        n = 3 + blen;
        break;
    case 8: /* the delimiter with one byte changed */
        memcpy(buf, g->delim, g->dlen);
        k = 1 + pick(g, (uint32_t)g->dlen - 1);
        buf[k] = buf[k] == 'x' ? 'y' : 'x';
        n = g->dlen;
        break;
    case 9: /* CR CRLF "--" and a prefix */
        buf[n++] = '\r';
        k = pick(g, (uint32_t)blen);
        memcpy(buf + n, g->delim, 4 + k);
        n += 4 + k;
        break;
    case 10: /* two prefixes in a row */
        for (int i = 0; i < 2; i++) {
            k = pick(g, (uint32_t)blen);
            memcpy(buf + n, g->delim, 4 + k);
            n += 4 + k;
        }
        break;
    case 11: /* a random run of CR, LF and '-' */
        for (k = 1 + pick(g, 16); k > 0; k--)
            buf[n++] = "\r\n-"[pick(g, 3)];
        break;
    default: /* plain text */
        for (k = 1 + pick(g, 24); k > 0; k--)
            buf[n++] = (char)('a' + pick(g, 26));
        break;
    }
    return n;
}

/*
 * Appends up to npieces pieces of content, stopping short of the reserve. The whole delimiter
 * must not occur in it: each occurrence loses its CR (which cannot make a new one, the
 * delimiter holding only that CR).
 */
static void content(struct gen *g, uint32_t npieces)
{
    struct mpform *f = g->f;
    size_t start = f->len;
    char buf[160];
    const char *hit;

    for (uint32_t i = 0; i < npieces; i++) {
        size_t n = piece(g, buf);

        if (f->len + n > sizeof(f->body) - RESERVE)
            break;
        put(f, buf, n);
    }
    while ((hit = memmem(f->body + start, f->len - start, g->delim, g->dlen)) != NULL)
        f->body[hit - f->body] = 'x';
}

static void put_delimiter(struct gen *g, bool with_crlf)
{
    struct mpform *f = g->f;

    if (f->nmarks < sizeof(f->marks) / sizeof(f->marks[0]))
        f->marks[f->nmarks++] = f->len;
    if (with_crlf)
        put(f, g->delim, g->dlen);
    else
        put(f, g->delim + 2, g->dlen - 2);
}

static void part_headers(struct gen *g, const char *name, const char *filename)
{
    struct mpform *f = g->f;
    bool ctype_first = pick(g, 4) == 0;
    bool quoted = name[0] == '\0' || pick(g, 3) != 0;

    if (ctype_first) {
        put_str(f, "Content-Type: application/octet-stream");
        put_eol(g);
    }
    /* Header and parameter names in any case, no space after ';'. */
    if (pick(g, 4))
        put_str(f, "Content-Disposition: form-data; name=");
    else
        put_str(f, "content-disposition: FORM-DATA;name=");
    if (quoted)
        put_str(f, "\"");
    put_str(f, name);
    if (quoted)
        put_str(f, "\"");
    if (filename) {
        put_str(f, "; filename=\"");
        put_str(f, filename);
        put_str(f, "\"");
    }
    put_eol(g);
    if (!ctype_first && pick(g, 4) == 0) {
        put_str(f, "X-Note: \t--x");
        put_eol(g);
    }
    put_eol(g);
}

void mpform_make(struct mpform *f, mpform_pick_cb pick_cb, void *ctx)
{
    struct gen g = {.f = f, .pick = pick_cb, .ctx = ctx};

    f->len = 0;
    f->close_end = 0;
    f->parts = 0;
    f->found = false;
    f->data_off = 0;
    f->data_len = 0;
    f->nmarks = 0;

    /* Short boundaries are the likeliest to occur by chance in content: favour them. */
    f->blen = pick(&g, 4) == 0 ? 1 + pick(&g, 4) : 1 + pick(&g, MP_BOUNDARY_MAX);
    for (size_t i = 0; i < f->blen; i++)
        f->boundary[i] = pick(&g, 3) == 0 ? '-' : bchars[pick(&g, sizeof(bchars) - 1)];
    if (f->boundary[f->blen - 1] == ' ')
        f->boundary[f->blen - 1] = '-';
    f->boundary[f->blen] = '\0';
    snprintf(f->ctype, sizeof(f->ctype), "multipart/form-data; boundary=\"%s\"", f->boundary);
    memcpy(g.delim, "\r\n--", 4);
    memcpy(g.delim + 4, f->boundary, f->blen);
    g.dlen = f->blen + 4;

    /* A preamble never starts with '-', so it cannot be read as a first delimiter. */
    if (pick(&g, 3)) {
        put_str(f, "P");
        content(&g, pick(&g, 6));
        put_delimiter(&g, true);
    } else {
        put_delimiter(&g, false);
    }

    f->parts = 1 + pick(&g, MPFORM_MAX_PARTS);
    for (uint32_t i = 0; i < f->parts; i++) {
        uint32_t kind = pick(&g, 10);
        const char *name = kind < 3 ? "data" : other_names[kind % 6];
        const char *filename = pick(&g, 2) ? filenames[pick(&g, 3)] : NULL;
        size_t start;

        for (uint32_t pad = pick(&g, 4) == 0 ? 1 + pick(&g, 3) : 0; pad > 0; pad--)
            put_str(f, pick(&g, 2) ? " " : "\t");
        put_eol(&g);
        part_headers(&g, name, filename);
        f->names[i] = name;
        f->filenames[i] = filename;
        start = f->len;
        content(&g, pick(&g, 4) == 0 ? 0 : pick(&g, 40));
        if (!f->found && strcmp(name, "data") == 0) {
            f->found = true;
            f->data_off = start;
            f->data_len = f->len - start;
        }
        put_delimiter(&g, true);
    }
    put_str(f, "--");
    f->close_end = f->len;
    /* The epilogue is ignored whatever it holds, delimiters included. */
    if (pick(&g, 3) == 0) {
        content(&g, pick(&g, 5));
        if (pick(&g, 2))
            put(f, g.delim, g.dlen);
    }
}

void mpform_plan(struct mpform_plan *plan, const struct mpform *f, size_t len,
                 mpform_pick_cb pick_cb, void *ctx)
{
    struct gen g = {.f = NULL, .pick = pick_cb, .ctx = ctx};
    uint32_t mode = pick(&g, 6);
    size_t off = 0;

    plan->n = 0;
    if (mode == 0 || len == 0) {
        plan->ends[plan->n++] = len;
        return;
    }
    while (off < len) {
        size_t n;

        switch (mode) {
        case 1: /* one byte at a time */
            n = 1;
            break;
        case 2:
            n = 1 + pick(&g, 8);
            break;
        case 3:
            n = 1 + pick(&g, 700);
            break;
        case 4: { /* end a chunk inside or right around the next delimiter */
            size_t next = len;

            for (uint32_t i = 0; i < f->nmarks; i++) {
                if (f->marks[i] + f->blen + 6 > off) {
                    next = f->marks[i];
                    break;
                }
            }
            n = next + pick(&g, (uint32_t)f->blen + 7);
            n = n > off ? n - off : 1 + pick(&g, 8);
            break;
        }
        default: /* one cut */
            n = plan->n == 0 ? 1 + pick(&g, (uint32_t)len) : len - off;
            break;
        }
        if (n > len - off)
            n = len - off;
        off += n;
        plan->ends[plan->n++] = off;
    }
}

struct seen {
    const struct mpform *f;
    uint32_t begins;
    uint32_t ends;
    int part;      /* index of the current part, -1 before the first */
    int data_part; /* index of the first "data" part, -1 until seen */
    uint64_t data_bytes;
    uint64_t end_size;
    bool content_differs;
    bool name_differs;
};

static int on_begin(void *user, const char *name, const char *filename, const char *ctype)
{
    struct seen *s = user;
    const struct mpform *f = s->f;
    uint32_t i = s->begins++;

    (void)ctype;
    s->part = (int)i;
    if (i >= f->parts || strcmp(name, f->names[i]) != 0 ||
        (filename == NULL) != (f->filenames[i] == NULL) ||
        (filename && strcmp(filename, f->filenames[i]) != 0))
        s->name_differs = true;
    if (s->data_part < 0 && strcmp(name, "data") == 0)
        s->data_part = s->part;
    return 0;
}

static int on_data(void *user, const void *data, size_t len)
{
    struct seen *s = user;
    const struct mpform *f = s->f;

    if (s->part != s->data_part)
        return 0;
    if (s->data_bytes + len > f->data_len ||
        memcmp(data, f->body + f->data_off + s->data_bytes, len) != 0)
        s->content_differs = true;
    s->data_bytes += len;
    return 0;
}

static int on_end(void *user, uint64_t size)
{
    struct seen *s = user;

    if (s->part == s->data_part)
        s->end_size = size;
    s->ends++;
    return 0;
}

static const struct mp_callbacks seen_callbacks = {on_begin, on_data, on_end};

int mpform_check(const struct mpform *f, size_t len, const struct mpform_plan *plan, char *why,
                 size_t why_size)
{
    struct mp_parser p;
    struct seen s = {.f = f, .part = -1, .data_part = -1};
    char b[MP_BOUNDARY_MAX + 1];
    size_t blen = 0, off = 0;
    int err = 0;
    bool complete = len >= f->close_end;

    if (mp_boundary_parse(f->ctype, strlen(f->ctype), b, &blen) != 0 || blen != f->blen ||
        memcmp(b, f->boundary, blen) != 0) {
        snprintf(why, why_size, "mp_boundary_parse(%s) does not give the boundary back", f->ctype);
        return -1;
    }
    if (mp_parser_init(&p, f->boundary, f->blen, NULL, &seen_callbacks, &s) != 0) {
        snprintf(why, why_size, "mp_parser_init refused boundary \"%s\"", f->boundary);
        return -1;
    }
    for (size_t i = 0; i < plan->n && off < len && err == 0; i++) {
        size_t end = plan->ends[i] < len ? plan->ends[i] : len;
        ssize_t got = mp_parser_feed(&p, f->body + off, end - off);

        if (got < 0)
            err = (int)got;
        else if ((size_t)got != end - off)
            err = 1000;
        else
            off = end;
    }
    if (err == 0)
        err = mp_parser_finish(&p);

    if (!complete) {
        if (err != MP_ERR_TRUNCATED || mp_parser_finish(&p) != MP_ERR_TRUNCATED) {
            snprintf(why, why_size, "cut at %zu of %zu (close ends at %zu): error %d, want %d (%s)",
                     len, f->len, f->close_end, err, MP_ERR_TRUNCATED,
                     mp_strerror(MP_ERR_TRUNCATED));
            return -1;
        }
        return 0;
    }
    if (err != 0)
        snprintf(why, why_size, "error %d (%s), want none", err, mp_strerror(err));
    else if (mp_parser_bytes(&p) != len)
        snprintf(why, why_size, "took %llu bytes of %zu", (unsigned long long)mp_parser_bytes(&p),
                 len);
    else if (mp_parser_parts(&p) != f->parts || s.begins != f->parts || s.ends != f->parts)
        snprintf(why, why_size, "parts %u (begin %u, end %u), want %u", mp_parser_parts(&p),
                 s.begins, s.ends, f->parts);
    else if (s.name_differs)
        snprintf(why, why_size, "a part's name or filename differs");
    else if (mp_parser_data_found(&p) != f->found)
        snprintf(why, why_size, "data found %d, want %d", mp_parser_data_found(&p), f->found);
    else if (mp_parser_data_size(&p) != f->data_len)
        snprintf(why, why_size, "data size %llu, want %zu",
                 (unsigned long long)mp_parser_data_size(&p), f->data_len);
    else if (s.content_differs || s.data_bytes != f->data_len)
        snprintf(why, why_size, "data content differs (%llu bytes reported, want %zu)",
                 (unsigned long long)s.data_bytes, f->data_len);
    else if (f->found && s.end_size != f->data_len)
        snprintf(why, why_size, "on_part_end size %llu, want %zu", (unsigned long long)s.end_size,
                 f->data_len);
    else
        return 0;
    return -1;
}
