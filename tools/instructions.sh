#!/usr/bin/env bash
# Instructions per frame of two runs over a generated capture of small AMQP 0-9-1 and AMQP 1.0
# transfers, counted by callgrind (deterministic, unlike wall-clock time on a shared machine):
#
#   check   `amqpeek check --jobs 1`: the inspection (decode, masking, state, diagnoses, verdict);
#   trace   `amqpeek replay --no-tui --jobs 1 > /dev/null`: the same inspection plus a text trace
#           line per frame, as `amqpeek proxy --no-tui` prints.
#   jsonl   `amqpeek replay --no-tui --quiet --jobs 1 --jsonl FILE`: the same inspection plus a
#           JSONL record per frame, as `amqpeek proxy --jsonl` writes.
#
# Fails when a count exceeds its ceiling in tools/instructions.ceiling.
#
#   tools/instructions.sh [TRANSFERS]      # default 20000; needs valgrind
#
# Env: KEEP=DIR keeps the capture and the callgrind outputs in DIR (for callgrind_annotate);
# DIAGNOSES_OFF=1 counts both with `--no-diagnoses` (the diagnoser's cost per frame is the
# difference); ONLY=check, ONLY=trace or ONLY=jsonl counts one of them.
set -euo pipefail
cd "$(dirname "$0")/.."

transfers=${1:-20000}
ceiling_file=tools/instructions.ceiling
command -v valgrind >/dev/null 2>&1 || { echo "instructions: valgrind is not installed" >&2; exit 2; }

dir=${KEEP:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT

cargo build --release --quiet --bin amqpeek
frames=$(cargo run --quiet --example gate_capture -- "$dir/gate.pcapng" "$transfers")

# The ceiling of run NAME: the line `NAME COUNT` of the ceiling file.
ceiling_of() {
  awk -v name="$1" '!/^#/ && $1 == name { print $2 }' "$ceiling_file"
}

# Count run NAME: amqpeek with the given arguments, the capture last.
count() {
  local name=$1
  shift
  local flags=("$@" --jobs 1)
  [ -z "${DIAGNOSES_OFF:-}" ] || flags+=(--no-diagnoses)
  local ceiling
  ceiling=$(ceiling_of "$name")
  [ -n "$ceiling" ] || { echo "instructions: no ceiling for $name in $ceiling_file" >&2; exit 2; }
  # The capture is spec-correct: amqpeek must find it clean (exit 0), or the count measures
  # the violation path.
  valgrind --tool=callgrind --callgrind-out-file="$dir/$name.callgrind.out" \
    target/release/amqpeek "${flags[@]}" "$dir/gate.pcapng" >"$dir/$name.out" 2>"$dir/$name.valgrind.log" || {
    echo "instructions: amqpeek ${flags[*]} failed on the generated capture:" >&2
    tail -20 "$dir/$name.out" "$dir/$name.valgrind.log" >&2
    exit 2
  }
  local total
  total=$(awk '/^(summary|totals):/ { print $2; exit }' "$dir/$name.callgrind.out")
  [ -n "$total" ] || { echo "instructions: no total in $dir/$name.callgrind.out" >&2; exit 2; }
  local per_frame=$((total / frames))
  echo "instructions: $name (${flags[*]}): $total Ir / $frames frames = $per_frame per frame (ceiling $ceiling, $ceiling_file)"
  if [ "$per_frame" -gt "$ceiling" ]; then
    echo "instructions: $name: $per_frame per frame exceeds the ceiling of $ceiling" >&2
    failed=1
  fi
}

failed=0
case "${ONLY:-}" in
  ""|check) count check check ;;&
  ""|trace) count trace replay --no-tui ;;&
  ""|jsonl) count jsonl replay --no-tui --quiet --jsonl "$dir/jsonl.jsonl" ;;
esac
exit "$failed"
