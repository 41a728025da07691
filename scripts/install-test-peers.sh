#!/usr/bin/env bash
# Install the real MCP servers the tests talk to, pinned: the npm reference
# servers (from tests/peers/package-lock.json) and the Python SDK (mcp 2.x) in a
# virtual environment. Idempotent; registries only.
set -euo pipefail
cd "$(dirname "$0")/../tests/peers"

for server in server-everything server-filesystem server-memory; do
  if [ ! -f "node_modules/@modelcontextprotocol/$server/dist/index.js" ]; then
    npm ci --no-audit --no-fund --ignore-scripts
    break
  fi
done
if ! .venv/bin/python -c "import mcp.server.mcpserver" 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi
# Importing the SDK once also warms the caches, so the first test start stays well inside the 3 s modern probe.
echo "test peers: node $(node --version), $(.venv/bin/python -c 'import importlib.metadata as m, mcp.server.mcpserver; print("mcp", m.version("mcp"))')"
