#!/usr/bin/env bash
# `make e2e`: the end-to-end tests of test/e2e, split into E2E_SHARDS
# processes that run at once, each with its own local control plane.
#
# Most of an e2e test's time is waiting: for pods to sync, for a TTL to
# pass, for a measurement window to end. Tests inside one process run one
# after another on one control plane, so a test that reads the apiserver's
# own counters (GET/s, etcd reads, watches) sees only its own requests; a
# shard is such a process. The shards share the machine's cores and
# nothing else: not the apiserver, not etcd, not a port or a directory.
#
# Tests are dealt to shards longest first, each to the shard with the least
# work so far, by the seconds test/e2e/durations.txt records for them (a
# test it does not know counts as 10 s). A shard's log is
# _output/e2e/shard-N.log; the console shows each test's result as it comes
# and, for a shard that failed, the end of its log. The run's seconds per
# test are written to _output/e2e/durations.txt, to refresh the committed
# file with when the suite changes.
#
# Environment: E2E_SHARDS (3), E2E_TIMEOUT (45m, per shard), E2E_RUN (a
# -run pattern: only those tests, in one process, output as go test -v
# prints it).
set -euo pipefail
cd "$(dirname "$0")/.."

out=_output/e2e
shards=${E2E_SHARDS:-3}
timeout=${E2E_TIMEOUT:-45m}
mkdir -p "$out"

if [[ -n "${E2E_RUN:-}" ]]; then
  exec go test -tags e2e -count=1 -timeout "$timeout" -v -run "$E2E_RUN" ./test/e2e/
fi

echo "e2e: building the test binary"
go test -tags e2e -c -o "$out/e2e.test" ./test/e2e/
binary=$(pwd)/$out/e2e.test

# deal prints one line per shard: its tests, as a -run alternation.
deal() {
  "$binary" -test.list '.*' | grep '^Test' |
    awk 'NR == FNR { if ($1 !~ /^#/) seconds[$1] = $2; next }
         { print (($1 in seconds) ? seconds[$1] : 10), $1 }' test/e2e/durations.txt - |
    sort -k1,1nr -k2,2 |
    awk -v n="$shards" '
      { min = 0
        for (i = 1; i < n; i++) if (load[i] < load[min]) min = i
        load[min] += $1; tests[min] = tests[min] (tests[min] == "" ? "" : "|") $2 }
      END { for (i = 0; i < n; i++) printf "%d %s\n", load[i], tests[i] }'
}

start=$(date +%s)
pids=()
i=0
while read -r expected tests; do
  [[ -n "$tests" ]] || continue
  log="$out/shard-$i.log"
  echo "e2e: shard $i, about ${expected}s: ${tests//|/ }"
  # go test runs a package's tests in its directory; so does each shard.
  (cd test/e2e && exec "$binary" -test.run "^($tests)\$" -test.count 1 -test.timeout "$timeout" -test.v) >"$log" 2>&1 &
  pids+=($!)
  i=$((i + 1))
done < <(deal)

# Each test's result as it comes, from every shard's log.
tail -q -n +1 -F $(seq -f "$out/shard-%g.log" 0 $((${#pids[@]} - 1))) 2>/dev/null |
  grep -a --line-buffered -E '^(--- (PASS|FAIL|SKIP)|panic:)' &
follower=$!

failed=()
for n in "${!pids[@]}"; do
  wait "${pids[$n]}" || failed+=("$n")
done
sleep 1
kill "$follower" 2>/dev/null || true

grep -a -h -E '^--- (PASS|FAIL): Test' "$out"/shard-*.log | sed -E 's/^--- [A-Z]+: (Test[^ ]*) \(([0-9.]+)s\)/\1 \2/' |
  sort -k2,2nr >"$out/durations.txt" || true

for n in "${failed[@]}"; do
  echo "=== e2e: shard $n failed; the end of $out/shard-$n.log:"
  tail -n 150 "$out/shard-$n.log"
done
echo "e2e: ${#pids[@]} shards in $(($(date +%s) - start))s; seconds per test in $out/durations.txt"
[[ ${#failed[@]} == 0 ]]
