//! Never-panics properties for the AMQP 0-9-1 codec: random bytes and mutated valid frames
//! through `decode_frame`, the content assembler and `StreamDecoder` split at random points;
//! plus random field tables round-tripping exactly.

use amqpeek::codec::Reader;
use amqpeek::codec::amqp091::*;
use amqpeek::protocol::{Item, StreamDecoder};
use bytes::Bytes;
use proptest::prelude::*;

fn frame(channel: u16, kind: FrameKind) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(channel, &kind, &mut out);
    out
}

/// A valid stream: protocol header + a varied set of frames.
fn corpus() -> Vec<Vec<u8>> {
    let table = FieldTable::new()
        .with(
            "a",
            FieldValue::Array(vec![
                FieldValue::I32(1),
                FieldValue::LongStr(Bytes::from_static(b"s")),
            ]),
        )
        .with(
            "t",
            FieldValue::Table(
                FieldTable::new().with("d", FieldValue::Decimal { scale: 1, value: 5 }),
            ),
        )
        .with("x", FieldValue::Bytes(Bytes::from_static(b"\x00\x01")))
        .with("T", FieldValue::Timestamp(5));
    let mut frames = Vec::new();
    let start_ok = Method::with_defaults(MethodKind::ConnectionStartOk)
        .set("client-properties", Value::Table(table.clone()))
        .unwrap()
        .set(
            "response",
            Value::LongStr(Bytes::from_static(b"\0guest\0guest")),
        )
        .unwrap();
    frames.push(frame(0, FrameKind::Method(start_ok.into())));
    for def in METHODS.iter() {
        let mut m = Method::with_defaults(def.kind);
        if def.arg_index("arguments").is_some() {
            m = m.set("arguments", Value::Table(table.clone())).unwrap();
        }
        frames.push(frame(1, FrameKind::Method(m.into())));
    }
    frames.push(frame(
        1,
        FrameKind::Method(Method::with_defaults(MethodKind::BasicPublish).into()),
    ));
    let h = ContentHeader::basic(6)
        .with("headers", Value::Table(table))
        .unwrap()
        .with("delivery-mode", Value::Octet(2))
        .unwrap();
    frames.push(frame(1, FrameKind::Header(h.into())));
    frames.push(frame(1, FrameKind::Body(Bytes::from_static(b"abc"))));
    frames.push(frame(1, FrameKind::Body(Bytes::from_static(b"def"))));
    frames.push(frame(0, FrameKind::Heartbeat));
    frames
}

fn stream() -> Vec<u8> {
    let mut s = b"AMQP\x00\x00\x09\x01".to_vec();
    for f in corpus() {
        s.extend_from_slice(&f);
    }
    s
}

fn exercise(f: &Frame) {
    let _ = f.summary();
    let _ = f.fields_json();
    for r in f.secret_ranges() {
        assert!(r.start <= r.end);
    }
}

fn run_stream(parts: &[&[u8]]) -> Vec<Item> {
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    for p in parts {
        d.push(Bytes::copy_from_slice(p), &mut out);
    }
    for item in &out {
        if let Item::Frame(fe) = item {
            let frame = &fe.frame;
            let _ = (frame.summary(), frame.fields_json(), frame.secret_ranges());
            if let Some(Ok(m)) = &fe.message {
                let _ = m.to_json(16);
            }
        }
    }
    out
}

fn item_key(i: &Item) -> (u64, String) {
    match i {
        Item::Header { offset, .. } => (*offset, "header".into()),
        Item::Frame(fe) => (
            fe.offset,
            format!(
                "{} {:?}",
                fe.frame.name(),
                fe.message.as_ref().map(|m| m.is_ok())
            ),
        ),
        Item::Malformed { offset, error, .. } => (*offset, format!("malformed {error}")),
        Item::Undecodable { offset, error } => (*offset, format!("undecodable {error}")),
    }
}

fn field_value() -> impl Strategy<Value = FieldValue> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(FieldValue::Bool),
        any::<i8>().prop_map(FieldValue::I8),
        any::<u8>().prop_map(FieldValue::U8),
        any::<i16>().prop_map(FieldValue::I16),
        any::<u16>().prop_map(FieldValue::U16),
        any::<i32>().prop_map(FieldValue::I32),
        any::<u32>().prop_map(FieldValue::U32),
        any::<i64>().prop_map(FieldValue::I64),
        any::<f32>().prop_map(FieldValue::F32),
        any::<f64>().prop_map(FieldValue::F64),
        (any::<u8>(), any::<i32>()).prop_map(|(scale, value)| FieldValue::Decimal { scale, value }),
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(|v| FieldValue::LongStr(v.into())),
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(|v| FieldValue::Bytes(v.into())),
        any::<u64>().prop_map(FieldValue::Timestamp),
        Just(FieldValue::Void),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(FieldValue::Array),
            proptest::collection::vec(("[a-z-]{0,12}", inner), 0..6).prop_map(|kv| {
                FieldValue::Table(FieldTable(
                    kv.into_iter().map(|(k, v)| (Bytes::from(k), v)).collect(),
                ))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), offset in any::<u32>()) {
        let _ = frame_size(&bytes);
        let mut a = ContentAssembler::default();
        if let Ok(f) = decode_frame(Bytes::from(bytes.clone()), offset.into()) {
            exercise(&f);
            let _ = a.push(&f);
        } else if let Err(e) = decode_frame(Bytes::from(bytes.clone()), offset.into()) {
            prop_assert!(e.offset >= u64::from(offset) && e.offset <= u64::from(offset) + bytes.len() as u64);
        }
        // the same bytes behind a well-formed frame header
        let mut framed = vec![bytes.first().copied().unwrap_or(1) % 10, 0, 1];
        framed.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        framed.extend_from_slice(&bytes);
        framed.push(0xce);
        if let Ok(f) = decode_frame(Bytes::from(framed), 0) {
            exercise(&f);
            let _ = a.push(&f);
        }
        let _ = run_stream(&[b"AMQP\x00\x00\x09\x01", &bytes]);
    }

    #[test]
    fn mutated_valid_frames_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let frames = corpus();
        let mut f = pick.get(&frames).clone();
        for (at, byte) in &edits {
            let i = at.index(f.len());
            f[i] = *byte;
        }
        let mut a = ContentAssembler::default();
        for raw in [f.clone(), f[..cut.index(f.len() + 1)].to_vec()] {
            if let Ok(fr) = decode_frame(Bytes::from(raw.clone()), 7) {
                exercise(&fr);
                let _ = a.push(&fr);
                // whatever decoded re-encodes and decodes to the same frame
                let again = decode_frame(Bytes::from(fr.to_bytes()), 7).unwrap();
                prop_assert_eq!(again.kind, fr.kind);
            }
            let _ = FieldTable::decode(&mut Reader::new(Bytes::from(raw.clone()), 0));
            let _ = decode_response(b"AMQPLAIN", &Bytes::from(raw));
        }
    }

    #[test]
    fn stream_decoder_items_do_not_depend_on_splits(splits in proptest::collection::vec(any::<prop::sample::Index>(), 0..12)) {
        let s = stream();
        let mut cuts: Vec<usize> = splits.iter().map(|i| i.index(s.len() + 1)).collect();
        cuts.sort_unstable();
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut prev = 0;
        for c in cuts {
            parts.push(&s[prev..c]);
            prev = c;
        }
        parts.push(&s[prev..]);
        let whole: Vec<_> = run_stream(&[&s]).iter().map(item_key).collect();
        let split: Vec<_> = run_stream(&parts).iter().map(item_key).collect();
        prop_assert_eq!(&whole, &split);
        prop_assert_eq!(whole.len(), corpus().len() + 1);
        prop_assert!(whole.iter().all(|(_, k)| !k.starts_with("malformed") && !k.starts_with("undecodable")));
    }

    #[test]
    fn mutated_streams_split_anywhere_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        splits in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut s = stream();
        for (at, byte) in &edits {
            let i = 8 + at.index(s.len() - 8);
            s[i] = *byte;
        }
        let mut cuts: Vec<usize> = splits.iter().map(|i| i.index(s.len() + 1)).collect();
        cuts.sort_unstable();
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut prev = 0;
        for c in cuts {
            parts.push(&s[prev..c]);
            prev = c;
        }
        parts.push(&s[prev..]);
        let whole: Vec<_> = run_stream(&[&s]).iter().map(item_key).collect();
        let split: Vec<_> = run_stream(&parts).iter().map(item_key).collect();
        prop_assert_eq!(whole, split);
    }

    #[test]
    fn random_field_tables_round_trip(entries in proptest::collection::vec(("[a-zA-Z0-9_.-]{0,20}", field_value()), 0..10)) {
        let t = FieldTable(entries.into_iter().map(|(k, v)| (Bytes::from(k), v)).collect());
        let mut enc = Vec::new();
        t.encode(&mut enc);
        let mut r = Reader::new(Bytes::from(enc.clone()), 0);
        let back = FieldTable::decode(&mut r).unwrap();
        prop_assert!(r.is_empty());
        let mut again = Vec::new();
        back.encode(&mut again);
        prop_assert_eq!(enc, again);
        let _ = table_json(&back);
    }
}
