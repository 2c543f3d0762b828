#!/usr/bin/env bash
# Type-checks and lints the crate (library and its tests) for other targets than this machine's:
# `cargo clippy --lib --tests --target <triple> -- -D warnings`, so that Unix-only code cannot
# slip into a Windows (or macOS) build unnoticed. Nothing is linked or run.
#
#   npm run check:windows                              # x86_64-pc-windows-msvc
#   bash scripts/check-target.sh x86_64-apple-darwin aarch64-apple-darwin
#
# Each target's Rust standard library must be installed (`rustup target add <triple>`); no C
# toolchain is needed. That is why the check runs on a copy of the crate in a temp dir: the copy
# drops rusqlite's `bundled` feature, whose SQLite is C compiled with the target's C compiler,
# and points libsqlite3-sys at no library (checking links nothing). The Rust code checked is the
# same either way. The copy is deleted afterwards; build output goes to target/check-target/ so
# that the dependencies are checked once.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "$#" -eq 0 ]; then
  set -- x86_64-pc-windows-msvc
fi

installed="$(rustup target list --installed)"
for target in "$@"; do
  if ! grep -qx "$target" <<<"$installed"; then
    echo "check-target: the Rust standard library for $target is missing: rustup target add $target" >&2
    exit 1
  fi
done

copy="$(mktemp -d "${TMPDIR:-/tmp}/cas-native-check.XXXXXX")"
trap 'rm -rf "$copy"' EXIT
(cd "$root" && tar -cf - Cargo.toml Cargo.lock build.rs src crates) | tar -xf - -C "$copy"
sed -i.orig 's/^rusqlite = { version = "\([^"]*\)", features = \["bundled"\] }$/rusqlite = { version = "\1" }/' "$copy/crates/core/Cargo.toml"
if grep -q '"bundled"' "$copy/crates/core/Cargo.toml"; then
  echo "check-target: could not turn off rusqlite's bundled feature in the copy of Cargo.toml" >&2
  exit 1
fi

status=0
for target in "$@"; do
  echo "== cargo clippy --lib --tests --target $target"
  SQLITE3_LIB_DIR="$copy" LIBSQLITE3_SYS_USE_PKG_CONFIG=0 \
    cargo clippy --quiet --manifest-path "$copy/Cargo.toml" --lib --tests \
    --target "$target" --target-dir "$root/target/check-target" -- -D warnings || status=1
done
exit "$status"
