//! The 0-9-1 tracker's reports of a frame out of place (a missed heartbeat, a frame too
//! large, a method from the wrong peer or on the wrong channel, a frame on a connection not
//! open, content after channel.flow active=false): each made out of line of the per-frame
//! path, which only decides that one is due.

use super::connection::ConnState;
use super::{peer, rules};
use crate::base::{Dir, Violation};
use crate::codec::amqp091::{Frame, Method};
use crate::protocol::FrameEvent;

/// Reports a silence longer than twice the negotiated heartbeat.
#[cold]
#[inline(never)]
pub(super) fn heartbeat_missed(
    dir: Dir,
    offset: u64,
    silent: i64,
    hb: u16,
    out: &mut Vec<Violation>,
) {
    out.push(rules::HEARTBEAT_MISSED.violation(
        dir,
        offset,
        format!(
            "{} sent nothing for {:.1} s; negotiated heartbeat is {hb} s (limit {} s)",
            peer(dir),
            silent as f64 / 1e6,
            u32::from(hb) * 2
        ),
    ));
}

/// Reports a frame larger than frame-max (frame-min-size before tune-ok).
#[cold]
#[inline(never)]
pub(super) fn frame_too_large(
    ev: &FrameEvent,
    f: &Frame,
    limit: u32,
    was_tuned: bool,
    out: &mut Vec<Violation>,
) {
    let size = ev.size();
    out.push(rules::FRAME_TOO_LARGE.violation(
        ev.dir,
        ev.offset,
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

/// Reports a method sent by the peer that may not send it.
#[cold]
#[inline(never)]
pub(super) fn wrong_direction(ev: &FrameEvent, m: &Method, out: &mut Vec<Violation>) {
    let dir = ev.dir;
    out.push(rules::WRONG_DIRECTION.violation(
        dir,
        ev.offset,
        format!(
            "{} sent by the {}; only the {} sends it",
            m.name(),
            peer(dir),
            peer(dir.flip())
        ),
    ));
}

/// Reports a heartbeat on a channel other than 0.
#[cold]
#[inline(never)]
pub(super) fn heartbeat_channel(ev: &FrameEvent, ch: u16, out: &mut Vec<Violation>) {
    out.push(rules::HEARTBEAT_CHANNEL.violation(
        ev.dir,
        ev.offset,
        format!("heartbeat frame on channel {ch}"),
    ));
}

/// Reports a connection method off channel 0, or another frame on it.
#[cold]
#[inline(never)]
pub(super) fn channel_zero(ev: &FrameEvent, f: &Frame, out: &mut Vec<Violation>) {
    let ch = f.channel;
    out.push(rules::CHANNEL_ZERO.violation(
        ev.dir,
        ev.offset,
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
}

/// A channel frame on a connection in `state`, neither open nor unknown: reported (or, from
/// the receiver of connection.close, passed over); true when the frame is tracked all the same.
#[cold]
#[inline(never)]
pub(super) fn connection_not_open(
    state: ConnState,
    ev: &FrameEvent,
    f: &Frame,
    out: &mut Vec<Violation>,
) -> bool {
    let (dir, offset, ch) = (ev.dir, ev.offset, f.channel);
    match state {
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

/// Reports a content method from a peer that confirmed channel.flow active=false.
#[cold]
#[inline(never)]
pub(super) fn flow_stopped(ev: &FrameEvent, ch: u16, m: &Method, out: &mut Vec<Violation>) {
    out.push(rules::FLOW_STOPPED.violation(
        ev.dir,
        ev.offset,
        format!(
            "{} on channel {ch} after the {} confirmed channel.flow active=false",
            m.name(),
            peer(ev.dir)
        ),
    ));
}
