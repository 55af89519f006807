//! The toy's field terms: `length:` (a number or range) and `payload:` (text it contains).

use super::Toy;
use super::codec::ToyFrame;
use crate::filter::Wanted;
use crate::filter::register::{Choices, Filtered, Holds};

impl Filtered for Toy {
    fn field_names() -> Vec<&'static str> {
        vec!["length", "payload"]
    }
    fn holds(name: &str) -> Vec<Holds> {
        match name {
            "length" => vec![Some(Some((0, u32::MAX.into())))],
            "payload" => vec![None],
            _ => Vec::new(),
        }
    }
    fn choices(name: &str) -> Vec<Choices> {
        Self::holds(name).into_iter().map(|_| None).collect()
    }
    fn text_field(frame: &ToyFrame, name: &str) -> Option<String> {
        (name == "payload").then(|| String::from_utf8_lossy(&frame.payload).into_owned())
    }
    fn matches(frame: &ToyFrame, first: &str, rest: &[String], wanted: &[Wanted]) -> bool {
        if !rest.is_empty() {
            return false;
        }
        match first {
            "length" => wanted.iter().any(|w| w.number(frame.length.into())),
            "payload" => {
                let text = String::from_utf8_lossy(&frame.payload);
                wanted.iter().any(|w| w.string(&text))
            }
            _ => false,
        }
    }
}
