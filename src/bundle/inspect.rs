//! One capture into a bundle's folder: a single pass of the offline pipeline feeding the JSONL
//! and pcapng writers, the check report, the statistics and the peers' properties at once.

use std::io::BufWriter;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;

use crate::capture::{self, CaptureOptions};
use crate::driver::offline::{self, Pace};
use crate::pipeline::{InspectOptions, Sink};
use crate::sinks::pcapng::PcapngSink;
use crate::sinks::{JsonOptions, JsonlSink};
use crate::stats::Collector;
use crate::verdict::{CheckReport, Diagnoses, Format};

use super::environment::{Peer, PeerSink};
use super::{BundleError, BundleOptions};

/// The files of a capture's folder, as the README names them.
pub(super) const CAPTURE_JSONL: &str = "capture.jsonl";
/// The pcapng of the capture.
pub(super) const CAPTURE_PCAPNG: &str = "capture.pcapng";
/// The check report, its three formats.
pub(super) const CHECK_FILES: [(&str, Format); 3] = [
    ("check.txt", Format::Text),
    ("check.json", Format::Json),
    ("check.junit.xml", Format::Junit),
];
/// The statistics as text.
pub(super) const STATS_TXT: &str = "stats.txt";
/// The statistics as JSON.
pub(super) const STATS_JSON: &str = "stats.json";
/// The diagnoses, active and ended.
pub(super) const DIAGNOSES_TXT: &str = "diagnoses.txt";

/// What reading one capture found.
#[derive(Debug, Default)]
pub struct Inspected {
    /// Connections in it.
    pub connections: u64,
    /// The peers that named their product.
    pub peers: Vec<Peer>,
}

/// Read `capture` once and write its folder's files into `dir`.
pub fn inspect(capture: &Path, dir: &Path, opts: &BundleOptions) -> Result<Inspected, BundleError> {
    let input = |message: String| BundleError::Input {
        path: capture.to_path_buf(),
        message,
    };
    let source =
        capture::open(capture, CaptureOptions::default()).map_err(|e| input(e.to_string()))?;
    let out = |name: &str| dir.join(name);
    let create = |name: &str| {
        crate::files::create(&out(name)).map_err(|source| BundleError::Output {
            path: out(name),
            source,
        })
    };
    let jsonl = JsonlSink::new(
        BufWriter::new(create(CAPTURE_JSONL)?),
        JsonOptions {
            max_body: opts.max_body,
        },
    );
    let pcapng = PcapngSink::new(BufWriter::new(create(CAPTURE_PCAPNG)?)).map_err(|source| {
        BundleError::Output {
            path: out(CAPTURE_PCAPNG),
            source,
        }
    })?;
    let mut report = CheckReport::new();
    let mut collector = Collector::new();
    let mut peers = PeerSink::default();
    let inspect = InspectOptions {
        show_secrets: opts.show_secrets,
        emit_data: true,
        inspect_memory: opts.inspect_memory,
        max_body: opts.max_body,
        state_each_frame: false,
        emit_state: false,
        diagnosis: Some(Arc::new(opts.policy.thresholds.clone())),
        diagnoses: opts.policy.diagnoses,
        emit_frames: true,
    };
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![
        Box::new(jsonl),
        Box::new(pcapng),
        Box::new(&mut report),
        Box::new(&mut collector),
        Box::new(&mut peers),
    ];
    let jobs: NonZeroUsize = crate::replay::parallel::default_jobs();
    let done = offline::run(source, inspect, sinks, jobs, Pace::Batched);
    if done.stats.nothing_readable() {
        let why = done
            .stats
            .read_errors
            .first()
            .map(|(at, m)| format!("unreadable from byte {at}: {m}"))
            .unwrap_or_else(|| "unreadable".to_string());
        return Err(input(why));
    }
    if let Some(failure) = done.sink_failures.first() {
        return Err(BundleError::Output {
            path: dir.to_path_buf(),
            source: std::io::Error::other(failure.clone()),
        });
    }
    let name = capture.display().to_string();
    let verdict = report.judge(&opts.policy);
    let write = |file: &str, text: &str| {
        crate::files::write(&out(file), text.as_bytes()).map_err(|source| BundleError::Output {
            path: out(file),
            source,
        })
    };
    for (file, format) in CHECK_FILES {
        write(file, &verdict.render(format, &name))?;
    }
    let stats = collector.report();
    write(
        STATS_TXT,
        &format!(
            "amqpeek stats: {}\n{}",
            crate::base::escape::Escaped(&name),
            stats.text()
        ),
    )?;
    write(STATS_JSON, &(crate::json::to_string_pretty(&stats) + "\n"))?;
    write(DIAGNOSES_TXT, &diagnoses_text(report.diagnoses()))?;
    Ok(Inspected {
        connections: done.stats.connections,
        peers: peers.into_peers(),
    })
}

/// The diagnoses in two sections: those still active when the capture ended, and those that
/// ended, one line each (escaped by [`Diagnoses::line`]).
fn diagnoses_text(d: &Diagnoses) -> String {
    let all = d.list();
    let mut text = String::new();
    for (title, ended) in [("Active at the end of the capture", false), ("Ended", true)] {
        let of: Vec<_> = all.iter().filter(|d| d.ended.is_some() == ended).collect();
        text.push_str(&format!("{title}: {}\n", of.len()));
        for d in of {
            text.push_str("  ");
            text.push_str(&Diagnoses::line(d));
            text.push('\n');
        }
    }
    if d.total() as usize > all.len() {
        text.push_str(&format!(
            "({} diagnoses in all; the first {} are listed)\n",
            d.total(),
            all.len()
        ));
    }
    text
}
