//! The filter's half of the protocol table (`crate::protocol::registered_protocols`): each
//! registered protocol's field terms, named by the [`Filtered`] implementation of its unit
//! type, and the dispatch over them.

use super::field::Wanted;
use crate::protocol::{AnyFrame, Protocol};

/// What the filter's field terms (`handle:1`, `routing-key:invoices`) ask of one protocol.
pub trait Filtered: Protocol {
    /// The name of every field a frame of it can have (the first segment of a field path).
    fn field_names() -> Vec<&'static str>;
    /// The text of field `name` of `frame` when it holds a string or symbol, lossily decoded.
    fn text_field(frame: &Self::Frame, name: &str) -> Option<String>;
    /// Whether `frame` has a field at `first` (then `rest` inside it) whose value matches one
    /// of `wanted`.
    fn matches(frame: &Self::Frame, first: &str, rest: &[String], wanted: &[Wanted]) -> bool;
}

/// Generates, from the protocol table: [`all_field_names`], [`text_field`], [`matches`].
macro_rules! filters {
    ($($(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $variant:ident($field:ident) => $imp:ty),+ $(,)?) => {
        /// Every registered protocol's field names, sorted, each once.
        pub fn all_field_names() -> Vec<&'static str> {
            let mut names: Vec<&'static str> = Vec::new();
            $($(#[cfg($cfg)])? names.extend(<$imp as Filtered>::field_names());)+
            names.sort_unstable();
            names.dedup();
            names
        }

        /// See [`Filtered::text_field`].
        pub fn text_field(frame: &AnyFrame, name: &str) -> Option<String> {
            match frame {
                $($(#[cfg($cfg)])? AnyFrame::$variant(f) => <$imp as Filtered>::text_field(f, name)),+
            }
        }

        /// See [`Filtered::matches`].
        pub fn matches(frame: &AnyFrame, first: &str, rest: &[String], wanted: &[Wanted]) -> bool {
            match frame {
                $($(#[cfg($cfg)])? AnyFrame::$variant(f) => {
                    <$imp as Filtered>::matches(f, first, rest, wanted)
                })+
            }
        }
    };
}

crate::protocol::registered_protocols!(filters);
