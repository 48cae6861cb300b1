/*
 * multipart: an incremental multipart/form-data parser (RFC 7578, RFC 2046) that counts the bytes
 * of the first part named "data".
 *
 * A pure data structure: no I/O, no thread, no logging and no allocation. All state lives in a
 * caller-owned struct mp_parser whose buffers have fixed sizes; the limits given at init only
 * lower them. The body may be fed in chunks of any size, down to one byte, and every split of
 * the same body gives the same result. Part content is searched with memchr() (memmem() where
 * CRs are dense), never byte by byte, and only a match length (less than boundary length + 4;
 * the bytes themselves are a prefix of the delimiter, kept in the parser) is carried from one
 * chunk to the next, so memory does not grow with the upload size.
 *
 * Threads: a parser belongs to one request; calls on one parser must not overlap. Distinct
 * parsers share nothing.
 *
 * What is accepted (the answers a user sees are in mp_strerror() / mp_error_status()):
 *  - A preamble before the first delimiter and an epilogue after the close delimiter, both
 *    ignored. The first delimiter may start at the very first byte.
 *  - A delimiter is CRLF "--" boundary; a CR is always required before it (a bare LF followed
 *    by "--boundary" inside content is content, since content is binary). It must then be
 *    followed by "--" (close delimiter), or by transport padding (spaces and tabs) and a line
 *    end. Followed by any other byte, by "-" and a byte other than "-", or by CR and a byte
 *    other than LF, it was not a delimiter: those bytes are content, as in Go's
 *    mime/multipart. Once padding is seen the line must end (CRLF or LF) right after it, else
 *    MP_ERR_BAD_DELIMITER: padding may be any length, and is not buffered to be given back.
 *  - Line ends: CRLF or a bare LF at the end of a delimiter line, of a part header line and of
 *    the empty line that ends the part headers (many servers accept bare LF there). A CR not
 *    followed by LF inside part headers or after padding is an error. Bytes after the close
 *    delimiter "--" are epilogue, whatever they are.
 *  - Part headers: "Name: value" lines, header names case-insensitive and made of token
 *    characters, no folded lines, no control characters other than tab in values. Each part
 *    needs exactly one "Content-Disposition: form-data" with a name parameter; at most one
 *    Content-Type. Parameters (name, filename; any case) take a token or a quoted string. In
 *    a quoted string a backslash escapes only '"' and '\\' and is otherwise kept, because
 *    browsers send Windows paths unescaped (HTML's form encoding percent-encodes '"').
 *    "filename*" and unknown parameters are ignored.
 */
#ifndef SLOWSRV_MULTIPART_H
#define SLOWSRV_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* RFC 2046 section 5.1.1: a boundary has 1 to 70 characters. */
#define MP_BOUNDARY_MAX 70

/* The size of the part-header buffer inside struct mp_parser: the highest max_header_bytes. */
#define MP_HEADER_BYTES_CAP 8192

/* Defaults used when mp_parser_init() is given no limits. */
#define MP_DEFAULT_HEADER_BYTES MP_HEADER_BYTES_CAP
#define MP_DEFAULT_MAX_PARTS 1000u
#define MP_DEFAULT_MAX_BODY ((uint64_t)1 << 30) /* 1 GiB, as slowsrv's --max-body */

/*
 * Every failure is one of these negative codes; 0 is success. Once a parser returned one, it
 * returns the same one from every later call.
 */
enum mp_error {
    MP_OK = 0,
    MP_ERR_PARAM = -1,             /* invalid argument to an mp_ call (a bug in the caller) */
    MP_ERR_CONTENT_TYPE = -2,      /* Content-Type absent or not multipart/form-data (415) */
    MP_ERR_NO_BOUNDARY = -3,       /* multipart/form-data without a boundary, or an empty one */
    MP_ERR_BOUNDARY_TOO_LONG = -4, /* boundary longer than MP_BOUNDARY_MAX characters */
    MP_ERR_BAD_BOUNDARY = -5,      /* boundary with a character outside RFC 2046's bchars,
                                      ending in a space, given twice, or a Content-Type whose
                                      parameter list does not parse */
    MP_ERR_BAD_DELIMITER = -6,     /* a delimiter line with bytes other than padding after it */
    MP_ERR_BAD_HEADERS = -7,       /* part headers that do not parse, or no form-data name */
    MP_ERR_HEADERS_TOO_LARGE = -8, /* one part's header block over max_header_bytes */
    MP_ERR_TOO_MANY_PARTS = -9,    /* more than max_parts parts */
    MP_ERR_BODY_TOO_LARGE = -10,   /* more than max_body bytes fed (413) */
    MP_ERR_TRUNCATED = -11,        /* mp_parser_finish() before the close delimiter */
    MP_ERR_NO_DATA_PART = -12,     /* not raised by the parser: for callers that need "data" */
    MP_ERR_ABORTED = -13,          /* a callback returned non-zero */
};

/*
 * Limits of one parser; crossing one is an error, never a truncation. Use mp_limits_default()
 * and change the fields you need.
 *  - max_header_bytes: bytes of one part's header block, counting its line ends and the empty
 *    line that ends it; 1 to MP_HEADER_BYTES_CAP (default MP_HEADER_BYTES_CAP, 8 KiB).
 *  - max_parts: parts in the body, at least 1 (default MP_DEFAULT_MAX_PARTS).
 *  - max_body: bytes fed in total, preamble and epilogue included; any value, UINT64_MAX for
 *    no limit (default MP_DEFAULT_MAX_BODY).
 */
struct mp_limits {
    uint32_t max_header_bytes;
    uint32_t max_parts;
    uint64_t max_body;
};

/*
 * Optional callbacks; any of them may be NULL. Each gets the user pointer given to
 * mp_parser_init() and returns 0 to go on, or non-zero to stop the parser with MP_ERR_ABORTED.
 * They run inside mp_parser_feed(), on the caller's thread, and must not call back into the
 * same parser.
 *  - on_part_begin: a part's headers were read. name is its form-data name (may be "");
 *    filename is NULL for a plain field; content_type is NULL when the part has none. The
 *    strings are NUL-terminated, point into the parser and are valid only during the call.
 *  - on_part_data: len (> 0) bytes of the current part's content, in order. data points into
 *    the caller's buffer or into the parser and is valid only during the call. Preamble and
 *    epilogue are never reported.
 *  - on_part_end: the current part ended properly (its closing delimiter line was read); size
 *    is the total of its on_part_data lengths. A part cut short by an error or by the end of
 *    the body gets no on_part_end.
 */
struct mp_callbacks {
    int (*on_part_begin)(void *user, const char *name, const char *filename,
                         const char *content_type);
    int (*on_part_data)(void *user, const void *data, size_t len);
    int (*on_part_end)(void *user, uint64_t size);
};

/*
 * The parser. The caller owns the storage (about 8.2 KiB; embed it in the request) and never
 * reads or writes the fields: use the functions below. There is nothing to clean up.
 */
struct mp_parser {
    int state;
    int error;
    uint32_t delim_len; /* "\r\n--" + boundary */
    uint32_t match;     /* bytes of delim matched at the end of the previous chunk */
    uint32_t hdr_len;
    uint32_t line_start;
    uint32_t parts;
    bool in_part;
    bool counting;
    bool data_found;
    bool closed;
    uint64_t total;
    uint64_t part_size;
    uint64_t data_size;
    struct mp_limits limits;
    struct mp_callbacks cb;
    void *user;
    char delim[MP_BOUNDARY_MAX + 4];
    char hdr[MP_HEADER_BYTES_CAP];
};

/* Fills *limits with the defaults listed at struct mp_limits. */
void mp_limits_default(struct mp_limits *limits);

/*
 * Extracts the boundary from a Content-Type header value (ct, ct_len bytes, need not be
 * NUL-terminated; NULL means the header is absent). The media type must be
 * multipart/form-data in any case; parameters may come in any order and case, around ';' and
 * '=' may be spaces and tabs, a value is a token or a quoted string (RFC 7230 quoted-pair
 * escapes), and other parameters are ignored. An unquoted value runs to the next ';', space,
 * tab or '"', so an unquoted boundary=a=b gives "a=b".
 * On success writes the boundary, NUL-terminated, to out (MP_BOUNDARY_MAX + 1 bytes), its
 * length to *out_len, and returns 0. Otherwise returns MP_ERR_CONTENT_TYPE (absent or another
 * media type), MP_ERR_NO_BOUNDARY, MP_ERR_BOUNDARY_TOO_LONG or MP_ERR_BAD_BOUNDARY, and out is
 * unspecified.
 */
int mp_boundary_parse(const char *ct, size_t ct_len, char out[MP_BOUNDARY_MAX + 1],
                      size_t *out_len);

/*
 * Validates a boundary (len bytes, 1 to MP_BOUNDARY_MAX characters of RFC 2046 bchars, not
 * ending in a space). Returns 0, MP_ERR_NO_BOUNDARY (len 0), MP_ERR_BOUNDARY_TOO_LONG or
 * MP_ERR_BAD_BOUNDARY.
 */
int mp_boundary_check(const char *boundary, size_t len);

/*
 * Prepares *p for one body with this boundary (as given by mp_boundary_parse(); copied).
 * limits NULL means mp_limits_default(); cb NULL means no callbacks; *limits and *cb are
 * copied, user is passed to the callbacks as is. Returns 0, MP_ERR_PARAM (p NULL or a limit
 * out of range) or an mp_boundary_check() error; on error every later call on *p returns
 * that error. *p may be initialised again at any time to parse another body.
 */
int mp_parser_init(struct mp_parser *p, const char *boundary, size_t boundary_len,
                   const struct mp_limits *limits, const struct mp_callbacks *cb, void *user);

/*
 * Parses the next len bytes of the body (len may be 0; buf may be NULL then). Returns len
 * when every byte was taken, or a negative enum mp_error. Bytes after the close delimiter are
 * taken and ignored (but still count against max_body). Errors are reported at the byte that
 * causes them, so every chunking of a body gives the same code; past max_body the bytes up to
 * the limit are parsed first, then MP_ERR_BODY_TOO_LARGE. buf is not kept after the call.
 */
ssize_t mp_parser_feed(struct mp_parser *p, const void *buf, size_t len);

/*
 * Tells the parser the body ended. Returns 0 when the close delimiter was read and no error
 * happened, the earlier error if any, else MP_ERR_TRUNCATED (which then sticks). May be called
 * more than once.
 */
int mp_parser_finish(struct mp_parser *p);

/* True once a part named exactly "data" began. */
bool mp_parser_data_found(const struct mp_parser *p);

/*
 * Content bytes of the first part named "data" read so far; its final size once that part
 * ended (always the case after mp_parser_finish() returned 0). 0 if there is none.
 */
uint64_t mp_parser_data_size(const struct mp_parser *p);

/* Parts begun so far (their delimiter line was read). */
uint32_t mp_parser_parts(const struct mp_parser *p);

/*
 * Bytes taken so far, at most max_body. After an error: the bytes before the offending one
 * (for a refused header block or delimiter line: up to its end), the same for every chunking
 * except after MP_ERR_ABORTED.
 */
uint64_t mp_parser_bytes(const struct mp_parser *p);

/*
 * A short, static, human text for an enum mp_error (e.g. "malformed multipart: part headers
 * too large"); "unknown multipart error" for other values. Never NULL.
 */
const char *mp_strerror(int err);

/*
 * The HTTP status an engine answers for err: 0 -> 200, MP_ERR_CONTENT_TYPE -> 415,
 * MP_ERR_BODY_TOO_LARGE -> 413, MP_ERR_PARAM, MP_ERR_ABORTED and unknown codes -> 500, every
 * other (malformed, truncated, limits, no data part) -> 400.
 */
int mp_error_status(int err);

#endif
