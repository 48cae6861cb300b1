#include "control/reload.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "control/scenario.h"
#include "run/service.h"

/* FNV-1a, 64 bits: tells one version of the file from the next. */
static uint64_t hash_of(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h ^ n;
}

static int file_hash(const char *path, uint64_t *h, char *err, size_t errlen)
{
    char *buf;
    size_t len;
    int rc = config_read_file(path, CONFIG_FILE_MAX, &buf, &len, err, errlen);
    if (rc == 0) {
        *h = hash_of(buf, len);
        free(buf);
    }
    return rc;
}

int reload_init(struct reload *r, struct control *ctl, const struct config *start,
                const struct config_engine *engine, int argc, char **argv, char *const *envp)
{
    char err[CORE_ERR_LEN];
    *r = (struct reload){ctl, start, engine, argc, argv, envp, 0, 0, -1};
    if (!start->config_file[0])
        return -ENOENT;
    if (file_hash(start->config_file, &r->applied, err, sizeof err) == 0)
        r->tried = r->applied;
    char dir[CONFIG_PATH_LEN];
    snprintf(dir, sizeof dir, "%s", start->config_file);
    r->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (r->fd < 0 ||
        inotify_add_watch(r->fd, dirname(dir),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                              IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
        LOG(ctl->log, LOG_LEVEL_WARN,
            "config: cannot watch the directory of %s (%s); SIGHUP still reloads it",
            start->config_file, strerror(errno));
        if (r->fd >= 0)
            close(r->fd);
        r->fd = -1;
    }
    return 0;
}

int reload_events(struct reload *r)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int changed = 0;
    for (;;) {
        ssize_t n = read(r->fd, buf, sizeof buf);
        if (n <= 0)
            return changed;
        changed = 1;
    }
}

int reload_apply(struct reload *r, int sighup)
{
    const char *file = r->start->config_file;
    struct service *svc = r->ctl->svc;
    char err[CORE_ERR_LEN], keys[256] = "";
    uint64_t h = 0;
    if (file_hash(file, &h, err, sizeof err) == 0 && h == (sighup ? r->applied : r->tried)) {
        if (sighup)
            LOG(r->ctl->log, LOG_LEVEL_INFO, "config: %s is unchanged: nothing to reload", file);
        return 0;
    }
    r->tried = h;
    struct config next;
    enum config_action action;
    int rc = config_load(&next, r->engine, r->argc, r->argv, r->envp, r->start->seed, &action, err,
                         sizeof err);
    if (rc == 0 && (rc = scenario_check(&next, err, sizeof err)) != 0)
        config_cleanup(&next);
    long long gen = -1;
    uint64_t from = 0;
    size_t nroutes = 0;
    if (rc == 0) {
        char why[CORE_ERR_LEN];
        nroutes = next.nroutes;
        gen = control_reload(r->ctl, &next, &from, why, sizeof why);
        if (gen < 0)
            snprintf(err, sizeof err, "%.200s: %.300s", file, why);
        else
            config_restart_keys(r->start, &next, keys, sizeof keys);
        config_cleanup(&next);
    }
    if (gen < 0) {
        LOG(r->ctl->log, LOG_LEVEL_WARN, "config: reload refused, nothing changed: %s", err);
        service_reloaded(svc, 0, err, "");
        return -1;
    }
    r->applied = h;
    service_reloaded(svc, 1, "", keys);
    LOG(r->ctl->log, LOG_LEVEL_INFO,
        "config: %s reloaded (%s): %zu routes: generation %llu -> %lld", file,
        sighup ? "SIGHUP" : "the file changed", nroutes, (unsigned long long)from, gen);
    if (keys[0])
        LOG(r->ctl->log, LOG_LEVEL_WARN,
            "config: %s: %s changed: needs a restart (the running value stays)", file, keys);
    return 1;
}

void reload_cleanup(struct reload *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}
