//! Following a link or a channel over time (`L`): the frames of one AMQP 1.0 link (its
//! attaches, flows, transfers, detaches, and the dispositions that settle its deliveries) or of
//! one channel (an AMQP 0-9-1 channel's publishes and confirms, deliveries and acks; an AMQP
//! 1.0 session's frames), in order, with each one's time relative to the first and to the one
//! before, and for a delivery how long its settlement took: transfer -> the disposition that
//! settled it, publish -> its confirm, deliver -> its ack.
//!
//! Built from the rows kept in memory and their decoded frames only (pure): a delivery whose
//! settlement is not among them shows none. Which frame settles which delivery is the
//! protocols' traffic accounting (`crate::stats`), the same `amqpeek stats` times.

use std::collections::HashMap;

use super::app::{App, ListState, Overlay, Pane, TimeMode};
use super::input::Action;
use super::model::{Row, RowKind};
use crate::codec::AnyFrame;
use crate::codec::amqp10::{Performative, Role};
use crate::event::ConnId;
use crate::protocol::Traffics;
use crate::stats::{At, Note};

/// What is followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Follow {
    /// The AMQP 1.0 link of this name on this connection.
    Link {
        /// The connection the link is on.
        conn: ConnId,
        /// Link name.
        name: String,
    },
    /// The channel (AMQP 1.0: session) of this number on this connection.
    Channel {
        /// The connection the channel is on.
        conn: ConnId,
        /// The channel number (AMQP 1.0: as the client numbers its session).
        channel: u16,
    },
}

impl Follow {
    /// What the selected row belongs to: its link, else its channel.
    pub fn of(row: &Row) -> Option<Follow> {
        if row.kind != RowKind::Frame {
            return None;
        }
        match (&row.link, row.channel) {
            (Some(name), _) => Some(Follow::Link {
                conn: row.conn,
                name: name.clone(),
            }),
            (None, Some(channel)) => Some(Follow::Channel {
                conn: row.conn,
                channel,
            }),
            _ => None,
        }
    }

    /// The connection.
    pub fn conn(&self) -> ConnId {
        match self {
            Follow::Link { conn, .. } | Follow::Channel { conn, .. } => *conn,
        }
    }

    /// In words, for the view's title.
    pub fn title(&self) -> String {
        match self {
            Follow::Link { conn, name } => format!("link \"{name}\" of conn {conn}"),
            Follow::Channel { conn, channel } => format!("channel {channel} of conn {conn}"),
        }
    }
}

/// One frame of the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The row (arrival number).
    pub seq: u64,
    /// Microseconds since the timeline's first frame.
    pub rel_us: i64,
    /// Microseconds since the frame before it in the timeline.
    pub delta_us: i64,
    /// How long this delivery took to settle (µs) and what settled it (`disposition`,
    /// `confirm`, `ack`), once seen.
    pub settled: Option<(i64, &'static str)>,
    /// Why this delivery awaits no settlement, when it does not: `pre-settled` (a transfer
    /// settled by its sender), `no confirm` (a publish outside confirm mode), `no-ack` (a
    /// delivery to a no-ack consumer or get).
    pub not_awaited: Option<&'static str>,
}

/// The timeline of `follow` from the rows in memory.
pub fn entries(app: &App, follow: &Follow) -> Vec<Entry> {
    let Some(c) = app.conns.get(&follow.conn()) else {
        return Vec::new();
    };
    let rows: Vec<&Row> = match follow {
        Follow::Link { name, .. } => link_rows(c.rows.iter(), name),
        Follow::Channel { channel, .. } => c
            .rows
            .iter()
            .filter(|r| {
                r.kind == RowKind::Frame
                    && r.channel == Some(*channel)
                    && !matches!(r.name.as_str(), "content-header" | "content-body")
            })
            .collect(),
    };
    let settled = settlements(c.rows.iter());
    let first = rows.first().map_or(0, |r| r.ts.0);
    let mut prev = first;
    rows.iter()
        .map(|r| {
            let (settled, not_awaited) = match settled.get(&r.seq) {
                Some(Settlement::After(us, by)) => (Some((*us, *by)), None),
                Some(Settlement::NotAwaited(why)) => (None, Some(*why)),
                None => (None, None),
            };
            let e = Entry {
                seq: r.seq,
                rel_us: r.ts.0 - first,
                delta_us: r.ts.0 - prev,
                settled,
                not_awaited,
            };
            prev = r.ts.0;
            e
        })
        .collect()
}

/// The link's own frames, and the dispositions on its channels that name its deliveries.
fn link_rows<'a>(rows: impl Iterator<Item = &'a Row> + Clone, name: &str) -> Vec<&'a Row> {
    let mut channel: [Option<u16>; 2] = [None, None];
    let mut ids: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    for r in rows.clone().filter(|r| r.link.as_deref() == Some(name)) {
        let Some(dir) = r.dir else { continue };
        channel[dir.index()] = r.channel;
        if let Some(t) = transfer_id(r) {
            ids[dir.index()].push(t);
        }
    }
    rows.filter(|r| {
        if r.link.as_deref() == Some(name) {
            return true;
        }
        let (Some(dir), Some((role, first, last, _))) = (r.dir, disposition(r)) else {
            return false;
        };
        let of = if role == Role::Receiver {
            dir.flip()
        } else {
            dir
        };
        r.channel == channel[dir.index()]
            && ids[of.index()].iter().any(|id| (first..=last).contains(id))
    })
    .collect()
}

fn performative(r: &Row) -> Option<&Performative> {
    match &r.frame.as_ref()?.frame {
        AnyFrame::Amqp10(f) => f.performative(),
        _ => None,
    }
}

fn transfer_id(r: &Row) -> Option<u32> {
    match performative(r)? {
        Performative::Transfer(t) => t.delivery_id,
        _ => None,
    }
}

/// A disposition's role, first, last and settled.
fn disposition(r: &Row) -> Option<(Role, u32, u32, bool)> {
    match performative(r)? {
        Performative::Disposition(d) => {
            Some((d.role, d.first, d.last.unwrap_or(d.first), d.settled))
        }
        _ => None,
    }
}

/// How a delivery was settled.
#[derive(Clone, Copy, Debug)]
enum Settlement {
    /// This many µs after it started, by this (`disposition`, `confirm`, `ack`).
    After(i64, &'static str),
    /// It awaits none, for this reason.
    NotAwaited(&'static str),
}

/// When each delivery among `rows` (a connection's kept rows, in order) was settled, by the
/// seq of the transfer / publish / deliver that started it. The pairing is each protocol's
/// own ([`crate::stats::Traffic`], the one `amqpeek stats` uses); a gap row forgets what was
/// waiting, as there.
fn settlements<'a>(rows: impl Iterator<Item = &'a Row>) -> HashMap<u64, Settlement> {
    let mut out = HashMap::new();
    let mut traffic = Traffics::default();
    let mut notes = Vec::new();
    for r in rows {
        let Some(dir) = r.dir else { continue };
        if r.kind == RowKind::Gap {
            traffic.gap(dir);
            continue;
        }
        let Some(f) = r.frame.as_ref() else { continue };
        let at = At {
            seq: r.seq,
            dir,
            ts: r.ts.0,
            size: f.size(),
        };
        traffic.frame(at, &f.frame, &mut notes);
        for note in notes.drain(..) {
            match note {
                Note::Settled {
                    start,
                    after_us,
                    kind,
                    ..
                } => {
                    out.insert(start, Settlement::After(after_us, kind.by()));
                }
                Note::PreSettled { start, kind } => {
                    out.insert(start, Settlement::NotAwaited(kind.not_awaited()));
                }
                Note::Flow { .. } | Note::Untimed => {}
            }
        }
    }
    out
}

impl App {
    /// `t`: absolute, relative, delta time in the frame list.
    pub(super) fn cycle_time(&mut self) {
        self.time_mode = match self.time_mode {
            TimeMode::Absolute => TimeMode::Relative,
            TimeMode::Relative => TimeMode::Delta,
            TimeMode::Delta => TimeMode::Absolute,
        };
    }

    /// `L`: follow the selected frame's link or channel.
    pub(super) fn open_timeline(&mut self) {
        match self.selected_row().and_then(Follow::of) {
            Some(follow) => {
                // Start on the selected frame.
                let seq = self.selected_row().map(|r| r.seq);
                let at = entries(self, &follow)
                    .iter()
                    .position(|e| Some(e.seq) == seq)
                    .unwrap_or(0);
                let mut list = ListState {
                    selected: at,
                    offset: 0,
                };
                list.clamp(at + 1, self.timeline_page());
                self.overlay = Overlay::Timeline { follow, list };
            }
            None => self.message = Some("select a frame of a link or a channel to follow".into()),
        }
    }

    /// Rows the timeline shows at the current size.
    pub fn timeline_page(&self) -> usize {
        // Full screen but the status line, less its borders and column header.
        (self.size.1 as usize).saturating_sub(4).max(1)
    }

    /// A key while the timeline is open; false when it is not the timeline's.
    pub(super) fn timeline_key(&mut self, a: Action) -> bool {
        let Overlay::Timeline { follow, list } = &self.overlay else {
            return false;
        };
        let (follow, mut list) = (follow.clone(), *list);
        let items = entries(self, &follow);
        let (len, h) = (items.len(), self.timeline_page());
        let page = h.max(2) as isize - 1;
        match a {
            Action::Up => list.move_by(-1, len, h),
            Action::Down => list.move_by(1, len, h),
            Action::PageUp => list.move_by(-page, len, h),
            Action::PageDown => list.move_by(page, len, h),
            Action::Home => list.move_by(isize::MIN / 2, len, h),
            Action::End => list.move_by(isize::MAX / 2, len, h),
            Action::Escape | Action::Timeline | Action::Quit => {
                self.overlay = Overlay::None;
                return a != Action::Quit;
            }
            Action::Enter => {
                self.overlay = Overlay::None;
                if let Some(e) = items.get(list.selected) {
                    self.select_frame(follow.conn(), e.seq);
                    self.focus = Pane::Frames;
                }
                return true;
            }
            _ => return false,
        }
        self.overlay = Overlay::Timeline { follow, list };
        true
    }
}
