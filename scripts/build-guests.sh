#!/usr/bin/env bash
# Build every guest in guests/ for wasm32-wasip2 and assemble each one that has
# a clat-plugin.toml as an installable package (the manifest + the component
# its `entry` names) in guests/target/packages/NAME/.
# Then: clat plugin install guests/target/packages/hello
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --quiet --release --locked --target wasm32-wasip2 --manifest-path guests/Cargo.toml --workspace \
  --target-dir guests/target

built=guests/target/wasm32-wasip2/release
for manifest in guests/*/clat-plugin.toml; do
  guest=$(basename "$(dirname "$manifest")")
  package="guests/target/packages/$guest"
  rm -rf "$package" && mkdir -p "$package"
  cp "$manifest" "$package/"
  entry=$(sed -n 's/^entry = "\(.*\)"/\1/p' "$manifest")
  cp "$built/$entry" "$package/$entry"
  echo "package: $package"
done
