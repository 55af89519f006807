//! The packet comment amqpeek's pcapng writer puts on the first packet after bytes it left out
//! (an export, a filtered capture): its payload starts exactly at a frame (or a protocol header),
//! and of which protocol. amqpeek's reader resumes decoding there ([`parse`]) instead of
//! searching for a run of plausible frames, so that a lone frame between two holes reads back
//! whole; Wireshark shows the comment and dissects the packet as ever.
//!
//! Pure data: no I/O.

use crate::codec::ProtocolHeader;
use crate::protocol::ProtocolId;

/// How the comment starts.
const PREFIX: &str = "amqpeek: frame boundary: ";

/// Said after the word naming what starts.
const TAIL: &str = " starts here (the bytes before it are not in this capture)";

/// The word of the comment for a protocol header.
const HEADER: &str = "header";

/// What a packet marked as a boundary starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// An AMQP protocol header (the decoder expects one, as at a stream's start).
    Header,
    /// A frame framed as this protocol's (as [`ProtocolId::header`] names it).
    Frame(ProtocolHeader),
}

impl Boundary {
    /// The boundary of a frame whose JSONL `"proto"` is `proto_name` (`None` for an unknown
    /// name).
    pub fn of_proto_name(proto_name: &str) -> Option<Boundary> {
        ProtocolId::of_proto_name(proto_name).map(|p| Boundary::Frame(p.header()))
    }

    /// The protocol a decoder resumes with there (`None`: a protocol header is expected).
    pub fn resync(self) -> Option<ProtocolHeader> {
        match self {
            Boundary::Header => None,
            Boundary::Frame(p) => Some(p),
        }
    }
}

/// The comment marking a packet that starts with a protocol header (`proto_name` `None`) or a
/// frame whose JSONL `"proto"` is `proto_name`.
pub fn comment(proto_name: Option<&str>) -> String {
    match proto_name {
        None => format!("{PREFIX}{HEADER}{TAIL}"),
        Some(p) => format!("{PREFIX}{p} frame{TAIL}"),
    }
}

/// The boundary a [`comment`] names, if `text` is one.
pub fn parse(text: &str) -> Option<Boundary> {
    let word = text.strip_prefix(PREFIX)?.split(' ').next()?;
    if word == HEADER {
        Some(Boundary::Header)
    } else {
        Boundary::of_proto_name(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_parse_back_and_others_do_not() {
        assert_eq!(parse(&comment(None)), Some(Boundary::Header));
        assert_eq!(
            parse(&comment(Some("amqp-1.0"))),
            Some(Boundary::Frame(ProtocolHeader::Amqp10))
        );
        assert_eq!(
            parse(&comment(Some("amqp-0-9-1"))),
            Some(Boundary::Frame(ProtocolHeader::Amqp091))
        );
        assert_eq!(parse(&comment(Some("nonsense"))), None);
        assert_eq!(parse("amqpeek error x: y"), None);
        assert_eq!(parse(""), None);
    }
}
