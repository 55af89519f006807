//! Tab in the TUI's filter line completes keys, frame names of both protocols and the link and
//! queue names of the session shown (the shipped captures of real clients: fe2o3-amqp's
//! `demo-sender` and `demo-receiver` links, lapin's `amqpeek-demo-25086` queue), cycling
//! through the candidates it lists under the line; a reopened filter starts empty and Ctrl-U
//! clears a recalled one; an error longer than the screen is wide is shown whole, wrapped.
mod tui_support;

use std::num::NonZeroUsize;

use amqpeek::Event;
use amqpeek::capture::{self, CaptureOptions};
use amqpeek::driver::offline::{self, Pace};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::tui::app::Overlay;
use amqpeek::tui::{App, AppEvent, TuiOptions};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_support::*;

struct ToApp<'a>(&'a mut App);

impl Sink for ToApp<'_> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.handle(AppEvent::Pipeline(ev.clone()));
        Ok(())
    }
}

/// The TUI (80x24) fed the shipped capture `name`, as `replay` feeds it.
fn tui_of(name: &str) -> App {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name);
    let opts = TuiOptions {
        live: false,
        ..TuiOptions::default()
    };
    let mut app = App::new(opts, (80, 24));
    let source = capture::open(&path, CaptureOptions::default()).unwrap();
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

fn line(app: &App) -> String {
    match app.overlay() {
        Overlay::FilterInput(input) => input.text().to_string(),
        o => panic!("{o:?}"),
    }
}

fn ctrl(app: &mut App, c: char) {
    app.handle(AppEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )));
}

#[test]
fn tab_completes_keys_and_the_link_names_of_the_session_cycling_through_them() {
    let mut app = tui_of("amqp10-fe2o3.pcapng");
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "li");
    press(&mut app, KeyCode::Tab);
    assert_eq!(line(&app), "link:");
    // The candidates are listed under the line, the one shown marked.
    let s = screen(&app);
    assert!(s[23].starts_with("Tab 1/"), "{}", dump(&app));
    assert!(s[23].contains("link: link-credit:"), "{}", dump(&app));
    assert!(s[22].starts_with("filter: link:"), "{}", dump(&app));
    // Typing ends the completion; Tab then offers the links seen.
    type_str(&mut app, "demo");
    press(&mut app, KeyCode::Tab);
    assert_eq!(line(&app), "link:demo-receiver");
    press(&mut app, KeyCode::Tab);
    assert_eq!(line(&app), "link:demo-sender");
    assert!(screen(&app)[23].starts_with("Tab 2/2:"), "{}", dump(&app));
    // After the last, the first again.
    press(&mut app, KeyCode::Tab);
    assert_eq!(line(&app), "link:demo-receiver");
    // A value completes after `|` too, and the filter applies.
    type_str(&mut app, " name:tran");
    press(&mut app, KeyCode::Tab);
    assert!(line(&app).ends_with(" name:transfer"), "{}", line(&app));
    ctrl(&mut app, 'a');
    ctrl(&mut app, 'k');
    type_str(&mut app, "name:attach|flo");
    press(&mut app, KeyCode::Tab);
    assert_eq!(line(&app), "name:attach|flow");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "name:attach|flow");
    assert!(!app.frames().view().is_empty());
}

#[test]
fn tab_completes_the_queue_names_of_a_0_9_1_session_and_its_frame_names() {
    let mut app = tui_of("amqp091-lapin.pcapng");
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "link:amqpeek-de");
    press(&mut app, KeyCode::Tab);
    assert_eq!(line(&app), "link:amqpeek-demo-25086");
    type_str(&mut app, " !name:basic.pub");
    press(&mut app, KeyCode::Tab);
    assert_eq!(line(&app), "link:amqpeek-demo-25086 !name:basic.publish");
    // Nothing fits: the line is unchanged and says so.
    type_str(&mut app, " zzzz");
    press(&mut app, KeyCode::Tab);
    assert!(line(&app).ends_with(" zzzz"));
    assert!(
        screen(&app)[23].contains("nothing completes"),
        "{}",
        dump(&app)
    );
}

#[test]
fn a_reopened_filter_starts_empty_and_ctrl_u_clears_a_recalled_one() {
    let mut app = tui_of("amqp10-fe2o3.pcapng");
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "name:transfer");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('/'));
    assert_eq!(line(&app), "");
    press(&mut app, KeyCode::Up);
    assert_eq!(line(&app), "name:transfer");
    ctrl(&mut app, 'u');
    assert_eq!(line(&app), "");
    type_str(&mut app, "link:demo-receiver");
    assert_eq!(line(&app), "link:demo-receiver");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "link:demo-receiver");
}

#[test]
fn an_error_wider_than_the_screen_is_shown_whole_on_more_lines() {
    let mut app = tui_of("amqp10-fe2o3.pcapng");
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "name:transfer colour:red");
    let error = match app.overlay() {
        Overlay::FilterInput(input) => input.error().cloned().unwrap(),
        o => panic!("{o:?}"),
    };
    assert!(error.len() > 80, "{error}");
    let s = screen(&app);
    let text: String = s
        .iter()
        .skip_while(|l| !l.starts_with("filter: "))
        .map(|l| format!("{l:<80}"))
        .collect();
    assert!(
        text.contains(&error),
        "the whole error is not on screen:\n{}",
        dump(&app)
    );
    // The panes above are still drawn.
    assert!(s[0].contains("Connections"), "{}", dump(&app));
    // A misspelt key gets the closest.
    ctrl(&mut app, 'w');
    type_str(&mut app, "chanel:0");
    let s = screen(&app);
    assert!(
        format!("{:<80}{}", s[22], s[23]).contains("(did you mean channel:?)"),
        "{}",
        dump(&app)
    );
}
