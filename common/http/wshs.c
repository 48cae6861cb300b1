#include "http/wshs.h"

#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <string.h>
#include <strings.h>

static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

int wshs_has_token(const char *v, const char *token)
{
    size_t tlen = strlen(token);
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        const char *end = v;
        while (*end && *end != ',')
            end++;
        const char *last = end;
        while (last > v && (last[-1] == ' ' || last[-1] == '\t'))
            last--;
        if ((size_t)(last - v) == tlen && strncasecmp(v, token, tlen) == 0)
            return 1;
        v = end;
    }
    return 0;
}

void wshs_accept(const char *key, size_t klen, char *out)
{
    struct sha1_ctx sha;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&sha);
    sha1_update(&sha, klen, (const uint8_t *)key);
    sha1_update(&sha, sizeof guid - 1, (const uint8_t *)guid);
    sha1_digest(&sha, sizeof digest, digest);
    base64_encode_raw(out, sizeof digest, digest);
    out[WSHS_ACCEPT_LEN] = '\0';
}

/* 1 if key is the base64 of 16 bytes (24 characters, the last two "=="). */
static int key_ok(const char *key, size_t klen)
{
    struct base64_decode_ctx b;
    uint8_t raw[BASE64_DECODE_LENGTH(24)];
    size_t n = sizeof raw;
    if (klen != 24 || key[22] != '=' || key[23] != '=')
        return 0;
    base64_decode_init(&b);
    return base64_decode_update(&b, &n, raw, klen, key) && base64_decode_final(&b) && n == 16;
}

static void refuse(struct wshs_result *out, unsigned status, const char *why)
{
    out->status = status;
    out->why = why;
}

void wshs_check(const char *method, wshs_lookup_fn lookup, void *ctx, int h2, int http10, int tls,
                struct wshs_result *out)
{
    char v[256];
    long n;
    *out = (struct wshs_result){.status = 101};
    if (h2)
        return refuse(out, 400,
                      "websocket: needs HTTP/1.1 (WebSocket over HTTP/2, RFC 8441, is not "
                      "supported); connect with HTTP/1.1");
    if (http10)
        return refuse(out, 400, "websocket: the handshake needs HTTP/1.1 (RFC 6455 section 4.1)");
    if (tls)
        return refuse(out, 400,
                      "websocket: not served over TLS; use ws:// on a server without --tls-cert");
    if (strcmp(method, "GET") != 0)
        return refuse(out, 400, "websocket: the handshake must be a GET");
    n = lookup ? lookup(ctx, "Upgrade", v, sizeof v) : -1;
    if (n < 0) {
        refuse(out, 426,
               "websocket: this route speaks WebSocket; send the handshake "
               "(Upgrade: websocket, Connection: Upgrade, Sec-WebSocket-Key, "
               "Sec-WebSocket-Version: 13)");
        out->hdr_name = "Upgrade";
        out->hdr_value = "websocket";
        return;
    }
    if ((size_t)n >= sizeof v || !wshs_has_token(v, "websocket"))
        return refuse(out, 400, "websocket: the Upgrade field must name websocket");
    n = lookup(ctx, "Connection", v, sizeof v);
    if (n < 0 || (size_t)n >= sizeof v || !wshs_has_token(v, "upgrade"))
        return refuse(out, 400, "websocket: the Connection field must hold the token upgrade");
    n = lookup(ctx, "Sec-WebSocket-Key", v, sizeof v);
    if (n < 0 || !key_ok(v, (size_t)n))
        return refuse(out, 400,
                      "websocket: Sec-WebSocket-Key must be the base64 of 16 random bytes");
    wshs_accept(v, (size_t)n, out->accept);
    n = lookup(ctx, "Sec-WebSocket-Version", v, sizeof v);
    if (n != 2 || strcmp(v, "13") != 0) {
        refuse(out, 426, "websocket: only Sec-WebSocket-Version 13 is spoken");
        out->hdr_name = "Sec-WebSocket-Version";
        out->hdr_value = "13";
        out->accept[0] = '\0';
    }
}
