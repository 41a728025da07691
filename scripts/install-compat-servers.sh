#!/usr/bin/env bash
# Install the published MCP servers of the compatibility suite (tests/compat/servers.json), pinned:
# the npm ones with their whole tree from tests/compat/package-lock.json, the PyPI ones each in its own
# virtual environment (tests/compat/py/NAME) made by uv, resolved as of the list's `exclude_newer` date.
# Idempotent (a server whose environment holds its pins is kept); registries only.
set -euo pipefail
cd "$(dirname "$0")/../tests/compat"

UV_VERSION=0.13.9
# Puppeteer-based packages download a browser in their install scripts; the servers here start without one.
export PUPPETEER_SKIP_DOWNLOAD=true

if ! node -e 'const fs = require("fs"); for (const [name, version] of Object.entries(require("./package.json").dependencies))
    if (JSON.parse(fs.readFileSync(`node_modules/${name}/package.json`)).version !== version) process.exit(1)' 2>/dev/null; then
  npm ci --no-audit --no-fund --ignore-scripts
fi

if ! .uv/bin/uv --version 2>/dev/null | grep -q "^uv $UV_VERSION"; then
  python3 -m venv .uv
  .uv/bin/pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi

# One line per PyPI server: NAME EXCLUDE_NEWER PACKAGE==VERSION [EXTRA...]
python3 - <<'EOF' >.pypi-pins
import json
listing = json.load(open("servers.json"))
for server in listing["servers"]:
    if server["registry"] == "pypi":
        pins = [f'{server["package"]}=={server["version"]}'] + server.get("extra", [])
        print(server["name"], listing["exclude_newer"], *pins)
EOF

while read -r name exclude_newer pins; do
  env_dir="py/$name"
  if [ "$(cat "$env_dir/.pins" 2>/dev/null)" = "$exclude_newer $pins" ]; then
    continue
  fi
  rm -rf "$env_dir"
  .uv/bin/uv venv --quiet --python python3 "$env_dir"
  # shellcheck disable=SC2086  # the pins are separate words
  VIRTUAL_ENV="$env_dir" .uv/bin/uv pip install --quiet --exclude-newer "$exclude_newer" $pins
  echo "$exclude_newer $pins" >"$env_dir/.pins"
done <.pypi-pins
rm -f .pypi-pins

echo "compatibility servers: $(node -e 'console.log(Object.keys(require("./package.json").dependencies).length)') from npm, $(ls py | wc -l) from PyPI"
