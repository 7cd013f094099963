#!/usr/bin/env bash
# Runs the ozz-animation-rs vs ik-core two-bone comparison on a nightly toolchain.
#
#   ./run.sh                    # uses `cargo +nightly`
#   TOOLCHAIN=nightly-2026-01-15 ./run.sh
#
# ozz-animation-rs 0.11 uses `std::simd` (portable SIMD, nightly only). Current nightlies renamed
# `Mask::to_int()` to `Mask::to_simd()`; ozz 0.11 still calls `to_int()` four times (all in its
# `src/math.rs`), so on those nightlies it does not build as published. This script first tries
# the crate as published; if that fails, it copies the published source from Cargo's registry
# cache into `target/` (nothing of ozz's is kept in this repository), renames the four calls and
# builds against that copy through a `[patch.crates-io]` given on the command line.
set -euo pipefail
cd "$(dirname "$0")"
toolchain=${TOOLCHAIN:-nightly}

if ! cargo "+$toolchain" --version >/dev/null 2>&1; then
  echo "No '$toolchain' toolchain: install one with 'rustup toolchain install nightly'." >&2
  echo "(ozz-animation-rs needs nightly Rust; the bevy_ik workspace itself builds on stable.)" >&2
  exit 1
fi

if cargo "+$toolchain" build --release 2>/dev/null; then
  exec cargo "+$toolchain" run --release
fi

echo "ozz-animation-rs 0.11 does not build as published on this toolchain; applying the" >&2
echo "Mask::to_int() -> Mask::to_simd() rename to a copy of its source in target/." >&2
cargo "+$toolchain" fetch
registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
src=$(ls -d "$registry"/*/ozz-animation-rs-0.11.0 | head -n 1)
patched="$PWD/target/ozz-animation-rs-0.11.0-renamed"
rm -rf "$patched"
mkdir -p target
cp -r "$src" "$patched"
chmod -R u+w "$patched"
sed -i 's/\.to_int()/.to_simd()/g' "$patched/src/math.rs"
echo "renamed $(grep -c 'to_simd()' "$patched/src/math.rs") calls in $patched/src/math.rs" >&2
exec cargo "+$toolchain" run --release \
  --config "patch.crates-io.ozz-animation-rs.path=\"$patched\""
