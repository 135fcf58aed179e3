#!/usr/bin/env bash
# Runs make stages with half the CPU this machine offers, to prove that the
# tests hold on a slower machine (a laptop, a CI runner, a machine of the
# same kind on a busy day). Usage:
#
#   hack/halfcpu.sh [STAGE...]        # default: e2e e2e-kind (make e2e-halfcpu)
#
# Each stage is `make STAGE`, one after another; the first that fails ends
# the run. They and every process they start run in a cgroup of their own
# whose CPU bandwidth is HALFCPU_CPUS cores (default: half of nproc): the
# cgroup v2 cpu.max, or the v1 cpu controller's CFS quota. A cgroup, not
# taskset, because it also holds what make does not start itself: a dockerd
# that hack/kind/docker.sh starts under it puts its containers (the kind
# nodes and their pods) in the same cgroup through --cgroup-parent
# (NODEAGENT_CGROUP_PARENT). A Docker engine that already runs would not be
# held; the script says so and stops, unless HALFCPU_ALLOW_RUNNING_DOCKER=1.
#
# Each stage's time and the cgroup's CPU seconds go to
# _output/halfcpu-timings.txt and _output/halfcpu-cpu.txt (hack/stages.sh's
# format, which hack/docruns records), and at the end it prints how often
# the limit throttled the stages and for how long: a run that was never
# throttled proved nothing, and the script says that too. It needs root
# and a writable cgroup file system; where it has neither it says what to
# do.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "halfcpu: $*" >&2; }
die() { say "$*"; exit 2; }

name=nodeagent-halfcpu-$$
cpus=${HALFCPU_CPUS:-$(awk -v n="$(nproc)" 'BEGIN { print n / 2 }')}
period=100000
quota=$(awk -v c="$cpus" -v p="$period" 'BEGIN { printf "%d", c * p }')
((quota >= 1000)) || die "HALFCPU_CPUS=$cpus: want at least 0.01 of a core"
[[ $# -gt 0 ]] || set -- e2e e2e-kind
make=${MAKE:-make}
[[ $(id -u) == 0 ]] || die "moving processes into a cgroup needs root: run as root (or under sudo)"

if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  version=2 dir=/sys/fs/cgroup/$name
  grep -qw cpu /sys/fs/cgroup/cgroup.controllers || die "cgroup v2 without the cpu controller: nothing can cap the CPU here"
  echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
  mkdir "$dir" || die "cannot create $dir: is /sys/fs/cgroup mounted read-write?"
  echo "$quota $period" >"$dir/cpu.max"
elif [[ -d /sys/fs/cgroup/cpu ]]; then
  version=1 dir=/sys/fs/cgroup/cpu/$name
  mkdir "$dir" || die "cannot create $dir: is /sys/fs/cgroup/cpu mounted read-write?"
  echo "$period" >"$dir/cpu.cfs_period_us"
  echo "$quota" >"$dir/cpu.cfs_quota_us"
else
  die "no cgroup cpu controller under /sys/fs/cgroup: nothing can cap the CPU here"
fi

# usage_seconds prints the CPU seconds the cgroup has used.
usage_seconds() {
  if [[ $version == 2 ]]; then
    awk '$1 == "usage_usec" { printf "%.0f", $2 / 1e6 }' "$dir/cpu.stat"
  else
    awk '{ printf "%.0f", $1 / 1e9 }' /sys/fs/cgroup/cpuacct/"$name"/cpuacct.usage 2>/dev/null ||
      awk '{ printf "%.0f", $1 / 1e9 }' "$dir/cpuacct.usage" 2>/dev/null || echo "?"
  fi
}

# throttling prints "periods throttled of periods, seconds throttled".
throttling() {
  awk -v v="$version" '
    $1 == "nr_periods" { periods = $2 }
    $1 == "nr_throttled" { throttled = $2 }
    $1 == "throttled_usec" { seconds = $2 / 1e6 }
    $1 == "throttled_time" { seconds = $2 / 1e9 }
    END { printf "%d %d %.0f\n", throttled, periods, seconds }' "$dir/cpu.stat"
}

# remove waits for the cgroup's last process (a dockerd the command started
# may still be stopping) and removes the cgroup.
remove() {
  local procs=$dir/cgroup.procs
  for _ in $(seq 30); do
    [[ -s $procs ]] || break
    sleep 1
  done
  if [[ -s $procs ]]; then
    say "processes are still in $dir (left in place): $(tr '\n' ' ' <"$procs")"
    return
  fi
  rmdir "$dir" 2>/dev/null || true
  [[ $version == 1 ]] && rmdir /sys/fs/cgroup/cpuacct/"$name" 2>/dev/null || true
}

if docker info >/dev/null 2>&1 && [[ -z ${HALFCPU_ALLOW_RUNNING_DOCKER:-} ]]; then
  rmdir "$dir"
  die "a Docker engine already runs, outside the cgroup: its kind nodes would get the whole machine. Stop it (hack/kind/docker.sh down, if make e2e-kind started it), or set HALFCPU_ALLOW_RUNNING_DOCKER=1 to cap only the processes the command starts"
fi

# The cpuacct controller (v1) counts the CPU seconds; it may be mounted
# apart from cpu.
if [[ $version == 1 && -d /sys/fs/cgroup/cpuacct && ! /sys/fs/cgroup/cpuacct -ef /sys/fs/cgroup/cpu ]]; then
  mkdir -p /sys/fs/cgroup/cpuacct/"$name"
fi

trap remove EXIT
say "running make $* with $cpus of $(nproc) cores (cgroup v$version $dir, quota ${quota}us per ${period}us)"
timings=_output/halfcpu-timings.txt cpu=_output/halfcpu-cpu.txt
mkdir -p _output
: >"$timings"
: >"$cpu"
start=$(date +%s)
status=0
for stage in "$@"; do
  stage_start=$(date +%s) stage_cpu=$(usage_seconds)
  (
    echo "$BASHPID" >"$dir/cgroup.procs"
    [[ -d /sys/fs/cgroup/cpuacct/$name ]] && echo "$BASHPID" >/sys/fs/cgroup/cpuacct/"$name"/cgroup.procs
    export NODEAGENT_CGROUP_PARENT=/$name
    exec "$make" "$stage"
  ) || status=$?
  printf '%-32s %6ss\n' "$stage" "$(($(date +%s) - stage_start))" >>"$timings"
  printf '%-32s %6ss\n' "$stage" "$(($(usage_seconds) - stage_cpu))" >>"$cpu"
  ((status == 0)) || break
done
took=$(($(date +%s) - start))
printf '%-32s %6ss\n' total "$took" >>"$timings"
printf '%-32s %6ss\n' total "$(usage_seconds)" >>"$cpu"

read -r throttled periods throttled_seconds < <(throttling)
say "make $* exited $status after ${took}s; the stages used $(usage_seconds) CPU-seconds of the $(awk -v c="$cpus" -v t="$took" 'BEGIN { printf "%.0f", c * t }') that $cpus cores give; throttled in $throttled of $periods periods (${throttled_seconds}s)"
paste "$timings" "$cpu" | awk '{ printf "halfcpu: %-24s %6s %6s CPU\n", $1, $2, $4 }' >&2
if [[ $throttled == 0 ]]; then
  say "the limit never throttled the stages: this run proves nothing about a slower machine"
fi
exit "$status"
