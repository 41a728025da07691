#!/usr/bin/env bash
# The demo: install two WASM plugins (hello, project-notes), configure a local
# MCP server (the project's own stdio test server), mount a demo project, and
# drive plugin, MCP and native tools side by side through the whole pipeline,
# on embedded defaults, with no network. Everything lives in a temporary
# CLAT_HOME and project that are removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# Two commands: a `--bin` filter would apply to both packages.
cargo build --quiet -p clat-host --bin clat
cargo build --quiet -p clat-test-mcp-server
clat="${CARGO_TARGET_DIR:-$PWD/target}/debug/clat"
mcp_server="${CARGO_TARGET_DIR:-$PWD/target}/debug/clat-test-mcp-server"
bash scripts/build-guests.sh >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CLAT_HOME="$work/clat-home"
mkdir -p "$CLAT_HOME"
printf '{ "demo-server": { "command": "%s", "args": ["--tools", "3"] } }\n' "$mcp_server" > "$CLAT_HOME/mcp.json"
project="$work/demo-project"
mkdir -p "$project/src"
cat > "$project/src/main.rs" <<'RS'
fn main() {
    let greeting = "hello";
    println!("{greeting}, world");
}
RS
printf 'target/\n' > "$project/.gitignore"
mkdir -p "$project/target" && echo "build output" > "$project/target/ignored.txt"
printf '# Demo\n\nTODO: write the real README\n' > "$project/README.md"

show() { printf '\n$ clat %s\n' "$*"; }
expect() { # expect CODE -- clat args...
  local want=$1; shift 2
  show "$@"
  set +e; "$clat" --project "$project" "$@"; local got=$?; set -e
  if [ "$got" != "$want" ]; then echo "demo: expected exit $want, got $got" >&2; exit 1; fi
  [ "$want" = 0 ] || echo "(exit $got, as expected)"
}

expect 3 -- tools
show trust "$project"; "$clat" trust "$project"
show plugin install guests/target/packages/hello; "$clat" plugin install guests/target/packages/hello
show plugin install guests/target/packages/project-notes; "$clat" plugin install guests/target/packages/project-notes
expect 0 -- tools
expect 0 -- call wasm_hello_greet '{"name":"demo"}'
expect 4 -- call mcp_demo_server_echo '{"from":"the demo"}'
expect 0 -- call mcp_demo_server_echo '{"from":"the demo"}' --mode full-access
expect 0 -- call wasm_project_notes_todos --events
expect 0 -- call list_files
expect 0 -- call search '{"pattern":"greeting"}'
expect 0 -- call read_file '{"path":"src/main.rs","start_line":2,"end_line":3}'
expect 4 -- call write_file '{"path":"NOTES.md","content":"# Notes\n"}'
expect 0 -- call write_file '{"path":"NOTES.md","content":"# Notes\n"}' --mode auto-edit
expect 0 -- call edit_file '{"path":"src/main.rs","old_string":"hello","new_string":"goodbye"}' --mode auto-edit --events
expect 0 -- call run_command '{"command":"grep -n goodbye src/main.rs && ls"}' --mode full-access
expect 1 -- call read_file '{"path":"../../etc/passwd"}'
expect 0 -- call read_file '{"path":"NOTES.md"}' --json
expect 0 -- mcp
printf '%s\n' '{"tool":"wasm_hello_greet","arguments":{"name":"a script"}}' \
  '{"tool":"mcp_demo_server_echo","arguments":{"from":"a script"}}' '{"tool":"list_files"}' > "$work/script.jsonl"
expect 0 -- exec "$work/script.jsonl" --mode full-access
# The same platform as a library: the front door (`clat_host::Platform`) in a
# minimal agent loop whose offline model calls a native, a WASM and an MCP tool.
printf '\n$ cargo run -p clat-host --example agent -- --project <demo project> --mode full-access\n'
cargo run --quiet -p clat-host --example agent -- --project "$project" --mode full-access 2>/dev/null
printf '\ndemo finished: every step behaved as expected\n'
