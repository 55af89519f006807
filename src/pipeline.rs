//! The one path every byte takes, the same live and offline: a source's [`Chunk`](crate::event::Chunk)s go through a
//! per-connection [`Inspector`] (decode, mask credentials, track state) and come out as
//! [`Event`]s for the sinks.
//!
//! Sans-IO: no tokio, no clock. The proxy and the capture readers are thin shells around it.

use std::sync::Arc;

use bytes::Bytes;

use crate::event::Violation;
use crate::event::{CloseInfo, CloseReason, ConnId, Dir, Event, EventKind, Timestamp};
use crate::protocol::{Item, StreamDecoder};
use crate::state::{ConnTracker, rules};

mod chunk;
mod held;
mod undecoded;
pub use crate::event::{Render, Sink};
use held::Held;

/// The least event time between two [`EventKind::State`] events of one connection (µs),
/// unless its state name changes.
pub const STATE_INTERVAL_US: i64 = 50_000;

pub use crate::mask::MASK_BYTE;
use crate::mask::Masker;

/// Options that change what the inspector emits.
#[derive(Clone, Debug)]
pub struct InspectOptions {
    /// Emit credentials unmasked (`--show-secrets`).
    pub show_secrets: bool,
    /// Emit `Data` events (the relayed bytes, masked). Only the pcap sink and the TUI use them;
    /// without them the inspector holds no bytes at all.
    pub emit_data: bool,
    /// What the inspection of one connection may hold (`--inspect-memory`), in bytes: a frame
    /// larger than a quarter of it is decoded from its head and the rest streamed to the sinks;
    /// the messages being assembled of each direction keep at most a quarter.
    pub inspect_memory: usize,
    /// Message body bytes kept (`--max-body`); the rest is counted.
    pub max_body: usize,
    /// Publish a `State` event after every frame that changed the tracked state, not only at
    /// the end of a batch or every [`STATE_INTERVAL_US`]: a replay into the TUI shows the state
    /// as of the selected frame.
    pub state_each_frame: bool,
    /// Publish `State` events at all. A snapshot copies everything tracked (every link and
    /// channel), so the paths with no reader of them (`check`, `stats`, a replay or a proxy
    /// without the TUI) make none: their cost then never grows with what is outstanding.
    pub emit_state: bool,
    /// The diagnoses' thresholds (`None`: the catalog's defaults).
    pub diagnosis: Option<Arc<crate::state::diagnose::Thresholds>>,
    /// Run the diagnoser at all (`--no-diagnoses` clears it): without it no frame, tick, gap
    /// or close is looked at for stalls and no `Diagnosis` event is made; violations, state
    /// and statistics are the same either way.
    pub diagnoses: bool,
    /// Send a `Frame` event for every frame. Without it (`check`, whose verdict reads a frame
    /// only for where its violations are), a frame goes out only when violations follow it;
    /// the others are tracked, judged and diagnosed all the same, counted
    /// ([`Inspector::take_frames_held_back`]), and their events' room reused.
    pub emit_frames: bool,
}

impl InspectOptions {
    /// The defaults: credentials masked, `Data` events, the default budget and body size.
    pub const DEFAULT: InspectOptions = InspectOptions {
        show_secrets: false,
        emit_data: true,
        inspect_memory: crate::codec::limits::DEFAULT_INSPECT_MEMORY,
        max_body: crate::codec::limits::DEFAULT_MAX_BODY,
        state_each_frame: false,
        emit_state: true,
        diagnosis: None,
        diagnoses: true,
        emit_frames: true,
    };

    /// What each direction's decoder may hold.
    pub fn limits(&self) -> crate::codec::Limits {
        crate::codec::Limits::of_budget(self.inspect_memory, self.max_body)
    }
}

impl Default for InspectOptions {
    fn default() -> Self {
        InspectOptions::DEFAULT
    }
}

/// Per-direction state of the inspector.
#[derive(Debug, Default)]
struct Side {
    decoder: StreamDecoder,
    /// Credential masking of what the decoder yields.
    masker: Masker,
    /// Bytes the decoder is not done with (the tail of an incomplete frame).
    held: Held,
    /// Absolute offset of `held[0]`.
    held_offset: u64,
    /// Bytes before this offset are in a `Header`, `Frame` or `Undecoded` event.
    covered: u64,
    /// Bytes before this offset were sent as `Data` (an incomplete frame's, at a flush, too).
    data_sent: u64,
    /// The last protocol header (what protocol its undecoded bytes are judged in).
    header: Option<crate::codec::ProtocolHeader>,
    /// Total bytes seen.
    total: u64,
    /// The run of skimmed bytes not yet reported (see [`Inspector::skim`]).
    skim: Option<SkimRun>,
    /// Bytes of a frame decoded from its head that are masked as they stream past (it may hold
    /// a credential): the absolute range.
    stream_mask: Option<(u64, u64)>,
    /// The bytes of a frame decoded from its head that stream past undecoded (absolute range):
    /// searched for URL passwords as they pass, as a whole frame's payload is.
    streaming: Option<(u64, u64)>,
    /// The sender has closed this direction (FIN).
    fin: bool,
}

/// Bytes of one direction passed over undecoded, reported as one `Gap` event.
#[derive(Debug)]
struct SkimRun {
    offset: u64,
    len: u64,
    frames: u64,
    since: Timestamp,
    /// The channels of the frames passed over (named in the gap's reason).
    channels: crate::protocol::SkimChannels,
}

/// Longest a run of skimmed bytes goes unreported while skimming lasts (µs).
const SKIM_REPORT_EVERY_US: i64 = 1_000_000;

impl Side {
    /// Report the run of skimmed bytes, if any, as a `Gap`.
    fn end_skim(&mut self, conn: ConnId, dir: Dir, ts: Timestamp, out: &mut Vec<Event>) {
        if let Some(run) = self.skim.take().filter(|r| r.len > 0) {
            out.push(Event {
                conn,
                ts,
                kind: EventKind::Gap {
                    dir,
                    offset: run.offset,
                    len: run.len,
                    reason: skim_reason(&run),
                },
            });
        }
    }
}

/// A skim's gap reason: how many frames, and on which channels when any carried state
/// (`... (12 frame(s) not decoded) on channels 1, 2`).
fn skim_reason(run: &SkimRun) -> String {
    let mut reason = format!(
        "skimmed: the inspection fell behind the relay ({} frame(s) not decoded)",
        run.frames
    );
    let on = run.channels.describe();
    if !on.is_empty() {
        reason.push(' ');
        reason.push_str(&on);
    }
    reason
}

/// Decodes both directions of one connection and turns them into events.
#[derive(Debug)]
pub struct Inspector {
    conn: ConnId,
    opts: InspectOptions,
    sides: [Side; 2],
    items: Vec<Item>,
    tracker: ConnTracker,
    /// What the state layer tells of each frame (its flow, delivery, settlements).
    contexts: crate::state::Contexts,
    violations: Vec<Violation>,
    /// The client's first protocol header.
    client_header: Option<crate::codec::ProtocolHeader>,
    /// A link over which a credential may pass was attached (AMQP 1.0's `$cbs`,
    /// [`crate::protocol::ProtocolFrame::attaches_token_link`]): an undecoded transfer may
    /// carry a token.
    cbs: bool,
    /// The tracker saw something since the last `State` event.
    state_dirty: bool,
    /// The state name and time of the last `State` event.
    state_last: Option<(String, Timestamp)>,
    /// The latest time of the bytes taken so far.
    latest_ts: Timestamp,
    /// Why flows are stuck: fed each frame with its context, and the clock (`None`: diagnoses
    /// are off, [`InspectOptions::diagnoses`]).
    diagnoser: Option<crate::state::diagnose::Diagnoser>,
    /// Diagnoses made and not yet emitted.
    diagnoses: Vec<crate::event::Diagnosis>,
    /// Frames sent as no event ([`InspectOptions::emit_frames`]) since the last
    /// [`Inspector::take_frames_held_back`].
    frames_held_back: u64,
}

impl Inspector {
    /// An inspector for connection `conn`.
    pub fn new(conn: ConnId, opts: InspectOptions) -> Self {
        let limits = opts.diagnosis.as_deref().cloned().unwrap_or_default();
        let diagnoser = opts
            .diagnoses
            .then(|| crate::state::diagnose::Diagnoser::new(conn, limits));
        let mut sides: [Side; 2] = Default::default();
        for (side, dir) in sides.iter_mut().zip([Dir::C2S, Dir::S2C]) {
            side.decoder = StreamDecoder::new().with_limits(opts.limits()).in_dir(dir);
        }
        Inspector {
            conn,
            opts,
            sides,
            items: Vec::new(),
            tracker: ConnTracker::new(),
            contexts: Default::default(),
            violations: Vec::new(),
            client_header: None,
            cbs: false,
            state_dirty: false,
            state_last: None,
            latest_ts: Timestamp(0),
            diagnoser,
            diagnoses: Vec::new(),
            frames_held_back: 0,
        }
    }

    /// The frames sent as no event since the last call ([`InspectOptions::emit_frames`]):
    /// whoever counts frames from events adds them.
    pub fn take_frames_held_back(&mut self) -> u64 {
        std::mem::take(&mut self.frames_held_back)
    }

    /// The clock reads `now` (live: the driver's clock; offline: a capture time): diagnoses
    /// whose condition held its threshold by then start. A time before the latest bytes
    /// taken is taken as theirs (a tick never runs the connection's clock backwards).
    pub fn tick(&mut self, now: Timestamp, out: &mut Vec<Event>) {
        let now = now.max(self.latest_ts);
        if let Some(d) = &mut self.diagnoser {
            d.tick(now, &mut self.diagnoses);
        }
        self.push_diagnoses(out);
    }

    /// The diagnoses made so far go out as events. Called after every frame, and there are
    /// rarely any: the test is made in place, the work out of line.
    #[inline(always)]
    fn push_diagnoses(&mut self, out: &mut Vec<Event>) {
        if !self.diagnoses.is_empty() {
            self.push_made_diagnoses(out);
        }
    }

    /// [`Inspector::push_diagnoses`] when there are some.
    #[inline(never)]
    fn push_made_diagnoses(&mut self, out: &mut Vec<Event>) {
        let conn = self.conn;
        out.extend(self.diagnoses.drain(..).map(|d| Event {
            conn,
            ts: d.ended.as_ref().map_or(d.at, |e| e.ts),
            kind: EventKind::Diagnosis(Arc::new(d)),
        }));
    }

    /// What undecoded bytes of `dir` may be, for masking them.
    fn stream_kind(&self, dir: Dir) -> undecoded::StreamKind {
        undecoded::StreamKind::of(&self.sides[dir.index()], dir, self.client_header, self.cbs)
    }

    /// Flush time: the bytes of incomplete frames go out as `Data` now, except where they may
    /// hold a credential (see `pipeline/undecoded.rs`), so a capture flushed now holds every relayed byte.
    pub fn flush_data(&mut self, ts: Timestamp, out: &mut Vec<Event>) {
        if !self.opts.emit_data {
            return;
        }
        for dir in [Dir::C2S, Dir::S2C] {
            let kind = self.stream_kind(dir);
            let to = undecoded::To {
                conn: self.conn,
                dir,
                ts,
            };
            self.sides[dir.index()].data_so_far(kind, to, out);
        }
    }

    /// The connection number.
    pub fn conn(&self) -> ConnId {
        self.conn
    }

    /// Bytes seen so far in `dir`.
    pub fn bytes_seen(&self, dir: Dir) -> u64 {
        self.sides[dir.index()].total
    }

    /// Take a chunk of relayed bytes without decoding the frames in it, for when the inspection
    /// is behind the relay and every sink can do without some frames (the TUI alone). Frames
    /// are passed over by their sizes, so decoding resumes exactly at the next frame the
    /// inspection has time for; the state tracker is told, as for a capture gap, so it invents
    /// nothing; a `Gap` event says how much went undecoded (when decoding resumes, at close,
    /// and at least once a second meanwhile). Nothing of a skimmed frame is emitted, so no
    /// secret in it can show. What cannot be skimmed (a protocol header, a malformed frame,
    /// the rest of an incomplete frame) is decoded as by [`Inspector::chunk`].
    pub fn skim(&mut self, dir: Dir, ts: Timestamp, bytes: Bytes, out: &mut Vec<Event>) {
        self.latest_ts = self.latest_ts.max(ts);
        let conn = self.conn;
        let side = &mut self.sides[dir.index()];
        let skimmed = side.decoder.skim(&bytes);
        if skimmed.bytes > 0 || skimmed.pending > 0 {
            // The incomplete frame held from before is passed over too: not shown either.
            let before = skimmed.pending as u64;
            let n = skimmed.bytes as u64;
            if side.skim.is_none() {
                self.contexts.gap(dir);
                if let Some(d) = &mut self.diagnoser {
                    d.gap(dir, ts, &mut self.diagnoses);
                }
                self.state_dirty = true;
            }
            // The tracker forgets only what frames on the channels passed over could change.
            self.tracker.skimmed(dir, ts, &skimmed.channels);
            let run = side.skim.get_or_insert(SkimRun {
                offset: side.total - before,
                len: 0,
                frames: 0,
                since: ts,
                channels: Default::default(),
            });
            run.len += before + n;
            run.frames += skimmed.frames;
            run.channels.merge(&skimmed.channels);
            let overdue = ts.0.saturating_sub(run.since.0) >= SKIM_REPORT_EVERY_US;
            side.total += n;
            side.held.drop_front(skimmed.pending);
            side.held_offset += before + n;
            side.covered = side.covered.max(side.held_offset);
            side.data_sent = side.data_sent.max(side.held_offset);
            if overdue {
                side.end_skim(conn, dir, ts, out);
            }
        }
        self.push_diagnoses(out);
        if skimmed.bytes < bytes.len() {
            self.chunk(dir, ts, bytes.slice(skimmed.bytes..), out);
        }
    }

    /// A protocol's TLS upgrade: `raw` (its upgrade header, AMQP's `AMQP 2 1 0 0`) was relayed in `dir` and TLS
    /// follows. The proxy terminates that TLS and hands over the plaintext, which starts with a
    /// protocol header of its own: report the TLS header, then expect a header again.
    pub fn tls_header(&mut self, dir: Dir, ts: Timestamp, raw: Bytes, out: &mut Vec<Event>) {
        let conn = self.conn;
        // Whatever was held before (nothing, for a well-behaved peer) goes out, masked if it
        // may hold a credential.
        self.release_held(dir, ts, out);
        let side = &mut self.sides[dir.index()];
        let emit_data = self.opts.emit_data;
        let offset = side.total;
        // Bytes too few to tell are taken as the upgrade header they were relayed as.
        let header = crate::protocol::ProtocolId::sniff_header(&raw)
            .or_else(crate::protocol::ProtocolId::tls_upgrade)
            .unwrap_or(crate::codec::ProtocolHeader::NotAmqp);
        side.total += raw.len() as u64;
        side.held_offset = side.total;
        side.covered = side.total;
        side.data_sent = side.total;
        side.decoder = StreamDecoder::new()
            .with_limits(self.opts.limits())
            .in_dir(dir)
            .starting_at(side.total);
        side.masker = Masker::new(None);
        out.push(Event {
            conn,
            ts,
            kind: EventKind::Header {
                dir,
                offset,
                header,
                raw: raw.clone(),
            },
        });
        // The negotiation sees it as any header: a broker that refuses it is judged by its
        // answer, and one that accepts starts a new exchange inside TLS.
        self.state_dirty = true;
        self.tracker
            .header(dir, offset, header, ts, &mut self.violations);
        for v in self.violations.drain(..) {
            out.push(Event {
                conn,
                ts,
                kind: EventKind::Violation(v),
            });
        }
        if emit_data {
            out.push(Event {
                conn,
                ts,
                kind: EventKind::Data {
                    dir,
                    offset,
                    bytes: raw,
                },
            });
        }
    }

    /// Bytes of `dir` were not seen (capture loss, a capture starting mid-connection): emit a
    /// gap, and continue decoding at `offset + len`. With `resync`, the bytes after the gap start
    /// at a frame boundary of that protocol; without, a protocol header is expected. The state
    /// tracker is told, so it does not invent violations for what it did not see.
    #[allow(clippy::too_many_arguments)]
    pub fn gap(
        &mut self,
        dir: Dir,
        ts: Timestamp,
        offset: u64,
        len: u64,
        reason: String,
        resync: Option<crate::codec::ProtocolHeader>,
        out: &mut Vec<Event>,
    ) {
        let conn = self.conn;
        self.latest_ts = self.latest_ts.max(ts);
        self.release_held(dir, ts, out);
        let side = &mut self.sides[dir.index()];
        let resume = offset.saturating_add(len);
        side.decoder = match resync {
            Some(p) => StreamDecoder::assuming(p),
            None => StreamDecoder::new(),
        }
        .with_limits(self.opts.limits())
        .in_dir(dir)
        .starting_at(resume);
        side.masker = Masker::new(resync);
        side.held_offset = resume;
        side.covered = resume;
        side.data_sent = resume;
        if let Some(p) = resync {
            side.note_header(p);
        }
        side.total = side.total.saturating_add(len);
        self.tracker.gap(dir);
        self.contexts.gap(dir);
        if let Some(d) = &mut self.diagnoser {
            d.gap(dir, ts, &mut self.diagnoses);
        }
        self.push_diagnoses(out);
        self.state_dirty = true;
        out.push(Event {
            conn,
            ts,
            kind: EventKind::Gap {
                dir,
                offset,
                len,
                reason,
            },
        });
    }

    /// Every byte held of `dir` goes out (`Undecoded`, and `Data` with `emit_data`), an
    /// incomplete frame that may hold a credential masked from its frame header on.
    fn release_held(&mut self, dir: Dir, ts: Timestamp, out: &mut Vec<Event>) {
        let kind = self.stream_kind(dir);
        let to = undecoded::To {
            conn: self.conn,
            dir,
            ts,
        };
        let (show, emit) = (self.opts.show_secrets, self.opts.emit_data);
        self.sides[dir.index()].release_held(kind, show, emit, to, out);
    }

    /// The state tracker (for display: state name, snapshot).
    pub fn tracker(&self) -> &ConnTracker {
        &self.tracker
    }

    /// The latest time of the bytes taken so far (the time to publish the state at between
    /// chunks: a later clock reading could be newer than a chunk still queued, whose state
    /// would then look older than the one shown).
    pub fn latest_ts(&self) -> Timestamp {
        self.latest_ts
    }

    /// Emit a `State` event if the tracker saw anything since the last one. The driver calls
    /// this when it has nothing more for the connection for now (the end of a batch, with
    /// [`Inspector::latest_ts`]), so that the state shown after a burst is the state after its
    /// last frame.
    pub fn publish_state(&mut self, ts: Timestamp, out: &mut Vec<Event>) {
        state_event(
            self.opts.emit_state,
            &self.tracker,
            &mut self.state_dirty,
            &mut self.state_last,
            self.conn,
            ts,
            out,
        );
    }

    /// [`Inspector::publish_state`], at most every [`STATE_INTERVAL_US`] of event time unless
    /// the state name changed.
    fn state_throttled(&mut self, ts: Timestamp, out: &mut Vec<Event>) {
        if !self.state_dirty {
            return;
        }
        if let Some((name, at)) = &self.state_last
            && ts.0.saturating_sub(at.0) < STATE_INTERVAL_US
            && *name == self.tracker.state_name()
        {
            return;
        }
        self.publish_state(ts, out);
    }

    /// `dir`'s sender closed its side of the connection (TCP FIN, TLS close_notify): nothing
    /// follows in `dir`. The bytes of an incomplete frame held so far go out now, as at a
    /// close (`Undecoded`, and `Data`; masked from the frame header on where they may hold a
    /// credential: the frame can no longer complete), then a `Fin` event at the end of the
    /// direction's stream; so every capture has each byte of `dir` before its FIN, and places
    /// the FIN where it happened. Judges nothing: the decoder keeps the incomplete frame, and
    /// the close judges it (`codec.truncated-frame`) as it judges how the connection ended. A
    /// second FIN of the same direction is ignored.
    pub fn fin(&mut self, dir: Dir, ts: Timestamp, out: &mut Vec<Event>) {
        self.latest_ts = self.latest_ts.max(ts);
        let conn = self.conn;
        let side = &mut self.sides[dir.index()];
        if side.fin {
            return;
        }
        side.fin = true;
        side.end_skim(conn, dir, ts, out);
        self.release_held(dir, ts, out);
        out.push(Event {
            conn,
            ts,
            kind: EventKind::Fin {
                dir,
                offset: self.sides[dir.index()].total,
            },
        });
    }

    /// The connection ended; flush held bytes and emit the close event.
    pub fn close(&mut self, ts: Timestamp, reason: CloseReason, out: &mut Vec<Event>) {
        for dir in [Dir::C2S, Dir::S2C] {
            self.sides[dir.index()].end_skim(self.conn, dir, ts, out);
        }
        let ended = matches!(
            reason,
            crate::event::CloseReason::CaptureEnded | crate::event::CloseReason::ProxyStopped
        );
        let why = if ended {
            crate::event::EndWhy::CaptureEnded
        } else {
            crate::event::EndWhy::ScopeClosed
        };
        if let Some(d) = &mut self.diagnoser {
            d.close(ts, why, &mut self.diagnoses);
        }
        self.push_diagnoses(out);
        let ending = crate::state::Ending::of(&reason);
        self.tracker.close(ts, ending, &mut self.violations);
        for v in self.violations.drain(..) {
            out.push(Event {
                conn: self.conn,
                ts,
                kind: EventKind::Violation(v),
            });
        }
        self.publish_state(ts, out);
        for dir in [Dir::C2S, Dir::S2C] {
            let side = &mut self.sides[dir.index()];
            // Judged from the decoder, not from the held bytes: without `Data` events
            // (`check`) nothing is held, and a stream cut inside a frame is still a finding.
            let partial = side.decoder.buffered();
            if let Some((start, missing)) = side.decoder.streamed_frame() {
                out.push(Event {
                    conn: self.conn,
                    ts,
                    kind: EventKind::Violation(rules::CODEC_TRUNCATED_FRAME.violation(
                        dir,
                        start,
                        format!(
                            "stream ended inside a frame decoded from its head \
                             ({missing} bytes of it missing)"
                        ),
                    )),
                });
            }
            if let Some((start, missing)) = side.decoder.skimmed_frame() {
                out.push(Event {
                    conn: self.conn,
                    ts,
                    kind: EventKind::Violation(rules::CODEC_TRUNCATED_FRAME.violation(
                        dir,
                        start,
                        format!(
                            "stream ended inside a frame passed over while skimming \
                             ({missing} bytes of it missing)"
                        ),
                    )),
                });
            }
            if partial > 0 {
                out.push(Event {
                    conn: self.conn,
                    ts,
                    kind: EventKind::Violation(rules::CODEC_TRUNCATED_FRAME.violation(
                        dir,
                        side.decoder.offset() - partial as u64,
                        format!("stream ended inside a frame ({partial} bytes of it seen)"),
                    )),
                });
            }
        }
        for dir in [Dir::C2S, Dir::S2C] {
            self.release_held(dir, ts, out);
        }
        out.push(Event {
            conn: self.conn,
            ts,
            kind: EventKind::Close(CloseInfo {
                reason,
                bytes_c2s: self.sides[0].total,
                bytes_s2c: self.sides[1].total,
            }),
        });
    }
}

/// A `State` event of `tracker` as of `ts` if it saw anything since the last one (`dirty`),
/// remembering what was published (`last`: the name and when, for the throttle).
fn state_event(
    emit: bool,
    tracker: &ConnTracker,
    dirty: &mut bool,
    last: &mut Option<(String, Timestamp)>,
    conn: ConnId,
    ts: Timestamp,
    out: &mut Vec<Event>,
) {
    if !std::mem::take(dirty) || !emit {
        return;
    }
    let snapshot = tracker.snapshot();
    *last = Some((snapshot.name.clone(), ts));
    out.push(Event {
        conn,
        ts,
        kind: EventKind::State(Arc::new(snapshot)),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_091_server_answering_without_a_header_is_decoded() {
        let mut insp = Inspector::new(1, InspectOptions::default());
        let mut out = Vec::new();
        insp.chunk(
            Dir::C2S,
            Timestamp(0),
            Bytes::from_static(b"AMQP\x00\x00\x09\x01"),
            &mut out,
        );
        // A heartbeat frame from the server.
        insp.chunk(
            Dir::S2C,
            Timestamp(1),
            Bytes::from_static(&[8, 0, 0, 0, 0, 0, 0, 0xce]),
            &mut out,
        );
        let names: Vec<&str> = out
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Frame(f) => Some(f.frame.name()),
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["heartbeat"], "{out:?}");
        assert!(
            !out.iter()
                .any(|e| matches!(e.kind, EventKind::Violation(_)))
        );
    }

    #[test]
    fn without_emit_data_no_bytes_are_held_or_emitted() {
        let opts = InspectOptions {
            show_secrets: false,
            emit_data: false,
            ..InspectOptions::DEFAULT
        };
        let mut insp = Inspector::new(1, opts);
        let mut out = Vec::new();
        let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 0]);
        insp.chunk(
            Dir::C2S,
            Timestamp(0),
            Bytes::copy_from_slice(&stream[..11]),
            &mut out,
        );
        insp.chunk(
            Dir::C2S,
            Timestamp(1),
            Bytes::copy_from_slice(&stream[11..]),
            &mut out,
        );
        assert!(!out.iter().any(|e| matches!(e.kind, EventKind::Data { .. })));
        assert_eq!(
            out.iter()
                .filter(|e| matches!(e.kind, EventKind::Frame(_)))
                .count(),
            1
        );
        assert!(insp.sides[0].held.is_empty());
    }

    #[test]
    fn a_gap_resumes_decoding_at_the_right_offset() {
        let mut insp = Inspector::new(1, InspectOptions::default());
        let mut out = Vec::new();
        // 100 bytes of AMQP 1.0 missed, then two empty frames.
        insp.gap(
            Dir::S2C,
            Timestamp(0),
            0,
            100,
            "mid-stream".into(),
            Some(crate::codec::ProtocolHeader::Amqp10),
            &mut out,
        );
        let frames = [0u8, 0, 0, 8, 2, 0, 0, 0, 0, 0, 0, 8, 2, 0, 0, 0];
        insp.chunk(
            Dir::S2C,
            Timestamp(1),
            Bytes::copy_from_slice(&frames),
            &mut out,
        );
        assert!(matches!(
            out[0].kind,
            EventKind::Gap {
                offset: 0,
                len: 100,
                ..
            }
        ));
        let data: Vec<u64> = out
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Data { offset, .. } => Some(*offset),
                _ => None,
            })
            .collect();
        assert_eq!(data, vec![100]);
        assert!(
            !out.iter()
                .any(|e| matches!(e.kind, EventKind::Violation(_))),
            "{out:?}"
        );
        assert_eq!(insp.bytes_seen(Dir::S2C), 116);
    }

    /// A client stream inspected in two chunks split at `split` (the second skimmed when
    /// `skim`), then closed.
    fn two_chunks(stream: &[u8], split: usize, skim: bool) -> Vec<Event> {
        let mut insp = Inspector::new(1, InspectOptions::default());
        let mut out = Vec::new();
        let (first, rest) = stream.split_at(split);
        insp.chunk(
            Dir::C2S,
            Timestamp(0),
            Bytes::copy_from_slice(first),
            &mut out,
        );
        let rest = Bytes::copy_from_slice(rest);
        if skim {
            insp.skim(Dir::C2S, Timestamp(1), rest, &mut out);
        } else {
            insp.chunk(Dir::C2S, Timestamp(1), rest, &mut out);
        }
        insp.close(Timestamp(2), "test".into(), &mut out);
        out
    }

    /// The `codec.truncated-frame` violations among `events`.
    fn truncations(events: &[Event]) -> Vec<&crate::event::Violation> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Violation(v) if v.rule == "codec.truncated-frame" => Some(v),
                _ => None,
            })
            .collect()
    }

    fn data_bytes(events: &[Event], dir: Dir) -> Vec<u8> {
        let mut out = Vec::new();
        for e in events {
            if let EventKind::Data {
                dir: d,
                offset,
                bytes,
            } = &e.kind
                && *d == dir
            {
                assert_eq!(*offset as usize, out.len(), "data events are contiguous");
                out.extend_from_slice(bytes);
            }
        }
        out
    }

    #[test]
    fn every_byte_is_emitted_once_in_order_whatever_the_split() {
        let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 0]);
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 1]);
        stream.extend_from_slice(&[0, 0, 0]); // an incomplete frame at the end
        for split in 1..stream.len() {
            let out = two_chunks(&stream, split, false);
            assert_eq!(data_bytes(&out, Dir::C2S), stream, "split at {split}");
            assert_eq!(truncations(&out).len(), 1, "split at {split}");
            match &out.last().unwrap().kind {
                EventKind::Close(c) => assert_eq!(c.bytes_c2s, stream.len() as u64),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_stream_cut_inside_a_skimmed_frame_is_reported_where_the_frame_starts() {
        let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 0]);
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 0]);
        stream.extend_from_slice(&[0, 0, 0, 20, 2, 0, 0, 0, 1, 2]); // 10 bytes of a 20-byte frame
        // Cut anywhere after the header: the rest is skimmed, the cut frame (at 24) passed
        // over from its start or from the part of it already held.
        for split in 8..stream.len() {
            let out = two_chunks(&stream, split, true);
            let v = truncations(&out);
            assert_eq!(v.len(), 1, "split at {split}: {out:?}");
            assert_eq!(v[0].offset, 24, "split at {split}");
            assert!(
                v[0].message.contains("10 bytes of it missing"),
                "{}",
                v[0].message
            );
        }
    }

    #[test]
    fn a_stream_cut_inside_a_frame_is_reported_without_data_events_too() {
        // What `check` runs: no `Data` events, so the inspector holds no bytes.
        let mut stream = b"AMQP\x00\x01\x00\x00".to_vec();
        stream.extend_from_slice(&[0, 0, 0, 8, 2, 0, 0, 0]);
        stream.extend_from_slice(&[0, 0, 0, 20, 2, 0]); // 6 bytes of a 20-byte frame
        let opts = InspectOptions {
            show_secrets: false,
            emit_data: false,
            ..InspectOptions::DEFAULT
        };
        let mut insp = Inspector::new(1, opts);
        let mut out = Vec::new();
        insp.chunk(Dir::C2S, Timestamp(0), Bytes::from(stream), &mut out);
        insp.close(Timestamp(1), "test".into(), &mut out);
        let v = truncations(&out);
        assert_eq!(v.len(), 1, "{out:?}");
        assert_eq!(
            v[0].offset, 16,
            "the cut frame starts after the header and one frame"
        );
        assert!(v[0].message.contains("6 bytes"), "{}", v[0].message);
        assert!(!out.iter().any(|e| matches!(e.kind, EventKind::Data { .. })));
    }
}
