//! The violation catalog: every rule amqpeek can report, with a stable id, a severity (`error`
//! for MUST / MUST NOT, `warning` for SHOULD / SHOULD NOT), the spec section, and one line of
//! explanation. Each rule's doc comment quotes the spec sentence it enforces.
//!
//! Ids are a public interface (CI configurations filter on them): never rename one.

pub use crate::base::Rule;
use crate::base::Severity;

/// Frame bytes that cannot be decoded.
///
/// AMQP 1.0 §2.3.1: "The frame is malformed if the size is less than the size of the frame
/// header (8 bytes)." AMQP 0-9-1 §4.2.3: "If the frame-end octet is not correct, the peer MUST
/// treat this as a fatal error." Every type and composite must follow its encoding (AMQP 1.0
/// §1, AMQP 0-9-1 §4.2).
pub static CODEC_MALFORMED_FRAME: Rule = Rule {
    id: "codec.malformed-frame",
    severity: Severity::Error,
    spec: "AMQP 1.0 §1, §2.3 / AMQP 0-9-1 §4.2",
    text: "a frame's bytes do not decode as the protocol defines them",
};

/// The stream cannot be followed any further (framing lost, TLS, not AMQP).
///
/// AMQP 1.0 §2.2: "Any data appearing beyond the protocol header MUST match the version
/// indicated by the protocol header."
pub static CODEC_UNDECODABLE_STREAM: Rule = Rule {
    id: "codec.undecodable-stream",
    severity: Severity::Error,
    spec: "AMQP 1.0 §2.2 / AMQP 0-9-1 §4.2.2",
    text: "decoding stops: the bytes no longer follow the protocol (still relayed unchanged)",
};

/// A stream of a protocol amqpeek does not decode, once bytes of it were left undecoded.
///
/// AMQP 1.0 §2.2: "When the client opens a new socket connection to a server, it MUST send a
/// protocol header with the client's preferred protocol version." "Any data appearing beyond
/// the protocol header MUST match the version indicated by the protocol header." A client may
/// ask for any protocol: what follows a header of one amqpeek does not decode (the TLS upgrade
/// `AMQP 2 1 0 0` without `--cert`, 0-9, 0-8, other versions) or a TLS record (AMQPS) is in
/// that protocol, relayed and captured but not judged. §2.8.19 (AMQPS port 5671):
/// "Implementations listening on this port SHOULD NOT expect a protocol handshake before TLS is
/// negotiated." Not a violation: a note of what was not checked.
pub static CODEC_NOT_DECODED: Rule = Rule {
    id: "codec.not-decoded",
    severity: Severity::Info,
    spec: "AMQP 1.0 §2.2, §2.8.19",
    text: "a stream in a protocol amqpeek does not decode (TLS, AMQP other than 1.0 and 0-9-1): relayed and captured, not judged",
};

/// The server refused the client's protocol header and did not close the socket.
///
/// AMQP 1.0 §2.2: "If the requested protocol version is not supported, the server MUST send a
/// protocol header with a supported protocol version and then close the socket." "If the
/// server cannot parse the protocol header, the server MUST send a valid protocol header with
/// a supported protocol version and then close the socket." AMQP 0-9-1 §4.2.2: "If the server
/// does not recognise the first 5 octets of data on the socket, or does not support the
/// specific protocol version that the client requests, it MUST write a valid protocol header
/// to the socket, then flush the socket (to ensure the client application will receive the
/// data) and then close the socket connection." A 0-9-1 server accepts with connection.start,
/// so any header it answers with refuses; an AMQP 1.0 server refuses with a header other than
/// the client's. Only a header sent after the client's is an answer to it.
pub static HEADER_DATA_AFTER_REFUSAL: Rule = Rule {
    id: "header.data-after-refusal",
    severity: Severity::Error,
    spec: "AMQP 1.0 §2.2 / AMQP 0-9-1 §4.2.2",
    text: "the server answered the client's protocol header with another (refusing it), then sent more instead of closing the socket",
};

/// The connection ended part-way through a frame.
///
/// AMQP 1.0 §2.3.1: the frame size "MUST contain the total frame size of the frame header,
/// extended header, and frame body."
pub static CODEC_TRUNCATED_FRAME: Rule = Rule {
    id: "codec.truncated-frame",
    severity: Severity::Warning,
    spec: "AMQP 1.0 §2.3.1 / AMQP 0-9-1 §4.2.3",
    text: "the stream ended inside a frame",
};

/// The proxy relayed a connection whose upstream certificate it did not verify.
///
/// RFC 8446 §4.4.2.4: "the client MUST ... verify the server's certificate" — skipped on the
/// user's request with `--insecure`; every such connection says so.
pub static PROXY_TLS_INSECURE: Rule = Rule {
    id: "proxy.tls.insecure",
    severity: Severity::Warning,
    spec: "RFC 8446 §4.4.2.4 (--insecure)",
    text: "the broker's TLS certificate was not verified (--insecure)",
};

/// The rules of no one protocol: the codec's (malformed bytes), the header negotiation's and
/// the proxy's.
pub const CODEC_RULES: &[&Rule] = &[
    &CODEC_MALFORMED_FRAME,
    &CODEC_UNDECODABLE_STREAM,
    &CODEC_NOT_DECODED,
    &CODEC_TRUNCATED_FRAME,
    &HEADER_DATA_AFTER_REFUSAL,
    &PROXY_TLS_INSECURE,
];

/// Every rule, in the order docs/rules.md lists them: codec, then each registered protocol's.
pub fn catalog() -> impl Iterator<Item = &'static Rule> {
    CODEC_RULES
        .iter()
        .copied()
        .chain(super::register::protocol_rules())
}

/// Look a rule up by id.
pub fn by_id(id: &str) -> Option<&'static Rule> {
    catalog().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for r in catalog() {
            assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
            assert!(
                r.id.split('.').count() >= 2
                    && r.id.chars().all(|c| c.is_ascii_lowercase()
                        || c.is_ascii_digit()
                        || c == '.'
                        || c == '-'),
                "badly formed id {}",
                r.id
            );
            assert!(
                !r.spec.is_empty() && !r.text.is_empty(),
                "{} lacks spec/text",
                r.id
            );
        }
    }

    #[test]
    fn docs_list_every_rule() {
        let table = include_str!("../../docs/rules.md");
        for r in CODEC_RULES
            .iter()
            .copied()
            .chain(super::super::register::documented_rules())
        {
            let row = format!("| `{}` | {} |", r.id, r.severity.as_str());
            assert!(
                table.contains(&row),
                "docs/rules.md lacks a row starting {row:?}"
            );
        }
    }
}
