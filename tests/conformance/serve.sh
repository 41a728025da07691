#!/usr/bin/env sh
# Run inside the loopback-only namespace: `clat serve --http` on 127.0.0.1 in a
# fresh trusted project whose one MCP server is server_fixture.py, then the
# suite's server scenarios against it; the server is stopped at the end.
# usage: serve.sh CLAT PYTHON NODE SUITE REVISION BASELINE OUT_DIR
set -eu
clat=$1 python=$2 node=$3 suite=$4 revision=$5 baseline=$6 out=$7
dir=$(mktemp -d)
mkdir -p "$dir/home" "$dir/project"
fixture="$(cd "$(dirname "$0")" && pwd)/server_fixture.py"
printf '{"mcpServers": {"conformance": {"command": "%s", "args": ["%s"]}}}\n' "$python" "$fixture" > "$dir/home/mcp.json"
"$clat" --home "$dir/home" trust "$dir/project" > /dev/null
"$clat" --home "$dir/home" --project "$dir/project" serve --http 127.0.0.1:0 --mode full-access \
  --tool-names source --audit "$dir/audit.jsonl" 2> "$dir/serve.err" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
url=
for _ in $(seq 1 200); do
  url=$(sed -n 's/^clat serve: //p' "$dir/serve.err")
  [ -n "$url" ] && break
  sleep 0.05
done
[ -n "$url" ] || { echo "conformance: clat serve printed no URL" >&2; cat "$dir/serve.err" >&2; exit 1; }
"$node" "$suite" server --url "$url" --requirements "$revision" --expected-failures "$baseline" -o "$out"
