#!/usr/bin/env bash
# Install the real MCP servers and clients the tests talk to, pinned: the npm
# reference servers and the TypeScript SDK (from tests/peers/package-lock.json)
# and the Python SDK (mcp 2.x) in a
# virtual environment; and a real OS keyring for the OAuth token tests
# (gnome-keyring's Secret Service, run by the tests on a private D-Bus session), and an OCI registry.
# Idempotent; registries only.
set -euo pipefail
cd "$(dirname "$0")/../tests/peers"

for package in server-everything/dist/index.js server-filesystem/dist/index.js server-memory/dist/index.js \
  sdk/dist/esm/client/index.js; do
  if [ ! -f "node_modules/@modelcontextprotocol/$package" ]; then
    npm ci --no-audit --no-fund --ignore-scripts
    break
  fi
done
if ! .venv/bin/python -c "import mcp.server.mcpserver" 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi
if ! command -v gnome-keyring-daemon >/dev/null || ! command -v dbus-run-session >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends gnome-keyring dbus-daemon >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends gnome-keyring dbus-daemon >/dev/null; }
fi
# A real OCI registry for the plugin distribution tests (Debian's docker-registry, the distribution project); the
# tests run it on 127.0.0.1 with their own storage, so the system service the package sets up is kept stopped.
if [ ! -x /usr/bin/docker-registry ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends docker-registry >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends docker-registry >/dev/null; }
  if command -v systemctl >/dev/null; then systemctl disable --now docker-registry >/dev/null 2>&1 || true; fi
fi
# Importing the SDK once also warms the caches, so the first test start stays well inside the 3 s modern probe.
echo "test peers: node $(node --version), $(.venv/bin/python -c 'import importlib.metadata as m, mcp.server.mcpserver; print("mcp", m.version("mcp"))'), $(gnome-keyring-daemon --version | head -n 1), docker-registry $(/usr/bin/docker-registry --version | awk '{print $3}')"
