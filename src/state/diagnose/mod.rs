//! Diagnoses: why a flow is stuck or about to fail (see [`crate::base::Diagnosis`] and the
//! [`catalog`]). One [`Diagnoser`] per connection, fed by the pipeline's inspector with each
//! frame (its decoded form and the context the state layer gave it) and with clock ticks.
//!
//! Sans-IO like every tracker: time comes in as the frames' timestamps and as
//! [`Diagnoser::tick`]'s argument (the driver's clock live, the capture's times offline), and a
//! diagnosis starts at the time its condition had held its threshold, whichever tick noticed
//! it; so live and offline runs of the same frames give the same diagnoses.
//!
//! Bounded: conditions live in the state of the scope they are about (a link, a session, a
//! channel, a consumer, the connection), which is kept only while the peers have it open;
//! waiting deliveries are those the frame context follows (at most
//! [`crate::state::context::MAX_OPEN`] a connection); the names remembered across scopes
//! (detached links, cancelled consumers' queues, CBS audiences, redelivered message ids) are
//! capped at [`MAX_NAMES`].

pub mod amqp091;
pub mod amqp10;
pub mod catalog;
pub mod cond;
mod thresholds;
pub mod waiting;

pub use thresholds::Thresholds;

use crate::base::{ConnId, Diagnosis, Dir, EndWhy, Timestamp};
use crate::protocol::FrameEvent;
use cond::{Core, Ctx};

/// Names remembered across scopes per connection, at most, for each kind (detached links,
/// cancelled consumers' queues, CBS audiences, redelivered message ids): past it, the oldest
/// diagnosis-less entries go first.
pub const MAX_NAMES: usize = 1024;

/// AMQP 1.0 links, and AMQP 0-9-1 consumers, judged per connection at most: the links
/// attached (consumers started) beyond them are not followed, so a connection holding a
/// million idle links costs the diagnoser no more than this many, and a clock tick past a due
/// time looks at no more than this many.
pub const MAX_SCOPES: usize = 4096;

/// The diagnoses of one protocol for one connection: implemented by each protocol that has
/// any, and named by its [`crate::state::Tracked::diagnoser`].
pub trait Diagnosing: std::fmt::Debug + Send {
    /// The entries held (scopes and names remembered).
    fn entries(&self) -> usize;
    /// The clock reads `now` (µs): conditions that have held their threshold by then start.
    fn due(&mut self, cx: &mut Ctx<'_>, now: i64);
    /// A frame of the protocol, seen at `ts`, with its context filled in.
    fn frame(&mut self, cx: Ctx<'_>, fe: &FrameEvent, ts: Timestamp);
    /// The frame `fe`, seen at `ts`, which starts a delivery that awaits no settlement and
    /// settles nothing, taken in full if it can change no count a diagnosis reads beyond what
    /// is already counted, end or start no diagnosis, and needs no [`Ctx`]: true when taken
    /// (then [`Diagnosing::frame`] is not called for it). The default takes none.
    fn quiet(&mut self, _fe: &FrameEvent, _ts: Timestamp) -> bool {
        false
    }
    /// Every diagnosis still held ends at `ts`, as `why` says.
    fn end_all(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, why: EndWhy);
}

/// One connection's diagnoses (see the module doc).
#[derive(Debug)]
pub struct Diagnoser {
    /// The connection, its thresholds, and the earliest due time of a condition not yet
    /// started (µs).
    core: Core,
    proto: Option<Box<dyn Diagnosing>>,
}

impl Diagnoser {
    /// A diagnoser of connection `conn` with `limits`.
    pub fn new(conn: ConnId, limits: Thresholds) -> Diagnoser {
        Diagnoser {
            core: Core {
                conn,
                limits,
                next_due: i64::MAX,
            },
            proto: None,
        }
    }

    #[inline(always)]
    fn ctx<'a>(
        &'a mut self,
        out: &'a mut Vec<Diagnosis>,
    ) -> (Ctx<'a>, Option<&'a mut Box<dyn Diagnosing>>) {
        let cx = Ctx {
            core: &mut self.core,
            out,
        };
        (cx, self.proto.as_mut())
    }

    /// The entries held: links, sessions, channels, consumers, and the names remembered
    /// across scopes (at most [`MAX_SCOPES`] links or consumers, 2 × 65,536 session
    /// endpoints or channels, and [`MAX_NAMES`] of each kind of name).
    pub fn entries(&self) -> usize {
        self.proto.as_ref().map_or(0, |d| d.entries())
    }

    /// The clock reads `now`: conditions that have held their threshold by then start.
    #[inline]
    pub fn tick(&mut self, now: Timestamp, out: &mut Vec<Diagnosis>) {
        if now.0 < self.core.next_due {
            return;
        }
        self.core.next_due = i64::MAX;
        let (mut cx, proto) = self.ctx(out);
        if let Some(d) = proto {
            d.due(&mut cx, now.0);
        }
    }

    /// A frame, seen at `ts`, with its context filled in.
    #[inline]
    pub fn frame(&mut self, fe: &FrameEvent, ts: Timestamp, out: &mut Vec<Diagnosis>) {
        self.tick(ts, out);
        // Most frames of a flood start a delivery that awaits nothing: the protocol's
        // diagnoser may take such a frame whole, with no context made for it.
        if fe.context.starts_unawaited()
            && let Some(d) = &mut self.proto
            && d.quiet(fe, ts)
        {
            return;
        }
        if self.proto.is_none() {
            self.proto = crate::state::register::diagnoser(fe.frame.protocol());
        }
        let (cx, proto) = self.ctx(out);
        if let Some(d) = proto {
            d.frame(cx, fe, ts);
        }
        // A condition due at once (a zero threshold) starts at its frame.
        self.tick(ts, out);
    }

    /// Bytes of `dir` were missed: whatever was followed may have changed unseen. Every
    /// diagnosis ends (its state is unknown) and the scopes are forgotten: what is judged
    /// again is what the frames after the gap open anew.
    pub fn gap(&mut self, _dir: Dir, ts: Timestamp, out: &mut Vec<Diagnosis>) {
        self.tick(ts, out);
        self.end_all(ts, EndWhy::Unknown, out);
    }

    /// The connection ended at `ts` (closed, or the capture ended: `why`): what is due by
    /// then starts, and every diagnosis still held ends.
    pub fn close(&mut self, ts: Timestamp, why: EndWhy, out: &mut Vec<Diagnosis>) {
        self.tick(ts, out);
        self.end_all(ts, why, out);
    }

    fn end_all(&mut self, ts: Timestamp, why: EndWhy, out: &mut Vec<Diagnosis>) {
        let (mut cx, proto) = self.ctx(out);
        if let Some(d) = proto {
            d.end_all(&mut cx, ts, why);
        }
        self.proto = None;
        self.core.next_due = i64::MAX;
    }
}

/// The silence of one peer watched against an interval (a heartbeat, an idle time-out).
#[derive(Debug, Default)]
struct Idle {
    /// The interval, µs (`None`: not watched).
    interval: Option<i64>,
    cond: Option<cond::Cond>,
    /// The peer's latest frame (its time, and where it is) while `cond` is held and not
    /// started: the condition holds since that frame, and is brought up to it
    /// ([`Idle::sync`]) before it is judged, so a frame only notes it here.
    latest: Option<(Timestamp, crate::base::FrameRef)>,
}

impl Idle {
    /// Whether [`Idle::touch`] would only note a frame (no diagnosis to end, no watch to
    /// arm): then [`Idle::note`] does it without a [`Ctx`].
    #[inline]
    fn notes_only(&self) -> bool {
        self.latest.is_some() || self.interval.is_none()
    }

    /// [`Idle::touch`] where [`Idle::notes_only`] holds.
    #[inline]
    fn note(&mut self, ts: Timestamp, at: crate::base::FrameRef) {
        if let Some(latest) = &mut self.latest {
            *latest = (ts, at);
        }
    }

    /// The peer sent a frame at `ts`: a silence diagnosis ends, the watch starts over.
    /// Inlined into every frame's path: a watch not started only notes the frame.
    #[inline]
    fn touch(
        &mut self,
        cx: Ctx<'_>,
        check: &'static catalog::Check,
        ts: Timestamp,
        at: crate::base::FrameRef,
    ) {
        match self.interval {
            Some(interval) if !self.notes_only() => self.restart(cx, check, ts, at, interval),
            _ => self.note(ts, at),
        }
    }

    /// [`Idle::touch`] of a watch that started a diagnosis, or holds none: the diagnosis ends,
    /// a new watch is armed.
    #[inline(never)]
    fn restart(
        &mut self,
        mut cx: Ctx<'_>,
        check: &'static catalog::Check,
        ts: Timestamp,
        at: crate::base::FrameRef,
        interval: i64,
    ) {
        cx.end(&mut self.cond, ts, Some(at), EndWhy::Cleared);
        self.cond = cx.arm(check, ts, at, Some(interval));
        self.latest = self.cond.as_ref().map(|_| (ts, at));
    }

    /// The condition held brought up to the peer's latest frame: it holds since then, and is
    /// due an interval after.
    fn sync(&mut self) {
        if let (Some((ts, at)), Some(c), Some(interval)) =
            (self.latest, &mut self.cond, self.interval)
        {
            c.since = ts;
            c.due = ts.0.saturating_add(interval);
            c.ev[0] = Some(at);
        }
    }

    /// Watch at `interval` µs from `ts` (the frame `at` negotiated it).
    fn watch(
        &mut self,
        cx: &mut Ctx<'_>,
        check: &'static catalog::Check,
        ts: Timestamp,
        at: crate::base::FrameRef,
        interval: i64,
    ) {
        let interval = match cx.core.limits.limit(check) {
            crate::base::Limit::After(us) => us,
            _ => interval,
        };
        self.interval = Some(interval);
        self.cond = None;
        self.latest = None;
        self.touch(cx.reborrow(), check, ts, at);
    }

    /// Fire if due; `who` is the silent peer.
    fn due(&mut self, cx: &mut Ctx<'_>, now: i64, who: Dir) {
        self.sync();
        let Some(c) = &mut self.cond else {
            return;
        };
        let name = || match who {
            Dir::C2S => "client".to_string(),
            Dir::S2C => "server".to_string(),
        };
        let detail = |c: &cond::Cond| {
            format!(
                "the {} sent nothing for {} ms after its frame at {}",
                name(),
                (c.due - c.since.0) / 1000,
                c.place()
            )
        };
        cx.fire(c, now, crate::base::ScopeKind::Connection, &name, &detail);
        if c.started.is_some() {
            self.latest = None;
        }
    }

    /// Stop watching (the connection is closing), ending a diagnosis.
    fn stop(&mut self, cx: &mut Ctx<'_>, ts: Timestamp, why: EndWhy) {
        self.interval = None;
        self.latest = None;
        cx.end(&mut self.cond, ts, None, why);
    }
}
