#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance
# 0.2.0-alpha.12, on the Node 22 installed next to it): client mode against
# clat-mcp-conformance-client, for the 2025-11-25 and 2026-07-28 requirement
# sets; server mode against `clat serve --http` serving an MCP fixture through
# CLAT's pipeline (tests/conformance/serve.sh), for both sets, the expected
# failures and their reasons in tests/conformance/baseline-server-*.yml and
# tests/conformance/check_server.py making sure the rest ran and passed. No scenario is an expected failure (tests/conformance/baseline-*.yml):
# every client scenario the suite lists for the set (scored, or run and
# reported, but the auth extensions CLAT does not implement) must pass, the
# OAuth ones included, and tests/conformance/check.py, which takes that list
# from the suite itself, makes sure each one really produced its checks. The suite's mock servers bind every
# interface, so the runs happen in a loopback-only network namespace when the
# machine allows one.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

cargo build --quiet --locked -p clat-mcp --bin clat-mcp-conformance-client -p clat-host --bin clat
client="${CARGO_TARGET_DIR:-$root/target}/debug/clat-mcp-conformance-client"
clat="${CARGO_TARGET_DIR:-$root/target}/debug/clat"
python="$root/tests/peers/.venv/bin/python"
dir="$root/tests/conformance"
if [ ! -x "$dir/node_modules/.bin/node" ] || [ ! -f "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
  (cd "$dir" && npm ci --no-audit --no-fund)
fi
node="$dir/node_modules/.bin/node"
suite="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
echo "conformance: suite 0.2.0-alpha.12 on node $("$node" --version)"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

isolated() {
  if unshare -rn true 2>/dev/null; then
    unshare -rn sh -c 'ip link set lo up 2>/dev/null || true; exec "$@"' isolated "$@"
  else
    echo "conformance: no network namespace here; the mock servers run on this host's interfaces" >&2
    "$@"
  fi
}

status=0
for revision in 2025-11-25 2026-07-28; do
  echo "== requirement set $revision"
  if ! isolated "$node" "$suite" client --command "$client" --requirements "$revision" \
      --expected-failures "$dir/baseline-$revision.yml" -o "$out/$revision" 2>&1 \
      | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^\s*$' | tail -n 60; then
    status=1
  fi
  "$node" "$suite" list --client --requirements "$revision" > "$out/list-$revision.txt"
  python3 "$dir/check.py" "$out/$revision" "$revision" "$out/list-$revision.txt" || status=1
done

for revision in 2025-11-25 2026-07-28; do
  echo "== server requirement set $revision (clat serve --http)"
  baseline="$dir/baseline-server-$revision.yml"
  if ! isolated sh "$dir/serve.sh" "$clat" "$python" "$node" "$suite" "$revision" "$baseline" "$out/server-$revision" 2>&1 \
      | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^\s*$' | sed -n '/=== SUMMARY ===/,$p'; then
    status=1
  fi
  "$node" "$suite" list --server --requirements "$revision" > "$out/list-server-$revision.txt"
  python3 "$dir/check_server.py" "$out/server-$revision" "$out/list-server-$revision.txt" "$baseline" || status=1
done
exit $status
