/*
 * report: what /stats (JSON) and /metrics (Prometheus text) say, made of everything below it:
 * the counters (stats.h), the service's connections, pools and live table, the control API's
 * changes and the scenario. It sits on top of the core, so that no lower module imports the
 * control API or the scenario; the service reaches it through its report hook (service.h).
 */
#ifndef SLOWSRV_REPORT_H
#define SLOWSRV_REPORT_H

#include "run/service.h"

/* The body of /stats (what = PLAN_STATS, JSON) or /metrics (PLAN_METRICS, Prometheus text): the
 * counters of every route, the worker pools added up, the connections, the live table and the
 * scenario. malloc'd, the caller frees it with free(); NULL if out of memory. Thread-safe; a
 * service_report_fn. */
char *report_text(const struct service *s, enum plan_action what);

#endif
