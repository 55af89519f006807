//! Scripted AMQP 0-9-1 conversations for the state tracker tests: frames built with the codec's
//! encoder, fed with timestamps through `Inspector::chunk`, violations collected.
#![allow(dead_code)]

use amqpeek::codec::amqp091::{ContentHeader, FrameKind, Method, MethodKind, encode_frame};
pub use amqpeek::codec::amqp091::{MethodKind as K, Value};
use amqpeek::event::{EventKind, Violation};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::{Dir, Timestamp};
use bytes::Bytes;

/// A method with spec defaults and `args` set.
pub fn m(kind: MethodKind, args: &[(&str, Value)]) -> Method {
    let mut m = Method::with_defaults(kind);
    for (name, v) in args {
        m = m
            .set(name, v.clone())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    m
}
pub fn short(v: u16) -> Value {
    Value::Short(v)
}
pub fn long(v: u32) -> Value {
    Value::Long(v)
}
pub fn ll(v: u64) -> Value {
    Value::LongLong(v)
}
pub fn bit(v: bool) -> Value {
    Value::Bit(v)
}
pub fn sstr(v: &str) -> Value {
    Value::ShortStr(Bytes::copy_from_slice(v.as_bytes()))
}
pub fn lstr(v: &str) -> Value {
    Value::LongStr(Bytes::copy_from_slice(v.as_bytes()))
}

/// One connection's conversation.
pub struct Conv {
    pub insp: Inspector,
    out: Vec<amqpeek::Event>,
    now: i64,
}

impl Conv {
    /// The client has sent the 0-9-1 protocol header at t=0.
    pub fn new() -> Conv {
        let mut c = Conv::blank();
        c.insp.chunk(
            Dir::C2S,
            Timestamp(0),
            Bytes::from_static(b"AMQP\x00\x00\x09\x01"),
            &mut c.out,
        );
        c
    }

    /// A capture that starts in the middle of a 0-9-1 connection: 1000 bytes missed each way.
    pub fn mid_stream() -> Conv {
        let mut c = Conv::blank();
        for dir in [Dir::C2S, Dir::S2C] {
            c.insp.gap(
                dir,
                Timestamp(0),
                0,
                1000,
                "capture started mid-stream".into(),
                Some(amqpeek::codec::ProtocolHeader::Amqp091),
                &mut c.out,
            );
        }
        c
    }

    fn blank() -> Conv {
        Conv {
            insp: Inspector::new(1, InspectOptions::default()),
            out: Vec::new(),
            now: 0,
        }
    }

    /// The capture lost `len` bytes of `dir` here; decoding resumes at a 0-9-1 frame boundary.
    pub fn lost(&mut self, dir: Dir, len: u64) -> &mut Self {
        let offset = self.insp.bytes_seen(dir);
        self.insp.gap(
            dir,
            Timestamp(self.now),
            offset,
            len,
            "capture loss".into(),
            Some(amqpeek::codec::ProtocolHeader::Amqp091),
            &mut self.out,
        );
        self
    }

    /// Move the clock to `secs` seconds.
    pub fn at(&mut self, secs: u64) -> &mut Self {
        self.now = secs as i64 * 1_000_000;
        self
    }

    /// A raw frame in `dir`.
    pub fn frame(&mut self, dir: Dir, ch: u16, kind: FrameKind) -> &mut Self {
        let mut bytes = Vec::new();
        encode_frame(ch, &kind, &mut bytes);
        self.bytes(dir, bytes)
    }

    /// Raw bytes in `dir`.
    pub fn bytes(&mut self, dir: Dir, bytes: Vec<u8>) -> &mut Self {
        self.insp
            .chunk(dir, Timestamp(self.now), Bytes::from(bytes), &mut self.out);
        self
    }

    /// Raw bytes in `dir`, skimmed as a live view that fell behind would
    /// (`Inspector::skim`): passed over by frame sizes, not decoded.
    pub fn skim(&mut self, dir: Dir, bytes: Vec<u8>) -> &mut Self {
        self.insp
            .skim(dir, Timestamp(self.now), Bytes::from(bytes), &mut self.out);
        self
    }

    /// The client sends method `kind` with `args` on `ch`.
    pub fn c(&mut self, ch: u16, kind: MethodKind, args: &[(&str, Value)]) -> &mut Self {
        self.frame(Dir::C2S, ch, FrameKind::Method(m(kind, args).into()))
    }

    /// The server sends method `kind` with `args` on `ch`.
    pub fn s(&mut self, ch: u16, kind: MethodKind, args: &[(&str, Value)]) -> &mut Self {
        self.frame(Dir::S2C, ch, FrameKind::Method(m(kind, args).into()))
    }

    /// A content header announcing `size` and body frames of `parts` bytes, in `dir`.
    pub fn content(&mut self, dir: Dir, ch: u16, size: u64, parts: &[usize]) -> &mut Self {
        self.frame(
            dir,
            ch,
            FrameKind::Header(ContentHeader::basic(size).into()),
        );
        for &p in parts {
            self.frame(dir, ch, FrameKind::Body(Bytes::from(vec![b'x'; p])));
        }
        self
    }

    /// The client publishes `body` bytes on `ch` (one body frame).
    pub fn publish(&mut self, ch: u16, body: usize) -> &mut Self {
        self.c(ch, K::BasicPublish, &[("routing-key", sstr("q"))]);
        let parts: &[usize] = if body == 0 { &[] } else { &[body] };
        self.content(Dir::C2S, ch, body as u64, parts)
    }

    /// The server delivers a message with `tag` to consumer `ctag` on `ch`.
    pub fn deliver(&mut self, ch: u16, ctag: &str, tag: u64) -> &mut Self {
        self.s(
            ch,
            K::BasicDeliver,
            &[("consumer-tag", sstr(ctag)), ("delivery-tag", ll(tag))],
        );
        self.content(Dir::S2C, ch, 2, &[2])
    }

    /// The handshake with the server proposing `tune` and the client answering `tune_ok`
    /// (channel-max, frame-max, heartbeat), up to open-ok.
    pub fn handshake_with(&mut self, tune: (u16, u32, u16), tune_ok: (u16, u32, u16)) -> &mut Self {
        self.s(
            0,
            K::ConnectionStart,
            &[
                ("mechanisms", lstr("AMQPLAIN PLAIN")),
                ("locales", lstr("en_US")),
            ],
        )
        .c(
            0,
            K::ConnectionStartOk,
            &[
                ("mechanism", sstr("PLAIN")),
                ("response", lstr("\0guest\0guest")),
            ],
        )
        .tune(tune, tune_ok)
        .c(0, K::ConnectionOpen, &[("virtual-host", sstr("/"))])
        .s(0, K::ConnectionOpenOk, &[])
    }

    /// tune and tune-ok.
    pub fn tune(&mut self, tune: (u16, u32, u16), tune_ok: (u16, u32, u16)) -> &mut Self {
        self.s(
            0,
            K::ConnectionTune,
            &[
                ("channel-max", short(tune.0)),
                ("frame-max", long(tune.1)),
                ("heartbeat", short(tune.2)),
            ],
        )
        .c(
            0,
            K::ConnectionTuneOk,
            &[
                ("channel-max", short(tune_ok.0)),
                ("frame-max", long(tune_ok.1)),
                ("heartbeat", short(tune_ok.2)),
            ],
        )
    }

    /// RabbitMQ's usual handshake: channel-max 2047, frame-max 131072, heartbeat 60.
    pub fn handshake(&mut self) -> &mut Self {
        self.handshake_with((2047, 131072, 60), (2047, 131072, 60))
    }

    /// Open channel `ch`.
    pub fn open(&mut self, ch: u16) -> &mut Self {
        self.c(ch, K::ChannelOpen, &[]).s(ch, K::ChannelOpenOk, &[])
    }

    /// A consumer `ctag` on `ch` (consume + consume-ok).
    pub fn consume(&mut self, ch: u16, ctag: &str, no_ack: bool) -> &mut Self {
        self.c(
            ch,
            K::BasicConsume,
            &[
                ("queue", sstr("q")),
                ("consumer-tag", sstr(ctag)),
                ("no-ack", bit(no_ack)),
            ],
        )
        .s(ch, K::BasicConsumeOk, &[("consumer-tag", sstr(ctag))])
    }

    /// The TCP connection ends at the current time (a FIN from both peers).
    pub fn end(&mut self) -> &mut Self {
        self.end_with("FIN both ways")
    }

    /// The connection ends as a close event's `reason` says (e.g. `capture ended with the
    /// connection open`: nothing known about how).
    pub fn end_with(&mut self, reason: &str) -> &mut Self {
        self.insp
            .close(Timestamp(self.now), reason.into(), &mut self.out);
        self
    }

    /// Every event so far.
    pub fn events(&self) -> &[amqpeek::Event] {
        &self.out
    }

    /// Every violation so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.out
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Violation(v) => Some(v.clone()),
                _ => None,
            })
            .collect()
    }

    /// The rule ids reported so far, in order.
    pub fn rules(&self) -> Vec<String> {
        self.violations()
            .into_iter()
            .map(|v| v.rule.id.to_string())
            .collect()
    }

    /// Assert exactly these rules were reported (in order).
    pub fn expect(&self, want: &[&str]) -> Vec<Violation> {
        let v = self.violations();
        let got: Vec<&str> = v.iter().map(|v| v.rule.id).collect();
        assert_eq!(got, want, "{v:#?}");
        v
    }

    /// Assert nothing was reported.
    pub fn clean(&self) {
        self.expect(&[]);
    }

    /// The tracker's snapshot.
    pub fn snapshot(&self) -> serde_json::Value {
        serde_json::to_value(self.insp.tracker().snapshot()).expect("a snapshot serialises")
    }

    /// The tracker's state name.
    pub fn state(&self) -> String {
        self.insp.tracker().state_name()
    }
}
