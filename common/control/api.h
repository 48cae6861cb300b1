/*
 * control API: the HTTP API that changes the target while the load runs (--control, a listener
 * of its own). Its requests come through the same exchange path as the main port's (exchange.h):
 * the core reads the body (up to CONTROL_BODY_MAX) and calls control_handle, which decides the
 * whole answer.
 *
 *   GET    /routes            the live routes, as config routes, and the generation
 *   GET    /routes/PATH       one route
 *   PATCH  /routes/PATH       change keys of a route: {"delay": "2s", "error-rate": 0.3}
 *   POST   /routes            add a route: {"path": "/new", ...}
 *   PUT    /routes            replace the config's routes: [{"path": ...}, ...]
 *   DELETE /routes/PATH       remove a route added at runtime
 *   POST   /reset             start a new run in /stats (stats_reset)
 *   GET    /scenario          the scenario's phases and where it stands
 *   POST   /scenario/start    start (or restart) it from its first phase
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

/* Largest request body the control API reads; control_handle answers 413 beyond it. */
#define CONTROL_BODY_MAX (1024 * 1024)

/* A request on the control listener, as the engine read it. */
struct control_request {
    const char *method; /* NUL-terminated */
    const char *target; /* path and query as received */
    size_t target_len;
    const char *body; /* body_len bytes; NULL when body_len is 0, or when the engine stopped
                         keeping it past CONTROL_BODY_MAX (the core answers 413) */
    size_t body_len;
    const char *authorization; /* the Authorization header's value, NULL if none */
    size_t authorization_len;
    const char *who;    /* the client's address, for the log line */
    const char *origin; /* the Origin header's value (a browser's page), NULL if none */
    size_t origin_len;
};

/* What to answer: status, JSON body (malloc'd, the engine frees it with control_answer_free;
 * none for 204) and the headers to add (Allow, WWW-Authenticate, the CORS ones). */
struct control_answer {
    unsigned status;
    char *body;
    size_t body_len;
    /* Every header of the answer, Content-Type included (none for a 204). */
    struct config_header headers[8];
    size_t nheaders;
    /* Close the connection after this answer. The API answers one request a connection: a
     * change is rare, and no client of it keeps a connection open beside the load. */
    int close;
    char origin[256]; /* storage for Access-Control-Allow-Origin */
};

/* Sets up control over svc (which must outlive c): the scenario of cfg, if any, is built and
 * checked. Returns 0, or -EINVAL with a one-line reason in err, or -ENOMEM. */
int control_init(struct control *c, struct service *svc, const struct config *cfg,
                 const struct log *lg, char *err, size_t errlen);

/* The server serves: the scenario starts now unless it waits for POST /scenario/start. */
void control_start(struct control *c);

/* Stops the scenario and frees what control_init made. */
void control_cleanup(struct control *c);

/* Answers one request of the control API. Thread-safe (changes are serialised inside). */
void control_handle(struct control *c, const struct control_request *rq,
                    struct control_answer *out);

/* Frees what control_handle put in *a. */
void control_answer_free(struct control_answer *a);

/* Sets up control over svc (which must outlive c): the scenario of cfg, if any, is built and
 * checked. Returns 0, or -EINVAL with a one-line reason in err, or -ENOMEM. */
int control_init(struct control *c, struct service *svc, const struct config *cfg,
                 const struct log *lg, char *err, size_t errlen);

/* The server serves: the scenario starts now unless it waits for POST /scenario/start. */
void control_start(struct control *c);

/* Stops the scenario and frees what control_init made. */
void control_cleanup(struct control *c);

/* Answers one request of the control API. Thread-safe (changes are serialised inside). */
void control_handle(struct control *c, const struct control_request *rq,
                    struct control_answer *out);

/* Frees what control_handle put in *a. */
void control_answer_free(struct control_answer *a);

#endif
