#!/usr/bin/env bash
# Fuzzing, not part of `npm test` or CI (see RELIABILITY.md, "Fuzzing"):
#   1. the property tests of crates/core/src/fuzzing/tests.rs with many more cases than `cargo test` runs;
#   2. each libFuzzer target of fuzz/ (tar, gzip, msgpackr) in turn, for a fixed time, on
#      corpora seeded from the test fixtures.
#
# usage: scripts/fuzz.sh [--long | --time SECONDS] [--cases N] [TARGET...]
#   default: 30 s a target and 1,000 cases a property; --long: 300 s and 20,000.
#
# Needs the nightly toolchain (libFuzzer) and cargo-fuzz; cargo-fuzz is installed into
# fuzz/.tools (git-ignored) when missing, never globally. Runs niced, one target at a time.
# Corpora, crash artifacts and logs stay under fuzz/ (git-ignored). Exits 1 if anything failed;
# a crash is reproduced with `cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-…`
# (PATH=fuzz/.tools/bin:$PATH) and belongs, minimized (`cargo +nightly fuzz tmin`), in the tests of
# the module that crashed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=30
cases=1000
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --long) seconds=300; cases=20000 ;;
    --time) seconds=$2; shift ;;
    --cases) cases=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[ ${#targets[@]} -gt 0 ] || targets=(tar gzip msgpackr)

tools="$root/fuzz/.tools"
export PATH="$tools/bin:$PATH"
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz: needs a nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! command -v cargo-fuzz >/dev/null; then
  echo "fuzz: installing cargo-fuzz into fuzz/.tools"
  nice -n 10 cargo install --locked --root "$tools" cargo-fuzz --version 0.13.2
fi

# Seeds: the fixture tarballs as they are (gzip), inflated (tar), and the rows pnpm 11 wrote
# for them (msgpackr). libFuzzer reads the seed directories and writes new inputs to corpus/.
seeds="$root/fuzz/seeds"
mkdir -p "$seeds"/{tar,gzip,msgpackr} fuzz/corpus fuzz/logs
for tgz in __test__/fixtures/tarballs/*.tgz __test__/fixtures/tarballs/synthetic/*.tgz; do
  name=$(basename "$tgz" .tgz)
  cp "$tgz" "$seeds/gzip/$name.tgz"
  gzip -dc < "$tgz" > "$seeds/tar/$name.tar"
done
cp crates/core/src/store/index_row/pnpm11-rows/*.msgpack "$seeds/msgpackr/"

failed=0
echo "== property tests, $cases cases each"
if ! PROPTEST_CASES=$cases nice -n 10 cargo test --quiet -p cas-native-core --lib fuzzing; then
  failed=1
fi

summary=()
for target in "${targets[@]}"; do
  echo "== $target, $seconds s"
  mkdir -p "fuzz/corpus/$target"
  dict=()
  [ -f "fuzz/dicts/$target.dict" ] && dict=("-dict=fuzz/dicts/$target.dict")
  log="fuzz/logs/$target.log"
  # -timeout: a unit slower than 10 s is a hang; -max_len: the fixtures run to 1.5 MB inflated,
  # and mutating that much per run finds nothing a 64 KiB input would not.
  if nice -n 10 cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "$seeds/$target" -- \
      -max_total_time="$seconds" -timeout=10 -max_len=65536 -print_final_stats=1 \
      "${dict[@]}" > "$log" 2>&1; then
    status=ok
  else
    status="FAILED (see $log and fuzz/artifacts/$target/)"
    failed=1
  fi
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$done_line")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<< "$done_line")
  summary+=("| $target | $seconds | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $status |")
done

echo
echo "| target | seconds | executions | exec/s | edges (cov) | features (ft) | corpus | result |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
exit $failed
