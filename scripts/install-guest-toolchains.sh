#!/usr/bin/env bash
# Install the guest toolchains the tests build JavaScript and Python plugins
# with, pinned: componentize-js 0.23.0 (npm, from tests/guest-toolchains/
# package-lock.json) and componentize-py 0.25.1 (PyPI, in a virtual
# environment). Idempotent; registries only. The tests find them in
# tests/guest-toolchains (see tests/support/toolchains.rs).
set -euo pipefail
cd "$(dirname "$0")/../tests/guest-toolchains"

if [ ! -x node_modules/.bin/componentize-js ]; then
  npm ci --no-audit --no-fund
fi
if ! .venv/bin/componentize-py --version >/dev/null 2>&1; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi
echo "guest toolchains: componentize-js $(node -p 'require("./node_modules/@bytecodealliance/componentize-js/package.json").version'), $(.venv/bin/componentize-py --version)"
