//! Protocol header negotiation, whatever the protocol: which header each peer sent, whether the
//! server refused the client's, and what may be judged after.
//!
//! A client may ask for any protocol (AMQP 1.0 §2.2, AMQP 0-9-1 §4.2.2): asking for one the
//! server does not speak is no fault of the client. What is judged is the server's answer: a
//! server that refuses answers with a header of its own and closes the socket, so anything it
//! sends after that header is a violation. Streams of a protocol amqpeek does not decode (TLS,
//! 0-9, 0-8, unknown versions) are noted once bytes of them were actually left undecoded.
//!
//! Exchange `k` pairs each peer's `k`-th header (AMQP 1.0 sends a new header after TLS and
//! after SASL). Only a server header that came after the client's is an answer: a server may
//! send its header first (1.0 §2.2), and then the bytes it pipelined behind it cannot have been
//! an answer to the client.

use crate::base::{Dir, Violation};
use crate::codec::{DecodeError, ErrorKind, ProtocolHeader};
use crate::state::rules;

/// Headers kept per direction (a hostile peer may send any number; the negotiation is over
/// after the first few).
const MAX_HEADERS: usize = 4;

/// Bytes of one direction after a header amqpeek does not decode, not yet reported.
#[derive(Clone, Copy, Debug)]
struct Undecoded {
    /// Where decoding stopped (the end of the header).
    from: u64,
    header: ProtocolHeader,
}

/// The server refused the client's header.
#[derive(Clone, Copy, Debug)]
struct Refusal {
    /// The client's header it refused.
    asked: ProtocolHeader,
    /// The header it answered with.
    answer: ProtocolHeader,
    /// The end of that header: every server byte from here on is a violation.
    end: u64,
    /// Something the server sent after it was reported.
    reported: bool,
}

/// The header negotiation of one connection.
#[derive(Debug, Default)]
pub struct Negotiation {
    /// The first [`MAX_HEADERS`] headers each direction sent, per [`Dir::index`].
    headers: [Vec<ProtocolHeader>; 2],
    /// Headers each direction sent in all.
    count: [usize; 2],
    refusal: Option<Refusal>,
    undecoded: [Option<Undecoded>; 2],
    /// Bytes of either direction were missed: the headers' positions no longer say which
    /// answers which (a lost header shifts them), so no refusal is judged from here on.
    gapped: bool,
}

/// What the connection tracker does with a server item after the negotiation saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Track it as usual.
    Track,
    /// It came after the server refused the client's header: it was reported, and the
    /// protocol trackers must not judge it as if the connection had gone on.
    Refused,
}

/// Headers after which the decoder cannot follow the stream (what follows is not judged).
fn not_decoded(h: ProtocolHeader) -> bool {
    crate::protocol::ProtocolId::not_decoded(h)
}

/// Does a server that answers the client's `asked` (its `k`-th header) with `answer` refuse it?
fn refuses(asked: ProtocolHeader, answer: ProtocolHeader, k: usize) -> bool {
    if matches!(answer, ProtocolHeader::NotAmqp | ProtocolHeader::RawTls) {
        return false; // not a protocol header at all: the decoder's rules judge that
    }
    // A server that accepts with frames (0-9-1 §4.2.2: connection.start) never answers with a
    // header of its own: any header it answers with is the refusal.
    (k == 0 && crate::protocol::ProtocolId::any_answer_refuses(asked)) || asked != answer
}

impl Negotiation {
    /// The headers `dir` sent, the first few.
    pub fn headers(&self, dir: Dir) -> &[ProtocolHeader] {
        &self.headers[dir.index()]
    }

    /// Bytes of a direction were missed: judge no refusal from here on (a header may have
    /// been among them).
    pub fn gap(&mut self) {
        self.gapped = true;
    }

    /// Whether the server refused the client's header (and so must have closed).
    pub fn refused(&self) -> bool {
        self.refusal.is_some()
    }

    /// A protocol header from `dir` at `offset`. A server header after the refusal is a
    /// violation; the server header that refuses the client's is tracked as usual.
    pub fn header(
        &mut self,
        dir: Dir,
        offset: u64,
        header: ProtocolHeader,
        out: &mut Vec<Violation>,
    ) -> Fate {
        if dir == Dir::S2C && self.after_refusal(offset, || header.describe(), out) {
            return Fate::Refused;
        }
        let d = dir.index();
        let k = self.count[d];
        self.count[d] = self.count[d].saturating_add(1);
        if self.headers[d].len() < MAX_HEADERS {
            self.headers[d].push(header);
        }
        if dir == Dir::S2C
            && !self.gapped
            && k < MAX_HEADERS
            && let Some(&asked) = self.headers[Dir::C2S.index()].get(k)
            && refuses(asked, header, k)
        {
            self.refusal = Some(Refusal {
                asked,
                answer: header,
                end: offset + crate::codec::sniff::HEADER_LEN as u64,
                reported: false,
            });
        }
        Fate::Track
    }

    /// A frame from `dir` at `offset` (`name` names it for the message, called only to report
    /// it: this runs on every frame).
    #[inline]
    pub fn frame(
        &mut self,
        dir: Dir,
        offset: u64,
        name: impl FnOnce() -> &'static str,
        out: &mut Vec<Violation>,
    ) -> Fate {
        if dir == Dir::S2C
            && self.refusal.is_some()
            && self.after_refusal(offset, || name().to_string(), out)
        {
            return Fate::Refused;
        }
        Fate::Track
    }

    /// Decoding of `dir` stopped at `offset`: a violation of the protocol, or a stream of one
    /// amqpeek does not decode (noted once bytes of it follow, by [`Negotiation::seen`]).
    pub fn undecodable(
        &mut self,
        dir: Dir,
        offset: u64,
        error: &DecodeError,
        out: &mut Vec<Violation>,
    ) {
        let d = dir.index();
        // The client's header of the exchange the server's stream is in, when amqpeek does not
        // decode it: the server's answer is not followed either (and not noted twice).
        let asked_undecoded = dir == Dir::S2C
            && self.count[d]
                .checked_sub(1)
                .and_then(|k| self.headers[Dir::C2S.index()].get(k))
                .is_some_and(|h| not_decoded(*h));
        let header = match error.kind {
            ErrorKind::NotDecoded(h) => Some(h),
            // A server's first bytes that are no header, answering a header amqpeek does not
            // decode: they may well be that protocol's (a 0-9 or 0-8 server answers with
            // frames, a TLS server with an alert).
            ErrorKind::BadProtocolHeader if asked_undecoded => Some(ProtocolHeader::NotAmqp),
            _ => None,
        };
        match header {
            // After a refusal, whatever the server sends is judged as such, decoded or not.
            Some(_) if dir == Dir::S2C && (self.refused() || asked_undecoded) => {}
            Some(header) => {
                self.undecoded[d].get_or_insert(Undecoded {
                    from: offset,
                    header,
                });
            }
            None => out.push(rules::CODEC_UNDECODABLE_STREAM.violation(
                dir,
                offset,
                format!("decoding stops: {error}"),
            )),
        }
    }

    /// `dir`'s stream has been seen up to `total` bytes: report the bytes that no header or
    /// frame accounts for (after a refusal, or of a protocol amqpeek does not decode).
    pub fn seen(&mut self, dir: Dir, total: u64, out: &mut Vec<Violation>) {
        let d = dir.index();
        if let Some(u) = self.undecoded[d]
            && total > u.from
        {
            self.undecoded[d] = None;
            out.push(rules::CODEC_NOT_DECODED.violation(
                dir,
                u.from,
                format!(
                    "what follows {} is not decoded nor judged ({} bytes so far)",
                    u.header.describe(),
                    total - u.from
                ),
            ));
        }
        if dir == Dir::S2C
            && let Some(r) = self.refusal
            && !r.reported
            && total > r.end
        {
            self.after_refusal(r.end, || format!("{} bytes", total - r.end), out);
        }
    }

    /// Report what the server sent at `offset` (named by `what`, called only to report it:
    /// this runs on every server frame) when it follows its refusal.
    fn after_refusal(
        &mut self,
        offset: u64,
        what: impl FnOnce() -> String,
        out: &mut Vec<Violation>,
    ) -> bool {
        let Some(r) = self.refusal.as_mut().filter(|r| offset >= r.end) else {
            return false;
        };
        r.reported = true;
        out.push(rules::HEADER_DATA_AFTER_REFUSAL.violation(
            Dir::S2C,
            offset,
            format!(
                "the server answered the client's {} with {} and then sent {} instead of \
                 closing the socket",
                r.asked.describe(),
                r.answer.describe(),
                what()
            ),
        ));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_of(out: &[Violation]) -> Vec<&str> {
        out.iter().map(|v| v.rule.id).collect()
    }

    #[test]
    fn a_server_that_answers_a_0_9_1_header_with_any_header_refuses_it() {
        assert!(refuses(ProtocolHeader::Amqp091, ProtocolHeader::Amqp091, 0));
        assert!(refuses(
            ProtocolHeader::Amqp10,
            ProtocolHeader::Amqp10Sasl,
            0
        ));
        assert!(!refuses(ProtocolHeader::Amqp10, ProtocolHeader::Amqp10, 0));
        assert!(!refuses(
            ProtocolHeader::Amqp10Tls,
            ProtocolHeader::NotAmqp,
            0
        ));
        assert!(refuses(ProtocolHeader::NotAmqp, ProtocolHeader::Amqp091, 0));
    }

    #[test]
    fn a_server_header_sent_first_is_no_answer() {
        let mut n = Negotiation::default();
        let mut out = Vec::new();
        n.header(Dir::S2C, 0, ProtocolHeader::Amqp10, &mut out);
        n.header(Dir::C2S, 0, ProtocolHeader::Amqp10Sasl, &mut out);
        assert_eq!(n.frame(Dir::S2C, 8, || "open", &mut out), Fate::Track);
        assert!(!n.refused() && out.is_empty(), "{out:?}");
    }

    #[test]
    fn everything_after_a_refusal_is_reported_once_per_item() {
        let mut n = Negotiation::default();
        let mut out = Vec::new();
        n.header(Dir::C2S, 0, ProtocolHeader::Amqp10, &mut out);
        n.header(Dir::S2C, 0, ProtocolHeader::Amqp10Sasl, &mut out);
        n.seen(Dir::S2C, 8, &mut out);
        assert!(n.refused() && out.is_empty(), "{out:?}");
        assert_eq!(
            n.header(Dir::S2C, 8, ProtocolHeader::Amqp10, &mut out),
            Fate::Refused
        );
        assert_eq!(n.frame(Dir::S2C, 16, || "open", &mut out), Fate::Refused);
        n.seen(Dir::S2C, 40, &mut out);
        assert_eq!(rules_of(&out), ["header.data-after-refusal"; 2]);
        assert_eq!(n.frame(Dir::C2S, 8, || "open", &mut out), Fate::Track);
    }

    #[test]
    fn undecoded_bytes_are_noted_once_and_only_when_there_are_some() {
        let mut n = Negotiation::default();
        let mut out = Vec::new();
        n.header(Dir::C2S, 0, ProtocolHeader::Amqp10Tls, &mut out);
        let e = DecodeError::new(0, ErrorKind::NotDecoded(ProtocolHeader::Amqp10Tls));
        n.undecodable(Dir::C2S, 8, &e, &mut out);
        n.seen(Dir::C2S, 8, &mut out);
        assert!(out.is_empty(), "{out:?}");
        n.seen(Dir::C2S, 100, &mut out);
        n.seen(Dir::C2S, 200, &mut out);
        assert_eq!(rules_of(&out), ["codec.not-decoded"]);
        // The server's frames answering a header that is not decoded are not judged (nor noted
        // again) either.
        let e = DecodeError::new(0, ErrorKind::BadProtocolHeader);
        n.header(Dir::S2C, 0, ProtocolHeader::NotAmqp, &mut out);
        n.undecodable(Dir::S2C, 8, &e, &mut out);
        n.seen(Dir::S2C, 300, &mut out);
        assert_eq!(rules_of(&out), ["codec.not-decoded"]);
        // Garbage where a header must be is still the client's violation.
        let mut n = Negotiation::default();
        n.header(Dir::C2S, 0, ProtocolHeader::NotAmqp, &mut out);
        n.undecodable(Dir::C2S, 8, &e, &mut out);
        assert_eq!(rules_of(&out)[1], "codec.undecodable-stream");
    }
}
