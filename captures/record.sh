#!/usr/bin/env bash
# Re-records the sample captures in this folder: real clients (the demo examples: lapin for
# AMQP 0-9-1, fe2o3-amqp for AMQP 1.0) through `amqpeek proxy` to the RabbitMQ on
# 127.0.0.1:5672 (guest/guest). Run from the repository root: bash captures/record.sh
#
#   bash captures/record.sh --refresh   # no broker: keep the recorded traffic, and write its
#                                       # violation records (JSONL) and comments (pcapng) again
#                                       # with the rules of this build
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--refresh" ]; then
  cargo build -q --release --bin amqpeek
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for f in captures/*.jsonl captures/*.pcapng; do
    name=$(basename "$f")
    case "$f" in
      *.jsonl) target/release/amqpeek replay --no-tui "$f" --jsonl "$tmp/$name" >/dev/null ;;
      *.pcapng) target/release/amqpeek replay --no-tui "$f" --pcap "$tmp/$name" >/dev/null ;;
    esac || [ $? -eq 1 ] # exit 1: the capture has violations
    mv "$tmp/$name" "$f"
  done
  ls -l captures
  exit 0
fi
cargo build -q --release --bin amqpeek --examples
bin=target/release/amqpeek
record() { # name port client-command...
  local name=$1 port=$2; shift 2
  "$bin" proxy --no-tui --quiet --listen "127.0.0.1:$port" \
    --jsonl "captures/$name.jsonl" --pcap "captures/$name.pcapng" &
  local pid=$!
  sleep 0.5
  "$@" >/dev/null 2>&1 || true
  sleep 0.5
  kill -INT "$pid"
  wait "$pid" || true
}
record amqp091-lapin 5691 target/release/examples/demo_amqp091 "amqp://guest:guest@127.0.0.1:5691/%2f"
record amqp10-fe2o3 5692 target/release/examples/demo_amqp10 "amqp://guest:guest@127.0.0.1:5692"
record amqp091-bad-ack 5693 target/release/examples/demo_amqp091 "amqp://guest:guest@127.0.0.1:5693/%2f" --bad-ack
ls -l captures
