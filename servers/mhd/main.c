/* slowsrv: the libmicrohttpd binary. */
#include "server.h"

int main(int argc, char **argv)
{
    return app_main(argc, argv, &mhd_engine);
}
