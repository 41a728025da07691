#!/usr/bin/env bash
# Bisect wasmtime's per-call cost: build benches/versions.rs against each
# version given (default: CLAT's pinned one, 49.0.5, 50.0.1), with the same
# features CLAT enables (component-model-async off), and print each version's
# summary beside the first's. Usage: scripts/wasmtime-versions/run.sh [VERSION…]
# Needs the test guest built (any `cargo test` of the workspace builds it). One
# compiler builds every version (49 needs Rust 1.96, 50 needs 1.97): the
# toolchain in $RUSTUP_TOOLCHAIN, by default the installed `nightly`.
set -euo pipefail
export RUSTUP_TOOLCHAIN="${RUSTUP_TOOLCHAIN:-nightly}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(48.0.8 49.0.5 50.0.1)
component="$(ls -t "$root"/target/*/build/clat-guest-artifacts-*/out/guest-target/wasm32-wasip2/release/test_guests.wasm \
    2>/dev/null | head -1 || true)"
[ -n "$component" ] || { echo "no test guest built: run cargo build -p clat-guest-artifacts first" >&2; exit 2; }
features='"runtime", "std", "cranelift", "component-model", "async", "pooling-allocator", "parallel-compilation"'
work="${TMPDIR:-/tmp}/clat-wasmtime-versions"
export CARGO_TARGET_DIR="$work/target"
for version in "${versions[@]}"; do
    dir="$work/$version"
    mkdir -p "$dir/benches"
    sed -e "s/@VERSION@/$version/" -e "s/@FEATURES@/$features/" "$here/Cargo.toml.in" > "$dir/Cargo.toml"
    cp "$here/benches/versions.rs" "$dir/benches/"
    knob=()
    [ "${version%%.*}" -ge 50 ] && knob=(--features concurrency-knob)
    (cd "$dir" && WASMTIME_VERSION="$version" COMPONENT="$component" \
        cargo bench --quiet "${knob[@]}" --bench versions -- --warm-up-time 1 --measurement-time 3) \
        | grep -E '^(summary|wasmtime/)|time:' | tee "$dir/summary.txt"
done
