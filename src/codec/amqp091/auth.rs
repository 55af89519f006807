//! SASL responses carried by connection.start-ok: PLAIN (`authzid\0user\0pass`) and
//! AMQPLAIN (field-table entries LOGIN and PASSWORD without the table's length prefix), decoded
//! for display, and the byte ranges of the secret within them.
//!
//! Never panics; a response that does not parse as its mechanism is treated as opaque (all of
//! it secret).

use std::ops::Range;

use bytes::Bytes;

use super::field_table::{FieldTable, FieldValue};
use crate::codec::Reader;

/// A decoded SASL response.
#[derive(Clone, Debug, PartialEq)]
pub enum AuthResponse {
    /// PLAIN: `authzid NUL username NUL password`.
    Plain {
        /// Authorisation identity (usually empty).
        authzid: Bytes,
        /// Authentication identity.
        username: Bytes,
        /// The password.
        password: Bytes,
    },
    /// AMQPLAIN: a field table (normally LOGIN and PASSWORD).
    AmqPlain(FieldTable),
    /// Anything else (EXTERNAL, unparseable responses): the raw bytes.
    Opaque(Bytes),
}

impl AuthResponse {
    /// The user name, when the mechanism carries one.
    pub fn username(&self) -> Option<&Bytes> {
        match self {
            AuthResponse::Plain { username, .. } => Some(username),
            AuthResponse::AmqPlain(t) => match t.get("LOGIN") {
                Some(FieldValue::LongStr(b)) => Some(b),
                _ => None,
            },
            AuthResponse::Opaque(_) => None,
        }
    }
}

/// Decode `response` as `mechanism` describes it. Also returns the secret bytes' range
/// relative to the start of `response`.
pub fn decode_response(mechanism: &[u8], response: &Bytes) -> (AuthResponse, Range<usize>) {
    let all = 0..response.len();
    match mechanism {
        b"PLAIN" => {
            let mut nuls = response
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == 0)
                .map(|(i, _)| i);
            match (nuls.next(), nuls.next()) {
                (Some(a), Some(b)) => (
                    AuthResponse::Plain {
                        authzid: response.slice(..a),
                        username: response.slice(a + 1..b),
                        password: response.slice(b + 1..),
                    },
                    b + 1..response.len(),
                ),
                _ => (AuthResponse::Opaque(response.clone()), all),
            }
        }
        b"AMQPLAIN" => match amqplain(response) {
            Some((table, secret)) => (AuthResponse::AmqPlain(table), secret),
            None => (AuthResponse::Opaque(response.clone()), all),
        },
        _ => (AuthResponse::Opaque(response.clone()), all),
    }
}

/// AMQPLAIN: table entries with no length prefix (RabbitMQ's and most clients' form); also
/// accepts a prefixed table, which some clients send. Returns the PASSWORD value's range.
fn amqplain(response: &Bytes) -> Option<(FieldTable, Range<usize>)> {
    let bare = FieldTable::decode_entries(&mut Reader::new(response.clone(), 0)).ok();
    let table = match bare {
        Some(t) => t,
        None => {
            let mut r = Reader::new(response.clone(), 0);
            let t = FieldTable::decode(&mut r).ok()?;
            if !r.is_empty() {
                return None;
            }
            t
        }
    };
    let secret = match table.get("PASSWORD") {
        Some(FieldValue::LongStr(p)) | Some(FieldValue::Bytes(p)) => {
            // The value is a slice of `response`: find it by pointer.
            let start = (p.as_ptr() as usize).checked_sub(response.as_ptr() as usize)?;
            start..start.checked_add(p.len())?
        }
        _ => 0..response.len(),
    };
    if secret.end > response.len() {
        return None;
    }
    Some((table, secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_splits_at_the_two_nuls_and_the_secret_is_the_password() {
        let resp = Bytes::from_static(b"\0guest\0s3cret");
        let (a, r) = decode_response(b"PLAIN", &resp);
        assert_eq!(&resp[r], b"s3cret");
        assert_eq!(a.username().unwrap(), &b"guest"[..]);
        match a {
            AuthResponse::Plain { password, .. } => assert_eq!(&password[..], b"s3cret"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn amqplain_without_prefix_yields_the_password_value_range() {
        let mut resp = Vec::new();
        FieldTable::new()
            .with("LOGIN", FieldValue::LongStr(Bytes::from_static(b"bob")))
            .with(
                "PASSWORD",
                FieldValue::LongStr(Bytes::from_static(b"hunter2")),
            )
            .encode_entries(&mut resp);
        let resp = Bytes::from(resp);
        let (a, r) = decode_response(b"AMQPLAIN", &resp);
        assert_eq!(&resp[r], b"hunter2");
        assert_eq!(a.username().unwrap(), &b"bob"[..]);
    }

    #[test]
    fn unknown_mechanisms_and_broken_plain_are_wholly_secret() {
        let resp = Bytes::from_static(b"no-nuls-here");
        assert_eq!(decode_response(b"PLAIN", &resp).1, 0..12);
        assert_eq!(decode_response(b"X-TOKEN", &resp).1, 0..12);
        assert_eq!(decode_response(b"AMQPLAIN", &resp).1, 0..12);
    }
}
