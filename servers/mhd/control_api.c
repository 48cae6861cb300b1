/*
 * The control API on libmicrohttpd: a daemon of its own on --control's socket, with its own
 * thread. It reads a request and its body and hands them to the core (control_handle), which
 * decides the answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mhd.h"

struct control_call {
    char *body;
    size_t len;
    int too_big;
};

/* The core reads the target as sent (its own percent-decoding): libmicrohttpd's is turned off. */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *uri)
{
    (void)cls;
    (void)c;
    return strlen(uri);
}

static enum MHD_Result on_control(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ptr)
{
    struct app_server *srv = cls;
    struct control_call *call = *ptr;
    (void)version;
    if (!call) {
        call = calloc(1, sizeof *call);
        *ptr = call;
        return call ? MHD_YES : MHD_NO;
    }
    if (*upload_size) {
        /* Past CONTROL_BODY_MAX only counted: the core answers 413. */
        if (call->len + *upload_size > CONTROL_BODY_MAX) {
            call->too_big = 1;
        } else {
            char *b = realloc(call->body, call->len + *upload_size);
            if (!b)
                return MHD_NO;
            memcpy(b + call->len, upload, *upload_size);
            call->body = b;
        }
        call->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    struct control_answer a;
    {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char who[64];
        net_format_peer(ci ? ci->client_addr : NULL, who, sizeof who);
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
        struct control_request rq = {method,
                                     url,
                                     strlen(url),
                                     call->too_big ? NULL : call->body,
                                     call->len,
                                     auth,
                                     auth ? strlen(auth) : 0,
                                     who,
                                     origin,
                                     origin ? strlen(origin) : 0};
        control_handle(srv->control, &rq, &a);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(a.body_len, a.body ? a.body : (void *)(uintptr_t) "",
                                        a.body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        control_answer_free(&a);
        return MHD_NO;
    }
    a.body = NULL; /* the response frees it */
    if (a.close)
        MHD_add_response_header(resp, "Connection", "close");
    for (size_t i = 0; i < a.nheaders; i++)
        MHD_add_response_header(resp, a.headers[i].name, a.headers[i].value);
    enum MHD_Result rc = MHD_queue_response(conn, a.status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static void on_control_done(void *cls, struct MHD_Connection *conn, void **ptr,
                            enum MHD_RequestTerminationCode why)
{
    struct control_call *call = *ptr;
    (void)cls;
    (void)conn;
    (void)why;
    if (call) {
        free(call->body);
        free(call);
    }
    *ptr = NULL;
}

int mhd_control_start(struct app_server *srv, struct app_base *base, char *err, size_t errlen)
{
    if (base->control_fd < 0)
        return 0;
    srv->control = base->control;
    srv->control_daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        on_control, srv, MHD_OPTION_LISTEN_SOCKET, base->control_fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_NOTIFY_COMPLETED,
        on_control_done, srv, MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, srv, MHD_OPTION_END);
    if (!srv->control_daemon) {
        snprintf(err, errlen, "control: libmicrohttpd cannot serve the control API");
        return -EINVAL;
    }
    base->control_fd = -1;
    return 0;
}

void mhd_control_stop(struct app_server *srv)
{
    if (srv->control_daemon)
        MHD_stop_daemon(srv->control_daemon);
    srv->control_daemon = NULL;
}
