#!/usr/bin/env bash
# What a run took of the machine besides time: the most memory in use at
# once, and the disk its caches and outputs hold at the end. hack/stages.sh
# runs it around `make test`, so that docs/development.md can say what the
# suite needs from a record, not from a guess.
#
#   hack/resources.sh sample FILE    # until killed: every 5 s, the memory
#                                    # in use (MemTotal - MemAvailable, MiB)
#                                    # if above FILE's, into FILE
#   hack/resources.sh report FILE OUT
#                                    # OUT: JSON with FILE's peak and the
#                                    # disk that each of the Go module
#                                    # cache, the Go build cache, _output
#                                    # and Docker's data root holds (GiB)
#
# Memory in use is the machine's, not the run's alone: on a machine that
# runs nothing else, as CI's, it is what the run needs. MemAvailable
# leaves out the page cache the kernel can drop, so the figure is memory
# the run held, not what it read.
set -euo pipefail
cd "$(dirname "$0")/.."

in_use_mib() {
  awk '$1 == "MemTotal:" { total = $2 } $1 == "MemAvailable:" { available = $2 }
       END { printf "%d\n", (total - available) / 1024 }' /proc/meminfo
}

# gib prints the GiB a directory holds, 0 for one that does not exist.
gib() {
  local kib=0
  [[ -d $1 ]] && kib=$(du -sk "$1" 2>/dev/null | awk '{ print $1 }')
  awk -v k="${kib:-0}" 'BEGIN { printf "%.1f", k / 1048576 }'
}

case ${1:-} in
sample)
  file=$2
  echo 0 >"$file"
  while :; do
    now=$(in_use_mib)
    (( now > $(<"$file") )) && echo "$now" >"$file.new" && mv "$file.new" "$file"
    sleep 5
  done
  ;;
report)
  file=$2 out=$3
  # docker info prints an empty line when no daemon answers: the default
  # root then (the kind stage stops the daemon it started).
  docker_root=$(docker info --format '{{.DockerRootDir}}' 2>/dev/null) || docker_root=""
  [[ -n $docker_root && -d $docker_root ]] || docker_root=/var/lib/docker
  modcache=$(gib "$(go env GOMODCACHE)") gocache=$(gib "$(go env GOCACHE)") output=$(gib _output) docker=$(gib "$docker_root")
  cat >"$out" <<EOF
{
  "peak_memory_gib": $(awk -v m="$(<"$file")" 'BEGIN { printf "%.1f", m / 1024 }'),
  "memory_total_gib": $(awk '$1 == "MemTotal:" { printf "%.1f", $2 / 1048576 }' /proc/meminfo),
  "disk_gib": {
    "go_module_cache": $modcache,
    "go_build_cache": $gocache,
    "output": $output,
    "docker": $docker,
    "total": $(awk -v a="$modcache" -v b="$gocache" -v c="$output" -v d="$docker" 'BEGIN { printf "%.1f", a + b + c + d }')
  }
}
EOF
  ;;
*)
  echo "usage: hack/resources.sh sample FILE | report FILE OUT" >&2
  exit 2
  ;;
esac
