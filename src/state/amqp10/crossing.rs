//! Detaches whose verdict waits for what the peer does next (AMQP 1.0 §2.6.6): a non-closing
//! detach that follows the partner's closing detach is either an answer that fails to close the
//! link, or a detach that crossed the closing one on the wire. "Note that one peer MAY send a
//! closing detach while its partner is sending a non-closing detach. In this case, the partner
//! MUST signal that it has closed the link by reattaching and then sending a closing detach."
//! The two look alike until the peer either reattaches the link (crossing: fine) or moves on
//! without doing so (ends the session, closes the connection, or the connection ends): only
//! then is `detach-not-closed` reported, at the offset of the non-closing detach.
//!
//! Bounded: at most [`MAX_UNCLOSED`] detaches wait; beyond, a new one is judged at once. An
//! attach (every attach asks whether it resolves a waiting detach) looks its name up in a
//! count of the waiting ones by name, and walks the list only when one of them has it.

use crate::base::{Dir, Violation};
use crate::hash::HashMap;
use crate::state::visits::visit;

use super::{ConnectionTracker, peer_name, rules};

/// Most non-closing detaches waiting for a reattach, per connection.
pub const MAX_UNCLOSED: usize = 1024;

/// A non-closing detach sent after the partner's closing detach of the same link.
#[derive(Clone, Debug)]
pub struct UnclosedDetach {
    /// The session of the link.
    pub session: u64,
    /// Link name.
    pub name: String,
    /// The link's sending peer (a link is named by name and direction).
    pub sender: Dir,
    /// The peer that sent the non-closing detach.
    pub by: Dir,
    /// Offset of that detach.
    pub offset: u64,
}

/// The detaches waiting, in the order they came, and how many of them name each link name.
#[derive(Clone, Debug, Default)]
pub struct Unclosed {
    waiting: Vec<UnclosedDetach>,
    names: HashMap<String, usize>,
}

impl Unclosed {
    /// Keep the waiting detaches `keep` says (in order); the count by name follows.
    fn retain(&mut self, mut keep: impl FnMut(&UnclosedDetach) -> bool) {
        visit(self.waiting.len());
        let names = &mut self.names;
        self.waiting.retain(|u| {
            let kept = keep(u);
            if !kept && let Some(n) = names.get_mut(u.name.as_str()) {
                *n -= 1;
                if *n == 0 {
                    names.remove(u.name.as_str());
                }
            }
            kept
        });
    }
}

impl ConnectionTracker {
    /// `d` answered (or crossed) the partner's closing detach with a non-closing one.
    pub(crate) fn detach_unclosed(&mut self, u: UnclosedDetach, out: &mut Vec<Violation>) {
        if self.unclosed.waiting.len() >= MAX_UNCLOSED {
            report(&u, "", out);
            return;
        }
        *self.unclosed.names.entry(u.name.clone()).or_default() += 1;
        self.unclosed.waiting.push(u);
    }

    /// `d` attached link `name` (sent by `sender`) on session `sid` again: a crossing detach
    /// resolved as §2.6.6 asks.
    pub(crate) fn reattached(&mut self, d: Dir, sid: u64, name: &str, sender: Dir) {
        if !self.unclosed.names.contains_key(name) {
            return;
        }
        self.unclosed
            .retain(|u| !(u.by == d && u.session == sid && u.name == name && u.sender == sender));
    }

    /// `d` left without reattaching (`what`: the end of session `sid`, or with `None` its close
    /// or the connection's end): report what it left unclosed.
    pub(crate) fn unclosed_judged(
        &mut self,
        d: Option<Dir>,
        sid: Option<u64>,
        what: &str,
        out: &mut Vec<Violation>,
    ) {
        self.unclosed.retain(|u| {
            let due = d.is_none_or(|d| u.by == d) && sid.is_none_or(|s| u.session == s);
            if due {
                report(u, what, out);
            }
            !due
        });
    }

    /// Bytes of `d` were missed: a reattach may be among them.
    pub(crate) fn unclosed_forget(&mut self, d: Dir) {
        self.unclosed.retain(|u| u.by != d);
    }
}

fn report(u: &UnclosedDetach, what: &str, out: &mut Vec<Violation>) {
    out.push(rules::LINK_DETACH_NOT_CLOSED.violation(
        u.by,
        u.offset,
        format!(
            "link {:?}: the {} answered a closing detach (closed=true) with a detach without closed=true{}",
            u.name,
            peer_name(u.by),
            if what.is_empty() {
                String::new()
            } else {
                format!(", and {what} without reattaching the link to close it")
            }
        ),
    ));
}
