//! Credential-masking checks shared by the end-to-end tests: every way a SASL PLAIN response
//! (`\0user\0password`) can show in a capture or trace — raw, JSON- and Rust-escaped, hex, base64
//! at each of the three byte alignments, and the 0-9-1 decoded `password` field — and the check
//! that a masked byte stream differs from the relayed one in exactly the password's bytes.
#![allow(dead_code)]

use base64::Engine;

/// The mask byte the pipeline writes over secrets.
pub const MASK: u8 = amqpeek::pipeline::MASK_BYTE;

/// The PLAIN response `\0user\0password`.
pub fn plain(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}

/// The characters of the base64 encoding of `secret` placed after `lead` other bytes (0, 1 or
/// 2) that depend on `secret` alone: a leak of `secret` anywhere in a base64 text contains one
/// of the three.
pub fn base64_at(secret: &[u8], lead: usize) -> String {
    let mut padded = vec![0u8; lead];
    padded.extend_from_slice(secret);
    let enc = base64::engine::general_purpose::STANDARD.encode(&padded);
    let (start_bit, end_bit) = (8 * lead, 8 * padded.len());
    enc.char_indices()
        .filter(|&(i, _)| 6 * i >= start_bit && 6 * i + 6 <= end_bit)
        .map(|(_, c)| c)
        .collect()
}

/// Every rendering of `secret` a capture, a summary or a trace could carry.
pub fn leak_forms(secret: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(secret);
    let mut forms = vec![
        text.to_string(),
        text.replace('\0', "\\u0000"),
        text.replace('\0', "\\x00"),
        text.replace('\0', "\\0"),
        hex::encode(secret),
        hex::encode_upper(secret),
    ];
    forms.extend((0..3).map(|lead| base64_at(secret, lead)));
    forms
}

/// Panics when `text` carries the PLAIN response of `user`/`password` in any form, or the
/// password as a decoded 0-9-1 `password` field (JSON or summary).
pub fn assert_no_password(text: &str, user: &str, password: &str, what: &str) {
    let mut forms = leak_forms(&plain(user, password));
    forms.push(format!("\"password\":\"{password}\""));
    forms.push(format!("password=\"{password}\""));
    for f in forms {
        assert!(!text.contains(&f), "{what} leaks the password as {f:?}");
    }
}

/// Panics unless `text` carries the PLAIN response in some form (the `--show-secrets` case).
pub fn assert_has_password(text: &str, user: &str, password: &str, what: &str) {
    let mut forms = leak_forms(&plain(user, password));
    forms.push(format!("\"password\":\"{password}\""));
    assert!(
        forms.iter().any(|f| text.contains(f)),
        "{what} does not show the password"
    );
}

/// Panics unless `captured` equals `real` but for one run of [`MASK`] bytes standing exactly
/// where `real` has the `password` of a PLAIN response (right after `\0user\0`).
pub fn assert_exactly_password_masked(
    captured: &[u8],
    real: &[u8],
    user: &str,
    password: &str,
    what: &str,
) {
    assert_eq!(captured.len(), real.len(), "{what}: length");
    let differing: Vec<usize> = (0..real.len())
        .filter(|&i| captured[i] != real[i])
        .collect();
    let (Some(&first), Some(&last)) = (differing.first(), differing.last()) else {
        panic!("{what}: nothing masked");
    };
    assert!(
        captured[first..=last].iter().all(|&b| b == MASK),
        "{what}: the masked run is all mask bytes"
    );
    assert_eq!(
        &real[first..=last],
        password.as_bytes(),
        "{what}: exactly the password's bytes are masked"
    );
    let prefix = format!("\0{user}\0");
    assert!(
        real[..first].ends_with(prefix.as_bytes()),
        "{what}: the masked run follows the user name"
    );
}

#[test]
fn base64_forms_find_the_secret_at_every_alignment() {
    let secret = plain("guest", "guest");
    for lead in 0..3 {
        for tail in 0..3 {
            let mut bytes = vec![7u8; lead];
            bytes.extend_from_slice(&secret);
            bytes.extend(std::iter::repeat_n(9u8, tail));
            let enc = base64::engine::general_purpose::STANDARD.encode(&bytes);
            assert!(
                (0..3).any(|l| enc.contains(&base64_at(&secret, l))),
                "lead {lead} tail {tail}: {enc}"
            );
        }
    }
    let mut masked = plain("guest", "*****");
    masked.insert(0, 1);
    let enc = base64::engine::general_purpose::STANDARD.encode(&masked);
    assert!((0..3).all(|l| !enc.contains(&base64_at(&secret, l))));
}
