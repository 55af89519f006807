//! Typed, positioned decode errors shared by both codecs.
//!
//! An error carries the absolute byte offset in the direction's stream where decoding failed and
//! the field path that was being decoded (e.g. `attach.source.filter`), so a user can find the
//! byte in a hex dump. Never a `String` error: the kind is an enum.

use std::fmt;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// The input ended before the value did.
    #[error("truncated: needed {needed} bytes, {available} available")]
    Truncated {
        /// Bytes the value needed from where it started.
        needed: u64,
        /// Bytes there were.
        available: u64,
    },
    /// A format code / type constructor the spec does not define.
    #[error("invalid format code 0x{0:02x}")]
    InvalidFormatCode(u8),
    /// A length or count that cannot be satisfied by the bytes present.
    #[error("{what} of {claimed} exceeds the {available} bytes available")]
    LengthExceedsInput {
        /// What claimed it (`list size`, `array count` ...).
        what: &'static str,
        /// The length or count claimed.
        claimed: u64,
        /// Bytes left in the input.
        available: u64,
    },
    /// Nesting deeper than the decoder allows.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    /// A string that is not valid UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// A char that is not a Unicode scalar value.
    #[error("invalid char 0x{0:08x}")]
    InvalidChar(u32),
    /// The value has the wrong type for the field.
    #[error("expected {expected}, found {found}")]
    UnexpectedType {
        /// The type the field is defined with.
        expected: &'static str,
        /// The type found on the wire.
        found: &'static str,
    },
    /// A mandatory field is absent or null.
    #[error("mandatory field is missing")]
    MissingMandatory,
    /// A frame header field is out of range (size, doff, frame-end, ...).
    #[error("malformed frame: {0}")]
    MalformedFrame(&'static str),
    /// A frame larger than the negotiated or sane maximum.
    #[error("frame size {size} exceeds maximum {max}")]
    FrameTooLarge {
        /// The frame's size field.
        size: u64,
        /// The largest frame allowed there.
        max: u64,
    },
    /// Bytes left over after a complete value where none are allowed.
    #[error("{0} trailing bytes")]
    TrailingBytes(u64),
    /// Bytes that are not an AMQP protocol header.
    #[error("not an AMQP protocol header")]
    BadProtocolHeader,
    /// A valid protocol header (or a TLS record) of a protocol this codec does not decode:
    /// what follows it is in that protocol.
    #[error("{} is not decoded", .0.describe())]
    NotDecoded(super::ProtocolHeader),
    /// A class/method or frame type the codec does not know.
    #[error("unknown {what} {id}")]
    Unknown {
        /// What kind of id (`class/method`, `frame type` ...).
        what: &'static str,
        /// The id found.
        id: u32,
    },
    /// A value that breaks an encoding rule (e.g. array element count mismatch, bad constructor).
    #[error("invalid encoding: {0}")]
    InvalidEncoding(&'static str),
    /// A frame larger than the inspection budget whose fields do not fit in the head of it the
    /// inspection holds: not inspected (and not judged), its bytes passed on.
    #[error("frame of {size} bytes not inspected: its fields do not fit in the {head} bytes held")]
    NotInspected {
        /// The frame's full size.
        size: u64,
        /// The bytes of it the inspection held.
        head: u64,
    },
}

/// A decode error: kind, absolute offset, and the field path being decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Absolute byte offset in the direction's stream.
    pub offset: u64,
    /// Field path, outermost first (e.g. `["attach", "source", "filter"]`).
    pub path: Vec<&'static str>,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl DecodeError {
    /// An error at `offset` with an empty path.
    pub fn new(offset: u64, kind: ErrorKind) -> Self {
        DecodeError {
            offset,
            path: Vec::new(),
            kind,
        }
    }

    /// Prefix the path with an enclosing field name (call while unwinding outwards).
    pub fn within(mut self, field: &'static str) -> Self {
        self.path.insert(0, field);
        self
    }

    /// The path joined with dots, e.g. `attach.source.filter`.
    pub fn path_string(&self) -> String {
        self.path.join(".")
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at offset {}: {}", self.offset, self.kind)
        } else {
            write!(
                f,
                "at offset {} in {}: {}",
                self.offset,
                self.path_string(),
                self.kind
            )
        }
    }
}

impl std::error::Error for DecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_offset_and_path() {
        let e = DecodeError::new(42, ErrorKind::InvalidFormatCode(0xff))
            .within("filter")
            .within("source")
            .within("attach");
        assert_eq!(
            e.to_string(),
            "at offset 42 in attach.source.filter: invalid format code 0xff"
        );
    }
}
