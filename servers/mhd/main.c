/*
 * slowsrv: the libmicrohttpd binary. Loads the configuration, starts the engine, prints the
 * startup line and waits for SIGTERM/SIGINT, then drains and exits 0.
 */
#include <errno.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "server.h"

extern char **environ;

static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
        seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return seed;
}

int main(int argc, char **argv)
{
    struct config cfg;
    enum config_action action;
    char err[CONFIG_ERR_LEN];
    struct log lg;
    struct mhd_server *srv;
    sigset_t sigs;
    int sig;

    if (config_load(&cfg, CONFIG_ENGINE_MHD, argc, argv, environ, random_seed(), &action, err,
                    sizeof err) != 0) {
        fprintf(stderr, "slowsrv: %s\n", err);
        return 2;
    }
    switch (action) {
    case CONFIG_ACTION_HELP:
        config_usage(stdout, "slowsrv", CONFIG_ENGINE_MHD);
        return 0;
    case CONFIG_ACTION_VERSION:
        printf("slowsrv %s (engine mhd, libmicrohttpd %s)\n", SLOWSRV_VERSION, MHD_get_version());
        return 0;
    case CONFIG_ACTION_CHECK:
        printf("%s: ok\n", cfg.check_file);
        return 0;
    case CONFIG_ACTION_RUN:
        break;
    }
    log_init(&lg, cfg.log_level, stderr);

    /* Every thread inherits this mask; only the main thread takes the signals, in sigwait. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = mhd_server_start(&srv, &cfg, &lg, err);
    if (rc != 0) {
        fprintf(stderr, "slowsrv: %s%s\n", err,
                rc == -EADDRINUSE ? " (another server has it; pick another --port)" : "");
        return rc == -EINVAL ? 2 : 1;
    }
    char url[300];
    net_format_url(url, sizeof url, "http", cfg.bind, mhd_server_port(srv));
    fprintf(stderr, "slowsrv %s listening on %s (engine=mhd model=%s threads=%u)\n",
            SLOWSRV_VERSION, url, config_model_name(cfg.model),
            cfg.model == CONFIG_MODEL_THREAD_PER_CONNECTION ? 1u : cfg.threads);
    fflush(stderr);

    while (sigwait(&sigs, &sig) != 0)
        ;
    LOG(&lg, LOG_LEVEL_INFO, "%s: draining for up to %llu ms", strsignal(sig),
        (unsigned long long)(cfg.grace_us / 1000));
    mhd_server_stop(srv);
    mhd_server_free(srv);
    LOG(&lg, LOG_LEVEL_INFO, "stopped");
    return 0;
}
