//! The filter's half of the protocol table (`crate::protocol::registered_protocols`): each
//! registered protocol's field terms, named by the [`Filtered`] implementation of its unit
//! type, and the dispatch over them.

pub use super::field::Holds;
use super::field::Wanted;

/// The values one field is restricted to, as (the spec's name, the value) pairs; `None`: it
/// takes any value of its type.
pub type Choices = Option<Vec<(&'static str, &'static str)>>;
use crate::protocol::{AnyFrame, Protocol};

/// What the filter's field terms (`handle:1`, `routing-key:invoices`) ask of one protocol.
pub trait Filtered: Protocol {
    /// The name of every field a frame of it can have (the first segment of a field path).
    fn field_names() -> Vec<&'static str>;
    /// What each of its fields called `name` holds (for refusing a number none can hold).
    fn holds(name: &str) -> Vec<Holds>;
    /// The values each of its fields called `name` is restricted to (for refusing a value
    /// none can match, and for completion).
    fn choices(name: &str) -> Vec<Choices>;
    /// The text of field `name` of `frame` when it holds a string or symbol, lossily decoded.
    fn text_field(frame: &Self::Frame, name: &str) -> Option<String>;
    /// Whether `frame` has a field at `first` (then `rest` inside it) whose value matches one
    /// of `wanted`.
    fn matches(frame: &Self::Frame, first: &str, rest: &[String], wanted: &[Wanted]) -> bool;
}

/// Generates, from the protocol table: [`all_field_names`], [`holds`], [`choices`],
/// [`text_field`], [`matches`].
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

        /// What every registered protocol's fields called `name` hold.
        pub fn holds(name: &str) -> Vec<Holds> {
            let mut out = Vec::new();
            $($(#[cfg($cfg)])? out.extend(<$imp as Filtered>::holds(name));)+
            out
        }

        /// The values every registered protocol's fields called `name` are restricted to.
        pub fn choices(name: &str) -> Vec<Choices> {
            let mut out = Vec::new();
            $($(#[cfg($cfg)])? out.extend(<$imp as Filtered>::choices(name));)+
            out
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
