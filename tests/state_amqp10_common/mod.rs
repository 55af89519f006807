//! Script AMQP 1.0 conversations for the state tracker tests: frames built with the codec's
//! encoder, fed through `Inspector::chunk` in both directions with advancing timestamps; the
//! violations come back as rule ids.
#![allow(dead_code)]

use amqpeek::codec::amqp10::{
    Described, Descriptor, Str, Symbol, Value, described_list, encode_frame,
};
use amqpeek::event::{Dir, EventKind, Timestamp, Violation};
use amqpeek::pipeline::{InspectOptions, Inspector};
use bytes::Bytes;

pub const AMQP: &[u8] = b"AMQP\x00\x01\x00\x00";
pub const SASL: &[u8] = b"AMQP\x03\x01\x00\x00";

pub fn s(x: &str) -> Value {
    Value::String(Str::from(x))
}
pub fn sym(x: &str) -> Value {
    Value::Symbol(Symbol(Str::from(x)))
}
pub fn syms(xs: &[&str]) -> Value {
    Value::Array(Box::new(amqpeek::codec::amqp10::Array {
        descriptor: None,
        kind: amqpeek::codec::amqp10::Kind::Symbol,
        items: xs.iter().map(|x| sym(x)).collect(),
    }))
}
pub fn u(x: u32) -> Value {
    Value::Uint(x)
}
pub fn opt_u(x: Option<u32>) -> Value {
    x.map_or(Value::Null, Value::Uint)
}
pub fn b(x: bool) -> Value {
    Value::Bool(x)
}
pub fn bin(x: &[u8]) -> Value {
    Value::Binary(Bytes::copy_from_slice(x))
}
pub const NULL: Value = Value::Null;

/// open with container-id and the given extra fields (index, value).
pub fn open(extra: &[(usize, Value)]) -> Value {
    with(0x10, vec![s("container")], extra)
}
/// begin: remote-channel, next-outgoing-id, incoming-window, outgoing-window.
pub fn begin(remote: Option<u16>, next_out: u32, in_win: u32, out_win: u32) -> Value {
    described_list(
        0x11,
        vec![
            remote.map_or(NULL, Value::Ushort),
            u(next_out),
            u(in_win),
            u(out_win),
        ],
    )
}
pub fn begin_with(remote: Option<u16>, extra: &[(usize, Value)]) -> Value {
    with(
        0x11,
        vec![remote.map_or(NULL, Value::Ushort), u(0), u(1000), u(1000)],
        extra,
    )
}
pub fn source(addr: &str) -> Value {
    described_list(0x28, vec![s(addr)])
}
pub fn target(addr: Option<&str>) -> Value {
    described_list(0x29, vec![addr.map_or(NULL, s)])
}
/// attach of a sending link (role false) with initial-delivery-count 0.
pub fn attach_sender(name: &str, handle: u32, extra: &[(usize, Value)]) -> Value {
    with(
        0x12,
        vec![
            s(name),
            u(handle),
            b(false),
            NULL,
            NULL,
            source("src"),
            target(Some("q")),
            NULL,
            NULL,
            u(0),
        ],
        extra,
    )
}
/// attach of a receiving link (role true).
pub fn attach_receiver(name: &str, handle: u32, extra: &[(usize, Value)]) -> Value {
    with(
        0x12,
        vec![
            s(name),
            u(handle),
            b(true),
            NULL,
            NULL,
            source("src"),
            target(Some("q")),
        ],
        extra,
    )
}
/// A session-only flow.
pub fn flow(next_in: Option<u32>, in_win: u32, next_out: u32, out_win: u32) -> Value {
    described_list(
        0x13,
        vec![opt_u(next_in), u(in_win), u(next_out), u(out_win)],
    )
}
/// A link flow: handle, delivery-count, link-credit, drain (session fields generous).
pub fn link_flow(handle: u32, dc: Option<u32>, credit: Option<u32>, drain: bool) -> Value {
    described_list(
        0x13,
        vec![
            u(0),
            u(1000),
            u(0),
            u(1000),
            u(handle),
            opt_u(dc),
            opt_u(credit),
            NULL,
            b(drain),
        ],
    )
}
/// transfer: handle, delivery-id, tag, message-format 0, settled, more, extra fields.
pub fn transfer(
    handle: u32,
    id: Option<u32>,
    tag: Option<&[u8]>,
    settled: Option<bool>,
    more: bool,
    extra: &[(usize, Value)],
) -> Value {
    with(
        0x14,
        vec![
            u(handle),
            opt_u(id),
            tag.map_or(NULL, bin),
            if id.is_some() { u(0) } else { NULL },
            settled.map_or(NULL, Value::Bool),
            b(more),
        ],
        extra,
    )
}
pub fn accepted() -> Value {
    described_list(0x24, vec![])
}
pub fn disposition(receiver: bool, first: u32, last: Option<u32>, settled: bool) -> Value {
    described_list(
        0x15,
        vec![b(receiver), u(first), opt_u(last), b(settled), accepted()],
    )
}
pub fn detach(handle: u32, closed: bool) -> Value {
    described_list(0x16, vec![u(handle), b(closed)])
}
pub fn end() -> Value {
    described_list(0x17, vec![])
}
pub fn close() -> Value {
    described_list(0x18, vec![])
}
pub fn sasl_mechanisms(m: &[&str]) -> Value {
    described_list(0x40, vec![syms(m)])
}
pub fn sasl_init(m: &str) -> Value {
    described_list(0x41, vec![sym(m), bin(b"\0guest\0guest")])
}
pub fn sasl_outcome(code: u8) -> Value {
    described_list(0x44, vec![Value::Ubyte(code)])
}
/// A message payload: optional properties with `to`, then a data section.
pub fn message(to: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(t) = to {
        described_list(0x73, vec![NULL, NULL, s(t)])
            .encode(&mut out)
            .unwrap();
    }
    Value::Described(Box::new(Described {
        descriptor: Descriptor::Code(0x75),
        value: bin(b"body"),
    }))
    .encode(&mut out)
    .unwrap();
    out
}

fn with(code: u64, mut fields: Vec<Value>, extra: &[(usize, Value)]) -> Value {
    for (i, v) in extra {
        while fields.len() <= *i {
            fields.push(NULL);
        }
        fields[*i] = v.clone();
    }
    described_list(code, fields)
}

/// A scripted conversation.
pub struct Convo {
    pub insp: Inspector,
    /// Microseconds.
    pub now: i64,
    pub violations: Vec<Violation>,
    /// Every event the inspector made, in order.
    pub events: Vec<amqpeek::Event>,
}

impl Default for Convo {
    fn default() -> Self {
        Self::new()
    }
}

impl Convo {
    pub fn new() -> Self {
        Convo {
            insp: Inspector::new(1, InspectOptions::default()),
            now: 1_000_000,
            violations: Vec::new(),
            events: Vec::new(),
        }
    }
    /// Both AMQP headers, both opens (server open with `server_open` extra fields).
    pub fn opened_with(server_open: &[(usize, Value)]) -> Self {
        let mut c = Convo::new();
        c.bytes(Dir::C2S, AMQP);
        c.bytes(Dir::S2C, AMQP);
        c.c(0, open(&[]));
        c.s(0, open(server_open));
        c
    }
    pub fn opened() -> Self {
        Self::opened_with(&[])
    }
    /// Opened, one session on channel 0 both ways (windows 1000).
    pub fn session() -> Self {
        let mut c = Self::opened();
        c.c(0, begin(None, 0, 1000, 1000));
        c.s(0, begin(Some(0), 0, 1000, 1000));
        c
    }
    /// Session, the client's sending link "L" on handle 0 both ways, the server granting
    /// `credit`.
    pub fn sending_link(credit: u32) -> Self {
        let mut c = Self::session();
        c.c(0, attach_sender("L", 0, &[]));
        c.s(0, attach_receiver("L", 0, &[]));
        c.s(0, link_flow(0, Some(0), Some(credit), false));
        c
    }
    pub fn advance_ms(&mut self, ms: i64) {
        self.now += ms * 1000;
    }
    pub fn bytes(&mut self, dir: Dir, b: &[u8]) {
        self.now += 1000;
        let mut out = Vec::new();
        self.insp.chunk(
            dir,
            Timestamp(self.now),
            Bytes::copy_from_slice(b),
            &mut out,
        );
        self.take(out);
    }
    pub fn frame(
        &mut self,
        dir: Dir,
        frame_type: u8,
        channel: u16,
        body: Option<&Value>,
        payload: &[u8],
    ) {
        let f = encode_frame(frame_type, channel, body, payload).unwrap();
        self.bytes(dir, &f);
    }
    /// Keep `out`'s events, and its violations apart.
    fn take(&mut self, out: Vec<amqpeek::Event>) {
        for e in out {
            if let EventKind::Violation(v) = &e.kind {
                self.violations.push(v.clone());
            }
            self.events.push(e);
        }
    }
    /// Client sends a performative on `channel`.
    pub fn c(&mut self, channel: u16, p: Value) {
        self.frame(Dir::C2S, 0, channel, Some(&p), &[]);
    }
    /// Server sends a performative on `channel`.
    pub fn s(&mut self, channel: u16, p: Value) {
        self.frame(Dir::S2C, 0, channel, Some(&p), &[]);
    }
    pub fn c_payload(&mut self, channel: u16, p: Value, payload: &[u8]) {
        self.frame(Dir::C2S, 0, channel, Some(&p), payload);
    }
    pub fn c_sasl(&mut self, p: Value) {
        self.frame(Dir::C2S, 1, 0, Some(&p), &[]);
    }
    pub fn s_sasl(&mut self, p: Value) {
        self.frame(Dir::S2C, 1, 0, Some(&p), &[]);
    }
    /// The TCP connection ends with a FIN from both peers.
    pub fn close_tcp(&mut self) {
        self.end_with("FIN both ways");
    }
    /// The capture ends with the connection open: nothing known about how it ended.
    pub fn capture_ends(&mut self) {
        self.end_with("capture ended with the connection open");
    }
    /// The connection ends as a close event's `reason` says.
    pub fn end_with(&mut self, reason: &str) {
        let mut out = Vec::new();
        self.insp
            .close(Timestamp(self.now), reason.into(), &mut out);
        self.take(out);
    }
    pub fn rules(&self) -> Vec<&str> {
        self.violations.iter().map(|v| v.rule.id).collect()
    }
    /// Exactly these rules were reported (in order), nothing else.
    #[track_caller]
    pub fn expect(&self, rules: &[&str]) {
        assert_eq!(self.rules(), rules, "{:#?}", self.violations);
    }
    #[track_caller]
    pub fn expect_clean(&self) {
        self.expect(&[]);
    }
    pub fn snapshot(&self) -> serde_json::Value {
        serde_json::to_value(self.insp.tracker().snapshot()).expect("a snapshot serialises")
    }
}
