//! The composite tables checked against the OASIS XML in `spec/amqp-1.0` (kept in the
//! repository, so this always runs): names, descriptor names and codes, field names, order,
//! types, requires, mandatory, multiple, defaults, and choices of restricted field types.

use std::collections::HashMap;
use std::path::PathBuf;

use amqpeek::codec::amqp10::composite::{ALL, lookup, lookup_name};

/// Attributes of every `<tag ...>` element, in document order, with the enclosing type's name.
#[derive(Debug, Clone)]
struct Elem {
    tag: String,
    attrs: HashMap<String, String>,
}

/// A minimal XML scanner: enough for the spec files (no CDATA in tags, attributes double-quoted).
fn elements(xml: &str) -> Vec<Elem> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        rest = &rest[start + 1..];
        if rest.starts_with("!--") {
            rest = rest.find("-->").map_or("", |e| &rest[e + 3..]);
            continue;
        }
        let Some(end) = rest.find('>') else { break };
        let inner = &rest[..end];
        rest = &rest[end + 1..];
        if inner.starts_with('?') || inner.starts_with('!') {
            continue;
        }
        let closing = inner.starts_with('/');
        let inner = inner.trim_start_matches('/').trim_end_matches('/');
        let tag: String = inner.chars().take_while(|c| !c.is_whitespace()).collect();
        let mut attrs = HashMap::new();
        let mut a = &inner[tag.len()..];
        while let Some(eq) = a.find("=\"") {
            let name = a[..eq].trim().to_string();
            let after = &a[eq + 2..];
            let Some(q) = after.find('"') else { break };
            attrs.insert(name, after[..q].to_string());
            a = &after[q + 1..];
        }
        out.push(Elem {
            tag: if closing { format!("/{tag}") } else { tag },
            attrs,
        });
    }
    out
}

/// The in-repository copy of the OASIS XML.
fn spec_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/spec/amqp-1.0"))
}

/// A `<type>` being read: itself, its `<descriptor>`, its `<field>`s and its `<choice>`s.
type TypeElems = (Elem, Option<Elem>, Vec<Elem>, Vec<Elem>);

#[test]
fn tables_match_the_spec_xml() {
    let dir = spec_dir();
    let mut restricted: HashMap<String, (String, Vec<(String, String)>)> = HashMap::new();
    let mut described = Vec::new();
    for f in [
        "transport.xml",
        "messaging.xml",
        "security.xml",
        "transactions.xml",
    ] {
        let xml = std::fs::read_to_string(dir.join(f)).unwrap();
        let mut current: Option<TypeElems> = None;
        for e in elements(&xml) {
            match e.tag.as_str() {
                "type" => current = Some((e, None, vec![], vec![])),
                "descriptor" => {
                    if let Some(c) = current.as_mut() {
                        c.1 = Some(e)
                    }
                }
                "field" => {
                    if let Some(c) = current.as_mut() {
                        c.2.push(e)
                    }
                }
                "choice" => {
                    if let Some(c) = current.as_mut() {
                        c.3.push(e)
                    }
                }
                "/type" => {
                    if let Some((t, d, fields, choices)) = current.take() {
                        let name = t.attrs["name"].clone();
                        if t.attrs["class"] == "restricted" {
                            restricted.insert(
                                name.clone(),
                                (
                                    t.attrs["source"].clone(),
                                    choices
                                        .iter()
                                        .map(|c| {
                                            (c.attrs["name"].clone(), c.attrs["value"].clone())
                                        })
                                        .collect(),
                                ),
                            );
                        }
                        if let Some(d) = d {
                            described.push((t, d, fields));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert_eq!(described.len(), ALL.len(), "one table per described type");
    for (t, d, fields) in &described {
        let name = &t.attrs["name"];
        let (hi, lo) = d.attrs["code"].split_once(':').unwrap();
        let code = (u64::from_str_radix(hi.trim_start_matches("0x"), 16).unwrap() << 32)
            | u64::from_str_radix(lo.trim_start_matches("0x"), 16).unwrap();
        let def = lookup(code).unwrap_or_else(|| panic!("no table for {name} 0x{code:x}"));
        assert_eq!(def.name, name);
        assert_eq!(def.descriptor_name, d.attrs["name"]);
        assert!(std::ptr::eq(lookup_name(def.descriptor_name).unwrap(), def));
        assert_eq!(def.class, t.attrs["class"]);
        assert_eq!(def.source, t.attrs["source"]);
        let provides: Vec<&str> = t
            .attrs
            .get("provides")
            .map(|p| p.split(',').map(str::trim).collect())
            .unwrap_or_default();
        assert_eq!(def.provides, &provides[..], "{name} provides");
        assert_eq!(def.fields.len(), fields.len(), "{name} field count");
        for (f, x) in def.fields.iter().zip(fields) {
            let at = format!("{name}.{}", f.name);
            assert_eq!(f.name, x.attrs["name"], "{at}");
            assert_eq!(f.spec_type, x.attrs["type"], "{at} type");
            assert_eq!(
                f.mandatory,
                x.attrs.get("mandatory").is_some_and(|v| v == "true"),
                "{at}"
            );
            assert_eq!(
                f.multiple,
                x.attrs.get("multiple").is_some_and(|v| v == "true"),
                "{at}"
            );
            assert_eq!(
                f.default,
                x.attrs.get("default").map(String::as_str),
                "{at} default"
            );
            let requires: Vec<&str> = x
                .attrs
                .get("requires")
                .map(|p| p.split(',').map(str::trim).collect())
                .unwrap_or_default();
            assert_eq!(f.requires, &requires[..], "{at} requires");
            // Choices of the field's restricted type (following restricted-of-restricted).
            let mut ty = x.attrs["type"].clone();
            let mut expected = Vec::new();
            while let Some((source, choices)) = restricted.get(&ty) {
                if !choices.is_empty() {
                    expected = choices.clone();
                    break;
                }
                ty = source.clone();
            }
            let got: Vec<(String, String)> = f
                .choices
                .iter()
                .map(|c| (c.name.to_string(), c.value.to_string()))
                .collect();
            assert_eq!(got, expected, "{at} choices");
        }
    }
}

#[test]
fn defaults_parse_as_their_field_types() {
    // Every default the tables carry is a value the typed views apply: numbers parse, booleans
    // are true/false, symbols are among the field's choices.
    for def in ALL {
        for f in def.fields {
            let Some(d) = f.default else { continue };
            let ok = d.parse::<u64>().is_ok()
                || d == "true"
                || d == "false"
                || f.choices.iter().any(|c| c.name == d);
            assert!(ok, "{}.{} default {d}", def.name, f.name);
        }
    }
}

/// Each composite's generated `key_order` lists every field once, in the byte order of the
/// names: the JSON writer relies on it to write keys byte-ordered without sorting.
#[test]
fn key_order_is_every_field_in_byte_order() {
    for def in amqpeek::codec::amqp10::tables::ALL {
        let names: Vec<&str> = def
            .key_order
            .iter()
            .map(|&i| def.fields[usize::from(i)].name)
            .collect();
        let mut want: Vec<&str> = def.fields.iter().map(|f| f.name).collect();
        want.sort_unstable();
        assert_eq!(names, want, "{}", def.name);
    }
}
