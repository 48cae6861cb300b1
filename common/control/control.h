/*
 * control: change the target while the load runs, the same on both binaries. The control API
 * (api.h) and the config's scenario (scenario.h) change the routes through here: each change
 * builds the next generation of the route table from the live one and hands it over
 * (service_publish): a request that has begun keeps the plan it began with, the next one sees the
 * new table, on every thread, and no lock is taken on the request path.
 *
 * A value is checked exactly as in the config file; a bad one is refused naming the key, and
 * nothing changes. Every change is logged in one line (who, what, before, after).
 */
#ifndef SLOWSRV_CONTROL_H
#define SLOWSRV_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "plan/config.h"
#include "plan/route.h"
#include "run/service.h"

struct scenario;

struct control {
    struct service *svc;
    const struct config *cfg; /* the config of the start */
    const struct log *log;
    struct scenario *scenario; /* the config's scenario (no phases when it has none, for a
                                  reload to give it some); NULL without a config file */
    /* What a scenario's "restore" goes back to: the routes of the config file last loaded
     * (NULL: the start table). Under service_change_lock. */
    struct route_table *base;
    char *scenario_json; /* the scenario last loaded, to restart it only when it changed */
    int scenario_manual; /* and how it starts */
    double scenario_at;
};

/* The routes a table was built from, as an editable list of config routes (deep copies), at
 * most CONFIG_ROUTES_MAX. {0} is an empty list. */
struct control_list {
    struct config_route *r; /* n of them, in room for cap */
    size_t n, cap;
};

/* Fills *l with t's config routes (those of its config for the start table). 0 or -ENOMEM. */
int control_list_of(struct control_list *l, const struct route_table *t);

/* Moves *r to the end of l (r is zeroed: l owns its strings now). Returns 0; -ENOSPC if l holds
 * CONFIG_ROUTES_MAX routes already; -ENOMEM. On failure *r is left as it was. */
int control_list_add(struct control_list *l, struct config_route *r);

/* Frees the routes and the list's room; l is an empty list after. */
void control_list_free(struct control_list *l);

/* Index of the route at `path` in l, or -1. Linear: for one look-up per change. */
long control_list_find(const struct control_list *l, const char *path);

/* An edit of one route: returns 0, or -EINVAL with "<key>: <reason>" in why. */
typedef int (*control_edit_fn)(struct config_route *r, void *ctx, char *why, size_t whylen);

/* Edits the route at `path` in l (t is the table l came from: a built-in route of t that l does
 * not hold yet is described into l first), checking the result as the config file would.
 * Returns 0; -ENOENT for no such route; -EPERM for a route that cannot change (/write, /stats,
 * /metrics, /healthz); -EINVAL with why (also for a built-in route that would be one past
 * CONFIG_ROUTES_MAX); -ENOMEM. l is unchanged on failure. */
int control_list_edit(struct control_list *l, const struct route_table *t, const char *path,
                      control_edit_fn edit, void *ctx, uint64_t max_delay_us, char *why,
                      size_t whylen);

/* -EINVAL with "<key>: <reason>" in why if route r asks for what the engine of cfg cannot do
 * (read-rate where its library reads a body whole), as the config file's check says; else 0. */
int control_engine_refuses(const struct config *cfg, const struct config_route *r, char *why,
                           size_t whylen);

/* An edit that applies the keys of a JSON object (a struct cJSON *) as config_route_apply. */
int control_edit_json(struct config_route *r, void *json, char *why, size_t whylen);

/* Publishes l as the next generation (service_publish), logs the change in one line ("<who>:
 * <what>: before <...> after <...>") and returns the generation, or a negative errno. Call with
 * service_change_lock held. */
long long control_publish(struct control *c, const struct control_list *l, const char *who,
                          const char *what, const char *path, const struct route_table *before);

/* Applies a reloaded config file: its routes (with its delay, error-rate and error-status) as
 * the next generation, in one change, and its scenario, restarted as its "scenario-start" says
 * when it or its start changed. `next` is checked (config_load, scenario_check) and may be freed
 * once this returns. Returns the generation (and the one before in *from), or a negative errno
 * with why. Call from one thread
 * at a time, without service_change_lock. */
long long control_reload(struct control *c, const struct config *next, uint64_t *from, char *why,
                         size_t whylen);

/* A route as the API shows it: the keys of a config route, "body_size" and "slot" beside. The
 * caller frees it with cJSON_Delete. */
struct cJSON *control_route_json(const struct route *r);

#endif
