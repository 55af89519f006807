//! A condition that may become a diagnosis: since when it holds, when it is due (it has held
//! its threshold), the frames that show it; and the [`Ctx`] the diagnosers report through.
//!
//! A condition costs no heap until it is due: only a started one keeps its [`Diagnosis`], to
//! end it with the same content.

use crate::base::{
    Check, ConnId, Diagnosis, EndWhy, Ended, FrameRef, Limit, MAX_EVIDENCE, ScopeKind, Timestamp,
};

use super::Thresholds;

/// A condition of one scope (see the module doc).
#[derive(Clone, Debug)]
pub struct Cond {
    /// Its check.
    pub check: &'static Check,
    /// Since when it holds.
    pub since: Timestamp,
    /// When it becomes a diagnosis (µs since the epoch).
    pub due: i64,
    /// The frames that show it, the one it holds since first.
    pub ev: [Option<FrameRef>; 2],
    /// A number the detail tells (credit, count, window...).
    pub n: u64,
    /// A wire string the detail tells (an error condition), already quoted and escaped.
    pub note: Option<Box<str>>,
    /// The diagnosis, once started.
    pub started: Option<Box<Diagnosis>>,
}

impl Cond {
    /// Where it holds since, for a detail: `c2s offset 403` (so a detail says `at c2s offset
    /// 403`).
    pub fn place(&self) -> String {
        match self.ev[0] {
            Some(a) => format!("{} offset {}", a.dir.as_str(), a.offset),
            None => "offset ?".into(),
        }
    }

    /// With `note` for the detail.
    pub fn noting(mut self, note: String) -> Cond {
        self.note = Some(note.into());
        self
    }

    /// With `n` for the detail.
    pub fn with_n(mut self, n: u64) -> Cond {
        self.n = n;
        self
    }
}

/// What every condition of one connection is judged by: the connection, the thresholds, and
/// the earliest time a condition not yet started is due.
#[derive(Debug)]
pub struct Core {
    /// The connection.
    pub conn: ConnId,
    /// The thresholds.
    pub limits: Thresholds,
    /// The earliest due time of a condition not yet started (µs; `i64::MAX`: none).
    pub next_due: i64,
}

/// What a diagnoser reports through: the connection's [`Core`] and where diagnoses go. Two
/// references, handed on by value (in registers) along the per-frame path.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The connection, its thresholds and its next due time.
    pub core: &'a mut Core,
    /// Diagnoses started and ended, in order.
    pub out: &'a mut Vec<Diagnosis>,
}

impl Ctx<'_> {
    /// The same context, for a shorter time (to hand on by value).
    #[inline(always)]
    pub fn reborrow(&mut self) -> Ctx<'_> {
        Ctx {
            core: &mut *self.core,
            out: &mut *self.out,
        }
    }

    /// A condition of `check` holding since `since` (shown by the frame `at`), due after the
    /// check's threshold (`interval` µs for a negotiated one); `None` when the threshold is
    /// not a duration.
    pub fn arm(
        &mut self,
        check: &'static Check,
        since: Timestamp,
        at: FrameRef,
        interval: Option<i64>,
    ) -> Option<Cond> {
        let wait = self.wait(check, interval)?;
        Some(self.at(check, since, at, since.0.saturating_add(wait)))
    }

    /// How long a condition of `check` holds before it is due (µs; `interval` for a negotiated
    /// threshold): `None` when the threshold is not a duration (see [`Ctx::arm`]).
    #[inline]
    pub fn wait(&self, check: &'static Check, interval: Option<i64>) -> Option<i64> {
        match self.core.limits.limit(check) {
            Limit::After(us) => Some(us),
            Limit::Negotiated => interval,
            Limit::Count(_) => Some(0),
            Limit::Before(_) => None,
        }
    }

    /// A condition of `check` holding since `since`, due at `due`.
    pub fn at(&mut self, check: &'static Check, since: Timestamp, at: FrameRef, due: i64) -> Cond {
        self.core.next_due = self.core.next_due.min(due);
        Cond {
            check,
            since,
            due,
            ev: [Some(at), None],
            n: 0,
            note: None,
            started: None,
        }
    }

    /// Start `cond` if it is due at `now` (`name` and `detail` say which scope and what the
    /// frames show); else note when it will be.
    pub fn fire(
        &mut self,
        cond: &mut Cond,
        now: i64,
        scope: ScopeKind,
        name: &dyn Fn() -> String,
        detail: &dyn Fn(&Cond) -> String,
    ) {
        if cond.started.is_some() {
            return;
        }
        if cond.due > now {
            self.core.next_due = self.core.next_due.min(cond.due);
            return;
        }
        let mut evidence: Vec<FrameRef> = cond.ev.iter().flatten().copied().collect();
        evidence.truncate(MAX_EVIDENCE);
        let d = Diagnosis {
            check: cond.check,
            conn: self.core.conn,
            scope,
            name: name(),
            since: cond.since,
            at: Timestamp(cond.due.max(cond.since.0)),
            evidence,
            detail: detail(cond),
            ended: None,
        };
        self.out.push(d.clone());
        cond.started = Some(Box::new(d));
    }

    /// End `cond` (and take it), at `ts`, by the frame `frame` if one ended it, for `why`: a
    /// diagnosis it started ends; one not started yet is dropped. Inlined where the frames
    /// call it: most often there is no condition, and that is told without moving one.
    #[inline]
    pub fn end(
        &mut self,
        cond: &mut Option<Cond>,
        ts: Timestamp,
        frame: Option<FrameRef>,
        why: EndWhy,
    ) {
        if cond.is_some() {
            self.end_held(cond, ts, frame, why);
        }
    }

    /// [`Ctx::end`] of a condition held.
    #[inline(never)]
    fn end_held(
        &mut self,
        cond: &mut Option<Cond>,
        ts: Timestamp,
        frame: Option<FrameRef>,
        why: EndWhy,
    ) {
        if let Some(c) = cond.take() {
            self.finish(c, ts, frame, why);
        }
    }

    /// End a condition already taken out of its scope.
    pub fn finish(&mut self, cond: Cond, ts: Timestamp, frame: Option<FrameRef>, why: EndWhy) {
        if let Some(mut d) = cond.started {
            d.ended = Some(Ended { ts, frame, why });
            self.out.push(*d);
        }
    }
}
