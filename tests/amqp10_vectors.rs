//! Byte-literal vectors from the spec (types reference, transport, messaging, security,
//! transactions): every encoding, every composite, error paths and offsets. The bytes are
//! written by hand (with tiny size-counting helpers), never produced by the crate's encoder.

use amqpeek::codec::amqp10::{
    self, AnyTarget, DeliveryState, Descriptor, Frame, FrameBody, Kind, LifetimePolicy,
    MessageAssembler, MessageBody, Performative, ReceiverSettleMode, Role, SaslFrame,
    SenderSettleMode, TxnControl, Value,
};
use amqpeek::codec::{ErrorKind, Reader};
use bytes::Bytes;

// ---- tiny hand-rolled byte builders (independent of the crate's encoder) ----

fn frame(t: u8, ch: u16, body: &[u8]) -> Vec<u8> {
    let size = (8 + body.len()) as u32;
    let mut v = size.to_be_bytes().to_vec();
    v.extend_from_slice(&[2, t]);
    v.extend_from_slice(&ch.to_be_bytes());
    v.extend_from_slice(body);
    v
}
fn l8(items: &[&[u8]]) -> Vec<u8> {
    let body: Vec<u8> = items.concat();
    let mut v = vec![0xc0, (body.len() + 1) as u8, items.len() as u8];
    v.extend(body);
    v
}
fn m8(items: &[&[u8]]) -> Vec<u8> {
    let body: Vec<u8> = items.concat();
    let mut v = vec![0xc1, (body.len() + 1) as u8, items.len() as u8];
    v.extend(body);
    v
}
fn desc(code: u8, list: &[u8]) -> Vec<u8> {
    let mut v = vec![0x00, 0x53, code];
    v.extend_from_slice(list);
    v
}
fn s8(s: &str) -> Vec<u8> {
    let mut v = vec![0xa1, s.len() as u8];
    v.extend_from_slice(s.as_bytes());
    v
}
fn y8(s: &str) -> Vec<u8> {
    let mut v = vec![0xa3, s.len() as u8];
    v.extend_from_slice(s.as_bytes());
    v
}
fn b8(b: &[u8]) -> Vec<u8> {
    let mut v = vec![0xa0, b.len() as u8];
    v.extend_from_slice(b);
    v
}
fn syms(s: &[&str]) -> Vec<amqp10::Symbol> {
    s.iter().map(|x| amqp10::Symbol::from(*x)).collect()
}
const NULL: &[u8] = &[0x40];
const TRUE: &[u8] = &[0x41];
const FALSE: &[u8] = &[0x42];
fn u(n: u8) -> Vec<u8> {
    vec![0x52, n]
}

fn dec(bytes: &[u8]) -> Value {
    let mut r = Reader::new(Bytes::copy_from_slice(bytes), 0);
    let v = amqp10::value::decode(&mut r).unwrap_or_else(|e| panic!("{bytes:02x?}: {e}"));
    assert!(r.is_empty(), "{bytes:02x?} left {} bytes", r.remaining());
    v
}
fn dec_err(bytes: &[u8], base: u64) -> amqpeek::codec::DecodeError {
    let mut r = Reader::new(Bytes::copy_from_slice(bytes), base);
    amqp10::value::decode(&mut r).expect_err(&format!("{bytes:02x?} should fail"))
}
fn decode(bytes: &[u8]) -> Frame {
    amqp10::decode_frame(Bytes::copy_from_slice(bytes), 0).unwrap_or_else(|e| panic!("{e}"))
}
fn perf(bytes: &[u8]) -> Performative {
    decode(bytes).performative().cloned().expect("performative")
}

// ---- every encoding of the type reference ----

#[test]
fn fixed_width_encodings() {
    assert_eq!(dec(&[0x40]), Value::Null);
    assert_eq!(dec(&[0x56, 0x01]), Value::Bool(true));
    assert_eq!(dec(&[0x56, 0x00]), Value::Bool(false));
    assert_eq!(dec(&[0x41]), Value::Bool(true));
    assert_eq!(dec(&[0x42]), Value::Bool(false));
    assert_eq!(dec(&[0x50, 0xff]), Value::Ubyte(255));
    assert_eq!(dec(&[0x60, 0x12, 0x34]), Value::Ushort(0x1234));
    assert_eq!(dec(&[0x70, 0, 0, 1, 0]), Value::Uint(256));
    assert_eq!(dec(&[0x52, 7]), Value::Uint(7));
    assert_eq!(dec(&[0x43]), Value::Uint(0));
    assert_eq!(
        dec(&[0x80, 1, 2, 3, 4, 5, 6, 7, 8]),
        Value::Ulong(0x0102_0304_0506_0708)
    );
    assert_eq!(dec(&[0x53, 9]), Value::Ulong(9));
    assert_eq!(dec(&[0x44]), Value::Ulong(0));
    assert_eq!(dec(&[0x51, 0xff]), Value::Byte(-1));
    assert_eq!(dec(&[0x61, 0xff, 0xfe]), Value::Short(-2));
    assert_eq!(dec(&[0x71, 0xff, 0xff, 0xff, 0xfd]), Value::Int(-3));
    assert_eq!(dec(&[0x54, 0xfc]), Value::Int(-4));
    assert_eq!(
        dec(&[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb]),
        Value::Long(-5)
    );
    assert_eq!(dec(&[0x55, 0xfa]), Value::Long(-6));
    assert_eq!(dec(&[0x72, 0x3f, 0xc0, 0, 0]), Value::Float(1.5));
    assert_eq!(
        dec(&[0x82, 0x40, 0x04, 0, 0, 0, 0, 0, 0]),
        Value::Double(2.5)
    );
    assert_eq!(dec(&[0x74, 1, 2, 3, 4]), Value::Decimal32(0x0102_0304));
    assert_eq!(
        dec(&[0x84, 1, 2, 3, 4, 5, 6, 7, 8]),
        Value::Decimal64(0x0102_0304_0506_0708)
    );
    let d128: Vec<u8> = (1..=16).collect();
    let mut v = vec![0x94];
    v.extend(&d128);
    assert_eq!(dec(&v), Value::Decimal128(d128.clone().try_into().unwrap()));
    assert_eq!(dec(&[0x73, 0, 0, 0, 0x41]), Value::Char('A'));
    assert_eq!(dec(&[0x73, 0, 1, 0xf6, 0x00]), Value::Char('\u{1f600}'));
    assert_eq!(
        dec(&[0x83, 0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0x00]),
        Value::Timestamp(0x18b_cfe5_6800)
    );
    let mut v = vec![0x98];
    v.extend(&d128);
    assert_eq!(dec(&v), Value::Uuid(d128.try_into().unwrap()));
}

#[test]
fn variable_width_encodings() {
    assert_eq!(
        dec(&[0xa0, 2, 1, 2]),
        Value::Binary(Bytes::from_static(&[1, 2]))
    );
    assert_eq!(
        dec(&[0xb0, 0, 0, 0, 1, 9]),
        Value::Binary(Bytes::from_static(&[9]))
    );
    assert_eq!(dec(&[0xa1, 2, b'h', b'i']), Value::String("hi".into()));
    assert_eq!(
        dec(&[0xb1, 0, 0, 0, 3, 0xe2, 0x82, 0xac]),
        Value::String("€".into())
    );
    assert_eq!(
        dec(&[0xa3, 3, b'a', b'b', b'c']),
        Value::Symbol("abc".into())
    );
    assert_eq!(dec(&[0xb3, 0, 0, 0, 1, b'z']), Value::Symbol("z".into()));
}

#[test]
fn compound_encodings() {
    assert_eq!(dec(&[0x45]), Value::List(vec![]));
    assert_eq!(
        dec(&[0xc0, 4, 2, 0x50, 1, 0x41]),
        Value::List(vec![Value::Ubyte(1), Value::Bool(true)])
    );
    assert_eq!(
        dec(&[0xd0, 0, 0, 0, 5, 0, 0, 0, 1, 0x40]),
        Value::List(vec![Value::Null])
    );
    assert_eq!(
        dec(&[0xc1, 6, 2, 0xa3, 1, b'k', 0x52, 9]),
        Value::Map(vec![(Value::Symbol("k".into()), Value::Uint(9))])
    );
    assert_eq!(
        dec(&[0xd1, 0, 0, 0, 6, 0, 0, 0, 2, 0x41, 0x42]),
        Value::Map(vec![(Value::Bool(true), Value::Bool(false))])
    );
}

fn array(v: Value) -> amqp10::Array {
    match v {
        Value::Array(a) => *a,
        other => panic!("not an array: {other:?}"),
    }
}

#[test]
fn array_encodings() {
    let a = array(dec(&[0xe0, 7, 2, 0xa3, 1, b'a', 2, b'b', b'c']));
    assert_eq!(a.kind, Kind::Symbol);
    assert_eq!(
        a.items,
        vec![Value::Symbol("a".into()), Value::Symbol("bc".into())]
    );
    let a = array(dec(&[
        0xf0, 0, 0, 0, 13, 0, 0, 0, 2, 0x70, 0, 0, 0, 1, 0, 0, 0, 2,
    ]));
    assert_eq!(a.items, vec![Value::Uint(1), Value::Uint(2)]);
    let a = array(dec(&[0xe0, 4, 2, 0x52, 5, 6]));
    assert_eq!(a.items, vec![Value::Uint(5), Value::Uint(6)]);
    // Zero-width elements.
    let a = array(dec(&[0xe0, 2, 3, 0x41]));
    assert_eq!(a.items, vec![Value::Bool(true); 3]);
    // Array of described types: two `accepted` outcomes (list0 each).
    let a = array(dec(&[0xe0, 5, 2, 0x00, 0x53, 0x24, 0x45]));
    assert_eq!(a.descriptor, Some(Descriptor::Code(0x24)));
    assert_eq!(a.items, vec![Value::List(vec![]), Value::List(vec![])]);
    // Nested arrays: [[7], [8]] of ubyte.
    let a = array(dec(&[0xe0, 10, 2, 0xe0, 3, 1, 0x50, 7, 3, 1, 0x50, 8]));
    assert_eq!(a.kind, Kind::Array);
    assert_eq!(array(a.items[1].clone()).items, vec![Value::Ubyte(8)]);
    // Empty array keeps its element type.
    let a = array(dec(&[0xe0, 2, 0, 0xa1]));
    assert_eq!((a.kind, a.items.len()), (Kind::String, 0));
}

#[test]
fn described_values() {
    let v = dec(&[0x00, 0x53, 0x77, 0xa1, 1, b'x']);
    let d = v.as_described().unwrap();
    assert_eq!(d.descriptor, Descriptor::Code(0x77));
    assert_eq!(d.value, Value::String("x".into()));
    let v = dec(&[0x00, 0xa3, 4, b't', b'e', b's', b't', 0x40]);
    assert_eq!(
        v.as_described().unwrap().descriptor,
        Descriptor::Name("test".into())
    );
    // A symbolic descriptor of a spec type resolves to its code.
    assert_eq!(
        Descriptor::Name("amqp:attach:list".into()).code(),
        Some(0x12)
    );
}

#[test]
fn malformed_values_are_typed_errors_at_absolute_offsets() {
    let e = dec_err(&[0x56, 0x02], 100);
    assert!(matches!(e.kind, ErrorKind::InvalidEncoding(_)));
    assert_eq!(e.offset, 101);
    let e = dec_err(&[0x73, 0, 0, 0xd8, 0], 0);
    assert_eq!(e.kind, ErrorKind::InvalidChar(0xd800));
    let e = dec_err(&[0xa1, 1, 0xff], 10);
    assert_eq!((e.kind.clone(), e.offset), (ErrorKind::InvalidUtf8, 12));
    let e = dec_err(&[0x01], 5);
    assert_eq!(
        (e.kind.clone(), e.offset),
        (ErrorKind::InvalidFormatCode(1), 5)
    );
    let e = dec_err(&[0xc1, 3, 1, 0x40, 0x40], 0);
    assert!(matches!(e.kind, ErrorKind::InvalidEncoding(m) if m.contains("even")));
    let e = dec_err(&[0xc0, 3, 1, 0x40, 0x40], 0);
    assert_eq!(e.kind, ErrorKind::TrailingBytes(1));
    let e = dec_err(&[0x00, 0x50, 1, 0x40], 0);
    assert!(matches!(e.kind, ErrorKind::UnexpectedType { .. }));
    let e = dec_err(&[0xa0, 5, 1], 0);
    assert!(matches!(e.kind, ErrorKind::Truncated { needed: 5, .. }));
    // A 13-byte array claiming 2^32-1 elements is refused before allocating.
    let e = dec_err(
        &[0xf0, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0x70, 0, 0, 0],
        0,
    );
    assert!(
        matches!(e.kind, ErrorKind::LengthExceedsInput { .. }),
        "{e}"
    );
    // ...also with zero-width elements.
    let e = dec_err(&[0xf0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x40], 0);
    assert!(
        matches!(e.kind, ErrorKind::LengthExceedsInput { .. }),
        "{e}"
    );
    // A list claiming more elements than bytes.
    let e = dec_err(&[0xd0, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff], 0);
    assert!(
        matches!(e.kind, ErrorKind::LengthExceedsInput { .. }),
        "{e}"
    );
    // Nesting beyond MAX_DEPTH.
    let mut deep = Vec::new();
    for _ in 0..(amqp10::value::MAX_DEPTH + 5) {
        deep.extend_from_slice(&[0x00, 0x53, 0x01]);
    }
    deep.push(0x40);
    let e = dec_err(&deep, 0);
    assert!(matches!(e.kind, ErrorKind::TooDeep(_)), "{e}");
}

// ---- frames ----

#[test]
fn empty_frame_is_a_heartbeat_and_unknown_types_are_kept() {
    let f = decode(&[0, 0, 0, 8, 2, 0, 0, 7]);
    assert_eq!((f.name(), f.channel()), ("empty", 7));
    assert_eq!(f.summary(), "(empty frame)");
    let f = decode(&[0, 0, 0, 10, 2, 9, 0, 0, 0xab, 0xcd]);
    assert_eq!(f.name(), "unknown");
    assert_eq!(f.frame_type, 9);
    assert!(matches!(&f.body, FrameBody::Unknown { body } if body[..] == [0xab, 0xcd]));
    // Extended header kept; body starts at doff*4.
    let mut raw = vec![0, 0, 0, 12, 3, 0, 0, 1, 1, 2, 3, 4];
    raw[3] = 12;
    let f = decode(&raw);
    assert_eq!(f.extended_header(), &[1, 2, 3, 4]);
    assert_eq!(f.name(), "empty");
}

#[test]
fn bad_headers_are_malformed_frames() {
    for raw in [
        &[0, 0, 0, 8, 1, 0, 0, 0][..], // doff < 2
        &[0, 0, 0, 8, 3, 0, 0, 0][..], // doff beyond frame
        &[0, 0, 0, 9, 2, 0, 0, 0][..], // size mismatch
        &[0, 0, 0, 4, 2, 0, 0, 0][..], // size < 8
    ] {
        let e = amqp10::decode_frame(Bytes::copy_from_slice(raw), 1000).unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::MalformedFrame(_)),
            "{raw:?}: {e}"
        );
        assert!(e.offset >= 1000);
    }
    assert_eq!(amqp10::frame_size(&[0, 0, 1]).unwrap(), None);
    assert_eq!(amqp10::frame_size(&[0, 0, 1, 0]).unwrap(), Some(256));
    assert!(amqp10::frame_size(&[0, 0, 0, 7]).is_err());
}

fn open_bytes() -> Vec<u8> {
    frame(
        0,
        0,
        &desc(
            0x10,
            &l8(&[
                &s8("c1"),
                &s8("h"),
                &[0x70, 0, 0, 2, 0],
                &[0x60, 0, 0xff],
                &u(100),
                NULL,
                NULL,
                &y8("ANONYMOUS-RELAY"),
                &[0xe0, 6, 2, 0xa3, 1, b'a', 1, b'b'],
                &m8(&[&y8("product"), &s8("x")]),
            ]),
        ),
    )
}

#[test]
fn open() {
    let raw = open_bytes();
    let f = decode(&raw);
    let Performative::Open(o) = f.performative().unwrap() else {
        panic!()
    };
    assert_eq!(o.container_id, "c1");
    assert_eq!(o.hostname.as_ref().unwrap(), "h");
    assert_eq!(
        (o.max_frame_size, o.channel_max, o.idle_time_out),
        (512, 255, Some(100))
    );
    // multiple: a single symbol and an array both normalise to Vec.
    assert_eq!(o.offered_capabilities, syms(&["ANONYMOUS-RELAY"]));
    assert_eq!(o.desired_capabilities, syms(&["a", "b"]));
    assert!(o.outgoing_locales.is_empty());
    assert_eq!(
        f.summary(),
        "@open(16) [container-id=\"c1\", hostname=\"h\", max-frame-size=512, channel-max=255, \
         idle-time-out=100, offered-capabilities=:ANONYMOUS-RELAY, \
         desired-capabilities=@PN_SYMBOL[:a, :b], properties={:product=\"x\"}]"
    );
    let j = f.fields_json();
    assert_eq!(j["container-id"], "c1");
    assert_eq!(j["offered-capabilities"][0]["symbol"], "ANONYMOUS-RELAY");
    assert_eq!(j["desired-capabilities"][1]["symbol"], "b");
    assert_eq!(j["properties"]["product"], "x");
    assert!(j.get("outgoing-locales").is_none());
    // Spans: container-id sits right after header (8) + descriptor (3) + list8 header (3).
    assert_eq!(f.field_span("container-id"), Some(14..18));
    assert_eq!(&raw[f.field_span("hostname").unwrap()], &[0xa1, 1, b'h']);
}

#[test]
fn open_defaults_apply() {
    let f = decode(&frame(0, 0, &desc(0x10, &l8(&[&s8("c")]))));
    let Performative::Open(o) = f.performative().unwrap() else {
        panic!()
    };
    assert_eq!((o.max_frame_size, o.channel_max), (u32::MAX, u16::MAX));
    assert_eq!(f.summary(), "@open(16) [container-id=\"c\"]");
}

#[test]
fn begin() {
    let p = perf(&frame(
        0,
        3,
        &desc(
            0x11,
            &l8(&[&[0x60, 0, 1], &u(1), &[0x70, 0, 0, 8, 0], &u(9)]),
        ),
    ));
    let Performative::Begin(b) = p else { panic!() };
    assert_eq!(b.remote_channel, Some(1));
    assert_eq!(
        (
            b.next_outgoing_id,
            b.incoming_window,
            b.outgoing_window,
            b.handle_max
        ),
        (1, 2048, 9, u32::MAX)
    );
}

fn attach_bytes() -> Vec<u8> {
    let filter = m8(&[
        &y8("sel"),
        &[
            &[0x00][..],
            &y8("apache.org:selector-filter:string"),
            &s8("a=1"),
        ]
        .concat(),
    ]);
    let source = desc(
        0x28,
        &l8(&[
            &s8("q1"),
            &u(1),
            &y8("never"),
            &u(30),
            FALSE,
            NULL,
            &y8("move"),
            &filter,
            &desc(0x26, &[0x45]),
            &[
                0xe0, 11, 2, 0xa3, 6, b'a', b'm', b'q', b'p', b':', b'x', 1, b'y',
            ],
        ]),
    );
    let target = desc(0x29, &l8(&[&s8("q2")]));
    frame(
        0,
        0,
        &desc(
            0x12,
            &l8(&[
                &s8("link"),
                &[0x43],
                TRUE,
                &[0x50, 1],
                &[0x50, 1],
                &source,
                &target,
                NULL,
                NULL,
                &[0x43],
                &[0x53, 200],
            ]),
        ),
    )
}

#[test]
fn attach_with_source_target_filter() {
    let f = decode(&attach_bytes());
    let Performative::Attach(a) = f.performative().unwrap() else {
        panic!()
    };
    assert_eq!(a.name, "link");
    assert_eq!((a.handle, a.role), (0, Role::Receiver));
    assert_eq!(a.snd_settle_mode, SenderSettleMode::Settled);
    assert_eq!(a.rcv_settle_mode, ReceiverSettleMode::Second);
    assert_eq!(
        (a.initial_delivery_count, a.max_message_size),
        (Some(0), Some(200))
    );
    let s = a.source.as_ref().unwrap();
    assert_eq!(s.address, Some(Value::String("q1".into())));
    assert_eq!((s.durable, s.timeout, s.dynamic), (1, 30, false));
    assert_eq!(s.expiry_policy, "never");
    assert_eq!(s.distribution_mode.as_ref().unwrap(), &"move");
    assert_eq!(s.default_outcome, Some(DeliveryState::Released));
    assert_eq!(s.outcomes, syms(&["amqp:x", "y"]));
    let filter = s.filter.as_ref().unwrap();
    assert_eq!(filter[0].0, Value::Symbol("sel".into()));
    let t = a.target.as_ref().unwrap();
    assert_eq!(t.address(), Some(&Value::String("q2".into())));
    let AnyTarget::Target(t) = t else { panic!() };
    assert_eq!(t.expiry_policy, "session-end"); // default applied
    let summary = f.summary();
    assert!(
        summary.starts_with(
            "@attach(18) [name=\"link\", handle=0, role=true, snd-settle-mode=1, rcv-settle-mode=1, \
             source=@source(40) [address=\"q1\", durable=1, expiry-policy=:never, timeout=30, \
             dynamic=false, distribution-mode=:move, filter={:sel=@:apache.org:selector-filter:string \"a=1\"}, \
             default-outcome=@released(38) [], outcomes=@PN_SYMBOL[:amqp:x, :y]], \
             target=@target(41) [address=\"q2\"], initial-delivery-count=0, max-message-size=200]"
        ),
        "{summary}"
    );
    let j = f.fields_json();
    assert_eq!(j["source"]["$type"], "source");
    assert_eq!(j["source"]["address"], "q1");
    assert_eq!(
        j["source"]["filter"]["sel"]["descriptor"],
        "apache.org:selector-filter:string"
    );
    assert_eq!(j["source"]["default-outcome"]["$type"], "released");
    assert_eq!(j["target"]["address"], "q2");
}

#[test]
fn attach_missing_mandatory_role_names_the_field() {
    let raw = frame(0, 0, &desc(0x12, &l8(&[&s8("l"), &[0x43]])));
    let e = amqp10::decode_frame(Bytes::from(raw), 50).unwrap_err();
    assert_eq!(e.kind, ErrorKind::MissingMandatory);
    assert_eq!(e.path_string(), "attach.role");
    let raw = frame(0, 0, &desc(0x12, &l8(&[&s8("l"), NULL, TRUE])));
    let e = amqp10::decode_frame(Bytes::from(raw), 0).unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.path_string()),
        (ErrorKind::MissingMandatory, "attach.handle".into())
    );
}

#[test]
fn wrong_nested_type_names_the_path() {
    // source.filter must be a map; give it a string.
    let source = desc(
        0x28,
        &l8(&[&s8("q"), NULL, NULL, NULL, NULL, NULL, NULL, &s8("oops")]),
    );
    let raw = frame(
        0,
        0,
        &desc(0x12, &l8(&[&s8("l"), &[0x43], TRUE, NULL, NULL, &source])),
    );
    let e = amqp10::decode_frame(Bytes::from(raw), 0).unwrap_err();
    assert_eq!(e.path_string(), "attach.source.filter");
    assert!(matches!(
        e.kind,
        ErrorKind::UnexpectedType {
            expected: "map",
            found: "string"
        }
    ));
    // handle must be a uint.
    let raw = frame(0, 0, &desc(0x16, &l8(&[&[0x53, 1]])));
    let e = amqp10::decode_frame(Bytes::from(raw), 0).unwrap_err();
    assert_eq!(e.path_string(), "detach.handle");
    assert_eq!(e.offset, 14);
}

#[test]
fn flow() {
    let p = perf(&frame(
        0,
        0,
        &desc(
            0x13,
            &l8(&[
                &u(1),
                &[0x70, 0, 0, 0x07, 0xff],
                &u(2),
                &u(3),
                &[0x43],
                &u(4),
                &u(100),
                NULL,
                TRUE,
            ]),
        ),
    ));
    let Performative::Flow(f) = p else { panic!() };
    assert_eq!(f.next_incoming_id, Some(1));
    assert_eq!(
        (f.incoming_window, f.next_outgoing_id, f.outgoing_window),
        (2047, 2, 3)
    );
    assert_eq!(
        (f.handle, f.delivery_count, f.link_credit),
        (Some(0), Some(4), Some(100))
    );
    assert_eq!((f.available, f.drain, f.echo), (None, true, false));
}

fn transfer_bytes(more: bool, handle: u8, payload: &[u8]) -> Vec<u8> {
    let mut body = desc(
        0x14,
        &l8(&[
            &u(handle),
            &u(5),
            &b8(&[0, 0, 0, 5]),
            &[0x43],
            FALSE,
            if more { TRUE } else { FALSE },
        ]),
    );
    body.extend_from_slice(payload);
    frame(0, 1, &body)
}

/// A message with every section, written by hand.
fn full_message() -> Vec<u8> {
    [
        desc(0x70, &l8(&[TRUE, &[0x50, 9], &u(10), NULL, &u(2)])),
        desc(0x71, &m8(&[&y8("x-da"), &u(1)])),
        desc(0x72, &m8(&[&y8("x-opt"), &s8("v")])),
        desc(
            0x73,
            &l8(&[
                &s8("id-1"),
                &b8(b"guest"),
                &s8("/q"),
                &s8("subj"),
                &s8("/r"),
                &[0x53, 7],
                &y8("text/plain"),
                NULL,
                &[0x83, 0, 0, 0, 0, 0, 0, 0, 1],
                &[0x83, 0, 0, 0, 0, 0, 0, 0, 2],
            ]),
        ),
        desc(0x74, &m8(&[&s8("k"), &[0x71, 0, 0, 1, 0]])),
        desc(0x75, &b8(b"hello")),
        desc(0x75, &b8(b" world")),
        desc(0x78, &m8(&[&y8("f"), TRUE])),
    ]
    .concat()
}

#[test]
fn transfer_with_every_section() {
    let raw = transfer_bytes(false, 0, &full_message());
    let f = decode(&raw);
    let t = f.transfer().unwrap();
    assert_eq!(
        (t.handle, t.delivery_id, t.message_format),
        (0, Some(5), Some(0))
    );
    assert_eq!(t.delivery_tag.as_deref(), Some(&[0, 0, 0, 5][..]));
    assert_eq!((t.settled, t.more), (Some(false), false));
    assert_eq!(f.payload().len(), full_message().len());
    assert!(
        f.summary()
            .ends_with(&format!("(payload {} bytes)", full_message().len()))
    );
    let m = MessageAssembler::default().push(&f).unwrap().unwrap();
    let h = m.header().unwrap();
    assert_eq!(
        (h.durable, h.priority, h.ttl, h.delivery_count),
        (true, 9, Some(10), 2)
    );
    let p = m.properties().unwrap();
    assert_eq!(p.message_id, Some(Value::String("id-1".into())));
    assert_eq!(p.user_id.as_deref(), Some(&b"guest"[..]));
    assert_eq!(p.correlation_id, Some(Value::Ulong(7)));
    assert_eq!(p.content_type.unwrap(), "text/plain");
    assert_eq!(
        (p.absolute_expiry_time, p.creation_time),
        (Some(1), Some(2))
    );
    assert_eq!(m.delivery_annotations().unwrap().len(), 1);
    assert_eq!(
        m.message_annotations().unwrap()[0].1,
        Value::String("v".into())
    );
    assert_eq!(m.application_properties().unwrap()[0].1, Value::Int(256));
    assert_eq!(m.footer().unwrap()[0].1, Value::Bool(true));
    assert_eq!(
        m.body(),
        MessageBody::Data(vec![
            Bytes::from_static(b"hello"),
            Bytes::from_static(b" world")
        ])
    );
    let j = m.to_json(3);
    assert_eq!(j["header"]["priority"], 9);
    assert_eq!(j["properties"]["to"], "/q");
    assert_eq!(j["application-properties"]["k"], 256);
    assert_eq!(j["message-annotations"]["x-opt"], "v");
    // UTF-8 text is shown as text, once; its cut says the whole length.
    assert_eq!(j["data"][0], serde_json::json!({"text": "hel", "len": 5}));
    assert_eq!(j["footer"]["f"], true);
    assert_eq!(j["transfers"], 1);
}

#[test]
fn amqp_sequence_and_amqp_value_bodies() {
    let seq = [desc(0x76, &l8(&[&u(1)])), desc(0x76, &l8(&[&u(2)]))].concat();
    let m = MessageAssembler::default()
        .push(&decode(&transfer_bytes(false, 0, &seq)))
        .unwrap()
        .unwrap();
    assert_eq!(
        m.body(),
        MessageBody::Sequence(vec![vec![Value::Uint(1)], vec![Value::Uint(2)]])
    );
    let v = desc(0x77, &s8("hi"));
    let m = MessageAssembler::default()
        .push(&decode(&transfer_bytes(false, 0, &v)))
        .unwrap()
        .unwrap();
    assert_eq!(m.body(), MessageBody::Value(Value::String("hi".into())));
    assert_eq!(m.to_json(10)["amqp-value"], "hi");
    // A non-section in the payload is a typed error.
    let r = MessageAssembler::default()
        .push(&decode(&transfer_bytes(false, 0, &[0x52, 1])))
        .unwrap();
    assert_eq!(r.unwrap_err().path_string(), "message");
}

#[test]
fn data_sections_show_text_or_hex_once() {
    // A data section (0x75) holding `body` as a vbin8.
    let data = |body: &[u8]| {
        let mut v = vec![0x00, 0x53, 0x75, 0xa0, body.len() as u8];
        v.extend_from_slice(body);
        v
    };
    let json = |payload: &[u8], max: usize| {
        MessageAssembler::default()
            .push(&decode(&transfer_bytes(false, 0, payload)))
            .unwrap()
            .unwrap()
            .to_json(max)["data"]
            .clone()
    };
    assert_eq!(
        json(&data(b"hello"), 10),
        serde_json::json!([{"text": "hello"}])
    );
    // Cut inside a character: the text stops before it, the length says it was cut.
    assert_eq!(
        json(&data("añb".as_bytes()), 2),
        serde_json::json!([{"text": "a", "len": 4}])
    );
    // Not UTF-8: hex, and no text.
    assert_eq!(
        json(&data(b"\xff\x00hi"), 10),
        serde_json::json!([{"binary": "ff006869"}])
    );
    assert_eq!(
        json(&[data(b"\xff\x00"), data(b"ok")].concat(), 1),
        serde_json::json!([{"binary": "ff", "len": 2}, {"text": "o", "len": 2}])
    );
}

#[test]
fn multi_transfer_delivery_is_reassembled_per_handle_and_abort_discards() {
    let msg = desc(0x75, &b8(b"0123456789"));
    let (a, b) = msg.split_at(5);
    let mut asm = MessageAssembler::default();
    assert!(asm.push(&decode(&transfer_bytes(true, 0, a))).is_none());
    // Interleaved delivery on another handle completes on its own.
    let other = desc(0x77, &u(1));
    let m1 = asm
        .push(&decode(&transfer_bytes(false, 1, &other)))
        .unwrap()
        .unwrap();
    assert_eq!((m1.handle, m1.transfers), (1, 1));
    assert!(asm.buffered() == 5);
    let m0 = asm
        .push(&decode(&transfer_bytes(false, 0, b)))
        .unwrap()
        .unwrap();
    assert_eq!((m0.handle, m0.transfers), (0, 2));
    assert_eq!(
        m0.body(),
        MessageBody::Data(vec![Bytes::from_static(b"0123456789")])
    );
    assert_eq!(asm.buffered(), 0);

    // Aborted: discarded, nothing reported.
    assert!(asm.push(&decode(&transfer_bytes(true, 0, a))).is_none());
    let abort = frame(
        0,
        1,
        &desc(
            0x14,
            &l8(&[&u(0), NULL, NULL, NULL, NULL, FALSE, NULL, NULL, NULL, TRUE]),
        ),
    );
    assert!(asm.push(&decode(&abort)).is_none());
    assert_eq!(asm.buffered(), 0);
}

#[test]
fn a_large_delivery_keeps_only_its_start_and_counts_the_rest() {
    // 70 transfers of 1 MiB of one data section's bytes: the message keeps --max-body of its
    // body plus room for metadata, however large it grows, and says how large it was.
    let chunk = vec![b'a'; 1 << 20];
    let mut first = vec![0x00, 0x53, 0x75, 0xb0];
    first.extend_from_slice(&((70u32 << 20) - 8).to_be_bytes());
    let mut asm = MessageAssembler::with_limits(100, 1 << 20);
    for i in 0..70 {
        let payload = if i == 0 {
            [&first[..], &chunk[first.len()..]].concat()
        } else {
            chunk.clone()
        };
        let f = amqp10::decode_frame(Bytes::from(transfer_bytes(true, 0, &payload)), 0).unwrap();
        assert!(asm.push(&f).is_none());
        assert!(asm.buffered() <= 100 + amqp10::message::METADATA_BYTES);
    }
    let m = asm
        .push(&decode(&transfer_bytes(false, 0, &first[..0])))
        .unwrap()
        .unwrap();
    assert_eq!(asm.buffered(), 0);
    assert_eq!(m.size, 70 << 20);
    assert_eq!(m.transfers, 71);
    assert_eq!(m.payload.len(), 100 + amqp10::message::METADATA_BYTES);
    let j = m.to_json(100);
    assert_eq!(j["data"][0]["len"], (70u64 << 20) - 8, "{j}");
    assert_eq!(
        j["data"][0]["text"].as_str().map(str::len),
        Some(100),
        "{j}"
    );
    assert_eq!(j["truncated"]["size"], 70u64 << 20, "{j}");
}

fn disposition_state(state: &[u8]) -> DeliveryState {
    let p = perf(&frame(
        0,
        0,
        &desc(0x15, &l8(&[TRUE, &u(1), &u(3), TRUE, state])),
    ));
    let Performative::Disposition(d) = p else {
        panic!()
    };
    assert_eq!(
        (d.role, d.first, d.last, d.settled),
        (Role::Receiver, 1, Some(3), true)
    );
    d.state.unwrap()
}

#[test]
fn disposition_with_every_delivery_state() {
    use amqpeek::codec::amqp10::delivery_state as ds;
    assert_eq!(
        disposition_state(&desc(0x23, &l8(&[&u(1), &[0x53, 2]]))),
        DeliveryState::Received(ds::Received {
            section_number: 1,
            section_offset: 2
        })
    );
    assert_eq!(
        disposition_state(&desc(0x24, &[0x45])),
        DeliveryState::Accepted
    );
    let DeliveryState::Rejected(ds::Rejected { error: Some(e) }) = disposition_state(&desc(
        0x25,
        &l8(&[&desc(0x1d, &l8(&[&y8("amqp:not-found"), &s8("gone")]))]),
    )) else {
        panic!()
    };
    assert_eq!(
        (e.condition.as_str(), e.description.unwrap().as_str()),
        ("amqp:not-found", "gone")
    );
    assert_eq!(
        disposition_state(&desc(0x26, &[0x45])),
        DeliveryState::Released
    );
    assert_eq!(
        disposition_state(&desc(0x27, &l8(&[TRUE, FALSE]))),
        DeliveryState::Modified(ds::Modified {
            delivery_failed: Some(true),
            undeliverable_here: Some(false),
            message_annotations: None
        })
    );
    assert_eq!(
        disposition_state(&desc(0x33, &l8(&[&b8(&[1, 2])]))),
        DeliveryState::Declared(ds::Declared {
            txn_id: Bytes::from_static(&[1, 2])
        })
    );
    assert_eq!(
        disposition_state(&desc(0x34, &l8(&[&b8(&[1]), &desc(0x24, &[0x45])]))),
        DeliveryState::Transactional(Box::new(ds::TransactionalState {
            txn_id: Bytes::from_static(&[1]),
            outcome: Some(DeliveryState::Accepted)
        }))
    );
    // received's fields are mandatory.
    let raw = frame(
        0,
        0,
        &desc(
            0x15,
            &l8(&[TRUE, &u(1), NULL, NULL, &desc(0x23, &l8(&[&u(1)]))]),
        ),
    );
    let e = amqp10::decode_frame(Bytes::from(raw), 0).unwrap_err();
    assert_eq!(e.path_string(), "disposition.state.section-offset");
    // A known composite that is not a delivery-state is refused in `state`.
    let raw = frame(
        0,
        0,
        &desc(0x15, &l8(&[TRUE, &u(1), NULL, NULL, &desc(0x28, &[0x45])])),
    );
    let e = amqp10::decode_frame(Bytes::from(raw), 0).unwrap_err();
    assert_eq!(e.path_string(), "disposition.state");
}

#[test]
fn detach_end_close_with_errors() {
    let err = desc(
        0x1d,
        &l8(&[
            &y8("amqp:link:detach-forced"),
            &s8("bye"),
            &m8(&[&y8("k"), &u(1)]),
        ]),
    );
    let Performative::Detach(d) = perf(&frame(0, 0, &desc(0x16, &l8(&[&u(4), TRUE, &err])))) else {
        panic!()
    };
    assert_eq!((d.handle, d.closed), (4, true));
    let e = d.error.unwrap();
    assert_eq!(e.condition, "amqp:link:detach-forced");
    assert_eq!(e.info.unwrap().len(), 1);
    let Performative::End(e) = perf(&frame(0, 0, &desc(0x17, &l8(&[&err])))) else {
        panic!()
    };
    assert!(e.error.is_some());
    let Performative::Close(c) = perf(&frame(0, 0, &desc(0x18, &[0x45]))) else {
        panic!()
    };
    assert!(c.error.is_none());
    assert_eq!(
        decode(&frame(0, 0, &desc(0x18, &[0x45]))).summary(),
        "@close(24) []"
    );
    // The error's condition is mandatory.
    let raw = frame(
        0,
        0,
        &desc(0x18, &l8(&[&desc(0x1d, &l8(&[NULL, &s8("x")]))])),
    );
    let e = amqp10::decode_frame(Bytes::from(raw), 0).unwrap_err();
    assert_eq!(e.path_string(), "close.error.condition");
}

#[test]
fn sasl_frames_and_secret_ranges() {
    let f = decode(&frame(
        1,
        0,
        &desc(
            0x40,
            &l8(&[&[
                0xe0, 13, 2, 0xa3, 5, b'P', b'L', b'A', b'I', b'N', 4, b'A', b'N', b'O', b'N',
            ][..]]),
        ),
    ));
    assert_eq!(f.name(), "sasl-mechanisms");
    assert!(f.is_sasl());
    assert_eq!(
        f.sasl(),
        Some(&SaslFrame::Mechanisms {
            sasl_server_mechanisms: vec!["PLAIN".into(), "ANON".into()]
        })
    );

    let raw = frame(
        1,
        0,
        &desc(
            0x41,
            &l8(&[&y8("PLAIN"), &b8(b"\0guest\0secret"), &s8("host")]),
        ),
    );
    let f = decode(&raw);
    assert_eq!(f.name(), "sasl-init");
    let ranges = f.secret_ranges();
    assert_eq!(ranges.len(), 1);
    assert_eq!(&raw[ranges[0].clone()], b"secret");
    // Other mechanisms: the whole initial response.
    let raw = frame(1, 0, &desc(0x41, &l8(&[&y8("X-TOKEN"), &b8(b"tok\0en")])));
    let f = decode(&raw);
    assert_eq!(&raw[f.secret_ranges()[0].clone()], b"tok\0en");

    let f = decode(&frame(1, 0, &desc(0x42, &l8(&[&b8(b"chal")]))));
    assert_eq!(
        f.sasl(),
        Some(&SaslFrame::Challenge {
            challenge: Bytes::from_static(b"chal")
        })
    );
    assert!(f.secret_ranges().is_empty());
    let raw = frame(1, 0, &desc(0x43, &l8(&[&b8(b"resp")])));
    let f = decode(&raw);
    assert_eq!(&raw[f.secret_ranges()[0].clone()], b"resp");
    let f = decode(&frame(1, 0, &desc(0x44, &l8(&[&[0x50, 1]]))));
    let Some(SaslFrame::Outcome { code, .. }) = f.sasl() else {
        panic!()
    };
    assert_eq!(code.name(), "auth");
    assert_eq!(f.fields_json()["code"], 1);
    // A performative in a SASL frame (or vice versa) is refused.
    assert!(amqp10::decode_frame(Bytes::from(frame(1, 0, &desc(0x18, &[0x45]))), 0).is_err());
    assert!(
        amqp10::decode_frame(Bytes::from(frame(0, 0, &desc(0x44, &l8(&[&[0x50, 0]])))), 0).is_err()
    );
}

#[test]
fn termini_lifetime_policies_and_transactions() {
    // A dynamic target with a lifetime policy node property and a coordinator target.
    let dnp = m8(&[&y8("lifetime-policy"), &desc(0x2b, &[0x45])]);
    let target = desc(0x29, &l8(&[NULL, NULL, NULL, NULL, TRUE, &dnp]));
    let Performative::Attach(a) = perf(&frame(
        0,
        0,
        &desc(
            0x12,
            &l8(&[&s8("l"), &u(1), FALSE, NULL, NULL, NULL, &target]),
        ),
    )) else {
        panic!()
    };
    let Some(AnyTarget::Target(t)) = &a.target else {
        panic!()
    };
    assert!(t.dynamic);
    let props = t.dynamic_node_properties.as_ref().unwrap();
    assert_eq!(
        LifetimePolicy::from_value(&props[0].1),
        Some(LifetimePolicy::DeleteOnClose)
    );
    for (code, p) in [
        (0x2c, LifetimePolicy::DeleteOnNoLinks),
        (0x2d, LifetimePolicy::DeleteOnNoMessages),
        (0x2e, LifetimePolicy::DeleteOnNoLinksOrMessages),
    ] {
        assert_eq!(
            LifetimePolicy::from_value(&dec(&desc(code, &[0x45]))),
            Some(p)
        );
    }

    let coord = desc(0x30, &l8(&[&y8("amqp:local-transactions")]));
    let Performative::Attach(a) = perf(&frame(
        0,
        0,
        &desc(
            0x12,
            &l8(&[&s8("txn"), &u(2), FALSE, NULL, NULL, NULL, &coord]),
        ),
    )) else {
        panic!()
    };
    let Some(AnyTarget::Coordinator(c)) = &a.target else {
        panic!()
    };
    assert_eq!(c.capabilities, syms(&["amqp:local-transactions"]));

    let d = dec(&desc(0x31, &[0x45]));
    assert_eq!(
        TxnControl::from_described(d.as_described().unwrap()),
        Some(TxnControl::Declare { global_id: None })
    );
    let d = dec(&desc(0x32, &l8(&[&b8(&[7]), TRUE])));
    assert_eq!(
        TxnControl::from_described(d.as_described().unwrap()),
        Some(TxnControl::Discharge {
            txn_id: Bytes::from_static(&[7]),
            fail: Some(true)
        })
    );
    // Discharge's txn-id is mandatory (checked when it is a message body).
    let body = desc(0x77, &desc(0x32, &l8(&[NULL, TRUE])));
    let r = MessageAssembler::default()
        .push(&decode(&transfer_bytes(false, 0, &body)))
        .unwrap();
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::MissingMandatory);
}

#[test]
fn symbolic_descriptors_decode_like_codes() {
    let mut body = vec![0x00];
    body.extend(y8("amqp:close:list"));
    body.push(0x45);
    let f = decode(&frame(0, 0, &body));
    assert_eq!(f.name(), "close");
}

#[test]
fn unknown_performative_descriptor_is_an_error() {
    let e = amqp10::decode_frame(Bytes::from(frame(0, 0, &desc(0x99, &[0x45]))), 0).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Unknown { .. }));
}

#[test]
fn json_shapes_of_primitives() {
    use serde_json::json;
    assert_eq!(Value::Float(f32::NAN).to_json(), json!("NaN"));
    assert_eq!(Value::Double(f64::NEG_INFINITY).to_json(), json!("-inf"));
    assert_eq!(Value::Ulong(u64::MAX).to_json(), json!(u64::MAX));
    assert_eq!(
        Value::Decimal32(0xa).to_json(),
        json!({"decimal32": "0x0000000a"})
    );
    assert_eq!(
        Value::Timestamp(0).to_json(),
        json!({"timestamp": 0, "utc": "1970-01-01T00:00:00Z"})
    );
    assert_eq!(
        Value::Uuid([0x11; 16]).to_json(),
        json!("11111111-1111-1111-1111-111111111111")
    );
    assert_eq!(
        Value::Binary(Bytes::from_static(&[1, 2])).to_json(),
        json!({"binary": "0102"})
    );
    let long = Value::Binary(Bytes::from(vec![0xab; 70])).to_json();
    assert_eq!(long["len"], 70);
    assert_eq!(long["binary"].as_str().unwrap().len(), 128);
    assert_eq!(Value::Symbol("s".into()).to_json(), json!({"symbol": "s"}));
    assert_eq!(
        Value::Map(vec![(Value::Uint(1), Value::Null)]).to_json(),
        json!({"map": [[1, null]]})
    );
    assert_eq!(
        dec(&[0x00, 0x53, 0x99, 0x40]).to_json(),
        json!({"descriptor": 0x99, "value": null})
    );
}
