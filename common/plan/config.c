#include "plan/config.h"
#include "base/strmap.h"
#include "base/cpus.h"
#include "http/target.h"
#include "plan/pathtrie.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const struct config config_defaults = {
    .bind = "127.0.0.1",
    .port = 8080,
    .delay = {.kind = DELAY_FIXED, .a_us = 1000000},
    .threads = 0,
    .model = CONFIG_MODEL_EPOLL,
    .max_connections = 10000,
    .backlog = 4096,
    .max_body = 1ULL << 30,
    .max_delay_us = 60ULL * 1000000,
    .seed = 0,
    .seed_set = 0,
    .grace_us = 5ULL * 1000000,
    .idle_timeout_us = 60ULL * 1000000,
    .header_timeout_us = 30ULL * 1000000,
    .max_request_line = 8192,
    .max_header_size = 8192,
    .max_requests = 0,
    .no_overrides = 0,
    .max_size = 16ULL << 20,
    .error_rate = 0,
    .error_status = 503,
    .workers = 0,
    .queue = 0,
    .overflow = CONFIG_OVERFLOW_503,
    .nroutes = 0,
    .routes = NULL,
    .log_level = LOG_LEVEL_INFO,
    .tls_cert = "",
    .tls_key = "",
    .spool_dir = "/tmp",
    .access_log = "",
    .check_file = "",
    .config_file = "",
    .control_host = "",
    .control_token = "",
    .control_bearer = "",
    .scenario = NULL,
};

enum opt_type {
    OPT_HOST,
    OPT_PORT,
    OPT_DELAY,
    OPT_COUNT,    /* unsigned, bounded */
    OPT_BYTES,    /* uint64 with an optional K/M/G suffix */
    OPT_DURATION, /* uint64 microseconds */
    OPT_SEED,
    OPT_MODEL,
    OPT_LOG_LEVEL,
    OPT_PATH,           /* char[CONFIG_PATH_LEN] */
    OPT_FLAG,           /* int 0/1; a flag without a value on the command line */
    OPT_RATE,           /* double from 0 to 1 */
    OPT_STATUS,         /* unsigned final HTTP status, CONFIG_STATUS_MIN..MAX */
    OPT_OVERFLOW,       /* 503 or reset */
    OPT_CONTROL,        /* [ADDR:]PORT of the control API */
    OPT_SCENARIO_START, /* start, api or at:TIME */
};

/* Actions that exist only on the command line. */
enum {
    FLAG_HELP = 'h',
    FLAG_VERSION = 'V',
    FLAG_CONFIG = 'c',
    FLAG_CHECK = 1000,
};

struct opt_def {
    const char *name;
    int short_name; /* 0 if none */
    enum opt_type type;
    size_t offset;
    uint64_t min, max; /* for OPT_COUNT, OPT_BYTES and OPT_DURATION */
    const char *arg;
    const char *help;
};

#define OFF(field) offsetof(struct config, field)

static const struct opt_def opt_defs[] = {
    {"port", 'p', OPT_PORT, OFF(port), 0, 65535, "N", "TCP port; 0 picks a free one (8080)"},
    {"bind", 'b', OPT_HOST, OFF(bind), 0, 0, "ADDR", "address to listen on (127.0.0.1)"},
    {"delay", 'd', OPT_DELAY, OFF(delay), 0, 0, "SPEC",
     "delay of GET /test: 1000, 1s, 250ms, 800us, 800ms..1200ms, normal:1s,50ms, "
     "lognormal:1s,0.25, 10ms:90,1s:9, p50=20ms,p99=400ms,max=2s (1000)"},
    {"threads", 't', OPT_COUNT, OFF(threads), 1, 1024, "N",
     "event-loop threads (usable CPUs: online, affinity mask, cgroup quota); ignored by "
     "thread-per-connection"},
    {"model", 'm', OPT_MODEL, OFF(model), 0, 0, "MODEL",
     "epoll, poll, select or thread-per-connection (epoll); slowsrv-h2o: epoll only"},
    {"max-connections", 0, OPT_COUNT, OFF(max_connections), 1, 10000000, "N",
     "open connections at most; more wait in the backlog (10000; select: at most 1000)"},
    {"backlog", 0, OPT_COUNT, OFF(backlog), 1, 65535, "N",
     "listen backlog of each loop's socket: connections the kernel holds unaccepted beyond "
     "--max-connections, refusing more; at most net.core.somaxconn; a socket from systemd "
     "keeps its Backlog= (4096)"},
    {"max-body", 0, OPT_BYTES, OFF(max_body), 1, 1ULL << 40, "BYTES",
     "largest request body, with K, M or G suffix (1G)"},
    {"max-delay", 0, OPT_DURATION, OFF(max_delay_us), 0, DELAY_DURATION_MAX_US, "TIME",
     "ceiling of every delay, configured or requested (60s)"},
    {"seed", 0, OPT_SEED, OFF(seed), 0, 0, "N",
     "seed of random delays: same seed, same draws (random)"},
    {"grace", 0, OPT_DURATION, OFF(grace_us), 0, 3600ULL * 1000000, "TIME",
     "on SIGTERM, how long in-flight requests may finish (5s)"},
    {"idle-timeout", 0, OPT_DURATION, OFF(idle_timeout_us), 0, 3600ULL * 1000000, "TIME",
     "close a connection that sends nothing for this long, 0 never; not while a request "
     "waits on its delay (60s)"},
    {"header-timeout", 0, OPT_DURATION, OFF(header_timeout_us), 0, 3600ULL * 1000000, "TIME",
     "close a connection whose request line and headers take longer than this, from its "
     "opening or its request line (slowloris); 0 never (30s)"},
    {"max-request-line", 0, OPT_BYTES, OFF(max_request_line), 256, 1 << 20, "BYTES",
     "longest request target; beyond it 414 (8K)"},
    {"max-header-size", 0, OPT_BYTES, OFF(max_header_size), 1024, 1 << 20, "BYTES",
     "largest request header block; beyond it 431 (8K)"},
    {"max-requests", 0, OPT_COUNT, OFF(max_requests), 0, 1000000000, "N",
     "HTTP/1.1 requests one connection may make, kept alive or pipelined; the Nth answer "
     "closes it; 0 unlimited (0)"},
    {"no-overrides", 0, OPT_FLAG, OFF(no_overrides), 0, 0, "",
     "ignore per-request ?delay= ?status= ?size= ?drip= ?fault= and X-Slowsrv-* headers (off)"},
    {"max-size", 0, OPT_BYTES, OFF(max_size), 0, 1ULL << 30, "BYTES",
     "largest ?size= body; beyond it 400 (16M)"},
    {"error-rate", 0, OPT_RATE, OFF(error_rate), 0, 0, "RATE",
     "share of requests, 0 to 1, answered --error-status instead (0)"},
    {"error-status", 0, OPT_STATUS, OFF(error_status), 0, 0, "CODE",
     "status of those errors (503)"},
    {"workers", 0, OPT_COUNT, OFF(workers), 0, 10000000, "N",
     "at most N requests in service at once, delay included; 0 unbounded (0)"},
    {"queue", 0, OPT_COUNT, OFF(queue), 0, 10000000, "M",
     "with --workers: up to M more wait their turn in order (0)"},
    {"overflow", 0, OPT_OVERFLOW, OFF(overflow), 0, 0, "503|reset",
     "beyond --workers and --queue: answer 503, or reset the connection (503)"},
    {"log-level", 0, OPT_LOG_LEVEL, OFF(log_level), 0, 0, "LEVEL",
     "error, warn, info or debug (info)"},
    {"tls-cert", 0, OPT_PATH, OFF(tls_cert), 0, 0, "FILE",
     "serve HTTPS with this PEM certificate chain (with --tls-key)"},
    {"tls-key", 0, OPT_PATH, OFF(tls_key), 0, 0, "FILE", "PEM private key of --tls-cert"},
    {"access-log", 0, OPT_PATH, OFF(access_log), 0, 0, "FILE",
     "one JSON line per request to FILE, or - for stdout; reopened on SIGHUP (off)"},
    {"spool-dir", 0, OPT_PATH, OFF(spool_dir), 0, 0, "DIR",
     "slowsrv-h2o: where libh2o spools request bodies from about 16 MiB (/tmp)"},
    {"control", 0, OPT_CONTROL, OFF(control_host), 0, 0, "[SCHEME://][ADDR:]PORT",
     "serve the control API (live routes, scenario, reset) on its own listener; ADDR "
     "127.0.0.1 unless given; HTTPS with --tls-cert unless http:// is given (off)"},
    {"control-token", 0, OPT_PATH, OFF(control_token), 0, 0, "FILE",
     "control API requests must carry Authorization: Bearer <the first line of FILE> (none)"},
    {"scenario-start", 0, OPT_SCENARIO_START, OFF(scenario_manual), 0, 0, "start|api|at:TIME",
     "the config's scenario starts with the server, on POST /scenario/start, or at a wall-clock "
     "instant given in RFC 3339 (at:2026-12-04T10:00:00Z), the same on every replica (start)"},
};

#define NOPTS (sizeof opt_defs / sizeof opt_defs[0])

/* Options a running server takes from a reloaded file; every other one needs a restart. */
static int live_option(const struct opt_def *d)
{
    return d->type == OPT_DELAY || d->type == OPT_RATE || d->type == OPT_STATUS ||
           d->type == OPT_SCENARIO_START;
}

void config_restart_keys(const struct config *a, const struct config *b, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_def *d = &opt_defs[i];
        const char *x = (const char *)a + d->offset, *y = (const char *)b + d->offset;
        int same;
        if (live_option(d))
            continue;
        switch (d->type) {
        case OPT_HOST:
        case OPT_PATH:
            same = strcmp(x, y) == 0;
            break;
        case OPT_CONTROL:
            same = strcmp(a->control_host, b->control_host) == 0 &&
                   a->control_port == b->control_port && a->control_scheme == b->control_scheme;
            break;
        case OPT_BYTES:
        case OPT_DURATION:
        case OPT_SEED:
            same = *(const uint64_t *)(const void *)x == *(const uint64_t *)(const void *)y;
            break;
        case OPT_FLAG:
            same = *(const int *)(const void *)x == *(const int *)(const void *)y;
            break;
        case OPT_MODEL:
            same = a->model == b->model;
            break;
        case OPT_LOG_LEVEL:
            same = a->log_level == b->log_level;
            break;
        case OPT_OVERFLOW:
            same = a->overflow == b->overflow;
            break;
        default: /* OPT_PORT, OPT_COUNT: unsigned */
            same = *(const unsigned *)(const void *)x == *(const unsigned *)(const void *)y;
            break;
        }
        if (!same && used < len)
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", d->name);
    }
}

static const char *const model_names[] = {"epoll", "poll", "select", "thread-per-connection"};

const char *config_model_name(enum config_model model)
{
    if ((unsigned)model < sizeof model_names / sizeof model_names[0])
        return model_names[model];
    return "?";
}

unsigned config_select_max_connections(void)
{
    /* select() cannot watch an fd >= FD_SETSIZE; keep room for stdio, the listener and the
     * daemon's own descriptors, and round to a number people can remember. */
    return FD_SETSIZE >= 1024 ? 1000 : FD_SETSIZE - 24;
}

static int parse_u64(const char *s, uint64_t *out, const char **rest)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    *out = v;
    *rest = end;
    return 0;
}

static int parse_bytes(const char *s, uint64_t *out)
{
    const char *rest;
    uint64_t v, mult = 1;
    if (parse_u64(s, &v, &rest) != 0)
        return -EINVAL;
    if (*rest == '\0' || strcmp(rest, "B") == 0)
        mult = 1;
    else if (strcmp(rest, "K") == 0 || strcmp(rest, "KiB") == 0)
        mult = 1ULL << 10;
    else if (strcmp(rest, "M") == 0 || strcmp(rest, "MiB") == 0)
        mult = 1ULL << 20;
    else if (strcmp(rest, "G") == 0 || strcmp(rest, "GiB") == 0)
        mult = 1ULL << 30;
    else
        return -EINVAL;
    if (v > UINT64_MAX / mult)
        return -ERANGE;
    *out = v * mult;
    return 0;
}

/* Applies one textual value to cfg. On failure writes the reason into why. */
/* Writes a byte count the way sizes are given: "1024G", "8K", "256" (bytes). */
static void format_bytes(uint64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (v >= 1024 && v % 1024 == 0 && u < 3) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%llu bytes", (unsigned long long)v);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
}

/* n decimal digits at *s, into *out; advances *s. */
static int digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*s)++) {
        if (**s < '0' || **s > '9')
            return -1;
        v = v * 10 + (**s - '0');
    }
    *out = v;
    return 0;
}

int config_time_parse(const char *s, double *unix_s)
{
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
    double frac = 0;
    if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) || *s++ != '-' ||
        digits(&s, 2, &d) || (*s != 'T' && *s != 't' && *s != ' '))
        return -EINVAL;
    s++;
    if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi) || *s++ != ':' ||
        digits(&s, 2, &sec))
        return -EINVAL;
    if (*s == '.') {
        double scale = 0.1;
        if (*++s < '0' || *s > '9')
            return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++, scale /= 10)
            frac += (*s - '0') * scale;
    }
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        sign = *s++ == '-' ? -1 : 1;
        if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om) || oh > 23 || om > 59)
            return -EINVAL;
    } else {
        return -EINVAL;
    }
    if (*s || y < 1970 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60)
        return -EINVAL;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
        return -EINVAL;
    /* A leap second (:60) is the next second's start, as POSIX time has it. */
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    double v = (double)t + frac - sign * (oh * 3600.0 + om * 60.0);
    /* After 1970 only: no scenario is meant to start then, and 0 means "no instant". */
    if (t == (time_t)-1 || v <= 0)
        return -EINVAL;
    *unix_s = v;
    return 0;
}

static int set_value(struct config *cfg, const struct opt_def *d, const char *val, char *why,
                     size_t whylen)
{
    char *field = (char *)cfg + d->offset;
    uint64_t v;
    const char *rest;
    char derr[CORE_ERR_LEN];

    switch (d->type) {
    case OPT_HOST:
        if (*val == '\0' || strlen(val) >= CONFIG_HOST_LEN || strpbrk(val, " \t/")) {
            snprintf(why, whylen, "'%s' is not an address (e.g. 127.0.0.1, 0.0.0.0, ::1)", val);
            return -EINVAL;
        }
        memcpy(field, val, strlen(val) + 1);
        return 0;
    case OPT_PORT:
        if (parse_u64(val, &v, &rest) != 0 || *rest || v > 65535) {
            snprintf(why, whylen, "'%s' is not a port from 0 to 65535", val);
            return -EINVAL;
        }
        *(unsigned *)(void *)field = (unsigned)v;
        return 0;
    case OPT_COUNT:
        if (parse_u64(val, &v, &rest) != 0 || *rest || v < d->min || v > d->max) {
            snprintf(why, whylen, "'%s' is not a whole number from %llu to %llu", val,
                     (unsigned long long)d->min, (unsigned long long)d->max);
            return -EINVAL;
        }
        *(unsigned *)(void *)field = (unsigned)v;
        return 0;
    case OPT_BYTES:
        if (parse_bytes(val, &v) != 0 || v < d->min || v > d->max) {
            char lo[24], hi[24];
            format_bytes(d->min, lo, sizeof lo);
            format_bytes(d->max, hi, sizeof hi);
            snprintf(why, whylen, "'%s' is not a size from %s to %s (e.g. 512M)", val, lo, hi);
            return -EINVAL;
        }
        *(uint64_t *)(void *)field = v;
        return 0;
    case OPT_DURATION: {
        int rc = delay_duration_parse(val, &v);
        if (rc != 0 || v < d->min || v > d->max) {
            snprintf(why, whylen, "'%s' is not a duration up to %llus (e.g. 500ms, 5s)", val,
                     (unsigned long long)(d->max / 1000000));
            return -EINVAL;
        }
        *(uint64_t *)(void *)field = v;
        return 0;
    }
    case OPT_DELAY: {
        struct delay_spec spec;
        if (delay_spec_parse(&spec, val, derr, sizeof derr) != 0) {
            snprintf(why, whylen, "%s", derr);
            return -EINVAL;
        }
        memcpy(field, &spec, sizeof spec);
        return 0;
    }
    case OPT_SEED:
        if (parse_u64(val, &v, &rest) != 0 || *rest) {
            snprintf(why, whylen, "'%s' is not a whole number from 0 to 2^64-1", val);
            return -EINVAL;
        }
        cfg->seed = v;
        cfg->seed_set = 1;
        return 0;
    case OPT_MODEL:
        for (size_t i = 0; i < sizeof model_names / sizeof model_names[0]; i++) {
            if (strcmp(val, model_names[i]) == 0) {
                cfg->model = (enum config_model)i;
                return 0;
            }
        }
        snprintf(why, whylen, "unknown model '%s' (epoll, poll, select, thread-per-connection)",
                 val);
        return -EINVAL;
    case OPT_PATH:
        if (strlen(val) >= CONFIG_PATH_LEN) {
            snprintf(why, whylen, "path is longer than %d bytes", CONFIG_PATH_LEN - 1);
            return -EINVAL;
        }
        memcpy(field, val, strlen(val) + 1);
        return 0;
    case OPT_FLAG:
        if (strcmp(val, "1") == 0 || strcmp(val, "true") == 0 || strcmp(val, "yes") == 0) {
            *(int *)(void *)field = 1;
            return 0;
        }
        if (strcmp(val, "0") == 0 || strcmp(val, "false") == 0 || strcmp(val, "no") == 0) {
            *(int *)(void *)field = 0;
            return 0;
        }
        snprintf(why, whylen, "'%s' is not true or false (1/0, yes/no)", val);
        return -EINVAL;
    case OPT_RATE: {
        char *end;
        errno = 0;
        double rate = strtod(val, &end);
        if (end == val || *end != '\0' || errno != 0 || !(rate >= 0.0 && rate <= 1.0)) {
            snprintf(why, whylen, "'%s' is not a rate from 0 to 1 (e.g. 0.01)", val);
            return -EINVAL;
        }
        *(double *)(void *)field = rate;
        return 0;
    }
    case OPT_STATUS:
        if (parse_u64(val, &v, &rest) != 0 || *rest || v < CONFIG_STATUS_MIN ||
            v > CONFIG_STATUS_MAX) {
            snprintf(why, whylen, "'%s' is not an HTTP status from %d to %d", val,
                     CONFIG_STATUS_MIN, CONFIG_STATUS_MAX);
            return -EINVAL;
        }
        *(unsigned *)(void *)field = (unsigned)v;
        return 0;
    case OPT_OVERFLOW:
        if (strcmp(val, "503") == 0)
            cfg->overflow = CONFIG_OVERFLOW_503;
        else if (strcmp(val, "reset") == 0)
            cfg->overflow = CONFIG_OVERFLOW_RESET;
        else {
            snprintf(why, whylen, "'%s' is not 503 or reset", val);
            return -EINVAL;
        }
        return 0;
    case OPT_CONTROL: {
        /* [http:// or https://] then PORT, ADDR:PORT or [V6ADDR]:PORT, and an optional '/': the
         * form the startup line shows. */
        const char *given = val;
        char bare[CONFIG_HOST_LEN + 16];
        enum config_scheme scheme = CONFIG_SCHEME_AS_MAIN;
        if (strncasecmp(val, "http://", 7) == 0) {
            scheme = CONFIG_SCHEME_HTTP;
            val += 7;
        } else if (strncasecmp(val, "https://", 8) == 0) {
            scheme = CONFIG_SCHEME_HTTPS;
            val += 8;
        }
        size_t blen = strlen(val);
        if (scheme != CONFIG_SCHEME_AS_MAIN && blen && val[blen - 1] == '/')
            blen--;
        if (blen >= sizeof bare) {
            snprintf(why, whylen, "'%s' is not [http[s]://][ADDR:]PORT (e.g. 9090, 127.0.0.1:9090)",
                     given);
            return -EINVAL;
        }
        memcpy(bare, val, blen);
        bare[blen] = '\0';
        val = bare;
        const char *colon = strrchr(val, ':');
        const char *port = colon ? colon + 1 : val;
        size_t hlen = colon ? (size_t)(colon - val) : 0;
        const char *host = val;
        if (hlen >= 2 && val[0] == '[' && val[hlen - 1] == ']') {
            host++;
            hlen -= 2;
        }
        if (parse_u64(port, &v, &rest) != 0 || *rest || v > 65535 || (colon && hlen == 0) ||
            hlen >= CONFIG_HOST_LEN || (hlen && memchr(host, '/', hlen))) {
            snprintf(why, whylen,
                     "'%s' is not [http[s]://][ADDR:]PORT (e.g. 9090, 127.0.0.1:9090, "
                     "http://0.0.0.0:9090)",
                     given);
            return -EINVAL;
        }
        if (hlen) {
            memcpy(cfg->control_host, host, hlen);
            cfg->control_host[hlen] = '\0';
        } else {
            snprintf(cfg->control_host, sizeof cfg->control_host, "127.0.0.1");
        }
        cfg->control_port = (unsigned)v;
        cfg->control_scheme = scheme;
        return 0;
    }
    case OPT_SCENARIO_START: {
        double at = 0;
        if (strncmp(val, "at:", 3) == 0 && config_time_parse(val + 3, &at) != 0) {
            snprintf(why, whylen,
                     "'%s' is not an RFC 3339 instant (e.g. at:2026-12-04T10:00:00Z, or with "
                     "an offset: at:2026-12-04T11:00:00+01:00)",
                     val + 3);
            return -EINVAL;
        }
        if (!at && strcmp(val, "start") != 0 && strcmp(val, "api") != 0) {
            snprintf(why, whylen, "'%s' is not start, api or at:TIME", val);
            return -EINVAL;
        }
        cfg->scenario_manual = strcmp(val, "api") == 0;
        cfg->scenario_at = at;
        return 0;
    }
    case OPT_LOG_LEVEL:
        if (log_level_parse(val, &cfg->log_level) != 0) {
            snprintf(why, whylen, "unknown level '%s' (error, warn, info, debug)", val);
            return -EINVAL;
        }
        return 0;
    }
    snprintf(why, whylen, "internal error: unknown option type");
    return -EINVAL;
}

static const struct opt_def *find_def(const char *name)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strcmp(opt_defs[i].name, name) == 0)
            return &opt_defs[i];
    return NULL;
}

int config_read_file(const char *path, size_t max, char **out, size_t *len, char *err,
                     size_t errlen)
{
    /* Not blocking, and a regular file only: a FIFO or a device put in its place would hold
     * the reader (the main thread, on a reload) for ever. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -EINVAL;
    }
    FILE *f = S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path,
                 S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
        close(fd);
        return -EINVAL;
    }
    char *buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    size_t n = fread(buf, 1, max + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || n > max) {
        if (failed)
            snprintf(err, errlen, "%s: read error", path);
        else
            snprintf(err, errlen, "%s: file is over %zu KiB", path, max >> 10);
        free(buf);
        return -EINVAL;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Writes a scalar's text into buf. Returns 0, -EINVAL for a non-scalar, or -E2BIG for a string
 * that does not fit (never cut short: a cut path or spec would mean something else). */
static int json_value_text(const cJSON *item, char *buf, size_t len)
{
    if (cJSON_IsString(item)) {
        if (strlen(item->valuestring) >= len)
            return -E2BIG;
        snprintf(buf, len, "%s", item->valuestring);
        return 0;
    }
    if (cJSON_IsBool(item)) {
        snprintf(buf, len, "%s", cJSON_IsTrue(item) ? "true" : "false");
        return 0;
    }
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        if (d >= 0 && d < 1e18 && d == (double)(long long)d)
            snprintf(buf, len, "%lld", (long long)d);
        else
            snprintf(buf, len, "%.17g", d);
        return 0;
    }
    return -EINVAL;
}

static int load_routes(struct config *cfg, const char *path, const cJSON *arr, char *err,
                       size_t errlen);
static void free_routes(struct config *cfg);

static int key_order(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The first key of object o given twice, or NULL. Small objects are compared pairwise; a large
 * one (a control body may hold a megabyte of keys) is sorted, so the cost stays n log n. */
static const char *twice(const cJSON *o)
{
    size_t n = 0;
    for (const cJSON *a = o->child; a; a = a->next)
        n++;
    if (n <= 16) {
        for (const cJSON *a = o->child; a; a = a->next)
            for (const cJSON *b = o->child; b != a; b = b->next)
                if (strcmp(a->string, b->string) == 0)
                    return a->string;
        return NULL;
    }
    const cJSON **keys = malloc(n * sizeof *keys);
    if (!keys)
        return NULL;
    n = 0;
    for (const cJSON *a = o->child; a; a = a->next)
        keys[n++] = a;
    qsort(keys, n, sizeof *keys, key_order);
    const char *dup = NULL;
    for (size_t i = 1; !dup && i < n; i++)
        if (strcmp(keys[i - 1]->string, keys[i]->string) == 0)
            dup = keys[i]->string;
    free(keys);
    return dup;
}

int config_json_unique_keys(const cJSON *o, char *why, size_t whylen)
{
    const char *dup = cJSON_IsObject(o) ? twice(o) : NULL;
    if (dup) {
        snprintf(why, whylen, "%.120s: given twice; keep one", dup);
        return -EINVAL;
    }
    for (const cJSON *a = o ? o->child : NULL; a; a = a->next)
        if (config_json_unique_keys(a, why, whylen) != 0)
            return -EINVAL;
    return 0;
}

static int load_file(struct config *cfg, const char *path, unsigned char *set, char *err,
                     size_t errlen)
{
    char *text;
    size_t len;
    int rc = config_read_file(path, CONFIG_FILE_MAX, &text, &len, err, errlen);
    if (rc)
        return rc;
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        /* cJSON points at the byte where parsing stopped; turn it into a line number. */
        const char *at = cJSON_GetErrorPtr();
        unsigned line = 1;
        if (at && at >= text && at <= text + len)
            for (const char *p = text; p < at; p++)
                line += *p == '\n';
        snprintf(err, errlen, "%s:%u: malformed JSON (fix the syntax near line %u)", path, line,
                 line);
        free(text);
        return -EINVAL;
    }
    free(text);
    rc = 0;
    char dup[200];
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: the config must be a JSON object of option names", path);
        rc = -EINVAL;
    } else if (config_json_unique_keys(root, dup, sizeof dup) != 0) {
        snprintf(err, errlen, "%s: %s", path, dup);
        rc = -EINVAL;
    }
    for (const cJSON *item = root->child; rc == 0 && item; item = item->next) {
        const struct opt_def *d = find_def(item->string);
        char val[1024], why[CORE_ERR_LEN];
        if (strcmp(item->string, "routes") == 0) {
            rc = load_routes(cfg, path, item, err, errlen);
        } else if (strcmp(item->string, "scenario") == 0) {
            /* Checked whole against the routes it changes by scenario_check (scenario.h). */
            free(cfg->scenario);
            cfg->scenario = cJSON_IsArray(item) ? cJSON_PrintUnformatted(item) : NULL;
            if (!cfg->scenario) {
                snprintf(err, errlen, "%s: scenario: must be an array of phases", path);
                rc = -EINVAL;
            }
        } else if (!d) {
            snprintf(err, errlen, "%s: %s: unknown key (see --help for the option names)", path,
                     item->string);
            rc = -EINVAL;
        } else if ((rc = json_value_text(item, val, sizeof val)) != 0) {
            if (rc == -E2BIG)
                snprintf(err, errlen, "%s: %s: value is over %zu bytes", path, item->string,
                         sizeof val - 1);
            else
                snprintf(err, errlen, "%s: %s: must be a string, a number or a boolean", path,
                         item->string);
            rc = -EINVAL;
        } else if (set_value(cfg, d, val, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: %s: %s", path, item->string, why);
            rc = -EINVAL;
        } else {
            set[d - opt_defs] = 1;
        }
    }
    cJSON_Delete(root);
    return rc;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int is_token(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
            return 0;
    return 1;
}

/* 1 if a header value holds no control character (HTAB aside) and no DEL: one line, as sent. */
static int plain_value(const char *s)
{
    for (; *s; s++)
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
            return 0;
    return 1;
}

/* 1 for a header that frames the answer or is about the connection (RFC 9110 section 7.6.1,
 * RFC 9112 section 6): the server writes these, and a route's own would break its answers. */
static int framing_header(const char *name)
{
    static const char *const names[] = {"Content-Length",   "Transfer-Encoding",
                                        "Connection",       "Keep-Alive",
                                        "Proxy-Connection", "TE",
                                        "Trailer",          "Upgrade"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i]) == 0)
            return 1;
    return 0;
}

int config_fault_parse(const char *s, enum config_fault *out)
{
    static const char *const names[] = {"none", "close", "reset", "truncate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (enum config_fault)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* A count of a route's "workers" or "queue": a whole number from lo to 10 000 000. */
static int route_count(const cJSON *it, unsigned lo, unsigned *out)
{
    if (!cJSON_IsNumber(it) || it->valuedouble < lo || it->valuedouble > 10000000 ||
        it->valuedouble != (double)(long)it->valuedouble)
        return -EINVAL;
    *out = (unsigned)it->valuedouble;
    return 0;
}

/* 1 if the path has a "." or ".." segment: a request's path is routed with those resolved, so
 * no request could reach such a route. The router's own resolution says (target_path_resolve).
 * -ENOMEM if it cannot tell. */
static int has_dot_segment(const char *path)
{
    size_t len = strlen(path);
    char *resolved = malloc(len + 1);
    if (!resolved)
        return -ENOMEM;
    size_t n = target_path_resolve(path, len, resolved);
    int differs = n != len || memcmp(resolved, path, len) != 0;
    free(resolved);
    return differs;
}

/* 1 if k is one of pace.h's keys. */
static int pace_key(const char *k)
{
    return strcmp(k, "rate") == 0 || strcmp(k, "read-rate") == 0 || strcmp(k, "reset-after") == 0 ||
           strcmp(k, "stall") == 0 || strcmp(k, "slow-close") == 0;
}

/* Applies pace key k (a string, a number of bytes or ms where one stands alone; null or false:
 * none) onto p. */
static int apply_pace(struct pace_spec *p, const char *k, const cJSON *it, char *why, size_t whylen)
{
    char val[96], err[160];
    if (cJSON_IsNull(it) || cJSON_IsFalse(it))
        snprintf(val, sizeof val, "none");
    else if (cJSON_IsNumber(it) && strcmp(k, "stall") != 0 && it->valuedouble >= 0 &&
             it->valuedouble < 1e15 && it->valuedouble == (double)(long long)it->valuedouble)
        snprintf(val, sizeof val, "%lld", (long long)it->valuedouble);
    else if (!cJSON_IsString(it) || strlen(it->valuestring) >= sizeof val) {
        snprintf(why, whylen, "%s: must be a string such as \"%s\", or \"none\"", k,
                 strcmp(k, "stall") == 0         ? "64K,5s"
                 : strcmp(k, "slow-close") == 0  ? "5s"
                 : strcmp(k, "reset-after") == 0 ? "64K"
                                                 : "1M");
        return -EINVAL;
    } else
        snprintf(val, sizeof val, "%s", it->valuestring);
    int rc = strcmp(k, "rate") == 0          ? pace_rate_parse(p, val, err, sizeof err)
             : strcmp(k, "read-rate") == 0   ? pace_read_rate_parse(p, val, err, sizeof err)
             : strcmp(k, "reset-after") == 0 ? pace_reset_parse(p, val, err, sizeof err)
             : strcmp(k, "stall") == 0       ? pace_stall_parse(p, val, err, sizeof err)
                                             : pace_slow_close_parse(p, val, err, sizeof err);
    if (rc != 0)
        snprintf(why, whylen, "%s: %s", k, err);
    return rc;
}

int config_route_apply(struct config_route *r, const cJSON *o, int with_path, char *why,
                       size_t whylen)
{
    if (!cJSON_IsObject(o)) {
        snprintf(why, whylen, "must be an object%s", with_path ? " with at least \"path\"" : "");
        return -EINVAL;
    }
    for (const cJSON *it = o->child; it; it = it->next) {
        const char *k = it->string;
        if (strcmp(k, "path") == 0 && with_path) {
            if (!cJSON_IsString(it) || it->valuestring[0] != '/' ||
                strpbrk(it->valuestring, "? \t\r\n")) {
                snprintf(why, whylen, "path: must be a string starting with / (no query)");
                return -EINVAL;
            }
            if (pathtrie_kind_of(it->valuestring, why, whylen) < 0)
                return -EINVAL;
            int dot = has_dot_segment(it->valuestring);
            if (dot < 0) {
                snprintf(why, whylen, "path: out of memory");
                return dot;
            }
            if (dot) {
                snprintf(why, whylen,
                         "path: a \".\" or \"..\" segment never matches (requests are routed "
                         "with them resolved): write the path without it");
                return -EINVAL;
            }
            free(r->path); /* a repeated key: the last one wins */
            r->path = dup_n(it->valuestring, strlen(it->valuestring));
        } else if (strcmp(k, "method") == 0) {
            if (!cJSON_IsString(it) || !is_token(it->valuestring)) {
                snprintf(why, whylen, "method: must be a method name such as GET, or \"*\"");
                return -EINVAL;
            }
            free(r->method);
            r->method = NULL;
            if (strcmp(it->valuestring, "*") != 0)
                r->method = dup_n(it->valuestring, strlen(it->valuestring));
        } else if (strcmp(k, "status") == 0) {
            if (!cJSON_IsNumber(it) || it->valuedouble < CONFIG_STATUS_MIN ||
                it->valuedouble > CONFIG_STATUS_MAX ||
                it->valuedouble != (double)(int)it->valuedouble) {
                snprintf(why, whylen, "status: must be an HTTP status from %d to %d",
                         CONFIG_STATUS_MIN, CONFIG_STATUS_MAX);
                return -EINVAL;
            }
            r->status = (unsigned)it->valueint;
        } else if (strcmp(k, "body") == 0) {
            if (!cJSON_IsString(it) || strlen(it->valuestring) > CONFIG_ROUTE_BODY_MAX) {
                snprintf(why, whylen, "body: must be a string of at most %d bytes",
                         CONFIG_ROUTE_BODY_MAX);
                return -EINVAL;
            }
            free(r->body);
            r->body_len = strlen(it->valuestring);
            r->body = dup_n(it->valuestring, r->body_len);
        } else if (strcmp(k, "delay") == 0) {
            char val[256], derr[256];
            snprintf(derr, sizeof derr, "value is over %zu bytes", sizeof val - 1);
            if (json_value_text(it, val, sizeof val) != 0 ||
                delay_spec_parse(&r->delay, val, derr, sizeof derr) != 0) {
                snprintf(why, whylen, "delay: %s",
                         cJSON_IsString(it) || cJSON_IsNumber(it) ? derr : "must be a string");
                return -EINVAL;
            }
            r->has_delay = 1;
        } else if (strcmp(k, "drip") == 0) {
            char derr[256];
            /* "none", null and false: no drip (a change removes one). */
            if (cJSON_IsNull(it) || cJSON_IsFalse(it) ||
                (cJSON_IsString(it) && strcmp(it->valuestring, "none") == 0)) {
                r->drip = (struct delay_drip){0, 0};
            } else if (!cJSON_IsString(it) ||
                       delay_drip_parse(&r->drip, it->valuestring, derr, sizeof derr) != 0) {
                snprintf(why, whylen, "drip: %s",
                         cJSON_IsString(it) ? derr
                                            : "must be a string such as \"10,2s\", or \"none\"");
                return -EINVAL;
            }
        } else if (strcmp(k, "stream") == 0) {
            char serr[256];
            /* "none", null and false: no stream (a change removes one). */
            if (cJSON_IsNull(it) || cJSON_IsFalse(it)) {
                r->stream.format = STREAM_NONE;
            } else if (!cJSON_IsString(it) ||
                       stream_spec_parse(&r->stream, it->valuestring, serr, sizeof serr) != 0) {
                snprintf(why, whylen, "stream: %s",
                         cJSON_IsString(it)
                             ? serr
                             : "must be a string such as \"sse,count=10,gap=100ms\", or \"none\"");
                return -EINVAL;
            }
        } else if (strcmp(k, "websocket") == 0) {
            char serr[256];
            /* "none", null and false: no WebSocket (a change removes it). */
            if (cJSON_IsNull(it) || cJSON_IsFalse(it)) {
                r->ws.on = 0;
            } else if (!cJSON_IsString(it) ||
                       ws_spec_parse(&r->ws, it->valuestring, serr, sizeof serr) != 0) {
                snprintf(why, whylen, "websocket: %s",
                         cJSON_IsString(it) ? serr
                                            : "must be a string such as \"echo,delay=100ms\", or "
                                              "\"none\"");
                return -EINVAL;
            }
        } else if (strcmp(k, "fault") == 0) {
            if (cJSON_IsNull(it) || cJSON_IsFalse(it)) {
                r->fault = CONFIG_FAULT_NONE;
            } else if (!cJSON_IsString(it) || config_fault_parse(it->valuestring, &r->fault) != 0) {
                snprintf(why, whylen,
                         "fault: must be \"close\", \"reset\", \"truncate\" or \"none\"");
                return -EINVAL;
            }
        } else if (pace_key(k)) {
            if (apply_pace(&r->pace, k, it, why, whylen) != 0)
                return -EINVAL;
        } else if (strcmp(k, "workers") == 0) {
            if (route_count(it, with_path ? 1u : 0u, &r->workers) != 0) {
                snprintf(why, whylen, "workers: must be a whole number from %d to 10000000",
                         with_path);
                return -EINVAL;
            }
        } else if (strcmp(k, "queue") == 0) {
            if (route_count(it, 0, &r->queue) != 0) {
                snprintf(why, whylen, "queue: must be a whole number from 0 to 10000000");
                return -EINVAL;
            }
        } else if (strcmp(k, "headers") == 0) {
            if (!cJSON_IsObject(it)) {
                snprintf(why, whylen, "headers: must be an object of header names and values");
                return -EINVAL;
            }
            for (size_t h = 0; h < r->nheaders; h++) {
                free(r->headers[h].name);
                free(r->headers[h].value);
            }
            r->nheaders = 0;
            for (const cJSON *h = it->child; h; h = h->next) {
                if (r->nheaders == CONFIG_ROUTE_HEADERS) {
                    snprintf(why, whylen, "headers: at most %d", CONFIG_ROUTE_HEADERS);
                    return -EINVAL;
                }
                if (!is_token(h->string) || !cJSON_IsString(h) || !plain_value(h->valuestring)) {
                    snprintf(why, whylen,
                             "headers.%s: must be a header name with a string value without "
                             "control characters",
                             h->string);
                    return -EINVAL;
                }
                if (framing_header(h->string)) {
                    snprintf(why, whylen,
                             "headers.%s: the server frames its answers itself; "
                             "Content-Length, Transfer-Encoding, Connection, Keep-Alive, "
                             "Proxy-Connection, TE, Trailer and Upgrade cannot be set",
                             h->string);
                    return -EINVAL;
                }
                r->headers[r->nheaders].name = dup_n(h->string, strlen(h->string));
                r->headers[r->nheaders].value = dup_n(h->valuestring, strlen(h->valuestring));
                r->nheaders++;
            }
        } else if (strcmp(k, "error-rate") == 0) {
            if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0.0 && it->valuedouble <= 1.0)) {
                snprintf(why, whylen, "error-rate: must be a number from 0 to 1 (e.g. 0.3)");
                return -EINVAL;
            }
            r->has_error_rate = 1;
            r->error_rate = it->valuedouble;
        } else if (strcmp(k, "error-status") == 0) {
            if (!cJSON_IsNumber(it) || it->valuedouble < CONFIG_STATUS_MIN ||
                it->valuedouble > CONFIG_STATUS_MAX ||
                it->valuedouble != (double)(int)it->valuedouble) {
                snprintf(why, whylen, "error-status: must be an HTTP status from %d to %d",
                         CONFIG_STATUS_MIN, CONFIG_STATUS_MAX);
                return -EINVAL;
            }
            r->error_status = (unsigned)it->valueint;
        } else {
            snprintf(why, whylen,
                     "%s: unknown key (%smethod, status, body, headers, delay, drip, fault, "
                     "rate, read-rate, reset-after, stall, slow-close, stream, websocket, workers, "
                     "queue, "
                     "error-rate, error-status)",
                     k, with_path ? "path, " : "");
            return -EINVAL;
        }
    }
    return 0;
}

int config_route_check(const struct config_route *r, uint64_t max_delay_us, char *why,
                       size_t whylen)
{
    uint64_t max = r->has_delay ? delay_spec_max_us(&r->delay) : 0;
    if (r->drip.over_us > max_delay_us) {
        char a[32], b[32];
        delay_format_ms(r->drip.over_us, a, sizeof a);
        delay_format_ms(max_delay_us, b, sizeof b);
        snprintf(why, whylen, "drip: %s ms is over --max-delay %s ms; raise --max-delay", a, b);
        return -EINVAL;
    }
    if (max != UINT64_MAX && max > max_delay_us) {
        char a[32], b[32];
        delay_format_ms(max, a, sizeof a);
        delay_format_ms(max_delay_us, b, sizeof b);
        snprintf(why, whylen, "delay: up to %s ms is over --max-delay %s ms; raise --max-delay", a,
                 b);
        return -EINVAL;
    }
    if (r->queue && !r->workers) {
        snprintf(why, whylen,
                 "queue: needs \"workers\" (the queue is for requests waiting on a "
                 "worker)");
        return -EINVAL;
    }
    if (r->drip.chunks > r->body_len) {
        snprintf(why, whylen, "drip: %u chunks need a body of at least %u bytes (this one has %zu)",
                 r->drip.chunks, r->drip.chunks, r->body_len);
        return -EINVAL;
    }
    if (r->fault == CONFIG_FAULT_TRUNCATE && r->body_len == 0) {
        snprintf(why, whylen, "fault: truncate needs a body to cut");
        return -EINVAL;
    }
    if (r->stream.format != STREAM_NONE) {
        uint64_t gmax = delay_spec_max_us(&r->stream.gap);
        if (gmax == UINT64_MAX)
            gmax = r->stream.gap.a_us;
        if (gmax > max_delay_us) {
            char a[32], b[32];
            delay_format_ms(gmax, a, sizeof a);
            delay_format_ms(max_delay_us, b, sizeof b);
            snprintf(why, whylen, "stream: gap %s ms is over --max-delay %s ms; raise --max-delay",
                     a, b);
            return -EINVAL;
        }
        if (r->status == 204 || r->status == 304) {
            snprintf(why, whylen, "stream: needs a status with a body, not %u", r->status);
            return -EINVAL;
        }
        if (r->drip.chunks || r->fault == CONFIG_FAULT_TRUNCATE || pace_shapes_body(&r->pace) ||
            r->pace.slow_close_us) {
            snprintf(why, whylen,
                     "stream: cannot be shaped by drip, rate, stall, reset-after, slow-close or "
                     "truncate too; keep the stream");
            return -EINVAL;
        }
    }
    if (r->ws.on) {
        uint64_t wmax = ws_spec_max_us(&r->ws);
        if (wmax != UINT64_MAX && wmax > max_delay_us) {
            char a[32], b[32];
            delay_format_ms(wmax, a, sizeof a);
            delay_format_ms(max_delay_us, b, sizeof b);
            snprintf(why, whylen,
                     "websocket: a delay of up to %s ms is over --max-delay %s ms; raise "
                     "--max-delay",
                     a, b);
            return -EINVAL;
        }
        if (r->stream.format != STREAM_NONE || r->drip.chunks || r->fault != CONFIG_FAULT_NONE ||
            pace_shapes_body(&r->pace) || r->pace.slow_close_us || r->pace.read_rate ||
            r->workers) {
            snprintf(why, whylen,
                     "websocket: a WebSocket route takes no stream, drip, fault, rate, stall, "
                     "reset-after, slow-close, read-rate or workers; keep the websocket");
            return -EINVAL;
        }
    }
    if (r->drip.chunks && (r->pace.rate || r->pace.stall)) {
        snprintf(why, whylen, "drip: cannot be paced by rate or stall too; keep one");
        return -EINVAL;
    }
    return pace_check(&r->pace, r->body_len, max_delay_us, why, whylen);
}

/* Fills r from one element of "routes". `why` gets "<key>: <reason>" on failure. */
static int parse_route(const cJSON *o, struct config_route *r, char *why, size_t whylen)
{
    r->status = 200;
    int rc = config_route_apply(r, o, 1, why, whylen);
    if (rc == 0 && !r->path) {
        snprintf(why, whylen, "path: missing");
        rc = -EINVAL;
    }
    return rc;
}

int config_route_copy(struct config_route *dst, const struct config_route *src)
{
    *dst = *src;
    dst->path = src->path ? dup_n(src->path, strlen(src->path)) : NULL;
    dst->method = src->method ? dup_n(src->method, strlen(src->method)) : NULL;
    dst->body = src->body ? dup_n(src->body, src->body_len) : NULL;
    int failed =
        (src->path && !dst->path) || (src->method && !dst->method) || (src->body && !dst->body);
    for (size_t h = 0; h < src->nheaders; h++) {
        dst->headers[h].name = dup_n(src->headers[h].name, strlen(src->headers[h].name));
        dst->headers[h].value = dup_n(src->headers[h].value, strlen(src->headers[h].value));
        failed |= !dst->headers[h].name || !dst->headers[h].value;
    }
    if (failed) {
        config_route_free(dst);
        return -ENOMEM;
    }
    return 0;
}

void config_route_free(struct config_route *r)
{
    free(r->path);
    free(r->method);
    free(r->body);
    for (size_t h = 0; h < r->nheaders; h++) {
        free(r->headers[h].name);
        free(r->headers[h].value);
    }
    memset(r, 0, sizeof *r);
}

static int load_routes(struct config *cfg, const char *path, const cJSON *arr, char *err,
                       size_t errlen)
{
    if (!cJSON_IsArray(arr)) {
        snprintf(err, errlen, "%s: routes: must be an array of route objects", path);
        return -EINVAL;
    }
    size_t n = (size_t)cJSON_GetArraySize(arr);
    if (n > CONFIG_ROUTES_MAX) {
        snprintf(err, errlen,
                 "%s: routes: %zu routes, over the limit of %d; remove some or run a second "
                 "server",
                 path, n, CONFIG_ROUTES_MAX);
        return -EINVAL;
    }
    free_routes(cfg);
    cfg->routes = calloc(n ? n : 1, sizeof *cfg->routes);
    if (!cfg->routes) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    cfg->nroutes = n;
    /* The paths seen so far: a path given twice is found without comparing every pair. */
    struct strmap seen;
    if (strmap_init(&seen, n) != 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    int rc = 0;
    size_t i = 0;
    for (const cJSON *o = arr->child; o && rc == 0; o = o->next, i++) {
        char why[CORE_ERR_LEN];
        if (parse_route(o, &cfg->routes[i], why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: routes[%zu].%s", path, i, why);
            rc = -EINVAL;
            break;
        }
        const char *p = cfg->routes[i].path;
        if (strmap_put(&seen, p, strlen(p), i) == -EEXIST) {
            snprintf(err, errlen, "%s: routes[%zu].path: '%s' is already routes[%ld]", path, i, p,
                     strmap_get(&seen, p, strlen(p)));
            rc = -EINVAL;
        }
    }
    strmap_cleanup(&seen);
    size_t a, b;
    int clash = rc == 0 ? config_routes_clash(cfg->routes, n, &a, &b) : 0;
    if (clash < 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -ENOMEM;
    } else if (clash) {
        snprintf(err, errlen,
                 "%s: routes[%zu].path: '%s' and routes[%zu] '%s' match the same paths and "
                 "neither is more precise; keep one",
                 path, b, cfg->routes[b].path, a, cfg->routes[a].path);
        rc = -EINVAL;
    }
    return rc;
}

int config_routes_clash(const struct config_route *routes, size_t n, size_t *first, size_t *second)
{
    struct pathtrie pt;
    char why[8];
    if (pathtrie_init(&pt) != 0)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int kind = pathtrie_kind_of(routes[i].path, why, sizeof why);
        if (kind != PATHTRIE_TEMPLATE && kind != PATHTRIE_WILDCARD)
            continue;
        size_t other;
        int added = pathtrie_add(&pt, routes[i].path, i, &other);
        if (added == -EEXIST) {
            *first = other;
            *second = i;
            rc = 1;
        } else if (added != 0) {
            rc = -ENOMEM;
        }
    }
    pathtrie_cleanup(&pt);
    return rc;
}

static void free_routes(struct config *cfg)
{
    for (size_t i = 0; cfg->routes && i < cfg->nroutes; i++)
        config_route_free(&cfg->routes[i]);
    free(cfg->routes);
    cfg->routes = NULL;
    cfg->nroutes = 0;
}

void config_cleanup(struct config *cfg)
{
    free_routes(cfg);
    free(cfg->scenario);
    cfg->scenario = NULL;
    cfg->routes = NULL;
    cfg->nroutes = 0;
}

static void env_name(const struct opt_def *d, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "SLOWSRV_");
    for (const char *p = d->name; *p && n + 1 < len; p++)
        buf[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    buf[n] = '\0';
}

static const char *env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

/* The edit distance between a and b (each under 64 bytes; longer ones count as far). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[64];
    if (la >= 64 || lb >= 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* A SLOWSRV_ variable that names no option is no error (it may be meant for another program),
 * but a misspelt one would be silently ignored: each gets a warning naming the nearest
 * option's variable. */
static void warn_unknown_env(struct config *cfg, char *const *envp)
{
    static const char *const others[] = {"SLOWSRV_CONFIG", "SLOWSRV_ENGINE"};
    size_t used = strlen(cfg->warnings);
    for (; envp && *envp; envp++) {
        char var[64];
        const char *eq = strchr(*envp, '=');
        size_t n = eq ? (size_t)(eq - *envp) : strlen(*envp);
        if (strncmp(*envp, "SLOWSRV_", 8) != 0 || n >= sizeof var)
            continue;
        memcpy(var, *envp, n);
        var[n] = '\0';
        int known = strcmp(var, others[0]) == 0 || strcmp(var, others[1]) == 0;
        char best[64] = "", name[64];
        size_t bestd = SIZE_MAX;
        for (size_t i = 0; !known && i < NOPTS; i++) {
            env_name(&opt_defs[i], name, sizeof name);
            size_t d = distance(var, name);
            known = d == 0;
            if (d < bestd) {
                bestd = d;
                snprintf(best, sizeof best, "%s", name);
            }
        }
        if (known || used >= sizeof cfg->warnings)
            continue;
        int w = snprintf(cfg->warnings + used, sizeof cfg->warnings - used,
                         "%s is not an option's variable: ignored%s%s%s\n", var,
                         bestd <= 3 ? " (did you mean " : "", bestd <= 3 ? best : "",
                         bestd <= 3 ? "?)" : "");
        used = w > 0 && (size_t)w < sizeof cfg->warnings - used ? used + (size_t)w
                                                                : sizeof cfg->warnings;
    }
}

static int load_env(struct config *cfg, char *const *envp, unsigned char *set, char *err,
                    size_t errlen)
{
    warn_unknown_env(cfg, envp);
    for (size_t i = 0; i < NOPTS; i++) {
        char name[64], why[CORE_ERR_LEN];
        env_name(&opt_defs[i], name, sizeof name);
        const char *val = env_get(envp, name);
        if (!val)
            continue;
        if (set_value(cfg, &opt_defs[i], val, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: %s", name, why);
            return -EINVAL;
        }
        set[i] = 2; /* by the environment */
    }
    return 0;
}

/* getopt_long's table, built from opt_defs plus the command-line-only actions. */
static void build_getopt(struct option *longopts, char *shortopts, size_t shortlen)
{
    size_t k = 0, s = 0;
    static const struct option actions[] = {
        {"help", no_argument, NULL, FLAG_HELP},
        {"version", no_argument, NULL, FLAG_VERSION},
        {"config", required_argument, NULL, FLAG_CONFIG},
        {"check-config", required_argument, NULL, FLAG_CHECK},
    };
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
        longopts[k++] = actions[i];
    s += (size_t)snprintf(shortopts, shortlen, ":hVc:");
    for (size_t i = 0; i < NOPTS; i++) {
        /* Long-only options return 2000 + their index. */
        int val = opt_defs[i].short_name ? opt_defs[i].short_name : 2000 + (int)i;
        int has_arg = opt_defs[i].type == OPT_FLAG ? no_argument : required_argument;
        longopts[k++] = (struct option){opt_defs[i].name, has_arg, NULL, val};
        if (opt_defs[i].short_name && s + 3 < shortlen) {
            shortopts[s++] = (char)opt_defs[i].short_name;
            shortopts[s++] = ':';
            shortopts[s] = '\0';
        }
    }
    longopts[k] = (struct option){NULL, 0, NULL, 0};
}

static const struct opt_def *def_for_val(int val)
{
    if (val >= 2000 && (size_t)(val - 2000) < NOPTS)
        return &opt_defs[val - 2000];
    for (size_t i = 0; i < NOPTS; i++)
        if (opt_defs[i].short_name && opt_defs[i].short_name == val)
            return &opt_defs[i];
    return NULL;
}

int config_check_delays(const struct config *cfg, uint64_t max_delay_us, const char *delay_from,
                        char *err, size_t errlen)
{
    if (delay_spec_max_us(&cfg->delay) != UINT64_MAX &&
        delay_spec_max_us(&cfg->delay) > max_delay_us) {
        char a[32], b[32];
        delay_format_ms(delay_spec_max_us(&cfg->delay), a, sizeof a);
        delay_format_ms(max_delay_us, b, sizeof b);
        snprintf(err, errlen, "%s%sdelay: up to %s ms is over --max-delay %s ms; raise --max-delay",
                 delay_from, delay_from[0] ? ": " : "", a, b);
        return -EINVAL;
    }
    for (size_t i = 0; i < cfg->nroutes; i++) {
        char why[CORE_ERR_LEN];
        if (config_route_check(&cfg->routes[i], max_delay_us, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: routes[%zu].%s", cfg->config_file, i, why);
            return -EINVAL;
        }
    }
    return 0;
}

static int validate(struct config *cfg, const struct config_engine *engine,
                    const unsigned char *set, char *err, size_t errlen)
{
    cfg->whole_bodies = engine ? engine->whole_bodies : NULL;
    const unsigned char *set_max_conn = &set[find_def("max-connections") - opt_defs];
    if (!(engine->models & CONFIG_MODEL_BIT(cfg->model))) {
        snprintf(err, errlen, "model: %s runs %s only; '%s' needs %s", engine->program,
                 engine->models_name, config_model_name(cfg->model), engine->others);
        return -EINVAL;
    }
    if (cfg->model == CONFIG_MODEL_SELECT) {
        unsigned cap = config_select_max_connections();
        if (*set_max_conn && cfg->max_connections > cap) {
            snprintf(err, errlen,
                     "max-connections: %u is more than --model select can hold (%u); "
                     "use --model epoll or poll for more",
                     cfg->max_connections, cap);
            return -EINVAL;
        }
        if (cfg->max_connections > cap)
            cfg->max_connections = cap;
    }
    /* Named where it was given: the file (1), the environment (2) or a flag (3). */
    unsigned char from = set[find_def("delay") - opt_defs];
    int rc = config_check_delays(cfg, cfg->max_delay_us,
                                 from == 1   ? cfg->config_file
                                 : from == 2 ? "SLOWSRV_DELAY"
                                             : "",
                                 err, errlen);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < cfg->nroutes; i++) {
        if (cfg->routes[i].pace.read_rate && engine && engine->whole_bodies) {
            snprintf(err, errlen, "%s: routes[%zu].read-rate: %s", cfg->config_file, i,
                     engine->whole_bodies);
            return -EINVAL;
        }
    }
    if (cfg->queue && !cfg->workers) {
        snprintf(err, errlen,
                 "queue: needs --workers (the queue is for requests waiting on "
                 "a worker)");
        return -EINVAL;
    }
    if ((cfg->tls_cert[0] != '\0') != (cfg->tls_key[0] != '\0')) {
        snprintf(err, errlen, "%s: needs %s too", cfg->tls_cert[0] ? "tls-cert" : "tls-key",
                 cfg->tls_cert[0] ? "--tls-key" : "--tls-cert");
        return -EINVAL;
    }
    /* A TLS file that cannot be read is a configuration error, found before any socket is
     * bound, whatever holds the port (the engines parse the files later). */
    static const char *const tls_names[] = {"tls-cert", "tls-key"};
    const char *tls_files[] = {cfg->tls_cert, cfg->tls_key};
    for (size_t i = 0; i < 2; i++) {
        if (tls_files[i][0] != '\0' && access(tls_files[i], R_OK) != 0) {
            snprintf(err, errlen, "%s: %s: cannot read: %s", tls_names[i], tls_files[i],
                     strerror(errno));
            return -EINVAL;
        }
    }
    /* The access log is opened after validation: a file whose folder cannot be written is a
     * config error now, so that --check-config finds it too. */
    if (cfg->access_log[0] != '\0' && strcmp(cfg->access_log, "-") != 0) {
        char dir[sizeof cfg->access_log];
        snprintf(dir, sizeof dir, "%s", cfg->access_log);
        char *slash = strrchr(dir, '/');
        if (slash == dir)
            dir[1] = '\0';
        else if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        if (access(dir, W_OK | X_OK) != 0) {
            snprintf(err, errlen, "access-log: %s: cannot write there: %s", cfg->access_log,
                     strerror(errno));
            return -EINVAL;
        }
    }
    if (cfg->control_host[0] && cfg->control_scheme == CONFIG_SCHEME_HTTPS && !cfg->tls_cert[0]) {
        snprintf(err, errlen,
                 "control: https:// needs --tls-cert and --tls-key (the control API serves the "
                 "main port's certificate); give them, or drop https://");
        return -EINVAL;
    }
    if (cfg->control_token[0] != '\0') {
        char *text;
        size_t len;
        char why[CORE_ERR_LEN];
        if (!cfg->control_host[0]) {
            snprintf(err, errlen, "control-token: needs --control (the token guards its API)");
            return -EINVAL;
        }
        if (config_read_file(cfg->control_token, 4096, &text, &len, why, sizeof why) != 0) {
            snprintf(err, errlen, "control-token: %s", why);
            return -EINVAL;
        }
        size_t n = strcspn(text, "\r\n");
        if (n == 0 || n >= sizeof cfg->control_bearer) {
            snprintf(err, errlen,
                     "control-token: %s: the first line must hold the token (1 to %zu bytes)",
                     cfg->control_token, sizeof cfg->control_bearer - 1);
            free(text);
            return -EINVAL;
        }
        memcpy(cfg->control_bearer, text, n);
        cfg->control_bearer[n] = '\0';
        free(text);
    }
    if (cfg->spool_dir[0] == '\0') {
        snprintf(err, errlen, "spool-dir: must not be empty");
        return -EINVAL;
    }
    if (cfg->threads == 0) {
        /* The CPUs this process may use: a container limited to one CPU runs one loop. */
        struct cpus_limit lim;
        cfg->threads = cpus_usable(&lim, "/proc/self/cgroup", "/sys/fs/cgroup");
        cpus_describe(&lim, cfg->threads, cfg->threads_from, sizeof cfg->threads_from);
    }
    return 0;
}

/* Errors quote what the user wrote; a control character in it must not break the one line. */
static int one_line(int rc, char *err)
{
    for (char *p = err; rc != 0 && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return rc;
}

static int load(struct config *cfg, const struct config_engine *engine, int argc, char **argv,
                char *const *envp, uint64_t random_seed, enum config_action *action, char *err,
                size_t errlen);

int config_load(struct config *cfg, const struct config_engine *engine, int argc, char **argv,
                char *const *envp, uint64_t random_seed, enum config_action *action, char *err,
                size_t errlen)
{
    return one_line(load(cfg, engine, argc, argv, envp, random_seed, action, err, errlen), err);
}

static int load(struct config *cfg, const struct config_engine *engine, int argc, char **argv,
                char *const *envp, uint64_t random_seed, enum config_action *action, char *err,
                size_t errlen)
{
    struct option longopts[NOPTS + 8];
    char shortopts[64];
    unsigned char set[NOPTS];
    const char *file = env_get(envp, "SLOWSRV_CONFIG");
    const char *check = NULL;
    int opt, rc;

    memset(set, 0, sizeof set);
    *cfg = config_defaults;
    cfg->seed = random_seed;
    *action = CONFIG_ACTION_RUN;
    build_getopt(longopts, shortopts, sizeof shortopts);

    /* First pass: actions and the config file, which must be read before env and flags. */
    opterr = 0;
    /* optind = 0 makes glibc's getopt start afresh, including a half-read cluster like -hV
     * left by an earlier call. */
    optind = 0;
    while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (opt == '?') {
            if (optopt && optopt < 256)
                snprintf(err, errlen, "unknown option '-%c' (see --help)", optopt);
            else
                snprintf(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
            return -EINVAL;
        }
        if (opt == ':') {
            snprintf(err, errlen, "%s: needs a value (see --help)", argv[optind - 1]);
            return -EINVAL;
        }
        if (opt == FLAG_HELP && *action == CONFIG_ACTION_RUN)
            *action = CONFIG_ACTION_HELP;
        else if (opt == FLAG_VERSION && *action == CONFIG_ACTION_RUN)
            *action = CONFIG_ACTION_VERSION;
        else if (opt == FLAG_CONFIG)
            file = optarg;
        else if (opt == FLAG_CHECK)
            check = optarg;
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (options start with --; see --help)",
                 argv[optind]);
        return -EINVAL;
    }
    if (*action != CONFIG_ACTION_RUN)
        return 0;
    if (check) {
        *action = CONFIG_ACTION_CHECK;
        file = check;
        snprintf(cfg->check_file, sizeof cfg->check_file, "%s", check);
    }

    if (file)
        snprintf(cfg->config_file, sizeof cfg->config_file, "%s", file);
    if (file && (rc = load_file(cfg, file, set, err, errlen)) != 0) {
        config_cleanup(cfg);
        return rc;
    }
    if ((rc = load_env(cfg, envp, set, err, errlen)) != 0) {
        config_cleanup(cfg);
        return rc;
    }

    optind = 0;
    while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        const struct opt_def *d = def_for_val(opt);
        char why[CORE_ERR_LEN];
        if (!d)
            continue;
        if (set_value(cfg, d, d->type == OPT_FLAG ? "1" : optarg, why, sizeof why) != 0) {
            snprintf(err, errlen, "--%s: %s", d->name, why);
            config_cleanup(cfg);
            return -EINVAL;
        }
        set[d - opt_defs] = 3; /* by a flag */
    }
    optind = 1;
    rc = validate(cfg, engine, set, err, errlen);
    if (rc != 0)
        config_cleanup(cfg);
    return rc;
}

void config_usage(FILE *out, const struct config_engine *engine)
{
    fprintf(out,
            "Usage: %s [options]\n"
            "A deterministic HTTP target for load tools and HTTP-client benchmarks (%s).\n\n"
            "Routes: GET /test (waits --delay, answers ok), POST /write (multipart: byte count\n"
            "of the data part), any method / and /echo (OK), GET /healthz.\n\n"
            "Options (each also a config-file key and a SLOWSRV_<NAME> variable):\n",
            engine->program, engine->description);
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_def *d = &opt_defs[i];
        char left[64];
        if (d->short_name)
            snprintf(left, sizeof left, "-%c, --%s %s", d->short_name, d->name, d->arg);
        else
            snprintf(left, sizeof left, "    --%s %s", d->name, d->arg);
        fprintf(out, "  %-28s %s\n", left, d->help);
    }
    fprintf(out,
            "  %-28s %s\n  %-28s %s\n  %-28s %s\n  %-28s %s\n\n"
            "Precedence: defaults < config file < SLOWSRV_* environment < flags.\n"
            "Exit status: 0 ok; 1 cannot listen (e.g. port in use); 2 bad option, value or "
            "config.\n",
            "-c, --config FILE", "JSON config file of option names (also SLOWSRV_CONFIG)",
            "    --check-config FILE", "validate FILE (and env and flags), then exit", "-h, --help",
            "print this help", "-V, --version", "print the version");
}

int config_control_tls(const struct config *cfg)
{
    return cfg->control_scheme == CONFIG_SCHEME_HTTPS ||
           (cfg->control_scheme == CONFIG_SCHEME_AS_MAIN && cfg->tls_cert[0] != '\0');
}
