#!/usr/bin/env bash
# Install the guest toolchains the tests build JavaScript and Python plugins
# with, pinned: componentize-js 0.23.0 (with @bytecodealliance/preview2-shim
# 0.25.0, which it imports but only lists as a development dependency: without
# it `npm ci` leaves componentize-js unable to start), and for MCP-server plugins the MCP SDK
# 1.29.0, zod and esbuild (npm, from tests/guest-toolchains/package-lock.json),
# and componentize-py 0.25.1 (PyPI, in a virtual environment). Idempotent; registries only. The tests find them in
# tests/guest-toolchains (see tests/support/toolchains.rs).
set -euo pipefail
cd "$(dirname "$0")/../tests/guest-toolchains"

# Reinstalled whenever the lock file changed since the last install.
if ! cmp -s package-lock.json node_modules/.clat-installed-lock; then
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.clat-installed-lock
fi
if ! .venv/bin/componentize-py --version >/dev/null 2>&1; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi
echo "guest toolchains: componentize-js $(node -p 'require("./node_modules/@bytecodealliance/componentize-js/package.json").version'), $(.venv/bin/componentize-py --version)"
