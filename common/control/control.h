/*
 * control: change the target while the load runs, the same on both binaries. The control API
 * (--control, a listener of its own) and the config's scenario (scenario.h) change the routes
 * through here: each change builds the next generation of the route table from the live one and
 * hands it over (service_publish): a request that has begun keeps the plan it began with, the
 * next one sees the new table, on every thread, and no lock is taken on the request path.
 *
 * The engines carry the API's HTTP: they read a request on the control listener (its body up to
 * CONTROL_BODY_MAX), pass it to control_handle, and send the answer it fills in. Everything the
 * API answers is decided here.
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
 *
 * A value is checked exactly as in the config file; a bad one gets 400 naming the key, and
 * nothing changes. Every change is logged in one line (who, what, before, after).
 */
#ifndef SLOWSRV_CONTROL_H
#define SLOWSRV_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "plan/config.h"
#include "base/log.h"
#include "plan/route.h"
#include "run/service.h"

/* Largest request body the control API reads; control_handle answers 413 beyond it. */
#define CONTROL_BODY_MAX (1024 * 1024)

struct scenario;

struct control {
    struct service *svc;
    const struct config *cfg;
    const struct log *log;
    struct scenario *scenario; /* the config's scenario, or NULL */
};

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

/* The routes a table was built from, as an editable list of config routes (deep copies). */
struct control_list {
    struct config_route r[ROUTE_MAX];
    size_t n;
};

/* Fills *l with t's config routes (those of its config for the start table). 0 or -ENOMEM. */
int control_list_of(struct control_list *l, const struct route_table *t);

void control_list_free(struct control_list *l);

/* An edit of one route: returns 0, or -EINVAL with "<key>: <reason>" in why. */
typedef int (*control_edit_fn)(struct config_route *r, void *ctx, char *why, size_t whylen);

/* Edits the route at `path` in l (t is the table l came from: a built-in route of t that l does
 * not hold yet is described into l first), checking the result as the config file would.
 * Returns 0; -ENOENT for no such route; -EPERM for a route that cannot change (/write, /stats,
 * /metrics, /healthz); -EINVAL with why; -ENOMEM. l is unchanged on failure. */
int control_list_edit(struct control_list *l, const struct route_table *t, const char *path,
                      control_edit_fn edit, void *ctx, uint64_t max_delay_us, char *why,
                      size_t whylen);

/* An edit that applies the keys of a JSON object (a struct cJSON *) as config_route_apply. */
int control_edit_json(struct config_route *r, void *json, char *why, size_t whylen);

/* Publishes l as the next generation (service_publish), logs the change in one line ("<who>:
 * <what>: before <...> after <...>") and returns the generation, or a negative errno. Call with
 * service_change_lock held. */
long long control_publish(struct control *c, const struct control_list *l, const char *who,
                          const char *what, const char *path, const struct route_table *before);

/* A route as the API shows it: the keys of a config route, "body_size" and "slot" beside. The
 * caller frees it with cJSON_Delete. */
struct cJSON *control_route_json(const struct route *r);

#endif
