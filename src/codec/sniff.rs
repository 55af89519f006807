//! Protocol headers: the 8 bytes each peer sends first.
//!
//! AMQP 1.0 (`AMQP 0 1 0 0`), its TLS (`AMQP 2 1 0 0`) and SASL (`AMQP 3 1 0 0`) layers, AMQP
//! 0-9-1 (`AMQP 0 0 9 1`), 0-9 (`AMQP 1 1 0 9`), 0-8 (`AMQP 1 1 8 0` / `AMQP 1 1 9 1`), other
//! `AMQP` versions, the headers of the other registered protocols ([`NamedHeader`]), and
//! anything else as not AMQP.

use serde::Serialize;

/// Length of every AMQP protocol header.
pub const HEADER_LEN: usize = 8;

/// The header of a registered protocol other than the AMQP versions [`ProtocolHeader`] names:
/// `AMQP` and four id/version bytes, with the names it is reported by. The codec sniffs it as
/// [`ProtocolHeader::OtherAmqp`]; the protocol table names it (`ProtocolId::sniff_header`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct NamedHeader {
    /// The four bytes after `AMQP`.
    pub version: [u8; 4],
    /// Its JSONL `"proto"`.
    pub proto: &'static str,
    /// What it is called in text.
    pub title: &'static str,
}

/// A recognised (or unrecognised) protocol header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolHeader {
    /// `AMQP 0 1 0 0`: AMQP 1.0, plain.
    Amqp10,
    /// `AMQP 2 1 0 0`: AMQP 1.0 TLS upgrade; what follows is a TLS handshake.
    Amqp10Tls,
    /// `AMQP 3 1 0 0`: AMQP 1.0 SASL layer; SASL frames follow.
    Amqp10Sasl,
    /// `AMQP 0 0 9 1`: AMQP 0-9-1.
    Amqp091,
    /// `AMQP 1 1 0 9`: AMQP 0-9.
    Amqp09,
    /// `AMQP 1 1 8 0` (or the 0-8 variants Qpid used): AMQP 0-8.
    Amqp08,
    /// The header of another registered protocol.
    Named(NamedHeader),
    /// `AMQP` with some other id/version bytes.
    OtherAmqp([u8; 4]),
    /// A TLS ClientHello/record where a header was expected (TLS without AMQP's upgrade header).
    RawTls,
    /// Not an AMQP protocol header at all.
    NotAmqp,
}

impl ProtocolHeader {
    /// Classify the first 8 bytes of a stream. Returns `None` while fewer than 8 bytes are
    /// available and they still could be a header (a TLS record is recognised from 3 bytes).
    pub fn sniff(buf: &[u8]) -> Option<ProtocolHeader> {
        if buf.len() >= 3 && buf[0] == 0x16 && buf[1] == 0x03 && buf[2] <= 0x04 {
            return Some(ProtocolHeader::RawTls);
        }
        // The first byte or two of a TLS record: wait, so a record cut short is classified as
        // the whole one is.
        if buf.len() < 3 && buf.first() == Some(&0x16) && buf.get(1).is_none_or(|b| *b == 0x03) {
            return None;
        }
        let n = buf.len().min(4);
        if buf[..n] != b"AMQP"[..n] {
            return Some(ProtocolHeader::NotAmqp);
        }
        if buf.len() < HEADER_LEN {
            return None;
        }
        let v = [buf[4], buf[5], buf[6], buf[7]];
        Some(match v {
            [0, 1, 0, 0] => ProtocolHeader::Amqp10,
            [2, 1, 0, 0] => ProtocolHeader::Amqp10Tls,
            [3, 1, 0, 0] => ProtocolHeader::Amqp10Sasl,
            [0, 0, 9, 1] => ProtocolHeader::Amqp091,
            [1, 1, 0, 9] => ProtocolHeader::Amqp09,
            [1, 1, 8, 0] | [1, 1, 9, 1] => ProtocolHeader::Amqp08,
            other => ProtocolHeader::OtherAmqp(other),
        })
    }

    /// The 8 bytes of this header, where it has a canonical form.
    pub fn bytes(self) -> Option<[u8; HEADER_LEN]> {
        let v: [u8; 4] = match self {
            ProtocolHeader::Amqp10 => [0, 1, 0, 0],
            ProtocolHeader::Amqp10Tls => [2, 1, 0, 0],
            ProtocolHeader::Amqp10Sasl => [3, 1, 0, 0],
            ProtocolHeader::Amqp091 => [0, 0, 9, 1],
            ProtocolHeader::Amqp09 => [1, 1, 0, 9],
            ProtocolHeader::Amqp08 => [1, 1, 8, 0],
            ProtocolHeader::Named(n) => n.version,
            ProtocolHeader::OtherAmqp(v) => v,
            ProtocolHeader::RawTls | ProtocolHeader::NotAmqp => return None,
        };
        Some([b'A', b'M', b'Q', b'P', v[0], v[1], v[2], v[3]])
    }

    /// The protocol name used in JSONL `"proto"` and the trace.
    pub fn proto_name(self) -> &'static str {
        match self {
            ProtocolHeader::Amqp10 => "amqp-1.0",
            ProtocolHeader::Amqp10Tls => "amqp-tls",
            ProtocolHeader::Amqp10Sasl => "amqp-sasl",
            ProtocolHeader::Amqp091 => "amqp-0-9-1",
            ProtocolHeader::Amqp09 => "amqp-0-9",
            ProtocolHeader::Amqp08 => "amqp-0-8",
            ProtocolHeader::Named(n) => n.proto,
            ProtocolHeader::OtherAmqp(_) => "amqp-unknown",
            ProtocolHeader::RawTls => "tls",
            ProtocolHeader::NotAmqp => "unknown",
        }
    }

    /// A short human description, e.g. `AMQP 1.0 SASL (3 1 0 0)`.
    pub fn describe(self) -> String {
        match self {
            ProtocolHeader::Amqp10 => "AMQP 1.0 (0 1 0 0)".into(),
            ProtocolHeader::Amqp10Tls => "AMQP 1.0 TLS (2 1 0 0)".into(),
            ProtocolHeader::Amqp10Sasl => "AMQP 1.0 SASL (3 1 0 0)".into(),
            ProtocolHeader::Amqp091 => "AMQP 0-9-1 (0 0 9 1)".into(),
            ProtocolHeader::Amqp09 => "AMQP 0-9 (1 1 0 9)".into(),
            ProtocolHeader::Amqp08 => "AMQP 0-8 (1 1 8 0)".into(),
            ProtocolHeader::Named(n) => {
                let v = n.version;
                format!("{} ({} {} {} {})", n.title, v[0], v[1], v[2], v[3])
            }
            ProtocolHeader::OtherAmqp(v) => {
                format!(
                    "AMQP, unknown version ({} {} {} {})",
                    v[0], v[1], v[2], v[3]
                )
            }
            ProtocolHeader::RawTls => "TLS record (no AMQP header)".into(),
            ProtocolHeader::NotAmqp => "not AMQP".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_every_known_header() {
        let cases: &[(&[u8], ProtocolHeader)] = &[
            (b"AMQP\x00\x01\x00\x00", ProtocolHeader::Amqp10),
            (b"AMQP\x02\x01\x00\x00", ProtocolHeader::Amqp10Tls),
            (b"AMQP\x03\x01\x00\x00", ProtocolHeader::Amqp10Sasl),
            (b"AMQP\x00\x00\x09\x01", ProtocolHeader::Amqp091),
            (b"AMQP\x01\x01\x00\x09", ProtocolHeader::Amqp09),
            (b"AMQP\x01\x01\x08\x00", ProtocolHeader::Amqp08),
            (
                b"AMQP\x00\x01\x00\x01",
                ProtocolHeader::OtherAmqp([0, 1, 0, 1]),
            ),
            (b"GET / HTTP/1.1", ProtocolHeader::NotAmqp),
            (b"\x16\x03\x01\x02\x00", ProtocolHeader::RawTls),
        ];
        for (bytes, want) in cases {
            assert_eq!(ProtocolHeader::sniff(bytes), Some(*want), "{bytes:?}");
        }
    }

    #[test]
    fn waits_for_a_full_header_but_rejects_garbage_early() {
        assert_eq!(ProtocolHeader::sniff(b"AMQ"), None);
        assert_eq!(ProtocolHeader::sniff(b"AMQP\x00\x01"), None);
        assert_eq!(ProtocolHeader::sniff(b"X"), Some(ProtocolHeader::NotAmqp));
        // A TLS record's first bytes are not judged before the third.
        assert_eq!(ProtocolHeader::sniff(b"\x16"), None);
        assert_eq!(ProtocolHeader::sniff(b"\x16\x03"), None);
        assert_eq!(
            ProtocolHeader::sniff(b"\x16\x04"),
            Some(ProtocolHeader::NotAmqp)
        );
    }

    #[test]
    fn bytes_round_trip() {
        for h in [
            ProtocolHeader::Amqp10,
            ProtocolHeader::Amqp10Sasl,
            ProtocolHeader::Amqp091,
        ] {
            assert_eq!(ProtocolHeader::sniff(&h.bytes().unwrap()), Some(h));
        }
    }
}
