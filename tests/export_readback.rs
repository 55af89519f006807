//! Exports read back as exactly what was chosen: a filtered `replay --pcap` / `--jsonl`, and the
//! TUI's export of marked frames, give back through amqpeek's own readers exactly the frames
//! written, in their order, each decoded whole; the bytes left out are gaps, so nothing the cut
//! explains is found; the count reported is the count written; and tshark dissects the pcapng.
mod tui_support;

use std::path::Path;
use std::process::Command;

use amqpeek::capture;
use amqpeek::event::{Dir, Event, EventKind};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::replay::export;
use amqpeek::tui::app::ExportScope;
use amqpeek::tui::{App, AppEvent};
use amqpeek::verdict::CheckReport;
use tui_support::*;

/// A frame as read: its name, direction and stream offset.
type Seen = (String, Dir, u64);

/// A finding as read: its rule, direction and stream offset.
type Found = (String, Dir, u64);

/// What reading a capture gives: its frames in order, its violations, and every event.
#[derive(Default)]
struct Read {
    frames: Vec<Seen>,
    violations: Vec<Found>,
    events: Vec<Event>,
}

impl Sink for Read {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        match &ev.kind {
            EventKind::Frame(f) => self
                .frames
                .push((f.frame.name().to_string(), f.dir, f.offset)),
            EventKind::Violation(v) => {
                self.violations
                    .push((v.rule.id.to_string(), v.dir, v.offset))
            }
            _ => {}
        }
        self.events.push(ev.clone());
        Ok(())
    }
}

/// Read `path` as `check` and `replay` do: `capture::open`, then the pipeline; what it gives,
/// and how many findings `check` reports.
fn read(path: &Path) -> (Read, usize) {
    let src = capture::open(path, Default::default()).unwrap();
    let mut seen = Read::default();
    let mut report = CheckReport::new();
    amqpeek::replay::run(
        src,
        InspectOptions::default(),
        &mut [&mut seen, &mut report],
    )
    .unwrap();
    (seen, report.findings().len())
}

fn amqpeek(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "amqpeek {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `replay CAPTURE --no-tui --filter FILTER` written to `out` (`--pcap` or `--jsonl`, by its
/// extension).
fn filtered_export(capture: &str, filter: &str, out: &Path) {
    let flag = if out.extension().is_some_and(|e| e == "jsonl") {
        "--jsonl"
    } else {
        "--pcap"
    };
    amqpeek(&[
        "replay",
        capture,
        "--no-tui",
        "--filter",
        filter,
        flag,
        out.to_str().unwrap(),
    ]);
}

/// Whether tshark can be run; on CI (env `CI` set) it must be.
fn tshark_present() -> bool {
    let ok = Command::new("tshark").arg("-v").output().is_ok();
    if !ok && std::env::var_os("CI").is_some() {
        panic!("tshark is required on CI");
    }
    if !ok {
        eprintln!("tshark not installed: its part of the test is skipped");
    }
    ok
}

/// The packets tshark dissects as AMQP in `path` that pass display filter `also` (one line
/// per packet, its `Info` column last).
fn tshark_amqp(path: &Path, also: &str) -> String {
    let filter = format!("amqp{also}");
    let out = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-Y", &filter])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const FE2O3: &str = "captures/amqp10-fe2o3.pcapng";

#[test]
fn the_filtered_export_of_the_violations_reads_back_as_exactly_the_violating_frames() {
    let (original, _) = read(Path::new(FE2O3));
    let violating: Vec<Seen> = vec![
        ("flow".into(), Dir::S2C, 499),
        ("flow".into(), Dir::S2C, 1492),
    ];
    for f in &violating {
        assert!(original.frames.contains(f), "{f:?} in the original");
        assert!(
            original.violations.iter().any(|v| (v.1, v.2) == (f.1, f.2)),
            "{f:?} violates in the original"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for file in ["v.pcapng", "v.jsonl"] {
        let out = dir.path().join(file);
        filtered_export(FE2O3, "violations", &out);
        let (back, findings) = read(&out);
        assert_eq!(back.frames, violating, "{file}");
        assert_eq!(back.violations, [], "{file}");
        assert_eq!(findings, 0, "{file}");
    }
}

#[test]
fn tshark_dissects_the_frames_of_a_filtered_pcapng_export() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.pcapng");
    filtered_export(FE2O3, "violations", &out);
    if !tshark_present() {
        return;
    }
    let flows = |text: &str| {
        text.lines()
            .filter(|l| l.trim_end().ends_with("flow"))
            .count()
    };
    let text = tshark_amqp(&out, "");
    assert_eq!(flows(&text), 2, "both flows dissected:\n{text}");
    // Each follows a hole, and its packet carries the boundary comment amqpeek reads back.
    let marked = tshark_amqp(&out, " && frame.comment contains \"frame boundary\"");
    assert_eq!(flows(&marked), 2, "both flows marked:\n{marked}");
}

/// The pipeline's events of `path`, as the TUI is fed them.
fn app_of(events: &[Event]) -> App {
    app_with(
        events.iter().cloned().map(AppEvent::Pipeline).collect(),
        120,
        40,
    )
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Mark a random subset of the frame rows of `app` (about `percent` of them): the frames
/// marked, in row order.
fn mark_some(app: &mut App, rng: &mut Rng, percent: u64) -> Vec<Seen> {
    app.clear_marks();
    let mut chosen = Vec::new();
    let mut ids: Vec<_> = app.model().conns.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let c = &app.model().conns[&id];
        for r in c.rows.iter() {
            if r.kind == amqpeek::browse::row::RowKind::Frame && rng.next() % 100 < percent {
                let dir = r.dir.unwrap();
                chosen.push(((r.name.to_string(), dir, r.offset), (id, r.seq)));
            }
        }
    }
    for (_, m) in &chosen {
        app.mark(m.0, m.1);
    }
    chosen.into_iter().map(|(s, _)| s).collect()
}

/// Export the marked frames of `app` to pcapng and JSONL, read each back, and hold it to what
/// was marked: the frames in order, the count reported, and no finding but those the original
/// found at the frames kept.
fn export_holds(app: &App, want: &[Seen], original: &Read, dir: &Path, what: &str) {
    let (events, frames, _) = amqpeek::tui::export::capture_of(app, ExportScope::Marked);
    assert_eq!(frames, want.len(), "{what}");
    for file in ["x.pcapng", "x.jsonl"] {
        let path = dir.join(file);
        let n = export::write(&path, file.ends_with(".jsonl"), events.clone(), 4096).unwrap();
        let (back, _) = read(&path);
        assert_eq!(back.frames, want, "{what} {file}");
        assert_eq!(n as usize, want.len(), "{what} {file}: the count written");
        for v in &back.violations {
            let at_kept = want.iter().any(|f| (f.1, f.2) == (v.1, v.2));
            assert!(
                at_kept && original.violations.contains(v),
                "{what} {file}: {v:?} is not a finding of the original at a frame kept"
            );
        }
    }
}

#[test]
fn random_subsets_of_the_frames_read_back_as_exactly_those_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mut captures: Vec<(String, Vec<Event>)> = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir("captures")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcapng"))
        .collect();
    files.sort();
    for p in files {
        captures.push((p.display().to_string(), read(&p).0.events));
    }
    let generated: Vec<Event> = conversation(1, 0, &amqp10_chunks(), true)
        .into_iter()
        .filter_map(|e| match e {
            AppEvent::Pipeline(ev) => Some(ev),
            _ => None,
        })
        .collect();
    captures.push(("generated".into(), generated));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (name, events) in &captures {
        let original = {
            let mut r = Read::default();
            for e in events {
                r.event(e).unwrap();
            }
            r
        };
        let mut app = app_of(events);
        for round in 0..8 {
            let percent = [10, 30, 50, 70, 90][round % 5];
            let want = mark_some(&mut app, &mut rng, percent);
            if want.is_empty() {
                continue;
            }
            export_holds(
                &app,
                &want,
                &original,
                dir.path(),
                &format!("{name} round {round} ({percent}%)"),
            );
        }
    }
}

/// The frames a JSONL capture holds records of, as written.
fn written_frames(path: &Path) -> Vec<Seen> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "frame")
        .map(|v| {
            let dir = if v["dir"] == "c2s" {
                Dir::C2S
            } else {
                Dir::S2C
            };
            let name = v["name"].as_str().unwrap().to_string();
            (name, dir, v["offset"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn filtered_exports_by_frame_name_read_back_as_exactly_those_frames() {
    let dir = tempfile::tempdir().unwrap();
    for capture in [
        "captures/amqp10-fe2o3.pcapng",
        "captures/amqp091-lapin.pcapng",
        "captures/amqp091-bad-ack.pcapng",
    ] {
        let (original, _) = read(Path::new(capture));
        let mut names: Vec<&str> = original.frames.iter().map(|f| f.0.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            // What the filter passes: the frame records of its JSONL export.
            let jsonl = dir.path().join("n.jsonl");
            filtered_export(capture, &format!("name:{name}"), &jsonl);
            let want = written_frames(&jsonl);
            assert!(want.iter().any(|f| f.0 == name), "{capture} name:{name}");
            assert!(want.iter().all(|f| original.frames.contains(f)));
            for file in ["n.pcapng", "n.jsonl"] {
                let out = dir.path().join(file);
                filtered_export(capture, &format!("name:{name}"), &out);
                let (back, _) = read(&out);
                assert_eq!(back.frames, want, "{capture} name:{name} {file}");
                for v in &back.violations {
                    assert!(
                        want.iter().any(|f| (f.1, f.2) == (v.1, v.2))
                            && original.violations.contains(v),
                        "{capture} name:{name} {file}: {v:?} is no finding of the original at a frame kept"
                    );
                }
            }
        }
    }
}

#[test]
fn a_sasl_init_and_the_header_after_it_export_with_no_sasl_finding_and_the_count_right() {
    let dir = tempfile::tempdir().unwrap();
    let (original, _) = read(Path::new(FE2O3));
    let mut app = app_of(&original.events);
    app.clear_marks();
    let c = &app.model().conns[&1];
    let init = c.rows.iter().find(|r| r.name == "sasl-init").unwrap();
    let header = c
        .rows
        .iter()
        .find(|r| {
            r.kind == amqpeek::browse::row::RowKind::Header
                && r.offset > init.offset
                && r.dir == init.dir
        })
        .unwrap();
    let marks = [(1, init.seq), (1, header.seq)];
    let want: Vec<Seen> = vec![("sasl-init".into(), init.dir.unwrap(), init.offset)];
    for (c, s) in marks {
        app.mark(c, s);
    }
    let (events, frames, _) = amqpeek::tui::export::capture_of(&app, ExportScope::Marked);
    assert_eq!(frames, 1);
    for file in ["s.jsonl", "s.pcapng"] {
        let path = dir.path().join(file);
        let n = export::write(&path, file.ends_with(".jsonl"), events.clone(), 4096).unwrap();
        assert_eq!(n, 1, "{file}: the count reported is what was written");
        let (back, findings) = read(&path);
        assert_eq!(back.frames, want, "{file}");
        assert_eq!(findings, 0, "{file}: {:?}", back.violations);
    }
    // The same frame by `--filter`.
    for file in ["f.jsonl", "f.pcapng"] {
        let out = dir.path().join(file);
        filtered_export(FE2O3, "name:sasl-init", &out);
        let (back, findings) = read(&out);
        assert_eq!(back.frames, want, "{file}");
        assert_eq!(findings, 0, "{file}: {:?}", back.violations);
    }
}
