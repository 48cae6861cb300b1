#include <cjson/cJSON.h>
#include <stdlib.h>

#include "../../common/exchange.h"
#include "../../common/service.h"
#include "check.h"

static void service_reports_what_its_exchanges_did(void)
{
    struct config cfg = config_defaults;
    struct service svc;
    struct exchange x;
    cfg.workers = 5;
    delay_spec_fixed(&cfg.delay, 0);
    CHECK_INT(service_init(&svc, &cfg, 2, NULL), 0);
    struct route_request rq = {.method = "GET", .target = "/test", .target_len = 5};
    CHECK_INT(exchange_on_head(&x, &svc.routes, service_shard(&svc, 1), &rq, NULL),
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

/* --max-requests 3: the third request of a connection is its last; 0 never ends one. */
static void service_counts_requests_per_connection(void)
{
    struct config cfg = config_defaults;
    struct service svc;
    unsigned n = 0;
    cfg.max_requests = 3;
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    CHECK_INT(service_request_on_connection(&svc, &n), 0);
    CHECK_INT(service_request_on_connection(&svc, &n), 0);
    CHECK_INT(service_request_on_connection(&svc, &n), 1);
    CHECK_INT(n, 3);
    service_cleanup(&svc);
    cfg.max_requests = 0;
    CHECK_INT(service_init(&svc, &cfg, 1, NULL), 0);
    for (n = 0; n < 1000;)
        CHECK_INT(service_request_on_connection(&svc, &n), 0);
    service_cleanup(&svc);
}

int main(void)
{
    service_counts_requests_per_connection();
    service_reports_what_its_exchanges_did();
    return CHECK_DONE();
}
