#!/usr/bin/env bash
# Plays config/k8s/fleet/fleet.yaml (three replicas reading one ConfigMap) with `podman kube
# play` and checks that the fleet changes together, without a restart:
#  - the ConfigMap's volume is laid out as the kubelet lays it out (files as symlinks through
#    ..data to a timestamped folder), then updated as the kubelet updates it (a new folder,
#    ..data swapped in one rename): every replica serves the new routes and delay within 2 s,
#    and a connection held across the change is kept (its next request on it gets the new
#    delay);
#  - a scenario given in the ConfigMap with "scenario-start": "at:<3 s ahead>" begins on the
#    three replicas within 50 ms of each other (their began_at in /stats);
#  - a malformed ConfigMap changes nothing and is counted on each replica;
#  - no container restarted.
# podman 4.3 plays the Deployment as pods slowsrv-fleet-pod-0..2 sharing one volume for the
# ConfigMap, with --network none (loopback only): the checks run from a curl container in each
# pod. The Service, the PodDisruptionBudget, preStop and the probes are not played by podman.
# Needs the images of build-image.sh. Usage: tests/container/fleet-test.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ct_setup

yaml=$ct_root/config/k8s/fleet/fleet.yaml
volume=slowsrv-fleet-config
undeploy() {
    podman kube down "$yaml" >/dev/null 2>&1 || true
    podman volume rm -f "$volume" >/dev/null 2>&1 || true
}
undeploy # what a run that was killed left
log=$(mktemp)
trap 'undeploy; rm -f "$log"' EXIT

client() { # POD ARGS... : curl in the pod
    local pod=$1
    shift
    podman run --rm --pod "$pod" --entrypoint curl "$CT_CLIENT_IMAGE" -sS "$@"
}
stat_of() { # JSON-TEXT DOTTED.PATH
    /usr/bin/python3 -c 'import json,sys
v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else v[k]
print(v)' "$1" "$2"
}
now() { date +%s.%N; }

start=$(ct_now)
podman kube play --network none --replace --quiet "$yaml" >"$log" 2>&1 ||
    { cat "$log" >&2; ct_die "podman kube play $yaml failed"; }
pods=$(podman pod ps --filter name='^slowsrv-fleet-pod-[0-9]+$' --format '{{.Name}}' | sort)
[ "$(echo "$pods" | wc -l)" = 3 ] || ct_die "want 3 pods, got: $pods"
for p in $pods; do
    podman run --rm --pod "$p" "$CT_CLIENT_IMAGE" ready 8080 >/dev/null
    [ "$(client "$p" http://127.0.0.1:8080/version)" = v1 ] || ct_die "$p: /version is not v1"
done
ct_log "fleet: 3 replicas ready, each serving the ConfigMap's routes"

# The volume as the kubelet lays it out; the same bytes, so nothing is reloaded.
dir=$(podman volume inspect --format '{{.Mountpoint}}' "$volume")
[ -f "$dir/slowsrv.json" ] || ct_die "no slowsrv.json in the ConfigMap's volume $dir"
mkdir "$dir/..v1"
cp "$dir/slowsrv.json" "$dir/..v1/slowsrv.json"
ln -s ..v1 "$dir/..data"
ln -s ..data/slowsrv.json "$dir/.slowsrv.json.tmp"
mv -T "$dir/.slowsrv.json.tmp" "$dir/slowsrv.json"
version=1
update() { # JSON: the kubelet's update of the ConfigMap
    version=$((version + 1))
    mkdir "$dir/..v$version"
    printf '%s\n' "$1" >"$dir/..v$version/slowsrv.json"
    chmod -R a+rX "$dir/..v$version"
    ln -s "..v$version" "$dir/..data_tmp"
    mv -T "$dir/..data_tmp" "$dir/..data"
    rm -rf "$dir/..v$((version - 1))"
}

# Before the change: in each pod, a poller of /version and a connection held across it.
pollers=() holders=()
for p in $pods; do
    pollers+=("$(podman run -d --pod "$p" --entrypoint sh "$CT_CLIENT_IMAGE" -c \
        'n=0
         until [ "$(curl -s http://127.0.0.1:8080/version)" = v2 ] || [ $n = 300 ]; do
             sleep 0.02
             n=$((n + 1))
         done
         date +%s.%N')")
    holders+=("$(podman run -d --pod "$p" --entrypoint curl "$CT_CLIENT_IMAGE" -sS \
        -w '\n#connects %{num_connects} %{http_code}\n' -D- \
        'http://127.0.0.1:8080/test?delay=8s' http://127.0.0.1:8080/test)")
done
sleep 1
t_swap=$(now)
update '{"delay": "200ms", "routes": [{"path": "/version", "method": "GET", "body": "v2"}]}'
i=0
for id in "${pollers[@]}"; do
    podman wait "$id" >/dev/null
    seen=$(podman logs "$id")
    podman rm "$id" >/dev/null
    took=$(/usr/bin/python3 -c "print(f'{$seen - $t_swap:.3f}')")
    ct_log "fleet: replica $i serves the new ConfigMap $took s after the swap"
    /usr/bin/python3 -c "import sys; sys.exit(0 if $took < 2 else 1)" ||
        ct_die "replica $i applied the ConfigMap after $took s, want within 2 s"
    i=$((i + 1))
done
i=0
for id in "${holders[@]}"; do
    podman wait "$id" >/dev/null
    out=$(podman logs "$id" | tr -d '\r')
    podman rm "$id" >/dev/null
    # Two answers on one connection: the first kept its 8 s plan, the second has the new delay.
    grep -q '^Server-Timing: delay;dur=8000' <<<"$out" ||
        { echo "$out" >&2; ct_die "replica $i: the held request lost its plan"; }
    grep -q '^Server-Timing: delay;dur=200,' <<<"$out" ||
        { echo "$out" >&2; ct_die "replica $i: the next request has not the new delay"; }
    if [ "$(grep -c '^#connects' <<<"$out")" != 2 ] ||
        [ "$(grep '^#connects' <<<"$out" | tail -n1)" != "#connects 0 200" ]; then
        echo "$out" >&2
        ct_die "replica $i: the connection was not kept across the change"
    fi
    i=$((i + 1))
done
ct_log "fleet: connections held across the change were kept, and got the new delay"

# A scenario at one instant, 3 s ahead, on every replica.
at_epoch=$(/usr/bin/python3 -c "import time; print(f'{int((time.time() + 3) * 1000) / 1000:.3f}')")
at=$(/usr/bin/python3 -c "import datetime; print(datetime.datetime.fromtimestamp($at_epoch, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3] + 'Z')")
update "{\"delay\": \"200ms\", \"routes\": [{\"path\": \"/version\", \"method\": \"GET\", \"body\": \"v3\"}],
 \"scenario-start\": \"at:$at\",
 \"scenario\": [{\"at\": \"0s\", \"name\": \"brownout\", \"routes\": {\"/test\": {\"delay\": \"500ms\"}}}]}"
sleep "$(/usr/bin/python3 -c "import time; print(max(0, $at_epoch + 1 - time.time()))")"
began=()
for p in $pods; do
    s=$(client "$p" http://127.0.0.1:8080/stats)
    b=$(stat_of "$s" scenario.phases.0.began_at)
    [ "$b" != None ] || ct_die "$p: the scenario has not begun at $at"
    began+=("$b")
    [ "$(stat_of "$s" config.reloads.ok)" = 2 ] || ct_die "$p: want 2 reloads"
done
list=$(IFS=,; echo "${began[*]}")
spread=$(/usr/bin/python3 -c "b=[$list]; print(f'{(max(b) - min(b)) * 1000:.1f} {(min(b) - $at_epoch) * 1000:.1f}')")
ct_log "fleet: the scenario began on the 3 replicas within ${spread% *} ms of each other, ${spread#* } ms after $at"
/usr/bin/python3 -c "b=[$list]; import sys; sys.exit(0 if max(b) - min(b) <= 0.05 and min(b) >= $at_epoch else 1)" ||
    ct_die "began_at ${began[*]}: want within 50 ms of each other, not before $at"

# A malformed ConfigMap: refused, counted, nothing changed.
update '{"delay": '
for p in $pods; do
    for _ in $(seq 40); do
        s=$(client "$p" http://127.0.0.1:8080/stats)
        [ "$(stat_of "$s" config.reloads.error)" = 1 ] && break
        sleep 0.1
    done
    [ "$(stat_of "$s" config.reloads.error)" = 1 ] || ct_die "$p: the bad ConfigMap was not counted"
    [ "$(client "$p" http://127.0.0.1:8080/version)" = v3 ] || ct_die "$p: the bad ConfigMap changed the routes"
    restarts=$(podman inspect --format '{{.RestartCount}}' "$p-slowsrv")
    [ "$restarts" = 0 ] || ct_die "$p: the container restarted ($restarts)"
done
ct_log "fleet: a malformed ConfigMap was refused and counted on each replica; no restart"
ct_log "fleet.yaml: passed in $(ct_elapsed "$start") s"
