//! The bytes `amqpeek decode` decodes: hex from its arguments, or stdin (`-`) taken as hex
//! when it is all hex text, else as raw bytes.

use std::io::{self, Read};

/// Hex digits from every argument, concatenated; whitespace and `:` separate tokens and are
/// ignored, and a token may start with `0x` / `0X`. An error names the bad character's
/// position in its argument.
pub fn parse_hex(args: &[String]) -> Result<Vec<u8>, String> {
    parse_hex_from(args, |i| format!("argument {}", i + 1))
}

/// [`parse_hex`], naming where the `i`th text came from with `source(i)`.
fn parse_hex_from(args: &[String], source: impl Fn(usize) -> String) -> Result<Vec<u8>, String> {
    let mut digits = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let mut token_start = true;
        let mut chars = arg.char_indices().peekable();
        while let Some((pos, c)) = chars.next() {
            if c.is_whitespace() || c == ':' {
                token_start = true;
                continue;
            }
            let prefix =
                token_start && c == '0' && chars.peek().is_some_and(|&(_, n)| n == 'x' || n == 'X');
            token_start = false;
            if prefix {
                chars.next();
                continue;
            }
            match c.to_digit(16) {
                Some(d) => digits.push(d as u8),
                None => {
                    return Err(format!(
                        "invalid hex digit {c:?} at character {pos} of {}",
                        source(i)
                    ));
                }
            }
        }
    }
    if digits.len() % 2 != 0 {
        return Err(format!(
            "odd number of hex digits ({}): the last byte is incomplete",
            digits.len()
        ));
    }
    Ok(digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect())
}

/// Stdin's bytes: decoded from hex when they are text (see `is_hex_text`), else taken as they
/// are. `Err` is a message: a read failure, or hex text that does not parse (a character that
/// is not a hex digit, named with its position, or an odd number of digits).
pub fn read_stdin() -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    io::stdin()
        .read_to_end(&mut buf)
        .map_err(|e| format!("reading stdin: {e}"))?;
    if is_hex_text(&buf) {
        parse_hex_from(&[String::from_utf8_lossy(&buf).into_owned()], |_| {
            "stdin".into()
        })
    } else {
        Ok(buf)
    }
}

/// Whether `buf` is hex text rather than raw bytes: text (printable ASCII and whitespace
/// only) holding a hex digit. AMQP bytes are never all text (a protocol header holds a zero
/// octet, a frame header its small type and size octets), so text that is not all hex digits
/// is hex with a typo, and parsing it names the bad character.
fn is_hex_text(buf: &[u8]) -> bool {
    buf.iter().any(u8::is_ascii_hexdigit)
        && buf
            .iter()
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::parse_hex;

    #[test]
    fn hex_tolerates_whitespace_and_colons_across_arguments() {
        let args = vec!["41:4d 51".to_string(), "50".to_string()];
        assert_eq!(parse_hex(&args).unwrap(), b"AMQP");
        assert!(parse_hex(&["4g".to_string()]).unwrap_err().contains("'g'"));
        assert!(parse_hex(&["414".to_string()]).unwrap_err().contains("odd"));
    }

    #[test]
    fn text_on_stdin_is_hex_and_a_typo_is_named() {
        assert!(super::is_hex_text(b"414d5150000009zz\n"));
        assert!(!super::is_hex_text(b"AMQP\x00\x00\x09\x01"));
        assert!(!super::is_hex_text(b"\x01\x00\x00\x00\x00\x00\x04"));
    }

    #[test]
    fn hex_tokens_may_start_with_0x() {
        let args = vec!["0x41 0X4d:0x51".to_string(), "0x50".to_string()];
        assert_eq!(parse_hex(&args).unwrap(), b"AMQP");
        assert!(parse_hex(&["4x1".to_string()]).unwrap_err().contains("'x'"));
    }
}
