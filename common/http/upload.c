/*
 * upload: POST /write decisions on top of the multipart parser. See upload.h for the contract.
 *
 * The answer body is written once, when the status is decided, into u->body; both engines send
 * those bytes as they are, so their answers cannot drift apart.
 */
#include "http/upload.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* How much of a client's Content-Type a 415 message echoes (escaped bytes). */
#define ECHO_MAX 80

/*
 * Copies the media type in ct (up to ';', trimmed) into dst as JSON string content, at most
 * size - 4 bytes of it, then "..." if it was longer. A client's header may hold any byte:
 * quotes, backslashes, controls and non-ASCII are escaped as \u00XX, so the answer stays valid
 * JSON and valid UTF-8.
 */
static void echo_media_type(char *dst, size_t size, const char *ct)
{
    size_t b = 0, e, o = 0, limit = size - 4;

    while (ct[b] == ' ' || ct[b] == '\t')
        b++;
    e = b + strcspn(ct + b, ";");
    while (e > b && (ct[e - 1] == ' ' || ct[e - 1] == '\t'))
        e--;
    for (size_t i = b; i < e; i++) {
        unsigned char c = (unsigned char)ct[i];
        char esc[8];
        size_t n = 1;

        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            esc[0] = (char)c;
        else
            n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
        if (o + n > limit) {
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(dst + o, esc, n);
        o += n;
    }
    dst[o] = '\0';
}

/* Decides an error answer: the message names what was wrong, in the user's terms. */
static int decide_error(struct upload *u, int err, const char *ct)
{
    char what[160];
    int n;

    switch (err) {
    case MP_ERR_CONTENT_TYPE:
        if (!ct || ct[strspn(ct, " \t")] == '\0') {
            snprintf(what, sizeof(what), "expected multipart/form-data, got no Content-Type");
        } else {
            char media[ECHO_MAX + 4];

            echo_media_type(media, sizeof(media), ct);
            snprintf(what, sizeof(what), "expected multipart/form-data, got %s",
                     media[0] ? media : "an empty media type");
        }
        break;
    case MP_ERR_NO_BOUNDARY:
        snprintf(what, sizeof(what), "multipart/form-data without a boundary (or an empty one)");
        break;
    case MP_ERR_BOUNDARY_TOO_LONG:
        snprintf(what, sizeof(what), "boundary longer than %d characters", MP_BOUNDARY_MAX);
        break;
    case MP_ERR_BAD_BOUNDARY:
        snprintf(what, sizeof(what), "invalid boundary parameter in Content-Type");
        break;
    case MP_ERR_HEADERS_TOO_LARGE:
        snprintf(what, sizeof(what), "part headers exceed %u bytes", MP_DEFAULT_HEADER_BYTES);
        break;
    case MP_ERR_TOO_MANY_PARTS:
        snprintf(what, sizeof(what), "more than %u parts in the form", MP_DEFAULT_MAX_PARTS);
        break;
    case MP_ERR_BODY_TOO_LARGE:
        snprintf(what, sizeof(what), "body exceeds --max-body %" PRIu64 " bytes", u->max_body);
        break;
    case MP_ERR_TRUNCATED:
        if (u->received == 0)
            snprintf(what, sizeof(what), "empty body: expected a multipart/form-data body");
        else
            snprintf(what, sizeof(what), "%s", mp_strerror(err));
        break;
    default:
        snprintf(what, sizeof(what), "%s", mp_strerror(err));
        break;
    }
    u->err = err;
    u->status = mp_error_status(err);
    n = snprintf(u->body, sizeof(u->body), "{\"error\": \"%s\", \"status\": %d}", what, u->status);
    u->body_len = (size_t)n;
    return u->status;
}

int upload_init(struct upload *u, const char *content_type, int64_t content_length,
                uint64_t max_body)
{
    struct mp_limits lim;
    char boundary[MP_BOUNDARY_MAX + 1];
    size_t blen;
    int rc;

    u->max_body = max_body;
    u->received = 0;
    u->status = 0;
    u->err = 0;
    u->body_len = 0;
    u->body[0] = '\0';

    rc = mp_boundary_parse(content_type, content_type ? strlen(content_type) : 0, boundary, &blen);
    if (rc)
        return decide_error(u, rc, content_type);
    /* The content type is judged first: a 415 is more useful than a 413 for a wrong client. */
    if (content_length >= 0 && (uint64_t)content_length > max_body)
        return decide_error(u, MP_ERR_BODY_TOO_LARGE, content_type);
    mp_limits_default(&lim);
    lim.max_body = max_body;
    rc = mp_parser_init(&u->mp, boundary, blen, &lim, NULL, NULL);
    if (rc)
        return decide_error(u, rc, content_type);
    return 0;
}

int upload_feed(struct upload *u, const void *buf, size_t len)
{
    ssize_t rc;

    u->received += len;
    /* Decided (an error, or finished): the rest of the body is only counted. */
    if (u->status)
        return u->status == 200 ? 0 : u->status;
    rc = mp_parser_feed(&u->mp, buf, len);
    if (rc < 0)
        return decide_error(u, (int)rc, NULL);
    return 0;
}

int upload_finish(struct upload *u, struct upload_answer *out)
{
    if (!u->status) {
        int rc = mp_parser_finish(&u->mp);

        if (rc)
            decide_error(u, rc, NULL);
        else if (!mp_parser_data_found(&u->mp))
            decide_error(u, MP_ERR_NO_DATA_PART, NULL);
        else {
            int n = snprintf(u->body, sizeof(u->body), "%" PRIu64, mp_parser_data_size(&u->mp));

            u->body_len = (size_t)n;
            u->status = 200;
        }
    }
    out->status = u->status;
    out->content_type = u->status == 200 ? "text/plain" : "application/json";
    out->body = u->body;
    out->body_len = u->body_len;
    return u->status;
}

uint64_t upload_received(const struct upload *u)
{
    return u->received;
}

int upload_error(const struct upload *u)
{
    return u->err;
}
