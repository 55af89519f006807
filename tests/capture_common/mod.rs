//! Shared helpers for the capture tests (the recording relay and the broker check are in
//! `support`, which every test crate using this module declares too): driving recorded chunks through the real `Inspector`, writing pcapng with `PcapngSink`, running
//! tshark, and minimal frame delimiting of AMQP byte streams (independent of the codecs).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

pub use crate::support::Recording;
use amqpeek::capture::pcapng_write::Conversation;
use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector, Sink};
use amqpeek::sinks::pcapng::PcapngSink;
use bytes::Bytes;

fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// True when tshark runs; false (skip, with a note) when not and CI is unset.
pub fn require_tshark(test: &str) -> bool {
    let ok = Command::new("tshark").arg("--version").output().is_ok();
    if !ok {
        assert!(!ci(), "{test}: tshark not installed and CI is set");
        eprintln!("SKIP {test}: tshark not installed");
    }
    ok
}

/// Run tshark, return stdout (panics with stderr on failure).
pub fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Drive the real inspector over recordings (connection `i + 1` for recording `i`).
pub fn inspect(recs: &[Recording]) -> Vec<Event> {
    let mut events = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let conn = i as u64 + 1;
        let ts0 = r.chunks.first().map(|c| c.1).unwrap_or(Timestamp(0));
        events.push(Event {
            conn,
            ts: ts0,
            kind: EventKind::Connect {
                client: r.client,
                upstream: r.upstream,
            },
        });
        let mut insp = Inspector::new(conn, InspectOptions::default());
        for (dir, ts, bytes) in &r.chunks {
            insp.chunk(*dir, *ts, Bytes::copy_from_slice(bytes), &mut events);
        }
        let end = r.chunks.last().map(|c| c.1).unwrap_or(ts0);
        insp.close(end, "client closed".into(), &mut events);
    }
    events
}

/// Write events through the pcapng sink to `path`.
pub fn write_pcapng(events: &[Event], path: &Path) {
    let mut sink = PcapngSink::create(path).unwrap();
    for e in events {
        sink.event(e).unwrap();
    }
    sink.flush().unwrap();
}

/// The Data bytes of one connection and direction, concatenated (masked as written).
pub fn data_bytes(events: &[Event], conn: u64, dir: Dir) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.conn == conn) {
        if let EventKind::Data { dir: d, bytes, .. } = &e.kind
            && *d == dir
        {
            out.extend_from_slice(bytes);
        }
    }
    out
}

/// A frame found by minimal delimiting: (offset, type, identifying code).
/// 0-9-1: code = class << 16 | method for method frames, else 0.
/// 1.0: code = the performative / SASL descriptor code, or 0 for empty frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFrame {
    pub offset: usize,
    pub len: usize,
    pub ftype: u8,
    pub code: u32,
}

/// Delimit an AMQP stream into frames (protocol headers skipped; `v091` says which framing
/// applies before any header is seen).
pub fn delimit(stream: &[u8], v091: bool) -> Vec<RawFrame> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut v091 = v091;
    while at + 8 <= stream.len() {
        let s = &stream[at..];
        if s.starts_with(b"AMQP") {
            v091 = s[4..8] == [0, 0, 9, 1];
            at += 8;
            continue;
        }
        if v091 {
            let size = u32::from_be_bytes([s[3], s[4], s[5], s[6]]) as usize;
            let len = size + 8;
            if s.len() < len {
                break;
            }
            let code = if s[0] == 1 && size >= 4 {
                (u32::from(u16::from_be_bytes([s[7], s[8]])) << 16)
                    | u32::from(u16::from_be_bytes([s[9], s[10]]))
            } else {
                0
            };
            out.push(RawFrame {
                offset: at,
                len,
                ftype: s[0],
                code,
            });
            at += len;
        } else {
            let len = u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize;
            if len < 8 || s.len() < len {
                break;
            }
            let doff = s[4] as usize * 4;
            let body = &s[doff.min(len)..len];
            let code = if body.len() >= 3 && body[0] == 0 && body[1] == 0x53 {
                u32::from(body[2])
            } else {
                0
            };
            out.push(RawFrame {
                offset: at,
                len,
                ftype: s[5],
                code,
            });
            at += len;
        }
    }
    out
}

/// Write a bare pcapng with a single conversation made of the given chunks (no inspector).
pub fn conversation_packets(client: SocketAddr, server: SocketAddr) -> Conversation {
    Conversation::new(client, server, 1)
}

/// One crafted TCP segment of a classic pcap written by [`write_pcap`].
pub struct Segment<'a> {
    /// Capture time, in µs since the epoch.
    pub ts_us: u64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    /// The acknowledgement number, when the ACK flag is set.
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload: &'a [u8],
}

/// Write `segments` as a classic Ethernet pcap to `path` (IPv4 addresses only), as a foreign
/// capture would hold them: checksums right, nothing marks it as amqpeek's.
pub fn write_pcap(segments: &[Segment<'_>], path: &Path) {
    use pcap_file::DataLink;
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(std::fs::File::create(path).unwrap(), header).unwrap();
    for s in segments {
        let (SocketAddr::V4(a), SocketAddr::V4(b)) = (s.src, s.dst) else {
            panic!("IPv4 only");
        };
        let mut t = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4(a.ip().octets(), b.ip().octets(), 64)
            .tcp(s.src.port(), s.dst.port(), s.seq, 65535);
        if s.syn {
            t = t.syn();
        }
        if let Some(n) = s.ack {
            t = t.ack(n);
        }
        if s.fin {
            t = t.fin();
        }
        if s.rst {
            t = t.rst();
        }
        let mut frame = Vec::new();
        t.write(&mut frame, s.payload).unwrap();
        let ts = std::time::Duration::from_micros(s.ts_us);
        w.write_packet(&PcapPacket::new(ts, frame.len() as u32, &frame))
            .unwrap();
    }
}
