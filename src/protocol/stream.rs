//! One direction's byte stream, decoded: sniff the protocol header, deframe, decode each frame,
//! and assemble messages.
//!
//! Accepts the stream split at any point. Complete frames inside one chunk are zero-copy
//! slices of it; only a frame that straddles chunks is copied once into a buffer. A frame that
//! fails to decode is reported (with its offset) and skipped by its declared size; when the
//! framing itself is lost the stream is declared undecodable and the rest is ignored — the
//! relay forwards it regardless.

use std::mem::MaybeUninit;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::{AnyFrame, Assemblers, FrameEvent, ProtocolId, SkimChannels};
use crate::base::{Dir, FrameContext};
use crate::codec::limits::{Limits, MAX_BUFFERED_FRAME};
use crate::codec::resync::Plausible;
use crate::codec::{DecodeError, ErrorKind, ProtocolHeader};

/// What the decoder found in the stream, in stream order.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A protocol header.
    Header {
        /// Absolute offset in this direction's stream.
        offset: u64,
        /// The 8 bytes (or fewer, for a non-AMQP stream's first bytes).
        raw: Bytes,
        /// What it is.
        header: ProtocolHeader,
    },
    /// A complete, decoded frame (its offset, exact bytes, decoded form and the message it
    /// completes), made once in the shape of the event the pipeline shares with the sinks: an
    /// item is a pointer to move, however large the frame, and becomes its event without a
    /// copy. Its `dir` is the decoder's ([`StreamDecoder::in_dir`]); its `context` is left to
    /// the state layer.
    Frame(Arc<FrameEvent>),
    /// A frame whose bytes could be delimited but not decoded.
    Malformed {
        /// Absolute offset of the frame's first byte.
        offset: u64,
        /// The frame's exact bytes.
        raw: Bytes,
        /// Why it failed (boxed: an item is moved once per frame, and a frame that fails is
        /// rare).
        error: Box<DecodeError>,
    },
    /// Decoding stops here for good (lost framing, TLS, non-AMQP); the relay carries on.
    Undecodable {
        /// Absolute offset where decoding stopped.
        offset: u64,
        /// Why decoding could not go on (its kind says what was found there).
        error: Box<DecodeError>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Waiting for a protocol header.
    Header,
    /// Frames of a registered protocol (a new header may follow, as AMQP 1.0's after SASL).
    Framed(ProtocolId),
    /// Nothing more will be decoded.
    Opaque,
}

/// What [`StreamDecoder::skim`] passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skimmed {
    /// Frames that start in the bytes passed over.
    pub frames: u64,
    /// Bytes passed over, from the front of the chunk.
    pub bytes: usize,
    /// Bytes of an incomplete frame that the decoder held from earlier chunks and passed over
    /// (they come before the chunk).
    pub pending: usize,
    /// The channels of the frames passed over that may carry state (the rest of a frame
    /// decoded from its head is not counted: its head was decoded).
    pub channels: SkimChannels,
}

/// Decoder for one direction of one connection.
#[derive(Debug)]
pub struct StreamDecoder {
    mode: Mode,
    /// Bytes of an incomplete frame/header carried over from earlier chunks.
    pending: BytesMut,
    /// Size of the incomplete frame in `pending`, once its header was seen (0: unknown).
    need: usize,
    /// Absolute offset of the first byte not yet consumed (start of `pending`).
    offset: u64,
    /// Bytes still to pass over of a frame that was skimmed (see [`StreamDecoder::skim`]).
    skip: u64,
    /// Where that frame starts.
    skip_from: u64,
    /// Bytes still to stream past of a frame decoded from its head (see [`Limits::frame`]).
    stream_left: u64,
    /// Where that frame starts.
    stream_from: u64,
    limits: Limits,
    messages: Assemblers,
    /// Where framing was lost and the first bytes there (for masking what follows).
    lost: Option<(u64, Vec<u8>)>,
    /// The direction its frames are stamped with (see [`StreamDecoder::in_dir`]).
    dir: Dir,
    /// Rooms of frame events given back unshared ([`StreamDecoder::recycle`]), the next
    /// frames' events are decoded into: at most [`SPARE_EVENTS`].
    spare: Vec<Arc<MaybeUninit<FrameEvent>>>,
}

/// Frame event rooms a decoder keeps for reuse: a chunk's frames are decoded before any is
/// given back, and a handful covers a chunk of small frames.
const SPARE_EVENTS: usize = 4;

impl Default for StreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamDecoder {
    /// A decoder that expects a protocol header first.
    pub fn new() -> Self {
        StreamDecoder {
            mode: Mode::Header,
            pending: BytesMut::new(),
            need: 0,
            offset: 0,
            skip: 0,
            skip_from: 0,
            stream_left: 0,
            stream_from: 0,
            limits: Limits::default(),
            messages: Assemblers::new(Limits::default()),
            lost: None,
            dir: Dir::C2S,
            spare: Vec::new(),
        }
    }

    /// Give back `event`, which its reader is done with: when nothing else holds it, its
    /// value is dropped and its room kept for a frame decoded later (at most
    /// [`SPARE_EVENTS`] are kept; any other is freed as usual).
    pub fn recycle(&mut self, mut event: Arc<FrameEvent>) {
        if self.spare.len() >= SPARE_EVENTS || Arc::get_mut(&mut event).is_none() {
            return;
        }
        let value = Arc::into_raw(event).cast_mut();
        // SAFETY: `get_mut` succeeded, so no other `Arc` or `Weak` reaches the value: it is
        // dropped here once, and never read again as a `FrameEvent`.
        unsafe { std::ptr::drop_in_place(value) };
        // SAFETY: the pointer came from `Arc::into_raw` of an `Arc<FrameEvent>`, and
        // `MaybeUninit<FrameEvent>` has the size and alignment of `FrameEvent`; the value it
        // points at is now uninitialised, which a `MaybeUninit` may be.
        let room = unsafe { Arc::from_raw(value.cast_const().cast::<MaybeUninit<FrameEvent>>()) };
        self.spare.push(room);
    }

    /// The same decoder for the stream `dir` sends: its frames are made with that direction,
    /// ready to be events (a decoder not told decodes [`Dir::C2S`]'s).
    pub fn in_dir(mut self, dir: Dir) -> Self {
        self.dir = dir;
        self
    }

    /// The same decoder holding at most what `limits` allow.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self.messages = Assemblers::new(limits);
        self
    }

    /// Messages under way are forgotten; new ones are assembled within the limits.
    fn reset_assemblers(&mut self) {
        // Frames were passed over: a message under way may have started among them.
        self.messages = Assemblers::after_gap(self.limits);
    }

    /// A decoder for a stream with no header in sight (e.g. a capture that starts mid-way, or
    /// `decode` given bare frames): start directly in `header`'s protocol.
    pub fn assuming(header: ProtocolHeader) -> Self {
        let mut d = Self::new();
        d.mode = ProtocolId::framed_after(header).map_or(Mode::Header, Mode::Framed);
        d
    }

    /// Place the decoder at absolute `offset` in its stream (after a gap).
    pub fn starting_at(mut self, offset: u64) -> Self {
        self.offset = offset;
        self
    }

    /// True before the decoder has consumed any byte.
    pub fn at_start(&self) -> bool {
        self.offset == 0 && self.pending.is_empty()
    }

    /// Absolute offset of the next byte the decoder expects.
    pub fn offset(&self) -> u64 {
        self.offset + self.pending.len() as u64
    }

    /// True once the decoder has given up on this stream.
    pub fn is_opaque(&self) -> bool {
        matches!(self.mode, Mode::Opaque)
    }

    /// Where framing was lost (the stream is opaque from there) and the first bytes of the
    /// unit that could not be framed (at most 16), so a caller can tell whether they could
    /// start a credential-carrying frame.
    pub fn lost_framing(&self) -> Option<(u64, &[u8])> {
        self.lost.as_ref().map(|(at, head)| (*at, &head[..]))
    }

    /// The framing being decoded, as its protocol's header (AMQP 1.0's for SASL too); `None`
    /// before a header or once opaque.
    pub fn framing(&self) -> Option<ProtocolHeader> {
        self.protocol().map(ProtocolId::header)
    }

    /// The protocol being decoded; `None` before a header or once opaque.
    fn protocol(&self) -> Option<ProtocolId> {
        match self.mode {
            Mode::Framed(p) => Some(p),
            Mode::Header | Mode::Opaque => None,
        }
    }

    /// Bytes held waiting for the rest of a frame.
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }

    /// Bytes at the front of the next chunk that belong to a skimmed frame (passed over by the
    /// next [`StreamDecoder::push`] without being decoded).
    pub fn skipping(&self) -> u64 {
        self.skip
    }

    /// The frame decoded from its head that the stream is inside, if any: (its offset, bytes of
    /// it still to come). A stream that ends here ends inside that frame.
    pub fn streamed_frame(&self) -> Option<(u64, u64)> {
        (self.stream_left > 0).then_some((self.stream_from, self.stream_left))
    }

    /// The skimmed frame the stream is inside, if any: (its offset, bytes of it still to come).
    /// A stream that ends here ends inside that frame.
    pub fn skimmed_frame(&self) -> Option<(u64, u64)> {
        (self.skip > 0).then_some((self.skip_from, self.skip))
    }

    /// Pass over the front of `chunk` following the frame sizes only, decoding nothing (for when
    /// the inspection falls behind and nothing downstream needs every frame); an incomplete
    /// frame held from earlier chunks is passed over with it. Framing stays
    /// exact, so decoding resumes with the next frame, byte for byte where it would have;
    /// messages under way are forgotten, since frames of theirs are not seen. Stops before
    /// anything but a plain run of well-shaped frames (a protocol header, a frame size the
    /// decoder refuses, a header cut by the chunk's end): the caller pushes the rest
    /// (`chunk.slice(skimmed.bytes..)`), so it is decoded and reported as usual.
    pub fn skim(&mut self, chunk: &Bytes) -> Skimmed {
        let mut done = Skimmed::default();
        let Mode::Framed(protocol) = self.mode else {
            return done;
        };
        if self.stream_left > 0 {
            // The rest of a frame being streamed is passed over like that of a skimmed one.
            done.frames += 1;
            self.skip = self.stream_left;
            self.skip_from = self.stream_from;
            self.stream_left = 0;
        }
        if self.header_ahead(&self.pending) {
            // The start of a protocol header is held: that is for `push` to decode.
            return done;
        }
        if !self.pending.is_empty() {
            // An incomplete frame is held: pass over it too, once its size is known (from the
            // chunk's first bytes when the held ones are too few to tell).
            let mut head = [0u8; 8];
            let held = self.pending.len().min(head.len());
            head[..held].copy_from_slice(&self.pending[..held]);
            let more = (head.len() - held).min(chunk.len());
            head[held..held + more].copy_from_slice(&chunk[..more]);
            let head = &head[..held + more];
            let size = if self.need > 0 {
                self.need
            } else {
                match protocol.frame_size(head) {
                    Ok(Some(size)) if size <= MAX_BUFFERED_FRAME => size,
                    _ => return done,
                }
            };
            if size <= self.pending.len() {
                return done;
            }
            done.pending = self.pending.len();
            done.frames += 1;
            done.channels.note(protocol.frame_channel(head));
            self.skip = (size - self.pending.len()) as u64;
            self.skip_from = self.offset;
            self.offset += self.pending.len() as u64;
            self.pending = BytesMut::new();
            self.need = 0;
        }
        self.reset_assemblers();
        let mut at = (self.skip.min(chunk.len() as u64)) as usize;
        self.skip -= at as u64;
        while let Some(rest) = chunk.get(at..).filter(|r| !r.is_empty()) {
            if rest.starts_with(b"AMQP") {
                break;
            }
            // Only frames of the expected shape are passed over; anything else is decoded.
            let (plausible, size) = (protocol.plausible(rest), protocol.frame_size(rest));
            match (plausible, size) {
                (Plausible::Frame(n), _) => {
                    done.frames += 1;
                    done.channels.note(protocol.frame_channel(rest));
                    at += n;
                }
                (Plausible::NeedMore, Ok(Some(size)))
                    if size > rest.len() && size <= MAX_BUFFERED_FRAME =>
                {
                    done.frames += 1;
                    done.channels.note(protocol.frame_channel(rest));
                    self.skip = (size - rest.len()) as u64;
                    self.skip_from = self.offset + at as u64;
                    at = chunk.len();
                }
                _ => break,
            }
        }
        self.offset += at as u64;
        done.bytes = at;
        done
    }

    /// Feed the next chunk of the stream; decoded items are appended to `out`.
    pub fn push(&mut self, mut chunk: Bytes, out: &mut Vec<Item>) {
        if self.skip > 0 {
            let n = self.skip.min(chunk.len() as u64);
            self.skip -= n;
            self.offset += n;
            chunk = chunk.slice(n as usize..);
        }
        if self.stream_left > 0 {
            // The rest of a frame decoded from its head: counted, not held.
            let n = self.stream_left.min(chunk.len() as u64);
            self.stream_left -= n;
            self.offset += n;
            chunk = chunk.slice(n as usize..);
        }
        if matches!(self.mode, Mode::Opaque) {
            self.offset += chunk.len() as u64;
            return;
        }
        let ready = self.ready_at();
        if self.pending.is_empty() {
            // Fast path: decode straight out of the chunk, buffer only the incomplete tail.
            let consumed = self.drain(&chunk, out);
            self.keep_rest(&chunk, consumed);
        } else if self.pending.len() + chunk.len() < ready {
            // Still inside a large frame: copy each byte once, decode nothing yet.
            self.pending.extend_from_slice(&chunk);
        } else if ready < self.need {
            // The head of a frame too large to hold is complete: decode it, stream the rest.
            let take = ready - self.pending.len();
            self.pending.extend_from_slice(&chunk[..take]);
            let buf = std::mem::take(&mut self.pending).freeze();
            let consumed = self.drain(&buf, out);
            self.keep_rest(&buf, consumed);
            if take < chunk.len() {
                self.push(chunk.slice(take..), out);
            }
        } else {
            self.pending.extend_from_slice(&chunk);
            let buf = std::mem::take(&mut self.pending).freeze();
            let consumed = self.drain(&buf, out);
            self.keep_rest(&buf, consumed);
        }
    }

    /// Bytes of the incomplete frame held that make it decodable: all of it, or its head when
    /// it is larger than [`Limits::frame`] (0: its size is not known yet).
    fn ready_at(&self) -> usize {
        if self.need > self.limits.frame {
            self.limits.frame
        } else {
            self.need
        }
    }

    /// Keep the incomplete tail of `buf` (from `consumed`) and note how many bytes the unit it
    /// starts needs, so that a large frame is not re-examined (and re-copied) per chunk.
    fn keep_rest(&mut self, buf: &Bytes, consumed: usize) {
        /// Most bytes reserved for an incomplete frame beyond those already received.
        const MAX_AHEAD: usize = 64 * 1024;
        self.need = 0;
        if matches!(self.mode, Mode::Opaque) {
            return;
        }
        if let Some(rest) = buf.get(consumed..).filter(|r| !r.is_empty()) {
            // A protocol header cut short (`AMQP` then fewer than 4 bytes) is not a frame whose
            // size its first bytes give: `AMQP` read as one is 1.09 GB, and waiting for that
            // many bytes would stop decoding this direction for good.
            let size = match self.mode {
                _ if self.header_ahead(rest) => Ok(None),
                Mode::Framed(p) => p.frame_size(rest),
                Mode::Header | Mode::Opaque => Ok(None),
            };
            if let Ok(Some(size)) = size {
                self.need = size;
                // Room for the whole frame up front (one allocation instead of a realloc per
                // chunk), but never more than a read's worth beyond the bytes present: a
                // claimed size is not trusted.
                let ready = self.ready_at();
                self.pending
                    .reserve(ready.clamp(rest.len(), rest.len() + MAX_AHEAD));
            }
            self.pending.extend_from_slice(rest);
        }
    }

    /// Decode as many complete units from the front of `buf` as possible, advancing
    /// `self.offset` past them; returns how many bytes were consumed (the incomplete rest is
    /// the caller's to keep). Walks `buf` by index: no per-frame `split_to`.
    fn drain(&mut self, buf: &Bytes, out: &mut Vec<Item>) -> usize {
        let mut consumed = 0;
        loop {
            if matches!(self.mode, Mode::Opaque) {
                let rest = buf.len().saturating_sub(consumed);
                self.offset += rest as u64;
                return buf.len();
            }
            match self.step(buf, consumed, out) {
                Some(n) => {
                    self.offset += n as u64;
                    consumed += n;
                }
                None => return consumed,
            }
        }
    }

    /// True when `buf`, in a framed mode, starts (or could start, being shorter than 4 bytes)
    /// with `AMQP`: a protocol header, not a frame. AMQP 1.0 sends its header again after SASL
    /// (§5.3.2); as a frame size `AMQP` is 1.09 GB, which nobody negotiates, and `A` is no
    /// 0-9-1 frame type either, so a header is never mistaken for a frame.
    fn header_ahead(&self, buf: &[u8]) -> bool {
        // The first byte decides for nearly every frame (a 1.0 size's top byte, a 0-9-1 type):
        // no `A`, no header.
        matches!(self.mode, Mode::Framed(_))
            && buf.first() == Some(&b'A')
            && buf.iter().zip(b"AMQP").all(|(a, b)| a == b)
    }

    /// Framing is lost at `offset`, where `buf` starts: nothing more is decoded.
    fn lose_framing(&mut self, offset: u64, buf: &[u8]) {
        self.mode = Mode::Opaque;
        self.lost = Some((offset, buf[..buf.len().min(16)].to_vec()));
    }

    /// Try to decode one unit at `buf[at..]`; returns how many bytes it took, or `None`
    /// when more input is needed.
    fn step(&mut self, whole: &Bytes, at: usize, out: &mut Vec<Item>) -> Option<usize> {
        let offset = self.offset;
        let buf: &[u8] = whole.get(at..)?;
        if buf.is_empty() {
            return None;
        }
        // A protocol header where one is expected, or (AMQP 1.0 after SASL, a 0-9-1 server's
        // header after the decoder assumed 0-9-1) where the bytes spell `AMQP`.
        if matches!(self.mode, Mode::Header) || self.header_ahead(buf) {
            let header = ProtocolId::sniff_header(buf)?;
            // Bytes that are no AMQP header are told early, but reported as the 8 a header
            // would be, once there: what the record holds must not depend on how TCP cut them.
            if buf.len() < crate::codec::sniff::HEADER_LEN {
                return None;
            }
            let len = crate::codec::sniff::HEADER_LEN;
            let raw = whole.slice(at..at + len);
            out.push(Item::Header {
                offset,
                raw,
                header,
            });
            self.mode = match ProtocolId::framed_after(header) {
                Some(p) => Mode::Framed(p),
                None => {
                    let kind = match header {
                        ProtocolHeader::NotAmqp => ErrorKind::BadProtocolHeader,
                        // A header of a protocol (or TLS) that is not decoded here: valid,
                        // just not followed.
                        other => ErrorKind::NotDecoded(other),
                    };
                    out.push(Item::Undecodable {
                        offset: offset + len as u64,
                        error: Box::new(DecodeError::new(offset, kind)),
                    });
                    Mode::Opaque
                }
            };
            return Some(if matches!(self.mode, Mode::Opaque) {
                len
            } else {
                crate::codec::sniff::HEADER_LEN
            });
        }
        let protocol = self.protocol()?;
        let size = match protocol.frame_size(buf) {
            Ok(Some(size)) => size,
            Ok(None) => return None,
            Err(mut error) => {
                error.offset += offset;
                out.push(Item::Undecodable {
                    offset,
                    error: Box::new(error),
                });
                self.lose_framing(offset, buf);
                return Some(0);
            }
        };
        if size > self.limits.frame {
            return self.step_head(protocol, whole, at, size, out);
        }
        if buf.len() < size {
            return None;
        }
        let raw = whole.slice(at..at + size);
        let decode = |raw: &Bytes, slot: &mut MaybeUninit<AnyFrame>| {
            protocol.decode_frame_into(raw, offset, slot)
        };
        // SAFETY: `decode_frame_into` returns `Ok` only once it has written the slot.
        unsafe { self.emit(offset, raw, decode, out) };
        Some(size)
    }

    /// A frame of `size` bytes, too large to hold, starts at `whole[at..]`: once its head is
    /// there, decode it and stream the rest of the frame past (see [`super::head`]).
    fn step_head(
        &mut self,
        protocol: ProtocolId,
        whole: &Bytes,
        at: usize,
        size: usize,
        out: &mut Vec<Item>,
    ) -> Option<usize> {
        let offset = self.offset;
        let present = whole.len() - at;
        let head_len = self.limits.frame;
        if present < head_len {
            return None;
        }
        let head = whole.slice(at..at + head_len);
        let decode = |head: &Bytes, slot: &mut MaybeUninit<AnyFrame>| {
            let frame = protocol.decode_head(head.clone(), size as u64, offset)?;
            slot.write(frame);
            Ok(())
        };
        // SAFETY: `decode` returns `Ok` only once it has written the slot.
        unsafe { self.emit(offset, head, decode, out) };
        let here = size.min(present);
        self.stream_left = (size - here) as u64;
        self.stream_from = offset;
        Some(here)
    }

    /// Report a frame (its message, if it completes one) or why it did not decode: `decode`
    /// decodes the frame of bytes `raw` into the slot it is given (`Ok`: the slot holds it;
    /// `Err`: it was left as it was).
    ///
    /// # Safety
    ///
    /// `decode` returns `Ok` only once it has written the slot it is given.
    unsafe fn emit(
        &mut self,
        offset: u64,
        raw: Bytes,
        decode: impl FnOnce(&Bytes, &mut MaybeUninit<AnyFrame>) -> Result<(), DecodeError>,
        out: &mut Vec<Item>,
    ) {
        // The event's room is taken first (one given back, else a new one) and the frame is
        // decoded straight into it (a frame event is hundreds of bytes, which a value built on
        // the stack and then moved into an `Arc` would copy whole once more per frame). A
        // malformed frame, rare, gives the room back unused.
        let mut event = self
            .spare
            .pop()
            .unwrap_or_else(Arc::<FrameEvent>::new_uninit);
        let slot = Arc::get_mut(&mut event)
            .expect("a new or given back room is not shared")
            .as_mut_ptr();
        // SAFETY: `slot` points to the value of `event`, new and unshared, so its `frame`
        // field is valid for writes, aligned, and reached by no other pointer while this
        // reference lives (it ends with `decode`); `MaybeUninit<AnyFrame>` has the layout of
        // `AnyFrame` and may hold anything, so the uninitialised field is a valid one.
        let frame =
            unsafe { &mut *std::ptr::addr_of_mut!((*slot).frame).cast::<MaybeUninit<AnyFrame>>() };
        match decode(&raw, frame) {
            // SAFETY: `decode` returned `Ok`, so the frame of `slot` is initialised (written
            // by `decode`, as the caller promises); the rest of it is not, and `event` is
            // shared with nothing.
            Ok(()) => out.push(Item::Frame(unsafe {
                self.fill_event(event, slot, offset, raw)
            })),
            Err(error) => {
                // Its value was never written: the room goes back as it came.
                self.spare.push(event);
                out.push(Item::Malformed {
                    offset,
                    raw,
                    error: Box::new(error),
                })
            }
        }
    }

    /// The event whose frame `slot` (the value of `event`) holds, with its bytes `raw`, its
    /// `offset` and the message the frame completes, written where the event lives.
    ///
    /// # Safety
    ///
    /// `slot` is the value of `event`, which nothing else shares, and only its `frame` is
    /// initialised. Every other field is written here exactly once, through raw pointers,
    /// before `assume_init`; should `messages.push` panic, `event` is freed without dropping
    /// its value (the frame leaks, nothing is read uninitialised). Inlined into its one
    /// caller: it runs once per frame.
    #[inline(always)]
    unsafe fn fill_event(
        &mut self,
        event: Arc<std::mem::MaybeUninit<FrameEvent>>,
        slot: *mut FrameEvent,
        offset: u64,
        raw: Bytes,
    ) -> Arc<FrameEvent> {
        // SAFETY: as the caller promises (see above).
        unsafe {
            let message = self.messages.push(&*std::ptr::addr_of!((*slot).frame));
            std::ptr::addr_of_mut!((*slot).message).write(message);
            std::ptr::addr_of_mut!((*slot).dir).write(self.dir);
            std::ptr::addr_of_mut!((*slot).offset).write(offset);
            std::ptr::addr_of_mut!((*slot).raw).write(raw);
            std::ptr::addr_of_mut!((*slot).context).write(FrameContext::default());
            event.assume_init()
        }
    }
}

/// Decode `raw` again as the same protocol as `like` (used after masking credentials).
pub fn redecode(like: &AnyFrame, raw: Bytes, offset: u64) -> Option<AnyFrame> {
    let protocol = like.protocol();
    if like.streamed() > 0 {
        let size = raw.len() as u64 + like.streamed();
        return protocol.decode_head(raw, size, offset).ok();
    }
    protocol.decode_frame(raw, offset).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{amqp10, amqp091};

    fn feed(d: &mut StreamDecoder, parts: &[&[u8]]) -> Vec<Item> {
        let mut out = Vec::new();
        for p in parts {
            d.push(Bytes::copy_from_slice(p), &mut out);
        }
        out
    }

    #[test]
    fn header_split_byte_by_byte_is_found_once() {
        let mut d = StreamDecoder::new();
        let hdr = b"AMQP\x00\x00\x09\x01";
        let parts: Vec<&[u8]> = hdr.chunks(1).collect();
        let items = feed(&mut d, &parts);
        assert_eq!(items.len(), 1);
        assert!(matches!(
            items[0],
            Item::Header {
                offset: 0,
                header: ProtocolHeader::Amqp091,
                ..
            }
        ));
        assert_eq!(d.offset(), 8);
    }

    /// Every item of `items` as (kind, offset, raw bytes), for comparing two decodes.
    fn shape(items: &[Item]) -> Vec<(&'static str, u64, Bytes)> {
        items
            .iter()
            .map(|i| match i {
                Item::Header { offset, raw, .. } => ("header", *offset, raw.clone()),
                Item::Frame(fe) => ("frame", fe.offset, fe.raw.clone()),
                Item::Malformed { offset, raw, .. } => ("malformed", *offset, raw.clone()),
                Item::Undecodable { offset, .. } => ("undecodable", *offset, Bytes::new()),
            })
            .collect()
    }

    #[test]
    fn a_header_after_sasl_cut_anywhere_is_a_header_not_a_frame_size() {
        // SASL header, one SASL frame (sasl-outcome, code 0), the 1.0 header, two empty frames.
        let mut stream = b"AMQP\x03\x01\x00\x00".to_vec();
        let outcome = amqp10::described_list(
            amqp10::views::code::SASL_OUTCOME,
            vec![amqp10::Value::Ubyte(0)],
        );
        stream.extend(amqp10::encode_frame(1, 0, Some(&outcome), &[]).unwrap());
        let second = stream.len();
        stream.extend_from_slice(b"AMQP\x00\x01\x00\x00");
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 0, 0, 0, 0, 8, 2, 0, 0, 0]);
        let mut whole = StreamDecoder::new();
        let want = shape(&feed(&mut whole, &[&stream]));
        assert_eq!(want.len(), 5, "{want:?}");
        for cut in 1..8 {
            for tail in [second + cut, stream.len()] {
                let mut d = StreamDecoder::new();
                let parts = [&stream[..second + cut], &stream[second + cut..tail]];
                let mut got = feed(&mut d, &parts);
                d.push(Bytes::copy_from_slice(&stream[tail..]), &mut got);
                assert_eq!(shape(&got), want, "first piece of the header: {cut} bytes");
                assert_eq!(d.buffered(), 0, "{cut}");
            }
        }
    }

    #[test]
    fn a_header_where_091_frames_were_assumed_cut_anywhere_is_a_header() {
        let stream = b"AMQP\x00\x00\x09\x01";
        for cut in 1..8 {
            let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp091);
            let got = feed(&mut d, &[&stream[..cut], &stream[cut..]]);
            assert!(
                matches!(
                    got[..],
                    [Item::Header {
                        offset: 0,
                        header: ProtocolHeader::Amqp091,
                        ..
                    }]
                ),
                "{cut}: {got:?}"
            );
            // Skimming does not pass over a header's first bytes either.
            let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp091);
            feed(&mut d, &[&stream[..cut]]);
            assert_eq!(d.skim(&Bytes::copy_from_slice(&stream[cut..])).bytes, 0);
        }
    }

    #[test]
    fn non_amqp_stream_becomes_opaque_and_counts_bytes() {
        let mut d = StreamDecoder::new();
        let items = feed(&mut d, &[b"GET / HTTP/1.1\r\n", b"more"]);
        assert!(matches!(
            items[0],
            Item::Header {
                header: ProtocolHeader::NotAmqp,
                ..
            }
        ));
        assert!(matches!(items[1], Item::Undecodable { .. }));
        assert!(d.is_opaque());
        assert_eq!(d.offset(), 20);
    }

    #[test]
    fn amqp10_frame_size_below_8_loses_framing_at_its_offset() {
        let mut d = StreamDecoder::new();
        let items = feed(
            &mut d,
            &[b"AMQP\x00\x01\x00\x00", &[0, 0, 0, 4, 2, 0, 0, 0]],
        );
        match &items[1] {
            Item::Undecodable { offset, error } => {
                assert_eq!(*offset, 8);
                assert_eq!(error.offset, 8);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_large_frame_in_many_chunks_is_decoded_once_complete() {
        // An AMQP 1.0 frame of 100,000 bytes: empty performative space filled with an
        // extended header (doff covers the whole frame), sent in 1,000-byte chunks.
        let size = 100_000u32;
        let mut frame = size.to_be_bytes().to_vec();
        frame.extend_from_slice(&[2, 0, 0, 0]);
        frame.resize(size as usize, 0);
        let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp10);
        let mut out = Vec::new();
        for c in frame.chunks(1000) {
            d.push(Bytes::copy_from_slice(c), &mut out);
            if out.is_empty() {
                assert!(d.buffered() < size as usize);
            }
        }
        assert_eq!(
            out.len(),
            1,
            "{:?}",
            out.first().map(std::mem::discriminant)
        );
        assert_eq!(d.buffered(), 0);
        assert_eq!(d.offset(), size as u64);
    }

    #[test]
    fn frames_split_anywhere_are_delimited_at_the_same_offsets() {
        // Two empty AMQP 1.0 frames (heartbeats) after the header.
        let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 0]);
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 1]);
        for split in 1..stream.len() {
            let mut d = StreamDecoder::new();
            let items = feed(&mut d, &[&stream[..split], &stream[split..]]);
            let offsets: Vec<u64> = items
                .iter()
                .map(|i| match i {
                    Item::Frame(fe) => fe.offset,
                    Item::Header { offset, .. }
                    | Item::Malformed { offset, .. }
                    | Item::Undecodable { offset, .. } => *offset,
                })
                .collect();
            assert_eq!(offsets, vec![0, 8, 16], "split at {split}");
            assert_eq!(d.offset(), stream.len() as u64);
            assert_eq!(d.buffered(), 0);
        }
    }

    /// Offsets and bytes of every frame `items` holds; panics on anything but headers and frames.
    fn frames_of(items: &[Item]) -> Vec<(u64, Bytes)> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Frame(fe) => Some((fe.offset, fe.raw.clone())),
                Item::Header { .. } => None,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// Skim chunks `skim` of `stream` cut into `size`-byte chunks and push the others: every
    /// frame decoded is one a full decode finds, byte for byte at the same offset; decoded plus
    /// skimmed frames are all the frames; every frame starting after the last skimmed chunk is
    /// decoded; nothing is reported malformed.
    fn check_skim(mut d: StreamDecoder, stream: &[u8], size: usize, skim: std::ops::Range<usize>) {
        let mut full = Vec::new();
        let mut whole = StreamDecoder::new();
        whole.mode = d.mode;
        whole.push(Bytes::copy_from_slice(stream), &mut full);
        let full = frames_of(&full);
        let (mut out, mut skimmed, mut skim_end) = (Vec::new(), 0, 0);
        for (i, c) in stream.chunks(size).enumerate() {
            let c = Bytes::copy_from_slice(c);
            if skim.contains(&i) {
                let s = d.skim(&c);
                skimmed += s.frames;
                d.push(c.slice(s.bytes..), &mut out);
                skim_end = (i + 1) * size;
            } else {
                d.push(c, &mut out);
            }
        }
        let got = frames_of(&out);
        let ctx = format!("chunks of {size}, skimming {skim:?}");
        assert_eq!(d.offset(), stream.len() as u64, "{ctx}");
        assert_eq!(got.len() as u64 + skimmed, full.len() as u64, "{ctx}");
        for f in &got {
            assert!(
                full.contains(f),
                "{ctx}: {f:?} is not a frame of the stream"
            );
        }
        for f in full.iter().filter(|f| f.0 >= skim_end as u64) {
            assert!(got.contains(f), "{ctx}: frame at {} was not decoded", f.0);
        }
    }

    #[test]
    fn skimmed_chunks_keep_the_framing_exact() {
        let mut a10 = b"AMQP\x00\x01\x00\x00".to_vec();
        let mut a091 = b"AMQP\x00\x00\x09\x01".to_vec();
        for i in 0..60usize {
            let transfer =
                amqp10::described_list(amqp10::views::code::TRANSFER, vec![amqp10::Value::Uint(0)]);
            let payload = vec![b'x'; (i * 97) % 3000];
            a10.extend(amqp10::encode_frame(0, 1, Some(&transfer), &payload).unwrap());
            if i % 7 == 0 {
                a10.extend(amqp10::encode_frame(0, 0, None, &[]).unwrap());
            }
            let kind = if i % 5 == 0 {
                amqp091::FrameKind::Heartbeat
            } else {
                amqp091::FrameKind::Body(Bytes::from(payload))
            };
            amqp091::encode_frame(if i % 5 == 0 { 0 } else { 1 }, &kind, &mut a091);
        }
        for stream in [&a10, &a091] {
            for size in [1, 5, 64, 1000, 4096] {
                let n = stream.len().div_ceil(size);
                for skim in [1..2, 1..n / 2, n / 3..n / 3 + 3, n / 2..n, 2..n - 1] {
                    check_skim(StreamDecoder::new(), stream, size, skim);
                }
            }
        }
    }

    #[test]
    fn skimming_a_broken_frame_reports_it_as_pushing_does() {
        // A frame size below 8 while skimming: decoding takes over and loses framing there.
        let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp10);
        let mut out = Vec::new();
        let chunk = Bytes::from_static(&[0, 0, 0, 8, 2, 0, 0, 0, 0, 0, 0, 4, 2, 0, 0, 0]);
        let s = d.skim(&chunk);
        assert_eq!(
            s,
            Skimmed {
                frames: 1,
                bytes: 8,
                pending: 0,
                channels: SkimChannels::new(),
            }
        );
        d.push(chunk.slice(s.bytes..), &mut out);
        assert!(
            matches!(out[..], [Item::Undecodable { offset: 8, .. }]),
            "{out:?}"
        );
    }

    #[test]
    fn a_skim_names_the_channels_of_the_frames_it_passed_over() {
        // 0-9-1: bodies on channels 2 and 5, a heartbeat (no state), then a frame on channel
        // 7 cut by the chunk's end: its channel is read from its header.
        let mut stream = Vec::new();
        for ch in [2, 5, 2] {
            let body = amqp091::FrameKind::Body(Bytes::from_static(b"xyz"));
            amqp091::encode_frame(ch, &body, &mut stream);
        }
        amqp091::encode_frame(0, &amqp091::FrameKind::Heartbeat, &mut stream);
        let mut last = Vec::new();
        let body = amqp091::FrameKind::Body(Bytes::from(vec![b'x'; 100]));
        amqp091::encode_frame(7, &body, &mut last);
        stream.extend_from_slice(&last[..20]);
        let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp091);
        let s = d.skim(&Bytes::from(stream.clone()));
        assert_eq!((s.frames, s.bytes), (5, stream.len()));
        assert_eq!(s.channels.listed(), &[2, 5, 7]);
        // 1.0: a frame held incomplete from before the skim (its channel in the held bytes and
        // the chunk's); SASL frames belong to the connection (channel 0), empty frames to none.
        let transfer =
            amqp10::described_list(amqp10::views::code::TRANSFER, vec![amqp10::Value::Uint(0)]);
        let frame = amqp10::encode_frame(0, 3, Some(&transfer), &[0; 40]).unwrap();
        let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp10);
        feed(&mut d, &[&frame[..5]]);
        let s = d.skim(&Bytes::copy_from_slice(&frame[5..]));
        assert_eq!((s.frames, s.pending), (1, 5));
        assert_eq!(s.channels.listed(), &[3]);
        let outcome = amqp10::described_list(
            amqp10::views::code::SASL_OUTCOME,
            vec![amqp10::Value::Ubyte(0)],
        );
        let sasl = amqp10::encode_frame(1, 9, Some(&outcome), &[]).unwrap();
        let on = ProtocolId::Amqp10.frame_channel(&sasl);
        assert_eq!(on, crate::protocol::FrameChannel::On(0));
        let empty = amqp10::encode_frame(0, 4, None, &[]).unwrap();
        let on = ProtocolId::Amqp10.frame_channel(&empty);
        assert_eq!(on, crate::protocol::FrameChannel::Stateless);
    }

    /// Frames of every registered protocol, some with fields, a payload or a credential.
    fn sample_frames() -> Vec<(ProtocolId, Vec<u8>)> {
        let mut frames: Vec<_> = ProtocolId::ALL
            .iter()
            .map(|&id| (id, id.example_frame()))
            .collect();
        let transfer = amqp10::described_list(
            amqp10::views::code::TRANSFER,
            vec![amqp10::Value::Uint(7), amqp10::Value::Uint(3)],
        );
        let open = amqp10::described_list(
            amqp10::views::code::OPEN,
            vec![amqp10::Value::String("c1".into())],
        );
        let init = amqp10::described_list(
            amqp10::views::code::SASL_INIT,
            vec![
                amqp10::Value::Symbol(amqp10::Symbol("PLAIN".into())),
                amqp10::Value::Binary(Bytes::from_static(b"\0user\0secret")),
            ],
        );
        for (kind, body, payload) in [
            (0, &transfer, &b"hello"[..]),
            (0, &open, &[][..]),
            (1, &init, &[][..]),
        ] {
            let frame = amqp10::encode_frame(kind, 2, Some(body), payload).unwrap();
            frames.push((ProtocolId::Amqp10, frame));
        }
        // 0-9-1: basic.publish, its content header (content-type), its body, and
        // connection.start-ok with a PLAIN response.
        let frame_091 = |kind: u8, payload: &[u8]| {
            let mut f = vec![kind, 0, 1];
            f.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            f.extend_from_slice(payload);
            f.push(0xCE);
            (ProtocolId::Amqp091, f)
        };
        frames.push(frame_091(1, b"\0\x3c\0\x28\0\0\x03ex1\x02rk\0"));
        frames.push(frame_091(
            2,
            b"\0\x3c\0\0\0\0\0\0\0\0\0\x05\x80\0\x0atext/plain",
        ));
        frames.push(frame_091(
            1,
            b"\0\x0a\0\x0b\0\0\0\0\x05PLAIN\0\0\0\x0c\0user\0secret\x05en_US",
        ));
        let mut body = Vec::new();
        let kind = amqp091::FrameKind::Body(Bytes::from_static(b"hello"));
        amqp091::encode_frame(1, &kind, &mut body);
        frames.push((ProtocolId::Amqp091, body));
        frames
    }

    /// `a` and `b` are the same item: the same frame event (frame, message, bytes, offset),
    /// or the same malformed frame and error.
    fn same_item(a: &Item, b: &Item) -> bool {
        match (a, b) {
            (Item::Frame(x), Item::Frame(y)) => **x == **y,
            (
                Item::Malformed { offset, raw, error },
                Item::Malformed {
                    offset: o,
                    raw: r,
                    error: e,
                },
            ) => (offset, raw, error) == (o, r, e),
            _ => shape(std::slice::from_ref(a)) == shape(std::slice::from_ref(b)),
        }
    }

    #[test]
    fn frames_decoded_into_given_back_rooms_are_those_decoded_into_new_ones() {
        // Each protocol's sample frames, then each with one byte changed (some malformed), in
        // chunks of 1 to 97 bytes: a decoder given back every event it made (some still held
        // elsewhere, which it must not reuse) decodes what a decoder given none back does,
        // and the events held elsewhere are not changed by the reuse.
        for id in ProtocolId::ALL.iter().copied() {
            let mut stream = Vec::new();
            for (_, f) in sample_frames().into_iter().filter(|(p, _)| *p == id) {
                stream.extend_from_slice(&f);
                for at in [f.len() / 2, f.len() - 1] {
                    let mut changed = f.clone();
                    changed[at] ^= 0x5a;
                    if changed[0] != b'A' && id.frame_size(&changed) == Ok(Some(changed.len())) {
                        stream.extend_from_slice(&changed);
                    }
                }
                stream.extend_from_slice(&f);
            }
            for step in [1, 7, 40, 97] {
                let mut plain = StreamDecoder::assuming(id.header());
                let mut reusing = StreamDecoder::assuming(id.header());
                let mut kept: Vec<(Arc<FrameEvent>, FrameEvent)> = Vec::new();
                let mut made = 0;
                for chunk in stream.chunks(step) {
                    let (mut want, mut got) = (Vec::new(), Vec::new());
                    plain.push(Bytes::copy_from_slice(chunk), &mut want);
                    reusing.push(Bytes::copy_from_slice(chunk), &mut got);
                    assert_eq!(got.len(), want.len(), "{id:?} step {step}");
                    for (g, w) in got.into_iter().zip(&want) {
                        assert!(same_item(&g, w), "{id:?} step {step}: {g:?} vs {w:?}");
                        if let Item::Frame(fe) = g {
                            made += 1;
                            if made % 3 == 0 {
                                kept.push((fe.clone(), (*fe).clone()));
                            }
                            reusing.recycle(fe);
                        }
                    }
                }
                assert!(made > 2, "{id:?} step {step}: {made} frames");
                for (held, was) in &kept {
                    assert_eq!(**held, *was, "{id:?} step {step}");
                }
            }
        }
    }

    #[test]
    fn frames_decoded_into_their_event_are_those_decoded_by_value_malformed_or_not() {
        // Every frame of `sample_frames` with each byte set to a few values (those that keep
        // its size and spell no header): through the stream decoder, after a frame of the same
        // protocol, each gives the item its decode by value gives, with the same frame or the
        // same error; `decode_frame_into` gives the same frame or error too.
        let mut seen = std::collections::HashMap::new();
        for (id, good) in sample_frames() {
            let decoded = id.decode_frame_ref(&Bytes::from(good.clone()), 0);
            assert!(decoded.is_ok(), "{id:?} {good:x?}: {decoded:?}");
            for at in 0..good.len() {
                for v in [0x00, 0x01, 0x40, 0x7f, 0xa1, 0xce, 0xff, good[at] ^ 0x08] {
                    let mut raw = good.clone();
                    raw[at] = v;
                    if raw[0] == b'A' || id.frame_size(&raw) != Ok(Some(raw.len())) {
                        continue;
                    }
                    let raw = Bytes::from(raw);
                    let at_ = good.len() as u64;
                    let want = id.decode_frame_ref(&raw, at_);
                    let mut slot = MaybeUninit::<AnyFrame>::uninit();
                    match id.decode_frame_into(&raw, at_, &mut slot) {
                        // SAFETY: `Ok` means the slot was written.
                        Ok(()) => {
                            assert_eq!(Ok(unsafe { slot.assume_init() }), want, "{id:?} {raw:x?}")
                        }
                        Err(e) => assert_eq!(Err(e), want, "{id:?} {raw:x?}"),
                    }
                    let mut d = StreamDecoder::assuming(id.header());
                    let items = feed(&mut d, &[&good, &raw]);
                    assert_eq!(items.len(), 2, "{id:?} {raw:x?}: {items:?}");
                    assert!(matches!(&items[0], Item::Frame(fe) if fe.offset == 0));
                    let malformed = want.is_err();
                    match (&items[1], want) {
                        (Item::Frame(fe), Ok(frame)) => {
                            assert_eq!((fe.offset, &fe.raw, &fe.frame), (at_, &raw, &frame));
                            assert_eq!(fe.context, FrameContext::default());
                        }
                        (
                            Item::Malformed {
                                offset,
                                raw: r,
                                error,
                            },
                            Err(e),
                        ) => {
                            assert_eq!((*offset, r, &**error), (at_, &raw, &e));
                        }
                        (got, want) => panic!("{id:?} {raw:x?}: {got:?}, not {want:?}"),
                    }
                    *seen.entry((id.name(), malformed)).or_insert(0) += 1;
                }
            }
        }
        // Each protocol's frames decoded; those of each protocol that has malformed frames (the
        // toy's framing is all it checks) malformed too.
        let wanted = ProtocolId::ALL.iter().map(|id| (id.name(), false));
        let malformed = [ProtocolId::Amqp10, ProtocolId::Amqp091].map(|id| (id.name(), true));
        for key in wanted.chain(malformed) {
            assert!(seen.contains_key(&key), "{key:?}: {seen:?}");
        }
    }

    #[test]
    fn frame_heads_decoded_into_their_event_are_those_decoded_by_value() {
        // A frame larger than the inspection budget is decoded from its head, into its event
        // the same way.
        for (id, raw) in sample_frames() {
            let head = raw.len() - 1;
            if head < 8 {
                continue;
            }
            let limits = Limits {
                frame: head,
                ..Limits::default()
            };
            let mut d = StreamDecoder::assuming(id.header()).with_limits(limits);
            let items = feed(&mut d, &[&raw]);
            let want = id.decode_head(Bytes::copy_from_slice(&raw[..head]), raw.len() as u64, 0);
            match (&items[..], want) {
                ([Item::Frame(fe)], Ok(frame)) => assert_eq!(fe.frame, frame, "{id:?}"),
                ([Item::Malformed { error, .. }], Err(e)) => assert_eq!(**error, e, "{id:?}"),
                (got, want) => panic!("{id:?}: {got:?}, not {want:?}"),
            }
            assert_eq!(d.streamed_frame(), None);
        }
    }
}
