/*
 * libFuzzer target for the WebSocket framing path of common/run/wsloop.c: the bytes a client
 * sends on an upgraded socket, fed through wslay and the socket loop's own callbacks (the
 * budget, the echo, the plan's close) by wsloop_feed.
 *
 * Input: its first byte picks the route's message limit (125 bytes to 64 KiB) and whether the
 * plan closes after two messages; the rest is the client's bytes.
 *
 * Checked:
 *   - the feed runs (no crash, no leak, no read past a buffer: ASan);
 *   - at most one echo per message received, and none past the plan's close after two;
 *   - the socket ends with a code of the RFC's (1000 to 1011) or one for applications (3000 to
 *     4999: the plan's 4000, or the client's own, which the server's close repeats);
 *   - a crossed budget ends in 1008, unless another close came first.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ws.h"
#include "run/wsloop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct ws_spec s;
    char err[200];
    if (ws_spec_parse(&s, "echo", err, sizeof err) != 0)
        __builtin_trap();
    s.limit = WS_LIMIT_MIN << (data[0] & 0x7);
    if (data[0] & 0x8) {
        s.close_code = 4000;
        s.close_after_n = 2;
    }
    struct wsloop_feed_result r;
    if (wsloop_feed(&s, data + 1, size - 1, &r) != 0)
        abort(); /* out of memory only */
    if (r.messages_out > r.messages_in)
        __builtin_trap();
    if (s.close_after_n && r.messages_out > s.close_after_n)
        __builtin_trap();
    if (!((r.close >= 1000 && r.close <= 1011) || (r.close >= 3000 && r.close <= 4999)))
        __builtin_trap();
    return 0;
}
