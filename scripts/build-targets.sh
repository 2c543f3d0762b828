#!/usr/bin/env bash
# Builds the addon for every target in package.json `napi.targets` on this Linux x64 machine and
# puts each binary into npm/<platform>/ as `napi artifacts` lays them out (the release workflow's
# layout), then prints how long each target took and how big its binary is.
#
#   npm run build:targets                                  # every target
#   bash scripts/build-targets.sh aarch64-apple-darwin     # some of them
#
# How each target is built (the README's "Targets" table says the same):
# - Linux and macOS targets: `napi build -x`, i.e. cargo-zigbuild with zig as the C compiler and
#   linker; the glibc targets against glibc 2.17, as the release workflow's napi-rs cross
#   toolchain links them.
# - x86_64-pc-windows-msvc cannot be linked here: its CRT and Windows SDK libraries come only
#   from Microsoft's servers (cargo-xwin downloads them), which this machine cannot reach. The
#   release workflow builds it on Windows. In its place this script builds
#   x86_64-pc-windows-gnu with zig into .tools/build/win32-x64-gnu/ (not into npm/: that binary is
#   never published), with the crate's test executables beside it, for the link check and for
#   `npm run test:emulated`, which runs both under wine (with scripts/wine/bcryptprimitives.c,
#   built here too).
#
# Everything it needs comes from the package registries into .tools/ (git-ignored): zig from
# PyPI (the `ziglang` wheel), cargo-zigbuild from crates.io, and each target's Rust standard
# library through `rustup target add`.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.tools"
out="$tools/build"
# zig as the release workflow's setup-zig step pins it; cargo-zigbuild as released for it.
zig_version=0.14.1
zigbuild_version=0.24.1
windows_gnu=x86_64-pc-windows-gnu
# Apart from `npm run build`'s target/: zig and the host C compiler would rebuild each other's.
cross_target="$root/target/cross"

cd "$root"
if [ "$#" -eq 0 ]; then
  list="$(node -p "require('./package.json').napi.targets.join('\n')")"
  mapfile -t targets <<<"$list"
else
  targets=("$@")
fi

zig_dir="$tools/ziglang-$zig_version"
if [ ! -x "$zig_dir/ziglang/zig" ]; then
  echo "== zig $zig_version (PyPI: ziglang) -> $zig_dir"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$zig_dir" "ziglang==$zig_version"
fi
zigbuild_dir="$tools/cargo-zigbuild-$zigbuild_version"
if [ ! -x "$zigbuild_dir/bin/cargo-zigbuild" ]; then
  echo "== cargo-zigbuild $zigbuild_version (crates.io) -> $zigbuild_dir"
  cargo install --quiet --locked --root "$zigbuild_dir" cargo-zigbuild --version "$zigbuild_version"
fi
export PATH="$zigbuild_dir/bin:$zig_dir/ziglang:$PATH"

rust_targets=()
for target in "${targets[@]}"; do
  case "$target" in
    *-windows-msvc) rust_targets+=("$windows_gnu") ;;
    *) rust_targets+=("$target") ;;
  esac
done
rustup target add "${rust_targets[@]}" >/dev/null

rm -rf "$out/artifacts"
mkdir -p "$out/artifacts" "$out/logs"
summary=()

# `napi build` for one target into $out/artifacts; $1 the napi target, $2 what cargo-zigbuild
# is given (a glibc target carries the glibc version to link against). The oldest macOS each
# binary loads on: 10.13 as the release workflow sets it, 11 for arm64, the first release on
# Apple silicon (zig has no arm64 headers for older ones).
build_napi() {
  local macos=()
  case "$1" in
    x86_64-apple-darwin) macos=(MACOSX_DEPLOYMENT_TARGET=10.13) ;;
    aarch64-apple-darwin) macos=(MACOSX_DEPLOYMENT_TARGET=11.0) ;;
  esac
  env "${macos[@]}" node_modules/.bin/napi build --platform --release --no-js --target "$2" -x \
    --target-dir "$cross_target" --output-dir "$out/artifacts" >"$out/logs/$1.log" 2>&1
}

# x86_64-pc-windows-gnu through cargo-zigbuild directly (`napi build -x` only takes MSVC for
# Windows). napi-build links a windows-gnu addon against a `libnode.dll` (MSYS2's shared Node);
# Cargo.toml turns on napi's `dyn-symbols` for it instead, so an empty stand-in library satisfies
# that link step and the DLL imports nothing from Node.
build_windows_gnu() {
  local stub="$out/libnode" dest="$out/win32-x64-gnu"
  rm -rf "$dest"
  mkdir -p "$stub" "$dest/tests"
  printf '!<arch>\n' >"$stub/libnode.a"
  : >"$stub/libnode.dll"
  export LIBNODE_PATH="$stub"
  cargo zigbuild --release --target "$windows_gnu" --target-dir "$cross_target" >"$out/logs/$windows_gnu.log" 2>&1
  cp "$cross_target/$windows_gnu/release/cas_native.dll" "$dest/cas-native.win32-x64-gnu.node"
  cargo zigbuild --tests --target "$windows_gnu" --target-dir "$cross_target" --message-format=json 2>>"$out/logs/$windows_gnu.log" |
    node -e 'for (const l of require("fs").readFileSync(0, "utf8").split("\n")) {
      const m = l.startsWith("{") && JSON.parse(l)
      if (m && m.reason === "compiler-artifact" && m.profile.test && m.executable) console.log(m.executable)
    }' | xargs -r cp -t "$dest/tests"
  # What wine 8 lacks for them to load (see the source).
  mkdir -p "$dest/wine"
  zig cc -target x86_64-windows-gnu -shared -O2 -o "$dest/wine/bcryptprimitives.dll" \
    scripts/wine/bcryptprimitives.c -ladvapi32 2>>"$out/logs/$windows_gnu.log"
}

status=0
for target in "${targets[@]}"; do
  start=$SECONDS
  log="$out/logs/$target.log"
  case "$target" in
    *-linux-gnu) how="zig, glibc 2.17"; args=(build_napi "$target" "$target.2.17") ;;
    *-windows-msvc) how="not here: $windows_gnu (zig)"; args=(build_windows_gnu); log="$out/logs/$windows_gnu.log" ;;
    *) how="zig"; args=(build_napi "$target" "$target") ;;
  esac
  echo "== $target ($how)"
  if "${args[@]}"; then
    result="built"
  else
    result="FAILED, see ${log#"$root/"}"
    status=1
    tail -20 "$log"
  fi
  summary+=("$(printf '%-28s %-40s %5ss  %s' "$target" "$how" "$((SECONDS - start))" "$result")")
done

# Into npm/<platform>/<binary>.<platform>.node, the layout the release workflow's publish job
# gets from `napi artifacts`. Not that command itself: it also copies every binary into the
# package root, where the loader would pick the linux-x64-gnu one over `npm run build`'s, and
# fails unless all seven targets are there.
binary="$(node -p "require('./package.json').napi.binaryName")"
for file in "$out"/artifacts/*.node; do
  name="$(basename "$file")"
  platform="${name#"$binary."}"
  cp "$file" "npm/${platform%.node}/$name"
done

echo
printf '%s\n' "${summary[@]}"
echo
ls -l npm/*/*.node "$out"/win32-x64-gnu/*.node 2>/dev/null | awk '{printf "%10d  %s\n", $5, $NF}'
exit "$status"
