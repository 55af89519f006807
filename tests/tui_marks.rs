//! Marks (`m`, `M`), export (`e`: marked, shown or a connection, to pcapng or JSONL, masked)
//! and copying a frame (`y` hex, `Y` JSON) through OSC 52: on the app state, and the export
//! written and read back through the real capture reader and pipeline.
mod tui_support;

use std::path::Path;

use amqpeek::capture;
use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::replay::export;
use amqpeek::tui::app::{Effect, ExportScope, Overlay};
use amqpeek::tui::{App, AppEvent, Pane};
use amqpeek::verdict::CheckReport;
use bytes::Bytes;
use crossterm::event::KeyCode;
use tui_support::*;

/// The index in the frame list of the row named `name` whose summary contains `with`.
fn find(app: &App, name: &str, with: &str) -> usize {
    app.frames()
        .view()
        .iter()
        .position(|(c, s)| {
            app.row(*c, *s)
                .is_some_and(|r| r.name == name && r.summary.contains(with))
        })
        .unwrap_or_else(|| panic!("no {name} {with}:\n{}", dump(app)))
}

fn select(app: &mut App, i: usize) {
    press(app, KeyCode::Char('g'));
    for _ in 0..i {
        press(app, KeyCode::Down);
    }
}

/// Replace the export line's text with `path` and press Enter: the effect the app asks for.
fn export_to(app: &mut App, path: &Path, tabs: usize) -> Effect {
    press(app, KeyCode::Char('e'));
    let Overlay::Export(line) = app.overlay() else {
        panic!("export line not open: {:?}", app.overlay());
    };
    for _ in 0..line.text().as_str().chars().count() {
        press(app, KeyCode::Backspace);
    }
    for _ in 0..tabs {
        press(app, KeyCode::Tab);
    }
    type_str(app, path.to_str().unwrap());
    press(app, KeyCode::Enter);
    assert_eq!(*app.overlay(), Overlay::None);
    app.pop_effect().expect("an export was asked for")
}

/// Write an export as the event loop does, then read it back: its frame names in order, and
/// what `check` finds in it.
fn write_and_read(effect: Effect) -> (Vec<String>, usize) {
    let Effect::Export {
        path,
        jsonl,
        events,
        ..
    } = effect
    else {
        panic!("not an export");
    };
    export::write(&path, jsonl, events, 4096).unwrap();
    let src = capture::open(&path, Default::default()).unwrap();
    let mut names = Vec::new();
    let mut collect = Names(&mut names);
    let mut report = CheckReport::new();
    amqpeek::replay::run(
        src,
        InspectOptions::default(),
        &mut [&mut collect, &mut report],
    )
    .unwrap();
    (names, report.findings().len())
}

struct Names<'a>(&'a mut Vec<String>);

impl amqpeek::pipeline::Sink for Names<'_> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        if let EventKind::Frame(f) = &ev.kind {
            self.0.push(f.frame.name().to_string());
        }
        Ok(())
    }
}

#[test]
fn m_marks_frames_and_connections_and_shift_m_lists_only_them() {
    let mut events = conversation(1, 0, &amqp10_chunks(), true);
    events.extend(conversation(2, 100, &amqp10_chunks(), true));
    let mut app = app_with(events, 120, 40);
    let all = app.frames().view().len();
    let t1 = find(&app, "transfer", "delivery-id=1");
    select(&mut app, t1);
    press(&mut app, KeyCode::Char('m'));
    let flow = find(&app, "flow", "");
    select(&mut app, flow);
    press(&mut app, KeyCode::Char('m'));
    assert_eq!(app.frames().marks().len(), 2);
    let s = dump(&app);
    assert!(
        s.lines()
            .any(|l| l.contains("*  transfer") && l.contains("delivery-id=1")),
        "{s}"
    );
    press(&mut app, KeyCode::Char('M'));
    assert_eq!(app.frames().view().len(), 2, "{}", dump(&app));
    assert!(dump(&app).contains("marked only"), "{}", dump(&app));
    // The title counts the rows listed, not all of them.
    assert!(
        dump(&app).contains(&format!("2 of {all} rows")),
        "{}",
        dump(&app)
    );
    // m again unmarks.
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('m'));
    assert_eq!(app.frames().view().len(), 1);
    // A connection marked in the connection list marks all its rows.
    app.handle(AppEvent::Key(crossterm::event::KeyEvent::new(
        KeyCode::Char('c'),
        crossterm::event::KeyModifiers::NONE,
    )));
    assert_eq!(app.focus(), Pane::Connections);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('m'));
    assert!(app.frames().marked_conns().contains(&2));
    press(&mut app, KeyCode::Char('a'));
    assert_eq!(app.frames().view().len(), 1 + all / 2, "{}", dump(&app));
    press(&mut app, KeyCode::Char('M'));
    assert_eq!(app.frames().view().len(), all);
}

#[test]
fn the_marked_frames_export_to_pcapng_and_jsonl_that_read_back_and_check_clean() {
    let dir = tempfile::tempdir().unwrap();
    let live = conversation(1, 0, &amqp10_chunks(), true);
    // The client closes TCP after its open with no close frame: the one violation live.
    let live_rules: Vec<&str> = live
        .iter()
        .filter_map(|e| match e {
            amqpeek::tui::AppEvent::Pipeline(Event {
                kind: EventKind::Violation(v),
                ..
            }) => Some(v.rule.id),
            _ => None,
        })
        .collect();
    assert_eq!(live_rules, ["amqp10.connection.closed-without-close"]);
    let mut app = app_with(live, 120, 40);
    for id in ["delivery-id=0", "delivery-id=1"] {
        let i = find(&app, "transfer", id);
        select(&mut app, i);
        press(&mut app, KeyCode::Char('m'));
    }
    for file in ["marked.pcapng", "marked.jsonl"] {
        let effect = export_to(&mut app, &dir.path().join(file), 0);
        match &effect {
            Effect::Export { what, jsonl, .. } => {
                assert_eq!(what, "2 marked frame(s) of 1 connection(s)");
                assert_eq!(*jsonl, file.ends_with(".jsonl"));
            }
            e => panic!("{e:?}"),
        }
        let (names, findings) = write_and_read(effect);
        assert_eq!(names, ["transfer", "transfer"], "{file}");
        assert_eq!(
            findings, 0,
            "{file}: the frames left out are gaps, judged nothing"
        );
    }
    // Tab: the shown frames (all, here), then the whole connection.
    let (names, _) = write_and_read(export_to(&mut app, &dir.path().join("shown.jsonl"), 1));
    assert_eq!(names.len(), 10, "{names:?}");
    let (names, findings) = write_and_read(export_to(&mut app, &dir.path().join("conn.pcapng"), 2));
    assert_eq!(names.first().map(String::as_str), Some("open"));
    assert_eq!(names.len(), 10, "{names:?}");
    assert_eq!(
        findings,
        live_rules.len(),
        "the whole connection, its ending included, reads back to what was found live"
    );
    // An unwritable path is named in the failure.
    let bad = export_to(&mut app, Path::new("/nonexistent-dir/x.pcapng"), 0);
    let Effect::Export { path, events, .. } = bad else {
        panic!()
    };
    let e = export::write(&path, false, events, 4096).unwrap_err();
    assert!(e.to_string().contains("/nonexistent-dir/x.pcapng"), "{e}");
}

/// A SASL PLAIN exchange seen with `--show-secrets`: the TUI shows the password, an export
/// masks it all the same.
#[test]
fn an_export_is_masked_even_when_the_view_shows_secrets() {
    let header = b"AMQP\x03\x01\x00\x00".to_vec();
    let mut init = vec![0x00, 0x53, 0x41];
    let fields = [
        vec![0xa3, 5, b'P', b'L', b'A', b'I', b'N'],
        [&[0xa0, 16][..], b"\0guest\0hunter22!"].concat(),
    ]
    .concat();
    init.push(0xd0);
    init.extend_from_slice(&((fields.len() + 4) as u32).to_be_bytes());
    init.extend_from_slice(&2u32.to_be_bytes());
    init.extend_from_slice(&fields);
    let mut frame = ((init.len() + 8) as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&[2, 1, 0, 0]);
    frame.extend_from_slice(&init);

    let mut insp = Inspector::new(
        1,
        InspectOptions {
            show_secrets: true,
            emit_data: true,
            ..InspectOptions::default()
        },
    );
    let mut out = vec![Event {
        conn: 1,
        ts: Timestamp(T0),
        kind: EventKind::Connect {
            client: "127.0.0.1:50001".parse().unwrap(),
            upstream: "127.0.0.1:5672".parse().unwrap(),
        },
    }];
    for (i, b) in [header, frame].into_iter().enumerate() {
        let ts = Timestamp(T0 + 1000 * (i as i64 + 1));
        insp.chunk(Dir::C2S, ts, Bytes::from(b), &mut out);
    }
    let mut app = app_with(out.into_iter().map(AppEvent::Pipeline).collect(), 120, 40);
    let i = find(&app, "sasl-init", "");
    select(&mut app, i);
    press(&mut app, KeyCode::Char('y'));
    let Some(Effect::Clipboard { text, .. }) = app.pop_effect() else {
        panic!("nothing copied");
    };
    assert!(
        text.contains(&hex::encode("hunter22!")),
        "the view shows secrets"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sasl.jsonl");
    let effect = export_to(&mut app, &path, 1);
    assert!(matches!(&effect, Effect::Export { .. }));
    let Effect::Export { events, .. } = effect else {
        unreachable!()
    };
    export::write(&path, true, events, 4096).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("sasl-init"), "{written}");
    assert!(!written.contains("hunter22"), "{written}");
    let b64 = base64_of(b"hunter22!");
    assert!(!written.contains(&b64[..8]), "{written}");
}

fn base64_of(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[test]
fn y_copies_the_frame_as_hex_that_decode_reads_and_shift_y_as_its_json_record() {
    let mut app = app_with(conversation(1, 0, &amqp10_chunks(), true), 120, 40);
    let i = find(&app, "transfer", "delivery-id=1");
    select(&mut app, i);
    press(&mut app, KeyCode::Char('y'));
    let Some(Effect::Clipboard { text, what }) = app.pop_effect() else {
        panic!("nothing copied");
    };
    assert_eq!(what, "transfer bytes as hex");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["decode", &text])
        .output()
        .unwrap();
    let decoded = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && decoded.contains("@transfer") && decoded.contains("delivery-id=1"),
        "{decoded}"
    );
    press(&mut app, KeyCode::Char('Y'));
    let Some(Effect::Clipboard { text, .. }) = app.pop_effect() else {
        panic!("nothing copied");
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["event"], "frame");
    assert_eq!(v["name"], "transfer");
    assert_eq!(v["fields"]["delivery-id"], 1);
    // The loop sends it as OSC 52.
    assert!(amqpeek::tui::clipboard::osc52(&text).starts_with("\x1b]52;c;eyJ"));
    let _ = ExportScope::Marked;
}
