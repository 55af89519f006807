//! Reading captures back: pcapng written by our sink (round trip), hand-built classic pcap
//! files over every supported link type, byte order and timestamp resolution, IPv6 with an
//! extension header, out-of-order / retransmitted / overlapping segments, a capture starting
//! mid-connection (resync), non-AMQP traffic, a truncated file, and JSONL.

mod capture_common;
mod support;

use std::io::Write;
use std::net::SocketAddr;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::codec::ProtocolHeader;
use amqpeek::event::{CloseInfo, CloseReason, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::Sink;
use amqpeek::sinks::pcapng::PcapngSink;
use base64::Engine;
use bytes::Bytes;
use etherparse::PacketBuilder;

const T0: i64 = 1_764_417_600_000_000;

fn f091(ftype: u8, channel: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![ftype];
    v.extend_from_slice(&channel.to_be_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(payload);
    v.push(0xCE);
    v
}

/// A plausible 0-9-1 client stream: header, then method / header / body frames.
fn stream_091(n: usize) -> Vec<u8> {
    let mut s = b"AMQP\x00\x00\x09\x01".to_vec();
    for i in 0..n {
        s.extend(f091(1, 1, &[0, 60, 0, 40, 0, 0, 0, i as u8]));
        s.extend(f091(2, 1, &[0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0]));
        s.extend(f091(3, 1, &vec![b'x'; 5 + i * 37]));
    }
    s
}

fn collect(path: &std::path::Path, opts: CaptureOptions) -> Vec<SourceEvent> {
    capture::open(path, opts).unwrap().collect()
}

fn chunks(evs: &[SourceEvent], conn: u64, dir: Dir) -> Vec<u8> {
    capture::conn_table::chunk_bytes(evs, conn, dir).to_vec()
}

fn connects(evs: &[SourceEvent]) -> Vec<(u64, SocketAddr, SocketAddr)> {
    evs.iter()
        .filter_map(|e| match e {
            SourceEvent::Connect {
                conn,
                client,
                server,
                ..
            } => Some((*conn, *client, *server)),
            _ => None,
        })
        .collect()
}

fn closes(evs: &[SourceEvent]) -> Vec<(u64, CloseReason)> {
    evs.iter()
        .filter_map(|e| match e {
            SourceEvent::Close { conn, reason, .. } => Some((*conn, reason.clone())),
            _ => None,
        })
        .collect()
}

fn gaps(evs: &[SourceEvent]) -> Vec<(u64, Dir, u64, u64, Option<ProtocolHeader>, String)> {
    evs.iter()
        .filter_map(|e| match e {
            SourceEvent::Gap {
                conn,
                dir,
                offset,
                len,
                resync,
                reason,
                ..
            } => Some((*conn, *dir, *offset, *len, *resync, reason.clone())),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------- pcapng round trip

#[test]
fn pcapng_written_by_the_sink_reads_back_identically() {
    let conns: [(SocketAddr, SocketAddr, &str); 3] = [
        (
            "192.168.1.10:40001".parse().unwrap(),
            "192.168.1.20:5672".parse().unwrap(),
            "client closed",
        ),
        (
            "[2001:db8::1]:40002".parse().unwrap(),
            "[2001:db8::2]:15672".parse().unwrap(),
            "client reset: Connection reset by peer (os error 104)",
        ),
        (
            "10.0.0.1:40003".parse().unwrap(),
            "[2001:db8::3]:5672".parse().unwrap(),
            "client closed",
        ),
    ];
    let mut events = Vec::new();
    let mut want = Vec::new();
    for (i, (client, upstream, reason)) in conns.iter().enumerate() {
        let conn = i as u64 + 1;
        let ev = |t: i64, kind| Event {
            conn,
            ts: Timestamp(T0 + t * 1000 + conn as i64),
            kind,
        };
        events.push(ev(
            0,
            EventKind::Connect {
                client: *client,
                upstream: *upstream,
            },
        ));
        let c2s = stream_091(20 + 400 * (i == 0) as usize); // conn 1: > 65000 bytes, split
        let mut s2c = f091(1, 0, &[0, 10, 0, 10, 0, 9, 1, 2, 3, 4]);
        s2c.extend(f091(8, 0, b""));
        let mut off = [0u64; 2];
        for (k, part) in c2s.chunks(70_001).enumerate() {
            events.push(ev(
                1 + k as i64,
                EventKind::Data {
                    dir: Dir::C2S,
                    offset: off[0],
                    bytes: Bytes::copy_from_slice(part),
                },
            ));
            off[0] += part.len() as u64;
            events.push(ev(
                1 + k as i64,
                EventKind::Data {
                    dir: Dir::S2C,
                    offset: off[1],
                    bytes: Bytes::copy_from_slice(&s2c),
                },
            ));
            off[1] += s2c.len() as u64;
        }
        let s2c_all: Vec<u8> = s2c.repeat(c2s.len().div_ceil(70_001));
        events.push(ev(
            50,
            EventKind::Close(CloseInfo {
                reason: CloseReason::parse(reason),
                bytes_c2s: off[0],
                bytes_s2c: off[1],
            }),
        ));
        want.push((c2s, s2c_all));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt.pcapng");
    let mut sink = PcapngSink::create(&path).unwrap();
    for e in &events {
        sink.event(e).unwrap();
    }
    sink.flush().unwrap();
    drop(sink);

    let evs = collect(&path, CaptureOptions::default());
    let got = connects(&evs);
    assert_eq!(got.len(), 3, "{got:?}");
    for (i, (c, s, _)) in conns.iter().enumerate() {
        let (conn, client, server) = got[i];
        assert_eq!(conn, i as u64 + 1);
        // Mixed families are written (and so read back) as IPv4-mapped IPv6.
        let norm = |a: &SocketAddr| match (a, c.is_ipv4() == s.is_ipv4()) {
            (SocketAddr::V4(v4), false) => {
                SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())
            }
            _ => *a,
        };
        assert_eq!((client, server), (norm(c), norm(s)));
        assert_eq!(chunks(&evs, conn, Dir::C2S), want[i].0, "conn {conn} c2s");
        assert_eq!(chunks(&evs, conn, Dir::S2C), want[i].1, "conn {conn} s2c");
    }
    assert_eq!(
        closes(&evs),
        vec![
            (1, "FIN both ways, client first".into()),
            (2, "reset by client".into()),
            (3, "FIN both ways, client first".into())
        ]
    );
    assert!(gaps(&evs).is_empty());
    // Timestamps survive at µs resolution.
    let first_chunk_ts = evs.iter().find_map(|e| match e {
        SourceEvent::Chunk(c) => Some(c.ts),
        _ => None,
    });
    assert_eq!(first_chunk_ts, Some(Timestamp(T0 + 1000 + 1)));
}

/// The reason a pcapng written by our sink gives when read back, for a 0-9-1 connection that
/// closed for `reason`.
fn read_back_close(reason: CloseReason) -> CloseReason {
    let ev = |t: i64, kind| Event {
        conn: 1,
        ts: Timestamp(T0 + t * 1000),
        kind,
    };
    let header = Bytes::from_static(b"AMQP\x00\x00\x09\x01");
    let events = [
        ev(
            0,
            EventKind::Connect {
                client: "10.0.0.1:40001".parse().unwrap(),
                upstream: "10.0.0.2:5672".parse().unwrap(),
            },
        ),
        ev(
            1,
            EventKind::Data {
                dir: Dir::C2S,
                offset: 0,
                bytes: header.clone(),
            },
        ),
        ev(
            2,
            EventKind::Close(CloseInfo {
                reason,
                bytes_c2s: 8,
                bytes_s2c: 0,
            }),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("close.pcapng");
    let mut sink = PcapngSink::create(&path).unwrap();
    for e in &events {
        sink.event(e).unwrap();
    }
    sink.flush().unwrap();
    drop(sink);
    let got = closes(&collect(&path, CaptureOptions::default()));
    assert_eq!(got.len(), 1, "{got:?}");
    got[0].1.clone()
}

#[test]
fn the_pcapng_sink_ends_a_reset_connection_with_an_rst_from_the_peer_that_reset() {
    let reset = |by, after_fin| CloseReason::Reset {
        by: Some(by),
        after_fin,
    };
    let by_client = reset(Dir::C2S, None);
    let by_server = reset(Dir::S2C, None);
    let fins = |first| CloseReason::FinBothWays { first };
    for (reason, want) in [
        (
            "client reset: Connection reset by peer (os error 104)",
            &by_client,
        ),
        (
            "upstream reset: Connection reset by peer (os error 104)",
            &by_server,
        ),
        // The clean close before the reset is a FIN before the RST, which answers it.
        (
            "client closed, then upstream reset: Broken pipe (os error 32)",
            &reset(Dir::S2C, Some(Dir::C2S)),
        ),
        (
            "upstream closed, then client reset: Connection reset by peer (os error 104)",
            &reset(Dir::C2S, Some(Dir::S2C)),
        ),
        (
            "upstream refused: Connection refused (os error 111)",
            &by_server,
        ),
        ("reset by client", &by_client),
        ("reset by server", &by_server),
        ("reset", &by_client),
        (
            "FIN by server, then reset by client",
            &reset(Dir::C2S, Some(Dir::S2C)),
        ),
        // Clean ends, failures that are no reset, and words nobody knows end with FINs: the
        // first closer's answered by the other's when the source says who, else crossing.
        ("client closed", &fins(Some(Dir::C2S))),
        ("upstream closed", &fins(Some(Dir::S2C))),
        ("FIN both ways, server first", &fins(Some(Dir::S2C))),
        ("client error: timed out", &fins(None)),
        ("idle timeout: no bytes either way for 1.5s", &fins(None)),
        ("proxy stopped", &fins(None)),
        ("capture ended with the connection open", &fins(None)),
        ("FIN both ways", &fins(None)),
        ("something else", &fins(None)),
    ] {
        assert_eq!(
            &read_back_close(CloseReason::parse(reason)),
            want,
            "{reason}"
        );
    }
}

// ---------------------------------------------------------------- hand-built pcap

#[derive(Clone, Copy, Debug)]
enum Link {
    Ethernet,
    EthernetVlan,
    Sll,
    Sll2,
    NullLe,
    NullBe,
    Loop,
    Raw(u32),
}

impl Link {
    fn linktype(self) -> u32 {
        match self {
            Link::Ethernet | Link::EthernetVlan => 1,
            Link::Sll => 113,
            Link::Sll2 => 276,
            Link::NullLe | Link::NullBe => 0,
            Link::Loop => 108,
            Link::Raw(t) => t,
        }
    }

    fn wrap(self, ip: &[u8]) -> Vec<u8> {
        let v6 = ip[0] >> 4 == 6;
        let et: [u8; 2] = if v6 { [0x86, 0xDD] } else { [0x08, 0x00] };
        let mut f = Vec::new();
        match self {
            Link::Ethernet | Link::EthernetVlan => {
                f.extend([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
                if let Link::EthernetVlan = self {
                    f.extend([0x81, 0x00, 0x00, 0x2A]);
                }
                f.extend(et);
            }
            Link::Sll => {
                f.extend([0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
                f.extend(et);
            }
            Link::Sll2 => {
                f.extend(et);
                f.extend([0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
            }
            Link::NullLe => f.extend((if v6 { 30u32 } else { 2 }).to_le_bytes()),
            Link::NullBe | Link::Loop => f.extend((if v6 { 24u32 } else { 2 }).to_be_bytes()),
            Link::Raw(_) => {}
        }
        f.extend_from_slice(ip);
        f
    }
}

#[derive(Clone, Copy, Default)]
struct Flags {
    syn: bool,
    ack: bool,
    fin: bool,
    rst: bool,
}
const SYN: Flags = Flags {
    syn: true,
    ack: false,
    fin: false,
    rst: false,
};
const SYNACK: Flags = Flags {
    syn: true,
    ack: true,
    fin: false,
    rst: false,
};
const ACK: Flags = Flags {
    syn: false,
    ack: true,
    fin: false,
    rst: false,
};
const FIN: Flags = Flags {
    syn: false,
    ack: true,
    fin: true,
    rst: false,
};

fn ip_tcp(
    src: SocketAddr,
    dst: SocketAddr,
    (seq, ack): (u32, u32),
    f: Flags,
    payload: &[u8],
    v6_ext: bool,
) -> Vec<u8> {
    let b = match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            PacketBuilder::ipv4(s.ip().octets(), d.ip().octets(), 64)
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            PacketBuilder::ipv6(s.ip().octets(), d.ip().octets(), 64)
        }
        _ => panic!("mixed"),
    };
    let mut b = b.tcp(src.port(), dst.port(), seq, 65535);
    if f.syn {
        b = b.syn();
    }
    if f.ack {
        b = b.ack(ack);
    }
    if f.fin {
        b = b.fin();
    }
    if f.rst {
        b = b.rst();
    }
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    if v6_ext && out[0] >> 4 == 6 {
        // Insert a hop-by-hop options header (8 bytes, PadN) before TCP.
        let next = out[6];
        out[6] = 0;
        let plen = u16::from_be_bytes([out[4], out[5]]) + 8;
        out[4..6].copy_from_slice(&plen.to_be_bytes());
        let ext = [next, 0, 1, 4, 0, 0, 0, 0];
        out.splice(40..40, ext);
    }
    out
}

struct PcapFile {
    big_endian: bool,
    nanos: bool,
    link: Link,
    bytes: Vec<u8>,
    v6_ext: bool,
    /// Per sender and receiver: the sequence number after the last byte (or SYN/FIN) written,
    /// which the receiver's packets acknowledge, as a real peer would (only what the file
    /// holds: a segment left out of it is not acknowledged).
    sent: Vec<((SocketAddr, SocketAddr), u32)>,
}

impl PcapFile {
    fn new(link: Link, big_endian: bool, nanos: bool) -> Self {
        let magic: u32 = if nanos { 0xA1B2_3C4D } else { 0xA1B2_C3D4 };
        let mut p = PcapFile {
            big_endian,
            nanos,
            link,
            bytes: Vec::new(),
            v6_ext: false,
            sent: Vec::new(),
        };
        p.u32(magic);
        p.u16(2);
        p.u16(4);
        p.u32(0);
        p.u32(0);
        p.u32(262_144);
        p.u32(link.linktype());
        p
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
    }
    fn u16(&mut self, v: u16) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
    }
    /// Add a packet at `t` µs after T0; returns its record's file offset.
    fn packet(
        &mut self,
        t: i64,
        src: SocketAddr,
        dst: SocketAddr,
        seq: u32,
        f: Flags,
        payload: &[u8],
    ) -> usize {
        let at = self.bytes.len();
        let ack = self
            .sent
            .iter()
            .find(|(k, _)| *k == (dst, src))
            .map_or(0, |(_, v)| *v);
        let end = seq
            .wrapping_add(payload.len() as u32)
            .wrapping_add(u32::from(f.syn) + u32::from(f.fin));
        match self.sent.iter_mut().find(|(k, _)| *k == (src, dst)) {
            Some((_, v)) if (end.wrapping_sub(*v) as i32) > 0 => *v = end,
            Some(_) => {}
            None => self.sent.push(((src, dst), end)),
        }
        let frame = self
            .link
            .wrap(&ip_tcp(src, dst, (seq, ack), f, payload, self.v6_ext));
        let ts = T0 + t;
        self.u32((ts / 1_000_000) as u32);
        let frac = (ts % 1_000_000) as u32;
        self.u32(if self.nanos { frac * 1000 + 999 } else { frac });
        self.u32(frame.len() as u32);
        self.u32(frame.len() as u32);
        self.bytes.extend(frame);
        at
    }
    fn write(&self) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&self.bytes).unwrap();
        f
    }
}

/// A full connection: handshake, client stream in `seg`-byte segments, server reply, FIN.
fn conversation(
    p: &mut PcapFile,
    c: SocketAddr,
    s: SocketAddr,
    c2s: &[u8],
    s2c: &[u8],
    seg: usize,
) {
    let (ic, is) = (0xFFFF_FF00u32, 1000u32); // the client's sequence numbers wrap
    p.packet(0, c, s, ic, SYN, b"");
    p.packet(1, s, c, is, SYNACK, b"");
    p.packet(2, c, s, ic + 1, ACK, b"");
    let mut t = 10;
    for (k, part) in c2s.chunks(seg).enumerate() {
        p.packet(t, c, s, ic.wrapping_add(1 + (k * seg) as u32), ACK, part);
        t += 10;
    }
    p.packet(t, s, c, is + 1, ACK, s2c);
    let cfin = ic.wrapping_add(1 + c2s.len() as u32);
    p.packet(t + 1, c, s, cfin, FIN, b"");
    p.packet(t + 2, s, c, is + 1 + s2c.len() as u32, FIN, b"");
    p.packet(t + 3, c, s, cfin.wrapping_add(1), ACK, b"");
}

#[test]
fn every_link_type_byte_order_and_resolution_reads_the_same_conversation() {
    let links = [
        Link::Ethernet,
        Link::EthernetVlan,
        Link::Sll,
        Link::Sll2,
        Link::NullLe,
        Link::NullBe,
        Link::Loop,
        Link::Raw(101),
        Link::Raw(12),
        Link::Raw(14),
        Link::Raw(228),
    ];
    let c2s = stream_091(10);
    let s2c = f091(1, 0, &[0, 10, 0, 10, 0, 9, 1, 2, 3, 4]);
    for (i, link) in links.iter().enumerate() {
        for v6 in [false, true] {
            if matches!(link, Link::Raw(228)) && v6 {
                continue;
            }
            let (big_endian, nanos) = (i % 2 == 0, i % 3 == 0);
            let mut p = PcapFile::new(*link, big_endian, nanos);
            p.v6_ext = v6;
            let (c, s): (SocketAddr, SocketAddr) = if v6 {
                (
                    "[fd00::1]:41000".parse().unwrap(),
                    "[fd00::2]:5672".parse().unwrap(),
                )
            } else {
                (
                    "10.1.1.1:41000".parse().unwrap(),
                    "10.1.1.2:5672".parse().unwrap(),
                )
            };
            conversation(&mut p, c, s, &c2s, &s2c, 100);
            let f = p.write();
            let evs = collect(f.path(), CaptureOptions::default());
            let what = format!("{link:?} v6={v6} be={big_endian} ns={nanos}");
            assert_eq!(connects(&evs), vec![(1, c, s)], "{what}");
            assert_eq!(chunks(&evs, 1, Dir::C2S), c2s, "{what}");
            assert_eq!(chunks(&evs, 1, Dir::S2C), s2c, "{what}");
            assert_eq!(
                closes(&evs),
                vec![(
                    1,
                    CloseReason::FinBothWays {
                        first: Some(Dir::C2S)
                    }
                )],
                "{what}"
            );
            assert!(gaps(&evs).is_empty(), "{what}");
            let ts = evs.iter().find_map(|e| match e {
                SourceEvent::Chunk(c) => Some(c.ts),
                _ => None,
            });
            assert_eq!(
                ts,
                Some(Timestamp(T0 + 10)),
                "{what}: µs from the record, ns truncated"
            );
        }
    }
}

#[test]
fn out_of_order_retransmitted_and_overlapping_segments_reassemble_first_seen_wins() {
    let c: SocketAddr = "10.2.0.1:42000".parse().unwrap();
    let s: SocketAddr = "10.2.0.2:5672".parse().unwrap();
    let data = stream_091(6);
    let n = data.len();
    let isn = 5000u32;
    let mut p = PcapFile::new(Link::Ethernet, false, false);
    p.packet(0, c, s, isn, SYN, b"");
    p.packet(1, s, c, 9000, SYNACK, b"");
    let at = |o: usize| isn + 1 + o as u32;
    // Out of order: the middle third first, then the last, then the first.
    let (a, b) = (n / 3, 2 * n / 3);
    p.packet(2, c, s, at(a), ACK, &data[a..b]);
    p.packet(3, c, s, at(b), ACK, &data[b..]);
    // An overlapping segment with different bytes in the already-held range: ignored.
    let mut bogus = data[a - 5..a + 5].to_vec();
    bogus.iter_mut().for_each(|x| *x = b'!');
    p.packet(4, c, s, at(a - 5), ACK, &bogus);
    p.packet(5, c, s, at(0), ACK, &data[..a - 5]);
    // A retransmission of delivered bytes with different content: ignored too.
    p.packet(6, c, s, at(0), ACK, &[b'?'; 20]);
    p.packet(7, c, s, at(n), FIN, b"");
    p.packet(8, s, c, 9001, FIN, b"");
    let f = p.write();
    let evs = collect(f.path(), CaptureOptions::default());
    let mut want = data.clone();
    want[a - 5..a].fill(b'!'); // first seen for those five bytes was the bogus overlap
    assert_eq!(chunks(&evs, 1, Dir::C2S), want);
    assert!(gaps(&evs).is_empty());
    assert_eq!(
        closes(&evs),
        vec![(
            1,
            CloseReason::FinBothWays {
                first: Some(Dir::C2S)
            }
        )]
    );
}

#[test]
fn capture_starting_mid_connection_resynchronises_at_a_frame_boundary() {
    let c: SocketAddr = "10.3.0.1:43000".parse().unwrap();
    let s: SocketAddr = "10.3.0.2:5672".parse().unwrap();
    let full = stream_091(8);
    // Start inside the fourth frame.
    let frames_start = 8 + f091(1, 1, &[0; 8]).len() + 3;
    let cut = frames_start;
    let mid = &full[cut..];
    let mut p = PcapFile::new(Link::Sll2, true, true);
    // No SYN: the server side speaks first in the capture; orientation from port 5672.
    p.packet(0, s, c, 77, ACK, &f091(8, 0, b""));
    for (k, part) in mid.chunks(50).enumerate() {
        p.packet(10 + k as i64, c, s, 123_456 + (k * 50) as u32, ACK, part);
    }
    let f = p.write();
    let evs = collect(f.path(), CaptureOptions::default());
    assert_eq!(connects(&evs), vec![(1, c, s)]);
    let g = gaps(&evs);
    // The server spoke first: what the client sent before is unknown from the start (an
    // empty gap), then its bytes are searched for a frame boundary.
    let c2s: Vec<_> = g.iter().filter(|g| g.1 == Dir::C2S).collect();
    assert_eq!((c2s[0].2, c2s[0].3, c2s[0].4), (0, 0, None), "{c2s:?}");
    let c2s_gap = c2s.get(1).expect("a resync gap");
    // The next frame boundary after the cut.
    let boundary = {
        let mut at = 8usize;
        while at < cut {
            let size = u32::from_be_bytes([full[at + 3], full[at + 4], full[at + 5], full[at + 6]])
                as usize;
            at += size + 8;
        }
        at
    };
    let skipped = (boundary - cut) as u64;
    assert_eq!((c2s_gap.2, c2s_gap.3), (0, skipped));
    assert_eq!(c2s_gap.4, Some(ProtocolHeader::Amqp091));
    assert!(
        c2s_gap
            .5
            .contains(&format!("after skipping {skipped} bytes")),
        "{}",
        c2s_gap.5
    );
    assert_eq!(chunks(&evs, 1, Dir::C2S), full[boundary..]);
    // The server direction started at a frame boundary: resync found it at 0, nothing skipped.
    let s2c_gap = g.iter().find(|g| g.1 == Dir::S2C).unwrap();
    assert_eq!(
        (s2c_gap.2, s2c_gap.3, s2c_gap.4),
        (0, 0, Some(ProtocolHeader::Amqp091))
    );
    assert_eq!(chunks(&evs, 1, Dir::S2C), f091(8, 0, b""));
    assert_eq!(closes(&evs), vec![(1, CloseReason::CaptureEnded)]);
}

#[test]
fn amqp_found_by_header_on_any_port_and_other_tcp_ignored() {
    let mut p = PcapFile::new(Link::Ethernet, false, false);
    // HTTP on port 80: ignored.
    let (hc, hs): (SocketAddr, SocketAddr) = (
        "10.4.0.1:44000".parse().unwrap(),
        "10.4.0.2:80".parse().unwrap(),
    );
    conversation(
        &mut p,
        hc,
        hs,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n",
        1000,
    );
    // AMQP 1.0 on an odd port, found by its header.
    let (ac, as_): (SocketAddr, SocketAddr) = (
        "10.4.0.3:44001".parse().unwrap(),
        "10.4.0.4:12345".parse().unwrap(),
    );
    conversation(
        &mut p,
        ac,
        as_,
        b"AMQP\x00\x01\x00\x00\x00\x00\x00\x08\x02\x00\x00\x00",
        b"AMQP\x00\x01\x00\x00",
        1000,
    );
    // No SYN, odd ports, 0-9-1 header: the side sending AMQP first is the client.
    let (nc, ns): (SocketAddr, SocketAddr) = (
        "10.4.0.6:23456".parse().unwrap(),
        "10.4.0.5:40000".parse().unwrap(),
    );
    p.packet(100, nc, ns, 1, ACK, &stream_091(1));
    let f = p.write();
    let evs = collect(
        f.path(),
        CaptureOptions {
            ports: vec![],
            ..Default::default()
        },
    );
    assert_eq!(connects(&evs), vec![(1, ac, as_), (2, nc, ns)]);
    assert_eq!(chunks(&evs, 2, Dir::C2S), stream_091(1));
    assert!(gaps(&evs).is_empty());
}

#[test]
fn truncated_file_yields_what_is_there_then_an_error_at_the_cut() {
    let c: SocketAddr = "10.5.0.1:45000".parse().unwrap();
    let s: SocketAddr = "10.5.0.2:5672".parse().unwrap();
    let mut p = PcapFile::new(Link::Ethernet, false, false);
    p.packet(0, c, s, 1, SYN, b"");
    p.packet(1, s, c, 100, SYNACK, b"");
    let data = stream_091(2);
    p.packet(2, c, s, 2, ACK, &data[..40]);
    let cut_record = p.packet(3, c, s, 42, ACK, &data[40..]);
    let mut bytes = p.bytes.clone();
    bytes.truncate(cut_record + 30);
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&bytes).unwrap();
    let evs = collect(f.path(), CaptureOptions::default());
    assert_eq!(chunks(&evs, 1, Dir::C2S), data[..40]);
    assert_eq!(closes(&evs), vec![(1, CloseReason::CaptureEnded)]);
    match evs.last().unwrap() {
        SourceEvent::Error {
            file_offset,
            message,
        } => {
            assert_eq!(*file_offset, cut_record as u64);
            assert!(message.contains("truncated"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A file cut inside its header: nothing readable.
    let mut g = tempfile::NamedTempFile::new().unwrap();
    g.write_all(&p.bytes[..10]).unwrap();
    assert!(capture::open(g.path(), CaptureOptions::default()).is_err());
}

// ---------------------------------------------------------------- JSONL

#[test]
fn jsonl_lines_rebuild_the_same_chunks_and_gaps() {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let ts = |t: i64| Timestamp(T0 + t).rfc3339();
    let hdr = b"AMQP\x00\x00\x09\x01".to_vec();
    let m1 = f091(1, 0, &[0, 10, 0, 11, 1, 2, 3, 4]);
    let m2 = f091(1, 1, &[0, 20, 0, 10, 0]);
    let m3 = f091(8, 0, b"");
    let lines = [
        serde_json::json!({"v":1,"ts":ts(0),"conn":7,"event":"connect","client":"127.0.0.1:5000","upstream":"127.0.0.1:5672"}),
        serde_json::json!({"v":1,"ts":ts(1),"conn":7,"event":"header","dir":"c2s","proto":"amqp-0-9-1","offset":0,"raw":b64(&hdr)}),
        serde_json::json!({"v":1,"ts":ts(2),"conn":7,"event":"frame","dir":"c2s","proto":"amqp-0-9-1","offset":8,"raw":b64(&m1),"channel":0,"name":"connection.start-ok","fields":{},"summary":""}),
        serde_json::json!({"v":1,"ts":ts(3),"conn":7,"event":"violation","dir":"c2s","offset":8,"rule":"x","severity":"error","spec":"","message":"m"}),
        serde_json::json!({"v":1,"ts":ts(4),"conn":7,"event":"gap","dir":"c2s","offset":8 + m1.len(),"len":100,"reason":"capture loss"}),
        serde_json::json!({"v":1,"ts":ts(5),"conn":7,"event":"frame","dir":"c2s","proto":"amqp-0-9-1","offset":8 + m1.len() + 100,"raw":b64(&m2),"channel":1,"name":"channel.open","fields":{},"summary":""}),
        serde_json::json!({"v":1,"ts":ts(6),"conn":7,"event":"frame","dir":"s2c","proto":"amqp-0-9-1","offset":0,"raw":b64(&m3),"channel":0,"name":"heartbeat","fields":{},"summary":""}),
        serde_json::json!({"v":1,"ts":ts(7),"conn":7,"event":"close","reason":"client closed","bytes_c2s":200,"bytes_s2c":8}),
    ];
    let mut text = String::new();
    for l in &lines {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    text.push_str("{\"v\":1,\"ts\":\"trunc");
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    let evs = collect(f.path(), CaptureOptions::default());
    assert_eq!(
        connects(&evs),
        vec![(
            7,
            "127.0.0.1:5000".parse().unwrap(),
            "127.0.0.1:5672".parse().unwrap()
        )]
    );
    let c2s: Vec<Vec<u8>> = evs
        .iter()
        .filter_map(|e| match e {
            SourceEvent::Chunk(c) if c.dir == Dir::C2S => Some(c.bytes.to_vec()),
            _ => None,
        })
        .collect();
    assert_eq!(c2s, vec![hdr.clone(), m1.clone(), m2.clone()]);
    assert_eq!(chunks(&evs, 7, Dir::S2C), m3);
    let g = gaps(&evs);
    assert_eq!(g.len(), 1);
    assert_eq!(
        (g[0].2, g[0].3, g[0].4),
        ((8 + m1.len()) as u64, 100, Some(ProtocolHeader::Amqp091))
    );
    assert_eq!(
        closes(&evs),
        vec![(7, CloseReason::Closed { first: Dir::C2S })]
    );
    match evs.last().unwrap() {
        SourceEvent::Error { file_offset, .. } => {
            assert_eq!(*file_offset as usize, text.rfind('\n').unwrap() + 1)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn big_endian_pcapng_with_default_microsecond_resolution_reads() {
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    use pcap_file::{DataLink, Endianness};
    let c: SocketAddr = "10.6.0.1:46000".parse().unwrap();
    let s: SocketAddr = "10.6.0.2:5672".parse().unwrap();
    let mut p = PcapFile::new(Link::Sll, false, false);
    let data = stream_091(3);
    conversation(&mut p, c, s, &data, b"", 64);
    // Re-read the classic records and write them as a big-endian pcapng, default if_tsresol.
    let mut w = PcapNgWriter::with_endianness(Vec::new(), Endianness::Big).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock::new(DataLink::LINUX_SLL, 0))
        .unwrap();
    let mut at = 24;
    while at < p.bytes.len() {
        let rd = |o: usize| u32::from_le_bytes(p.bytes[o..o + 4].try_into().unwrap());
        let (sec, usec, len) = (rd(at) as u64, rd(at + 4) as u64, rd(at + 8) as usize);
        let frame = &p.bytes[at + 16..at + 16 + len];
        // pcap-file writes the Duration's nanoseconds as raw units: give it µs units.
        let raw_units = sec * 1_000_000 + usec;
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: std::time::Duration::from_nanos(raw_units),
            original_len: len as u32,
            data: std::borrow::Cow::Borrowed(frame),
            options: vec![],
        })
        .unwrap();
        at += 16 + len;
    }
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&w.into_inner()).unwrap();
    let evs = collect(f.path(), CaptureOptions::default());
    assert_eq!(connects(&evs), vec![(1, c, s)]);
    assert_eq!(chunks(&evs, 1, Dir::C2S), data);
    let ts = evs.iter().find_map(|e| match e {
        SourceEvent::Chunk(c) => Some(c.ts),
        _ => None,
    });
    assert_eq!(ts, Some(Timestamp(T0 + 10)));
}

/// A replayed connection starts when its SYN was captured, not at its first data.
#[test]
fn a_connection_starts_at_its_syn() {
    let mut p = PcapFile::new(Link::Ethernet, false, false);
    let c: SocketAddr = "10.1.1.1:41000".parse().unwrap();
    let s: SocketAddr = "10.1.1.2:5672".parse().unwrap();
    conversation(&mut p, c, s, &stream_091(2), &f091(8, 0, &[]), 100);
    let f = p.write();
    let evs = collect(f.path(), CaptureOptions::default());
    let connect_ts: Vec<i64> = evs
        .iter()
        .filter_map(|e| match e {
            SourceEvent::Connect { ts, .. } => Some(ts.0),
            _ => None,
        })
        .collect();
    let first_data = evs.iter().find_map(|e| match e {
        SourceEvent::Chunk(c) => Some(c.ts.0),
        _ => None,
    });
    assert_eq!(connect_ts, vec![T0], "the SYN's time");
    assert_eq!(first_data, Some(T0 + 10), "the first data comes later");
}
