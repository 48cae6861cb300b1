/*
 * Two engines as the servers describe themselves to the config (servers/<engine>/server.c):
 * one that runs every model, one that runs event loops only. For the unit tests and the fuzz
 * targets that load a configuration.
 */
#ifndef SLOWSRV_TEST_ENGINES_H
#define SLOWSRV_TEST_ENGINES_H

#include "plan/config.h"

#define H2O_WHOLE_BODIES "slowsrv-h2o reads a request body whole before it answers; use slowsrv"

static const struct config_engine all_models = {
    "slowsrv",
    "libmicrohttpd engine",
    CONFIG_MODEL_BIT(CONFIG_MODEL_EPOLL) | CONFIG_MODEL_BIT(CONFIG_MODEL_POLL) |
        CONFIG_MODEL_BIT(CONFIG_MODEL_SELECT) |
        CONFIG_MODEL_BIT(CONFIG_MODEL_THREAD_PER_CONNECTION),
    "every model",
    "no other engine",
    NULL};

static const struct config_engine loops_only = {
    "slowsrv-h2o", "libh2o engine",           CONFIG_MODEL_BIT(CONFIG_MODEL_EPOLL),
    "event loops", "slowsrv (libmicrohttpd)", H2O_WHOLE_BODIES};

#endif
