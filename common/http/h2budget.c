#include "http/h2budget.h"

#include <string.h>

/* RFC 9113: frame types, flags, the client preface. */
enum {
    F_DATA,
    F_HEADERS,
    F_PRIORITY,
    F_RST_STREAM,
    F_SETTINGS,
    F_PUSH_PROMISE,
    F_PING,
    F_GOAWAY,
    F_WINDOW_UPDATE,
    F_CONTINUATION,
    F_TYPES
};
#define FLAG_END_STREAM 0x1
#define FLAG_ACK 0x1
#define SETTINGS_INITIAL_WINDOW_SIZE 4
#define WINDOW_MAX 0x7fffffffu
#define PREFACE_LEN 24u
/* Bytes of the acknowledgement a frame is answered with. */
#define PING_ACK_LEN 17
#define SETTINGS_ACK_LEN 9

enum state {
    S_START,   /* nothing read: the preface, or a frame */
    S_PREFACE, /* inside the preface */
    S_HEAD,    /* gathering a frame header */
    S_PAYLOAD, /* inside a frame's payload */
};

void h2budget_init(struct h2budget *b)
{
    memset(b, 0, sizeof *b);
    b->credits = H2BUDGET_CREDITS;
    b->initial = 65535;
    b->state = S_START;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static enum h2budget_verdict give(struct h2budget *b, enum h2budget_verdict v, enum stats_h2 why)
{
    b->verdict = (uint8_t)v;
    b->reason = (uint8_t)why;
    return v;
}

/* The client added `inc` to stream's window: kept among the H2BUDGET_STREAMS raised most. */
static void raise_window(struct h2budget *b, uint32_t stream, uint32_t inc)
{
    size_t low = 0;
    for (size_t i = 0; i < H2BUDGET_STREAMS; i++) {
        if (b->raised[i].stream == stream) {
            uint64_t sum = (uint64_t)b->raised[i].added + inc;
            b->raised[i].added = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
            return;
        }
        if (b->raised[i].added < b->raised[low].added)
            low = i;
    }
    if (inc > b->raised[low].added) {
        b->raised[low].stream = stream;
        b->raised[low].added = inc;
    }
}

/* SETTINGS_INITIAL_WINDOW_SIZE becomes v: a stream's window would be at most v plus what the
 * client added to it. */
static int window_overflows(const struct h2budget *b, uint32_t v)
{
    for (size_t i = 0; v > b->initial && i < H2BUDGET_STREAMS; i++)
        if (b->raised[i].stream && (uint64_t)v + b->raised[i].added > WINDOW_MAX)
            return 1;
    return 0;
}

/* A payload value is complete (a SETTINGS entry, a WINDOW_UPDATE increment). */
static enum h2budget_verdict on_value(struct h2budget *b)
{
    if (b->type == F_WINDOW_UPDATE) {
        uint32_t inc = be32(b->value) & WINDOW_MAX;
        if (b->stream)
            raise_window(b, b->stream, inc);
        return H2BUDGET_OK;
    }
    if ((b->value[0] << 8 | b->value[1]) == SETTINGS_INITIAL_WINDOW_SIZE) {
        uint32_t v = be32(b->value + 2);
        if (v <= WINDOW_MAX && window_overflows(b, v))
            return give(b, H2BUDGET_FLOW_CONTROL, STATS_H2_FLOW_CONTROL);
        if (v <= WINDOW_MAX)
            b->initial = v;
    }
    return H2BUDGET_OK;
}

/* A frame header is complete: its cost. */
static enum h2budget_verdict on_frame(struct h2budget *b, int blocked)
{
    enum stats_h2 kind = STATS_H2_COUNT; /* none: the frame does work */
    b->length = (uint32_t)b->head[0] << 16 | (uint32_t)b->head[1] << 8 | b->head[2];
    b->type = b->head[3];
    b->flags = b->head[4];
    b->stream = be32(b->head + 5) & WINDOW_MAX;
    b->remaining = b->length;
    b->vhave = 0;
    switch (b->type) {
    case F_DATA:
        if (!b->length && !(b->flags & FLAG_END_STREAM))
            kind = STATS_H2_EMPTY_DATA;
        break;
    case F_HEADERS:
        if ((b->stream & 1) && b->stream > b->last_stream)
            b->last_stream = b->stream;
        if (!b->length)
            kind = STATS_H2_HEADERS;
        break;
    case F_CONTINUATION:
        kind = STATS_H2_HEADERS;
        break;
    case F_PRIORITY:
        kind = STATS_H2_PRIORITY;
        break;
    case F_RST_STREAM:
        kind = STATS_H2_RST_STREAM;
        break;
    case F_SETTINGS:
        kind = STATS_H2_SETTINGS;
        if (blocked && !(b->flags & FLAG_ACK))
            b->owed += SETTINGS_ACK_LEN;
        break;
    case F_PING:
        kind = STATS_H2_PING;
        if (blocked && !(b->flags & FLAG_ACK))
            b->owed += PING_ACK_LEN;
        break;
    case F_WINDOW_UPDATE:
        kind = STATS_H2_WINDOW_UPDATE;
        break;
    case F_PUSH_PROMISE:
    case F_GOAWAY:
        break;
    default:
        kind = STATS_H2_UNKNOWN_FRAME;
        break;
    }
    if (kind == STATS_H2_COUNT)
        return H2BUDGET_OK;
    if (b->credits <= 0)
        return give(b, H2BUDGET_CALM, kind);
    b->credits--;
    return H2BUDGET_OK;
}

/* 1 if the current frame's payload holds values the budget reads. */
static int reads_payload(const struct h2budget *b)
{
    return (b->type == F_SETTINGS && !(b->flags & FLAG_ACK)) || b->type == F_WINDOW_UPDATE;
}

enum h2budget_verdict h2budget_feed(struct h2budget *b, const uint8_t *p, size_t len, int blocked)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    size_t i = 0;
    if (b->verdict)
        return (enum h2budget_verdict)b->verdict;
    while (i < len) {
        switch ((enum state)b->state) {
        case S_START:
            b->state = p[i] == (uint8_t)preface[0] ? S_PREFACE : S_HEAD;
            b->have = 0;
            break;
        case S_PREFACE: {
            size_t want = PREFACE_LEN - (size_t)b->have;
            size_t n = len - i < want ? len - i : want;
            b->have = (uint8_t)(b->have + n);
            i += n;
            if (b->have == PREFACE_LEN) {
                b->state = S_HEAD;
                b->have = 0;
            }
            break;
        }
        case S_HEAD:
            b->head[b->have++] = p[i++];
            if (b->have < sizeof b->head)
                break;
            b->have = 0;
            if (on_frame(b, blocked) != H2BUDGET_OK) {
                b->at = i >= sizeof b->head ? i - sizeof b->head : 0;
                return (enum h2budget_verdict)b->verdict;
            }
            b->state = b->remaining ? S_PAYLOAD : S_HEAD;
            break;
        case S_PAYLOAD: {
            size_t n = len - i < b->remaining ? len - i : b->remaining;
            if (reads_payload(b)) {
                /* Entries of 6 bytes (SETTINGS) or one of 4 (WINDOW_UPDATE); a short tail is
                 * the library's error to answer. */
                size_t size = b->type == F_SETTINGS ? 6 : 4;
                for (size_t k = 0; k < n; k++) {
                    if (b->type == F_WINDOW_UPDATE && b->length - b->remaining + k >= 4)
                        break;
                    b->value[b->vhave++] = p[i + k];
                    if (b->vhave == size) {
                        b->vhave = 0;
                        if (on_value(b) != H2BUDGET_OK) {
                            size_t into = b->length - b->remaining + k + 1 + sizeof b->head;
                            b->at = i + k + 1 >= into ? i + k + 1 - into : 0;
                            return (enum h2budget_verdict)b->verdict;
                        }
                    }
                }
            }
            i += n;
            b->remaining -= (uint32_t)n;
            if (!b->remaining)
                b->state = S_HEAD;
            break;
        }
        }
    }
    return H2BUDGET_OK;
}

size_t h2budget_verdict_at(const struct h2budget *b)
{
    return b->at;
}

void h2budget_answered(struct h2budget *b)
{
    b->credits = b->credits + H2BUDGET_PER_ANSWER > H2BUDGET_CREDITS
                     ? H2BUDGET_CREDITS
                     : b->credits + H2BUDGET_PER_ANSWER;
}

void h2budget_written(struct h2budget *b, uint64_t total)
{
    if (total <= b->written)
        return;
    uint64_t earned = (total - b->written) / H2BUDGET_OUTPUT_PER_CREDIT;
    b->written += earned * H2BUDGET_OUTPUT_PER_CREDIT;
    uint64_t sum = (uint64_t)(b->credits > 0 ? b->credits : 0) + earned;
    b->credits = sum > H2BUDGET_CREDITS ? H2BUDGET_CREDITS : (int32_t)sum;
}

int h2budget_must_pause(struct h2budget *b, int blocked)
{
    if (!blocked)
        b->owed = 0;
    return b->owed > H2BUDGET_OWED_MAX;
}

enum stats_h2 h2budget_reason(const struct h2budget *b)
{
    return (enum stats_h2)b->reason;
}

size_t h2budget_goaway(const struct h2budget *b, uint8_t out[H2BUDGET_GOAWAY_LEN])
{
    uint32_t code = b->verdict == H2BUDGET_FLOW_CONTROL ? H2BUDGET_FLOW_CONTROL_ERROR
                                                        : H2BUDGET_ENHANCE_YOUR_CALM;
    if (!b->verdict)
        return 0;
    static const uint8_t head[9] = {0, 0, 8, F_GOAWAY, 0, 0, 0, 0, 0};
    memcpy(out, head, sizeof head);
    for (int k = 0; k < 4; k++) {
        out[9 + k] = (uint8_t)(b->last_stream >> (24 - 8 * k));
        out[13 + k] = (uint8_t)(code >> (24 - 8 * k));
    }
    return H2BUDGET_GOAWAY_LEN;
}
