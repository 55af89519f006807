//! The collector: takes a run's events and keeps its findings (coalesced, see
//! [`finding`](super::finding)), with the connection and frame totals. A [`Sink`] for the
//! proxy and replay; `check`'s threads each keep one and [`CheckReport::absorb`] joins them.

use std::collections::HashMap;

use crate::event::{ConnId, Dir, Event, EventKind, Severity, Violation};
use crate::pipeline::Sink;

use super::finding::{Finding, FindingKey, Occurrence, Scope};
use super::format::Format;
use super::judge::Verdict;
use super::policy::Policy;

/// Collects a run's findings; [`CheckReport::judge`] gives the verdict.
#[derive(Debug, Default)]
pub struct CheckReport {
    findings: HashMap<FindingKey, Finding>,
    connections: u64,
    frames: u64,
    /// The last frame seen, whose violations follow it: (connection, direction, offset, where).
    last_frame: Option<(ConnId, Dir, u64, Scope)>,
    /// The run's diagnoses (they judge nothing unless `--fail-on-diagnosis` asks).
    diagnoses: super::Diagnoses,
}

impl CheckReport {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record one violation at `scope` (channel / link; narrowed to what the rule is about).
    pub fn record(&mut self, conn: ConnId, ts: String, v: &Violation, scope: Scope) {
        let key = FindingKey {
            rule: v.rule.id.to_string(),
            conn,
            dir: v.dir,
            scope: scope.for_rule(v.rule.id),
        };
        let occ = Occurrence {
            ts,
            offset: v.offset,
            message: v.message.clone(),
            frame: v.frame.clone(),
        };
        match self.findings.get_mut(&key) {
            Some(f) => f.add(occ),
            None => {
                let f = Finding::new(key.clone(), v, occ);
                self.findings.insert(key, f);
            }
        }
    }

    /// Take one pipeline event: count connections and frames, record violations. A frame's
    /// own violations come right after it, carrying its summary, so they get its channel and
    /// link. Any other violation (judged at the connection's end, say) gets none, even when it
    /// names that frame's offset: whether another connection's events came in between depends
    /// on how a parallel check dealt the connections, and the verdict must not.
    pub fn tally(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::Frame(_) => {
                self.frames += 1;
                self.note_frame(ev);
                return;
            }
            EventKind::Violation(v) => {
                let scope = match self.last_frame {
                    Some((c, d, o, s))
                        if v.frame.is_some() && c == ev.conn && d == v.dir && o == v.offset =>
                    {
                        s
                    }
                    _ => Scope::default(),
                };
                self.record(ev.conn, ev.ts.rfc3339(), v, scope);
                return;
            }
            EventKind::Connect { .. } => self.connections += 1,
            EventKind::Close(_)
            | EventKind::Fin { .. }
            | EventKind::Header { .. }
            | EventKind::Data { .. }
            | EventKind::Undecoded { .. }
            | EventKind::Gap { .. }
            | EventKind::State(_) => {}
            EventKind::Diagnosis(d) => self.diagnoses.take(d),
        }
        self.last_frame = None;
    }

    /// [`CheckReport::tally`] of each of `events`, in order, and the same report: a frame's
    /// scope (its channel and link) is worked out only when a violation follows the frame,
    /// not for every frame.
    pub fn tally_all(&mut self, events: &[Event]) {
        // The latest frame of `events` whose scope is not worked out yet, by position.
        let mut pending: Option<usize> = None;
        for (i, ev) in events.iter().enumerate() {
            match &ev.kind {
                EventKind::Frame(_) => {
                    self.frames += 1;
                    pending = Some(i);
                }
                _ => {
                    if let Some(at) = pending.take() {
                        self.note_frame(&events[at]);
                    }
                    self.tally(ev);
                }
            }
        }
        if let Some(at) = pending {
            self.note_frame(&events[at]);
        }
    }

    /// `ev` (a frame, already counted) is the latest frame: its violations follow it.
    fn note_frame(&mut self, ev: &Event) {
        if let EventKind::Frame(f) = &ev.kind {
            self.last_frame = Some((ev.conn, f.dir, f.offset, Scope::of_frame(&f.frame)));
        }
    }

    /// The run's frame count is `frames`, as its driver counted them (a check's inspectors
    /// send a frame as an event only when violations follow it).
    pub fn set_frames(&mut self, frames: u64) {
        self.frames = frames;
    }

    /// Add what another report found (another thread's connections: findings never overlap,
    /// as each connection is inspected by one thread).
    pub fn absorb(&mut self, other: CheckReport) {
        self.diagnoses.absorb(other.diagnoses);
        self.connections += other.connections;
        self.frames += other.frames;
        for (key, f) in other.findings {
            match self.findings.get_mut(&key) {
                Some(mine) => {
                    // Not reached for disjoint connections; kept correct anyway.
                    mine.count += f.count - f.first.len() as u64;
                    for o in f.first {
                        mine.add(o);
                    }
                    if let Some(l) = f.last {
                        mine.last = Some(l);
                    }
                }
                None => {
                    self.findings.insert(key, f);
                }
            }
        }
    }

    /// Findings in report order (rule, connection, peer, place); see [`Verdict`] for the
    /// order by severity.
    pub fn findings(&self) -> Vec<&Finding> {
        let mut v: Vec<&Finding> = self.findings.values().collect();
        v.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        v
    }

    /// Occurrences at `severity` (as reported, before any policy).
    pub fn count(&self, severity: Severity) -> u64 {
        self.findings
            .values()
            .filter(|f| f.severity == severity)
            .map(|f| f.count)
            .sum()
    }

    /// The run's diagnoses.
    pub fn diagnoses(&self) -> &super::Diagnoses {
        &self.diagnoses
    }

    /// Connections and frames seen.
    pub fn totals(&self) -> (u64, u64) {
        (self.connections, self.frames)
    }

    /// The verdict under `policy`.
    pub fn judge<'a>(&'a self, policy: &'a Policy) -> Verdict<'a> {
        Verdict::new(self, policy)
    }

    /// True when a finding is at or above `fail_on`, with no policy.
    pub fn fails(&self, fail_on: Severity) -> bool {
        self.judge(&Policy::fail_on(fail_on)).fails()
    }

    /// The verdict with no policy but `fail_on`, rendered.
    pub fn render(&self, format: Format, source: &str, fail_on: Severity) -> String {
        self.judge(&Policy::fail_on(fail_on)).render(format, source)
    }
}

impl Sink for CheckReport {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.tally(ev);
        Ok(())
    }
}

/// A report shared with whoever reads the verdict (the proxy's `--fail-on`: the sink runs on
/// the inspection workers, the verdict is read at shutdown).
#[derive(Clone, Debug, Default)]
pub struct SharedReport(pub std::sync::Arc<std::sync::Mutex<CheckReport>>);

impl Sink for SharedReport {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        if matches!(
            ev.kind,
            EventKind::Connect { .. }
                | EventKind::Frame(_)
                | EventKind::Violation(_)
                | EventKind::Diagnosis(_)
        ) {
            // A poisoned lock means a panic elsewhere; the report itself is still sound.
            let mut r = self.0.lock().unwrap_or_else(|p| p.into_inner());
            r.tally(ev);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Timestamp;
    use crate::state::rules;
    use crate::verdict::Format;

    fn violation_event(conn: ConnId, rule: &'static rules::Rule, dir: Dir, offset: u64) -> Event {
        Event {
            conn,
            ts: Timestamp(offset as i64),
            kind: EventKind::Violation(rule.violation(dir, offset, "boom")),
        }
    }

    #[test]
    fn a_million_reports_of_one_rule_by_one_peer_are_one_finding() {
        let mut r = CheckReport::new();
        for i in 0..1_000_000 {
            r.tally(&violation_event(
                1,
                &rules::CODEC_MALFORMED_FRAME,
                Dir::S2C,
                i,
            ));
        }
        r.tally(&violation_event(
            1,
            &rules::CODEC_MALFORMED_FRAME,
            Dir::C2S,
            5,
        ));
        r.tally(&violation_event(
            2,
            &rules::CODEC_MALFORMED_FRAME,
            Dir::S2C,
            5,
        ));
        let f = r.findings();
        assert_eq!(f.len(), 3);
        assert_eq!((f[0].conn, f[0].dir, f[0].count), (1, Dir::C2S, 1));
        assert_eq!((f[1].conn, f[1].dir, f[1].count), (1, Dir::S2C, 1_000_000));
        assert_eq!(f[1].first().offset, 0);
        assert_eq!(f[1].last().offset, 999_999);
        assert_eq!(f[1].last().ts, Timestamp(999_999).rfc3339());
        assert_eq!(r.count(Severity::Error), 1_000_002);
    }

    #[test]
    fn absorbing_another_threads_report_adds_its_findings_and_totals() {
        let mut a = CheckReport::new();
        a.tally(&violation_event(
            1,
            &rules::CODEC_MALFORMED_FRAME,
            Dir::S2C,
            1,
        ));
        a.add_frames_for_test(3);
        let mut b = CheckReport::new();
        for i in 0..7 {
            b.tally(&violation_event(
                1,
                &rules::CODEC_MALFORMED_FRAME,
                Dir::S2C,
                10 + i,
            ));
        }
        b.add_frames_for_test(4);
        a.absorb(b);
        assert_eq!(a.totals(), (0, 7));
        let f = a.findings();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].count, 8);
        assert_eq!(f[0].first.len(), super::super::finding::SAMPLES);
        assert_eq!(f[0].last().offset, 16);
    }

    /// Every event of a shipped capture whose violations are at frames with a channel and a
    /// link (`conn 1 server ch0 link 0`).
    fn capture_events() -> Vec<Event> {
        #[derive(Clone, Default)]
        struct Keep(std::sync::Arc<std::sync::Mutex<Vec<Event>>>);
        impl Sink for Keep {
            fn event(&mut self, ev: &Event) -> std::io::Result<()> {
                self.0.lock().unwrap().push(ev.clone());
                Ok(())
            }
        }
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/amqp10-fe2o3.pcapng");
        let source = crate::capture::open(&path, Default::default()).unwrap();
        let keep = Keep::default();
        crate::driver::offline::run(
            source,
            crate::pipeline::InspectOptions::DEFAULT,
            vec![Box::new(keep.clone())],
            std::num::NonZeroUsize::MIN,
            crate::driver::offline::Pace::Batched,
        );
        std::mem::take(&mut *keep.0.lock().unwrap())
    }

    #[test]
    fn a_batch_tallied_at_once_gives_each_violation_its_frames_scope_wherever_it_is_cut() {
        let events = capture_events();
        let mut one_by_one = CheckReport::new();
        for ev in &events {
            one_by_one.tally(ev);
        }
        let text = |r: &CheckReport| r.render(Format::Text, "x", Severity::Info);
        let expected = text(&one_by_one);
        assert!(expected.contains("ch0 link 0"), "{expected}");
        for cut in 0..=events.len() {
            let mut batched = CheckReport::new();
            batched.tally_all(&events[..cut]);
            batched.tally_all(&events[cut..]);
            assert_eq!(batched.totals(), one_by_one.totals(), "cut at {cut}");
            assert_eq!(text(&batched), expected, "cut at {cut}");
        }
    }

    impl CheckReport {
        fn add_frames_for_test(&mut self, n: u64) {
            self.frames += n;
        }
    }
}
