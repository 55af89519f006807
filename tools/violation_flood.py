#!/usr/bin/env python3
"""Write an amqpeek JSONL capture with many violating frames, for measuring `check`'s memory.

Usage: python3 tools/violation_flood.py FRAMES [CONNECTIONS] > flood.jsonl

Each connection is AMQP 1.0: both headers, an open each way, the client's close, then the
client's share of FRAMES empty frames, each one `amqp10.connection.frame-after-close`.
Nothing here is committed data: the capture is generated where it is measured.
"""
import base64
import struct
import sys

frames = int(sys.argv[1])
conns = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def frame(body, channel=0):
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


HEADER = b"AMQP\x00\x01\x00\x00"
OPEN = frame(bytes.fromhex("005310c00501a1026331"))
CLOSE = frame(bytes.fromhex("00531845"))
EMPTY = frame(b"")
TS = "2026-12-01T10:00:00.000000Z"
out = sys.stdout


def event(conn, kind, d, offset, raw, proto="amqp-1.0"):
    b64 = base64.b64encode(raw).decode()
    out.write(
        f'{{"v":1,"ts":"{TS}","conn":{conn},"event":"{kind}","dir":"{d}",'
        f'"offset":{offset},"proto":"{proto}","raw":"{b64}"}}\n'
    )


for conn in range(1, conns + 1):
    out.write(
        f'{{"v":1,"ts":"{TS}","conn":{conn},"event":"connect",'
        f'"client":"127.0.0.1:{40000 + conn}","upstream":"127.0.0.1:5672"}}\n'
    )
    for d in ("c2s", "s2c"):
        event(conn, "header", d, 0, HEADER)
        event(conn, "frame", d, 8, OPEN)
    offset = 8 + len(OPEN)
    event(conn, "frame", "c2s", offset, CLOSE)
    offset += len(CLOSE)
    line_tail = base64.b64encode(EMPTY).decode()
    for _ in range(frames // conns):
        out.write(
            f'{{"v":1,"ts":"{TS}","conn":{conn},"event":"frame","dir":"c2s",'
            f'"offset":{offset},"proto":"amqp-1.0","raw":"{line_tail}"}}\n'
        )
        offset += len(EMPTY)
