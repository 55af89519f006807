//! Property tests: Value encode -> decode round trips (bounded depth), composite round trips
//! for every composite of the tables (fields generated from each field's spec type), and
//! never-panics over random bytes, mutated valid frames, and streams split at random points.

use amqpeek::codec::Reader;
use amqpeek::codec::amqp10::{
    self, Array, CompositeDef, Described, Descriptor, FieldDef, FieldType, Kind, Value,
    composite::{ALL, check_described, lookup},
};
use amqpeek::protocol::{Item, StreamDecoder};
use bytes::Bytes;
use proptest::prelude::*;

fn bytes_s(max: usize) -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}
fn string_s() -> impl Strategy<Value = Value> {
    prop_oneof![".{0,12}", "[a-z]{250,300}"].prop_map(|s: String| Value::String(s.into()))
}
fn symbol_s() -> impl Strategy<Value = amqp10::Symbol> {
    "[a-zA-Z:._-]{0,16}".prop_map(|s: String| amqp10::Symbol::from(s.as_str()))
}
fn float_s() -> impl Strategy<Value = f32> {
    any::<f32>().prop_filter("NaN != NaN", |f| !f.is_nan())
}
fn double_s() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("NaN != NaN", |f| !f.is_nan())
}

fn leaf_of(kind: Kind) -> BoxedStrategy<Value> {
    match kind {
        Kind::Null => Just(Value::Null).boxed(),
        Kind::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        Kind::Ubyte => any::<u8>().prop_map(Value::Ubyte).boxed(),
        Kind::Ushort => any::<u16>().prop_map(Value::Ushort).boxed(),
        Kind::Uint => prop_oneof![Just(0u32), 0..256u32, any::<u32>()]
            .prop_map(Value::Uint)
            .boxed(),
        Kind::Ulong => prop_oneof![Just(0u64), 0..256u64, any::<u64>()]
            .prop_map(Value::Ulong)
            .boxed(),
        Kind::Byte => any::<i8>().prop_map(Value::Byte).boxed(),
        Kind::Short => any::<i16>().prop_map(Value::Short).boxed(),
        Kind::Int => any::<i32>().prop_map(Value::Int).boxed(),
        Kind::Long => any::<i64>().prop_map(Value::Long).boxed(),
        Kind::Float => float_s().prop_map(Value::Float).boxed(),
        Kind::Double => double_s().prop_map(Value::Double).boxed(),
        Kind::Decimal32 => any::<u32>().prop_map(Value::Decimal32).boxed(),
        Kind::Decimal64 => any::<u64>().prop_map(Value::Decimal64).boxed(),
        Kind::Decimal128 => any::<[u8; 16]>().prop_map(Value::Decimal128).boxed(),
        Kind::Char => any::<char>().prop_map(Value::Char).boxed(),
        Kind::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
        Kind::Uuid => any::<[u8; 16]>().prop_map(Value::Uuid).boxed(),
        Kind::Binary => prop_oneof![bytes_s(20), bytes_s(400)]
            .prop_map(Value::Binary)
            .boxed(),
        Kind::String => string_s().boxed(),
        Kind::Symbol => symbol_s().prop_map(Value::Symbol).boxed(),
        Kind::List | Kind::Map | Kind::Array => Just(Value::List(vec![])).boxed(),
    }
}

const LEAF_KINDS: [Kind; 21] = [
    Kind::Null,
    Kind::Boolean,
    Kind::Ubyte,
    Kind::Ushort,
    Kind::Uint,
    Kind::Ulong,
    Kind::Byte,
    Kind::Short,
    Kind::Int,
    Kind::Long,
    Kind::Float,
    Kind::Double,
    Kind::Decimal32,
    Kind::Decimal64,
    Kind::Decimal128,
    Kind::Char,
    Kind::Timestamp,
    Kind::Uuid,
    Kind::Binary,
    Kind::String,
    Kind::Symbol,
];

fn leaf() -> BoxedStrategy<Value> {
    prop::sample::select(&LEAF_KINDS[..])
        .prop_flat_map(leaf_of)
        .boxed()
}

fn descriptor_s() -> impl Strategy<Value = Descriptor> {
    prop_oneof![
        any::<u64>().prop_map(Descriptor::Code),
        symbol_s().prop_map(Descriptor::Name)
    ]
}

fn value_s() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::List),
            prop::collection::vec((inner.clone(), inner.clone()), 0..4).prop_map(Value::Map),
            // Arrays of a primitive kind.
            prop::sample::select(&LEAF_KINDS[..]).prop_flat_map(|k| {
                prop::collection::vec(leaf_of(k), 0..6).prop_map(move |items| {
                    Value::Array(Box::new(Array {
                        descriptor: None,
                        kind: k,
                        items,
                    }))
                })
            }),
            // Arrays of lists, optionally described (arrays of described types).
            (
                prop::option::of(descriptor_s()),
                prop::collection::vec(prop::collection::vec(inner.clone(), 0..3), 0..4)
            )
                .prop_map(|(descriptor, lists)| Value::Array(Box::new(Array {
                    descriptor,
                    kind: Kind::List,
                    items: lists.into_iter().map(Value::List).collect(),
                }))),
            // Nested arrays: arrays of uint arrays.
            prop::collection::vec(prop::collection::vec(any::<u32>(), 0..4), 0..4).prop_map(
                |arrays| Value::Array(Box::new(Array {
                    descriptor: None,
                    kind: Kind::Array,
                    items: arrays
                        .into_iter()
                        .map(|a| Value::Array(Box::new(Array {
                            descriptor: None,
                            kind: Kind::Uint,
                            items: a.into_iter().map(Value::Uint).collect(),
                        })))
                        .collect(),
                }))
            ),
            (descriptor_s(), inner).prop_map(|(descriptor, value)| Value::Described(Box::new(
                Described { descriptor, value }
            ))),
        ]
    })
}

fn roundtrip(v: &Value) -> Value {
    let bytes = v.to_bytes().expect("encodable");
    let mut r = Reader::new(Bytes::from(bytes), 0);
    let out = amqp10::value::decode(&mut r).expect("decodes");
    assert!(r.is_empty());
    out
}

// ---- composites generated from their tables ----

fn described_of(def: &'static CompositeDef, depth: u32) -> BoxedStrategy<Value> {
    let fields: Vec<BoxedStrategy<Value>> =
        def.fields.iter().map(|f| field_value(f, depth)).collect();
    fields
        .prop_map(move |fields| amqp10::described_list(def.code, fields))
        .boxed()
}

fn providing(archetype: &str) -> Vec<&'static CompositeDef> {
    ALL.iter()
        .copied()
        .filter(|d| d.is_list() && d.provides(archetype))
        .collect()
}

fn single_value(f: &FieldDef, depth: u32) -> BoxedStrategy<Value> {
    match f.ty {
        FieldType::Prim(Kind::Map) | FieldType::Fields => {
            prop::collection::vec((symbol_s().prop_map(Value::Symbol), leaf()), 0..3)
                .prop_map(Value::Map)
                .boxed()
        }
        FieldType::Prim(k) => leaf_of(k),
        FieldType::Composite(def) if depth > 0 => described_of(def, depth - 1),
        FieldType::Composite(_) => Just(Value::Null).boxed(),
        FieldType::Any => {
            let defs: Vec<_> = f.requires.iter().flat_map(|r| providing(r)).collect();
            if defs.is_empty() || depth == 0 {
                prop_oneof![string_s(), leaf_of(Kind::Ulong), leaf_of(Kind::Binary)].boxed()
            } else {
                prop::sample::select(defs)
                    .prop_flat_map(move |d| described_of(d, depth - 1))
                    .boxed()
            }
        }
    }
}

fn field_value(f: &'static FieldDef, depth: u32) -> BoxedStrategy<Value> {
    let single = single_value(f, depth);
    let present = if f.multiple {
        let kind = match f.ty {
            FieldType::Prim(k) => k,
            _ => Kind::Symbol,
        };
        prop_oneof![
            single,
            prop::collection::vec(leaf_of(kind), 0..4).prop_map(move |items| Value::Array(
                Box::new(Array {
                    descriptor: None,
                    kind,
                    items
                })
            ))
        ]
        .boxed()
    } else {
        single
    };
    if f.mandatory {
        present
    } else {
        prop_oneof![1 => Just(Value::Null), 2 => present].boxed()
    }
}

fn any_composite() -> BoxedStrategy<(&'static CompositeDef, Value)> {
    let defs: Vec<&'static CompositeDef> = ALL.iter().copied().filter(|d| d.is_list()).collect();
    prop::sample::select(defs)
        .prop_flat_map(|d| described_of(d, 2).prop_map(move |v| (d, v)))
        .boxed()
}

fn frame_type(def: &CompositeDef) -> Option<u8> {
    if def.provides("frame") {
        Some(0)
    } else if def.provides("sasl-frame") {
        Some(1)
    } else {
        None
    }
}

/// A handful of valid frames (encoded from generated composites) to mutate and stream.
fn valid_frames() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        any_composite().prop_filter_map("frame composites", |(def, v)| {
            let t = frame_type(def)?;
            amqp10::encode_frame(t, 1, Some(&v), b"\x00\x53\x77\x41").ok()
        }),
        1..5,
    )
}

/// A SASL exchange's frames: mechanisms, an init with a random response, optional
/// challenge/response rounds, an outcome.
fn sasl_frames() -> impl Strategy<Value = Vec<Vec<u8>>> {
    (
        prop::collection::vec(any::<u8>(), 0..40),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 0..3),
        0u8..5,
    )
        .prop_map(|(resp, rounds, code)| {
            let sym = |s: &str| Value::Symbol(amqpeek::codec::amqp10::Symbol(s.into()));
            let bin = |b: &[u8]| Value::Binary(Bytes::copy_from_slice(b));
            let mut out = vec![
                amqp10::described_list(0x40, vec![sym("PLAIN")]),
                amqp10::described_list(0x41, vec![sym("PLAIN"), bin(&resp)]),
            ];
            for r in &rounds {
                out.push(amqp10::described_list(0x42, vec![bin(r)]));
                out.push(amqp10::described_list(0x43, vec![bin(r)]));
            }
            out.push(amqp10::described_list(0x44, vec![Value::Ubyte(code)]));
            out.iter()
                .map(|v| amqp10::encode_frame(1, 0, Some(v), &[]).unwrap())
                .collect()
        })
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

fn mutate(mut b: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if b.is_empty() {
            break;
        }
        match *m {
            Mutation::Flip(i, x) => {
                let i = i % b.len();
                b[i] ^= x;
            }
            Mutation::Insert(i, x) => {
                let i = i % (b.len() + 1);
                b.insert(i, x)
            }
            Mutation::Delete(i) => {
                let i = i % b.len();
                b.remove(i);
            }
        }
    }
    b
}

fn mutation_s() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, x)| Mutation::Insert(i, x)),
        any::<usize>().prop_map(Mutation::Delete),
    ]
}

/// Exercise everything a frame offers (summary, JSON, spans, secrets) without panicking.
fn touch(raw: &[u8]) {
    if let Ok(f) = amqp10::decode_frame(Bytes::copy_from_slice(raw), 7) {
        let _ = f.summary();
        let _ = f.fields_json();
        for r in f.secret_ranges() {
            assert!(r.start <= r.end && r.end <= raw.len());
        }
        let _ = amqp10::MessageAssembler::default()
            .push(&f)
            .map(|m| m.map(|m| m.to_json(16)));
    }
}

fn stream_all(stream: &[u8], cuts: &[usize]) -> Vec<Item> {
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    cuts.sort_unstable();
    let mut prev = 0;
    for c in cuts.into_iter().chain([stream.len()]) {
        d.push(Bytes::copy_from_slice(&stream[prev..c]), &mut out);
        prev = c;
    }
    assert_eq!(d.offset(), stream.len() as u64);
    out
}

/// Like `stream_all`, but the chunks whose `skim` bit is set are skimmed (frames passed over
/// by size) and only their rest, if any, decoded.
fn stream_skimming(stream: &[u8], cuts: &[usize], skim: &[bool]) -> Vec<Item> {
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    cuts.sort_unstable();
    let mut prev = 0;
    for (i, c) in cuts.into_iter().chain([stream.len()]).enumerate() {
        let chunk = Bytes::copy_from_slice(&stream[prev..c]);
        if skim.get(i).copied().unwrap_or(false) {
            let s = d.skim(&chunk);
            assert!(s.bytes <= chunk.len());
            d.push(chunk.slice(s.bytes..), &mut out);
        } else {
            d.push(chunk, &mut out);
        }
        prev = c;
    }
    assert_eq!(d.offset(), stream.len() as u64);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn skimming_never_panics_and_decodes_only_real_frames(
        frames in valid_frames(),
        muts in prop::collection::vec(mutation_s(), 0..3),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        skim in prop::collection::vec(any::<bool>(), 0..7),
    ) {
        let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
        for f in &frames {
            stream.extend_from_slice(f);
        }
        let whole = stream_all(&stream, &[]);
        for item in stream_skimming(&stream, &cuts, &skim) {
            // A frame that ends a message whose start was skimmed makes no message (it cannot
            // know the whole): it must still be a real frame. Any message made is the real one.
            let real = match &item {
                Item::Frame(fe) if fe.message.is_none() => whole.iter().any(|w| {
                    matches!(w, Item::Frame(w) if w.offset == fe.offset && w.raw == fe.raw)
                }),
                _ => whole.contains(&item),
            };
            prop_assert!(real, "not decoded from the whole stream: {:?}", item);
        }
        let mutated = mutate(stream, &muts);
        let _ = stream_skimming(&mutated, &cuts, &skim);
    }

    #[test]
    fn values_round_trip(v in value_s()) {
        prop_assert_eq!(roundtrip(&v), v);
    }

    #[test]
    fn composites_round_trip((def, v) in any_composite()) {
        match frame_type(def) {
            Some(t) => {
                let raw = amqp10::encode_frame(t, 3, Some(&v), b"").unwrap();
                let f = amqp10::decode_frame(Bytes::from(raw.clone()), 0)
                    .unwrap_or_else(|e| panic!("{def:?}: {e}\n{v:?}"));
                let c = f.composite().unwrap();
                prop_assert_eq!(c.def.name, def.name);
                let Value::Described(d) = &v else { unreachable!() };
                prop_assert_eq!(&Value::List(c.fields(&f.raw).to_vec()), &d.value);
                // One span per field, tiling the list body in order.
                let spans = c.spans(&f.raw);
                prop_assert_eq!(spans.len(), c.fields(&f.raw).len());
                for w in spans.windows(2) {
                    prop_assert_eq!(w[0].end, w[1].start);
                }
                prop_assert_eq!(f.name(), def.name);
                let _ = (f.summary(), f.fields_json());
            }
            None => {
                // Nested composites (source, error, outcomes, sections): value + table check.
                let back = roundtrip(&v);
                prop_assert_eq!(&back, &v);
                let d = back.as_described().unwrap();
                check_described(lookup(def.code).unwrap(), d, 0, 0)
                    .unwrap_or_else(|e| panic!("{def:?}: {e}"));
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..200), t in 0u8..3) {
        // With a valid header so the body decoder is reached.
        let mut raw = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        raw.extend_from_slice(&[2, t, 0, 0]);
        raw.extend_from_slice(&body);
        touch(&raw);
        touch(&body);
        let mut r = Reader::new(Bytes::from(body), 0);
        let _ = amqp10::value::decode(&mut r);
    }

    #[test]
    fn mutated_frames_never_panic(
        frames in valid_frames(),
        muts in prop::collection::vec(mutation_s(), 1..6),
    ) {
        for f in &frames {
            touch(&mutate(f.clone(), &muts));
        }
    }

    #[test]
    fn streams_split_anywhere_never_panic_and_agree(
        frames in valid_frames(),
        muts in prop::collection::vec(mutation_s(), 0..3),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
        for f in &frames {
            stream.extend_from_slice(f);
        }
        let whole = stream_all(&stream, &[]);
        let split = stream_all(&stream, &cuts);
        prop_assert_eq!(&whole, &split);
        // Unmutated valid frames all decode.
        prop_assert_eq!(whole.iter().filter(|i| matches!(i, Item::Frame(_))).count(), frames.len());
        let mutated = mutate(stream, &muts);
        prop_assert_eq!(stream_all(&mutated, &[]), stream_all(&mutated, &cuts));
    }

    /// The SASL layer first (its header, SASL frames), then the AMQP 1.0 header and frames, as
    /// real connections start: split anywhere, the same items as whole, mutated or not. The
    /// second header is where a stream cut after sasl-outcome used to stall for good.
    #[test]
    fn sasl_then_amqp_streams_split_anywhere_agree(
        sasl in sasl_frames(),
        frames in valid_frames(),
        muts in prop::collection::vec(mutation_s(), 0..3),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        header_cut in 1usize..8,
    ) {
        let mut stream = b"AMQP\x03\x01\x00\x00".to_vec();
        for f in &sasl {
            stream.extend_from_slice(f);
        }
        let second = stream.len();
        stream.extend_from_slice(b"AMQP\x00\x01\x00\x00");
        for f in &frames {
            stream.extend_from_slice(f);
        }
        // One cut always falls inside the second header.
        let mut cuts = cuts;
        cuts.push(second + header_cut);
        let whole = stream_all(&stream, &[]);
        prop_assert_eq!(&whole, &stream_all(&stream, &cuts));
        let decoded = whole.iter().filter(|i| matches!(i, Item::Frame(_))).count();
        prop_assert_eq!(decoded, sasl.len() + frames.len());
        let headers = whole.iter().filter(|i| matches!(i, Item::Header { .. })).count();
        prop_assert_eq!(headers, 2);
        let mutated = mutate(stream, &muts);
        prop_assert_eq!(stream_all(&mutated, &[]), stream_all(&mutated, &cuts));
    }
}
