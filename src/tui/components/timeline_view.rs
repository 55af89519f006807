//! The timeline overlay's component (`L`): what is followed (a link or a channel) and the
//! cursor over its frames (`timeline.rs` lists them). Opening it asks the pager for the
//! whole capture's followed frames when there is one; Enter selects the frame under the
//! cursor in the frame list; Esc or `L` closes it.

use super::super::app::Effect;
use super::super::model::Model;
use super::super::timeline::{Follow, Following, entries_in};
use super::Outcome;
use super::cursor::Cursor;
use crate::browse::follow::FollowRequest;
use crate::tui::input::Action;

/// What the timeline follows and its cursor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineView {
    follow: Follow,
    cursor: Cursor,
}

impl TimelineView {
    /// What is followed.
    pub fn follow(&self) -> &Follow {
        &self.follow
    }

    /// The cursor.
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }

    /// Rows the timeline shows on a screen of `size`: the screen but the status line, less
    /// its borders and column header.
    pub fn page(size: (u16, u16)) -> usize {
        (size.1 as usize).saturating_sub(4).max(1)
    }

    /// Follow `follow`, the cursor on row `seq`. When the pager can, the whole capture's
    /// followed frames are asked of it: the effect that asks is returned, and `model` says
    /// they are being read.
    pub fn open(follow: Follow, seq: Option<u64>, model: &mut Model) -> (Self, Option<Effect>) {
        model.paging.following = None;
        let mut effect = None;
        if model.pages() && model.pager_ready() {
            let request = FollowRequest {
                id: model.paging.next_id(),
                follow: follow.clone(),
                around: seq.unwrap_or(0),
            };
            effect = Some(Effect::Follow(request.clone()));
            model.paging.following = Some(Following {
                request,
                steps: None,
                cut: (false, false),
            });
        }
        let at = entries_in(model, &follow)
            .iter()
            .position(|e| Some(e.seq) == seq)
            .unwrap_or(0);
        let mut cursor = Cursor::default();
        cursor.select(at);
        cursor.clamp(at + 1, Self::page(model.size));
        (TimelineView { follow, cursor }, effect)
    }

    /// A key while the timeline is open: moves; Enter selects the frame under the cursor
    /// ([`Outcome::Jump`]); Esc and `L` close it.
    pub fn handle_key(&mut self, a: Action, model: &Model) -> Outcome {
        let items = entries_in(model, &self.follow);
        let (len, h) = (items.len(), Self::page(model.size));
        if self.cursor.step(a, len, h).is_some() {
            return Outcome::Consumed;
        }
        match a {
            Action::Escape | Action::Timeline => Outcome::Close,
            Action::Enter => match items.get(self.cursor.selected()) {
                Some(e) => Outcome::Jump {
                    conn: self.follow.conn(),
                    seq: e.seq,
                    focus: true,
                    message: None,
                },
                None => Outcome::Close,
            },
            _ => Outcome::Ignored,
        }
    }

    /// The followed frames of the whole capture have come, `len` of them: the cursor goes
    /// to the `at`th, the frame the timeline was opened on, centred.
    pub fn centre_on(&mut self, at: usize, len: usize, size: (u16, u16)) {
        self.cursor.centre(at, len, Self::page(size));
    }
}
