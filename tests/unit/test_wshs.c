/* Unit tests for http/wshs.c: the WebSocket handshake's decision (RFC 6455 section 4.2) and its
 * accept value. */
#include <string.h>
#include <strings.h>

#include "http/wshs.h"

#include "check.h"

/* A request's fields: NULL-terminated name, value pairs. */
struct fields {
    const char *const *kv;
};

static long lookup(void *ctx, const char *name, char *buf, size_t len)
{
    const struct fields *f = ctx;
    for (size_t i = 0; f->kv[i]; i += 2) {
        if (strcasecmp(f->kv[i], name) == 0) {
            size_t n = strlen(f->kv[i + 1]);
            size_t c = n < len - 1 ? n : len - 1;
            memcpy(buf, f->kv[i + 1], c);
            buf[c] = '\0';
            return (long)n;
        }
    }
    return -1;
}

static void wshs_accept_is_the_rfc_example(void)
{
    char out[WSHS_ACCEPT_LEN + 1];
    wshs_accept("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
    CHECK_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void wshs_answers_each_bad_handshake_its_status(void)
{
    static const char *const good[] = {"Upgrade",
                                       "websocket",
                                       "Connection",
                                       "keep-alive, Upgrade",
                                       "Sec-WebSocket-Key",
                                       "dGhlIHNhbXBsZSBub25jZQ==",
                                       "Sec-WebSocket-Version",
                                       "13",
                                       NULL};
    static const char *const plain[] = {"Host", "x", NULL};
    static const char *const no_token[] = {"Upgrade", "h2c", "Connection", "Upgrade", NULL};
    static const char *const no_conn[] = {"Upgrade", "WebSocket", "Connection", "keep-alive", NULL};
    static const char *const bad_key[] = {"Upgrade",           "websocket", "Connection", "upgrade",
                                          "Sec-WebSocket-Key", "c2hvcnQ=",  NULL};
    static const char *const key15[] = {"Upgrade", "websocket",         "Connection",
                                        "upgrade", "Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAA====",
                                        NULL};
    static const char *const v8[] = {"Upgrade",
                                     "websocket",
                                     "Connection",
                                     "upgrade",
                                     "Sec-WebSocket-Key",
                                     "dGhlIHNhbXBsZSBub25jZQ==",
                                     "Sec-WebSocket-Version",
                                     "8",
                                     NULL};
    static const char *const no_version[] = {
        "Upgrade", "websocket",         "Connection",
        "upgrade", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==",
        NULL};
    static const struct {
        const char *method;
        const char *const *kv;
        int h2, http10, tls;
        unsigned status;
        const char *hdr;
    } cases[] = {
        {"GET", good, 0, 0, 0, 101, NULL},
        {"GET", good, 0, 1, 0, 400, NULL},
        {"GET", good, 1, 0, 0, 400, NULL},
        {"GET", good, 0, 0, 1, 400, NULL},
        {"POST", good, 0, 0, 0, 400, NULL},
        {"GET", plain, 0, 0, 0, 426, "Upgrade"},
        {"GET", no_token, 0, 0, 0, 400, NULL},
        {"GET", no_conn, 0, 0, 0, 400, NULL},
        {"GET", bad_key, 0, 0, 0, 400, NULL},
        {"GET", key15, 0, 0, 0, 400, NULL},
        {"GET", v8, 0, 0, 0, 426, "Sec-WebSocket-Version"},
        {"GET", no_version, 0, 0, 0, 426, "Sec-WebSocket-Version"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fields f = {cases[i].kv};
        struct wshs_result r;
        wshs_check(cases[i].method, lookup, &f, cases[i].h2, cases[i].http10, cases[i].tls, &r);
        CHECK_INT(r.status, cases[i].status);
        CHECK_STR(r.hdr_name ? r.hdr_name : "-", cases[i].hdr ? cases[i].hdr : "-");
        if (r.status == 101)
            CHECK_STR(r.accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        else
            CHECK(r.why && strncmp(r.why, "websocket: ", 11) == 0);
    }
}

static void wshs_tokens_are_a_list(void)
{
    CHECK_INT(wshs_has_token("keep-alive, Upgrade", "upgrade"), 1);
    CHECK_INT(wshs_has_token(" upgrade ,x", "upgrade"), 1);
    CHECK_INT(wshs_has_token("upgrades", "upgrade"), 0);
    CHECK_INT(wshs_has_token("", "upgrade"), 0);
}

int main(void)
{
    wshs_accept_is_the_rfc_example();
    wshs_answers_each_bad_handshake_its_status();
    wshs_tokens_are_a_list();
    return CHECK_DONE();
}
