#!/usr/bin/env bash
# A Docker engine of the project's own, for building the stack's images and running the stack test:
# Debian's dockerd, started as root without systemd, with its own data root (under the tools cache,
# so built images stay from one run to the next), exec root, pid file and socket.
#
#   scripts/dockerd.sh start   starts it unless it already answers; prints DOCKER_HOST=... and
#                              "started PID" or "running PID" on the last line
#   scripts/dockerd.sh stop    stops the engine of the pid file by PID (TERM, then KILL after 30 s)
#   scripts/dockerd.sh env     prints DOCKER_HOST=...
set -euo pipefail
TOOLS_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/lakefs-gc
DATA_ROOT=${LAKEFS_GC_DOCKER_DATA_ROOT:-$TOOLS_CACHE/docker}
RUN_DIR=${LAKEFS_GC_DOCKER_RUN_DIR:-/run/lakefs-gc-docker}
SOCK=$RUN_DIR/docker.sock
PIDFILE=$RUN_DIR/dockerd.pid
LOG=$TOOLS_CACHE/dockerd.log
export DOCKER_HOST=unix://$SOCK

die() { echo "dockerd.sh: $*" >&2; exit 1; }
alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

case "${1:-}" in
  env) echo "DOCKER_HOST=$DOCKER_HOST" ;;
  start)
    command -v dockerd >/dev/null 2>&1 || die "dockerd not found: apt-get install docker.io (scripts/setup.sh --stack does), and re-run"
    command -v docker >/dev/null 2>&1 || die "docker (the client) not found: apt-get install docker.io"
    [ "$(id -u)" = 0 ] || die "dockerd needs root here (no rootless set-up)"
    echo "DOCKER_HOST=$DOCKER_HOST"
    if alive && answers; then echo "running $(cat "$PIDFILE")"; exit 0; fi
    mkdir -p "$DATA_ROOT" "$RUN_DIR" "$(dirname "$LOG")"
    rm -f "$SOCK"
    # setsid: the engine outlives this script's process group; it is stopped by PID (stop)
    setsid dockerd --data-root "$DATA_ROOT" --exec-root "$RUN_DIR/exec" --pidfile "$PIDFILE" \
      -H "unix://$SOCK" --log-level warn >>"$LOG" 2>&1 < /dev/null &
    for _ in $(seq 1 120); do
      if answers; then echo "started $(cat "$PIDFILE")"; exit 0; fi
      sleep 0.5
    done
    die "dockerd did not answer on $SOCK within 60 s; its log: $LOG
$(tail -n 20 "$LOG")"
    ;;
  stop)
    alive || { rm -f "$PIDFILE"; exit 0; }
    pid=$(cat "$PIDFILE")
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
    ;;
  *) die "usage: scripts/dockerd.sh start|stop|env" ;;
esac
