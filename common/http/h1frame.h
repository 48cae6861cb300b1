/*
 * h1frame: where each request of an HTTP/1.x connection begins and ends, followed byte by byte
 * as the bytes arrive, for an engine whose library reads a request whole before slowsrv sees it
 * (libh2o 2.2.5). It lets the core refuse what the library would take or answer its own way:
 *
 *   what is wrong                                                      answer
 *   a head that fails head_check (more than 100 fields: 431; ...)      head_check's
 *   a chunk-size line over H1FRAME_CHUNK_LINE_MAX bytes                400
 *   a chunk size that is not hex, or past 64 bits                      400
 *   chunk data longer than its size                                    400
 *   a trailer line without a colon, or whose name is not a token,     400
 *     or whose value holds a control byte
 *   more than HEAD_MAX_FIELDS trailer fields, or more trailer bytes    431
 *     than the limit given
 *
 * A refused request is where the connection ends: nothing after it is read. What is not HTTP/1.x
 * (the HTTP/2 preface, a request that asks to switch protocols, CONNECT) ends the watch: the
 * library has it from there. Pure: the caller keeps the state, one per connection.
 *
 * In stream mode (h1frame_init_stream), for an engine that sees each byte once as its library
 * receives it and checks heads elsewhere, a head is only followed to its end and read for its
 * framing (Content-Length, Transfer-Encoding, Upgrade, CONNECT), and the chunk and trailer rows
 * above apply.
 */
#ifndef SLOWSRV_H1FRAME_H
#define SLOWSRV_H1FRAME_H

#include <stddef.h>
#include <stdint.h>

/* Longest chunk-size line, its extensions included (nginx, libh2o and libmicrohttpd allow
 * about 4 to 8 KiB). */
#define H1FRAME_CHUNK_LINE_MAX 4096

/* A head still open past this many bytes is left to the library's own limit. */
#define H1FRAME_HEAD_MAX (64 * 1024)

enum h1frame_state {
    H1FRAME_HEAD = 0,   /* a head is due (or arriving) from `head_at` */
    H1FRAME_BODY,       /* `left` bytes of a Content-Length body */
    H1FRAME_CHUNK_LINE, /* a chunk-size line */
    H1FRAME_CHUNK_DATA, /* `left` bytes of chunk data */
    H1FRAME_CHUNK_END,  /* the CRLF after chunk data */
    H1FRAME_TRAILER,    /* trailer lines, up to an empty one */
    H1FRAME_OFF,        /* no longer HTTP/1.x: not watched */
    H1FRAME_REFUSED,    /* a request was refused: nothing more is read */
};

struct h1frame {
    enum h1frame_state state;
    uint64_t pos;     /* stream offset of the next byte to look at */
    uint64_t head_at; /* stream offset where the current request began */
    uint64_t left;    /* body or chunk bytes still due */
    uint64_t size;    /* the chunk size read so far */
    size_t line;      /* bytes of the current chunk-size or trailer line so far */
    size_t trailer_bytes, trailer_fields;
    size_t max_trailer;   /* trailer bytes allowed (--max-header-size) */
    unsigned char digits; /* hex digits of the chunk size so far */
    unsigned char ext;    /* past the chunk size: its extensions */
    unsigned char colon;  /* a trailer line's colon came */
    unsigned char bad;    /* the trailer line is malformed (reported at its end) */
    unsigned char cr;     /* the last byte of the line was CR */
    unsigned status;      /* H1FRAME_REFUSED: the refusal, its reason */
    const char *why;
    /* Stream mode: the head being followed. */
    unsigned char stream;    /* heads are followed byte by byte, not checked */
    unsigned char lines;     /* lines of the head so far (at most 255 counted) */
    unsigned char chunked;   /* it has Transfer-Encoding */
    unsigned char switches;  /* Upgrade, CONNECT or HTTP/2's preface: the watch ends after it */
    unsigned char prelen;    /* bytes of the current line kept in pre */
    unsigned char first_len; /* bytes of the request line kept in first */
    char pre[96];            /* the start of the current line (a field name and its value) */
    char first[96];          /* the start of the request line (its method and target) */
    uint64_t length;         /* its Content-Length */
    size_t head_bytes;
};

/* A new connection's watch in stream mode (above). */
void h1frame_init_stream(struct h1frame *f, size_t max_trailer);

/* Stream mode: h1frame_feed with only the bytes that just arrived, buf[0..len). */
unsigned h1frame_feed_stream(struct h1frame *f, const char *buf, size_t len, const char **why);

/* A new connection's watch; max_trailer bytes of trailer fields are allowed. */
void h1frame_init(struct h1frame *f, size_t max_trailer);

/* The library holds buf[0..len), of which the last `fresh` bytes just arrived (fresh <= len):
 * looks at those. The library may have consumed, or decoded in place, what came before them,
 * but a head still arriving is the unchanged end of buf. Returns 0 to go on; or the status to
 * refuse a request with, with a one-line reason in *why and, in *at, how many bytes before the
 * end of buf that request began (more than len: the library has consumed its start). Then the
 * state is H1FRAME_REFUSED and every later call returns the same. */
unsigned h1frame_feed(struct h1frame *f, const char *buf, size_t len, size_t fresh,
                      const char **why, uint64_t *at);

#endif
