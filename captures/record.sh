#!/usr/bin/env bash
# Re-records the sample captures in this folder: real clients (the demo examples: lapin for
# AMQP 0-9-1, fe2o3-amqp for AMQP 1.0) through `amqpeek proxy` to the RabbitMQ on
# 127.0.0.1:5672 (guest/guest). Run from the repository root: bash captures/record.sh
set -euo pipefail
cd "$(dirname "$0")/.."
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
