//! The ring's dumper thread: waits for an armed dump to come due (or the run to end), writes
//! the store as JSONL, makes the pcapng from it, runs the after-dump hook, and removes the
//! dumps past `--dump-keep`.

use std::collections::VecDeque;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::capture::{self, CaptureOptions};
use crate::driver::offline::{self, Pace};
use crate::pipeline::InspectOptions;
use crate::sinks::pcapng::PcapngSink;
use crate::sinks::{JsonOptions, JsonlSink};

use super::{Armed, RingOptions, RingReport, Shared};

/// One dump's files.
#[derive(Clone, Debug)]
pub struct Dump {
    /// What fired it (a rule or diagnosis id, or `signal`).
    pub trigger: String,
    /// The JSONL capture.
    pub jsonl: PathBuf,
    /// The pcapng made from it.
    pub pcapng: PathBuf,
}

/// The dumper's loop, until the run ends.
pub(super) fn run(shared: &Shared, mut opts: RingOptions) -> RingReport {
    let mut report = RingReport::default();
    let mut kept: VecDeque<Vec<PathBuf>> = VecDeque::new();
    let mut state = shared.lock();
    loop {
        let due = match &state.armed {
            None if state.closing => break,
            None => {
                state = shared.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            Some(a) => a.due,
        };
        let now = Instant::now();
        if !state.closing && now < due {
            state = shared
                .wake
                .wait_timeout(state, due - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            continue;
        }
        let Some(armed) = state.armed.take() else {
            continue;
        };
        // Room for this one first: at most `--dump-keep` dumps exist at any time.
        while kept.len() >= opts.keep {
            for f in kept.pop_front().unwrap_or_default() {
                let _ = std::fs::remove_file(f);
            }
        }
        let (jsonl, pcapng) = names(&opts.dir, &armed);
        // The JSONL is written with the store locked (a consistent cut), the rest without.
        let written = write_jsonl(&state.store, &jsonl);
        drop(state);
        let mut files = vec![jsonl.clone()];
        match written.and_then(|()| {
            files.push(pcapng.clone());
            write_pcapng(&jsonl, &pcapng, &opts)
        }) {
            Ok(()) => {
                let dump = Dump {
                    trigger: armed.name.clone(),
                    jsonl,
                    pcapng,
                };
                tracing::info!(
                    "ring dump ({}): {}",
                    crate::base::escape::Escaped(&dump.trigger),
                    dump.jsonl.display()
                );
                if let Some(hook) = opts.after_dump.as_mut() {
                    match hook(&dump) {
                        Ok(more) => files.extend(more),
                        Err(e) => fail(&mut report, e),
                    }
                }
                report.dumps.push(dump);
            }
            Err(e) => fail(&mut report, e),
        }
        kept.push_back(files);
        state = shared.lock();
    }
    report
}

fn fail(report: &mut RingReport, e: String) {
    tracing::error!("{}", crate::base::escape::Escaped(&e));
    report.failures.push(e);
}

/// `DIR/amqpeek-ring-TIME-TRIGGER.jsonl` and `.pcapng`, the time to the millisecond in UTC
/// and the trigger's characters kept to letters, digits, `.`, `-` and `_`; numbered when that
/// name is taken.
fn names(dir: &Path, armed: &Armed) -> (PathBuf, PathBuf) {
    let trigger: String = armed
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let stamp = stamp(armed.at);
    let mut stem = format!("amqpeek-ring-{stamp}-{trigger}");
    let mut n = 1;
    while dir.join(format!("{stem}.jsonl")).exists() {
        n += 1;
        stem = format!("amqpeek-ring-{stamp}-{trigger}-{n}");
    }
    (
        dir.join(format!("{stem}.jsonl")),
        dir.join(format!("{stem}.pcapng")),
    )
}

/// `20261203T184501.123Z`.
fn stamp(at: crate::event::Timestamp) -> String {
    let t = at.rfc3339(); // 2026-12-03T18:45:01.123456Z
    let digits: String = t
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T' || *c == '.')
        .collect();
    // 20261203T184501.123456 -> keep milliseconds
    let cut = digits
        .find('.')
        .map_or(digits.len(), |i| (i + 4).min(digits.len()));
    format!("{}Z", &digits[..cut])
}

fn write_jsonl(store: &super::store::Store, path: &Path) -> Result<(), String> {
    let named = |e: std::io::Error| format!("ring dump {}: {e}", path.display());
    let file = crate::files::create(path).map_err(named)?;
    let mut sink = JsonlSink::new(BufWriter::new(file), JsonOptions::default());
    store.write_dump(&mut sink).map_err(named)?;
    sink.into_inner()
        .into_inner()
        .map_err(|e| named(e.into_error()))?
        .sync_all()
        .map_err(named)
}

/// The pcapng of the JSONL dump, made by the offline pipeline (masked as the records are).
fn write_pcapng(jsonl: &Path, pcapng: &Path, opts: &RingOptions) -> Result<(), String> {
    let named = |e: String| format!("ring dump {}: {e}", pcapng.display());
    let source =
        capture::open(jsonl, CaptureOptions::default()).map_err(|e| named(e.to_string()))?;
    let file = crate::files::create(pcapng).map_err(|e| named(e.to_string()))?;
    let sink = PcapngSink::new(BufWriter::new(file)).map_err(|e| named(e.to_string()))?;
    let inspect = InspectOptions {
        show_secrets: opts.show_secrets,
        emit_data: true,
        inspect_memory: opts.inspect_memory,
        max_body: opts.max_body,
        state_each_frame: false,
        emit_state: false,
        diagnosis: None,
        diagnoses: true,
        emit_frames: true,
    };
    let done = offline::run(
        source,
        inspect,
        vec![Box::new(sink)],
        std::num::NonZeroUsize::MIN,
        Pace::Batched,
    );
    match done.sink_failures.into_iter().next() {
        Some(e) => Err(named(e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_names_carry_the_time_and_a_clean_trigger() {
        let armed = Armed {
            name: "amqp091.basic.unknown-delivery-tag/../x".into(),
            at: crate::event::Timestamp(1_764_417_600_123_456),
            due: Instant::now(),
        };
        let dir = Path::new("/nonexistent-dir");
        let (j, p) = names(dir, &armed);
        assert_eq!(
            j,
            dir.join(
                "amqpeek-ring-20251129T120000.123Z-amqp091.basic.unknown-delivery-tag_.._x.jsonl"
            )
        );
        assert_eq!(p.extension().unwrap(), "pcapng");
    }
}
