/*
 * stream: event streams (?stream=, X-Slowsrv-Stream), planned here for both engines. A stream
 * answers with no Content-Length (HTTP/1.1 chunked coding, HTTP/2 DATA frames) and sends one
 * event after another: the first when the answer starts (after the request's delay), each next
 * one a gap later, until `count` events have gone, or without a count until the client leaves
 * or --max-delay has passed since the answer began.
 *
 * Grammar: FORMAT[,count=N][,size=BYTES|LO..HI][,retry=MS][,event=NAME][,gap=SPEC]
 *   FORMAT   sse (text/event-stream) or ndjson (application/x-ndjson)
 *   count=N  events in the sequence, 1 to STREAM_COUNT_MAX; 0 or absent: no end of its own
 *   size=    bytes of each event's data: fixed, or LO..HI drawn uniformly (at most
 *            STREAM_SIZE_MAX); 16 when absent
 *   retry=MS SSE: a retry: field in the first event
 *   event=   SSE: the event: field, 1 to 32 of [A-Za-z0-9_.-]; "tick" when absent
 *   gap=SPEC the time between two events, any delay spec (delay.h); 1s when absent. A spec's own
 *            commas are its own: the gap ends only at a comma followed by another key.
 *
 * Draws are pure functions of (seed, draw stream, request index, event id): event e of request
 * i of a route has the same gap and size on every run and both binaries.
 *
 * An event, SSE ("data" is `size` bytes of a fixed pattern; times in microseconds since the
 * answer began, the intended one from the plan and the one it was actually sent):
 *   id: 3\nevent: tick\n[retry: 3000\n]: intended_us=200000 sent_us=200131\ndata: abc...\n\n
 * NDJSON, one line:
 *   {"id":3,"intended_us":200000,"sent_us":200131,"data":"abc..."}\n
 * Ids count from 1; a request with Last-Event-ID: N goes on from N + 1 (the route decides).
 */
#ifndef SLOWSRV_STREAM_H
#define SLOWSRV_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "plan/delay.h"

#define STREAM_COUNT_MAX 1000000U
#define STREAM_SIZE_MAX 65536U
#define STREAM_SIZE_DEFAULT 16U
#define STREAM_RETRY_MAX 86400000U
#define STREAM_EVENT_NAME_MAX 32

/* Bytes of an event beside its data: the longest fields and times. */
#define STREAM_EVENT_OVERHEAD 192

enum stream_format {
    STREAM_NONE = 0,
    STREAM_SSE,
    STREAM_NDJSON,
};

struct stream_spec {
    enum stream_format format; /* STREAM_NONE: no stream */
    uint32_t count;            /* 0: until the client leaves or --max-delay */
    uint32_t size_lo, size_hi; /* data bytes per event, drawn in [lo, hi] */
    uint32_t retry_ms;         /* 0: no retry: field */
    char event[STREAM_EVENT_NAME_MAX + 1];
    struct delay_spec gap;
};

/* Parses the grammar above into *out ("none": no stream). Returns 0, or -EINVAL / -ERANGE with
 * a one-phrase reason in err (errlen bytes); *out is only written on success. */
int stream_spec_parse(struct stream_spec *out, const char *s, char *err, size_t errlen);

/* Writes s as stream_spec_parse reads it back. Returns the length written (always
 * NUL-terminated; 640 bytes hold every spec). */
size_t stream_spec_format(const struct stream_spec *s, char *buf, size_t len);

/* The answer's Content-Type for the format. */
const char *stream_content_type(enum stream_format f);

/* The gap before event `id` (the time since the event before it) and that event's data size,
 * for the request whose draws are keyed by `key` (stream_key). Pure, thread-safe. */
uint64_t stream_gap_us(const struct stream_spec *s, uint64_t key, uint64_t id);
size_t stream_size(const struct stream_spec *s, uint64_t key, uint64_t id);

/* The draw key of request `index` of draw stream `stream` under `seed`. */
uint64_t stream_key(uint64_t seed, uint64_t stream, uint64_t index);

/* Writes event `id` with `size` data bytes, planned at intended_us and sent at sent_us, into
 * buf (len bytes, at least size + STREAM_EVENT_OVERHEAD). `first`: the stream's first event
 * (SSE: it carries retry:). Returns its length, or 0 if it does not fit. */
size_t stream_event_format(const struct stream_spec *s, uint64_t id, uint64_t intended_us,
                           uint64_t sent_us, size_t size, int first, char *buf, size_t len);

/* Reads a Last-Event-ID value: the last id the client had, into *id. Returns 0, or -EINVAL for
 * anything but 1 to 20 digits (within uint64). */
int stream_last_id_parse(const char *s, uint64_t *id);

#endif
