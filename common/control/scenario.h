/*
 * scenario: the config's "scenario", a list of timed phases that change the routes while the
 * load runs, through the same changes as the control API (control.h). Each phase:
 *
 *   {"at": "60s", "name": "brownout", "routes": {"/test": {"delay": "2s"}}}
 *   {"at": "120s", "routes": {"/test": {"error-rate": 0.3}}}
 *   {"at": "150s", "ramp": {"/test": {"from": "2s", "to": "100ms", "over": "30s"}}}
 *   {"at": "180s", "name": "recovered", "restore": true}
 *
 * "at" is the offset from the scenario's start (phases in order); "routes" holds PATCHes as the
 * control API takes them; "ramp" moves a route's delay linearly from one spec to another of the
 * same form over "over", in steps of SCENARIO_RAMP_STEP_US; "restore" puts every route back as
 * it was at the start, before the phase's own changes. The scenario runs on a thread of its
 * own, which sleeps until the next phase or ramp step: it never touches the request path.
 */
#ifndef SLOWSRV_SCENARIO_H
#define SLOWSRV_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "plan/config.h"

/* A ramp changes its delay this often (or in 10 steps when it is shorter than 1 s). */
#define SCENARIO_RAMP_STEP_US (100 * 1000)

struct control;
struct scenario;
struct cJSON;

/* Checks cfg's scenario whole, as it would run on cfg's routes: each phase's keys and values,
 * the routes it names, the ramps' specs. Returns 0 (also when there is no scenario), or -EINVAL
 * with one line in err naming the phase and key: "cfg.json: scenario[1].routes./test.delay:
 * ...". */
int scenario_check(const struct config *cfg, char *err, size_t errlen);

/* Builds the scenario of c's config (checked; none: no phases) and its thread, stopped. 0,
 * -EINVAL or -ENOMEM. */
int scenario_new(struct scenario **out, struct control *c, char *err, size_t errlen);

/* Starts the scenario from its first phase (again, if it ran). `who` names the caller in the
 * log. Thread-safe. */
void scenario_start(struct scenario *s, const char *who);

/* Starts it at the wall-clock instant at_unix (Unix seconds): the same phases at the same
 * instants on every replica whose clock agrees. An instant past already starts it at once, in
 * the phase due by now. Thread-safe. */
void scenario_start_at(struct scenario *s, double at_unix, const char *who);

/* The number of phases (0 for a NULL s, or a config without "scenario"). */
size_t scenario_phases(struct scenario *s);

/* Replaces the phases by json's (checked by scenario_check; NULL: none), stopped. 0, or
 * -EINVAL / -ENOMEM with why, s unchanged. */
int scenario_replace(struct scenario *s, const char *json, char *why, size_t whylen);

/* Stops it where it stands: the routes stay as the last phase left them. */
void scenario_stop(struct scenario *s, const char *who);

/* Stops the thread and frees s (NULL is fine). */
void scenario_free(struct scenario *s);

/* Adds "scenario" to the JSON object o: running, the current phase, when it started, and each
 * phase with when it began in this run. Nothing for a NULL s. */
void scenario_report(struct scenario *s, struct cJSON *o);

/* The index of the phase in force (-1 before the first, or with no scenario), and 1 if it runs. */
int scenario_phase(struct scenario *s, int *running);

#endif
