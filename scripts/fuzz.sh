#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a bounded time and fails on any crash,
# panic, timeout or out-of-memory (libFuzzer's own verdicts). Installs what it
# needs: the pinned nightly toolchain (rustup) and cargo-fuzz (crates.io).
#
#   bash scripts/fuzz.sh            every target, FUZZ_SECONDS (30) each
#   bash scripts/fuzz.sh sse_decode one target
#
# Inputs come from fuzz/seeds/TARGET (committed); what libFuzzer adds goes to a
# temporary corpus, so a run never changes the tree. A failing input is saved
# under fuzz/artifacts/TARGET/ and printed; replay it with
# `cargo +NIGHTLY fuzz run TARGET fuzz/artifacts/TARGET/crash-…`.
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTLY=nightly-2026-10-30
CARGO_FUZZ_VERSION=0.13.2
SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}

rustup toolchain install "$NIGHTLY" --profile minimal >/dev/null
if ! cargo fuzz --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
  cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked
fi

# The targets are plain safe Rust over the parsers: panics, hangs and memory
# blow-ups are what is looked for, so no sanitizer (a build of half the time).
fuzz=(cargo "+$NIGHTLY" fuzz)
flags=(--sanitizer none)
if [ "${CI:-}" = "true" ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR=/var/tmp/clat-ci-fuzz-target
fi

if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <("${fuzz[@]}" list); fi
"${fuzz[@]}" build "${flags[@]}"

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
for target in "${targets[@]}"; do
  printf '\n--> %s (%ss)\n' "$target" "$SECONDS_PER_TARGET"
  mkdir -p "$corpus/$target"
  # -timeout: one input taking longer is a failure; -rss_limit_mb: so is using more memory.
  log="$corpus/$target.log"
  if ! "${fuzz[@]}" run "${flags[@]}" "$target" "$corpus/$target" "fuzz/seeds/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 80 "$log"
    echo "fuzz target $target failed (the input is under fuzz/artifacts/$target/)" >&2
    exit 1
  fi
  grep -E '^#[0-9]+ +DONE|^stat::number_of_executed_units' "$log" || tail -n 5 "$log"
done
printf '\nall %d fuzz targets ran clean\n' "${#targets[@]}"
