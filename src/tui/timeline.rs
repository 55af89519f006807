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

use super::app::{App, Overlay};
use super::model::{Model, Row, RowKind};
pub use crate::browse::follow::Follow;
use crate::browse::follow::{FollowRequest, Followed, Settlement, Step};
use crate::event::{Awaits, Dir, FrameRef};

/// The followed frames of the whole capture asked of the pager, and (once come) brought back:
/// the timeline's own (`components/timeline_view.rs`), kept while it is open.
#[derive(Clone, Debug, PartialEq, Eq)]
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

impl Following {
    /// Asked of the pager with `request`, not come yet.
    pub fn asked(request: FollowRequest) -> Following {
        Following {
            request,
            steps: None,
            cut: (false, false),
        }
    }

    /// Whether the frames are still being read from the capture.
    pub fn reading(&self) -> bool {
        self.steps.is_none()
    }

    /// The followed frames of the whole capture have come: kept when they answer this
    /// request. Where the frame it was asked around is among them, and how many there are
    /// (none when the answer is to another request).
    pub fn store(&mut self, f: Followed) -> Option<(usize, usize)> {
        if self.request.id != f.request.id {
            // An answer to a request since replaced.
            return None;
        }
        let at = f
            .steps
            .iter()
            .position(|s| s.seq == f.request.around)
            .unwrap_or(0);
        let len = f.steps.len();
        self.steps = Some(f.steps);
        self.cut = f.cut;
        Some((at, len))
    }
}

/// The timeline of `follow` in `app`: the followed frames the pager brought back of the whole
/// capture for the open timeline (none while they are being read), else those of the rows in
/// memory.
pub fn entries(app: &App, follow: &Follow) -> Vec<Entry> {
    entries_in(app.model(), follow, open_following(app))
}

/// The timeline of `follow` in `model`, `following` the followed frames of the whole capture
/// asked (see [`entries`]).
pub fn entries_in(model: &Model, follow: &Follow, following: Option<&Following>) -> Vec<Entry> {
    match following {
        Some(f) if f.request.follow == *follow => f.steps.as_deref().map_or_else(Vec::new, timed),
        _ => timed(&in_memory(model, follow)),
    }
}

/// Whether the open timeline's frames are still being read from the capture.
pub fn reading(app: &App) -> bool {
    open_following(app).is_some_and(Following::reading)
}

/// What the open timeline asked of the pager, if any.
fn open_following(app: &App) -> Option<&Following> {
    match app.overlay() {
        Overlay::Timeline(t) => t.following(),
        _ => None,
    }
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
fn in_memory(model: &Model, follow: &Follow) -> Vec<Step> {
    let Some(c) = model.conns.get(&follow.conn()) else {
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
