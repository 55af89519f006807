//! One chunk of relayed bytes through the [`Inspector`]: taken into the direction's decoder,
//! each decoded item masked, turned into its event and tracked, then the bytes the decoder is
//! done with committed.

use std::sync::Arc;

use bytes::Bytes;

use super::{Inspector, SkimRun, undecoded};
use crate::event::{Dir, Event, EventKind, Timestamp, Violation};
use crate::mask::Masker;
use crate::protocol::{FrameEvent, Item, ProtocolId, StreamDecoder};
use crate::state::{ConnTracker, rules};

/// Absolute byte ranges of one direction not to show (credentials).
type Secrets = Vec<(u64, u64)>;

impl Inspector {
    /// Take a chunk of relayed bytes; append the resulting events to `out`.
    pub fn chunk(&mut self, dir: Dir, ts: Timestamp, bytes: Bytes, out: &mut Vec<Event>) {
        self.latest_ts = self.latest_ts.max(ts);
        // The chunk's time advances the connection's clock first: what was due by then
        // starts before its frames can clear it.
        if let Some(d) = &mut self.diagnoser {
            d.tick(ts, &mut self.diagnoses);
        }
        self.push_diagnoses(out);
        self.expect_headerless_server(dir);
        self.decode_chunk(dir, ts, bytes, out);
        let mut secrets = self.item_secrets(dir);
        let mut items = std::mem::take(&mut self.items);
        for item in items.drain(..) {
            self.item(dir, ts, item, &mut secrets, out);
        }
        self.items = items;
        self.chunk_done(dir, ts, secrets, out);
    }

    /// A server of a protocol that accepts without a header of its own (AMQP 0-9-1 §4.2.2,
    /// [`ProtocolId::answers_with_header`]) answers the client's header with frames: once the
    /// client has asked for it, expect its frames.
    fn expect_headerless_server(&mut self, dir: Dir) {
        let Some(id) = self.client_header.and_then(ProtocolId::framed_after) else {
            return;
        };
        if dir == Dir::S2C && self.sides[1].decoder.at_start() && !id.answers_with_header() {
            let header = id.header();
            self.sides[1].decoder = StreamDecoder::assuming(header)
                .with_limits(self.opts.limits())
                .in_dir(Dir::S2C);
            self.sides[1].masker = Masker::new(Some(header));
        }
    }

    /// Account for `bytes` in `dir` (the end of a skimmed frame goes to the skimmed run) and
    /// decode them into `self.items`.
    fn decode_chunk(&mut self, dir: Dir, ts: Timestamp, bytes: Bytes, out: &mut Vec<Event>) {
        let conn = self.conn;
        let side = &mut self.sides[dir.index()];
        let start = side.total;
        side.total += bytes.len() as u64;
        // The end of a skimmed frame is passed over, not decoded, nor shown; it belongs to the
        // skimmed run (a new one if the last was already reported).
        let skip = side.decoder.skipping().min(bytes.len() as u64);
        if skip > 0 {
            side.skim
                .get_or_insert(SkimRun {
                    offset: start,
                    len: 0,
                    frames: 0,
                    since: ts,
                    channels: Default::default(),
                })
                .len += skip;
        }
        side.held_offset += skip;
        side.covered = side.covered.max(side.held_offset);
        side.data_sent = side.data_sent.max(side.held_offset);
        side.held.push(bytes.slice(skip as usize..));
        self.items.clear();
        side.decoder.push(bytes, &mut self.items);
        // Decoding resumed: report what was skimmed before it (a chunk that only completes
        // nothing, e.g. a frame header cut short, does not end the run).
        if !self.items.is_empty() {
            side.end_skim(conn, dir, ts, out);
        }
    }

    /// Credentials are masked before anything of the items is shown or written: the ranges
    /// masked in the decoded items, and what follows lost framing or streams past masked.
    fn item_secrets(&mut self, dir: Dir) -> Secrets {
        let mut secrets = Secrets::new();
        if !self.opts.show_secrets {
            let side = &mut self.sides[dir.index()];
            let mut ranges = Vec::new();
            side.masker
                .items(&side.decoder, &mut self.items, &mut ranges);
            secrets.extend(ranges.into_iter().map(|r| (r.start, r.end)));
            secrets.extend(side.masker.lost_from().map(|l| (l, u64::MAX)));
            secrets.extend(side.stream_mask);
        }
        secrets
    }

    /// One decoded item of `dir`: the undecoded bytes before it, then its event, tracked, and
    /// the violations it caused.
    fn item(
        &mut self,
        dir: Dir,
        ts: Timestamp,
        item: Item,
        secrets: &mut Secrets,
        out: &mut Vec<Event>,
    ) {
        let conn = self.conn;
        let to = undecoded::To { conn, dir, ts };
        // Bytes before a header or frame that are in no event yet (a malformed frame) go out
        // first, in stream order.
        let span = undecoded::decoded_span(&item);
        if let Some((from, _)) = span {
            self.sides[dir.index()].undecoded_up_to(from, secrets, to, out);
        }
        if !self.note_item(dir, &item, secrets) {
            return;
        }
        match item {
            // Most items: a frame, tracked in its event, which goes out or (held back) back to
            // the decoder.
            Item::Frame(mut fe) => {
                // Each direction's decoder makes its frames with the direction (`in_dir`).
                debug_assert_eq!(fe.dir, dir, "a frame decoded for the other direction");
                self.track_frame(&mut fe, ts);
                self.cover(dir, span);
                if !self.opts.emit_frames && self.violations.is_empty() {
                    self.frames_held_back += 1;
                    self.sides[dir.index()].decoder.recycle(fe);
                } else {
                    out.push(Event {
                        conn,
                        ts,
                        kind: EventKind::Frame(fe),
                    });
                }
            }
            item => {
                let mut kind = item_event(
                    dir,
                    item,
                    &mut self.client_header,
                    &mut self.tracker,
                    &mut self.violations,
                );
                self.track(kind.as_mut(), ts);
                self.cover(dir, span);
                if let Some(kind) = kind {
                    out.push(Event { conn, ts, kind });
                }
            }
        }
        self.push_violations(ts, out);
        self.push_diagnoses(out);
        if self.opts.state_each_frame {
            self.publish_state(ts, out);
        }
    }

    /// What `item` tells before it becomes an event: the secrets in it and in what streams past
    /// of it, a header's protocol, a `$cbs` link. False for an item that becomes no event (a
    /// frame too large to inspect: the tracker is told it missed one).
    fn note_item(&mut self, dir: Dir, item: &Item, secrets: &mut Secrets) -> bool {
        let (client_header, cbs) = (self.client_header, self.cbs);
        let side = &mut self.sides[dir.index()];
        if !self.opts.show_secrets
            && let Some((from, end)) = undecoded::streamed_span(item)
        {
            // A frame decoded from its head: what streams past of it is masked too when it may
            // hold a credential.
            let kind = undecoded::StreamKind::of(side, dir, client_header, cbs);
            side.stream_mask = undecoded::streamed_mask(item, kind).map(|m| (m.max(from), end));
            secrets.extend(side.stream_mask);
            side.streaming = Some((from, end));
        }
        if let Item::Malformed { error, .. } = item
            && matches!(error.kind, crate::codec::ErrorKind::NotInspected { .. })
        {
            // Not a malformation: its fields did not fit in what inspection holds. Its bytes
            // go out undecoded, and the state tracker is told it missed a frame.
            self.tracker.gap(dir);
            self.state_dirty = true;
            return false;
        }
        match item {
            Item::Malformed { offset, raw, .. } if !self.opts.show_secrets => {
                let kind = undecoded::StreamKind::of(side, dir, client_header, cbs);
                if let Some(r) = undecoded::credential_span(raw, kind, true) {
                    secrets.push((offset + r.start as u64, offset + r.end as u64));
                }
            }
            Item::Header { header, .. } => side.note_header(*header),
            Item::Frame(fe) => self.cbs |= fe.frame.attaches_token_link(&fe.raw),
            _ => {}
        }
        true
    }

    /// Track the state a header or frame event changes (a frame: [`Inspector::track_frame`]).
    fn track(&mut self, kind: Option<&mut EventKind>, ts: Timestamp) {
        self.state_dirty |= matches!(kind, Some(EventKind::Header { .. }));
        match kind {
            Some(EventKind::Header {
                dir,
                offset,
                header,
                ..
            }) => self
                .tracker
                .header(*dir, *offset, *header, ts, &mut self.violations),
            Some(EventKind::Frame(f)) => self.track_frame(f, ts),
            _ => {}
        }
    }

    /// Track a frame (the state it changes is published later): its context filled in (once:
    /// every consumer reads it from the event), then the tracker and the diagnoser fed; its
    /// violations (into `self.violations`) say
    /// which frame it was.
    #[inline(always)]
    fn track_frame(&mut self, f: &mut Arc<FrameEvent>, ts: Timestamp) {
        self.state_dirty = true;
        // The event was made just now: nothing shares it yet.
        if let Some(fe) = Arc::get_mut(f) {
            let at = crate::state::context::At::new(fe.dir, fe.offset, ts);
            self.contexts.frame(at, &fe.frame, &mut fe.context);
        }
        self.tracker.frame(f, ts, &mut self.violations);
        if let Some(d) = &mut self.diagnoser {
            d.frame(f, ts, &mut self.diagnoses);
        }
        if !self.violations.is_empty() {
            let summary = f.frame.summary();
            for v in &mut self.violations {
                v.frame.get_or_insert_with(|| summary.clone());
            }
        }
    }

    /// The bytes of an item's `span` are in an event now.
    #[inline(always)]
    fn cover(&mut self, dir: Dir, span: Option<(u64, u64)>) {
        if let Some((_, end)) = span {
            let side = &mut self.sides[dir.index()];
            side.covered = side.covered.max(end);
        }
    }

    /// The violations found so far go out as events. Called after every frame, and there are
    /// rarely any: the test is made in place, the work out of line.
    #[inline(always)]
    fn push_violations(&mut self, ts: Timestamp, out: &mut Vec<Event>) {
        if !self.violations.is_empty() {
            self.push_found_violations(ts, out);
        }
    }

    /// [`Inspector::push_violations`] when there are some.
    #[inline(never)]
    fn push_found_violations(&mut self, ts: Timestamp, out: &mut Vec<Event>) {
        let conn = self.conn;
        out.extend(self.violations.drain(..).map(|v| Event {
            conn,
            ts,
            kind: EventKind::Violation(v),
        }));
    }

    /// The chunk is in: judge the bytes no header or frame accounts for, publish the state
    /// (throttled), and commit what the decoder is done with.
    fn chunk_done(&mut self, dir: Dir, ts: Timestamp, mut secrets: Secrets, out: &mut Vec<Event>) {
        let to = undecoded::To {
            conn: self.conn,
            dir,
            ts,
        };
        // Bytes no header or frame accounts for (after a server refused the client's header,
        // or of a protocol that is not decoded) are judged once the chunk is in.
        let total = self.sides[dir.index()].total;
        self.tracker.seen(dir, total, &mut self.violations);
        self.push_violations(ts, out);
        self.state_throttled(ts, out);
        let side = &mut self.sides[dir.index()];
        // Emit every byte the decoder has finished with; hold back an incomplete frame so a
        // secret inside it can still be masked once the frame is complete.
        let committed = side.decoder.offset() - side.decoder.buffered() as u64;
        if !self.opts.show_secrets {
            secrets.extend(side.streamed_url_passwords(committed));
        }
        side.commit(committed, &secrets, self.opts.emit_data, to, out);
        if side.stream_mask.is_some_and(|(_, end)| end <= committed) {
            side.stream_mask = None;
        }
    }
}

/// The event a decoded item of `dir` becomes: a header (the client's first one noted in
/// `client_header`), a frame, a malformed frame's violation; decoding that stopped becomes what
/// `tracker` judges it (into `violations`), and no event of its own. Inlined: it runs once per
/// frame, and mostly moves the item into its event.
#[inline]
fn item_event(
    dir: Dir,
    item: Item,
    client_header: &mut Option<crate::codec::ProtocolHeader>,
    tracker: &mut ConnTracker,
    violations: &mut Vec<Violation>,
) -> Option<EventKind> {
    Some(match item {
        Item::Header {
            offset,
            raw,
            header,
        } => {
            if dir == Dir::C2S && client_header.is_none() {
                *client_header = Some(header);
            }
            EventKind::Header {
                dir,
                offset,
                header,
                raw,
            }
        }
        Item::Frame(fe) => {
            // Each direction's decoder makes its frames with the direction (`in_dir`).
            debug_assert_eq!(fe.dir, dir, "a frame decoded for the other direction");
            EventKind::Frame(fe)
        }
        Item::Malformed { offset, raw, error } => {
            EventKind::Violation(rules::CODEC_MALFORMED_FRAME.violation(
                dir,
                offset,
                format!("{} ({} byte frame)", error, raw.len()),
            ))
        }
        Item::Undecodable { offset, error } => {
            // A violation, or a protocol amqpeek does not decode: the negotiation says.
            tracker.undecodable(dir, offset, &error, violations);
            return None;
        }
    })
}
