//! The timeline overlay's component (`L`): what is followed (a link or a channel), the
//! cursor over its frames (`timeline.rs` lists them), and the whole capture's followed frames
//! it asked the pager for, when there is one. Enter selects the frame under the cursor in the
//! frame list; Esc or `L` closes it.

use super::super::app::Effect;
use super::super::model::Model;
use super::super::timeline::{Entry, Follow, Following, entries_in};
use super::Outcome;
use super::cursor::Cursor;
use crate::browse::follow::{FollowRequest, Followed};
use crate::tui::input::Action;

/// What the timeline follows, its cursor, and what it asked of the pager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineView {
    follow: Follow,
    cursor: Cursor,
    /// The followed frames of the whole capture, asked (and, once come, brought back).
    following: Option<Following>,
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

    /// What it asked of the pager, if anything.
    pub fn following(&self) -> Option<&Following> {
        self.following.as_ref()
    }

    /// Whether its frames are still being read from the capture.
    pub fn reading(&self) -> bool {
        self.following.as_ref().is_some_and(Following::reading)
    }

    /// Whether followed frames were left out of those brought back: before the first, after
    /// the last.
    pub fn cut(&self) -> (bool, bool) {
        self.following.as_ref().map_or((false, false), |f| f.cut)
    }

    /// The frames it lists (see [`entries_in`]).
    pub fn entries(&self, model: &Model) -> Vec<Entry> {
        entries_in(model, &self.follow, self.following.as_ref())
    }

    /// Follow `follow` in `model`, the cursor on row `seq`. When the pager can, the whole
    /// capture's followed frames are asked of it by request `id` (a number of the pager's
    /// requests): the effect that asks is returned, and the view says they are being read.
    pub fn open(
        follow: Follow,
        seq: Option<u64>,
        model: &Model,
        id: u64,
    ) -> (Self, Option<Effect>) {
        let mut view = TimelineView {
            follow,
            cursor: Cursor::default(),
            following: None,
        };
        let mut effect = None;
        if model.pages() && model.pager_ready() {
            let request = FollowRequest {
                id,
                follow: view.follow.clone(),
                around: seq.unwrap_or(0),
            };
            effect = Some(Effect::Follow(request.clone()));
            view.following = Some(Following::asked(request));
        }
        let at = view
            .entries(model)
            .iter()
            .position(|e| Some(e.seq) == seq)
            .unwrap_or(0);
        view.cursor.select(at);
        view.cursor.clamp(at + 1, Self::page(model.size));
        (view, effect)
    }

    /// The followed frames of the whole capture have come (kept when they answer its
    /// request): the cursor goes to the frame the timeline was opened on, centred on a screen
    /// of `size`.
    pub fn followed(&mut self, f: Followed, size: (u16, u16)) {
        if let Some((at, len)) = self.following.as_mut().and_then(|x| x.store(f)) {
            self.centre_on(at, len, size);
        }
    }

    /// A key while the timeline is open: moves; Enter selects the frame under the cursor
    /// ([`Outcome::Jump`]); Esc and `L` close it.
    pub fn handle_key(&mut self, a: Action, model: &Model) -> Outcome {
        let items = self.entries(model);
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

    /// The cursor to the `at`th of `len` frames, centred on a screen of `size`.
    fn centre_on(&mut self, at: usize, len: usize, size: (u16, u16)) {
        self.cursor.centre(at, len, Self::page(size));
    }
}
