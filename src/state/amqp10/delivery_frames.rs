//! Delivery frames (AMQP 1.0 §2.6.12 - §2.6.14, §2.7.5, §2.7.6), judged by the session that
//! owns the deliveries and the link they travel on: transfers (session window, link credit,
//! delivery-id/tag/format across `more` transfers, settlement, abort, resume) and dispositions
//! (ranges, role, settlement modes).

use crate::base::{Dir, Timestamp, Violation};
use crate::codec::amqp10::{Disposition, ReceiverSettleMode, Role, SenderSettleMode, Transfer};
use crate::protocol::FrameEvent;

use super::delivery::{Deliveries, Delivery, Partial, TagKey};
use super::link::Link;
use super::serial::{Judged, after};
use super::session::{MAX_TRACKED_DELIVERIES, Session, SessionSide};
use super::{At, peer_name, rules};

fn hex(b: &[u8]) -> String {
    let mut s = hex::encode(b.get(..32).unwrap_or(b));
    if b.len() > 32 {
        s.push_str("...");
    }
    s
}

impl Session {
    /// `at.d`'s transfer on `channel`: routed by handle to its link (reported when `d` has not
    /// attached the handle), then judged there ([`Session::transfer_on`]). The link it was
    /// routed to, if any.
    pub(crate) fn on_transfer(
        &mut self,
        at: At,
        channel: u16,
        t: &Transfer,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) -> Option<u64> {
        let lid = self.link_for(at, t.handle, "transfer", out)?;
        self.transfer_on(at, channel, lid, None, t, ts, out);
        Some(lid)
    }

    /// `at.d`'s transfer on `channel` to link `lid` (looked for at `slot` first; reported when
    /// `d` attached it as receiver), judged against the session window, then as the first or
    /// a continuation transfer of a delivery.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn transfer_on(
        &mut self,
        at: At,
        channel: u16,
        lid: u64,
        slot: Option<usize>,
        t: &Transfer,
        ts: Timestamp,
        out: &mut Vec<Violation>,
    ) {
        let (d, fe) = (at.d, at.fe);
        let Some(l) = self.links.at_or_get_mut(slot, lid) else {
            return;
        };
        if l.sender != d {
            out.push(rules::LINK_TRANSFER_FROM_RECEIVER.violation(
                d,
                fe.offset,
                format!(
                    "transfer on link {:?} (handle {}) from the {}, which attached it as receiver",
                    l.name,
                    t.handle,
                    peer_name(d)
                ),
            ));
            return;
        }
        session_window(&mut self.side[d.index()], self.known, d, channel, fe, out);
        if t.more && t.aborted {
            out.push(rules::DELIVERY_MORE_WITH_ABORTED.violation(
                d,
                fe.offset,
                format!(
                    "transfer on link {:?} sets more=true and aborted=true",
                    l.name
                ),
            ));
        }
        let settled_here = t.settled == Some(true);
        let last = !t.more || t.aborted;
        let uncounted = l.partial.as_ref().map_or(t.resume, |p| p.uncounted);
        let first = l
            .partial
            .as_ref()
            .map_or((t.message_format, t.resume), |p| {
                (p.message_format, p.resumed)
            });
        let book = &mut self.deliveries;
        // `tracked`: the first transfer put its delivery among the unsettled ones just now.
        let (delivery_id, complete_settled, tracked) = if let Some(p) = l.partial.as_mut() {
            let (id, settled) = continuation(p, &l.name, t, settled_here, d, fe, out);
            (id, settled, false)
        } else {
            l.first_transfer(book, self.known, lid, t, settled_here, at, out)
        };
        if last {
            l.partial = None;
            l.settle_mode_check(t, delivery_id, complete_settled, at, out);
            if let (Some(Err(e)), (format, false)) = (&fe.message, first) {
                l.message_decode_check(at, delivery_id, format, e, out);
            }
            // A complete message the receiver will have once it heard this transfer; only an
            // unsettled one can be named by its disposition.
            if !t.aborted
                && !uncounted
                && l.known
                && self.known
                && let Some(h) = l.heard
            {
                let count = h.wrapping_add(1);
                l.heard = Some(count);
                if let Some(id) = delivery_id
                    && !complete_settled
                    && (tracked || book.unsettled[d.index()].contains_key(&id))
                {
                    l.unheard.delivered(id, count);
                }
            }
        }
        // Settled (or aborted, implicitly settled): forget it.
        if let Some(id) = delivery_id {
            let dd = d.index();
            if settled_here || t.aborted {
                book.settle(dd, id);
            } else if last
                && !tracked
                && let Some(x) = book.unsettled[dd].get_mut(&id)
            {
                // (A delivery tracked by this transfer is complete already.)
                x.complete = true;
            }
        }
        l.sample(ts);
    }

    /// `at.d`'s disposition: its role must be one `d` has a link of on the session; the
    /// deliveries it settles are forgotten, a receiver settling first in mode second reported.
    pub(crate) fn on_disposition(&mut self, at: At, x: &Disposition, out: &mut Vec<Violation>) {
        let (d, fe) = (at.d, at.fe);
        let r = usize::from(x.role == Role::Receiver);
        let role = super::link::role_name(x.role);
        if self.known && !at.sender_missed() && !self.roles[d.index()][r] {
            out.push(rules::DISPOSITION_ROLE_MISMATCH.violation(
                d,
                fe.offset,
                format!(
                    "disposition role={role} for deliveries {}..{} from the {}, which has no {role} link on this session",
                    x.first,
                    x.last.unwrap_or(x.first),
                    peer_name(d)
                ),
            ));
            return;
        }
        // A receiver's disposition is about deliveries its partner sent, and vice versa.
        let sent_by = if x.role == Role::Receiver {
            d.flip()
        } else {
            d
        };
        let sb = sent_by.index();
        let last = x.last.unwrap_or(x.first);
        // The receiver names what it has heard: each link's newest delivery named.
        let heard = x.role == Role::Receiver && self.known && !at.any_missed();
        if !x.settled {
            if heard {
                self.heard_through(sb, x.first, last);
            }
            // A state without settlement changes nothing else a rule judges.
            return;
        }
        let mut second_early = Vec::new();
        let mut newest = NewestByLink::default();
        let links = &self.links;
        // A range is of one link as a rule: the link is looked up once for a run of it (its
        // id, its receiver's settle mode, whether it is known).
        let mut link: Option<(u64, Option<ReceiverSettleMode>, bool)> = None;
        // The deliveries settled are those named, in the same order: what was heard is noted
        // as they go (its links' logs are not read or changed by the settlement).
        self.deliveries.settle_range(sb, x.first, last, |id, del| {
            if x.role != Role::Receiver {
                return;
            }
            if heard {
                newest.note(del.link, id);
            }
            let (mode, known) = match link {
                Some((lid, mode, known)) if lid == del.link => (mode, known),
                _ => {
                    let l = links.get(&del.link);
                    let (mode, known) = (
                        l.and_then(Link::rcv_settle_mode),
                        l.is_some_and(|l| l.known),
                    );
                    link = Some((del.link, mode, known));
                    (mode, known)
                }
            };
            if settles_second_early(del.rcv_settle_mode, mode, known) {
                second_early.push(id);
            }
        });
        if heard {
            self.heard_newest(sb, newest);
        }
        if !second_early.is_empty() {
            out.push(rules::DELIVERY_SETTLE_MODE_BROKEN.violation(
                d,
                fe.offset,
                format!(
                    "the receiver settled deliveries {:?} in rcv-settle-mode second before the sender settled them",
                    second_early
                ),
            ));
        }
    }
}

/// The newest delivery named of each link, in the order the links come: the first link apart
/// (a range is of one link as a rule), the others listed.
#[derive(Default)]
struct NewestByLink {
    one: Option<(u64, u32)>,
    others: Vec<(u64, u32)>,
}

impl NewestByLink {
    /// Delivery `id` of link `lid` is named (after those noted before it).
    #[inline]
    fn note(&mut self, lid: u64, id: u32) {
        match &mut self.one {
            Some(e) if e.0 == lid => e.1 = id,
            None => self.one = Some((lid, id)),
            Some(_) => match self.others.iter_mut().find(|(l, _)| *l == lid) {
                Some(e) => e.1 = id,
                None => self.others.push((lid, id)),
            },
        }
    }
}

impl Session {
    /// The receiver's disposition named the unsettled deliveries of `first..=last` (sent by
    /// direction index `sb`): each link they travelled on has received them and everything its
    /// sender sent before them, and its receiver knows the count they bring.
    fn heard_through(&mut self, sb: usize, first: u32, last: u32) {
        let mut newest = NewestByLink::default();
        for (id, del) in self.deliveries.in_range(sb, first, last) {
            newest.note(del.link, id);
        }
        self.heard_newest(sb, newest);
    }

    /// [`Session::heard_through`] of the newest delivery named of each link.
    fn heard_newest(&mut self, sb: usize, newest: NewestByLink) {
        for (lid, id) in newest.one.into_iter().chain(newest.others) {
            if let Some(l) = self
                .links
                .get_mut(&lid)
                .filter(|l| l.sender.index() == sb && l.known)
                && let Some(count) = l.unheard.heard_through(id)
            {
                l.rcv_floor = Some(count);
            }
        }
    }
}

/// A receiver settling a delivery whose transfer asked for `asked` (on a link whose receiver
/// attached with `link_mode`, the link `known`) settles first in rcv-settle-mode second.
/// §2.7.5: with the link negotiated as first, "it is illegal to set this field to second": a
/// transfer that does is the sender's violation, and the receiver settling first answers it
/// correctly (the link's mode holds). Not judged on a link not known (or not tracked).
#[inline]
fn settles_second_early(
    asked: Option<ReceiverSettleMode>,
    link_mode: Option<ReceiverSettleMode>,
    known: bool,
) -> bool {
    let mode = match (asked, link_mode) {
        (Some(ReceiverSettleMode::Second), Some(ReceiverSettleMode::First)) => link_mode,
        (Some(m), _) => Some(m),
        (None, l) => l,
    };
    mode == Some(ReceiverSettleMode::Second) && known
}

/// Session flow control (§2.5.6): one transfer-id per transfer frame, judged against every
/// incoming-window grant the sender may still be acting on.
#[inline]
fn session_window(
    side: &mut SessionSide,
    session_known: bool,
    d: Dir,
    channel: u16,
    fe: &FrameEvent,
    out: &mut Vec<Violation>,
) {
    if let Some(tid) = side.next_outgoing_id {
        let judged = side.limit.judge(tid, false);
        if session_known && judged == Judged::InFlight && !side.limit.in_flight_reported {
            side.limit.in_flight_reported = true;
            out.push(rules::SESSION_EXCESS_NOT_JUDGED.violation(
                d,
                fe.offset,
                format!(
                    "transfer-id {tid} on channel {channel} is beyond the {}'s latest incoming-window but within an earlier, larger one the {} may not have seen replaced yet: the excess is not judged",
                    peer_name(d.flip()),
                    peer_name(d)
                ),
            ));
        }
        if session_known && judged == Judged::Exceeded {
            let g = side.limit.cur.unwrap_or(super::serial::Grant {
                base: tid,
                amount: 0,
            });
            out.push(rules::SESSION_INCOMING_WINDOW_EXCEEDED.violation(
                d,
                fe.offset,
                format!(
                    "transfer-id {tid} on channel {channel}: the {} allowed transfer-ids {}..{} (next-incoming-id {} + incoming-window {})",
                    peer_name(d.flip()),
                    g.base,
                    g.base.wrapping_add(g.amount),
                    g.base,
                    g.amount
                ),
            ));
        }
        side.next_outgoing_id = Some(tid.wrapping_add(1));
    }
}

/// A continuation transfer of the delivery in progress: the first transfer's values must not
/// change. Returns the delivery's id and whether it is settled so far.
fn continuation(
    p: &mut Partial,
    name: &str,
    t: &Transfer,
    settled_here: bool,
    d: Dir,
    fe: &FrameEvent,
    out: &mut Vec<Violation>,
) -> (Option<u32>, bool) {
    // A continuation: the first transfer's values must not change.
    let mut diffs = Vec::new();
    if let (Some(a), Some(b)) = (p.delivery_id, t.delivery_id)
        && a != b
    {
        diffs.push(format!("delivery-id {b} (first transfer: {a})"));
    }
    if let (Some(a), Some(b)) = (&p.tag, &t.delivery_tag)
        && a != b
    {
        diffs.push(format!(
            "delivery-tag {} (first transfer: {})",
            hex(b),
            hex(a)
        ));
    }
    if let (Some(a), Some(b)) = (p.message_format, t.message_format)
        && a != b
    {
        diffs.push(format!("message-format {b} (first transfer: {a})"));
    }
    if !diffs.is_empty() {
        out.push(rules::DELIVERY_CONTINUATION_MISMATCH.violation(
            d,
            fe.offset,
            format!(
                "continuation transfer {} of link {:?} has {}",
                p.transfers + 1,
                name,
                diffs.join(", ")
            ),
        ));
    }
    p.transfers = p.transfers.saturating_add(1);
    p.settled |= settled_here;
    (p.delivery_id, p.settled)
}

impl Link {
    /// The last transfer of a delivery: settled or not as the sender's snd-settle-mode says.
    fn settle_mode_check(
        &self,
        t: &Transfer,
        delivery_id: Option<u32>,
        complete_settled: bool,
        at: At,
        out: &mut Vec<Violation>,
    ) {
        if !self.known {
            return;
        }
        let mode = self.snd_settle_mode();
        let broken = match mode {
            SenderSettleMode::Settled => !complete_settled && !t.aborted,
            SenderSettleMode::Unsettled => complete_settled,
            SenderSettleMode::Mixed | SenderSettleMode::Other(_) => false,
        };
        if broken {
            out.push(rules::DELIVERY_SETTLE_MODE_BROKEN.violation(
                at.d,
                at.offset(),
                format!(
                    "delivery {} on link {:?} sent {} although the sender's snd-settle-mode is {}",
                    delivery_id.map_or("?".into(), |i| i.to_string()),
                    self.name,
                    if complete_settled {
                        "settled"
                    } else {
                        "unsettled"
                    },
                    super::link::snd_mode_name(mode)
                ),
            ));
        }
    }

    /// The first transfer of a new delivery: judged against the link's state and credit, then
    /// counted and recorded on the session. Returns its delivery-id, whether it is settled, and
    /// whether it is now tracked among the session's unsettled deliveries.
    #[allow(clippy::too_many_arguments)]
    fn first_transfer(
        &mut self,
        book: &mut Deliveries,
        session_known: bool,
        lid: u64,
        t: &Transfer,
        settled_here: bool,
        at: At,
        out: &mut Vec<Violation>,
    ) -> (Option<u32>, bool, bool) {
        let (d, fe) = (at.d, at.fe);
        let known = self.known && session_known;
        self.first_transfer_checks(known, t, d, fe, out);
        self.delivery_count = self.delivery_count.map(|c| c.wrapping_add(1));
        self.deliveries = self.deliveries.saturating_add(1);
        let tracked = match t.delivery_id {
            Some(id) => self.new_delivery(book, known, lid, id, t, settled_here, at, out),
            None => false,
        };
        if t.more && !t.aborted {
            self.partial = Some(Partial {
                delivery_id: t.delivery_id,
                tag: t.delivery_tag.clone(),
                message_format: t.message_format,
                settled: settled_here,
                transfers: 1,
                uncounted: t.resume,
                resumed: t.resume,
            });
        }
        (t.delivery_id, settled_here, tracked)
    }

    /// Delivery `id`, new on this link: tracked among the session's unsettled deliveries
    /// (unless settled, aborted or past the cap) and, on a known link, judged against them
    /// (id reused or not rising, tag reused). Returns whether it is now tracked.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn new_delivery(
        &mut self,
        book: &mut Deliveries,
        known: bool,
        lid: u64,
        id: u32,
        t: &Transfer,
        settled_here: bool,
        at: At,
        out: &mut Vec<Violation>,
    ) -> bool {
        let (d, fe) = (at.d, at.fe);
        let dd = d.index();
        let tracked =
            !settled_here && !t.aborted && book.unsettled[dd].len() < MAX_TRACKED_DELIVERIES;
        // The tag (an absent one as the empty tag) as a ShortTag, when looked up or kept.
        let (mut short, mut top) = (None, None);
        if (known && t.delivery_tag.is_some()) || tracked {
            short = TagKey::short_of(t.delivery_tag.as_ref());
            top = book.index_unless_rising(dd, short, self.top_tag);
        }
        let indexed = book.indexed[dd];
        // A tracked delivery goes in now, before the checks: the map is searched once, and
        // what it held at `id` is what they would have found there (nothing else reads or
        // changes `unsettled` on the way; the tag index is updated after them).
        let old = if tracked {
            book.unsettled[dd].insert(
                id,
                Delivery {
                    link: lid,
                    tag: TagKey::of(t.delivery_tag.as_ref(), short),
                    rcv_settle_mode: t.rcv_settle_mode,
                    complete: !t.more,
                },
            )
        } else {
            None
        };
        if known {
            let reused = if tracked {
                old.is_some()
            } else {
                book.unsettled[dd].contains_key(&id)
            };
            if reused {
                out.push(rules::DELIVERY_ID_REUSED.violation(
                    d,
                    fe.offset,
                    format!(
                        "delivery-id {id} on link {:?} while delivery {id} is still unsettled on this session",
                        self.name
                    ),
                ));
            } else if let Some(prev) = book.last_id[dd]
                && !after(id, prev)
            {
                out.push(rules::DELIVERY_ID_NOT_INCREASING.violation(
                    d,
                    fe.offset,
                    format!(
                        "delivery-id {id} on link {:?} does not follow the session's previous delivery-id {prev}",
                        self.name
                    ),
                ));
            }
            if let Some(tag) = &t.delivery_tag
                && indexed
                && let Some(other) = book.tags[dd].get(&(lid, TagKey::of(Some(tag), short)))
            {
                out.push(rules::DELIVERY_TAG_REUSED.violation(
                    d,
                    fe.offset,
                    format!(
                        "delivery-tag {} on link {:?} (delivery-id {id}) is still used by unsettled delivery {other}",
                        hex(tag),
                        self.name
                    ),
                ));
            }
        }
        book.last_id[dd] = Some(id);
        if tracked {
            if indexed {
                if let Some(old) = old {
                    book.tags[dd].remove(&(old.link, old.tag));
                }
                let key = TagKey::of(t.delivery_tag.as_ref(), short);
                book.tags[dd].insert((lid, key), id);
            } else {
                self.top_tag = top;
            }
        }
        tracked
    }

    /// What the first transfer of a delivery must get right: its fields, a resume the sender's
    /// attach allows, no new delivery after an incomplete unsettled map, the link's credit (§2.6.7,
    /// against every grant the sender may still act on), the receiver's settle mode.
    fn first_transfer_checks(
        &mut self,
        known: bool,
        t: &Transfer,
        d: Dir,
        fe: &FrameEvent,
        out: &mut Vec<Violation>,
    ) {
        let complete =
            t.delivery_id.is_some() && t.delivery_tag.is_some() && t.message_format.is_some();
        if self.known && !complete {
            let missing: Vec<&str> = [
                ("delivery-id", t.delivery_id.is_none()),
                ("delivery-tag", t.delivery_tag.is_none()),
                ("message-format", t.message_format.is_none()),
            ]
            .iter()
            .filter(|(_, m)| *m)
            .map(|(n, _)| *n)
            .collect();
            out.push(rules::DELIVERY_FIRST_TRANSFER_INCOMPLETE.violation(
                d,
                fe.offset,
                format!(
                    "first transfer of a delivery on link {:?} lacks {}",
                    self.name,
                    missing.join(", ")
                ),
            ));
        }
        if known {
            if t.resume {
                if let Some(a) = self.sender_attach().filter(|a| !a.incomplete_unsettled) {
                    let listed = match (&a.unsettled, &t.delivery_tag) {
                        (Some(tags), Some(tag)) => tags.contains(tag),
                        _ => false,
                    };
                    if !listed {
                        out.push(rules::DELIVERY_RESUME_NOT_UNSETTLED.violation(
                            d,
                            fe.offset,
                            format!(
                                "resumed transfer on link {:?} with tag {} that the sender's attach unsettled map does not list",
                                self.name,
                                t.delivery_tag.as_deref().map_or("(none)".into(), hex)
                            ),
                        ));
                    }
                }
            } else if self
                .receiver_attach()
                .is_some_and(|a| a.incomplete_unsettled)
            {
                out.push(rules::LINK_NEW_DELIVERY_AFTER_INCOMPLETE_UNSETTLED.violation(
                    d,
                    fe.offset,
                    format!(
                        "new delivery on link {:?} although the receiver's attach set incomplete-unsettled",
                        self.name
                    ),
                ));
            }
            self.credit_check(d, fe, out);
            if t.rcv_settle_mode == Some(ReceiverSettleMode::Second)
                && self.rcv_settle_mode() == Some(ReceiverSettleMode::First)
            {
                out.push(rules::DELIVERY_RCV_SETTLE_MODE_ILLEGAL.violation(
                    d,
                    fe.offset,
                    format!(
                        "transfer on link {:?} sets rcv-settle-mode second; the receiver attached with first",
                        self.name
                    ),
                ));
            }
        }
    }

    /// Link flow control (§2.6.7): a new delivery needs link-credit, judged against every grant the
    /// sender may still be acting on (an excess within an older, larger grant is not judged).
    fn credit_check(&mut self, d: Dir, fe: &FrameEvent, out: &mut Vec<Violation>) {
        let judged = self
            .delivery_count
            .map(|dc| (dc, self.credit.judge(dc, true)));
        if let Some((dc, Judged::InFlight)) = judged
            && !self.credit.in_flight_reported
        {
            self.credit.in_flight_reported = true;
            out.push(rules::LINK_EXCESS_NOT_JUDGED.violation(
                d,
                fe.offset,
                format!(
                    "link {:?}: delivery-count {dc} is beyond the receiver's latest link-credit but within an earlier, larger grant the sender may not have seen replaced yet: the excess is not judged",
                    self.name
                ),
            ));
        }
        if let Some((dc, Judged::Exceeded)) = judged {
            out.push(rules::LINK_TRANSFER_WITHOUT_CREDIT.violation(
                    d,
                    fe.offset,
                    match self.credit.cur {
                        Some(g) => format!(
                            "link {:?}: delivery-count {dc} reached the receiver's limit {} (delivery-count {} + link-credit {}): link-credit {}",
                            self.name,
                            g.base.wrapping_add(g.amount),
                            g.base,
                            g.amount,
                            g.remaining(dc)
                        ),
                        None => format!(
                            "link {:?}: transfer before the receiver granted any link-credit",
                            self.name
                        ),
                    },
                ));
        }
    }
}
