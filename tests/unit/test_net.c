#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/net.h"
#include "check.h"

static int connect_to(unsigned port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void net_listen_port_zero_gives_all_sockets_one_port(void)
{
    char err[CORE_ERR_LEN] = "";
    int fds[3];
    unsigned port = 0;
    CHECK_INT(net_listen("127.0.0.1", 0, 3, 16, fds, &port, err, sizeof err), 0);
    CHECK(port > 0);
    for (int i = 0; i < 3; i++) {
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        CHECK(fds[i] >= 0);
        getsockname(fds[i], (struct sockaddr *)&sa, &len);
        CHECK_INT(ntohs(sa.sin_port), port);
    }
    int c = connect_to(port);
    CHECK(c >= 0);
    close(c);
    net_close_all(fds, 3);
    CHECK_INT(fds[0], -1);
}

/* Also with SO_REUSEPORT on both sides: a second server must not silently share the port. */
static void net_listen_reports_a_port_in_use(void)
{
    for (size_t n = 1; n <= 2; n++) {
        char err[CORE_ERR_LEN] = "";
        int a[2], b[2] = {5, 5};
        unsigned port = 0, port2 = 0;
        CHECK_INT(net_listen("127.0.0.1", 0, n, 16, a, &port, err, sizeof err), 0);
        CHECK_INT(net_listen("127.0.0.1", port, n, 16, b, &port2, err, sizeof err), -EADDRINUSE);
        char want[128];
        snprintf(want, sizeof want, "bind 127.0.0.1:%u: Address already in use", port);
        CHECK_STR(err, want);
        CHECK_INT(b[0], -1);
        net_close_all(a, n);
    }
}

static void net_listen_refuses_an_unknown_host(void)
{
    char err[CORE_ERR_LEN] = "";
    int fd;
    unsigned port;
    CHECK_INT(net_listen("no.such.host.invalid", 0, 1, 16, &fd, &port, err, sizeof err), -EINVAL);
    CHECK(strncmp(err, "resolve no.such.host.invalid: ", 30) == 0);
}

static void net_format_url_brackets_ipv6(void)
{
    char buf[64];
    net_format_url(buf, sizeof buf, "http", "127.0.0.1", 8080);
    CHECK_STR(buf, "http://127.0.0.1:8080");
    net_format_url(buf, sizeof buf, "https", "::1", 443);
    CHECK_STR(buf, "https://[::1]:443");
}

static void net_peer_gone_sees_a_closed_peer_only(void)
{
    char err[CORE_ERR_LEN];
    int lfd;
    unsigned port;
    net_listen("127.0.0.1", 0, 1, 16, &lfd, &port, err, sizeof err);
    int c = connect_to(port);
    usleep(10000);
    int s = accept(lfd, NULL, NULL);
    CHECK(s >= 0);
    CHECK_INT(net_peer_gone(s), 0);
    CHECK(write(c, "x", 1) == 1);
    usleep(10000);
    CHECK_INT(net_peer_gone(s), 0);
    close(c);
    usleep(10000);
    /* Pending unread data is not a close: the peer is gone only once it has all been read. */
    char buf[4];
    CHECK(read(s, buf, sizeof buf) == 1);
    CHECK_INT(net_peer_gone(s), 1);
    close(s);
    close(lfd);
}

static void net_accept_starved_pauses_and_warns_every_10s(void)
{
    static const struct {
        int err;
        int starved;
    } cases[] = {{EMFILE, 1}, {ENFILE, 1},       {ENOBUFS, 1}, {ENOMEM, 1},
                 {EAGAIN, 0}, {ECONNABORTED, 0}, {EINTR, 0},   {EPROTO, 0}};
    char msg[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t last = 0;
        CHECK_INT(net_accept_starved(cases[i].err, 5000000, &last, msg, sizeof msg),
                  cases[i].starved);
        CHECK_INT(msg[0] != '\0', cases[i].starved);
        CHECK(last == (cases[i].starved ? 5000000u : 0u));
    }
    uint64_t last = 0;
    net_accept_starved(EMFILE, 1000000, &last, msg, sizeof msg);
    CHECK_STR(msg, "accept: Too many open files; new connections wait in the backlog (raise "
                   "ulimit -n, or LimitNOFILE= under systemd)");
    /* Starved again within 10 s: still a pause, no second line. */
    CHECK_INT(net_accept_starved(EMFILE, 10999999, &last, msg, sizeof msg), 1);
    CHECK_STR(msg, "");
    CHECK_INT(net_accept_starved(ENFILE, 11000000, &last, msg, sizeof msg), 1);
    CHECK(strstr(msg, "Too many open files in system") != NULL);
    CHECK(last == 11000000u);
}

int main(void)
{
    net_listen_port_zero_gives_all_sockets_one_port();
    net_listen_reports_a_port_in_use();
    net_listen_refuses_an_unknown_host();
    net_format_url_brackets_ipv6();
    net_peer_gone_sees_a_closed_peer_only();
    net_accept_starved_pauses_and_warns_every_10s();
    return CHECK_DONE();
}
