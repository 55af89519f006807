//! The toy's connection tracker (its one rule) and frame context (no flows, no deliveries).

use crate::base::{Dir, FrameContext, Timestamp, Violation};
use crate::protocol::{AnyFrame, FrameEvent};
use crate::state::context::{At, ContextTracker};
use crate::state::{ProtocolTracker, Tracked, snapshot};

use super::Toy;
use super::codec::ToyFrame;
use super::rules::{MAX_ALLOWED, RULES, TOY_FRAME_TOO_LONG};

/// Judges each toy frame's length; counts frames for the state name.
#[derive(Debug, Default)]
pub struct ToyTracker {
    frames: u64,
}

impl ProtocolTracker for ToyTracker {
    fn frame(&mut self, fe: &FrameEvent, _: Timestamp, out: &mut Vec<Violation>) {
        let AnyFrame::Toy(f) = &fe.frame else {
            return;
        };
        self.frames = self.frames.saturating_add(1);
        if f.length > MAX_ALLOWED {
            out.push(TOY_FRAME_TOO_LONG.violation(
                fe.dir,
                fe.offset,
                format!(
                    "frame of {} payload bytes (at most {MAX_ALLOWED})",
                    f.length
                ),
            ));
        }
    }
    fn state_name(&self) -> String {
        format!("TOY {}", self.frames)
    }
    fn snapshot(&self) -> snapshot::Detail {
        snapshot::Detail::Toy(Box::new(ToySnapshot {
            frames: self.frames,
        }))
    }
}

/// What the toy tracker knows: how many frames it judged.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ToySnapshot {
    /// Frames judged.
    pub frames: u64,
}

impl snapshot::ProtocolSnapshot for ToySnapshot {
    fn approx_bytes(&self) -> usize {
        64
    }
    fn open_scopes(&self) -> [i64; 4] {
        [0; 4]
    }
}

/// The state pane's one line of a toy connection.
impl crate::tui::views::state_items::StateView for Toy {
    type Snapshot = ToySnapshot;
    fn items(s: &ToySnapshot, out: &mut Vec<crate::tui::views::state_items::StateItem>, _: usize) {
        out.push(crate::tui::views::state_items::StateItem {
            kind: crate::tui::views::state_items::ItemKind::Value,
            text: format!("toy frames: {}", s.frames),
            filter: None,
            credit: None,
        });
    }
}

/// The toy has no flows and no deliveries.
#[derive(Debug, Default)]
pub struct ToyContext;

impl ContextTracker for ToyContext {
    type Frame = ToyFrame;
    fn frame(&mut self, _: At, _: &ToyFrame, _: &mut FrameContext) {}
    fn gap(&mut self, _: Dir) {}
    fn open(&self) -> usize {
        0
    }
}

impl Tracked for Toy {
    type Context = ToyContext;
    type Snapshot = ToySnapshot;
    const RULES: &'static [&'static crate::base::Rule] = RULES;

    fn tracker() -> Box<dyn ProtocolTracker> {
        Box::new(ToyTracker::default())
    }
}
