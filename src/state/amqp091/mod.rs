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
pub mod methods;
pub mod rules;
mod skim;
pub mod slots;
pub mod snapshot;

use channel::{At, Channel};
use connection::{ConnState, Connection};

use crate::base::{Dir, Timestamp, Violation};
use crate::codec::ProtocolHeader;
use crate::codec::amqp091::{Frame, FrameKind, MethodKind};
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

    fn liveness(&mut self, dir: Dir, ev: &FrameEvent, ts: Timestamp, out: &mut Vec<Violation>) {
        let hb = self.conn.heartbeat();
        let watching = matches!(
            self.conn.state,
            ConnState::AwaitingOpen | ConnState::AwaitingOpenOk | ConnState::Open
        );
        let l = &mut self.live[dir.index()];
        if let (Some(hb), Some(last), true) = (hb, l.last, watching) {
            let silent = ts.0.saturating_sub(last.0);
            if silent > i64::from(hb) * 2_000_000 {
                out.push(rules::HEARTBEAT_MISSED.violation(
                    dir,
                    ev.offset,
                    format!(
                        "{} sent nothing for {:.1} s; negotiated heartbeat is {hb} s (limit {} s)",
                        peer(dir),
                        silent as f64 / 1e6,
                        u32::from(hb) * 2
                    ),
                ));
            }
        }
        l.last = Some(ts);
        l.end = ev.offset.saturating_add(ev.size());
    }

    fn frame091(&mut self, ev: &FrameEvent, f: &Frame, ts: Timestamp, out: &mut Vec<Violation>) {
        let was_tuned = self.conn.state.tuned();
        self.liveness(ev.dir, ev, ts, out);
        self.limit_checks(ev, f, was_tuned, out);
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
    fn limit_checks(
        &mut self,
        ev: &FrameEvent,
        f: &Frame,
        was_tuned: bool,
        out: &mut Vec<Violation>,
    ) {
        let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
        // Frame size against frame-max (frame-min-size before tune-ok).
        if let Some(limit) = self.conn.frame_limit() {
            let size = ev.size();
            if size > u64::from(limit) {
                out.push(rules::FRAME_TOO_LARGE.violation(
                    dir,
                    offset,
                    format!(
                        "{} frame of {size} bytes on channel {} exceeds {} {limit}",
                        f.name(),
                        f.channel,
                        if was_tuned {
                            "the negotiated frame-max"
                        } else {
                            "frame-min-size (frame-max not yet negotiated)"
                        }
                    ),
                ));
            }
        }
        if let Some(max) = self.conn.channel_limit()
            && ch > max
            && self.above_max_reported.insert(ch)
        {
            out.push(rules::ABOVE_CHANNEL_MAX.violation(
                dir,
                offset,
                format!(
                    "{} on channel {ch}, above the negotiated channel-max {max}",
                    f.name()
                ),
            ));
        }
    }

    /// A method only the other peer sends; true when reported (the frame goes no further).
    fn wrong_direction(&self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) -> bool {
        let (dir, offset) = (ev.dir, ev.offset);
        let method = f.method();
        if let Some(m) = method
            && !methods::sender(m.kind()).allows(dir)
        {
            out.push(rules::WRONG_DIRECTION.violation(
                dir,
                offset,
                format!(
                    "{} sent by the {}; only the {} sends it",
                    m.name(),
                    peer(dir),
                    peer(dir.flip())
                ),
            ));
            return true;
        }
        false
    }

    /// Channel 0 belongs to the connection class (and heartbeats): true when the frame was
    /// handled here (a heartbeat, a connection method, or one on the wrong channel).
    fn channel_zero(&mut self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) -> bool {
        let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
        let method = f.method();
        let connection_method = method.is_some_and(|m| m.class_id() == CONNECTION_CLASS);
        match (&f.kind, ch, connection_method) {
            (FrameKind::Heartbeat, 0, _) => return true,
            (FrameKind::Heartbeat, _, _) => {
                out.push(rules::HEARTBEAT_CHANNEL.violation(
                    dir,
                    offset,
                    format!("heartbeat frame on channel {ch}"),
                ));
                return true;
            }
            (_, 0, true) => {
                if let Some(m) = method {
                    self.conn.method(dir, offset, m, out);
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
                return true;
            }
            (_, _, true) | (_, 0, false) => {
                out.push(rules::CHANNEL_ZERO.violation(
                    dir,
                    offset,
                    if ch == 0 {
                        format!(
                            "{} on channel 0, which carries only connection methods",
                            f.name()
                        )
                    } else {
                        format!(
                            "{} on channel {ch}; connection methods belong on channel 0",
                            f.name()
                        )
                    },
                ));
                return true;
            }
            _ => {}
        }
        false
    }

    /// A channel frame needs an open connection: false when the frame goes no further.
    fn connection_open(&self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) -> bool {
        let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
        match self.conn.state {
            ConnState::Open | ConnState::Unknown => {}
            ConnState::Closing { by, ok } => {
                if by[dir.index()] || ok[dir.index()] {
                    out.push(rules::CONNECTION_AFTER_CLOSE.violation(
                        dir,
                        offset,
                        format!(
                            "{} on channel {ch} after this peer sent connection.close",
                            f.name()
                        ),
                    ));
                }
                // From the receiver: in flight, discarded by the closer.
                return false;
            }
            ConnState::Closed => {
                out.push(rules::CONNECTION_AFTER_CLOSE.violation(
                    dir,
                    offset,
                    format!("{} on channel {ch} after connection.close-ok", f.name()),
                ));
                return false;
            }
            // The client pipelining behind its connection.open: a warning, and the frame is
            // tracked so the server's answers to it are not blamed.
            ConnState::AwaitingOpenOk if dir == Dir::C2S => {
                out.push(rules::CONNECTION_PIPELINED.violation(
                    dir,
                    offset,
                    format!(
                        "{} on channel {ch} after connection.open, before the server's open-ok",
                        f.name()
                    ),
                ));
            }
            state @ (ConnState::AwaitingStart
            | ConnState::AwaitingStartOk
            | ConnState::AwaitingTune
            | ConnState::AwaitingSecureOk
            | ConnState::AwaitingTuneOk
            | ConnState::AwaitingOpen
            | ConnState::AwaitingOpenOk) => {
                out.push(rules::CONNECTION_NOT_OPEN.violation(
                    dir,
                    offset,
                    format!(
                        "{} on channel {ch} in connection state {} (before connection.open-ok)",
                        f.name(),
                        state.name()
                    ),
                ));
                return false;
            }
        }
        true
    }

    /// A basic.publish while the broker has the connection blocked (once per blocked period).
    fn blocked_check(&mut self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) {
        let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
        let method = f.method();
        if method.is_some_and(|m| m.kind() == MethodKind::BasicPublish)
            && let Some(reason) = &self.conn.blocked
            && !self.blocked_reported
            && !self.blocked_unknown
        {
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
    fn channel_frame(&mut self, ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) {
        let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
        let method = f.method();
        let at = At { dir, offset };
        let uncertain = self.uncertain;
        let channel = match self.channels.get_mut(&ch) {
            Some(c) => c,
            None => {
                let opening = method.is_some_and(|m| m.kind() == MethodKind::ChannelOpen);
                if opening {
                    self.channels.insert(ch, Channel::opening(ch));
                    return;
                }
                if !uncertain && !self.skimmed_channels.contains(&ch) {
                    out.push(rules::CHANNEL_NOT_OPEN.violation(
                        dir,
                        offset,
                        format!("{} on channel {ch}, which was never opened", f.name()),
                    ));
                    return;
                }
                self.channels
                    .get_or_insert_with(ch, || Channel::learned(ch))
            }
        };
        if let Some(m) = method {
            let content_method = matches!(
                m.kind(),
                MethodKind::BasicPublish | MethodKind::BasicDeliver
            );
            if content_method && channel.flow_stopped(dir) && !channel.uncertain {
                out.push(rules::FLOW_STOPPED.violation(
                    dir,
                    offset,
                    format!(
                        "{} on channel {ch} after the {} confirmed channel.flow active=false",
                        m.name(),
                        peer(dir)
                    ),
                ));
            }
        }
        channel.frame(at, &f.kind, out);
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
