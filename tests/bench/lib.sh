# Helpers shared by the bench_*.sh scripts (sourced, not run): also rss_kib and sampler (the
# RSS of a server's processes while it runs). They use the caller's globals:
# QUIET_WAIT, QUIET_MAX, CLK_TCK (wait_quiet), the `live` array and STOP_TERM_OK (stop_pid),
# $tmp (child_cpu_us).
# shellcheck shell=bash disable=SC2154,SC2034

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# The host is shared: a build or test suite started by someone else during a run skews it.
# sys_busy: busy ticks of all CPUs (user+nice+system+irq+softirq, /proc/stat).
# Before each run wait (up to QUIET_WAIT s) for a second with < QUIET_MAX % busy; after it,
# "other CPU %" = (all busy - server - load tool) / run time; above OTHER_MAX the run is
# repeated (up to TRIES attempts; the noisy output is kept as *.noisyN).
# Steal (time the hypervisor ran something else while a virtual CPU had work) is not another
# process's work and is kept apart: cpu_steal N sets STEAL to CPU N's steal ticks.
SYS_BUSY=0
sys_busy() {
    local _c user nice system _idle _iowait irq softirq _rest
    read -r _c user nice system _idle _iowait irq softirq _rest </proc/stat
    SYS_BUSY=$((user + nice + system + irq + softirq))
}
STEAL=0
cpu_steal() { # cpu
    local c _user _nice _system _idle _iowait _irq _softirq steal _rest
    while read -r c _user _nice _system _idle _iowait _irq _softirq steal _rest; do
        [[ $c == "cpu$1" ]] && { STEAL=$steal; return 0; }
    done </proc/stat
    STEAL=0
}
wait_quiet() {
    local b0 i
    for ((i = 0; i < QUIET_WAIT; i++)); do
        sys_busy; b0=$SYS_BUSY
        sleep 1
        sys_busy
        # % of one CPU: ticks in 1 s * 100 / CLK_TCK
        (((SYS_BUSY - b0) * 100 / CLK_TCK < QUIET_MAX)) && return 0
        ((i == 0)) && log "host busy ($(((SYS_BUSY - b0) * 100 / CLK_TCK)) % of a CPU), waiting up to ${QUIET_WAIT}s for quiet"
    done
    log "host still busy after ${QUIET_WAIT}s; measuring anyway (see other_cpu_pct)"
}

# Names of servers that have no SIGTERM handler, so that SIGTERM ends them with status 143,
# which is then no news (the caller sets it, e.g. STOP_TERM_OK="gin").
STOP_TERM_OK=${STOP_TERM_OK:-}
stop_pid() { # pid name: SIGTERM, wait up to 10 s, then SIGKILL
    local pid=$1 name=$2 i rc
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; unset "live[$pid]"; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        log "$name (pid $pid) did not exit 10 s after SIGTERM; SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rc=0; wait "$pid" 2>/dev/null || rc=$?
    ((rc == 0)) || { ((rc == 143)) && [[ " $STOP_TERM_OK " == *" $name "* ]]; } ||
        log "note: $name (pid $pid) exited with status $rc after SIGTERM"
    unset "live[$pid]"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

child_cpu_us() { # sets CHILD_US: CPU (user+sys) of this script's reaped children so far, µs
    # bash `times`, run in this shell (not in $(…): a subshell has its own children)
    local l="" line t s=0 m sec
    times >"$tmp/times"
    while read -r line; do l=$line; done <"$tmp/times"   # last line: children user, sys
    for t in $l; do   # "XmY.YYYs" (3 decimals)
        m=${t%%m*}; sec=${t#*m}; sec=${sec%s}
        s=$((s + m * 60000000 + 10#${sec%.*} * 1000000 + 10#${sec#*.} * 1000))
    done
    CHILD_US=$s
}

rss_kib() { # sum of VmRSS over pids
    local p k v _ s=0
    for p; do
        while read -r k v _; do
            [[ $k == VmRSS: ]] && { s=$((s + v)); break; }
        done <"/proc/$p/status" 2>/dev/null || true
    done
    echo "$s"
}

sampler() { # outfile stopfile pids...: max RSS every 0.1 s until stopfile disappears
    local out=$1 stop=$2 max=0 s
    shift 2
    while [[ -e $stop ]]; do
        s=$(rss_kib "$@")
        ((s > max)) && { max=$s; echo "$max" >"$out"; }
        sleep 0.1
    done
}
