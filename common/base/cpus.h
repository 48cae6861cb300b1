/*
 * cpus: how many CPUs this process may really use, for the default --threads. The least of:
 *   - the CPUs online (sysconf);
 *   - the CPUs in its affinity mask (sched_getaffinity: taskset, systemd's CPUAffinity=,
 *     a container's cpuset);
 *   - its cgroup CPU quota rounded up (podman --cpus 1.5 gives 2), the smallest on the way from
 *     its own cgroup up to the root of the cgroup mount (Kubernetes' limits.cpu, systemd's
 *     CPUQuota=): cgroup v2's cpu.max "QUOTA PERIOD", or v1's cpu.cfs_quota_us over
 *     cpu.cfs_period_us.
 * No quota ("max", -1, no cgroup files) does not count. No thread, no state.
 */
#ifndef SLOWSRV_CPUS_H
#define SLOWSRV_CPUS_H

#include <stddef.h>

/* What limited the count, for the startup line. */
struct cpus_limit {
    unsigned online;     /* CPUs online */
    unsigned affinity;   /* CPUs in the affinity mask, 0 if unknown */
    unsigned quota;      /* cpu.max rounded up, 0 if none */
    char quota_text[64]; /* "cpu.max 100000/100000" as read, when quota */
};

/* Returns the CPUs the process may use (>= 1) and, in *lim, what each source said.
 * `cgroup_file` is /proc/self/cgroup and `cgroup_mount` /sys/fs/cgroup (others in tests);
 * NULL for either leaves the quota out. */
unsigned cpus_usable(struct cpus_limit *lim, const char *cgroup_file, const char *cgroup_mount);

/* Says in buf what set the count: "cpu.max 150000/100000", "affinity 1 of 2 CPUs", or
 * "2 CPUs online". */
void cpus_describe(const struct cpus_limit *lim, unsigned n, char *buf, size_t len);

#endif
