//! Capture throughput: a large generated pcapng of realistic, spec-correct AMQP 0-9-1 and 1.0
//! conversations (written by `PcapngSink`), read back (a) through `capture::open` alone (block
//! parsing, link/IP/TCP decoding, reassembly), (b) as `amqpeek check` does, by the same code
//! (`replay::parallel::check`), with the default `--jobs` (printed) and with `--jobs 1`,
//! (c) as `amqpeek replay --no-tui --quiet --jsonl OUT` does (`driver::offline::run`, JSONL to
//! a file, with the default `--jobs` and with `--jobs 1`), and
//! (f) summed up as `amqpeek stats` does (`driver::offline::run` into a `stats::Collector`),
//! with the default `--jobs` and with `--jobs 1`, and
//! (d) dissected by `tshark -r FILE -Y amqp` printing per-PDU fields, best of two in the same run,
//! and (e) converted to JSON by `tshark -r FILE -T json` into a file (the job of (c)), best of two.
//!
//! The setup asserts that the generated capture checks clean (zero violations), so the numbers
//! measure real traffic, never the violation path.
//!
//! `AMQPEEK_BENCH_MB` sets the file size (default 150; 2 under `cargo test`);
//! `AMQPEEK_BENCH_TSHARK=0` skips tshark; `AMQPEEK_BENCH_ONESHOT=0` skips the printed timings.

/// The allocator the `amqpeek` binary uses, so check and replay run as shipped.
#[global_allocator]
static GLOBAL: amqpeek::base::allocator::Allocator = amqpeek::base::allocator::Allocator;

use std::fs::File;
use std::io::BufWriter;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Instant;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::driver::offline::{self, Pace};
use amqpeek::pipeline::InspectOptions;
use amqpeek::replay::parallel;
use amqpeek::sinks::JsonOptions;
use amqpeek::sinks::JsonlSink;
use amqpeek::stats::{Collector, StatsReport};
use amqpeek::verdict::CheckReport;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "support/conversations.rs"]
mod conversations;

/// Generate the capture (cached in target/ by size); returns (path, AMQP frames in it).
fn generate(mb: usize) -> (PathBuf, u64) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let path = dir.join(format!("bench-conv-v1-{mb}mb.pcapng"));
    let frames_path = path.with_extension("frames");
    if let (true, Ok(n)) = (path.exists(), std::fs::read_to_string(&frames_path))
        && let Ok(n) = n.trim().parse()
    {
        return (path, n);
    }
    // `target/` is not there when the build goes elsewhere (`CARGO_TARGET_DIR`).
    std::fs::create_dir_all(&dir).unwrap();
    let target = (mb * 1024 * 1024) as u64;
    let done = conversations::write(
        &path,
        &conversations::MIXED,
        conversations::Stop::Bytes(target),
    );
    std::fs::write(&frames_path, done.frames.to_string()).unwrap();
    (path, done.frames)
}

// ---------------------------------------------------------------- the measured paths

/// (a) Read, decode link/IP/TCP, reassemble; returns payload bytes.
fn read_all(path: &Path) -> u64 {
    let mut bytes = 0u64;
    for ev in capture::open(path, CaptureOptions::default()).unwrap() {
        if let SourceEvent::Chunk(c) = ev {
            bytes += c.bytes.len() as u64;
        }
    }
    bytes
}

/// (b) What `amqpeek check [--jobs N]` does, by the same code: read, reassemble, decode, track
/// state, collect the verdict, with the connections spread over `jobs` threads. Returns the
/// report and the frames decoded.
fn check(path: &Path, jobs: NonZeroUsize) -> (CheckReport, u64) {
    let source = capture::open(path, CaptureOptions::default()).unwrap();
    let run = parallel::check(source, jobs);
    (run.report, run.stats.frames)
}

/// (c) What `amqpeek replay CAPTURE --no-tui --quiet --jsonl OUT [--jobs N]` does, by the same
/// code (`driver::offline::run`); returns bytes written.
fn replay_jsonl(path: &Path, out: &Path, jobs: NonZeroUsize) -> u64 {
    let mut file = BufWriter::with_capacity(256 * 1024, File::create(out).unwrap());
    let source = capture::open(path, CaptureOptions::default()).unwrap();
    let opts = InspectOptions {
        show_secrets: false,
        emit_data: false,
        ..InspectOptions::DEFAULT
    };
    let sinks: Vec<Box<dyn amqpeek::pipeline::Sink + Send + '_>> =
        vec![Box::new(JsonlSink::new(&mut file, JsonOptions::default()))];
    let done = offline::run(source, opts, sinks, jobs, Pace::Batched);
    assert!(done.sink_failures.is_empty(), "{:?}", done.sink_failures);
    drop(file);
    std::fs::metadata(out).unwrap().len()
}

/// (f) What `amqpeek stats CAPTURE [--jobs N]` does, by the same code (`driver::offline::run`
/// into a `stats::Collector`); returns the report.
fn stats(path: &Path, jobs: NonZeroUsize) -> StatsReport {
    let source = capture::open(path, CaptureOptions::default()).unwrap();
    let opts = InspectOptions {
        emit_data: false,
        ..InspectOptions::DEFAULT
    };
    let mut collector = Collector::new();
    let sinks: Vec<Box<dyn amqpeek::pipeline::Sink + Send + '_>> = vec![Box::new(&mut collector)];
    let done = offline::run(source, opts, sinks, jobs, Pace::Batched);
    assert!(done.sink_failures.is_empty(), "{:?}", done.sink_failures);
    collector.report()
}

/// (d) tshark dissecting every AMQP PDU; returns (seconds, AMQP PDUs) or None without tshark.
fn tshark(path: &Path) -> Option<(f64, u64)> {
    let t = Instant::now();
    let out = std::process::Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-Y", "amqp", "-T", "fields"])
        .args(["-E", "occurrence=a", "-E", "aggregator=,"])
        .args([
            "-e",
            "amqp.type",
            "-e",
            "amqp.method.method",
            "-e",
            "amqp.performative",
        ])
        .output()
        .ok()?;
    let secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return None;
    }
    // One line per packet; the first column holds one frame type per AMQP PDU in it.
    let pdus = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let types = l.split('\t').next().unwrap_or("");
            if types.is_empty() {
                0
            } else {
                types.split(',').count() as u64
            }
        })
        .sum();
    Some((secs, pdus))
}

/// (e) tshark converting the same file to JSON (`tshark -r FILE -T json > OUT`), the job
/// `replay --jsonl` does; returns (seconds, bytes written) or None without tshark.
fn tshark_json(path: &Path, out: &Path) -> Option<(f64, u64)> {
    let file = File::create(out).ok()?;
    let t = Instant::now();
    let status = std::process::Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-T", "json"])
        .stdout(file)
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    let secs = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(out);
    status.success().then_some((secs, bytes))
}

/// Best-of-a-few timings of (a), (b), (c) and one of (d), printed next to (b)'s, with the ratios to tshark.
fn oneshot(path: &Path, jsonl_out: &Path, frames: u64, check_secs: f64) {
    let jobs = parallel::default_jobs();
    let size = std::fs::metadata(path).unwrap().len();
    let mbs = |secs: f64| size as f64 / 1e6 / secs;
    let fps = |secs: f64| frames as f64 / secs;
    // The best of a few passes: the machine is shared, and the first pass reads a cold file.
    let best = |n: usize, f: &mut dyn FnMut() -> u64| {
        (0..n)
            .map(|_| {
                let t = Instant::now();
                let r = f();
                (t.elapsed().as_secs_f64(), r)
            })
            .fold((f64::MAX, 0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (read_secs, payload) = best(3, &mut || read_all(path));
    let (c, _) = best(2, &mut || check(path, jobs).1);
    let check_secs = check_secs.min(c);
    let (check1_secs, _) = best(2, &mut || check(path, NonZeroUsize::MIN).1);
    let (jsonl_secs, jsonl_bytes) = best(2, &mut || replay_jsonl(path, jsonl_out, jobs));
    let (jsonl1_secs, _) = best(2, &mut || replay_jsonl(path, jsonl_out, NonZeroUsize::MIN));
    let (stats_secs, _) = best(2, &mut || stats(path, jobs).frames);
    let (stats1_secs, _) = best(2, &mut || stats(path, NonZeroUsize::MIN).frames);
    let line = |what: &str, secs: f64| {
        eprintln!(
            "{what:<28} {secs:7.2} s {:8.1} MB/s {:12.0} frames/s",
            mbs(secs),
            fps(secs)
        )
    };
    line("(a) read+reassemble", read_secs);
    line(&format!("(b) check (--jobs {jobs})"), check_secs);
    line("(b1) check --jobs 1", check1_secs);
    line(&format!("(c) replay --jsonl (--jobs {jobs})"), jsonl_secs);
    line("(c1) replay --jsonl --jobs 1", jsonl1_secs);
    line(&format!("(f) stats (--jobs {jobs})"), stats_secs);
    line("(f1) stats --jobs 1", stats1_secs);
    eprintln!("    ({payload} payload bytes, {jsonl_bytes} JSONL bytes written)");
    eprintln!(
        "stats / check wall time: {:.2} (--jobs {jobs}), {:.2} (--jobs 1)",
        stats_secs / check_secs,
        stats1_secs / check1_secs
    );
    if std::env::var("AMQPEEK_BENCH_TSHARK").as_deref() != Ok("0") {
        // Best of two, as for ours.
        let runs = [tshark(path), tshark(path)];
        let best_run = runs
            .into_iter()
            .flatten()
            .min_by(|a, b| a.0.total_cmp(&b.0));
        match best_run {
            Some((secs, pdus)) => {
                eprintln!(
                    "{:<28} {secs:7.2} s {:8.1} MB/s {:12.0} frames/s ({pdus} AMQP PDUs dissected)",
                    "(d) tshark -Y amqp",
                    mbs(secs),
                    pdus as f64 / secs
                );
                let theirs = pdus as f64 / secs;
                eprintln!(
                    "frames/s vs tshark: read {:.0}x, check {:.0}x, replay --jsonl {:.0}x",
                    fps(read_secs) / theirs,
                    fps(check_secs) / theirs,
                    fps(jsonl_secs) / theirs
                );
            }
            None => eprintln!("tshark not available: comparison skipped"),
        }
        // Like for like for `replay --jsonl`: tshark's own conversion to JSON, to a file too.
        let out = path.with_extension("tshark.json");
        let runs = [tshark_json(path, &out), tshark_json(path, &out)];
        if let Some((secs, bytes)) = runs
            .into_iter()
            .flatten()
            .min_by(|a, b| a.0.total_cmp(&b.0))
        {
            eprintln!(
                "{:<28} {secs:7.2} s {:8.1} MB/s {:12.0} frames/s ({bytes} JSON bytes written)",
                "(e) tshark -T json > file",
                mbs(secs),
                frames as f64 / secs
            );
            eprintln!(
                "frames/s vs tshark -T json: replay --jsonl {:.0}x, --jobs 1 {:.0}x",
                fps(jsonl_secs) / (frames as f64 / secs),
                fps(jsonl1_secs) / (frames as f64 / secs)
            );
        }
    }
}

fn bench(c: &mut Criterion) {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let mb: usize = std::env::var("AMQPEEK_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        // Under `cargo test --all-targets` (no `--bench`), a small capture only checks the
        // generator stays violation-free.
        .unwrap_or(if bench_mode { 150 } else { 2 });
    let (path, frames) = generate(mb);
    let size = std::fs::metadata(&path).unwrap().len();
    let jsonl_out = path.with_extension("jsonl");
    eprintln!(
        "capture: {} ({:.1} MB, {frames} AMQP frames)",
        path.display(),
        size as f64 / 1e6
    );

    // The capture must be clean traffic: every frame decoded, no violation at all, whatever
    // the number of threads.
    let jobs = parallel::default_jobs();
    eprintln!("check uses --jobs {jobs} (the available parallelism)");
    let t = Instant::now();
    let (report, decoded) = check(&path, jobs);
    let check_secs = t.elapsed().as_secs_f64();
    let (report1, decoded1) = check(&path, NonZeroUsize::MIN);
    assert_eq!(
        (report1.totals(), decoded1, report1.findings().len()),
        (report.totals(), decoded, report.findings().len()),
        "one thread and {jobs} threads disagree"
    );
    assert!(
        report.findings().is_empty(),
        "the generated capture has violations:\n{}",
        report.render(
            amqpeek::verdict::Format::Text,
            "bench",
            amqpeek::event::Severity::Info
        )
    );
    assert_eq!(decoded, frames, "every generated frame is decoded");

    // The statistics of it: every frame counted, every delivery of the generator settled and
    // timed, none left waiting or untimed, whatever the number of threads.
    let s = stats(&path, jobs);
    assert_eq!(s, stats(&path, NonZeroUsize::MIN), "stats differ by --jobs");
    let named: u64 = s
        .by_name
        .iter()
        .filter(|r| r.name != "protocol-header")
        .map(|r| r.frames)
        .sum();
    assert_eq!(named, frames, "stats count every frame");
    let timed: u64 = s
        .settlement
        .iter()
        .filter_map(|r| r.latency)
        .map(|l| l.count)
        .sum();
    assert!(
        timed > 0 && s.untimed == 0 && s.unsettled_at_close == 0,
        "{s:#?}"
    );

    // One timed pass each, for figures next to tshark's (`AMQPEEK_BENCH_ONESHOT=0` skips them,
    // e.g. under a profiler).
    if bench_mode && std::env::var("AMQPEEK_BENCH_ONESHOT").as_deref() != Ok("0") {
        oneshot(&path, &jsonl_out, frames, check_secs);
    }

    let mut g = c.benchmark_group("capture");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(size));
    g.bench_function("read_reassemble", |b| b.iter(|| read_all(&path)));
    g.bench_function("check", |b| b.iter(|| check(&path, jobs).1));
    g.bench_function("check_jobs1", |b| {
        b.iter(|| check(&path, NonZeroUsize::MIN).1)
    });
    g.bench_function("replay_jsonl", |b| {
        b.iter(|| replay_jsonl(&path, &jsonl_out, jobs))
    });
    g.bench_function("stats", |b| b.iter(|| stats(&path, jobs).frames));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
