//! The toy's field terms: `length:` (a number or range) and `payload:` (text it contains).

use super::Toy;
use super::codec::ToyFrame;
use crate::filter::Wanted;
use crate::filter::register::Filtered;

impl Filtered for Toy {
    fn field_names() -> Vec<&'static str> {
        vec!["length", "payload"]
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
