/*
 * slowsrv's head walk: the request head as the client sent it, read from libmicrohttpd's read
 * buffer for the core's checks (http/head.h), where libmicrohttpd hands over C strings.
 */
#include <string.h>

#include "mhd.h"

struct head_walk {
    struct head *h;
    struct head_field *f;
    const char *lo, *hi;  /* the head in the read buffer */
    const char *prev_end; /* end of the previous field's value, or of the request line */
};

/* 1 if the bytes [from, to) are one or two line-end NULs (LF, or CR LF), up to `most`. */
static int line_ends(const char *from, const char *to, size_t most)
{
    if (to <= from || (size_t)(to - from) > most)
        return 0;
    for (const char *p = from; p < to; p++)
        if (*p != '\0')
            return 0;
    return 1;
}

static void walk_gap(struct head_walk *w, const char *next, size_t most)
{
    size_t i = w->h->nfields;
    if (!w->prev_end || line_ends(w->prev_end, next, most))
        return;
    if (i > 0 && i <= HEAD_MAX_FIELDS)
        w->f[i - 1].vlen++; /* the NUL that hid the rest */
}

static enum MHD_Result walk_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    struct head_walk *w = cls;
    (void)kind;
    if (key < w->lo || key >= w->hi || !value || value < w->lo || value >= w->hi) {
        w->h->folded = 1;
        w->prev_end = NULL;
    } else {
        walk_gap(w, key, 2);
        w->prev_end = value + value_size;
    }
    if (w->h->nfields < HEAD_MAX_FIELDS)
        w->f[w->h->nfields] = (struct head_field){key, key_size, value ? value : "", value_size};
    w->h->nfields++;
    return MHD_YES;
}

const struct head *mhd_raw_head(struct request *rq, const char *method, const char *version,
                                struct head *h, struct head_field *f)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (!rq->uri_at || !ci || rq->uri_at <= method)
        return NULL;
    *h = (struct head){
        .method = method, .mlen = strlen(method), .fields = f, .minor = version[7] == '0' ? 0 : 1};
    /* Between the method and the target: its NUL, and spaces libmicrohttpd skipped. */
    for (const char *p = method + h->mlen + 1; p < rq->uri_at; p++)
        if (*p != ' ') {
            h->mlen++; /* a NUL in the method */
            break;
        }
    h->target = rq->raw_uri ? rq->raw_uri : rq->uri_at;
    h->tlen = rq->raw_uri ? rq->raw_len : strlen(rq->uri_at);
    if (rq->target_nul)
        h->tlen++; /* its NUL: the core refuses it */
    struct head_walk w = {h, f, method, method + ci->header_size, version + strlen(version)};
    MHD_get_connection_values_n(rq->conn, MHD_HEADER_KIND, walk_field, &w);
    /* The last field's line end, then the blank line's. */
    walk_gap(&w, w.hi, 4);
    return h;
}
