//! The Health pane: the diagnoses the real pipeline makes (a receiver that never grants
//! credit), listed with their age, active ones above ended ones, Enter on one selecting its
//! evidence frame, the active count in the status line, wire names escaped, bounded memory.

mod tui_support;

use std::sync::Arc;

use amqpeek::event::{
    Check, Diagnosis, Dir, EndWhy, Ended, Event, EventKind, FrameRef, Limit, ScopeKind, Timestamp,
};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::tui::health::MAX_ENDED;
use amqpeek::tui::{App, AppEvent, Pane, TuiOptions};
use bytes::Bytes;
use crossterm::event::KeyCode;
use tui_support::{T0, amqp10, app_with, buffer, dump, press, screen};

/// What happens on the connection, at a time in ms after `T0`.
enum Step {
    /// Bytes one way.
    Bytes(i64, Dir, Vec<u8>),
    /// The pipeline's clock ticks.
    Tick(i64),
    /// The connection closes.
    Close(i64),
}

fn at(ms: i64) -> Timestamp {
    Timestamp(T0 + ms * 1000)
}

/// The events connection 1 produces for `steps`, through the real inspector.
fn events(steps: Vec<Step>) -> Vec<AppEvent> {
    let mut insp = Inspector::new(1, InspectOptions::default());
    let mut out = vec![Event {
        conn: 1,
        ts: at(0),
        kind: EventKind::Connect {
            client: "127.0.0.1:50001".parse().unwrap(),
            upstream: "127.0.0.1:5672".parse().unwrap(),
        },
    }];
    for step in steps {
        match step {
            Step::Bytes(ms, dir, b) => {
                insp.chunk(dir, at(ms), Bytes::from(b), &mut out);
                insp.publish_state(at(ms), &mut out);
            }
            Step::Tick(ms) => insp.tick(at(ms), &mut out),
            Step::Close(ms) => insp.close(at(ms), "client closed".into(), &mut out),
        }
    }
    out.into_iter().map(AppEvent::Pipeline).collect()
}

/// Open, begin, then a receiver link per name attached by the client and answered by the
/// broker's sender at ms 8, 10, ...: none is ever granted credit.
fn no_credit_links(names: &[&str]) -> Vec<Step> {
    use amqp10::*;
    let mut steps = vec![
        Step::Bytes(1, Dir::C2S, HEADER.to_vec()),
        Step::Bytes(2, Dir::S2C, HEADER.to_vec()),
        Step::Bytes(3, Dir::C2S, open("client")),
        Step::Bytes(4, Dir::S2C, open("broker")),
        Step::Bytes(5, Dir::C2S, begin(0)),
        Step::Bytes(6, Dir::S2C, begin_reply(0, 0)),
    ];
    for (i, name) in names.iter().enumerate() {
        let ms = 7 + 2 * i as i64;
        let h = i as u32;
        steps.push(Step::Bytes(ms, Dir::C2S, attach(0, name, h, true, "q")));
        steps.push(Step::Bytes(
            ms + 1,
            Dir::S2C,
            attach(0, name, h, false, "q"),
        ));
    }
    steps
}

/// One link left without credit, then a frame and a tick 40 s after its attach.
fn stuck_link(name: &str) -> Vec<AppEvent> {
    let mut steps = no_credit_links(&[name]);
    steps.push(Step::Bytes(40_008, Dir::C2S, amqp10::EMPTY.to_vec()));
    steps.push(Step::Tick(40_008));
    events(steps)
}

/// The first screen line holding `needle`, and its row (the screen shown if there is none).
fn line_with<'a>(s: &'a [String], needle: &str) -> (usize, &'a String) {
    s.iter()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}:\n{}", s.join("\n")))
}

#[test]
fn a_receiver_never_granting_credit_is_listed_with_its_age_in_the_health_pane() {
    let mut app = app_with(stuck_link("orders"), 120, 40);
    press(&mut app, KeyCode::Char('H'));
    assert_eq!(app.focus(), Pane::Health);
    assert_eq!(app.bottom(), Pane::Health);
    let s = screen(&app);
    assert!(
        s.iter().any(|l| l.contains(" Health 1 active, 0 ended ")),
        "{}",
        dump(&app)
    );
    let (_, row) = line_with(&s, "amqp10.link.no-credit");
    assert!(row.contains("for 40s"), "{row}");
    assert!(row.contains(r#"link "orders""#), "{row}");
    // The selected one's detail: what to do, and what it rests on.
    assert!(
        s.iter()
            .any(|l| l.contains("to do") && l.contains("grant credit")),
        "{}",
        dump(&app)
    );
    assert!(s.iter().any(|l| l.contains("§2.6.7")), "{}", dump(&app));
}

#[test]
fn the_age_ticks_with_the_clock_of_a_live_view() {
    let mut app = App::new(TuiOptions::default(), (120, 40));
    for e in stuck_link("orders") {
        app.handle(e);
    }
    app.handle(AppEvent::Tick(at(8 + 72_000)));
    press(&mut app, KeyCode::Char('H'));
    let s = screen(&app);
    let (_, row) = line_with(&s, "amqp10.link.no-credit");
    assert!(row.contains("for 1m12s"), "{row}");
}

#[test]
fn enter_on_a_diagnosis_selects_its_evidence_frame_in_the_frame_list() {
    let mut app = app_with(stuck_link("orders"), 120, 40);
    let evidence = app.health().active()[0].diagnosis.evidence[0];
    press(&mut app, KeyCode::Char('H'));
    // The frame list follows the latest frame, not the evidence.
    assert_ne!(app.selected_row().map(|r| r.offset), Some(evidence.offset));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.focus(), Pane::Frames);
    let row = app.selected_row().expect("a frame is selected");
    assert_eq!(
        (row.conn, row.dir, row.offset),
        (1, Some(evidence.dir), evidence.offset)
    );
    assert_eq!(row.dir, Some(Dir::S2C), "the broker's attach armed it");
    assert!(!app.frames().follows());
}

#[test]
fn an_ended_diagnosis_moves_below_the_active_ones_dimmed_with_how_long_it_lasted() {
    let mut steps = no_credit_links(&["orders", "audit"]);
    steps.push(Step::Tick(40_010));
    // The client grants "orders" (handle 0) credit 5 s later: its diagnosis clears.
    steps.push(Step::Bytes(45_010, Dir::C2S, amqp10::flow(0, 0, 10)));
    steps.push(Step::Tick(45_010));
    let mut app = app_with(events(steps), 120, 40);
    press(&mut app, KeyCode::Char('H'));
    let s = screen(&app);
    assert!(
        s.iter().any(|l| l.contains(" Health 1 active, 1 ended ")),
        "{}",
        dump(&app)
    );
    let (audit_y, audit) = line_with(&s, r#"link "audit""#);
    let (orders_y, orders) = line_with(&s, r#"link "orders""#);
    assert!(audit_y < orders_y, "{}", dump(&app));
    assert!(audit.contains("for 45s"), "{audit}");
    assert!(orders.contains("lasted 45s"), "{orders}");
    assert!(orders.contains("(cleared)"), "{orders}");
    let buf = buffer(&app);
    let x = orders.find("lasted").unwrap() as u16;
    let cell = &buf[(x, orders_y as u16)];
    assert!(
        cell.modifier.contains(ratatui::style::Modifier::DIM),
        "ended entries are dimmed"
    );
}

#[test]
fn the_status_line_counts_the_active_diagnoses() {
    let steps = {
        let mut s = no_credit_links(&["orders", "audit"]);
        s.push(Step::Tick(40_010));
        s
    };
    let app = app_with(events(steps), 120, 40);
    let s = screen(&app);
    assert!(s[39].contains("Health 2"), "{}", s[39]);
    // Every one ended with the connection: no count.
    let steps = {
        let mut s = no_credit_links(&["orders", "audit"]);
        s.push(Step::Tick(40_010));
        s.push(Step::Close(41_000));
        s
    };
    let mut app = app_with(events(steps), 120, 40);
    let s = screen(&app);
    assert!(!s[39].contains("Health"), "{}", s[39]);
    press(&mut app, KeyCode::Char('H'));
    let s = screen(&app);
    assert!(
        s.iter().any(|l| l.contains(" Health 0 active, 2 ended ")),
        "{}",
        dump(&app)
    );
    assert!(
        s.iter().any(|l| l.contains("(scope closed)")),
        "{}",
        dump(&app)
    );
}

#[test]
fn the_help_overlay_names_the_health_key() {
    let mut app = app_with(Vec::new(), 100, 30);
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app);
    assert!(
        s.iter()
            .any(|l| l.contains("c d s v H") && l.contains("health")),
        "{}",
        dump(&app)
    );
}

#[test]
fn a_hostile_link_name_from_the_wire_draws_harmless() {
    let mut app = app_with(stuck_link("o\x1b[2J\u{202e}x"), 120, 40);
    press(&mut app, KeyCode::Char('H'));
    let s = screen(&app);
    let (_, row) = line_with(&s, "amqp10.link.no-credit");
    assert!(row.contains(r"\x1b[2J\u{202e}x"), "{row}");
    assert!(
        s.iter()
            .all(|l| !l.contains('\x1b') && !l.contains('\u{202e}')),
        "{}",
        dump(&app)
    );
}

static HOSTILE: Check = Check {
    id: "test.hostile",
    scope: ScopeKind::Link,
    summary: "a test diagnosis",
    basis: "none",
    cause: "none",
    todo: "none",
    default: Limit::After(1),
};

/// A diagnosis of connection `conn` built by hand (one the pipeline would escape itself
/// carries wire strings as they came).
fn diagnosis(conn: u64, name: &str, since_ms: i64, ended: Option<EndWhy>) -> Arc<Diagnosis> {
    Arc::new(Diagnosis {
        check: &HOSTILE,
        conn,
        scope: ScopeKind::Link,
        name: name.into(),
        since: at(since_ms),
        at: at(since_ms + 1),
        evidence: vec![FrameRef {
            dir: Dir::C2S,
            offset: 0,
        }],
        detail: "detail \x07\u{2028}bell".into(),
        ended: ended.map(|why| Ended {
            ts: at(since_ms + 2),
            frame: None,
            why,
        }),
    })
}

fn diagnosis_event(d: Arc<Diagnosis>) -> AppEvent {
    AppEvent::Pipeline(Event {
        conn: d.conn,
        ts: d.at,
        kind: EventKind::Diagnosis(d),
    })
}

#[test]
fn wire_strings_of_a_diagnosis_are_escaped_in_the_list_and_the_detail() {
    let d = diagnosis(1, "link \"\x1b]0;pwned\x07\u{202e}\" s2c", 0, None);
    let mut app = app_with(vec![diagnosis_event(d)], 120, 40);
    press(&mut app, KeyCode::Char('H'));
    let s = screen(&app);
    let (_, row) = line_with(&s, "test.hostile");
    assert!(row.contains(r"\x1b]0;pwned\x07\u{202e}"), "{row}");
    assert!(
        s.iter().any(|l| l.contains(r"detail \x07\u{2028}bell")),
        "{}",
        dump(&app)
    );
}

#[test]
fn ended_diagnoses_are_kept_up_to_a_bound() {
    let n = MAX_ENDED + 50;
    let evs: Vec<AppEvent> = (0..n)
        .map(|i| {
            diagnosis_event(diagnosis(
                1,
                &format!("link {i}"),
                i as i64,
                Some(EndWhy::Cleared),
            ))
        })
        .collect();
    let mut app = app_with(evs, 120, 40);
    assert_eq!(app.health().ended().len(), MAX_ENDED);
    assert_eq!(app.health().dropped(), 50);
    // The latest ended first.
    assert_eq!(
        app.health().ended()[0].diagnosis.name,
        format!("link {}", n - 1)
    );
    press(&mut app, KeyCode::Char('H'));
    let s = screen(&app);
    assert!(
        s.iter().any(|l| l.contains("(50 older dropped from view)")),
        "{}",
        dump(&app)
    );
}

#[test]
fn a_diagnosis_whose_end_was_lost_ends_with_its_connection() {
    let close = AppEvent::Pipeline(Event {
        conn: 1,
        ts: at(5),
        kind: EventKind::Close(amqpeek::event::CloseInfo {
            reason: "client closed".into(),
            bytes_c2s: 0,
            bytes_s2c: 0,
        }),
    });
    let evs = vec![
        diagnosis_event(diagnosis(1, "link \"a\" s2c", 0, None)),
        close,
    ];
    let app = app_with(evs, 120, 40);
    assert!(app.health().active().is_empty());
    let d = &app.health().ended()[0].diagnosis;
    assert_eq!(d.ended.as_ref().map(|e| e.why), Some(EndWhy::ScopeClosed));
    assert_eq!(d.held_us(at(100)), 5_000);
}
