/*
 * Integration-test harness: starts the real server binary on 127.0.0.1 port 0, reads the port
 * from its startup line, talks to it with libcurl, and stops it with SIGTERM.
 */
#ifndef SLOWSRV_HARNESS_H
#define SLOWSRV_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

struct server {
    pid_t pid;
    unsigned port;
    int err_fd;        /* read end of the server's stderr */
    char startup[512]; /* the startup line */
};

/* Starts `bin` with the NULL-terminated extra arguments `args` (after "--port 0") and extra
 * environment "NAME=value" strings `env` (may be NULL), and waits up to 10 s for the startup
 * line. Returns 0, or -1 after printing why (the child exited first, or no line came). */
int server_start(struct server *s, const char *bin, const char *const *args,
                 const char *const *env);

/* Sends SIGTERM and waits up to `wait_ms` for the exit; after that SIGKILLs it. Returns the exit
 * status (0..255), 128+signal if it died of a signal, or -1 if it had to be killed. Copies what
 * the server wrote on stderr after startup into log (loglen bytes) if log is not NULL. */
int server_stop(struct server *s, int wait_ms, char *log, size_t loglen);

/* Runs `bin` with `args` (NULL-terminated; `env` as above) to completion, at most 10 s.
 * Returns its exit status (or -1) and copies its stdout and stderr into out/err. */
int run_to_exit(const char *bin, const char *const *args, const char *const *env, char *out,
                size_t outlen, char *err, size_t errlen);

struct reply {
    long status;      /* 0 if the transfer failed */
    int curl_code;    /* CURLcode */
    char body[65536]; /* NUL-terminated; truncated to fit */
    size_t body_len;  /* full length received */
    char headers[4096];
    double seconds; /* total time */
};

/* Where and how a client talks: cleartext or TLS, and which HTTP version libcurl asks for
 * (CURL_HTTP_VERSION_1_1, CURL_HTTP_VERSION_2_0 for Upgrade: h2c or ALPN,
 * CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE). */
struct target {
    unsigned port;
    int tls;
    long http_version;
};

/* One request as http_request, to target t; *version_out gets the HTTP version used
 * (CURL_HTTP_VERSION_1_1 or CURL_HTTP_VERSION_2_0) if not NULL. */
int http_request_to(const struct target *t, const char *method, const char *path, const char *body,
                    const char *const *headers, struct reply *r, long *version_out);

/* n concurrent GETs of path to target t over at most max_conns connections (HTTP/2 streams are
 * multiplexed on them). Otherwise as http_concurrent. */
double http_concurrent_to(const struct target *t, const char *path, size_t n, size_t max_conns,
                          long *status, double *seconds, int *body_ok, const char *want_body);

/* One request: method ("GET", "POST", ...) to http://127.0.0.1:port<path>, with an optional
 * body (NULL for none) and optional extra header lines (NULL-terminated, may be NULL). */
int http_request(unsigned port, const char *method, const char *path, const char *body,
                 const char *const *headers, struct reply *r);

/* Returns the value of response header `name` in r (case-insensitive) copied into buf, or NULL. */
const char *reply_header(const struct reply *r, const char *name, char *buf, size_t len);

/* n concurrent GETs of path on n connections (curl multi). Fills status[i], seconds[i] and
 * body_ok[i] (1 if the body equals `want_body`). Returns the wall time in seconds. */
double http_concurrent(unsigned port, const char *path, size_t n, long *status, double *seconds,
                       int *body_ok, const char *want_body);

/* Opens n TCP connections, sends "GET path" on each, waits hold_ms, then closes them all
 * without reading. Returns the number of requests sent. */
size_t abandon_requests(unsigned port, const char *path, size_t n, int hold_ms);

/* Monotonic seconds. */
double now_seconds(void);

#endif
