//! AMQP 0-9-1 state tracking: one [`ConnectionTracker`] per connection watches both directions
//! at once — the handshake and negotiated limits ([`connection`]), every channel
//! ([`channel`]: open/close, content framing, confirms, deliveries, consumers, flow,
//! transactions), heartbeats — and reports each place a peer breaks the spec ([`rules`]).
//!
//! Sans-IO: no clock (time comes with each frame), no I/O. Never panics on any frame
//! sequence. After a gap (or when the capture starts mid-stream) it learns channels, tags and
//! state instead of reporting what it could not see.

pub mod channel;
pub mod connection;
pub mod content;
pub mod context;
mod limits;
pub mod methods;
mod reports;
pub mod rules;
mod skim;
pub mod slots;
pub mod snapshot;

use channel::{At, Channel};
use connection::{ConnState, Connection};
use limits::{Limits, silence_over};

use crate::base::{Dir, Timestamp, Violation};
use crate::codec::ProtocolHeader;
use crate::codec::amqp091::{Frame, FrameKind, Method, MethodKind};
use crate::protocol::AnyFrame;
use crate::protocol::FrameEvent;
use crate::state::{Ending, ProtocolTracker};
use slots::Slots;

/// The connection class id.
const CONNECTION_CLASS: u16 = 10;

/// Per-direction liveness, for heartbeats.
#[derive(Clone, Copy, Debug, Default)]
struct Liveness {
    /// Time of the last frame seen in this direction (None: unknown, e.g. after a gap).
    last: Option<Timestamp>,
    /// Offset just past that frame.
    end: u64,
}

/// Tracks one AMQP 0-9-1 connection from both directions.
#[derive(Debug, Default)]
pub struct ConnectionTracker {
    conn: Connection,
    /// What `conn` makes of every frame, derived anew whenever `conn` changes.
    limits: Limits,
    channels: Slots<u16, Channel>,
    /// Bytes were missed at some point: judge only what was seen afresh.
    uncertain: bool,
    live: [Liveness; 2],
    /// Channel numbers already reported above channel-max (reported once each).
    above_max_reported: std::collections::BTreeSet<u16>,
    /// A publish while blocked was reported during the current blocked period.
    blocked_reported: bool,
    /// Server frames on channel 0 were missed since the last connection.blocked/unblocked:
    /// whether the broker has the connection blocked is not known.
    blocked_unknown: bool,
    /// Channels with frames skimmed: a frame on one of them that was never seen opened is
    /// learned (its channel.open may have been passed over).
    skimmed_channels: std::collections::BTreeSet<u16>,
}

impl ConnectionTracker {
    /// A tracker that has seen the connection from its start.
    pub fn new() -> Self {
        Self::default()
    }

    /// `conn` changed (or may have): what it makes of every frame is derived again.
    fn conn_changed(&mut self) {
        self.limits = Limits::of(&self.conn);
    }

    /// A frame of `size` bytes from `dir` at `offset` and `ts`: a silence since the last one
    /// longer than twice the negotiated heartbeat is reported.
    #[inline]
    fn liveness(
        &mut self,
        dir: Dir,
        (offset, size): (u64, u64),
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        let silence_max = self.limits.silence_max;
        let l = &mut self.live[dir.index()];
        if let Some(last) = l.last
            && let Some(silent) = silence_over(ts.0, last.0, silence_max)
        {
            let hb = self.conn.heartbeat().unwrap_or(0);
            reports::heartbeat_missed(dir, offset, silent, hb, out);
        }
        l.last = Some(ts);
        l.end = offset.saturating_add(size);
    }

    fn frame091(&mut self, ev: &FrameEvent, f: &Frame, ts: Timestamp, out: &mut Vec<Violation>) {
        debug_assert_eq!(
            self.limits,
            Limits::of(&self.conn),
            "limits not derived anew"
        );
        let size = ev.size();
        self.liveness(ev.dir, (ev.offset, size), ts, out);
        self.limit_checks(ev, f, size, out);
        if self.wrong_direction(ev, f, out)
            || self.channel_zero(ev, f, out)
            || !self.connection_open(ev, f, out)
        {
            return;
        }
        self.blocked_check(ev, f, out);
        self.channel_frame(ev, f, out);
    }

    /// Frame size against frame-max (frame-min-size before tune-ok); the channel against
    /// channel-max (reported once per channel).
    #[inline]
    fn limit_checks(&mut self, ev: &FrameEvent, f: &Frame, size: u64, out: &mut Vec<Violation>) {
        // Frame size against frame-max (frame-min-size before tune-ok).
        if size > self.limits.frame_max
            && let Some(limit) = self.conn.frame_limit()
        {
            reports::frame_too_large(ev, f, limit, self.conn.state.tuned(), out);
        }
        if f.channel > self.limits.channel_max {
            self.above_channel_max(ev, f, self.limits.channel_max, out);
        }
    }

    /// A channel above channel-max: reported once per channel.
    #[cold]
    #[inline(never)]
    fn above_channel_max(
        &mut self,
        ev: &FrameEvent,
        f: &Frame,
        max: u16,
        out: &mut Vec<Violation>,
    ) {
        let ch = f.channel;
        if self.above_max_reported.insert(ch) {
            out.push(rules::ABOVE_CHANNEL_MAX.violation(
                ev.dir,
                ev.offset,
                format!(
                    "{} on channel {ch}, above the negotiated channel-max {max}",
                    f.name()
                ),
            ));
        }
    }

    /// A method only the other peer sends; true when reported (the frame goes no further).
    #[inline]
    fn wrong_direction(&self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) -> bool {
        if let Some(m) = f.method()
            && !methods::sender(m.kind()).allows(ev.dir)
        {
            reports::wrong_direction(ev, m, out);
            return true;
        }
        false
    }

    /// Channel 0 belongs to the connection class (and heartbeats): true when the frame was
    /// handled here (a heartbeat, a connection method, or one on the wrong channel).
    #[inline]
    fn channel_zero(&mut self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) -> bool {
        let ch = f.channel;
        let method = f.method();
        let connection_method = method.is_some_and(|m| m.class_id() == CONNECTION_CLASS);
        match (&f.kind, ch, connection_method) {
            (FrameKind::Heartbeat, 0, _) => true,
            (FrameKind::Heartbeat, _, _) => {
                reports::heartbeat_channel(ev, ch, out);
                true
            }
            (_, 0, true) => {
                if let Some(m) = method {
                    self.connection_method(ev.dir, ev.offset, m, out);
                }
                true
            }
            (_, _, true) | (_, 0, false) => {
                reports::channel_zero(ev, f, out);
                true
            }
            _ => false,
        }
    }

    /// A connection method on channel 0.
    #[inline(never)]
    fn connection_method(&mut self, dir: Dir, offset: u64, m: &Method, out: &mut Vec<Violation>) {
        self.conn.method(dir, offset, m, out);
        self.conn_changed();
        if self.conn.state == ConnState::Closed {
            self.channels.clear();
        }
        if m.kind() == MethodKind::ConnectionUnblocked {
            self.blocked_reported = false;
        }
        if matches!(
            m.kind(),
            MethodKind::ConnectionBlocked | MethodKind::ConnectionUnblocked
        ) {
            self.blocked_unknown = false;
        }
    }

    /// A channel frame needs an open connection: false when the frame goes no further.
    #[inline]
    fn connection_open(&self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) -> bool {
        if self.limits.open {
            return true;
        }
        reports::connection_not_open(self.conn.state, ev, f, out)
    }

    /// A basic.publish while the broker has the connection blocked (once per blocked period).
    #[inline]
    fn blocked_check(&mut self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) {
        if self.conn.blocked.is_some()
            && f.method()
                .is_some_and(|m| m.kind() == MethodKind::BasicPublish)
            && !self.blocked_reported
            && !self.blocked_unknown
        {
            self.publish_while_blocked(ev, f, out);
        }
    }

    /// Reports a basic.publish while blocked.
    #[cold]
    #[inline(never)]
    fn publish_while_blocked(&mut self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) {
        let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
        if let Some(reason) = &self.conn.blocked {
            self.blocked_reported = true;
            out.push(rules::PUBLISH_WHILE_BLOCKED.violation(
                        dir,
                        offset,
                        format!(
                            "basic.publish on channel {ch} while the broker has the connection blocked ({reason:?}); it will not be read until unblocked"
                        ),
                    ));
        }
    }

    /// A frame on channel `f.channel`: routed to its channel (opened, or learned after a gap).
    #[inline]
    fn channel_frame(&mut self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) {
        let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
        let at = At { dir, offset };
        let channel = match self.channels.get_mut(&ch) {
            Some(c) => c,
            None => match self.unknown_channel(ev, f, out) {
                Some(c) => c,
                None => return,
            },
        };
        if channel.flow_stopped(dir)
            && !channel.uncertain
            && let Some(m) = f.method()
            && matches!(
                m.kind(),
                MethodKind::BasicPublish | MethodKind::BasicDeliver
            )
        {
            reports::flow_stopped(ev, ch, m, out);
        }
        channel.frame(at, &f.kind, out);
    }

    /// A frame on a channel not tracked: channel.open opens it (and goes no further); on a
    /// channel that may have been opened unseen it is learned; else it is reported.
    #[inline(never)]
    fn unknown_channel(
        &mut self,
        ev: &FrameEvent,
        f: &Frame,
        out: &mut Vec<Violation>,
    ) -> Option<&mut Channel> {
        let ch = f.channel;
        if f.method()
            .is_some_and(|m| m.kind() == MethodKind::ChannelOpen)
        {
            self.channels.insert(ch, Channel::opening(ch));
            return None;
        }
        if !self.uncertain && !self.skimmed_channels.contains(&ch) {
            out.push(rules::CHANNEL_NOT_OPEN.violation(
                ev.dir,
                ev.offset,
                format!("{} on channel {ch}, which was never opened", f.name()),
            ));
            return None;
        }
        Some(
            self.channels
                .get_or_insert_with(ch, || Channel::learned(ch)),
        )
    }
}

/// "client" / "server" for the peer sending `dir`.
fn peer(dir: Dir) -> &'static str {
    match dir {
        Dir::C2S => "client",
        Dir::S2C => "server",
    }
}

impl ProtocolTracker for ConnectionTracker {
    fn header(
        &mut self,
        dir: Dir,
        _offset: u64,
        header: ProtocolHeader,
        ts: Timestamp,
        _out: &mut Vec<Violation>,
    ) {
        let _ = header;
        self.live[dir.index()].last = Some(ts);
    }

    fn gap(&mut self, dir: Dir) {
        self.connection_unknown(dir);
        self.live[dir.index()].last = None;
        for c in self.channels.values_mut() {
            c.forget();
        }
    }

    fn skimmed(&mut self, dir: Dir, ts: Timestamp, channels: &crate::protocol::SkimChannels) {
        self.skim(dir, ts, channels);
    }

    fn frame(&mut self, frame: &FrameEvent, ts: Timestamp, out: &mut Vec<Violation>) {
        if let AnyFrame::Amqp091(f) = &frame.frame {
            self.frame091(frame, f, ts, out);
        }
    }

    fn close(&mut self, ts: Timestamp, ending: Ending, out: &mut Vec<Violation>) {
        if ending == Ending::Unknown {
            return; // a capture that merely ends says nothing about how the peers left
        }
        if let ConnState::Closing { by, ok } = self.conn.state
            && !self.uncertain
        {
            for dir in [Dir::C2S, Dir::S2C] {
                if by[dir.flip().index()] && !ok[dir.index()] {
                    out.push(rules::CLOSE_NOT_ANSWERED.violation(
                        dir,
                        self.live[dir.index()].end,
                        format!(
                            "the {} received connection.close and the connection ended without its close-ok",
                            peer(dir)
                        ),
                    ));
                }
            }
        }
        let Some(hb) = self.conn.heartbeat() else {
            return;
        };
        if !matches!(
            self.conn.state,
            ConnState::AwaitingOpen | ConnState::AwaitingOpenOk | ConnState::Open
        ) {
            return;
        }
        for dir in [Dir::C2S, Dir::S2C] {
            let l = self.live[dir.index()];
            if let Some(last) = l.last {
                let silent = ts.0.saturating_sub(last.0);
                if silent > i64::from(hb) * 2_000_000 {
                    out.push(rules::HEARTBEAT_MISSED.violation(
                        dir,
                        l.end,
                        format!(
                            "{} sent nothing for the last {:.1} s before the connection ended; negotiated heartbeat is {hb} s",
                            peer(dir),
                            silent as f64 / 1e6
                        ),
                    ));
                }
            }
        }
    }

    fn state_name(&self) -> String {
        self.conn.state.name().to_string()
    }

    fn snapshot(&self) -> crate::state::snapshot::Detail {
        let mut connection = self.conn.snapshot();
        connection.uncertain = self.uncertain;
        crate::state::snapshot::Detail::Amqp091(Box::new(snapshot::Amqp091Snapshot {
            connection,
            channels: {
                let mut open: Vec<&Channel> = self.channels.values().collect();
                open.sort_unstable_by_key(|c| c.number);
                open.into_iter().map(Channel::snapshot).collect()
            },
        }))
    }
}
