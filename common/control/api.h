/*
 * control API: the HTTP API that changes the target while the load runs (--control, a listener
 * of its own). Its requests come through the same exchange path as the main port's (exchange.h):
 * the core checks the head (control_check), reads the body (up to CONTROL_BODY_MAX) and calls
 * control_handle, which decides the whole answer. Its request and answer types are in
 * service.h, so that the exchange can carry them.
 *
 *   GET    /routes            the live routes, as config routes, and the generation
 *   GET    /routes/PATH       one route
 *   PATCH  /routes/PATH       change keys of a route: {"delay": "2s", "error-rate": 0.3}
 *   POST   /routes            add a route: {"path": "/new", ...}
 *   PUT    /routes            replace the config's routes: [{"path": ...}, ...]
 *   DELETE /routes/PATH       remove a route added at runtime
 *   POST   /reset             start a new run in /stats (stats_reset)
 *   GET    /scenario          the scenario's phases and where it stands
 *   POST   /scenario/start    start (or restart) it from its first phase, now or at
 *                             {"at": "<RFC 3339 instant>"}
 *   POST   /scenario/stop     stop it where it stands
 *
 * CORS: the /ui page (on the main port) may call the API from a browser; a request whose Origin
 * is that page's (scheme, the bind address or, for a loopback or wildcard bind, any name of it,
 * and the main port) is answered with Access-Control-Allow-Origin, an OPTIONS preflight with
 * 204; any other Origin gets 403. Requests without Origin (curl, scripts) are not concerned.
 */
#ifndef SLOWSRV_CONTROL_API_H
#define SLOWSRV_CONTROL_API_H

#include <stddef.h>

#include "control/control.h"

/* Sets up control over svc (which must outlive c): the scenario of cfg, if any, is built and
 * checked. Returns 0, or -EINVAL with a one-line reason in err, or -ENOMEM. */
int control_init(struct control *c, struct service *svc, const struct config *cfg,
                 const struct log *lg, char *err, size_t errlen);

/* The server serves: the scenario starts now, or at its "scenario-start" instant, unless it waits
 * for POST /scenario/start. */
void control_start(struct control *c);

/* Stops the scenario and frees what control_init made. */
void control_cleanup(struct control *c);

/* Before the body is read: 1 with *out filled when rq is answered from its head alone (an Origin
 * other than /ui's, a missing or wrong token, a CORS preflight), else 0 with *out zeroed.
 * Thread-safe. */
int control_check(struct control *c, const struct control_request *rq, struct control_answer *out);

/* Answers one request of the control API. Thread-safe (changes are serialised inside). */
void control_handle(struct control *c, const struct control_request *rq,
                    struct control_answer *out);

/* The service's hook (service.h) that serves c through the exchange path. */
void control_hook(struct control *c, struct service_control *out);

#endif
