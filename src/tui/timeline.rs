//! Following a link or a channel over time (`L`): the frames of one AMQP 1.0 link (its
//! attaches, flows, transfers, detaches, and the dispositions that settle its deliveries) or of
//! one channel (an AMQP 0-9-1 channel's publishes and confirms, deliveries and acks; an AMQP
//! 1.0 session's frames), in order, with each one's time relative to the first and to the one
//! before, and for a delivery how long its settlement took: transfer -> the disposition that
//! settled it, publish -> its confirm, deliver -> its ack.
//!
//! Live, reading stdin and during a file's first pass, built from the rows kept in memory and
//! their decoded frames (pure): a delivery whose settlement is not among them shows none. In
//! the replay of a file (whole-capture mode, once the first pass is over), the followed frames of the whole capture around the selected one are
//! asked of the pager ([`Effect::Follow`]), which re-runs the pipeline over the file and
//! brings back at most a window's worth, each delivery timed over the whole file; the view
//! says "reading" until they come. Which frame settles which delivery is what the frames'
//! context says (the state layer's pairing, the one `amqpeek stats` times).

use std::collections::HashMap;

use super::app::{App, Effect, ListState, Overlay, Pane};
use super::input::Action;
use super::model::{Row, RowKind};
pub use crate::browse::follow::Follow;
use crate::browse::follow::{FollowRequest, Followed, Settlement, Step};
use crate::event::{Awaits, Dir, FrameRef};

/// The followed frames of the whole capture asked of the pager, and (once come) brought back.
#[derive(Clone, Debug)]
pub struct Following {
    /// What was asked.
    pub request: FollowRequest,
    /// The frames, once they have come.
    pub steps: Option<Vec<Step>>,
    /// Followed frames were left out (the bound): before the first step, after the last.
    pub cut: (bool, bool),
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
    /// Which way it went.
    pub dir: Option<Dir>,
    /// Its channel.
    pub channel: Option<u16>,
    /// The frame's name.
    pub name: String,
    /// The frame list's summary of it.
    pub summary: String,
}

/// The timeline of `follow`: the followed frames the pager brought back of the whole capture
/// (none while they are being read), else those of the rows in memory.
pub fn entries(app: &App, follow: &Follow) -> Vec<Entry> {
    match app.model.paging.following.as_ref() {
        Some(f) if f.request.follow == *follow => f.steps.as_deref().map_or_else(Vec::new, timed),
        _ => timed(&in_memory(app, follow)),
    }
}

/// Whether the timeline's frames are still being read from the capture.
pub fn reading(app: &App) -> bool {
    app.model
        .paging
        .following
        .as_ref()
        .is_some_and(|f| f.steps.is_none())
}

/// The entries of `steps`, timed from the first and from the one before.
fn timed(steps: &[Step]) -> Vec<Entry> {
    let first = steps.first().map_or(0, |s| s.ts.0);
    let mut prev = first;
    steps
        .iter()
        .map(|s| {
            let (settled, not_awaited) = match s.settlement {
                Some(Settlement::After(us, by)) => (Some((us, by)), None),
                Some(Settlement::NotAwaited(why)) => (None, Some(why)),
                None => (None, None),
            };
            let e = Entry {
                seq: s.seq,
                rel_us: s.ts.0 - first,
                delta_us: s.ts.0 - prev,
                settled,
                not_awaited,
                dir: s.dir,
                channel: s.channel,
                name: s.name.clone(),
                summary: s.summary.clone(),
            };
            prev = s.ts.0;
            e
        })
        .collect()
}

/// The followed frames among the rows in memory, with their settlements among them.
fn in_memory(app: &App, follow: &Follow) -> Vec<Step> {
    let Some(c) = app.model.conns.get(&follow.conn()) else {
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
    rows.iter()
        .map(|r| Step::of_row(r, settled.get(&r.seq).copied()))
        .collect()
}

/// The link's own frames, and the frames that settle its deliveries (its dispositions).
fn link_rows<'a>(rows: impl Iterator<Item = &'a Row>, name: &str) -> Vec<&'a Row> {
    rows.filter(|r| {
        r.link.as_deref() == Some(name)
            || r.frame.as_ref().is_some_and(|f| {
                f.context
                    .settles
                    .iter()
                    .any(|s| s.flow.link_name() == Some(name))
            })
    })
    .collect()
}

/// When each delivery among `rows` (a connection's kept rows, in order) was settled, by the
/// seq of the transfer / publish / deliver that started it, as the frames' context says.
fn settlements<'a>(rows: impl Iterator<Item = &'a Row>) -> HashMap<u64, Settlement> {
    let mut out = HashMap::new();
    let mut starts: HashMap<FrameRef, u64> = HashMap::new();
    for r in rows {
        let Some(f) = r.frame.as_ref() else { continue };
        let cx = &f.context;
        if let Some(d) = cx.delivery {
            if d.starts {
                starts.insert(d.start, r.seq);
            }
            if d.awaits == Some(Awaits::NotAwaited)
                && let Some(&seq) = starts.get(&d.start)
            {
                out.insert(seq, Settlement::NotAwaited(d.kind.not_awaited()));
            }
        }
        for s in &cx.settles {
            if let Some(&seq) = starts.get(&s.start) {
                out.insert(seq, Settlement::After(s.after_us, s.kind.by()));
            }
        }
    }
    out
}

impl App {
    /// `L`: follow the selected frame's link or channel.
    pub(super) fn open_timeline(&mut self) {
        match self.selected_row().and_then(Follow::of) {
            Some(follow) => {
                // Start on the selected frame.
                let seq = self.selected_row().map(|r| r.seq);
                self.model.paging.following = None;
                if self.model.pages() && self.model.pager_ready() {
                    // The followed frames of the whole capture, from the pager.
                    let request = FollowRequest {
                        id: self.model.paging.next_id(),
                        follow: follow.clone(),
                        around: seq.unwrap_or(0),
                    };
                    self.effects.push(Effect::Follow(request.clone()));
                    self.model.paging.following = Some(Following {
                        request,
                        steps: None,
                        cut: (false, false),
                    });
                }
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
        (self.model.size.1 as usize).saturating_sub(4).max(1)
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
                self.close_timeline();
                return a != Action::Quit;
            }
            Action::Enter => {
                self.close_timeline();
                if let Some(e) = items.get(list.selected) {
                    // In memory at once, else (whole-capture mode) the window around it.
                    self.reach(follow.conn(), e.seq);
                    self.focus = Pane::Frames;
                }
                return true;
            }
            _ => return false,
        }
        self.overlay = Overlay::Timeline { follow, list };
        true
    }

    /// Close the timeline, forgetting the followed frames brought back (and stopping their
    /// re-run if it is still going).
    pub(super) fn close_timeline(&mut self) {
        self.overlay = Overlay::None;
        if let Some(f) = self.model.paging.following.take()
            && f.steps.is_none()
        {
            self.effects.push(Effect::StopFollow);
        }
    }

    /// The followed frames of the whole capture have come: the timeline shows them, its
    /// cursor on the frame it was opened on.
    pub(super) fn followed(&mut self, f: Followed) {
        let Some(following) = self.model.paging.following.as_mut() else {
            return;
        };
        if following.request.id != f.request.id {
            // An answer to a request since replaced.
            return;
        }
        let at = f
            .steps
            .iter()
            .position(|s| s.seq == f.request.around)
            .unwrap_or(0);
        let len = f.steps.len();
        following.steps = Some(f.steps);
        following.cut = f.cut;
        let h = self.timeline_page();
        if let Overlay::Timeline { list, .. } = &mut self.overlay {
            list.selected = at;
            list.offset = at.saturating_sub(h / 2);
            list.clamp(len, h);
        }
    }
}
