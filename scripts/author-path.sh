#!/usr/bin/env bash
# The author's path, timed: from nothing to a plugin that is pushed, installed from the registry and called, in one
# language (rust, javascript or python), as a new author types it — `clat plugin new`, the next step it prints (its
# unit tests, `clat plugin test .`, `clat plugin install --build .`), a call, `clat plugin push`, then in a fresh
# home `clat plugin install oci://…` and the call. Each command's seconds are printed, and the total.
#
#   scripts/author-path.sh LANG [CLAT]
#
# CLAT is the clat binary (default: target/release/clat, else target/debug/clat). The registry is Debian's
# docker-registry on 127.0.0.1 (scripts/install-test-peers.sh installs it); the toolchains are the pinned ones of
# scripts/install-guest-toolchains.sh (a JavaScript project gets their node_modules, as if `npm install` had run; a
# Python project finds componentize-py through CLAT_COMPONENTIZE_PY). Everything lives in a temporary directory.
set -euo pipefail

lang=${1:?usage: scripts/author-path.sh rust|javascript|python [CLAT]}
root=$(cd "$(dirname "$0")/.." && pwd)
clat=${2:-}
if [[ -z $clat ]]; then
  if [[ -x $root/target/release/clat ]]; then clat=$root/target/release/clat; else clat=$root/target/debug/clat; fi
fi
clat=$(realpath "$clat")
toolchains=$root/tests/guest-toolchains
export CLAT_COMPONENTIZE_JS=$toolchains/node_modules/.bin/componentize-js
export CLAT_ESBUILD=$toolchains/node_modules/.bin/esbuild
export CLAT_COMPONENTIZE_PY=$toolchains/.venv/bin/componentize-py

work=$(mktemp -d)
registry_pid=
cleanup() {
  [[ -n $registry_pid ]] && kill "$registry_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
  secret: author-path
EOF
/usr/bin/docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
registry_pid=$!
for _ in $(seq 200); do
  curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
  sleep 0.05
done

export CLAT_HOME=$work/home
export CLAT_CREDENTIAL_STORE=file
PATH=$(dirname "$clat"):$PATH
cd "$work"
total=0
commands=0
step() {
  local started ended seconds
  started=$(date +%s.%N)
  "$@" >"$work/step.out" 2>&1 || { cat "$work/step.out"; echo "failed: $*" >&2; exit 1; }
  ended=$(date +%s.%N)
  seconds=$(echo "$ended - $started" | bc)
  total=$(echo "$total + $seconds" | bc)
  commands=$((commands + 1))
  printf '%6.1f s  %s\n' "$seconds" "$*"
}

step clat plugin new demo --lang "$lang"
next=$(sed -n 's/^next: //p' "$work/step.out")
if [[ $lang == javascript ]]; then
  ln -s "$toolchains/node_modules" demo/node_modules # what `npm install` would do, offline
fi
cd demo
# The printed next step, each command of it timed on its own (its `cd` aside, `npm install` done above).
IFS='&' read -ra parts <<<"${next//&&/&}"
for part in "${parts[@]}"; do
  part=$(echo "$part" | xargs)
  case $part in
  cd\ * | "npm install" | "") continue ;;
  esac
  step bash -c "$part"
done
step clat call wasm_demo_hello '{"name":"you"}'
reference=oci://127.0.0.1:$port/authors/demo:0.1.0
step clat plugin push . "$reference"
export CLAT_HOME=$work/elsewhere
mkdir -p "$work/user"
step clat trust "$work/user"
step clat plugin install "$reference"
step clat --project "$work/user" call wasm_demo_hello '{"name":"you"}'
printf '%6.1f s  in all: %d commands (%s)\n' "$total" "$commands" "$lang"
