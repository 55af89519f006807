#!/usr/bin/env python3
"""Write an amqpeek JSONL capture of many frames, for measuring the TUI's whole-capture
navigation (`amqpeek replay` of a big file: first pass, `g`/`G`, Enter on a violation).

Usage: python3 tools/whole_capture.py FRAMES [CONNECTIONS] > big.jsonl

Each connection is AMQP 1.0, written one after the other: both headers, an open each way,
then its share of FRAMES empty frames, two of which (the 11th and the 10th from the end) are
an `end` on a channel never begun (`amqp10.session.frame-on-unmapped-channel`). Nothing here
is committed data: the capture is generated where it is measured.
"""
import base64
import struct
import sys

frames = int(sys.argv[1]); conns = int(sys.argv[2]) if len(sys.argv) > 2 else 1
def frame(body, channel=0): return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body
HEADER = b"AMQP\x00\x01\x00\x00"
OPEN = frame(bytes.fromhex("005310c00501a1026331"))
BAD = frame(bytes.fromhex("00531745"), 7)
EMPTY = frame(b"")
TS = "2026-12-01T10:00:00.000000Z"
out = sys.stdout
def event(conn, d, offset, raw, kind="frame"):
    out.write(f'{{"v":1,"ts":"{TS}","conn":{conn},"event":"{kind}","dir":"{d}","offset":{offset},"proto":"amqp-1.0","raw":"{base64.b64encode(raw).decode()}"}}\n')
for conn in range(1, conns + 1):
    out.write(f'{{"v":1,"ts":"{TS}","conn":{conn},"event":"connect","client":"127.0.0.1:{40000+conn}","upstream":"127.0.0.1:5672"}}\n')
    off = {"c2s": 8, "s2c": 8}
    for d in ("c2s", "s2c"):
        event(conn, d, 0, HEADER, "header"); event(conn, d, 8, OPEN); off[d] += len(OPEN)
    n = frames // conns
    for i in range(n):
        f = BAD if i in (10, n - 10) else EMPTY
        d = "c2s" if i % 2 == 0 else "s2c"
        event(conn, d, off[d], f); off[d] += len(f)
