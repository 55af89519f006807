//! Lower-case hex straight into a byte buffer, in a branch-free loop (`hex::encode_to_slice`
//! is several times slower; AMQP 1.0 message bodies are hexed for every JSONL line).

/// The hex digit of a nibble (`n < 16`).
#[inline(always)]
fn digit(n: u8) -> u8 {
    // '0'..'9' for 0..9, 'a'..'f' for 10..15 ('a' - 10 - '0' = 39).
    n + b'0' + (u8::from(n > 9) * 39)
}

/// Append the lower-case hex of `bytes` to `out`.
pub(super) fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    let at = out.len();
    out.resize(at + bytes.len().saturating_mul(2), 0);
    let Some(dst) = out.get_mut(at..) else {
        return;
    };
    for (pair, &b) in dst.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&[digit(b >> 4), digit(b & 0xf)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_hex_encode() {
        let all: Vec<u8> = (0..=255u8).rev().collect();
        for n in [0, 1, 7, 256] {
            let mut out = b"x".to_vec();
            push_hex(&mut out, &all[..n]);
            assert_eq!(out[1..], *hex::encode(&all[..n]).as_bytes());
        }
    }
}
