//! Decoding a frame from its head: a frame larger than the inspection budget is decoded from
//! its first bytes (the frame header and the performative, method or content header, plus the
//! start of the payload), and the rest of it is streamed past without being held.
//!
//! The head is decoded as the whole frame would be if it ended where the head ends: AMQP 1.0's
//! in place (the frame's size field is checked against the frame's size, not the head's), 0-9-1's
//! from a copy whose size field says the head's length, with a frame-end octet after it. The
//! decoded 1.0 frame keeps the exact head bytes as relayed; either records how many bytes of it
//! were streamed. A head that does not decode (fields cut by its end, or anything else: its
//! masked copy in a capture would not decode either) is not judged: the frame is
//! [`ErrorKind::NotInspected`].

use bytes::{BufMut, Bytes, BytesMut};

use super::{DecodeError, ErrorKind, amqp10, amqp091};

/// What a head that does not decode is: not inspected, whatever the failure (not only fields
/// cut by the head's end: a head that may hold a credential is captured masked from its
/// performative on, and what `check` of that capture finds must be what was found live).
fn not_inspected(
    head: &Bytes,
    size: u64,
    offset: u64,
) -> impl Fn(DecodeError) -> DecodeError + use<> {
    let head = head.len() as u64;
    move |_| DecodeError::new(offset, ErrorKind::NotInspected { size, head })
}

/// Decode `head`, the first bytes of an AMQP 1.0 frame of `size` bytes found at absolute
/// `offset`.
///
/// The head is read in place (a head can be as large as the inspection budget's frame share:
/// copying it would cost a copy of every large frame).
pub fn amqp10(head: Bytes, size: u64, offset: u64) -> Result<amqp10::Frame, DecodeError> {
    let streamed = size.saturating_sub(head.len() as u64);
    let fail = not_inspected(&head, size, offset);
    let mut f = amqp10::decode_frame_of(head, offset, size).map_err(fail)?;
    f.streamed = streamed;
    Ok(f)
}

/// Decode `head`, the first bytes of an AMQP 0-9-1 frame of `size` bytes found at absolute
/// `offset`.
pub fn amqp091(head: Bytes, size: u64, offset: u64) -> Result<amqp091::Frame, DecodeError> {
    const HEADER: usize = 7;
    let streamed = size.saturating_sub(head.len() as u64);
    let mut copy = BytesMut::with_capacity(head.len() + 1);
    copy.extend_from_slice(&head);
    let len = u32::try_from(head.len().saturating_sub(HEADER)).unwrap_or(u32::MAX);
    if let Some(field) = copy.get_mut(3..HEADER) {
        field.copy_from_slice(&len.to_be_bytes());
    }
    copy.put_u8(0xce);
    let mut f =
        amqp091::decode_frame(copy.freeze(), offset).map_err(not_inspected(&head, size, offset))?;
    f.streamed = streamed;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_head_keeps_its_performative_and_the_payload_start() {
        let transfer =
            amqp10::described_list(amqp10::views::code::TRANSFER, vec![amqp10::Value::Uint(7)]);
        let frame = amqp10::encode_frame(0, 3, Some(&transfer), &[b'x'; 5000]).unwrap();
        let head = Bytes::copy_from_slice(&frame[..1000]);
        let f = self::amqp10(head.clone(), frame.len() as u64, 40).unwrap();
        assert_eq!(f.transfer().map(|t| t.handle), Some(7));
        assert_eq!(f.raw, head, "the exact bytes relayed, size field included");
        assert_eq!(f.size(), frame.len() as u64);
        assert_eq!(f.payload_len(), 5000);
        assert!(
            f.summary().ends_with("(payload 5000 bytes)"),
            "{}",
            f.summary()
        );
    }

    #[test]
    fn a_transfer_head_is_read_in_place_not_from_a_copy() {
        let transfer = amqp10::described_list(
            amqp10::views::code::TRANSFER,
            vec![
                amqp10::Value::Uint(7),
                amqp10::Value::Uint(1),
                amqp10::Value::Binary(Bytes::from_static(b"tag-1")),
            ],
        );
        let frame = amqp10::encode_frame(0, 3, Some(&transfer), &[b'x'; 5000]).unwrap();
        let head = Bytes::copy_from_slice(&frame[..1000]);
        let f = self::amqp10(head.clone(), frame.len() as u64, 0).unwrap();
        let tag = f.transfer().and_then(|t| t.delivery_tag.clone()).unwrap();
        assert_eq!(&tag[..], b"tag-1");
        assert!(
            head.as_ptr_range().contains(&tag.as_ptr()),
            "the delivery tag is a slice of the relayed head, not of a copy of it"
        );
        // The size field is checked against the frame's size, as for a whole frame.
        let e = self::amqp10(head, frame.len() as u64 + 1, 0).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::NotInspected { .. }), "{e}");
    }

    #[test]
    fn a_091_body_head_counts_the_whole_body_and_a_cut_method_is_not_inspected() {
        let mut frame = Vec::new();
        let body = amqp091::FrameKind::Body(Bytes::from(vec![b'y'; 3000]));
        amqp091::encode_frame(1, &body, &mut frame);
        let head = Bytes::copy_from_slice(&frame[..7]);
        let f = self::amqp091(head, frame.len() as u64, 0).unwrap();
        assert_eq!(f.fields_json()["size"], 3000, "{f:?}");
        // A method frame cut inside its arguments: not inspected, not malformed.
        let head = Bytes::from_static(&[1, 0, 1, 0, 1, 0, 0, 0, 60, 0, 40, 0]);
        let e = self::amqp091(head, 70_000, 9).unwrap_err();
        assert!(
            matches!(
                e.kind,
                ErrorKind::NotInspected {
                    size: 70_000,
                    head: 12
                }
            ),
            "{e}"
        );
        assert_eq!(e.offset, 9);
    }
}
