//! Whether bytes plausibly start a frame of one protocol, from its header's shape: what a search
//! for frame boundaries in the middle of a stream ([`crate::protocol::resync`]) asks of each
//! codec.
//!
//! Sans-IO and allocation free: it only looks at the bytes it is given. It never decodes a
//! frame's body, only checks header shapes, so it never panics on any input.

use crate::codec::amqp10::views::code;

/// Largest frame considered plausible while resynchronising (bigger sizes are noise).
pub const MAX_PLAUSIBLE_FRAME: usize = 16 * 1024 * 1024;

/// What the bytes at one position look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plausible {
    /// A frame of this many bytes (complete in the buffer).
    Frame(usize),
    /// Could be a frame, but the buffer ends before it can be checked.
    NeedMore,
    /// Not a frame boundary.
    No,
}

/// Check whether `buf` starts with a plausible AMQP 1.0 / SASL frame: size >= 8, doff >= 2,
/// type 0 (AMQP) or 1 (SASL), and a body that is empty (type 0 only) or starts with a
/// described performative (`0x00 0x53 0x10..=0x18`) or SASL frame (`0x00 0x53 0x40..=0x44`).
pub fn plausible_amqp10(buf: &[u8]) -> Plausible {
    if buf.len() < 8 {
        return Plausible::NeedMore;
    }
    let size = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    let doff = buf[4] as usize * 4;
    let ftype = buf[5];
    if !(8..=MAX_PLAUSIBLE_FRAME).contains(&size) || doff < 8 || doff > size || ftype > 1 {
        return Plausible::No;
    }
    if ftype == 1 && (buf[6] != 0 || buf[7] != 0) {
        return Plausible::No;
    }
    if size == doff {
        return if ftype == 0 {
            Plausible::Frame(size)
        } else {
            Plausible::No
        };
    }
    let Some(body) = buf.get(doff..) else {
        return Plausible::NeedMore;
    };
    if body.len() < 3 {
        return if body.len() < size - doff {
            Plausible::NeedMore
        } else {
            Plausible::No
        };
    }
    let ok = body[0] == 0x00
        && body[1] == 0x53
        && match ftype {
            0 => (code::OPEN..=code::CLOSE).contains(&u64::from(body[2])),
            _ => (code::SASL_MECHANISMS..=code::SASL_OUTCOME).contains(&u64::from(body[2])),
        };
    match (ok, buf.len() >= size) {
        (false, _) => Plausible::No,
        (true, true) => Plausible::Frame(size),
        (true, false) => Plausible::NeedMore,
    }
}

/// Check whether `buf` starts with a plausible AMQP 0-9-1 frame: type 1 (method), 2 (content
/// header), 3 (body) or 8 (heartbeat, channel 0, empty), and the frame-end octet `0xCE` at
/// `size + 7`.
pub fn plausible_amqp091(buf: &[u8]) -> Plausible {
    if buf.len() < 7 {
        return Plausible::NeedMore;
    }
    let ftype = buf[0];
    let channel = u16::from_be_bytes([buf[1], buf[2]]);
    let size = u32::from_be_bytes([buf[3], buf[4], buf[5], buf[6]]) as usize;
    let shape_ok = match ftype {
        1 => size >= 4,
        2 => size >= 14 && channel != 0,
        3 => channel != 0,
        8 => size == 0 && channel == 0,
        _ => false,
    };
    if !shape_ok || size > MAX_PLAUSIBLE_FRAME {
        return Plausible::No;
    }
    let total = size + 8;
    match buf.get(total - 1) {
        None => Plausible::NeedMore,
        Some(0xCE) => Plausible::Frame(total),
        Some(_) => Plausible::No,
    }
}
