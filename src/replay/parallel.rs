//! `amqpeek check` on every core: the offline driver's sharded run (see
//! [`crate::driver::offline::run_sharded`]) with the verdict as the sink, each thread keeping
//! the report of its own connections.
//!
//! Findings are per connection, and each connection is inspected by one thread in capture
//! order, so joining the threads' reports gives the single-threaded verdict whatever the
//! number of threads and however the connections were dealt.

use std::num::NonZeroUsize;

use super::ReplayStats;
use crate::capture::SourceEvent;
use crate::driver::offline::{self, Shard};
use crate::event::Event;
use crate::pipeline::InspectOptions;
use crate::verdict::CheckReport;

/// What `check` asks of the inspectors: no bytes held, no state snapshots, credentials
/// masked, the default inspection budget.
const CHECK_OPTIONS: InspectOptions = InspectOptions {
    emit_data: false,
    emit_state: false,
    emit_frames: false,
    ..InspectOptions::DEFAULT
};

/// The threads `check` uses unless told otherwise: the available parallelism, at least 1.
pub fn default_jobs() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}

/// What a check of a capture found.
#[derive(Debug)]
pub struct CheckRun {
    /// The verdict.
    pub report: CheckReport,
    /// Connections, frames, bytes, violations and read errors.
    pub stats: ReplayStats,
    /// Worker threads used (1: everything on the calling thread).
    pub jobs: NonZeroUsize,
}

/// Check every connection of `source` with `jobs` worker threads (1: on the calling thread,
/// no threads started). The result does not depend on `jobs`.
///
/// A panic in a worker (a bug) is resumed on the calling thread, as it would have happened
/// there with one thread.
pub fn check(source: impl IntoIterator<Item = SourceEvent>, jobs: NonZeroUsize) -> CheckRun {
    check_within(source, jobs, CHECK_OPTIONS.inspect_memory)
}

/// [`check`], each connection's inspection holding at most `inspect_memory` bytes
/// (`--inspect-memory`).
pub fn check_within(
    source: impl IntoIterator<Item = SourceEvent>,
    jobs: NonZeroUsize,
    inspect_memory: usize,
) -> CheckRun {
    check_with(
        source,
        jobs,
        InspectOptions {
            inspect_memory,
            ..CHECK_OPTIONS
        },
    )
}

/// What a check takes of `opts`: the rest, with no bytes held and no state snapshots (a check
/// reads neither; a snapshot per batch of a connection with N links open costs O(N), so
/// making them would turn a capture of many links quadratic).
fn for_check(opts: InspectOptions) -> InspectOptions {
    InspectOptions {
        emit_data: false,
        emit_state: false,
        emit_frames: false,
        ..opts
    }
}

/// [`check_within`] with `opts` (their `emit_data` and `emit_state` are ignored: a check needs
/// no bytes and no snapshots), for diagnosis thresholds other than the catalog's.
pub fn check_with(
    source: impl IntoIterator<Item = SourceEvent>,
    jobs: NonZeroUsize,
    opts: InspectOptions,
) -> CheckRun {
    let (report, stats) = counted(offline::run_sharded(source, for_check(opts), jobs));
    CheckRun {
        report,
        stats,
        jobs,
    }
}

/// The report of a sharded check and the driver's counts, the report's frames being the
/// driver's: the inspectors sent a frame as an event only when violations followed it
/// ([`InspectOptions::emit_frames`]), and the driver counted them all.
fn counted((Verdict(mut report), stats): (Verdict, ReplayStats)) -> (CheckReport, ReplayStats) {
    report.set_frames(stats.frames);
    (report, stats)
}

/// What one thread keeps of its connections' events for the verdict: their report.
#[derive(Default)]
struct Verdict(CheckReport);

impl Shard for Verdict {
    fn take(&mut self, events: &mut Vec<Event>) {
        self.0.tally_all(events);
        events.clear();
    }

    fn absorb(&mut self, other: Self) {
        self.0.absorb(other.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Format;

    /// Connections 1..=n interleaved, each with a protocol header then a frame size below 8
    /// (framing lost: one violation each), some closed, and a read error in the middle.
    fn events(n: u64) -> Vec<SourceEvent> {
        crate::driver::test_events::interleaved(n, |_| b"AMQP\x00\x01\x00\x00\x00\x00\x00\x03")
    }

    #[test]
    fn any_number_of_jobs_gives_the_single_threaded_report() {
        let one = check(events(40), NonZeroUsize::MIN);
        assert_eq!(one.stats.connections, 40);
        assert_eq!(one.report.totals().0, 40);
        assert_eq!(one.report.findings().len(), 40);
        let text = |r: &CheckRun| {
            r.report
                .render(Format::Json, "x", crate::event::Severity::Info)
        };
        for jobs in [2, 3, 8] {
            let many = check(events(40), NonZeroUsize::new(jobs).unwrap());
            assert_eq!(many.jobs.get(), jobs);
            assert_eq!(many.stats, one.stats, "jobs {jobs}");
            assert_eq!(text(&many), text(&one), "jobs {jobs}");
        }
    }

    #[test]
    fn the_readers_own_share_changes_nothing() {
        let one = check(events(40), NonZeroUsize::MIN);
        let text = |r: &CheckRun| {
            r.report
                .render(Format::Json, "x", crate::event::Severity::Info)
        };
        // 0: the reader keeps every connection; MAX: it keeps none; in between, some.
        for local_at in [0, 1, 100, 300, usize::MAX] {
            for jobs in [2, 3] {
                let (report, stats) = counted(offline::run_sharded_at(
                    events(40),
                    CHECK_OPTIONS,
                    NonZeroUsize::new(jobs).unwrap(),
                    local_at,
                ));
                let many = CheckRun {
                    report,
                    stats,
                    jobs: NonZeroUsize::new(jobs).unwrap(),
                };
                assert_eq!(many.stats, one.stats, "jobs {jobs}, local_at {local_at}");
                assert_eq!(text(&many), text(&one), "jobs {jobs}, local_at {local_at}");
            }
        }
    }

    #[test]
    fn a_check_holding_frames_back_reports_what_tallying_every_frame_reports() {
        // Every shipped capture: the check's inspectors send a frame as an event only when
        // violations follow it; the report (findings with their channels and links, frame
        // and connection counts) is the one a report fed every frame makes.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
        let mut scoped = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().and_then(|e| e.to_str());
            if !matches!(ext, Some("jsonl" | "pcapng" | "pcap")) {
                continue;
            }
            let open = || crate::capture::open(&path, Default::default()).unwrap();
            let held_back = check(open(), NonZeroUsize::MIN);
            let every_frame = InspectOptions {
                emit_frames: true,
                ..CHECK_OPTIONS
            };
            let (Verdict(report), stats) =
                offline::run_sharded(open(), every_frame, NonZeroUsize::MIN);
            let text = |r: &CheckReport| r.render(Format::Json, "x", crate::event::Severity::Info);
            assert_eq!(text(&held_back.report), text(&report), "{path:?}");
            assert_eq!(held_back.stats, stats, "{path:?}");
            assert!(held_back.report.totals().1 > 0, "{path:?}: no frames");
            scoped += usize::from(text(&report).contains("\"handle\""));
        }
        assert!(scoped > 0, "no shipped capture has a finding on a link");
    }

    #[test]
    fn an_empty_source_gives_an_empty_report() {
        let run = check(Vec::new(), NonZeroUsize::new(2).unwrap());
        assert_eq!(run.stats, ReplayStats::default());
        assert!(run.report.findings().is_empty());
    }
}

#[cfg(test)]
mod check_option_tests {
    use super::*;

    #[test]
    fn a_check_makes_no_snapshots_and_holds_no_bytes_whatever_it_is_given() {
        let given = InspectOptions {
            emit_data: true,
            emit_state: true,
            ..InspectOptions::DEFAULT
        };
        let memory = given.inspect_memory;
        let used = for_check(given);
        assert!(!used.emit_state && !used.emit_data && !used.emit_frames);
        assert_eq!(used.inspect_memory, memory);
    }
}
