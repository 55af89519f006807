//! Session frames (AMQP 1.0 §2.5, §2.7.2, §2.7.8): begin pairing by remote-channel, end, the
//! channel maps of both peers, and finding the session a frame belongs to.

use crate::codec::amqp10::Begin;
use crate::event::{Dir, FrameEvent, Violation};

use super::session::Session;
use super::{ConnectionTracker, peer_name, rules};

impl ConnectionTracker {
    /// The session `d` sends `name` on `channel` for; learned after a gap, reported otherwise.
    pub(crate) fn session_for(
        &mut self,
        d: Dir,
        channel: u16,
        fe: &FrameEvent,
        name: &str,
        out: &mut Vec<Violation>,
    ) -> Option<u64> {
        if let Some(id) = self.channels[d.index()].get(&channel) {
            return Some(*id);
        }
        if self.peer(d).unknown {
            let id = self.new_id();
            self.sessions.insert(id, Session::new(d, channel, false));
            self.channels[d.index()].insert(channel, id);
            return Some(id);
        }
        out.push(rules::SESSION_FRAME_ON_UNMAPPED_CHANNEL.violation(
            d,
            fe.offset,
            format!(
                "{name} on channel {channel}, where the {} has no session (no begin sent, or already ended)",
                peer_name(d)
            ),
        ));
        None
    }

    pub(crate) fn on_begin(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        channel: u16,
        b: &Begin,
        out: &mut Vec<Violation>,
    ) {
        let p = d.flip();
        if let Some(old) = self.channels[d.index()].remove(&channel) {
            out.push(rules::SESSION_BEGIN_ON_CHANNEL_IN_USE.violation(
                d,
                fe.offset,
                format!(
                    "begin on channel {channel}, which the {} already uses for a session it has not ended",
                    peer_name(d)
                ),
            ));
            if let Some(s) = self.sessions.get_mut(&old) {
                s.ended[d.index()] = true;
            }
        }
        let mut id = None;
        if let Some(rc) = b.remote_channel {
            let pending = self.channels[p.index()].get(&rc).copied().filter(|sid| {
                self.sessions
                    .get(sid)
                    .is_some_and(|s| s.channel[d.index()].is_none() && !s.ended[d.index()])
            });
            match pending {
                Some(sid) => id = Some(sid),
                None if self.peer(p).unknown => {}
                None => out.push(rules::SESSION_REMOTE_CHANNEL_ON_LOCAL_BEGIN.violation(
                    d,
                    fe.offset,
                    format!(
                        "begin on channel {channel} has remote-channel {rc}, but the {} has no begin on channel {rc} awaiting an answer{}",
                        peer_name(p),
                        if self.channels[p.index()].contains_key(&rc) {
                            " (that session is already mapped)"
                        } else {
                            ""
                        }
                    ),
                )),
            }
        }
        let id = match id {
            Some(sid) => sid,
            None => {
                let sid = self.new_id();
                let mut s = Session::new(d, channel, true);
                if b.remote_channel.is_none() {
                    s.initiator = Some(d);
                } else {
                    s.known = !self.peer(p).unknown;
                }
                self.sessions.insert(sid, s);
                sid
            }
        };
        self.channels[d.index()].insert(channel, id);
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        s.channel[d.index()] = Some(channel);
        let side = &mut s.side[d.index()];
        side.begun = true;
        side.initial_outgoing_id = Some(b.next_outgoing_id);
        side.next_outgoing_id = Some(b.next_outgoing_id);
        side.incoming_window = Some(b.incoming_window);
        side.outgoing_window = Some(b.outgoing_window);
        side.handle_max = Some(b.handle_max);
        s.begin_grants();
    }

    pub(crate) fn on_end(
        &mut self,
        d: Dir,
        fe: &FrameEvent,
        channel: u16,
        out: &mut Vec<Violation>,
    ) {
        let Some(id) = self.session_for(d, channel, fe, "end", out) else {
            return;
        };
        self.channels[d.index()].remove(&channel);
        self.unclosed_judged(Some(d), Some(id), "ended the session", out);
        let link_ids: Vec<u64> = self
            .links
            .iter()
            .filter(|(_, l)| l.session == id)
            .map(|(k, _)| *k)
            .collect();
        for lid in &link_ids {
            self.drain_check(*lid, d, fe.offset, "end", out);
            if let Some(l) = self.links.get_mut(lid)
                && l.handle[d.index()].take().is_some()
            {
                l.detached[d.index()] = Some(false);
            }
        }
        let done = match self.sessions.get_mut(&id) {
            Some(s) => {
                s.ended[d.index()] = true;
                s.handles[d.index()].clear();
                s.ended[0] && s.ended[1]
            }
            None => false,
        };
        if done {
            self.sessions.remove(&id);
            for lid in link_ids {
                self.links.remove(&lid);
            }
        }
    }
}
