/*
 * What the integration cases share: the run's context (which binary, which engine, where to put
 * files), the registry of cases each theme file exports, and the helpers that start, query and
 * stop a server. `itest BINARY CASE [OTHER_BINARY]` runs one case (itest.c); `itest --list`
 * prints the ctest entries, from which CMake registers them (discover.cmake).
 */
#ifndef SLOWSRV_ITEST_H
#define SLOWSRV_ITEST_H

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stddef.h>
#include <sys/types.h>

/* The pass and fail counts are one pair for the whole program; itest.c defines them. */
#define CHECK_SHARED_COUNTERS
#include "../unit/check.h"
#include "harness.h"

/* What an engine does that the other does not, each with the reason the cases differ. */
enum engine_feature {
    /* Hands each piece of an upload to the handler as it arrives, so a body is counted in
     * constant memory and a request exists before its body is complete (libmicrohttpd);
     * libh2o 2.2.5 buffers the whole body before any handler runs. */
    ENGINE_STREAMS_UPLOADS = 1u << 0,
    /* Speaks HTTP/2: h2c (prior knowledge and Upgrade) and h2 by ALPN (libh2o). */
    ENGINE_HTTP2 = 1u << 1,
    /* Keeps a body over 32 MiB in an unlinked temporary file in --spool-dir (libh2o's buffer). */
    ENGINE_SPOOLS_BODIES = 1u << 2,
    /* A body over --max-body gets the core's JSON 413; libh2o answers it itself, with its own
     * text body, before the handler runs. */
    ENGINE_JSON_413 = 1u << 3,
    /* After an upload error found mid-body the engine answers at once, reads on and drops up to
     * 64 MiB, then cuts the client: a client still sending always reads the answer. libh2o
     * answers and closes at once, and its close may reset a client still sending. */
    ENGINE_DRAINS_AFTER_ERROR = 1u << 4,
    /* Answers bytes that are not HTTP with a 400 and Connection: close (libh2o); libmicrohttpd
     * 0.9.75 closes such a connection before slowsrv sees a request. */
    ENGINE_ANSWERS_NOT_HTTP = 1u << 5,
    /* Adds "Content-Length: 0" to every 304 and cannot be told not to (libmicrohttpd 0.9.75). */
    ENGINE_LENGTH_ON_304 = 1u << 6,
    /* Spreads a loop's connections over daemons of 128, each with its own epoll set (slowsrv on
     * libmicrohttpd); libh2o's loop holds any number in one. */
    ENGINE_DAEMONS_OF_128 = 1u << 7,
    /* Answers HEAD of an event stream with "Content-Length: 0" instead of GET's chunked head:
     * libmicrohttpd 0.9.75 writes a chunked body's last chunk even after a HEAD's head. */
    ENGINE_LENGTH_ON_HEAD_OF_STREAM = 1u << 8,
};

/* One engine: how its binary names itself, its thread models and its features. */
struct engine_caps {
    const char *name;          /* "mhd", "h2o": in `--version` and the ctest names */
    const char *program;       /* the binary's name, the first word of its `--version` */
    const char *const *models; /* the --model values it runs, NULL-terminated */
    unsigned features;         /* enum engine_feature bits */
};

/* The engine whose name follows "(engine " in the `--version` output `version`, or NULL. The
 * records are static and live as long as the program. */
const struct engine_caps *engine_caps_from_version(const char *version);

/* 1 if the engine runs thread model `model`, else 0. */
int engine_has_model(const struct engine_caps *caps, const char *model);

/* Everything a case may know about its run, filled by main before the case and read-only to it. */
struct itest_env {
    const char *bin;                /* the binary under test */
    const char *other_bin;          /* the second binary (ITEST_BOTH cases), or NULL */
    const struct engine_caps *caps; /* the engine of bin */
    const char *model;              /* the thread model (ITEST_PER_MODEL cases), else NULL */
    char tmpdir[256];               /* a private directory, removed after the case */
};

/* 1 if the engine under test has every feature in `features` (enum engine_feature bits). */
int itest_has(const struct itest_env *env, unsigned features);

enum itest_kind {
    ITEST_PLAIN,     /* once per engine: "<engine>.<case>", argument "<case>" */
    ITEST_PER_MODEL, /* once per model of each engine: "<engine>.<case>.<model>", "<case>:<model>"
                      */
    ITEST_BOTH,      /* once, the first binary beside the second: "both.<case>", "<case>" */
};

struct itest_case {
    const char *name;
    void (*run)(const struct itest_env *env);
    enum itest_kind kind;
    unsigned needs; /* enum engine_feature bits an engine must have to run it; 0: every engine */
};

/* The cases of one theme file, in its own table. */
struct itest_suite {
    const char *name;
    const struct itest_case *cases;
    size_t n;
};

extern const struct itest_suite itest_suite_routes;    /* routes.c */
extern const struct itest_suite itest_suite_delays;    /* delays.c */
extern const struct itest_suite itest_suite_stats;     /* stats.c */
extern const struct itest_suite itest_suite_upload;    /* upload.c */
extern const struct itest_suite itest_suite_h2_tls;    /* h2_tls.c */
extern const struct itest_suite itest_suite_hostile;   /* hostile.c */
extern const struct itest_suite itest_suite_limits;    /* limits.c */
extern const struct itest_suite itest_suite_lifecycle; /* lifecycle.c */
extern const struct itest_suite itest_suite_soak;      /* soak.c */
extern const struct itest_suite itest_suite_control;   /* control.c */
extern const struct itest_suite itest_suite_templates; /* templates.c */
extern const struct itest_suite itest_suite_pacing;    /* pacing.c */
extern const struct itest_suite itest_suite_streams;   /* streams.c */
extern const struct itest_suite itest_suite_websocket; /* websocket.c */

/* Starts env->bin with the given arguments into the struct server *s, or fails the case and
 * returns from it (a case function only). */
#define START(env, s, ...)                                                                         \
    do {                                                                                           \
        static const char *const start_args_[] = {__VA_ARGS__, NULL};                              \
        if (server_start((s), (env)->bin, start_args_, NULL) != 0) {                               \
            CHECK_FAIL_("%s", "server did not start");                                             \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Timing windows. A delayed answer never comes before its delay: the client's clock starts
 * before the server's (connect and send come first), so the lower bound is the delay itself,
 * exactly. The upper bounds are what a real bug crosses and scheduling on this 2-core machine
 * does not: a lone request is answered within LONE_SLACK of its delay (measured idle: under
 * 3 ms; with ctest -j2 and both cores loaded by other processes: under 40 ms), so a wake-up
 * missed by one 100 ms loop tick, or a delay run twice, fails. A batch of concurrent requests
 * opened at once by one client thread adds the client's own connect time. */
#define LONE_SLACK 0.09
#define BATCH_SLACK 0.35

/* Stops s with SIGTERM (15 s to exit) and checks that it exits 0. */
void stop_expect_clean(struct server *s);

/* Stops s as server_stop does, but with signal `sig` (SIGINT, ...): the server must exit of
 * that signal alone within wait_ms, else it is killed and the result is not 0. Returns the exit
 * status as server_stop does, and copies the server's stderr after startup into log. */
int server_stop_with(struct server *s, int sig, int wait_ms, char *log, size_t loglen);

/* A script in env->tmpdir that runs env->bin in the directory `cwd` with its stdout appended to
 * the file `out`, keeping the process (exec): give it to server_start in place of the binary to
 * see what the server writes on stdout (the harness closes that pipe). The path stays valid
 * until the next call (a static buffer: one thread only). */
const char *stdout_to_file(const struct itest_env *env, const char *cwd, const char *out);

/* The contents of the file at path in buf (NUL-terminated, at most len - 1 bytes); returns the
 * bytes read, or -1 if the file cannot be read. */
long read_text(const char *path, char *buf, size_t len);

/* Writes `text` to the file `name` in env->tmpdir and returns its path, which stays valid until
 * the next call (a static buffer: one thread only). */
const char *write_file(const struct itest_env *env, const char *name, const char *text);

/* The number at the dotted `path` ("routes./test.status.200") in o, or -1 if there is none. */
double json_number(const cJSON *o, const char *path);

/* The cleartext HTTP/1.1 target of s, valid until the next call (a static: one thread only). */
const struct target *h1(const struct server *s);

/* GET /stats once nothing is in flight any more (at most 3 s): a request's counters move when
 * its engine is done with it, which can be just after its client has the answer. The caller
 * frees the result with cJSON_Delete (NULL if the answer was not JSON). */
cJSON *settled_stats(const struct target *t);

/* Polls /stats until the number at `path` is `want` (at most `timeout` seconds): the way a test
 * waits for the server to reach a state, never a sleep. Returns the last value seen. */
double await_stat(const struct target *t, const char *path, double want, double timeout);

/* Checks that GET path, alone on a new connection, answers 200 `want` within [lo, hi] seconds. */
void answers_within(unsigned port, const char *path, const char *want, double lo, double hi);

/* Checks that every one of n concurrent requests answered 200 with its body (status[i], ok[i])
 * and took lo..hi seconds (secs[i]); prints the fastest and slowest if not. */
void all_answered_within(size_t n, const long *status, const double *secs, const int *ok, double lo,
                         double hi);

/* A run that must be refused: arguments and environment (NULL-terminated) and a substring of
 * the one line it prints on stderr. */
struct bad_case {
    const char *args[8];
    const char *env[3];
    const char *want;
};

/* Runs env->bin with c and checks the exit status and that stderr is one line containing
 * c->want. */
void expect_refused(const struct itest_env *env, const struct bad_case *c, int want_status);

/* The value in kB of `field` ("VmRSS", "VmHWM") in /proc/<pid>/status, or -1. */
long proc_status_kb(pid_t pid, const char *field);

/* CPU seconds (user + system) process pid has used so far, or -1. */
double proc_cpu_seconds(pid_t pid);

/* The control API's port, from server s's startup line (" control=http://127.0.0.1:PORT"),
 * or 0. */
unsigned control_port_of(const struct server *s);

/* The listen backlog of each IPv4 TCP socket listening on `port`, as `ss -ltn` shows it in its
 * Send-Q column (the kernel's limit of connections completed and not yet accepted, read through
 * sock_diag): fills up to max of them into out and returns how many sockets there are, or -1. */
int listen_backlogs(unsigned port, unsigned *out, size_t max);

/* A TCP connection to 127.0.0.1:port (close-on-exec), or -1. */
int raw_connect(unsigned port);

/* Sends all len bytes of buf (no SIGPIPE). Returns 0, or -1 if the connection failed first. */
int send_all(int fd, const char *buf, size_t len);

/* The descriptors of a process whose link starts with `kind` ("socket:" for its connections
 * and listeners, "anon_inode:[eventpoll]" for its epoll sets), or -1. */
int count_fds_of(pid_t pid, const char *kind);

/* The sockets a process holds: its connections and listeners. Only sockets, since slowsrv's
 * epoll loops open a libmicrohttpd daemon (an epoll descriptor) for each further 128
 * connections as they arrive and keep it. */
int count_sockets(pid_t pid);

/* Reads from fd until the peer closes or nothing comes for timeout_ms; returns the bytes read
 * (NUL-terminated in buf, at most len - 1) and sets *closed if the peer closed. */
size_t read_until_close(int fd, char *buf, size_t len, int timeout_ms, int *closed);

/* Reads from fd until buf holds `want`, the peer closes or timeout_ms pass; returns the bytes
 * read (NUL-terminated in buf, at most len - 1). */
size_t read_until_text(int fd, char *buf, size_t len, const char *want, int timeout_ms);

/* Listens on ip:0 (a numeric IPv4 address); returns the socket and its port in *port, or -1.
 * A test that shows a server is NOT on an address holds that address's port itself, then
 * starts the server on the same port elsewhere: a connection there reaches the holder, never
 * a server another test started meanwhile. */
int hold_port(const char *ip, unsigned *port);

/* 1 if a connection arrived on holder within 1 s (it is accepted and closed), else 0. */
int holder_reached(int holder);

#endif
