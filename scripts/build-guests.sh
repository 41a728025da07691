#!/usr/bin/env bash
# Build the example guests in guests/ for wasm32-wasip2 and assemble each as an
# installable package (clat-plugin.toml + component) in guests/target/packages/.
# Then: clat plugin install guests/target/packages/hello
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --quiet --release --locked --target wasm32-wasip2 --manifest-path guests/Cargo.toml --workspace \
  --target-dir guests/target

built=guests/target/wasm32-wasip2/release
for guest in hello project-notes summarize ask-name; do
  package="guests/target/packages/$guest"
  rm -rf "$package" && mkdir -p "$package"
  cp "guests/$guest/clat-plugin.toml" "$package/"
  entry=$(sed -n 's/^entry = "\(.*\)"/\1/p' "guests/$guest/clat-plugin.toml")
  cp "$built/$entry" "$package/$entry"
  echo "package: $package"
done
