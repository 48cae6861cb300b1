/* slowsrv-h2o: the libh2o binary (HTTP/1.1, h2c, h2 over TLS). */
#include <h2o/version.h>

#include "../app.h"
#include "server.h"

static const char *library(void)
{
    return "libh2o " H2O_VERSION;
}

static int start(void **srv, const struct config *cfg, const struct log *lg, int inherited,
                 struct accesslog *access, char *err)
{
    return h2o_server_start((struct h2o_server **)srv, cfg, lg, inherited, access, err);
}

static unsigned port(const void *srv)
{
    return h2o_server_port(srv);
}

static unsigned threads(const void *srv)
{
    return h2o_server_threads(srv);
}

static void stop(void *srv)
{
    h2o_server_stop(srv);
}

static void release(void *srv)
{
    h2o_server_free(srv);
}

int main(int argc, char **argv)
{
    static const struct app_engine engine = {
        .program = "slowsrv-h2o",
        .name = "h2o",
        .engine = CONFIG_ENGINE_H2O,
        .library = library,
        .start = start,
        .port = port,
        .threads = threads,
        .stop = stop,
        .free = release,
    };
    return app_main(argc, argv, &engine);
}
