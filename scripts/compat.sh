#!/usr/bin/env bash
# The compatibility suite alone (`cargo test --workspace` runs it too): install the published servers of
# tests/compat/servers.json, pinned, and run tests/test_compat.rs through the built clat, printing the table of docs/servers-known-to-work.md
# (CLAT_COMPAT_BLESS=1 rewrites that table from what it measured). Needs the npm and PyPI registries.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-compat-servers.sh
cargo test -p clat-host --test test_compat --locked -- --nocapture --test-threads 1
