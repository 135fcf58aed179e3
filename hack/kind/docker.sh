#!/usr/bin/env bash
# Makes sure a Docker engine runs for `make e2e-kind`, and stops the one it
# started. Usage:
#
#   hack/kind/docker.sh up      # exit 0: an engine answers; 3: this machine cannot have one (says why)
#   hack/kind/docker.sh down    # stops the engine `up` started, if it started one
#   hack/kind/docker.sh can     # exit 0 if `up` could succeed here, 3 (says why) if not; changes nothing
#
# `up` uses a running engine as it is. Where none runs and we are root on a
# Debian-like system, it installs Debian's docker.io if dockerd is missing and
# starts dockerd by hand (no systemd is assumed), logging to
# _output/kind/docker/dockerd.log. Where this machine's capability bounding
# set lacks capabilities that privileged containers ask for (kind's nodes are
# privileged), dockerd gets capdrop-runc as its default runtime; see
# capdrop-runc/main.go. Where NODEAGENT_CGROUP_PARENT names a cgroup (make
# e2e-halfcpu's, hack/halfcpu.sh), dockerd puts its containers under it, so
# that the cgroup's CPU limit holds the kind nodes too. `down` stops that dockerd, removes the networks it
# made, and puts back the iptables rules as they were before `up`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
state="$root/_output/kind/docker"

say() { echo "docker.sh: $*" >&2; }
cannot() { say "$*"; exit 3; }

# missing_capabilities prints how many capabilities the kernel has that the
# bounding set lacks.
missing_capabilities() {
  local last bounding
  last=$(cat /proc/sys/kernel/cap_last_cap)
  bounding=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
  local missing=0 bit
  for ((bit = 0; bit <= last; bit++)); do
    ((bounding >> bit & 1)) || missing=$((missing + 1))
  done
  echo "$missing"
}

# can exits 3, saying why, where up would: no engine answers, and this
# machine cannot start one.
can() {
  if docker info >/dev/null 2>&1; then
    return 0
  fi
  if [[ $(id -u) != 0 ]]; then
    cannot "no Docker engine answers (docker info), and starting one needs root: start Docker, or run as root"
  fi
  command -v dockerd >/dev/null || command -v apt-get >/dev/null ||
    cannot "no Docker engine, and no apt-get to install Debian's docker.io: install Docker and run again"
}

up() {
  can
  if docker info >/dev/null 2>&1; then
    return 0
  fi
  if ! command -v dockerd >/dev/null; then
    say "installing Debian's docker.io (dockerd is missing)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >"$root/_output/apt-docker.log" 2>&1 \
      || cannot "apt-get install docker.io failed; see _output/apt-docker.log"
  fi
  command -v docker >/dev/null || cannot "dockerd is installed but the docker client is not"
  mkdir -p "$state"
  local args=(--pidfile "$state/dockerd.pid")
  if [[ $(missing_capabilities) -gt 0 ]]; then
    say "this machine's capability bounding set lacks $(missing_capabilities) of the kernel's capabilities: privileged containers go through capdrop-runc"
    (cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$state/capdrop-runc" ./capdrop-runc)
    args+=(--add-runtime "capdrop=$state/capdrop-runc" --default-runtime capdrop)
  fi
  if [[ -n "${NODEAGENT_CGROUP_PARENT:-}" ]]; then
    say "containers go under the cgroup $NODEAGENT_CGROUP_PARENT"
    args+=(--cgroup-parent "$NODEAGENT_CGROUP_PARENT")
  fi
  iptables-save >"$state/iptables.before" 2>/dev/null || true
  ip6tables-save >"$state/ip6tables.before" 2>/dev/null || true
  say "starting dockerd (log: _output/kind/docker/dockerd.log)"
  setsid dockerd "${args[@]}" >"$state/dockerd.log" 2>&1 </dev/null &
  echo $! >"$state/started"
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && return 0
    kill -0 "$(cat "$state/started")" 2>/dev/null || break
    sleep 1
  done
  tail -20 "$state/dockerd.log" >&2
  down
  cannot "dockerd did not come up; its log is above"
}

down() {
  [[ -f "$state/started" ]] || return 0
  local pid
  pid=$(cat "$state/started")
  docker network rm kind >/dev/null 2>&1 || true
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # dockerd leaves its chains and its bridge behind; put the rules back as
  # they were before it started.
  [[ -s "$state/iptables.before" ]] && iptables-restore <"$state/iptables.before" || true
  [[ -s "$state/ip6tables.before" ]] && ip6tables-restore <"$state/ip6tables.before" || true
  ip link delete docker0 >/dev/null 2>&1 || true
  rm -f "$state/started" "$state/iptables.before" "$state/ip6tables.before"
  say "stopped the dockerd it had started"
}

case "${1:-}" in
up) up ;;
down) down ;;
can) can ;;
*) echo "usage: $0 up|down|can" >&2; exit 2 ;;
esac
