#!/usr/bin/env bash
# Instructions per frame of `amqpeek check --jobs 1` on a generated capture of small AMQP 0-9-1
# and AMQP 1.0 transfers, counted by callgrind (deterministic, unlike wall-clock time on a
# shared machine). Fails when the count exceeds the ceiling in tools/instructions.ceiling.
#
#   tools/instructions.sh [TRANSFERS]      # default 20000; needs valgrind
#
# Env: KEEP=DIR keeps the capture and the callgrind output in DIR (for callgrind_annotate);
# DIAGNOSES_OFF=1 counts `check --no-diagnoses` (the diagnoser's cost per frame is the
# difference).
set -euo pipefail
cd "$(dirname "$0")/.."

transfers=${1:-20000}
ceiling_file=tools/instructions.ceiling
ceiling=$(grep -v '^#' "$ceiling_file" | tr -d '[:space:]')
command -v valgrind >/dev/null 2>&1 || { echo "instructions: valgrind is not installed" >&2; exit 2; }

dir=${KEEP:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT

cargo build --release --quiet --bin amqpeek
frames=$(cargo run --quiet --example gate_capture -- "$dir/gate.pcapng" "$transfers")
flags=(check --jobs 1)
[ -z "${DIAGNOSES_OFF:-}" ] || flags+=(--no-diagnoses)

# The capture is spec-correct: `check` must find it clean (exit 0), or the count measures the
# violation path.
valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
  target/release/amqpeek "${flags[@]}" "$dir/gate.pcapng" >"$dir/check.out" 2>"$dir/valgrind.log" || {
  echo "instructions: amqpeek check failed on the generated capture:" >&2
  cat "$dir/check.out" "$dir/valgrind.log" >&2
  exit 2
}
total=$(awk '/^(summary|totals):/ { print $2; exit }' "$dir/callgrind.out")
[ -n "$total" ] || { echo "instructions: no total in $dir/callgrind.out" >&2; exit 2; }
per_frame=$((total / frames))

echo "instructions: ${flags[*]}: $total Ir / $frames frames = $per_frame per frame (ceiling $ceiling, $ceiling_file)"
if [ "$per_frame" -gt "$ceiling" ]; then
  echo "instructions: $per_frame per frame exceeds the ceiling of $ceiling" >&2
  exit 1
fi
