//! Field terms in the TUI's filter (`handle:0`, `delivery-id:1`, `delivery-tag:...`), read
//! from the decoded frames the rows share with the pipeline, and `--filter`'s preset filter.
mod tui_support;

use amqpeek::filter::Filter;
use amqpeek::tui::{App, TuiOptions};
use crossterm::event::KeyCode;
use tui_support::*;

fn names(app: &App) -> Vec<String> {
    app.frames()
        .view()
        .iter()
        .filter_map(|(c, s)| app.row(*c, *s))
        .map(|r| format!("{} {}", r.name, r.summary))
        .collect()
}

#[test]
fn field_terms_pick_frames_by_their_fields() {
    let mut app = app_with(conversation(1, 0, &amqp10_chunks(), true), 100, 30);
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "delivery-id:1");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "delivery-id:1");
    let rows = names(&app);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].starts_with("transfer ") && rows[0].contains("delivery-id=1"));
    assert!(dump(&app).contains("delivery-id=1"), "{}", dump(&app));

    // role is a boolean the spec names: the receiver's attach only; handle on every frame
    // of the link (attaches, flow, transfers), absent elsewhere.
    press(&mut app, KeyCode::Char('/'));
    for _ in 0.."delivery-id:1".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_str(&mut app, "role:receiver");
    press(&mut app, KeyCode::Enter);
    let rows = names(&app);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].starts_with("attach ") && rows[0].contains("role=true"));

    let f = Filter::parse("handle:0").unwrap();
    app.set_filter(f);
    app.rebuild_view();
    let rows = names(&app);
    let kinds: Vec<&str> = rows.iter().map(|r| r.split(' ').next().unwrap()).collect();
    assert_eq!(
        kinds,
        ["attach", "attach", "flow", "transfer", "transfer"],
        "{rows:?}"
    );
    // A binary field matches its hex.
    app.set_filter(Filter::parse("delivery-tag:00000001").unwrap());
    app.rebuild_view();
    assert_eq!(names(&app).len(), 1);
}

#[test]
fn the_filter_given_on_the_command_line_is_the_one_the_list_starts_with() {
    let opts = TuiOptions {
        live: false,
        filter: Filter::parse("name:transfer").unwrap(),
        ..TuiOptions::default()
    };
    let mut app = App::new(opts, (100, 30));
    for e in conversation(1, 0, &amqp10_chunks(), true) {
        app.handle(e);
    }
    assert_eq!(app.frames().view().len(), 2, "{:?}", names(&app));
    // Esc clears it as any filter.
    press(&mut app, KeyCode::Esc);
    assert!(app.frames().view().len() > 2);
}
