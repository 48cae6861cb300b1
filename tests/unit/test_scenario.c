#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/api.h"
#include "control/scenario.h"
#include "run/service.h"
#include "base/timer.h"
#include "report/report.h"
#include "check.h"

static int check_text(const char *json, char *err, size_t len)
{
    struct config cfg = config_defaults;
    cfg.scenario = (char *)(uintptr_t)json;
    snprintf(cfg.config_file, sizeof cfg.config_file, "s.json");
    return scenario_check(&cfg, err, len);
}

/* Every phase is checked as it would run, naming the phase and key. */
static void scenario_check_names_the_bad_key(void)
{
    static const struct {
        const char *json;
        const char *err;
    } cases[] = {
        {"[{\"at\": \"0s\"}, {\"at\": \"60s\", \"routes\": {\"/test\": {\"delay\": \"2s\"}}}]", ""},
        {"[{\"at\": 500, \"ramp\": {\"/test\": {\"from\": \"1s\", \"to\": \"2s\", \"over\": "
         "\"10s\"}}}]",
         ""},
        {"[{\"at\": \"1s\", \"restore\": true}]", ""},
        {"[{\"at\": \"1s\", \"routes\": {\"/test\": {\"rate\": \"100K,burst=1K\", \"stall\": "
         "\"1,1s\", \"slow-close\": \"1s\"}}}]",
         ""},
        {"[{\"at\": \"1s\", \"routes\": {\"/test\": {\"rate\": \"fast\"}}}]",
         "s.json: scenario[0].routes./test.rate: bad byte count 'fast'"},
        {"[{\"at\": \"1s\", \"routes\": {\"/test\": {\"reset-after\": \"2\"}}}]",
         "s.json: scenario[0].routes./test.reset-after: 2 bytes is not inside the body of 2 bytes"},
        {"[{\"routes\": {}}]", "s.json: scenario[0].at: missing"},
        {"[{\"at\": \"5s\"}, {\"at\": \"1s\"}]",
         "s.json: scenario[1].at: phases must be in order of \"at\""},
        {"[{\"at\": \"1s\", \"routes\": {\"/test\": {\"delay\": \"1sec\"}}}]",
         "s.json: scenario[0].routes./test.delay: bad duration"},
        {"[{\"at\": \"1s\", \"routes\": {\"/nope\": {\"status\": 500}}}]",
         "s.json: scenario[0].routes./nope: no such route"},
        {"[{\"at\": \"1s\", \"routes\": {\"/write\": {\"status\": 500}}}]",
         "s.json: scenario[0].routes./write: a built-in route"},
        {"[{\"at\": \"1s\", \"ramp\": {\"/test\": {\"from\": \"1s\", \"to\": \"normal:1s,5ms\", "
         "\"over\": \"1s\"}}}]",
         "s.json: scenario[0].ramp./test.to: must be of the same form"},
        {"[{\"at\": \"1s\", \"ramp\": {\"/test\": {\"from\": \"1s\", \"to\": \"2h\", \"over\": "
         "\"1s\"}}}]",
         "s.json: scenario[0].ramp./test.to: delay: up to 7200000 ms is over --max-delay"},
        {"[{\"at\": \"1s\", \"when\": 3}]", "s.json: scenario[0].when: unknown key"},
        {"{}", "s.json: scenario: must be an array of phases"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512] = "";
        int rc = check_text(cases[i].json, err, sizeof err);
        if (!cases[i].err[0]) {
            CHECK_INT(rc, 0);
            CHECK_STR(err, "");
        } else {
            CHECK_INT(rc, -EINVAL);
            if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
                CHECK_STR(err, cases[i].err);
        }
    }
}

static uint64_t live_delay(struct service *svc, const char *target, uint64_t *gen)
{
    struct route_request rq = {.method = "GET", .target = target, .target_len = strlen(target)};
    struct plan p;
    struct route_table *t = service_table_acquire(svc, 0);
    route_plan(t, &rq, &p);
    service_table_release(svc, t, 0);
    if (gen)
        *gen = p.generation;
    return p.delay_us;
}

/* The phases change the live table at their offsets, the ramp moves the delay through its
 * steps, restore puts the start back; start again runs it from the top. */
static void scenario_runs_its_phases_on_time(void)
{
    struct config cfg = config_defaults;
    cfg.scenario = strdup(
        "[{\"at\": \"100ms\", \"name\": \"brownout\", \"routes\": {\"/test\": {\"delay\": "
        "\"2s\"}}},"
        " {\"at\": \"300ms\", \"ramp\": {\"/test\": {\"from\": \"100ms\", \"to\": \"1100ms\", "
        "\"over\": \"400ms\"}}},"
        " {\"at\": \"900ms\", \"restore\": true}]");
    struct service svc;
    struct control ctl;
    struct log lg;
    char err[256];
    log_init(&lg, "test", LOG_LEVEL_ERROR, stderr);
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    svc.report = report_text;
    CHECK_INT(control_init(&ctl, &svc, &cfg, &lg, err, sizeof err), 0);
    svc.scenario = ctl.scenario;
    int running;
    CHECK_INT(scenario_phase(ctl.scenario, &running), -1);
    uint64_t t0 = timer_now_us();
    control_start(&ctl);
    CHECK_U64(live_delay(&svc, "/test", NULL), 1000000);
    usleep(200000);
    uint64_t gen;
    CHECK_U64(live_delay(&svc, "/test", &gen), 2000000);
    CHECK_U64(gen, 2);
    CHECK_INT(scenario_phase(ctl.scenario, &running), 0);
    CHECK_INT(running, 1);
    /* A quarter and three quarters into the ramp (300 ms + 100 and 300 ms of 400): 350 ms and
     * 850 ms, a step (40 ms = 100 ms of delay) and the scheduling late at most. */
    while (timer_now_us() - t0 < 400000)
        usleep(1000);
    uint64_t q1 = live_delay(&svc, "/test", &gen);
    if (q1 < 200000 || q1 > 360000)
        CHECK_FAIL_("a quarter into the ramp from 100 to 1100 ms: %llu µs", (unsigned long long)q1);
    CHECK(gen > 3);
    while (timer_now_us() - t0 < 600000)
        usleep(1000);
    uint64_t q3 = live_delay(&svc, "/test", &gen);
    if (q3 < 700000 || q3 > 860000)
        CHECK_FAIL_("three quarters into the ramp: %llu µs", (unsigned long long)q3);
    while (timer_now_us() - t0 < 800000)
        usleep(1000);
    CHECK_U64(live_delay(&svc, "/test", NULL), 1100000);
    while (timer_now_us() - t0 < 1000000)
        usleep(1000);
    CHECK_U64(live_delay(&svc, "/test", NULL), 1000000);
    CHECK_INT(scenario_phase(ctl.scenario, &running), 2);
    CHECK_INT(running, 0); /* its last phase began: the run is over */

    char *text = service_report(&svc, PLAN_STATS);
    cJSON *st = cJSON_Parse(text);
    free(text);
    const cJSON *sc = cJSON_GetObjectItem(st, "scenario");
    const cJSON *ph = cJSON_GetArrayItem(cJSON_GetObjectItem(sc, "phases"), 0);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(ph, "began_at")));
    CHECK_STR(cJSON_GetObjectItem(ph, "name")->valuestring, "brownout");
    cJSON_Delete(st);
    text = service_report(&svc, PLAN_METRICS);
    CHECK(strstr(text, "slowsrv_scenario_phase 2\n") != NULL);
    CHECK(strstr(text, "slowsrv_scenario_running 0\n") != NULL);
    free(text);

    /* Again from the top: phase 0 comes back at its offset. */
    scenario_start(ctl.scenario, "unit");
    CHECK_INT(scenario_phase(ctl.scenario, &running), -1);
    usleep(200000);
    CHECK_U64(live_delay(&svc, "/test", NULL), 2000000);
    scenario_stop(ctl.scenario, "unit");
    usleep(300000);
    CHECK_U64(live_delay(&svc, "/test", NULL), 2000000); /* stopped before the ramp */
    control_cleanup(&ctl);
    service_cleanup(&svc);
    free(cfg.scenario);
}

/* A phase at 0 is in force when the start returns (POST /scenario/start's answer shows it). */
static void scenario_phase_at_zero_is_in_force_at_once(void)
{
    struct config cfg = config_defaults;
    cfg.scenario = strdup("[{\"at\": \"0s\", \"name\": \"slow\", \"routes\": {\"/test\": "
                          "{\"delay\": \"3s\"}}}, {\"at\": \"10s\", \"restore\": true}]");
    cfg.scenario_manual = 1;
    struct service svc;
    struct control ctl;
    struct log lg;
    char err[256];
    int running;
    log_init(&lg, "test", LOG_LEVEL_ERROR, stderr);
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    CHECK_INT(control_init(&ctl, &svc, &cfg, &lg, err, sizeof err), 0);
    scenario_start(ctl.scenario, "unit");
    CHECK_INT(scenario_phase(ctl.scenario, &running), 0);
    CHECK_INT(running, 1);
    CHECK_U64(live_delay(&svc, "/test", NULL), 3000000);
    control_cleanup(&ctl);
    service_cleanup(&svc);
    free(cfg.scenario);
}

static double unix_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A start at an instant already past joins a ramp where it stands on the shared clock (a
 * replica that starts late is in step with the others), and a later phase that sets the route
 * ends the ramp, also when the phases are applied again. */
static void scenario_ramp_joins_late_and_ends_when_set(void)
{
    struct config cfg = config_defaults;
    cfg.scenario = strdup("[{\"at\": \"0s\", \"ramp\": {\"/test\": {\"from\": \"1s\", \"to\": "
                          "\"11s\", \"over\": \"100s\"}}},"
                          " {\"at\": \"0s\", \"ramp\": {\"/echo\": {\"from\": \"0s\", \"to\": "
                          "\"1s\", \"over\": \"1s\"}}},"
                          " {\"at\": \"50s\", \"routes\": {\"/echo\": {\"delay\": \"7s\"}}}]");
    cfg.scenario_manual = 1;
    struct service svc;
    struct control ctl;
    struct log lg;
    char err[256];
    log_init(&lg, "test", LOG_LEVEL_ERROR, stderr);
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    CHECK_INT(control_init(&ctl, &svc, &cfg, &lg, err, sizeof err), 0);
    /* Begun 40 s ago: /test is 40 % of the way from 1 s to 11 s. */
    scenario_start_at(ctl.scenario, unix_time() - 40, "unit");
    usleep(100000);
    uint64_t d = live_delay(&svc, "/test", NULL);
    if (d < 4900000 || d > 5100000)
        CHECK_FAIL_("40 s into a ramp from 1 s to 11 s over 100 s: %llu us, want about 5 s",
                    (unsigned long long)d);
    else
        check_passed++;
    CHECK_U64(live_delay(&svc, "/echo", NULL), 1000000); /* its ramp is over */
    /* Begun 60 s ago: the phase at 50 s set /echo, which its ramp of the phase at 0 s leaves. */
    scenario_start_at(ctl.scenario, unix_time() - 60, "unit");
    usleep(100000);
    CHECK_U64(live_delay(&svc, "/echo", NULL), 7000000);
    scenario_reapply(ctl.scenario, "unit");
    CHECK_U64(live_delay(&svc, "/echo", NULL), 7000000);
    control_cleanup(&ctl);
    service_cleanup(&svc);
    free(cfg.scenario);
}

int main(void)
{
    scenario_phase_at_zero_is_in_force_at_once();
    scenario_check_names_the_bad_key();
    scenario_runs_its_phases_on_time();
    scenario_ramp_joins_late_and_ends_when_set();
    return CHECK_DONE();
}
