//! The generated AMQP 0-9-1 method table checked against RabbitMQ's JSON spec
//! (`spec/amqp-0-9-1/amqp-rabbitmq-0.9.1.json`, kept in the repository): every class
//! and method id and name, argument names, order, domains and wire types, synchronous and
//! content flags, defaults, properties, and the constants.

use amqpeek::codec::amqp091::*;
use serde_json::Value as Json;

const SPEC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/spec/amqp-0-9-1/amqp-rabbitmq-0.9.1.json"
);

/// The in-repository copy of RabbitMQ's JSON spec, parsed.
fn load() -> Json {
    let text = std::fs::read_to_string(SPEC).unwrap_or_else(|e| panic!("{SPEC}: {e}"));
    serde_json::from_str(&text).expect("spec JSON parses")
}

fn wire(name: &str) -> WireType {
    match name {
        "bit" => WireType::Bit,
        "octet" => WireType::Octet,
        "short" => WireType::Short,
        "long" => WireType::Long,
        "longlong" => WireType::LongLong,
        "shortstr" => WireType::ShortStr,
        "longstr" => WireType::LongStr,
        "table" => WireType::Table,
        "timestamp" => WireType::Timestamp,
        other => panic!("unknown type {other}"),
    }
}

fn check_args(spec: &Json, domains: &Json, got: &[ArgDef], what: &str) {
    let spec = spec.as_array().map(Vec::as_slice).unwrap_or_default();
    assert_eq!(got.len(), spec.len(), "{what}: argument count");
    for (a, s) in got.iter().zip(spec) {
        assert_eq!(
            a.name,
            s["name"].as_str().unwrap(),
            "{what}: argument order"
        );
        let (domain, ty) = match s.get("domain").and_then(Json::as_str) {
            Some(d) => {
                let base = domains
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x[0] == d)
                    .map(|x| x[1].as_str().unwrap().to_owned())
                    .unwrap_or_else(|| panic!("{what}: domain {d}"));
                (d.to_owned(), base)
            }
            None => {
                let t = s["type"].as_str().unwrap().to_owned();
                (t.clone(), t)
            }
        };
        assert_eq!(a.domain, domain, "{what}.{}", a.name);
        assert_eq!(a.ty, wire(&ty), "{what}.{}", a.name);
        assert_eq!(a.ty.spec_name(), ty);
        let default = match s.get("default-value") {
            None => None,
            Some(Json::Bool(b)) => Some(DefaultValue::Bool(*b)),
            Some(Json::Number(n)) => Some(DefaultValue::Int(n.as_u64().unwrap())),
            Some(Json::String(t)) => {
                assert!(
                    matches!(a.default, Some(DefaultValue::Str(x)) if x == t),
                    "{what}.{}",
                    a.name
                );
                continue;
            }
            Some(Json::Object(o)) if o.is_empty() => Some(DefaultValue::EmptyTable),
            Some(other) => panic!("{what}: default {other}"),
        };
        assert_eq!(a.default, default, "{what}.{}", a.name);
    }
}

#[test]
fn method_table_matches_rabbitmq_json_spec() {
    let spec = load();
    let domains = &spec["domains"];
    let classes = spec["classes"].as_array().unwrap();
    assert_eq!(CLASSES.len(), classes.len());
    let mut n_methods = 0;
    for (c, sc) in CLASSES.iter().zip(classes) {
        assert_eq!(c.id as u64, sc["id"].as_u64().unwrap());
        assert_eq!(c.name, sc["name"].as_str().unwrap());
        assert_eq!(class_def(c.id).map(|x| x.name), Some(c.name));
        check_args(
            sc.get("properties").unwrap_or(&Json::Null),
            domains,
            c.properties,
            c.name,
        );
        let sms = sc["methods"].as_array().unwrap();
        assert_eq!(c.methods().len(), sms.len(), "{}", c.name);
        for (m, sm) in c.methods().iter().zip(sms) {
            n_methods += 1;
            let what = format!(
                "{}.{}",
                sc["name"].as_str().unwrap(),
                sm["name"].as_str().unwrap()
            );
            assert_eq!(m.name, what);
            assert_eq!(m.class_id, c.id);
            assert_eq!(m.class_name, c.name);
            assert_eq!(m.method_name, sm["name"].as_str().unwrap());
            assert_eq!(m.method_id as u64, sm["id"].as_u64().unwrap(), "{what}");
            assert_eq!(
                m.synchronous,
                sm.get("synchronous") == Some(&Json::Bool(true)),
                "{what}"
            );
            assert_eq!(
                m.content,
                sm.get("content") == Some(&Json::Bool(true)),
                "{what}"
            );
            assert_eq!(
                method_def(m.class_id, m.method_id).map(|d| d.name),
                Some(m.name)
            );
            assert_eq!(m.kind.def().name, m.name);
            check_args(&sm["arguments"], domains, m.args, &what);
        }
    }
    assert_eq!(n_methods, METHODS.len());
    for k in spec["constants"].as_array().unwrap() {
        let v = k["value"].as_u64().unwrap();
        let ours = match k["name"].as_str().unwrap() {
            "FRAME-METHOD" => constants::FRAME_METHOD,
            "FRAME-HEADER" => constants::FRAME_HEADER,
            "FRAME-BODY" => constants::FRAME_BODY,
            "FRAME-HEARTBEAT" => constants::FRAME_HEARTBEAT,
            "FRAME-END" => constants::FRAME_END,
            "FRAME-MIN-SIZE" => constants::FRAME_MIN_SIZE,
            "REPLY-SUCCESS" => constants::REPLY_SUCCESS,
            "NOT-FOUND" => constants::NOT_FOUND,
            "PRECONDITION-FAILED" => constants::PRECONDITION_FAILED,
            "UNEXPECTED-FRAME" => constants::UNEXPECTED_FRAME,
            _ => continue,
        };
        assert_eq!(u64::from(ours), v, "{}", k["name"]);
    }
}

#[test]
fn lookups_reject_undefined_ids() {
    assert!(method_def(60, 41).is_none());
    assert!(method_def(61, 40).is_none());
    assert!(class_def(0).is_none());
    assert_eq!(method_def(60, 120).map(|d| d.name), Some("basic.nack"));
    assert_eq!(
        method_def(10, 70).map(|d| d.name),
        Some("connection.update-secret")
    );
    assert_eq!(method_def(40, 30).map(|d| d.name), Some("exchange.bind"));
    assert_eq!(method_def(85, 10).map(|d| d.name), Some("confirm.select"));
}

/// The generated argument index agrees with the spec's argument lists: for every method, each
/// argument is found where the spec puts it, and no argument a method lacks is found.
#[test]
fn generated_argument_indexes_match_the_spec_order() {
    use amqpeek::codec::amqp091::{Arg, METHODS, arg_index};
    for def in METHODS.iter() {
        for arg in Arg::ALL {
            let want = def.args.iter().position(|a| a.name == arg.name());
            assert_eq!(
                arg_index(def.kind, arg),
                want,
                "{} {}",
                def.name,
                arg.name()
            );
        }
    }
}

/// Each method's and class's generated key order lists every argument or property once, in
/// the byte order of the names (the JSON writer relies on it instead of sorting).
#[test]
fn key_orders_are_every_name_in_byte_order() {
    use amqpeek::codec::amqp091::{ArgDef, CLASSES, METHODS};
    fn check(what: &str, order: &[u8], defs: &[ArgDef]) {
        let names: Vec<&str> = order.iter().map(|&i| defs[usize::from(i)].name).collect();
        let mut want: Vec<&str> = defs.iter().map(|a| a.name).collect();
        want.sort_unstable();
        assert_eq!(names, want, "{what}");
    }
    for m in METHODS.iter() {
        check(m.name, m.key_order, m.args);
    }
    for c in CLASSES.iter() {
        check(c.name, c.property_key_order, c.properties);
    }
}
