//! Shared helpers of the diagnosis tests: frames of both protocols built with the library's
//! encoders, and a [`Conv`] that feeds them through the real inspector at chosen times and
//! collects the diagnoses it makes.
#![allow(dead_code)]

use std::sync::Arc;

use amqpeek::base::Diagnosis;
use amqpeek::event::{CloseReason, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::state::diagnose::Thresholds;
use bytes::Bytes;

/// 2025-11-29T12:00:00Z, µs.
pub const T0: i64 = 1_764_417_600_000_000;

/// One connection fed through the real inspector: each [`Conv::send`] is one chunk, `step_ms`
/// after the previous one unless [`Conv::wait`] moved the clock.
pub struct Conv {
    insp: Inspector,
    /// The clock, µs.
    pub now: i64,
    /// The diagnosis events (starts and ends), in order.
    pub diags: Vec<Arc<Diagnosis>>,
    /// Bytes sent so far per direction (the offset of the next frame).
    pub offset: [u64; 2],
    step_us: i64,
}

impl Conv {
    /// A connection with thresholds `limits` (`ID`, seconds or a count).
    pub fn new(limits: &[(&str, f64)]) -> Conv {
        let mut t = Thresholds::new();
        for (id, v) in limits {
            t.set(id, *v).unwrap();
        }
        let opts = InspectOptions {
            emit_data: false,
            emit_state: false,
            diagnosis: Some(Arc::new(t)),
            ..InspectOptions::default()
        };
        Conv {
            insp: Inspector::new(1, opts),
            now: T0,
            diags: Vec::new(),
            offset: [0; 2],
            step_us: 1000,
        }
    }

    fn collect(&mut self, out: Vec<Event>) {
        for e in out {
            if let EventKind::Diagnosis(d) = e.kind {
                self.diags.push(d);
            }
        }
    }

    /// `bytes` from `dir`, one chunk; returns the offset it starts at.
    pub fn send(&mut self, dir: Dir, bytes: &[u8]) -> u64 {
        self.now += self.step_us;
        let at = self.offset[dir.index()];
        self.offset[dir.index()] += bytes.len() as u64;
        let mut out = Vec::new();
        self.insp.chunk(
            dir,
            Timestamp(self.now),
            Bytes::copy_from_slice(bytes),
            &mut out,
        );
        self.collect(out);
        at
    }

    /// The client sends `bytes`.
    pub fn c(&mut self, bytes: &[u8]) -> u64 {
        self.send(Dir::C2S, bytes)
    }

    /// The server sends `bytes`.
    pub fn s(&mut self, bytes: &[u8]) -> u64 {
        self.send(Dir::S2C, bytes)
    }

    /// The clock moves `ms` on, ticking every 100 ms as a live driver would.
    pub fn wait(&mut self, ms: i64) {
        let end = self.now + ms * 1000;
        while self.now < end {
            self.now = (self.now + 100_000).min(end);
            let mut out = Vec::new();
            self.insp.tick(Timestamp(self.now), &mut out);
            self.collect(out);
        }
    }

    /// The connection ends (the capture ends): every diagnosis still held ends too.
    pub fn close(&mut self) {
        self.now += self.step_us;
        let mut out = Vec::new();
        self.insp
            .close(Timestamp(self.now), CloseReason::CaptureEnded, &mut out);
        self.collect(out);
    }

    /// The ids of the diagnoses started, in order.
    pub fn started(&self) -> Vec<&'static str> {
        self.diags
            .iter()
            .filter(|d| d.ended.is_none())
            .map(|d| d.check.id)
            .collect()
    }

    /// The start events of `id`.
    pub fn starts_of(&self, id: &str) -> Vec<Arc<Diagnosis>> {
        self.diags
            .iter()
            .filter(|d| d.ended.is_none() && d.check.id == id)
            .cloned()
            .collect()
    }

    /// The end events of `id`.
    pub fn ends_of(&self, id: &str) -> Vec<Arc<Diagnosis>> {
        self.diags
            .iter()
            .filter(|d| d.ended.is_some() && d.check.id == id)
            .cloned()
            .collect()
    }

    /// Every diagnosis, one per line, for assertion messages.
    pub fn dump(&self) -> String {
        self.diags
            .iter()
            .map(|d| {
                format!(
                    "{} {} [{}] {} {:?}",
                    if d.ended.is_some() { "end" } else { "start" },
                    d.check.id,
                    d.name,
                    d.detail,
                    d.ended.as_ref().map(|e| e.why)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Exactly one diagnosis of `id` started; it is returned.
    pub fn one(&self, id: &str) -> Arc<Diagnosis> {
        let s = self.starts_of(id);
        assert_eq!(s.len(), 1, "one {id} expected:\n{}", self.dump());
        s[0].clone()
    }

    /// No diagnosis at all.
    pub fn none(&self) {
        assert!(
            self.diags.is_empty(),
            "no diagnosis expected:\n{}",
            self.dump()
        );
    }
}

/// AMQP 1.0 frames.
pub mod a10 {
    use amqpeek::codec::amqp10::{
        Described, Descriptor, Str, Symbol, Value, described_list, encode_frame,
    };
    use bytes::Bytes;

    pub const HEADER: &[u8] = b"AMQP\x00\x01\x00\x00";
    /// An empty frame (a heartbeat, §2.4.5).
    pub const EMPTY: &[u8] = &[0, 0, 0, 8, 2, 0, 0, 0];

    pub fn s(x: &str) -> Value {
        Value::String(Str::from(x))
    }
    pub fn sym(x: &str) -> Value {
        Value::Symbol(Symbol(Str::from(x)))
    }
    pub fn u(x: u32) -> Value {
        Value::Uint(x)
    }
    pub fn b(x: bool) -> Value {
        Value::Bool(x)
    }
    pub fn opt(x: Option<u32>) -> Value {
        x.map_or(Value::Null, Value::Uint)
    }
    pub const NULL: Value = Value::Null;

    /// A frame on `channel` with performative `p` and `payload`.
    pub fn frame(channel: u16, p: Value, payload: &[u8]) -> Vec<u8> {
        encode_frame(0, channel, Some(&p), payload).unwrap()
    }

    fn described(code: u64, value: Value) -> Value {
        Value::Described(Box::new(Described {
            descriptor: Descriptor::Code(code),
            value,
        }))
    }

    /// An open of `container`, asking its partner for activity within `idle_ms`.
    pub fn open(container: &str, idle_ms: Option<u32>) -> Vec<u8> {
        let fields = vec![s(container), NULL, NULL, NULL, opt(idle_ms)];
        frame(0, described_list(0x10, fields), &[])
    }

    /// A begin on `channel` (answering `remote`), with next-outgoing-id 0 and `window` as
    /// both windows.
    pub fn begin(channel: u16, remote: Option<u16>, window: u32) -> Vec<u8> {
        let remote = remote.map_or(NULL, Value::Ushort);
        let fields = vec![remote, u(0), u(window), u(window)];
        frame(channel, described_list(0x11, fields), &[])
    }

    /// An attach of `name` on `handle` by its sender (`receiver` false: initial-delivery-count
    /// 0) or its receiver, from `addr` to `addr`.
    pub fn attach(channel: u16, name: &str, handle: u32, receiver: bool, addr: &str) -> Vec<u8> {
        let mut f = vec![
            s(name),
            u(handle),
            b(receiver),
            NULL,
            NULL,
            described_list(0x28, vec![s(addr)]),
            described_list(0x29, vec![s(addr)]),
        ];
        if !receiver {
            f.extend([NULL, NULL, u(0)]);
        }
        frame(channel, described_list(0x12, f), &[])
    }

    /// A flow's fields.
    #[derive(Clone, Copy, Debug)]
    pub struct Fl {
        pub next_in: Option<u32>,
        pub in_window: u32,
        pub next_out: u32,
        pub out_window: u32,
        /// The link part: handle.
        pub handle: Option<u32>,
        pub delivery_count: Option<u32>,
        pub credit: Option<u32>,
        pub available: Option<u32>,
        pub drain: bool,
    }

    /// A session flow with wide windows, next-incoming-id 0.
    pub const FL: Fl = Fl {
        next_in: Some(0),
        in_window: 1000,
        next_out: 0,
        out_window: 1000,
        handle: None,
        delivery_count: None,
        credit: None,
        available: None,
        drain: false,
    };

    pub fn flow_of(channel: u16, f: Fl) -> Vec<u8> {
        let mut fields = vec![
            opt(f.next_in),
            u(f.in_window),
            u(f.next_out),
            u(f.out_window),
        ];
        if let Some(h) = f.handle {
            fields.extend([
                u(h),
                opt(f.delivery_count),
                opt(f.credit),
                opt(f.available),
                b(f.drain),
            ]);
        }
        frame(channel, described_list(0x13, fields), &[])
    }

    /// A link flow of `handle`: `credit` at delivery-count `dc` (wide session windows,
    /// next-incoming-id `next_in`).
    pub fn flow(channel: u16, handle: u32, dc: Option<u32>, credit: u32, next_in: u32) -> Vec<u8> {
        flow_of(
            channel,
            Fl {
                next_in: Some(next_in),
                handle: Some(handle),
                delivery_count: dc,
                credit: Some(credit),
                ..FL
            },
        )
    }

    /// A data section holding `body`.
    pub fn data(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        described(0x75, Value::Binary(Bytes::copy_from_slice(body)))
            .encode(&mut out)
            .unwrap();
        out
    }

    /// A message whose header says `delivery_count` earlier attempts, with message-id `id`.
    pub fn message_redelivered(delivery_count: u32, id: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let header = vec![b(true), NULL, NULL, NULL, u(delivery_count)];
        described_list(0x70, header).encode(&mut out).unwrap();
        described_list(0x73, vec![s(id)]).encode(&mut out).unwrap();
        out.extend(data(b"poison"));
        out
    }

    /// A CBS put-token request for audience `name`, expiring at `expires_ms` (ms since the
    /// epoch).
    pub fn put_token(name: &str, expires_ms: i64) -> Vec<u8> {
        let mut out = Vec::new();
        described_list(
            0x73,
            vec![u(1), NULL, s("$cbs"), NULL, NULL, s("cbs-reply")],
        )
        .encode(&mut out)
        .unwrap();
        let props = Value::Map(vec![
            (s("operation"), s("put-token")),
            (s("type"), s("jwt")),
            (s("name"), s(name)),
            (s("expiration"), Value::Timestamp(expires_ms)),
        ]);
        described(0x74, props).encode(&mut out).unwrap();
        described(0x77, s("secret-token")).encode(&mut out).unwrap();
        out
    }

    /// A transfer on `handle` of delivery `id` (tag: its number), unsettled unless `settled`,
    /// carrying `payload`.
    pub fn transfer_with(
        channel: u16,
        handle: u32,
        id: u32,
        settled: bool,
        payload: &[u8],
    ) -> Vec<u8> {
        let tag = Value::Binary(Bytes::copy_from_slice(&id.to_be_bytes()));
        let p = described_list(0x14, vec![u(handle), u(id), tag, u(0), b(settled)]);
        frame(channel, p, payload)
    }

    /// An unsettled transfer with a small data body.
    pub fn transfer(channel: u16, handle: u32, id: u32) -> Vec<u8> {
        transfer_with(channel, handle, id, false, &data(b"hello"))
    }

    /// A settled disposition of `first..=last` by the receiver (`receiver`) or the sender,
    /// with `outcome` (0x24 accepted, 0x25 rejected, 0x26 released, 0x27 modified).
    pub fn disposition(
        channel: u16,
        receiver: bool,
        first: u32,
        last: u32,
        outcome: u64,
    ) -> Vec<u8> {
        let p = described_list(
            0x15,
            vec![
                b(receiver),
                u(first),
                u(last),
                b(true),
                described_list(outcome, vec![]),
            ],
        );
        frame(channel, p, &[])
    }

    /// A closing detach of `handle`, with error `condition` when given.
    pub fn detach(channel: u16, handle: u32, condition: Option<&str>) -> Vec<u8> {
        let err = condition.map_or(NULL, |c| described_list(0x1d, vec![sym(c), s("gone")]));
        frame(
            channel,
            described_list(0x16, vec![u(handle), b(true), err]),
            &[],
        )
    }

    pub fn end(channel: u16) -> Vec<u8> {
        frame(channel, described_list(0x17, vec![]), &[])
    }

    pub fn close() -> Vec<u8> {
        frame(0, described_list(0x18, vec![]), &[])
    }
}

/// AMQP 0-9-1 frames.
pub mod a091 {
    use amqpeek::codec::amqp091::{
        ContentHeader, FrameKind, Method, MethodKind, Value, encode_frame,
    };
    use bytes::Bytes;

    pub use amqpeek::codec::amqp091::MethodKind as K;

    pub const HEADER: &[u8] = b"AMQP\x00\x00\x09\x01";

    pub fn ss(s: &str) -> Value {
        Value::ShortStr(Bytes::copy_from_slice(s.as_bytes()))
    }
    pub fn ls(s: &str) -> Value {
        Value::LongStr(Bytes::copy_from_slice(s.as_bytes()))
    }
    pub fn tag(n: u64) -> (&'static str, Value) {
        ("delivery-tag", Value::LongLong(n))
    }

    /// A method frame on `ch`.
    pub fn m(ch: u16, kind: MethodKind, args: &[(&str, Value)]) -> Vec<u8> {
        let mut meth = Method::with_defaults(kind);
        for (name, v) in args {
            meth = meth.set(name, v.clone()).unwrap();
        }
        let mut out = Vec::new();
        encode_frame(ch, &FrameKind::Method(meth.into()), &mut out);
        out
    }

    /// A content header and body frame of `body`, with message-id `id` when given.
    pub fn content(ch: u16, body: &[u8], id: Option<&str>) -> Vec<u8> {
        let mut h = ContentHeader::basic(body.len() as u64);
        if let Some(id) = id {
            h = h.with("message-id", ss(id)).unwrap();
        }
        let mut out = Vec::new();
        encode_frame(ch, &FrameKind::Header(h.into()), &mut out);
        encode_frame(ch, &FrameKind::Body(Bytes::copy_from_slice(body)), &mut out);
        out
    }

    pub fn heartbeat() -> Vec<u8> {
        let mut out = Vec::new();
        encode_frame(0, &FrameKind::Heartbeat, &mut out);
        out
    }

    /// The client's and the server's frames of a handshake with `heartbeat` seconds, then
    /// channel 1 open: in order, each with its sender (true: the client).
    pub fn handshake(heartbeat: u16) -> Vec<(bool, Vec<u8>)> {
        let tune = [
            ("channel-max", Value::Short(2047)),
            ("frame-max", Value::Long(131_072)),
            ("heartbeat", Value::Short(heartbeat)),
        ];
        vec![
            (true, HEADER.to_vec()),
            (
                false,
                m(
                    0,
                    K::ConnectionStart,
                    &[("mechanisms", ls("PLAIN")), ("locales", ls("en_US"))],
                ),
            ),
            (
                true,
                m(
                    0,
                    K::ConnectionStartOk,
                    &[
                        ("mechanism", ss("PLAIN")),
                        ("response", ls("\0guest\0guest")),
                    ],
                ),
            ),
            (false, m(0, K::ConnectionTune, &tune)),
            (true, m(0, K::ConnectionTuneOk, &tune)),
            (true, m(0, K::ConnectionOpen, &[("virtual-host", ss("/"))])),
            (false, m(0, K::ConnectionOpenOk, &[])),
            (true, m(1, K::ChannelOpen, &[])),
            (false, m(1, K::ChannelOpenOk, &[])),
        ]
    }

    /// A basic.deliver on channel 1 to `ctag` of `tag`, with its content.
    pub fn deliver(ctag: &str, t: u64, redelivered: bool, id: Option<&str>) -> Vec<u8> {
        let mut out = m(
            1,
            K::BasicDeliver,
            &[
                ("consumer-tag", ss(ctag)),
                tag(t),
                ("redelivered", Value::Bit(redelivered)),
                ("exchange", ss("")),
                ("routing-key", ss("q")),
            ],
        );
        out.extend(content(1, b"hello", id));
        out
    }
}

/// Feed the 0-9-1 handshake of `heartbeat` seconds and channel 1's open.
pub fn handshake_091(c: &mut Conv, heartbeat: u16) {
    for (client, f) in a091::handshake(heartbeat) {
        if client {
            c.c(&f);
        } else {
            c.s(&f);
        }
    }
}

/// Feed the 1.0 headers, opens (the server's asking for `idle_ms`), and a session on channel
/// 0 with `window` as every window.
pub fn handshake_10(c: &mut Conv, idle_ms: Option<u32>, window: u32) {
    c.c(a10::HEADER);
    c.s(a10::HEADER);
    c.c(&a10::open("client", None));
    c.s(&a10::open("broker", idle_ms));
    c.c(&a10::begin(0, None, window));
    c.s(&a10::begin(0, Some(0), window));
}
