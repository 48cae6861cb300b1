/* slowsrv-h2o: the libh2o binary (HTTP/1.1, h2c, h2 over TLS). */
#include "server.h"

int main(int argc, char **argv)
{
    return app_main(argc, argv, &h2o_engine);
}
