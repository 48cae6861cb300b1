/* slowsrv: the libmicrohttpd binary. */
#include <microhttpd.h>
#include <stdio.h>

#include "../app.h"
#include "server.h"

static const char *library(void)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "libmicrohttpd %s", MHD_get_version());
    return buf;
}

static int start(void **srv, const struct config *cfg, const struct log *lg, int inherited,
                 struct accesslog *access, char *err)
{
    return mhd_server_start((struct mhd_server **)srv, cfg, lg, inherited, access, err);
}

static unsigned port(const void *srv)
{
    return mhd_server_port(srv);
}

static unsigned threads(const void *srv)
{
    return mhd_server_threads(srv);
}

static void stop(void *srv)
{
    mhd_server_stop(srv);
}

static void release(void *srv)
{
    mhd_server_free(srv);
}

int main(int argc, char **argv)
{
    static const struct app_engine engine = {
        .program = "slowsrv",
        .name = "mhd",
        .engine = CONFIG_ENGINE_MHD,
        .library = library,
        .start = start,
        .port = port,
        .threads = threads,
        .stop = stop,
        .free = release,
    };
    return app_main(argc, argv, &engine);
}
