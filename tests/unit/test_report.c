/* Unit tests of report: /stats and /metrics made of what the exchanges counted. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "run/exchange_impl.h"
#include "check.h"

static void report_shows_what_the_exchanges_did(void)
{
    struct config cfg = config_defaults;
    struct service svc;
    struct exchange x;
    cfg.workers = 5;
    delay_spec_fixed(&cfg.delay, 0);
    CHECK_INT(service_init(&svc, &cfg, 2, NULL), 0);
    svc.report = report_text;
    struct route_request rq = {.method = "GET", .target = "/test", .target_len = 5};
    CHECK_INT(exchange_on_head(&x, NULL, NULL, &svc, service_shard(&svc, 1), &rq, NULL),
              EXCHANGE_DO_READ);
    CHECK_INT(exchange_next(&x), EXCHANGE_DO_HOLD); /* its worker */
    CHECK_INT(exchange_hold(&x, NULL), EXCHANGE_DO_ANSWER);
    exchange_answer(&x);
    exchange_end(&x, NULL);
    char *json = service_report(&svc, PLAN_STATS);
    cJSON *j = cJSON_Parse(json);
    CHECK_INT(cJSON_GetObjectItem(j, "answered")->valueint, 1);
    CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "workers"), "size")->valueint, 5);
    CHECK_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "workers"), "active")->valueint, 0);
    cJSON_Delete(j);
    free(json);
    char *text = service_report(&svc, PLAN_METRICS);
    CHECK(text && strstr(text, "slowsrv_requests_total{route=\"/test\",status=\"200\"} 1\n"));
    free(text);
    service_cleanup(&svc);
}

/* Without the hook, the service has no report to give. */
static void report_absent_without_the_hook(void)
{
    struct config cfg = config_defaults;
    struct service svc;
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    CHECK(service_report(&svc, PLAN_STATS) == NULL);
    service_cleanup(&svc);
}

int main(void)
{
    report_shows_what_the_exchanges_did();
    report_absent_without_the_hook();
    return CHECK_DONE();
}
