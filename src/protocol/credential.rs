//! Where to mask a unit of bytes that could not be decoded, whatever protocol framed it:
//! the dispatch over the registered protocols' own rules ([`crate::codec::credential`]).

use super::ProtocolId;
use crate::codec::ProtocolHeader;

/// Where the credential-free prefix of the unit `head` ends, when the unit (a frame that did
/// not decode, or the start of one that never completed) could carry a credential: the caller
/// masks everything from there. `None` when it cannot (a body frame, a heartbeat, an AMQP 1.0
/// performative that is no `$cbs` put-token).
///
/// `proto` is the framing the decoder was in (`None`: unknown, every registered protocol is
/// tried); `header` is the direction's last protocol header (between an `AMQP 3 1 0 0` header
/// and the next one every frame is a SASL frame, whatever its type byte says). The frame header is always kept, so that a capture replays
/// with the same framing (and verdict) as the live inspection: a unit that starts inside a
/// secret (after a SASL frame whose size was one short) shows at most those 8 bytes of it.
pub fn mask_from(
    head: &[u8],
    proto: Option<ProtocolHeader>,
    header: Option<ProtocolHeader>,
) -> Option<usize> {
    if head.is_empty() {
        return None;
    }
    match proto.and_then(ProtocolId::framed_after) {
        Some(p) => p.mask_from(head, header),
        None => ProtocolId::ALL
            .iter()
            .filter_map(|p| p.mask_from(head, header))
            .min(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_units_are_recognised_from_their_first_bytes() {
        // 0-9-1 start-ok (class 10, method 11): masked after the ids.
        let start_ok = [1, 0, 0, 0, 0, 0, 9, 0, 10, 0, 11, 0, 0];
        assert_eq!(
            mask_from(&start_ok, Some(ProtocolHeader::Amqp091), None),
            Some(11)
        );
        // basic.publish (60, 40) and a body frame are not.
        let publish = [1, 0, 1, 0, 0, 0, 9, 0, 60, 0, 40, 0, 0];
        assert_eq!(
            mask_from(&publish, Some(ProtocolHeader::Amqp091), None),
            None
        );
        assert_eq!(
            mask_from(
                &[3, 0, 1, 0, 0, 0, 1, b'x', 0xce],
                Some(ProtocolHeader::Amqp091),
                None
            ),
            None
        );
        // A method frame cut before its ids could be any.
        assert_eq!(
            mask_from(&[1, 0, 0, 0, 0], Some(ProtocolHeader::Amqp091), None),
            Some(5)
        );
        // AMQP 1.0: type 1, or a sasl-init descriptor in a type-0 frame.
        assert_eq!(
            mask_from(
                &[0, 0, 0, 20, 2, 1, 0, 0, 0, 0x53, 0x41],
                Some(ProtocolHeader::Amqp10),
                None
            ),
            Some(8)
        );
        assert_eq!(
            mask_from(
                &[0, 0, 0, 20, 2, 0, 0, 0, 0, 0x53, 0x41],
                Some(ProtocolHeader::Amqp10),
                None
            ),
            Some(8)
        );
        // An attach is not; anything in the SASL phase is, past its frame header.
        let attach = [0, 0, 0, 20, 2, 0, 0, 0, 0, 0x53, 0x12];
        assert_eq!(mask_from(&attach, Some(ProtocolHeader::Amqp10), None), None);
        assert_eq!(
            mask_from(
                &attach,
                Some(ProtocolHeader::Amqp10),
                Some(ProtocolHeader::Amqp10Sasl)
            ),
            Some(8)
        );
    }
}
