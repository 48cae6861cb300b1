/*
 * reload: the config file, read again while the server runs, on SIGHUP and when the file
 * changes. The file's directory is watched (inotify), so that every way a file is replaced is
 * seen: written in place, renamed over by an editor, or swapped through a symlink as Kubernetes
 * does for a mounted ConfigMap (..data). A change is applied once the directory has been quiet
 * for RELOAD_QUIET_MS, and only when the file's bytes differ from the last ones applied.
 *
 * A reload loads the configuration exactly as the start did (config_load: defaults < file <
 * environment < flags, with the start's seed), checks it whole (scenario_check), and applies it
 * in one control change (control_reload): the routes with the file's delay, error-rate and
 * error-status as the next generation, and its scenario when it changed. A bad file changes
 * nothing: its reason is logged and counted. Options that only a start applies (port, threads,
 * model, TLS files...) keep their running value and are logged and reported as needing a
 * restart; nothing else is refused for their sake.
 */
#ifndef SLOWSRV_RELOAD_H
#define SLOWSRV_RELOAD_H

#include <stdint.h>

#include "control/control.h"
#include "plan/config.h"

/* How long the directory must be quiet after a change before the file is read. */
#define RELOAD_QUIET_MS 100

struct reload {
    struct control *ctl;
    const struct config *start;
    const struct config_engine *engine;
    int argc;
    char **argv;
    char *const *envp;
    uint64_t applied; /* hash of the bytes last applied (at the start, or by a reload) */
    uint64_t tried;   /* and of the bytes last tried, good or bad */
    int fd;           /* inotify descriptor watching the file's directory, or -1 */
};

/* Sets r up for the configuration `start` (loaded from argc/argv and envp for `engine`). With a
 * config file, watches its directory (a failure to watch is logged; SIGHUP still reloads).
 * Returns 0, or -ENOENT when there is no config file (nothing to reload). */
int reload_init(struct reload *r, struct control *ctl, const struct config *start,
                const struct config_engine *engine, int argc, char **argv, char *const *envp);

/* Reads what the watch reported; returns 1 if the directory changed (reload_apply later, once
 * quiet), else 0. */
int reload_events(struct reload *r);

/* Reads the file and applies it if its bytes changed since the last ones applied (`sighup`) or
 * tried (a change of the directory). Returns 1 if applied, 0 if unchanged, -1 if refused. */
int reload_apply(struct reload *r, int sighup);

void reload_cleanup(struct reload *r);

#endif
