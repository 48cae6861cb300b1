/*
 * config: the one configuration struct, loaded once from built-in defaults < the JSON config
 * file < SLOWSRV_* environment variables < command-line flags, validated whole, then passed
 * around as `const struct config *` and never written again.
 *
 * Every option is described once, in a table in config.c: its long name is the flag (--max-body),
 * the config-file key ("max-body") and, upper-cased with '_' for '-', the environment variable
 * (SLOWSRV_MAX_BODY). So all three sources accept exactly the same names and values.
 */
#ifndef SLOWSRV_CONFIG_H
#define SLOWSRV_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/core.h"
#include "plan/delay.h"
#include "plan/pace.h"
#include "plan/stream.h"
#include "plan/ws.h"
#include "base/log.h"

#define CONFIG_HOST_LEN 256
#define CONFIG_PATH_LEN 4096
#define CONFIG_TOKEN_LEN 512

/* Largest config file read, in bytes: room for CONFIG_ROUTES_MAX routes of a few keys each. */
#define CONFIG_FILE_MAX (16 * 1024 * 1024)

enum config_overflow {
    CONFIG_OVERFLOW_503 = 0, /* beyond --workers + --queue: answer 503 */
    CONFIG_OVERFLOW_RESET,   /* beyond them: reset the connection */
};

/* Most headers a configured route may add, and the longest body it may have. */
#define CONFIG_ROUTE_HEADERS 8
#define CONFIG_ROUTE_BODY_MAX (64 * 1024)
/* Most routes the config file (or the control API) gives, beside the built-in ones. */
#define CONFIG_ROUTES_MAX 65536

/* A fault injected instead of an answer, after the delay (?fault=, a route's "fault"). */
enum config_fault {
    CONFIG_FAULT_NONE = 0,
    CONFIG_FAULT_CLOSE,    /* close the connection without answering */
    CONFIG_FAULT_RESET,    /* reset the connection (TCP RST) without answering */
    CONFIG_FAULT_TRUNCATE, /* send the headers and half the body, then close */
};

/* Parses a fault name ("close", "reset", "truncate"; "none" for none). Returns 0 or -EINVAL. */
int config_fault_parse(const char *s, enum config_fault *out);

struct config_header {
    char *name;
    char *value;
};

/* One entry of the config file's "routes": replaces the built-in route of the same path, or
 * adds one. Strings are owned by the config (freed by config_cleanup). */
struct config_route {
    char *path;
    char *method; /* NULL: any method */
    unsigned status;
    char *body; /* NULL: "OK" */
    size_t body_len;
    int has_delay;
    struct delay_spec delay;
    struct delay_drip drip;    /* chunks 0: the body at once */
    enum config_fault fault;   /* instead of the answer */
    struct pace_spec pace;     /* rate, read-rate, reset-after, stall, slow-close (pace.h) */
    struct stream_spec stream; /* an event stream in place of the body (stream.h), or none */
    struct ws_spec ws;         /* a WebSocket route (ws.h), or none */
    unsigned workers;          /* this route's own worker pool; 0: the global --workers */
    unsigned queue;            /* its queue, with workers */
    int has_error_rate;        /* 1: error_rate below, not --error-rate */
    double error_rate;         /* share of its requests answered error_status instead */
    unsigned error_status;     /* 0: --error-status */
    size_t nheaders;
    struct config_header headers[CONFIG_ROUTE_HEADERS];
};

enum config_model {
    CONFIG_MODEL_EPOLL = 0,
    CONFIG_MODEL_POLL,
    CONFIG_MODEL_SELECT,
    CONFIG_MODEL_THREAD_PER_CONNECTION,
};

/* What the engine a program is built on offers, as far as its options go. The engine fills it
 * in (servers/<engine>/); the config names no engine. */
struct config_engine {
    const char *program;      /* "slowsrv-h2o": names the program in messages */
    const char *description;  /* "libh2o engine": on the --help line */
    unsigned models;          /* CONFIG_MODEL_BIT() of every model it runs */
    const char *models_name;  /* what those models are called: "event loops" */
    const char *others;       /* who runs the other models: "slowsrv (libmicrohttpd)" */
    const char *whole_bodies; /* non-NULL: its library reads a request body whole before
                                 slowsrv sees it, so read-rate is refused with this reason */
};

#define CONFIG_MODEL_BIT(m) (1u << (unsigned)(m))

/* What the command line asks the program to do once the configuration is loaded. */
enum config_action {
    CONFIG_ACTION_RUN = 0,
    CONFIG_ACTION_HELP,    /* --help: print config_usage() to stdout, exit 0 */
    CONFIG_ACTION_VERSION, /* --version: print the version line to stdout, exit 0 */
    CONFIG_ACTION_CHECK,   /* --check-config FILE: the file was loaded and is valid, exit 0 */
};

/* The scheme given with --control: none (the main port's: HTTPS with --tls-cert), or one asked
 * for. */
enum config_scheme {
    CONFIG_SCHEME_AS_MAIN = 0,
    CONFIG_SCHEME_HTTP,
    CONFIG_SCHEME_HTTPS,
};

struct config {
    char bind[CONFIG_HOST_LEN]; /* address to listen on */
    unsigned port;              /* 0 = ephemeral */
    struct delay_spec delay;    /* delay of GET /test */
    unsigned threads;           /* event loops; resolved to >= 1 by config_load */
    char threads_from[64];      /* what set a default --threads (cpus_describe), "" if given */
    enum config_model model;
    unsigned max_connections;
    unsigned backlog;           /* listen() backlog of each socket slowsrv opens (not systemd's) */
    uint64_t max_body;          /* bytes */
    uint64_t max_delay_us;      /* ceiling of every delay, configured or requested */
    const char *whole_bodies;   /* the engine's (config_engine): read-rate is refused */
    uint64_t seed;              /* seed of every random draw */
    int seed_set;               /* 1 if --seed was given; else `seed` is random per start */
    uint64_t grace_us;          /* drain time on SIGTERM */
    uint64_t idle_timeout_us;   /* close a connection silent this long; 0: never */
    uint64_t header_timeout_us; /* close a connection whose headers take this long; 0: never */
    uint64_t max_request_line;  /* longest request target; beyond it 414 */
    uint64_t max_header_size;   /* largest header block; beyond it 431 */
    unsigned max_requests;      /* HTTP/1.1 requests per connection; 0: unlimited */
    int no_overrides;           /* 1: ignore per-request delay=, status=, size= and headers */
    uint64_t max_size;          /* ceiling of size= */
    double error_rate;          /* share of requests answered error_status, 0..1 */
    unsigned error_status;
    unsigned workers; /* requests in service at once; 0: unbounded */
    unsigned queue;   /* requests waiting for a worker, FIFO */
    enum config_overflow overflow;
    size_t nroutes; /* routes from the config file */
    struct config_route *routes;
    enum log_level log_level;
    char tls_cert[CONFIG_PATH_LEN];   /* PEM certificate chain; "" for cleartext */
    char tls_key[CONFIG_PATH_LEN];    /* PEM private key; set exactly when tls_cert is */
    char spool_dir[CONFIG_PATH_LEN];  /* slowsrv-h2o: where libh2o spools large bodies */
    char access_log[CONFIG_PATH_LEN]; /* JSON line per request: a file, "-" (stdout) or "" */
    char check_file[CONFIG_PATH_LEN]; /* the file named by --check-config, for messages */
    char warnings[512]; /* lines the program prints once it runs (an unknown SLOWSRV_ variable
                           and the option it is nearest), "" if none */
    char config_file[CONFIG_PATH_LEN];     /* the config file read, "" if none */
    char control_host[CONFIG_HOST_LEN];    /* --control: the control API's address, "" when off */
    unsigned control_port;                 /* its port (0 picks a free one) */
    enum config_scheme control_scheme;     /* http:// or https:// before it, or neither */
    char control_token[CONFIG_PATH_LEN];   /* --control-token FILE, "" for none */
    char control_bearer[CONFIG_TOKEN_LEN]; /* that file's token (its first line), "" for none */
    char *scenario;      /* the config file's "scenario" as JSON text (malloc'd), or NULL */
    int scenario_manual; /* "scenario-start": "api": the scenario waits for POST /scenario/start */
    double scenario_at;  /* "scenario-start": "at:TIME": it starts then (Unix seconds); 0: not */
};

/* Parses an RFC 3339 instant ("2026-12-04T10:00:00Z", "2026-12-04T11:00:00.250+01:00") into
 * Unix seconds, above 0. Returns 0 or -EINVAL. */
int config_time_parse(const char *s, double *unix_s);

/* The options of `b` that differ from `a` and take effect only at a start (port, threads, model,
 * TLS files...): their names, comma-separated, in `out` ("" if none). The others (delay,
 * error-rate, error-status, scenario-start, and the file's routes and scenario) apply live. */
void config_restart_keys(const struct config *a, const struct config *b, char *out, size_t len);

/* Checks cfg's delay and routes against max_delay_us (a reload: the running --max-delay). The
 * delay's error is prefixed with delay_from ("" for a flag). Returns 0, or -EINVAL with err. */
int config_check_delays(const struct config *cfg, uint64_t max_delay_us, const char *delay_from,
                        char *err, size_t errlen);

/* Built-in defaults, before any source is applied. */
extern const struct config config_defaults;

/* 1 if the control listener serves TLS: https:// asked for, or none asked and --tls-cert given. */
int config_control_tls(const struct config *cfg);

/* Loads the configuration for `engine` from argv (argv[0] is the program name), the environment
 * `envp` (NULL-terminated "NAME=value" strings, e.g. environ) and the config file named by
 * --config, --check-config or SLOWSRV_CONFIG. Fills *cfg and *action and returns 0; or returns
 * -EINVAL and writes one line naming the source, key and reason into err (errlen bytes), e.g.
 * "cfg.json: delay: bad duration '1sec' (...)". `random_seed` is used when no seed is given.
 * Not thread-safe (getopt); call once, from main, before any thread starts. On success the
 * caller releases the struct with config_cleanup(). */
int config_load(struct config *cfg, const struct config_engine *engine, int argc, char **argv,
                char *const *envp, uint64_t random_seed, enum config_action *action, char *err,
                size_t errlen);

/* Statuses slowsrv answers with: a final status, 200 to 599. A 1xx is not a final answer (RFC
 * 9110 section 15.2): a client would wait for another. */
#define CONFIG_STATUS_MIN 200
#define CONFIG_STATUS_MAX 599

/* Reads the whole file at path (at most `max` bytes) into a malloc'd NUL-terminated buffer *out
 * that the caller frees, its length into *len. Returns 0, or -EINVAL with "<path>: <why>" in
 * err (errlen bytes). */
int config_read_file(const char *path, size_t max, char **out, size_t *len, char *err,
                     size_t errlen);

/* Frees what config_load allocated (the routes). The struct may be loaded again afterwards. */
void config_cleanup(struct config *cfg);

struct cJSON;

/* Applies the keys of the JSON object o (those of a config route: method, status, body,
 * headers, delay, drip, fault, rate, read-rate, reset-after, stall, slow-close, workers, queue,
 * error-rate, error-status; "path" only if
 * `with_path`) onto r, whose strings it may free and replace. Values are checked exactly as in
 * the config file; on failure returns -EINVAL with "<key>: <reason>" in why, and r may hold some
 * keys applied (apply onto a copy to keep the original). The control API's PATCH and the
 * scenario's phases use it. */
/* 0 if no object in the JSON tree o has a key twice (cJSON keeps both, and the last would
 * silently win); else -EINVAL with "<key>: given twice; keep one" in why. */
int config_json_unique_keys(const struct cJSON *o, char *why, size_t whylen);

int config_route_apply(struct config_route *r, const struct cJSON *o, int with_path, char *why,
                       size_t whylen);

/* Checks what depends on several keys of r (queue needs workers, a drip needs body bytes,
 * truncate needs a body, delay and drip within max_delay_us). Returns 0, or -EINVAL with
 * "<key>: <reason>" in why. */
int config_route_check(const struct config_route *r, uint64_t max_delay_us, char *why,
                       size_t whylen);

/* Deep-copies src into dst (which holds nothing). Returns 0 or -ENOMEM (dst then holds nothing). */
int config_route_copy(struct config_route *dst, const struct config_route *src);

/* Frees the strings of r and zeroes it. */
void config_route_free(struct config_route *r);

/* Finds two of the n routes that no precedence can order: templates (or wildcards) with the
 * same segments but for the names in braces, "/a/{x}" and "/a/{y}" (pathtrie.h). Returns 1 with
 * their indexes in *first < *second, 0 if there are none, or -ENOMEM. */
int config_routes_clash(const struct config_route *routes, size_t n, size_t *first, size_t *second);

/* Writes the --help text of `engine`'s program to `out`. */
void config_usage(FILE *out, const struct config_engine *engine);

/* Returns the name of a model ("epoll", "thread-per-connection"), a static string. */
const char *config_model_name(enum config_model model);

/* Largest --max-connections the select model can hold (FD_SETSIZE less the daemon's own fds). */
unsigned config_select_max_connections(void);

#endif
