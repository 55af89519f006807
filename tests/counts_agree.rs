//! One definition of each count: on every shipped capture (JSONL and pcapng), `check`, `stats`,
//! the JSONL that `replay` writes and the TUI give the same number of frames (decoded frames;
//! protocol headers are counted apart, and `stats` and the JSONL agree on those too). A filter
//! narrows every count it is applied to (`stats --filter conn:N` counts one connection), and
//! the free-text filter finds an AMQP 1.0 message body as it finds a 0-9-1 one.

mod cli_common;

use std::num::NonZeroUsize;
use std::process::Command;

use amqpeek::capture::{self, CaptureOptions};
use amqpeek::driver::offline::{self, Pace};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::tui::{App, AppEvent, TuiOptions};
use amqpeek::{Event, EventKind};
use cli_common::capture_path;

fn amqpeek(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{args:?}: {out:?}");
    (code, String::from_utf8(out.stdout).unwrap())
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&amqpeek(args).1).unwrap()
}

/// Every shipped capture.
fn captures() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl") || n.ends_with(".pcapng"))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    names
}

struct ToApp<'a>(&'a mut App);

impl Sink for ToApp<'_> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.handle(AppEvent::Pipeline(ev.clone()));
        Ok(())
    }
}

/// The TUI fed the whole capture, as `replay` feeds it.
fn tui_of(path: &str) -> App {
    let opts = TuiOptions {
        live: false,
        ..TuiOptions::default()
    };
    let mut app = App::new(opts, (160, 40));
    let source = capture::open(std::path::Path::new(path), CaptureOptions::default()).unwrap();
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(ToApp(&mut app))];
    offline::run(
        source,
        InspectOptions::default(),
        sinks,
        NonZeroUsize::MIN,
        Pace::Batched,
    );
    app.handle(AppEvent::FeedEnded);
    app
}

/// The pipeline's events of a capture.
fn events_of(path: &str) -> Vec<Event> {
    struct Keep<'a>(&'a mut Vec<Event>);
    impl Sink for Keep<'_> {
        fn event(&mut self, ev: &Event) -> std::io::Result<()> {
            self.0.push(ev.clone());
            Ok(())
        }
    }
    let mut events = Vec::new();
    let source = capture::open(std::path::Path::new(path), CaptureOptions::default()).unwrap();
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(Keep(&mut events))];
    offline::run(
        source,
        InspectOptions::default(),
        sinks,
        NonZeroUsize::MIN,
        Pace::Batched,
    );
    events
}

#[test]
fn every_output_counts_the_same_frames_on_every_shipped_capture() {
    for name in captures() {
        let path = capture_path(&name);
        let stats = json(&["stats", "--format", "json", &path]);
        let check = json(&["check", "--format", "json", &path]);
        let (_, jsonl) = amqpeek(&["replay", &path, "--jsonl", "-"]);
        let records = |kind: &str| {
            jsonl
                .lines()
                .filter(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"] == kind)
                .count() as u64
        };
        let events = events_of(&path);
        let frames = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Frame(_)))
            .count() as u64;
        let headers = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Header { .. }))
            .count() as u64;
        assert!(frames > 0, "{name}");
        assert_eq!(stats["frames"], frames, "stats of {name}");
        assert_eq!(stats["headers"], headers, "stats' headers of {name}");
        assert_eq!(check["frames"], frames, "check of {name}");
        assert_eq!(records("frame"), frames, "the JSONL of {name}");
        assert_eq!(records("header"), headers, "the JSONL's headers of {name}");
        let app = tui_of(&path);
        assert_eq!(app.frames_in_scope(), frames, "the TUI of {name}");
        let title = amqpeek_tui_title(&app);
        assert!(
            title.contains(&format!("{frames} frames")),
            "the TUI's title for {name}: {title}"
        );
    }
}

/// The frame pane's title line of the TUI as drawn.
fn amqpeek_tui_title(app: &App) -> String {
    let backend = ratatui::backend::TestBackend::new(160, 40);
    let mut terminal = ratatui::Terminal::new(backend).unwrap();
    terminal.draw(|f| app.render(f)).unwrap();
    let buf = terminal.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .find(|l| l.contains("Frames:"))
        .unwrap_or_default()
}

/// Two shipped 0-9-1 sessions in one JSONL, the second as connection 2.
fn two_connections(dir: &std::path::Path) -> String {
    let mut text = std::fs::read_to_string(capture_path("amqp091-lapin.jsonl")).unwrap();
    for line in std::fs::read_to_string(capture_path("amqp091-bad-ack.jsonl"))
        .unwrap()
        .lines()
    {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["conn"] = 2.into();
        text.push_str(&v.to_string());
        text.push('\n');
    }
    let path = dir.join("two.jsonl");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_filter_narrows_every_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = two_connections(dir.path());
    let all = json(&["stats", "--format", "json", &path]);
    assert_eq!(all["connections"], 2, "{all}");
    let one = json(&["stats", "--format", "json", "--filter", "conn:2", &path]);
    assert_eq!(one["connections"], 1, "{one}");
    let events = events_of(&path);
    let count = |conn: u64, header: bool| {
        events
            .iter()
            .filter(|e| e.conn == conn)
            .filter(|e| match e.kind {
                EventKind::Frame(_) => !header,
                EventKind::Header { .. } => header,
                _ => false,
            })
            .count() as u64
    };
    assert_eq!(one["frames"], count(2, false), "{one}");
    assert_eq!(one["headers"], count(2, true), "{one}");
    assert_eq!(all["frames"], count(1, false) + count(2, false), "{all}");
    // A filter on a frame name counts no protocol header, and only the connections it passes.
    let acks = json(&[
        "stats",
        "--format",
        "json",
        "--filter",
        "name:basic.ack",
        &path,
    ]);
    assert_eq!(acks["headers"], 0, "{acks}");
    let acking: std::collections::BTreeSet<u64> = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Frame(f) if f.frame.name() == "basic.ack"))
        .map(|e| e.conn)
        .collect();
    assert_eq!(acks["connections"], acking.len(), "{acks}");
    let none = json(&[
        "stats",
        "--format",
        "json",
        "--filter",
        "name:attach",
        &path,
    ]);
    assert_eq!(none["connections"], 0, "{none}");
}

#[test]
fn free_text_finds_an_amqp10_message_body() {
    // The fe2o3 capture's messages say "hello from amqpeek demo".
    let path = capture_path("amqp10-fe2o3.jsonl");
    let found = json(&[
        "stats",
        "--format",
        "json",
        "--filter",
        "\"hello from amqpeek\"",
        &path,
    ]);
    let transfers = events_of(&path)
        .iter()
        .filter(|e| match &e.kind {
            EventKind::Frame(f) => f.message.is_some(),
            _ => false,
        })
        .count() as u64;
    assert!(transfers > 0);
    assert_eq!(found["frames"], transfers, "{found}");
    // The filtered replay keeps them too.
    let (_, jsonl) = amqpeek(&[
        "replay",
        &path,
        "--filter",
        "\"hello from amqpeek\"",
        "--jsonl",
        "-",
    ]);
    let kept = jsonl
        .lines()
        .filter(|l| l.contains("\"event\":\"frame\""))
        .count() as u64;
    assert_eq!(kept, transfers);
}
