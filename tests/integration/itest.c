/*
 * Integration cases against the real server binaries.
 *
 *   itest BINARY CASE [OTHER_BINARY]     runs one case ("<case>" or "<case>:<model>")
 *   itest --list BINARY [OTHER_BINARY]   prints the ctest entries of BINARY, one a line
 *
 * Each theme file (routes.c, upload.c, ...) keeps its cases in a table; this file collects the
 * tables. A case starts the binary on port 0, talks to it with libcurl, and stops it with
 * SIGTERM expecting exit status 0.
 *
 * --list prints "<ctest name> <case argument>" for every case that BINARY's engine runs (its
 * engine read from `BINARY --version`): "<engine>.<case> <case>" for a plain case and
 * "<engine>.<case>.<model> <case>:<model>" for each of the engine's models; with OTHER_BINARY also
 * "both.<case> <case>" for the cases that compare two binaries. The entry runs
 * `itest BINARY <case argument>`, followed by OTHER_BINARY for the "both." ones
 * (tests/integration/discover.cmake turns the lines into ctest's add_test).
 */
#include "itest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned check_passed;
unsigned check_failed;

static const struct itest_suite *const suites[] = {
    &itest_suite_lifecycle, &itest_suite_routes,    &itest_suite_delays,    &itest_suite_stats,
    &itest_suite_upload,    &itest_suite_h2_tls,    &itest_suite_hostile,   &itest_suite_limits,
    &itest_suite_soak,      &itest_suite_control,   &itest_suite_templates, &itest_suite_pacing,
    &itest_suite_streams,   &itest_suite_websocket,
};

static const char usage[] = "usage: itest BINARY CASE [OTHER_BINARY]\n"
                            "       itest --list BINARY [OTHER_BINARY]\n";

/* The engine of bin, from its --version line; NULL (said on stderr) if itest knows none. */
static const struct engine_caps *engine_of(const char *bin)
{
    static const char *const args[] = {"--version", NULL};
    char out[1024], err[1024];
    int rc = run_to_exit(bin, args, NULL, out, sizeof out, err, sizeof err);
    const struct engine_caps *caps = rc == 0 ? engine_caps_from_version(out) : NULL;
    if (!caps)
        fprintf(stderr, "itest: '%s --version' (exit %d) names no engine itest knows: %s%s\n", bin,
                rc, out, err);
    return caps;
}

static int runs_on(const struct itest_case *c, const struct engine_caps *caps)
{
    return (caps->features & c->needs) == c->needs;
}

static int list(const char *bin, const char *other_bin)
{
    const struct engine_caps *caps = engine_of(bin);
    const struct engine_caps *other = other_bin ? engine_of(other_bin) : NULL;
    if (!caps || (other_bin && !other))
        return 2;
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        for (size_t i = 0; i < suites[s]->n; i++) {
            const struct itest_case *c = &suites[s]->cases[i];
            if (!runs_on(c, caps))
                continue;
            switch (c->kind) {
            case ITEST_PLAIN:
                printf("%s.%s %s\n", caps->name, c->name, c->name);
                break;
            case ITEST_PER_MODEL:
                for (size_t m = 0; caps->models[m]; m++)
                    printf("%s.%s.%s %s:%s\n", caps->name, c->name, caps->models[m], c->name,
                           caps->models[m]);
                break;
            case ITEST_BOTH:
                if (other && runs_on(c, other))
                    printf("both.%s %s\n", c->name, c->name);
                break;
            }
        }
    }
    return fflush(stdout) == 0 ? 0 : 2;
}

/* The case named by `arg`: "<case>" for a plain or both-binaries case, "<case>:<model>" for a
 * per-model one (*model then points into arg). NULL if there is no such case. */
static const struct itest_case *find_case(const char *arg, const char **model)
{
    const char *colon = strchr(arg, ':');
    size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
    *model = colon ? colon + 1 : NULL;
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        for (size_t i = 0; i < suites[s]->n; i++) {
            const struct itest_case *c = &suites[s]->cases[i];
            if (strlen(c->name) == len && strncmp(c->name, arg, len) == 0 &&
                (c->kind == ITEST_PER_MODEL) == (colon != NULL))
                return c;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
        if (argc != 3 && argc != 4) {
            fputs(usage, stderr);
            return 2;
        }
        return list(argv[2], argc == 4 ? argv[3] : NULL);
    }
    if (argc != 3 && argc != 4) {
        fputs(usage, stderr);
        return 2;
    }
    struct itest_env env = {.bin = argv[1], .other_bin = argc == 4 ? argv[3] : NULL};
    const struct itest_case *c = find_case(argv[2], &env.model);
    if (!c) {
        fprintf(stderr, "itest: unknown case '%s' (a per-model case is <case>:<model>)\n", argv[2]);
        return 2;
    }
    env.caps = engine_of(env.bin);
    if (!env.caps)
        return 2;
    if (!runs_on(c, env.caps)) {
        fprintf(stderr, "itest: %s is not a case for engine %s (%s)\n", c->name, env.caps->name,
                env.bin);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    snprintf(env.tmpdir, sizeof env.tmpdir, "/tmp/slowsrv-itest.XXXXXX");
    if (!mkdtemp(env.tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    c->run(&env);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", env.tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", env.tmpdir);
    curl_global_cleanup();
    return CHECK_DONE();
}
