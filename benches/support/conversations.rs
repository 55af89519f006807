//! Generated captures of spec-correct AMQP 0-9-1 and AMQP 1.0 conversations, written by
//! `PcapngSink` as tcpdump on a real link would see them: the capture benchmark and
//! `examples/instructions.rs` (the per-frame instruction gate) measure the same traffic.
//! Included with `#[path]`; not a benchmark target of its own.
//!
//! 0-9-1 connections publish in confirm mode on one channel and consume with manual acks on
//! another; 1.0 connections send on one link and receive on another, settling in batches and
//! re-granting credit. Connections alternate between the two protocols.

#![allow(dead_code)]

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use amqpeek::codec::amqp10::{self as a10, Described, Descriptor, Str, Symbol, described_list};
use amqpeek::codec::amqp091::{
    self as a091, ContentHeader, FrameKind, Method, MethodKind as K, encode_frame,
};
use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::Sink;
use amqpeek::sinks::pcapng::PcapngSink;
use bytes::Bytes;

type Pcap = PcapngSink<BufWriter<File>>;

/// Bytes of whole frames gathered per direction before they go out as TCP segments.
const FLUSH_AT: usize = 16 * 1024;
/// Ethernet-sized segments, as tcpdump on a real link would see them.
const MSS: usize = 1448;
/// What the conversations carry.
pub struct Shape {
    /// Payload bytes per connection (then it closes and the next one opens).
    pub conn_bytes: u64,
    /// Body length of the `k`th message of a connection.
    pub body_len: fn(u64) -> usize,
}

/// The capture benchmark's traffic: 1 MiB connections of mostly small messages, now and then
/// one larger than frame-max.
pub const MIXED: Shape = Shape {
    conn_bytes: 1024 * 1024,
    body_len: mixed_body_len,
};

/// Small messages only (16 to 215 bytes), 256 KiB connections: a per-frame cost workload.
pub const SMALL: Shape = Shape {
    conn_bytes: 256 * 1024,
    body_len: small_body_len,
};

fn small_body_len(k: u64) -> usize {
    16 + (k * 7919 % 200) as usize
}

/// One TCP connection being written: frames are buffered per direction and written as
/// MSS-sized segments whenever the direction changes or the buffer is full, so the order of
/// frames across directions is the order the conversation produced them.
struct ConnWriter<'a> {
    sink: &'a mut Pcap,
    conn: u64,
    t: &'a mut i64,
    off: [u64; 2],
    dir: Dir,
    buf: Vec<u8>,
    frames: u64,
    /// Messages sent (0-9-1 publishes and deliveries, 1.0 transfers).
    transfers: u64,
}

impl<'a> ConnWriter<'a> {
    fn open(sink: &'a mut Pcap, conn: u64, t: &'a mut i64) -> Self {
        let client = format!(
            "10.0.{}.{}:{}",
            conn / 250 % 250,
            conn % 250 + 1,
            30000 + conn % 30000
        )
        .parse()
        .unwrap();
        let ev = Event {
            conn,
            ts: Timestamp(*t),
            kind: EventKind::Connect {
                client,
                upstream: "10.1.0.1:5672".parse().unwrap(),
            },
        };
        sink.event(&ev).unwrap();
        ConnWriter {
            sink,
            conn,
            t,
            off: [0; 2],
            dir: Dir::C2S,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            frames: 0,
            transfers: 0,
        }
    }

    fn bytes(&mut self, dir: Dir, b: &[u8]) {
        if dir != self.dir {
            self.flush();
            self.dir = dir;
        }
        self.buf.extend_from_slice(b);
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        *self.t += 40;
        let buf = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(FLUSH_AT + 4096),
        ));
        let dir = self.dir;
        let mut at = 0;
        while at < buf.len() {
            let end = (at + MSS).min(buf.len());
            let ev = Event {
                conn: self.conn,
                ts: Timestamp(*self.t),
                kind: EventKind::Data {
                    dir,
                    offset: self.off[dir.index()] + at as u64,
                    bytes: buf.slice(at..end),
                },
            };
            self.sink.event(&ev).unwrap();
            at = end;
        }
        self.off[dir.index()] += buf.len() as u64;
    }

    fn total(&self) -> u64 {
        self.off[0] + self.off[1] + self.buf.len() as u64
    }

    /// Writes the connection's close; returns (frames, transfers) written on it.
    fn close(mut self) -> (u64, u64) {
        self.flush();
        let ev = Event {
            conn: self.conn,
            ts: Timestamp(*self.t),
            kind: EventKind::Close(amqpeek::event::CloseInfo {
                reason: "client closed".into(),
                bytes_c2s: self.off[0],
                bytes_s2c: self.off[1],
            }),
        };
        self.sink.event(&ev).unwrap();
        self.sink.flush().unwrap();
        (self.frames, self.transfers)
    }
}

// ---------------------------------------------------------------- AMQP 0-9-1

fn sstr(s: &str) -> a091::Value {
    a091::Value::ShortStr(Bytes::copy_from_slice(s.as_bytes()))
}
fn lstr(s: &str) -> a091::Value {
    a091::Value::LongStr(Bytes::copy_from_slice(s.as_bytes()))
}
fn m(kind: K, args: &[(&str, a091::Value)]) -> Method {
    let mut m = Method::with_defaults(kind);
    for (name, v) in args {
        m = m.set(name, v.clone()).unwrap();
    }
    m
}

const FRAME_MAX: u32 = 131_072;

impl ConnWriter<'_> {
    fn f091(&mut self, dir: Dir, ch: u16, kind: FrameKind) {
        let mut out = Vec::new();
        encode_frame(ch, &kind, &mut out);
        self.frames += 1;
        self.bytes(dir, &out);
    }
    fn c(&mut self, ch: u16, kind: K, args: &[(&str, a091::Value)]) {
        self.f091(Dir::C2S, ch, FrameKind::Method(m(kind, args).into()));
    }
    fn s(&mut self, ch: u16, kind: K, args: &[(&str, a091::Value)]) {
        self.f091(Dir::S2C, ch, FrameKind::Method(m(kind, args).into()));
    }
    /// Content header (with properties) and body frames split at frame-max.
    fn content(&mut self, dir: Dir, ch: u16, k: u64, body: &Bytes) {
        self.transfers += 1;
        let mut h = ContentHeader::basic(body.len() as u64)
            .with("content-type", sstr("application/octet-stream"))
            .unwrap()
            .with("delivery-mode", a091::Value::Octet(2))
            .unwrap();
        if k.is_multiple_of(3) {
            h = h
                .with("message-id", sstr(&format!("msg-{k}")))
                .unwrap()
                .with("timestamp", a091::Value::Timestamp(1_764_417_600 + k))
                .unwrap();
        }
        self.f091(dir, ch, FrameKind::Header(h.into()));
        let max = (FRAME_MAX - 8) as usize;
        let mut at = 0;
        while at < body.len() {
            let end = (at + max).min(body.len());
            self.f091(dir, ch, FrameKind::Body(body.slice(at..end)));
            at = end;
        }
    }
}

fn mixed_body_len(k: u64) -> usize {
    if k.is_multiple_of(997) {
        200_000
    } else {
        100 + (k * 7919 % 3900) as usize
    }
}

fn conv_091(w: &mut ConnWriter, shape: &Shape, body: &Bytes) {
    w.bytes(Dir::C2S, b"AMQP\x00\x00\x09\x01");
    w.s(
        0,
        K::ConnectionStart,
        &[
            ("mechanisms", lstr("AMQPLAIN PLAIN")),
            ("locales", lstr("en_US")),
        ],
    );
    w.c(
        0,
        K::ConnectionStartOk,
        &[
            ("mechanism", sstr("PLAIN")),
            ("response", lstr("\0guest\0guest")),
        ],
    );
    let tune = [
        ("channel-max", a091::Value::Short(2047)),
        ("frame-max", a091::Value::Long(FRAME_MAX)),
        ("heartbeat", a091::Value::Short(60)),
    ];
    w.s(0, K::ConnectionTune, &tune);
    w.c(0, K::ConnectionTuneOk, &tune);
    w.c(0, K::ConnectionOpen, &[("virtual-host", sstr("/"))]);
    w.s(0, K::ConnectionOpenOk, &[]);
    // Channel 1 publishes in confirm mode; channel 2 consumes with manual acks.
    w.c(1, K::ChannelOpen, &[]);
    w.s(1, K::ChannelOpenOk, &[]);
    w.c(1, K::ConfirmSelect, &[]);
    w.s(1, K::ConfirmSelectOk, &[]);
    w.c(2, K::ChannelOpen, &[]);
    w.s(2, K::ChannelOpenOk, &[]);
    w.c(
        2,
        K::BasicQos,
        &[("prefetch-count", a091::Value::Short(100))],
    );
    w.s(2, K::BasicQosOk, &[]);
    w.c(
        2,
        K::BasicConsume,
        &[("queue", sstr("q")), ("consumer-tag", sstr("ctag-1"))],
    );
    w.s(2, K::BasicConsumeOk, &[("consumer-tag", sstr("ctag-1"))]);
    let (mut pub_tag, mut del_tag, mut k) = (0u64, 0u64, 0u64);
    while w.total() < shape.conn_bytes {
        // A batch of publishes, then the broker confirms them (one multiple ack, or singly).
        let batch = 10 + k % 11;
        let first = pub_tag + 1;
        for _ in 0..batch {
            k += 1;
            pub_tag += 1;
            w.c(
                1,
                K::BasicPublish,
                &[("exchange", sstr("")), ("routing-key", sstr("q"))],
            );
            w.content(Dir::C2S, 1, k, &body.slice(..(shape.body_len)(k)));
        }
        if k.is_multiple_of(2) {
            w.s(
                1,
                K::BasicAck,
                &[
                    ("delivery-tag", a091::Value::LongLong(pub_tag)),
                    ("multiple", a091::Value::Bit(true)),
                ],
            );
        } else {
            for t in first..=pub_tag {
                w.s(
                    1,
                    K::BasicAck,
                    &[("delivery-tag", a091::Value::LongLong(t))],
                );
            }
        }
        // The broker delivers them to the consumer, which acks each.
        for _ in 0..batch {
            del_tag += 1;
            w.s(
                2,
                K::BasicDeliver,
                &[
                    ("consumer-tag", sstr("ctag-1")),
                    ("delivery-tag", a091::Value::LongLong(del_tag)),
                    ("exchange", sstr("")),
                    ("routing-key", sstr("q")),
                ],
            );
            w.content(
                Dir::S2C,
                2,
                del_tag,
                &body.slice(..(shape.body_len)(del_tag)),
            );
            w.c(
                2,
                K::BasicAck,
                &[("delivery-tag", a091::Value::LongLong(del_tag))],
            );
        }
    }
    for ch in [1, 2] {
        w.c(
            ch,
            K::ChannelClose,
            &[
                ("reply-code", a091::Value::Short(200)),
                ("reply-text", sstr("OK")),
            ],
        );
        w.s(ch, K::ChannelCloseOk, &[]);
    }
    w.c(
        0,
        K::ConnectionClose,
        &[
            ("reply-code", a091::Value::Short(200)),
            ("reply-text", sstr("OK")),
        ],
    );
    w.s(0, K::ConnectionCloseOk, &[]);
}

// ---------------------------------------------------------------- AMQP 1.0

fn s10(x: &str) -> a10::Value {
    a10::Value::String(Str::from(x))
}
fn sym(x: &str) -> a10::Value {
    a10::Value::Symbol(Symbol(Str::from(x)))
}
fn u(x: u32) -> a10::Value {
    a10::Value::Uint(x)
}
const NULL: a10::Value = a10::Value::Null;
const CREDIT: u32 = 100;
const WINDOW: u32 = 5000;

fn attach(name: &str, handle: u32, receiver: bool) -> a10::Value {
    let mut f = vec![
        s10(name),
        u(handle),
        a10::Value::Bool(receiver),
        NULL,
        NULL,
        described_list(0x28, vec![s10("q")]),
        described_list(0x29, vec![s10("q")]),
    ];
    if !receiver {
        f.extend([NULL, NULL, u(0)]); // initial-delivery-count
    }
    described_list(0x12, f)
}

/// A message: header (sometimes), properties, then a data or an amqp-value section.
fn message10(k: u64, body: &Bytes) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 64);
    if k.is_multiple_of(4) {
        described_list(0x70, vec![a10::Value::Bool(true)])
            .encode(&mut out)
            .unwrap();
    }
    described_list(
        0x73,
        vec![
            a10::Value::Ulong(k),
            NULL,
            s10("/queues/q"),
            s10("bench"),
            NULL,
            NULL,
            sym("application/octet-stream"),
        ],
    )
    .encode(&mut out)
    .unwrap();
    let (code, value) = if k.is_multiple_of(5) {
        (0x77, s10(&format!("hello {k}")))
    } else {
        (0x75, a10::Value::Binary(body.clone()))
    };
    a10::Value::Described(Box::new(Described {
        descriptor: Descriptor::Code(code),
        value,
    }))
    .encode(&mut out)
    .unwrap();
    out
}

/// One side's session counters.
#[derive(Default)]
struct Side {
    next_out: u32,
    delivery_id: u32,
    /// Deliveries sent on the link since the last credit grant.
    sent_since_grant: u32,
    delivery_count: u32,
}

impl ConnWriter<'_> {
    fn f10(&mut self, dir: Dir, p: &a10::Value, payload: &[u8]) {
        let f = a10::encode_frame(0, 0, Some(p), payload).unwrap();
        self.frames += 1;
        self.bytes(dir, &f);
    }
    /// A link flow from the side receiving in `dir`'s reverse, whose peer is `peer`.
    fn link_flow(&mut self, dir: Dir, me: &Side, peer: &Side, handle: u32, dc: u32) {
        let p = described_list(
            0x13,
            vec![
                u(peer.next_out),
                u(WINDOW),
                u(me.next_out),
                u(WINDOW),
                u(handle),
                u(dc),
                u(CREDIT),
            ],
        );
        self.f10(dir, &p, &[]);
    }
    /// `sender` (in `dir`) transfers one unsettled message on `handle`.
    fn transfer(&mut self, dir: Dir, sender: &mut Side, handle: u32, k: u64, body: &Bytes) {
        let id = sender.delivery_id;
        let p = described_list(
            0x14,
            vec![
                u(handle),
                u(id),
                a10::Value::Binary(Bytes::copy_from_slice(&id.to_be_bytes())),
                u(0),
                a10::Value::Bool(false),
            ],
        );
        let msg = message10(k, body);
        self.transfers += 1;
        self.f10(dir, &p, &msg);
        sender.delivery_id = sender.delivery_id.wrapping_add(1);
        sender.next_out = sender.next_out.wrapping_add(1);
        sender.sent_since_grant += 1;
        sender.delivery_count = sender.delivery_count.wrapping_add(1);
    }
    /// The receiver (in `dir`) settles `first..=last` as accepted.
    fn settle(&mut self, dir: Dir, first: u32, last: u32) {
        let p = described_list(
            0x15,
            vec![
                a10::Value::Bool(true),
                u(first),
                u(last),
                a10::Value::Bool(true),
                described_list(0x24, vec![]),
            ],
        );
        self.f10(dir, &p, &[]);
    }
}

fn conv_10(w: &mut ConnWriter, shape: &Shape, body: &Bytes) {
    const HDR: &[u8] = b"AMQP\x00\x01\x00\x00";
    w.bytes(Dir::C2S, HDR);
    w.bytes(Dir::S2C, HDR);
    w.f10(
        Dir::C2S,
        &described_list(0x10, vec![s10("client-1"), s10("localhost")]),
        &[],
    );
    w.f10(
        Dir::S2C,
        &described_list(
            0x10,
            vec![s10("broker"), NULL, u(1 << 20), a10::Value::Ushort(255)],
        ),
        &[],
    );
    let begin = |remote: Option<u16>| {
        described_list(
            0x11,
            vec![
                remote.map_or(NULL, a10::Value::Ushort),
                u(0),
                u(WINDOW),
                u(WINDOW),
            ],
        )
    };
    w.f10(Dir::C2S, &begin(None), &[]);
    w.f10(Dir::S2C, &begin(Some(0)), &[]);
    let (mut cl, mut sv) = (Side::default(), Side::default());
    // Handle 0: the client's sender; handle 1: the client's receiver.
    w.f10(Dir::C2S, &attach("sender", 0, false), &[]);
    w.f10(Dir::S2C, &attach("sender", 0, true), &[]);
    w.link_flow(Dir::S2C, &sv, &cl, 0, 0);
    w.f10(Dir::C2S, &attach("receiver", 1, true), &[]);
    w.f10(Dir::S2C, &attach("receiver", 1, false), &[]);
    w.link_flow(Dir::C2S, &cl, &sv, 1, 0);
    let mut k = 0u64;
    while w.total() < shape.conn_bytes {
        let batch = 10 + (k % 11) as u32;
        // The client sends a batch; the broker settles it, re-granting credit when used up.
        let first = cl.delivery_id;
        for _ in 0..batch {
            if cl.sent_since_grant == CREDIT {
                break;
            }
            k += 1;
            w.transfer(
                Dir::C2S,
                &mut cl,
                0,
                k,
                &body.slice(..(shape.body_len)(k) % 60_000),
            );
        }
        w.settle(Dir::S2C, first, cl.delivery_id.wrapping_sub(1));
        if cl.sent_since_grant == CREDIT {
            cl.sent_since_grant = 0;
            w.link_flow(Dir::S2C, &sv, &cl, 0, cl.delivery_count);
        }
        // The broker sends a batch to the client's receiver, which settles it.
        let first = sv.delivery_id;
        for _ in 0..batch {
            if sv.sent_since_grant == CREDIT {
                break;
            }
            k += 1;
            w.transfer(
                Dir::S2C,
                &mut sv,
                1,
                k,
                &body.slice(..(shape.body_len)(k) % 60_000),
            );
        }
        w.settle(Dir::C2S, first, sv.delivery_id.wrapping_sub(1));
        if sv.sent_since_grant == CREDIT {
            sv.sent_since_grant = 0;
            w.link_flow(Dir::C2S, &cl, &sv, 1, sv.delivery_count);
        }
    }
    for h in [0, 1] {
        let d = described_list(0x16, vec![u(h), a10::Value::Bool(true)]);
        w.f10(Dir::C2S, &d, &[]);
        w.f10(Dir::S2C, &d, &[]);
    }
    w.f10(Dir::C2S, &described_list(0x17, vec![]), &[]);
    w.f10(Dir::S2C, &described_list(0x17, vec![]), &[]);
    w.f10(Dir::C2S, &described_list(0x18, vec![]), &[]);
    w.f10(Dir::S2C, &described_list(0x18, vec![]), &[]);
}

/// When [`write`] stops opening connections.
pub enum Stop {
    /// Once this many payload bytes are written.
    Bytes(u64),
    /// Once this many messages are sent.
    Transfers(u64),
}

/// What [`write`] wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct Written {
    /// AMQP frames (protocol headers not counted).
    pub frames: u64,
    /// Messages sent.
    pub transfers: u64,
    /// TCP payload bytes.
    pub bytes: u64,
    /// Connections.
    pub conns: u64,
}

/// Writes a pcapng of whole conversations to `path`, odd connections 0-9-1 and even ones
/// 1.0, until `stop` is reached.
pub fn write(path: &Path, shape: &Shape, stop: Stop) -> Written {
    let body = Bytes::from(
        (0..200_000u32)
            .map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789"[(i % 36) as usize])
            .collect::<Vec<u8>>(),
    );
    let mut sink = PcapngSink::create(path).unwrap();
    let mut done = Written::default();
    let mut t = 1_764_417_600_000_000i64;
    while match stop {
        Stop::Bytes(n) => done.bytes < n,
        Stop::Transfers(n) => done.transfers < n,
    } {
        done.conns += 1;
        let mut w = ConnWriter::open(&mut sink, done.conns, &mut t);
        if done.conns % 2 == 1 {
            conv_091(&mut w, shape, &body);
        } else {
            conv_10(&mut w, shape, &body);
        }
        done.bytes += w.total();
        let (frames, transfers) = w.close();
        done.frames += frames;
        done.transfers += transfers;
    }
    done
}

/// What [`write_links`] generates: one AMQP 1.0 connection and session holding `links`
/// attached links that are never detached, and `deliveries` unsettled transfers on the first.
pub struct ManyLinks {
    /// Links the client attaches (and the broker answers), `link-0`, `link-1`, ...
    pub links: u32,
    /// Unsettled transfers the client sends on `link-0`.
    pub deliveries: u32,
    /// With `Some(lag)`, the broker settles each delivery once `lag` later ones are sent
    /// (a disposition of one delivery-id among `lag` unsettled); with `None`, none is settled.
    pub settle_lag: Option<u32>,
}

/// Writes one AMQP 1.0 connection as [`ManyLinks`] says (then closed with close frames, no
/// detach or end): the workload of the tracker's keyed lookups.
pub fn write_links(path: &Path, shape: &ManyLinks) -> Written {
    const HDR: &[u8] = b"AMQP\x00\x01\x00\x00";
    const WIDE: u32 = u32::MAX / 2;
    let mut sink = PcapngSink::create(path).unwrap();
    let mut t = 1_764_417_600_000_000i64;
    let mut w = ConnWriter::open(&mut sink, 1, &mut t);
    w.bytes(Dir::C2S, HDR);
    w.bytes(Dir::S2C, HDR);
    w.f10(Dir::C2S, &described_list(0x10, vec![s10("client-1")]), &[]);
    w.f10(Dir::S2C, &described_list(0x10, vec![s10("broker")]), &[]);
    let begin = |remote: Option<u16>| {
        let remote = remote.map_or(NULL, a10::Value::Ushort);
        described_list(0x11, vec![remote, u(0), u(WIDE), u(WIDE)])
    };
    w.f10(Dir::C2S, &begin(None), &[]);
    w.f10(Dir::S2C, &begin(Some(0)), &[]);
    for i in 0..shape.links {
        let name = format!("link-{i}");
        w.f10(Dir::C2S, &attach(&name, i, false), &[]);
        w.f10(Dir::S2C, &attach(&name, i, true), &[]);
        if i == 0 {
            let flow = vec![u(0), u(WIDE), u(0), u(WIDE), u(0), u(0), u(WIDE)];
            w.f10(Dir::S2C, &described_list(0x13, flow), &[]);
        }
    }
    let data = [0x00, 0x53, 0x75, 0xa0, 0x01, b'x'];
    for id in 0..shape.deliveries {
        let tag = a10::Value::Binary(Bytes::copy_from_slice(&id.to_be_bytes()));
        let p = described_list(0x14, vec![u(0), u(id), tag, u(0), a10::Value::Bool(false)]);
        w.transfers += 1;
        w.f10(Dir::C2S, &p, &data);
        if let Some(lag) = shape.settle_lag
            && id >= lag
        {
            w.settle(Dir::S2C, id - lag, id - lag);
        }
    }
    w.f10(Dir::C2S, &described_list(0x18, vec![]), &[]);
    w.f10(Dir::S2C, &described_list(0x18, vec![]), &[]);
    let bytes = w.total();
    let (frames, transfers) = w.close();
    Written {
        frames,
        transfers,
        bytes,
        conns: 1,
    }
}
