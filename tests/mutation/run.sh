#!/usr/bin/env bash
# Mutation check: does the test suite notice when the code is wrong?
#
#   tests/mutation/run.sh [--jobs N] [--sample] [--only ID...] [--timeout SECS]
#                         [--min-score PCT] [--dir DIR] [--list FILE] [--check]
#
# Each mutation of tests/mutation/mutations.txt changes one line of common/ or servers/. For each
# one, a copy of the source tree (tracked and untracked files, not build folders) gets the
# change, is rebuilt (-DSLOWSRV_WERROR=ON) and tested: the unit tests, then the integration
# tests without the soak (ctest -j2 --stop-on-failure; a test fails when it fails twice in a
# row). A mutant is
#   killed    a test failed or timed out (good: the suite saw the bug)
#   survived  every test passed (a gap in the suite, or an equivalent mutant)
#   invalid   it does not build (fix the mutation)
#   stale     its original text is not in the file exactly once (fix the mutation)
# The unmutated tree is built and tested first; a red baseline aborts the run.
#
#   --jobs N        mutants tested at once, each in its own copy and build folder (1; the
#                   integration tests have timing windows, keep it low on a small machine)
#   --sample        only the ten "@sample" mutants (CI); exit 1 if any is not killed
#   --only ID...    only these mutants (IDs up to the next option)
#   --timeout SECS  time limit of one mutant's test run (600); each test gets at most 120 s
#   --min-score PCT exit 1 below this score, killed / (killed + survived) (90)
#   --dir DIR       scratch folder (build-mutation at the root; logs in DIR/logs)
#   --list FILE     another list of mutations (tests/mutation/mutations.txt)
#   --check         only check that every selected mutation applies (no build, no test)
#
# Exit status: 0 score reached (--sample: every sample mutant killed), 1 not reached or a
# mutation is invalid or stale, 2 bad usage, missing tool or red baseline.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
list=$here/mutations.txt
scratch=$root/build-mutation
jobs=1
sample=0
check=0
timeout_s=600
test_timeout=120
min_score=90
only=()

die() { # die STATUS MESSAGE
    echo "mutation: $2" >&2
    exit "$1"
}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

is_count() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }

while [ $# -gt 0 ]; do
    case $1 in
    --jobs)
        { [ $# -ge 2 ] && is_count "$2"; } || die 2 "--jobs wants a whole number above 0"
        jobs=$2
        shift 2
        ;;
    --sample)
        sample=1
        shift
        ;;
    --only)
        shift
        while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do
            IFS=', ' read -r -a ids <<<"$1"
            only+=("${ids[@]}")
            shift
        done
        [ ${#only[@]} -gt 0 ] || die 2 "--only wants at least one mutation id"
        ;;
    --timeout)
        { [ $# -ge 2 ] && is_count "$2"; } || die 2 "--timeout wants a number of seconds above 0"
        timeout_s=$2
        shift 2
        ;;
    --min-score)
        { [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -le 100 ]; } ||
            die 2 "--min-score wants a percentage from 0 to 100"
        min_score=$2
        shift 2
        ;;
    --dir)
        [ $# -ge 2 ] || die 2 "--dir wants a folder"
        mkdir -p "$2"
        scratch=$(cd "$2" && pwd)
        shift 2
        ;;
    --list)
        { [ $# -ge 2 ] && [ -f "$2" ]; } || die 2 "--list wants a file"
        list=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
        shift 2
        ;;
    --check)
        check=1
        shift
        ;;
    -h | --help) usage ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
    esac
done
[ "$sample" = 0 ] || [ ${#only[@]} -eq 0 ] || die 2 "--sample and --only exclude each other"
[ "$test_timeout" -le "$timeout_s" ] || test_timeout=$timeout_s

for tool in git cmake ctest tar timeout flock awk; do
    command -v "$tool" >/dev/null || die 2 "$tool not found (./dev deps installs the build tools)"
done

# ---- the list -------------------------------------------------------------------------------

ids=()
files=()
origs=()
repls=()
descs=()
sample_ids=()
declare -A index_of=()
sep=' ||| '
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    case $line in
    '' | '#'*) continue ;;
    '@sample '*)
        read -r -a more <<<"${line#@sample }"
        sample_ids+=("${more[@]}")
        continue
        ;;
    esac
    rest=$line
    fields=()
    while [[ $rest == *"$sep"* ]]; do
        fields+=("${rest%%"$sep"*}")
        rest=${rest#*"$sep"}
    done
    fields+=("$rest")
    [ ${#fields[@]} -eq 5 ] ||
        die 2 "$list:$lineno: want 5 fields separated by '$sep', found ${#fields[@]}"
    id=${fields[0]}
    [[ $id =~ ^[A-Za-z0-9_-]+$ ]] || die 2 "$list:$lineno: bad id '$id' (letters, digits, - and _)"
    [ -z "${index_of[$id]+x}" ] || die 2 "$list:$lineno: id $id is used twice"
    [[ ${fields[1]} != /* && ${fields[1]} != *..* ]] ||
        die 2 "$list:$lineno: $id: the file must be a path inside the tree"
    [ -n "${fields[2]}" ] || die 2 "$list:$lineno: $id: empty original text"
    [ "${fields[2]}" != "${fields[3]}" ] || die 2 "$list:$lineno: $id: replacement equals original"
    index_of[$id]=${#ids[@]}
    ids+=("$id")
    files+=("${fields[1]}")
    origs+=("${fields[2]}")
    repls+=("${fields[3]}")
    descs+=("${fields[4]}")
done <"$list"
[ ${#ids[@]} -gt 0 ] || die 2 "$list: no mutations"

selected=()
if [ "$sample" = 1 ]; then
    [ ${#sample_ids[@]} -gt 0 ] || die 2 "$list: no '@sample' line"
    only=("${sample_ids[@]}")
fi
if [ ${#only[@]} -gt 0 ]; then
    for id in "${only[@]}"; do
        [ -n "${index_of[$id]+x}" ] || die 2 "no mutation '$id' in $list"
        selected+=("${index_of[$id]}")
    done
else
    for i in "${!ids[@]}"; do selected+=("$i"); done
fi

# How often the text $2 occurs in the file $1 (the texts are one line long).
count_in() {
    NEEDLE=$2 awk 'BEGIN { s = ENVIRON["NEEDLE"]; n = 0 }
        { line = $0; while ((i = index(line, s)) > 0) { n++; line = substr(line, i + length(s)) } }
        END { print n }' "$1"
}

# Replaces the first occurrence of $2 by $3 in the file $1.
apply_in() {
    NEEDLE=$2 REPL=$3 awk 'BEGIN { s = ENVIRON["NEEDLE"]; r = ENVIRON["REPL"]; done = 0 }
        !done && (i = index($0, s)) > 0 {
            $0 = substr($0, 1, i - 1) r substr($0, i + length(s)); done = 1 }
        { print }' "$1" >"$1.mutant"
    cat "$1.mutant" >"$1"
    rm -f "$1.mutant"
}

# Prints "" if mutation $2 applies once to the tree at $1, else why not.
why_stale() {
    local f=$1/${files[$2]} n
    [ -f "$f" ] || {
        echo "no file ${files[$2]}"
        return
    }
    n=$(count_in "$f" "${origs[$2]}")
    [ "$n" = 1 ] || echo "original text found $n times in ${files[$2]}"
}

if [ "$check" = 1 ]; then
    bad=0
    for i in "${selected[@]}"; do
        why=$(why_stale "$root" "$i")
        if [ -n "$why" ]; then
            printf 'stale    %-5s %s\n' "${ids[$i]}" "$why"
            bad=1
        fi
    done
    [ "$bad" = 0 ] && echo "mutation: ${#selected[@]} mutations apply to the working tree"
    exit "$bad"
fi

# ---- copies, builds, test runs --------------------------------------------------------------

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true # the integration tests open ~2000 connections
tree=$scratch/tree
logs=$scratch/logs
results=$scratch/results
rm -rf "$tree" "$logs" "$scratch"/slot-* "$scratch"/queue*
mkdir -p "$tree" "$logs"
: >"$results"

# The tree as it is now, uncommitted work included, build folders (ignored files) left out: the
# run does not see edits made in the working tree while it goes on.
(
    cd "$root"
    rel=${scratch#"$root"/}
    git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
        [ -e "$f" ] || continue # deleted, not yet committed
        [ "$rel" != "$scratch" ] && [[ $f == "$rel"/* ]] && continue
        printf '%s\0' "$f"
    done | tar --null -T - -cf -
) | tar -C "$tree" -xf - || die 2 "cannot copy the source tree into $tree"

build_slot() { # build_slot K LOG
    local dir=$scratch/slot-$1
    mkdir -p "$dir/src"
    cp -a "$tree/." "$dir/src/"
    {
        cmake -S "$dir/src" -B "$dir/build" -DSLOWSRV_WERROR=ON &&
            cmake --build "$dir/build" -j"$(nproc)"
    } >"$2" 2>&1
}

cur_pid=
# Runs ctest in the build folder $1 with the arguments after it, under the time left of the
# mutant's budget (deadline in $deadline, seconds since the epoch); output appended to $log.
run_ctest() {
    local build=$1 left
    shift
    left=$((deadline - $(date +%s)))
    [ "$left" -gt 0 ] || return 124
    # timeout runs ctest in a process group of its own and signals all of it; it is waited in
    # the background so that an interrupted run can stop it (see the trap in worker).
    # A test fails when it fails twice in a row: the integration tests have timing windows that
    # a loaded machine can miss once, a mutant misses them every time.
    (cd "$build" && exec timeout -k 10 "$left" ctest -j2 --timeout "$test_timeout" \
        --repeat until-pass:2 --stop-on-failure --output-on-failure --no-tests=error "$@") \
        >>"$log" 2>&1 &
    cur_pid=$!
    local rc=0
    wait "$cur_pid" || rc=$?
    cur_pid=
    return "$rc"
}

# Runs the suite in the build folder $1 with output to $2. Returns 0 when every test passed,
# else 1 with the first test that failed in $first_fail ("timeout ..." when the time limit cut
# the run). Not to be run in a subshell: the worker's trap must see $cur_pid.
first_fail=
run_suite() {
    local build=$1 rc=0
    log=$2
    first_fail=
    deadline=$(($(date +%s) + timeout_s))
    : >"$log"
    run_ctest "$build" -R '^unit\.' || rc=$?
    [ "$rc" != 0 ] || run_ctest "$build" -E '^unit\.|soak|^systemd\.' || rc=$?
    [ "$rc" = 0 ] && return 0
    first_fail=$(awk '/Test +#[0-9]+: / && /\*\*\*|Failed/ {
            for (i = 1; i < NF; i++) if ($i ~ /^#[0-9]+:$/) { print $(i + 1); exit } }' "$log")
    if [ -n "$first_fail" ]; then
        :
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        first_fail="timeout after ${timeout_s}s"
    else
        first_fail="ctest exit $rc"
    fi
    return 1
}

report() { # report STATUS INDEX DETAIL
    local i=$2
    printf '%-8s %-5s %-22s %s -> %s  (%s)\n' "$1" "${ids[$i]}" "${files[$i]}" "${origs[$i]}" \
        "${repls[$i]}" "$3"
    printf '%s\t%s\t%s\n' "$1" "$i" "$3" >>"$results"
}

test_mutant() { # test_mutant SLOT INDEX
    local i=$2 src=$scratch/slot-$1/src build=$scratch/slot-$1/build id=${ids[$2]} why
    local f=$src/${files[$2]}
    why=$(why_stale "$src" "$i")
    if [ -n "$why" ]; then
        report stale "$i" "$why"
        return
    fi
    apply_in "$f" "${origs[$i]}" "${repls[$i]}"
    if ! cmake --build "$build" -j"$(nproc)" >"$logs/$id.build.log" 2>&1; then
        report invalid "$i" "build failed: $logs/$id.build.log"
    elif run_suite "$build" "$logs/$id.test.log"; then
        report survived "$i" "every test passed"
    else
        report killed "$i" "by $first_fail"
    fi
    cp "$tree/${files[$i]}" "$f" # newer than the mutant's objects: the next build recompiles it
}

# Takes the next mutant off the queue file; prints its index, or nothing when it is empty.
next_mutant() {
    (
        flock 9
        local i
        i=$(head -n 1 "$scratch/queue")
        [ -z "$i" ] || sed -i 1d "$scratch/queue"
        echo "$i"
    ) 9>"$scratch/queue.lock"
}

worker() { # worker SLOT
    trap '[ -z "$cur_pid" ] || kill -TERM "$cur_pid" 2>/dev/null; exit 130' TERM INT
    local i
    while i=$(next_mutant) && [ -n "$i" ]; do
        test_mutant "$1" "$i"
    done
}

started=$(date +%s)
echo "mutation: ${#selected[@]} mutants, $jobs job(s); copies, builds and logs in $scratch"
n_slots=$jobs
[ "$n_slots" -le ${#selected[@]} ] || n_slots=${#selected[@]}

pids=()
# shellcheck disable=SC2317 # called by the trap below
stop() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    [ -z "$cur_pid" ] || kill -TERM "$cur_pid" 2>/dev/null || true
    wait
    die 130 "interrupted"
}
trap stop INT TERM

echo "mutation: building $n_slots copy(ies) of the unmutated tree"
for k in $(seq 1 "$n_slots"); do
    build_slot "$k" "$logs/slot-$k.build.log" &
    pids+=("$!")
done
for k in $(seq 1 "$n_slots"); do
    wait "${pids[$((k - 1))]}" ||
        die 2 "the unmutated tree does not build: see $logs/slot-$k.build.log"
done
pids=()

echo "mutation: baseline: testing the unmutated tree"
if ! run_suite "$scratch/slot-1/build" "$logs/baseline.test.log"; then
    die 2 "baseline: the unmutated tree fails ($first_fail; see $logs/baseline.test.log): fix it \
first, a red baseline makes every mutant look killed"
fi
echo "mutation: baseline passes ($(($(date +%s) - started)) s so far)"

printf '%s\n' "${selected[@]}" >"$scratch/queue"
for k in $(seq 1 "$n_slots"); do
    worker "$k" &
    pids+=("$!")
done
wait "${pids[@]}" || true
trap - INT TERM

# ---- summary --------------------------------------------------------------------------------

count() { awk -F '\t' -v s="$1" '$1 == s { n++ } END { print n + 0 }' "$results"; }
killed=$(count killed)
survived=$(count survived)
invalid=$(count invalid)
stale=$(count stale)
tested=$((killed + survived))
elapsed=$(($(date +%s) - started))
echo
echo "mutation: $killed killed, $survived survived, $invalid invalid, $stale stale" \
    "in $((elapsed / 60)) min $((elapsed % 60)) s"
status=0
if [ "$tested" -gt 0 ]; then
    echo "mutation: score $((killed * 100 / tested))% ($killed / $tested; minimum $min_score%)"
    [ $((killed * 100)) -ge $((min_score * tested)) ] || status=1
else
    echo "mutation: no mutant was tested"
    status=1
fi
for s in survived invalid stale; do
    awk -F '\t' -v s="$s" '$1 == s { print $2 }' "$results" | sort -n | while read -r i; do
        printf '  %-8s %-5s %s: %s\n' "$s" "${ids[$i]}" "${files[$i]}" "${descs[$i]}"
    done
done
[ "$invalid" = 0 ] && [ "$stale" = 0 ] || status=1
if [ "$sample" = 1 ] && [ "$killed" != ${#selected[@]} ]; then
    echo "mutation: a sample mutant was not killed: the suite lost a check it had" >&2
    status=1
fi
[ $((killed + survived + invalid + stale)) = ${#selected[@]} ] || {
    echo "mutation: only $((killed + survived + invalid + stale)) of ${#selected[@]} mutants ran" >&2
    status=1
}
exit "$status"
