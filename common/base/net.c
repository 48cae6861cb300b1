#include "base/net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* its struct tcp_info has the byte counts */
#include <stdio.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

void net_close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

static int open_one(const struct addrinfo *ai, const char *host, unsigned port, int reuseport,
                    int backlog, char *err, size_t errlen)
{
    int one = 1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "socket: %s", strerror(e));
        return -e;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        int e = errno;
        snprintf(err, errlen, "setsockopt SO_REUSEPORT: %s", strerror(e));
        close(fd);
        return -e;
    }
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        int e = errno;
        snprintf(err, errlen, "bind %s:%u: %s", host, port, strerror(e));
        close(fd);
        return -e;
    }
    if (listen(fd, backlog) != 0) {
        int e = errno;
        snprintf(err, errlen, "listen %s:%u: %s", host, port, strerror(e));
        close(fd);
        return -e;
    }
    return fd;
}

static unsigned local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void set_port(struct sockaddr *sa, unsigned port)
{
    if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
}

int net_listen(const char *host, unsigned port, size_t n, int backlog, int *fds,
               unsigned *bound_port, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    char portstr[8];

    for (size_t i = 0; i < n; i++)
        fds[i] = -1;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(portstr, sizeof portstr, "%u", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "resolve %s: %s", host, gai_strerror(rc));
        return -EINVAL;
    }
    if (n > 1) {
        /* SO_REUSEPORT would let us share a port another server already holds with the same
         * option: claim the port once without it first, so that "in use" is reported, then let
         * the loops' sockets join it. */
        int probe = open_one(res, host, port, 0, backlog, err, errlen);
        if (probe < 0) {
            freeaddrinfo(res);
            return probe;
        }
        port = local_port(probe);
        set_port(res->ai_addr, port);
        close(probe);
    }
    for (size_t i = 0; i < n; i++) {
        int fd = open_one(res, host, port, n > 1, backlog, err, errlen);
        if (fd < 0) {
            net_close_all(fds, i);
            freeaddrinfo(res);
            return fd;
        }
        fds[i] = fd;
        if (i == 0) {
            /* The other sockets must join the port the first one got. */
            port = local_port(fd);
            set_port(res->ai_addr, port);
        }
    }
    freeaddrinfo(res);
    *bound_port = port;
    return 0;
}

void net_format_url(char *buf, size_t len, const char *scheme, const char *host, unsigned port)
{
    if (strchr(host, ':'))
        snprintf(buf, len, "%s://[%s]:%u", scheme, host, port);
    else
        snprintf(buf, len, "%s://%s:%u", scheme, host, port);
}

int net_accept_starved(int err, uint64_t now_us, uint64_t *last_us, char *msg, size_t len)
{
    if (len)
        msg[0] = '\0';
    if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
        return 0;
    if (*last_us == 0 || now_us - *last_us >= 10 * 1000000) {
        snprintf(msg, len,
                 "accept: %s; new connections wait in the backlog (raise ulimit -n, or "
                 "LimitNOFILE= under systemd)",
                 strerror(err));
        *last_us = now_us ? now_us : 1;
    }
    return 1;
}

long net_unsent(int fd)
{
    int n = 0;
    return ioctl(fd, SIOCOUTQ, &n) == 0 ? n : 0;
}

int net_peer_gone(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
        return 1;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return 1;
    return 0;
}

int net_adopt(int fd, size_t n, int *fds, unsigned *bound_port, char *err, size_t errlen)
{
    int listening = 0, type = 0;
    socklen_t len = sizeof listening;
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    for (size_t i = 0; i < n; i++)
        fds[i] = -1;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &(socklen_t){sizeof type}) != 0 ||
        type != SOCK_STREAM || getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
        snprintf(err, errlen, "socket activation: fd %d is not a listening TCP socket", fd);
        return -EINVAL;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        int e = errno;
        snprintf(err, errlen, "socket activation: fcntl: %s", strerror(e));
        return -e;
    }
    fds[0] = fd;
    for (size_t i = 1; i < n; i++) {
        fds[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fds[i] < 0) {
            int e = errno;
            snprintf(err, errlen, "socket activation: dup: %s", strerror(e));
            fds[0] = -1; /* not ours to close */
            net_close_all(fds + 1, i - 1);
            return -e;
        }
    }
    *bound_port = local_port(fd);
    return 0;
}

int net_open(const char *host, unsigned port, size_t n, int backlog, int inherited, int *fds,
             unsigned *bound_port, char *err, size_t errlen)
{
    if (inherited >= 0)
        return net_adopt(inherited, n, fds, bound_port, err, errlen);
    return net_listen(host, port, n, backlog, fds, bound_port, err, errlen);
}

void net_format_peer(const struct sockaddr *addr, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN];
    if (addr && addr->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)addr;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
    } else if (addr && addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)addr;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else {
        snprintf(buf, len, "-");
    }
}

void net_reset(int fd)
{
    struct linger lg = {1, 0};
    struct sockaddr none;
    memset(&none, 0, sizeof none);
    none.sa_family = AF_UNSPEC;
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    /* On Linux, connect() with AF_UNSPEC disconnects a TCP socket, with a reset if it was
     * connected. Should it fail, a close with SO_LINGER 0 still resets. */
    if (connect(fd, &none, sizeof none) != 0)
        shutdown(fd, SHUT_RDWR);
}

void net_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

unsigned net_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

int net_tcp_progress(int fd, uint64_t *received, uint64_t *acked)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    *received = *acked = 0;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return -1;
    *received = ti.tcpi_bytes_received;
    *acked = ti.tcpi_bytes_acked;
    return 0;
}
