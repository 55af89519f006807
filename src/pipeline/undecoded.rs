//! Relayed bytes that are not a decoded frame, emitted all the same: every relayed byte reaches
//! the sinks exactly once, decoded (a `Header` or `Frame` event) or not (an `Undecoded` event:
//! a malformed frame, the stream after decoding stopped, an incomplete frame at a gap or at
//! the close), and once as `Data` for the sinks that want the bytes themselves.
//!
//! Bytes that could not be decoded cannot be masked field by field, so masking fails closed:
//! a frame that could carry a credential (AMQP 1.0 SASL frames, a CBS put-token transfer,
//! 0-9-1 `start-ok`, `secure-ok`, `update-secret`, or a frame too short or too odd to tell)
//! is masked from the end of its frame header on.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::{MASK_BYTE, Side};
use crate::codec::ProtocolHeader;
use crate::event::{ConnId, Dir, Event, EventKind, Timestamp};
use crate::protocol::{Item, ProtocolId, UndecodedStream};

/// What the inspector knows of a direction's stream, to judge undecoded bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct StreamKind {
    /// The protocol whose rules judge its undecoded bytes.
    pub proto: ProtocolId,
    /// What that protocol is told of the stream.
    pub stream: UndecodedStream,
}

impl StreamKind {
    /// What `side` speaks, on a connection whose client sent `client_header` and attached a
    /// `$cbs` link (`cbs`): the protocol of its own last header, unless the client's is of a
    /// protocol whose server never answers with a header (any header it sends is a refusal,
    /// AMQP 0-9-1 §4.2.2: its bytes are judged as the client's protocol); the first
    /// registered one when neither tells.
    pub(super) fn of(
        side: &Side,
        dir: Dir,
        client_header: Option<ProtocolHeader>,
        cbs: bool,
    ) -> Self {
        let client_framing = client_header.and_then(ProtocolId::framed_after);
        let proto = match client_framing {
            Some(p) if !p.answers_with_header() => p,
            _ => side
                .header
                .and_then(ProtocolId::framed_after)
                .or(client_framing)
                .unwrap_or(ProtocolId::ALL[0]),
        };
        StreamKind {
            proto,
            stream: UndecodedStream {
                header: side.header,
                client: dir == Dir::C2S,
                cbs,
            },
        }
    }
}

/// The part of `frame` (bytes from a frame's first byte: a malformed frame, or the start of an
/// incomplete one) to mask because it may hold a credential; `None` when it cannot. `complete`:
/// `frame` is the whole frame (see [`crate::protocol::Protocol::undecoded_secret`]).
pub(super) fn credential_span(
    frame: &[u8],
    kind: StreamKind,
    complete: bool,
) -> Option<Range<usize>> {
    kind.proto
        .undecoded_secret(frame, &kind.stream, complete)
        .filter(|r| r.start < r.end)
}

/// The offsets a decoded item spans, for a header or frame (the bytes its event carries).
pub(super) fn decoded_span(item: &Item) -> Option<(u64, u64)> {
    match item {
        Item::Header { offset, raw, .. } => Some((*offset, *offset + raw.len() as u64)),
        Item::Frame(fe) => Some((fe.offset, fe.offset + fe.raw.len() as u64)),
        Item::Malformed { .. } | Item::Undecodable { .. } => None,
    }
}

/// For an item that starts a frame decoded from its head (a frame larger than the inspection
/// holds): the offsets from the end of its head (from its start, for one not inspected, whose
/// head is not a frame event) to the end of the frame.
pub(super) fn streamed_span(item: &Item) -> Option<(u64, u64)> {
    match item {
        Item::Frame(fe) if fe.frame.streamed() > 0 => {
            let head_end = fe.offset + fe.raw.len() as u64;
            Some((head_end, head_end + fe.frame.streamed()))
        }
        Item::Malformed { offset, error, .. } => match error.kind {
            // Masked from its start: the head goes out undecoded too.
            crate::codec::ErrorKind::NotInspected { size, .. } => Some((*offset, offset + size)),
            _ => None,
        },
        _ => None,
    }
}

/// Where a frame decoded from its head starts to be masked (absolute), when it may hold a
/// credential: judged from its head as an incomplete frame is.
pub(super) fn streamed_mask(item: &Item, kind: StreamKind) -> Option<u64> {
    let (offset, raw) = match item {
        Item::Frame(fe) => (&fe.offset, &fe.raw),
        Item::Malformed { offset, raw, .. } => (offset, raw),
        _ => return None,
    };
    credential_span(raw, kind, false).map(|r| offset + r.start as u64)
}

/// `bytes` (starting at absolute `start`) with every `secrets` range `(from, to)` that overlaps
/// them masked.
pub(super) fn masked(bytes: Bytes, start: u64, secrets: &[(u64, u64)]) -> Bytes {
    let end = start + bytes.len() as u64;
    if !secrets.iter().any(|&(s, e)| s < end && e > start) {
        return bytes;
    }
    let mut out = BytesMut::from(&bytes[..]);
    for &(s, e) in secrets {
        let s = s.saturating_sub(start) as usize;
        let e = (e.saturating_sub(start) as usize).min(out.len());
        if s < e {
            out[s..e].fill(MASK_BYTE);
        }
    }
    out.freeze()
}

/// Where events of one direction go.
#[derive(Clone, Copy, Debug)]
pub(super) struct To {
    pub conn: ConnId,
    pub dir: Dir,
    pub ts: Timestamp,
}

impl To {
    fn push(self, kind: EventKind, out: &mut Vec<Event>) {
        out.push(Event {
            conn: self.conn,
            ts: self.ts,
            kind,
        });
    }
}

impl Side {
    /// Emit the held bytes from `covered` up to `upto` as `Undecoded` (masked by `secrets`).
    /// Called before every frame, which as a rule follows the last with nothing between: the
    /// test is made in place, the work out of line.
    #[inline(always)]
    pub(super) fn undecoded_up_to(
        &mut self,
        upto: u64,
        secrets: &[(u64, u64)],
        to: To,
        out: &mut Vec<Event>,
    ) {
        if upto > self.covered {
            self.undecoded_between(upto, secrets, to, out);
        }
    }

    /// [`Side::undecoded_up_to`] when there are bytes before `upto` in no event yet.
    #[inline(never)]
    fn undecoded_between(
        &mut self,
        upto: u64,
        secrets: &[(u64, u64)],
        to: To,
        out: &mut Vec<Event>,
    ) {
        let from = (self.covered - self.held_offset) as usize;
        let bytes = self.held.peek(from, (upto - self.covered) as usize);
        let offset = self.covered;
        self.covered += bytes.len() as u64;
        if bytes.is_empty() {
            return;
        }
        let bytes = masked(bytes, offset, secrets);
        to.push(
            EventKind::Undecoded {
                dir: to.dir,
                offset,
                bytes,
            },
            out,
        );
    }

    /// The decoder is done with every byte before `committed`: emit those not yet in an event
    /// as `Undecoded`, those not yet sent as `Data` (with `emit_data`), and forget them.
    pub(super) fn commit(
        &mut self,
        committed: u64,
        secrets: &[(u64, u64)],
        emit_data: bool,
        to: To,
        out: &mut Vec<Event>,
    ) {
        self.undecoded_up_to(committed, secrets, to, out);
        if emit_data && committed > self.data_sent {
            let from = (self.data_sent - self.held_offset) as usize;
            let bytes = self.held.peek(from, (committed - self.data_sent) as usize);
            let offset = self.data_sent;
            if !bytes.is_empty() {
                let bytes = masked(bytes, offset, secrets);
                to.push(
                    EventKind::Data {
                        dir: to.dir,
                        offset,
                        bytes,
                    },
                    out,
                );
            }
        }
        let n = committed.saturating_sub(self.held_offset) as usize;
        self.held.drop_front(n);
        self.held_offset += n as u64;
        self.covered = self.covered.max(self.held_offset);
        self.data_sent = self.data_sent.max(self.held_offset);
    }

    /// URL passwords in the bytes up to `committed` of a frame that streams past undecoded
    /// (decoded from its head), as absolute ranges; the stream is forgotten once it has passed.
    /// A URL cut by a chunk boundary is not found (as one cut by a frame boundary is not).
    pub(super) fn streamed_url_passwords(&mut self, committed: u64) -> Vec<(u64, u64)> {
        let Some((from, end)) = self.streaming else {
            return Vec::new();
        };
        let lo = from.max(self.held_offset);
        let hi = end.min(committed);
        let mut found = Vec::new();
        if lo < hi {
            let bytes = self
                .held
                .peek((lo - self.held_offset) as usize, (hi - lo) as usize);
            found.extend(
                crate::codec::credential::url_passwords(&bytes)
                    .into_iter()
                    .map(|r| (lo + r.start as u64, lo + r.end as u64)),
            );
        }
        if end <= committed {
            self.streaming = None;
        }
        found
    }

    /// The masks of the incomplete frame held (empty when it cannot hold a credential), as
    /// absolute ranges: from its frame header on when it could carry a credential, its whole
    /// self in a SASL layer (where it may start inside a secret), URL passwords in it, and
    /// everything after framing was lost at a credential frame.
    fn held_secret(&self, kind: StreamKind) -> Vec<(u64, u64)> {
        let head = self.held.peek(0, self.held.len());
        let at = self.held_offset;
        credential_span(&head, kind, false)
            .map(|r| at + r.start as u64..at + r.end as u64)
            .into_iter()
            .chain(self.masker.partial(at, &head))
            .map(|r| (r.start, r.end))
            .collect()
    }

    /// The stream stops here (a gap, a TLS upgrade, the close): every held byte goes out, an
    /// incomplete frame that may hold a credential masked from its frame header on.
    pub(super) fn release_held(
        &mut self,
        kind: StreamKind,
        show_secrets: bool,
        emit_data: bool,
        to: To,
        out: &mut Vec<Event>,
    ) {
        let secret: Vec<(u64, u64)> = if show_secrets {
            Vec::new()
        } else {
            self.held_secret(kind)
        };
        let end = self.held_offset + self.held.len() as u64;
        self.commit(end, &secret, emit_data, to, out);
    }

    /// Flush time: send the held bytes of an incomplete frame as `Data` now (so a capture
    /// holds every relayed byte however the process ends), unless that frame may hold a
    /// credential: it is then held until it is complete and can be masked exactly.
    pub(super) fn data_so_far(&mut self, kind: StreamKind, to: To, out: &mut Vec<Event>) {
        let end = self.held_offset + self.held.len() as u64;
        if end <= self.data_sent || !self.held_secret(kind).is_empty() {
            return;
        }
        let from = (self.data_sent - self.held_offset) as usize;
        let bytes = self.held.peek(from, (end - self.data_sent) as usize);
        let offset = self.data_sent;
        self.data_sent = end;
        to.push(
            EventKind::Data {
                dir: to.dir,
                offset,
                bytes,
            },
            out,
        );
    }

    /// The protocol this direction speaks, as far as undecoded bytes go.
    pub(super) fn note_header(&mut self, header: ProtocolHeader) {
        self.header = Some(header);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K10: StreamKind = StreamKind {
        proto: ProtocolId::Amqp10,
        stream: UndecodedStream {
            header: None,
            client: true,
            cbs: false,
        },
    };

    const fn with(
        proto: ProtocolId,
        header: Option<ProtocolHeader>,
        client: bool,
        cbs: bool,
    ) -> StreamKind {
        StreamKind {
            proto,
            stream: UndecodedStream {
                header,
                client,
                cbs,
            },
        }
    }

    #[test]
    fn a_091_start_ok_is_masked_past_its_method_ids_and_before_its_frame_end() {
        let k = with(ProtocolId::Amqp091, None, true, false);
        let mut f = vec![1, 0, 0, 0, 0, 0, 9, 0, 10, 0, 11, 1, 2, 3, 4, 0xce];
        assert_eq!(credential_span(&f, k, true), Some(11..15));
        assert_eq!(credential_span(&f[..13], k, false), Some(11..13));
        f[10] = 40; // connection.open: nothing secret
        assert_eq!(credential_span(&f, k, true), None);
        assert_eq!(
            credential_span(&f[..9], k, false),
            Some(7..9),
            "method not known yet"
        );
        assert_eq!(
            credential_span(&f[..7], k, false),
            None,
            "frame header only"
        );
        f[0] = 3;
        assert_eq!(credential_span(&f, k, true), None, "content body");
        f[0] = 1;
        f[10] = 11;
        let server = with(ProtocolId::Amqp091, None, false, false);
        assert_eq!(credential_span(&f, server, true), None, "from the server");
    }

    #[test]
    fn amqp10_sasl_frames_and_cbs_transfers_are_masked_other_frames_not() {
        use crate::codec::amqp10::views::code::TRANSFER;
        let sasl = [0, 0, 0, 20, 2, 1, 0, 0, 0, 0x53, 0x41, 0x45];
        assert_eq!(credential_span(&sasl, K10, false), Some(8..12));
        let mut type0 = sasl;
        type0[5] = 0;
        assert_eq!(credential_span(&type0, K10, false), None);
        let in_sasl = with(
            ProtocolId::Amqp10,
            Some(ProtocolHeader::Amqp10Sasl),
            true,
            false,
        );
        assert_eq!(credential_span(&type0, in_sasl, false), Some(8..12));
        let cbs = with(ProtocolId::Amqp10, None, true, true);
        assert_eq!(
            credential_span(&type0, cbs, false),
            None,
            "sasl-init code, not a transfer"
        );
        type0[10] = TRANSFER as u8;
        assert_eq!(credential_span(&type0, cbs, false), Some(8..12));
        assert_eq!(
            credential_span(&type0[..10], cbs, false),
            Some(8..10),
            "not known yet"
        );
    }
}
