//! The statistics pane (`S`): the report the run's statistics sink publishes, shown as
//! `amqpeek stats` prints it, on lapin's shipped 0-9-1 capture replayed through the real
//! pipeline. The sink's last report is the one the command makes of the same capture; the
//! pane scrolls both ways and closes with Esc or `S`.
mod tui_support;

use std::sync::{Arc, Mutex};

use amqpeek::event::Event;
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::sinks::stats_feed::StatsFeed;
use amqpeek::stats::{Collector, StatsReport};
use amqpeek::tui::app::Overlay;
use amqpeek::tui::{App, AppEvent, TuiOptions};
use crossterm::event::KeyCode;
use tui_support::*;

/// Every event, kept.
#[derive(Default)]
struct Events(Vec<Event>);

impl Sink for Events {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.push(ev.clone());
        Ok(())
    }
}

fn capture(name: &str) -> amqpeek::capture::CaptureSource {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name);
    amqpeek::capture::open(&path, Default::default()).unwrap()
}

/// The capture's events, and the reports a [`StatsFeed`] published while it was replayed.
fn replayed(name: &str) -> (Vec<Event>, Vec<Arc<StatsReport>>) {
    let published = Arc::new(Mutex::new(Vec::new()));
    let into = published.clone();
    let mut feed = StatsFeed::new(Box::new(move |r| {
        into.lock().unwrap().push(r);
        true
    }));
    let mut events = Events::default();
    amqpeek::replay::run(
        capture(name),
        InspectOptions::default(),
        &mut [&mut feed, &mut events],
    )
    .unwrap();
    drop(feed);
    let reports = published.lock().unwrap().clone();
    (events.0, reports)
}

fn app(events: &[Event], last: Option<Arc<StatsReport>>, w: u16, h: u16) -> App {
    let opts = TuiOptions {
        live: false,
        ..TuiOptions::default()
    };
    let mut app = App::new(opts, (w, h));
    for e in events {
        app.handle(AppEvent::Pipeline(e.clone()));
    }
    if let Some(r) = last {
        app.handle(AppEvent::Stats(r));
    }
    app.handle(AppEvent::FeedEnded);
    app
}

#[test]
fn the_sinks_last_report_is_the_commands_and_s_shows_it() {
    let (events, reports) = replayed("amqp091-lapin.jsonl");
    let last = reports
        .last()
        .cloned()
        .expect("a report when the run ended");
    let mut by_command = Collector::new();
    for e in &events {
        by_command.add(e);
    }
    assert_eq!(
        *last,
        by_command.report(),
        "the pane and `amqpeek stats` agree"
    );

    let mut app = app(&events, Some(last.clone()), 160, 60);
    press(&mut app, KeyCode::Char('S'));
    assert!(matches!(app.overlay(), Overlay::Stats(_)));
    let s = screen(&app);
    let text = s.join("\n");
    assert!(text.contains("Statistics (S or Esc closes"), "{text}");
    assert!(text.contains("Settlement latency"), "{text}");
    // The rows are the report's own lines.
    for want in ["publish->confirm", "deliver->ack", "basic.publish"] {
        let line = last.lines().into_iter().find(|l| l.contains(want)).unwrap();
        assert!(
            s.iter().any(|l| l.contains(line.trim())),
            "{want}: {line}\n{text}"
        );
    }
    let confirm = s
        .iter()
        .find(|l| l.contains("publish->confirm"))
        .unwrap()
        .replace('│', " ");
    assert_eq!(confirm.split_whitespace().nth(1), Some("3"), "{confirm}");
    press(&mut app, KeyCode::Esc);
    assert_eq!(*app.overlay(), Overlay::None);
    press(&mut app, KeyCode::Char('S'));
    press(&mut app, KeyCode::Char('S'));
    assert_eq!(*app.overlay(), Overlay::None, "S closes it too");
}

#[test]
fn the_pane_scrolls_down_and_right_on_a_small_terminal() {
    let (events, reports) = replayed("amqp091-lapin.jsonl");
    let last = reports.last().cloned().unwrap();
    let mut app = app(&events, Some(last.clone()), 80, 12);
    press(&mut app, KeyCode::Char('S'));
    let first_line = |app: &App| screen(app)[1].clone();
    assert!(first_line(&app).contains("connection(s)"), "{}", dump(&app));
    press(&mut app, KeyCode::Char('G'));
    let s = dump(&app);
    assert!(s.contains("deliver->ack"), "the end is reached: {s}");
    assert!(!s.contains("connection(s)"), "{s}");
    press(&mut app, KeyCode::Char('g'));
    assert!(first_line(&app).contains("connection(s)"));
    // The latency table is wider than 80 columns: Right shows its last columns.
    press(&mut app, KeyCode::Char('G'));
    assert!(!dump(&app).contains("not awaited"), "{}", dump(&app));
    for _ in 0..20 {
        press(&mut app, KeyCode::Right);
    }
    let wide = dump(&app);
    assert!(wide.contains("not awaited"), "{wide}");
    for _ in 0..20 {
        press(&mut app, KeyCode::Left);
    }
    assert!(dump(&app).contains("deliver->ack"));
    press(&mut app, KeyCode::Char('q'));
    assert!(app.quit(), "q still quits from the pane");
}

#[test]
fn before_any_report_the_pane_says_so() {
    let mut app = app(&[], None, 80, 24);
    press(&mut app, KeyCode::Char('S'));
    assert!(dump(&app).contains("no statistics yet"));
}
