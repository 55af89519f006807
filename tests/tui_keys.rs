//! Key and mouse handling on the app state: selection, follow mode, focus, filter entry,
//! jumps, tree expansion, resize.
mod tui_support;

use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::tui::app::Overlay;
use amqpeek::tui::{App, AppEvent, Pane};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use tui_support::*;

/// Connection 1: a header, then `n` malformed AMQP 1.0 frames (each its own row with a
/// violation), then a good header on connection 2.
fn many_rows(n: usize) -> Vec<AppEvent> {
    let mut chunks = vec![(Dir::C2S, amqp10::HEADER.to_vec())];
    for _ in 0..n {
        chunks.push((Dir::C2S, amqp10::frame(0, &[0x00, 0x53, 0x99, 0x45])));
    }
    let mut ev = conversation(1, 0, &chunks, false);
    ev.extend(conversation(
        2,
        500,
        &[(Dir::S2C, amqp10::HEADER.to_vec())],
        false,
    ));
    ev
}

fn mouse(kind: MouseEventKind, x: u16, y: u16) -> AppEvent {
    AppEvent::Mouse(MouseEvent {
        kind,
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    })
}

#[test]
fn arrows_and_jk_move_and_moving_up_stops_follow_until_f_or_end() {
    let mut app = app_with(many_rows(30), 80, 24);
    assert_eq!(app.frames().view().len(), 32);
    assert!(app.frames().follows());
    assert_eq!(app.frames().cursor().selected(), 31);
    press(&mut app, KeyCode::Up);
    assert!(!app.frames().follows(), "scrolling up stops following");
    assert_eq!(app.frames().cursor().selected(), 30);
    press(&mut app, KeyCode::Char('k'));
    press(&mut app, KeyCode::Char('k'));
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(app.frames().cursor().selected(), 29);
    // New frames do not move a paused cursor.
    for e in conversation(3, 900, &[(Dir::C2S, amqp10::HEADER.to_vec())], false) {
        app.handle(e);
    }
    assert_eq!(app.frames().view().len(), 33);
    assert_eq!(app.frames().cursor().selected(), 29);
    press(&mut app, KeyCode::Char('F'));
    assert!(app.frames().follows());
    assert_eq!(app.frames().cursor().selected(), 32);
    // Following again: new frames move the cursor.
    for e in conversation(4, 950, &[(Dir::C2S, amqp10::HEADER.to_vec())], false) {
        app.handle(e);
    }
    assert_eq!(app.frames().cursor().selected(), 33);
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(
        (
            app.frames().cursor().selected(),
            app.frames().cursor().list().offset
        ),
        (0, 0)
    );
    assert!(!app.frames().follows());
    press(&mut app, KeyCode::End);
    assert!(app.frames().follows(), "End resumes following");
    assert_eq!(app.frames().cursor().selected(), 33);
}

#[test]
fn pages_move_by_the_visible_height_and_keep_the_cursor_visible() {
    let mut app = app_with(many_rows(60), 80, 24);
    let page = app.page(Pane::Frames);
    assert_eq!(page, 7, "80x24 shows 7 frame rows");
    press(&mut app, KeyCode::Home);
    press(&mut app, KeyCode::PageDown);
    assert_eq!(app.frames().cursor().selected(), page - 1);
    press(&mut app, KeyCode::PageDown);
    assert_eq!(app.frames().cursor().selected(), 2 * (page - 1));
    let l = app.frames().cursor().list();
    assert!(
        l.selected >= l.offset && l.selected < l.offset + page,
        "{l:?}"
    );
    press(&mut app, KeyCode::PageUp);
    assert_eq!(app.frames().cursor().selected(), page - 1);
    // The screen shows the selected row.
    let s = screen(&app);
    let sel = &s[7 + app.frames().cursor().selected() - app.frames().cursor().list().offset];
    assert!(sel.starts_with("┃12:00:00.007"), "{sel}");
}

#[test]
fn tab_cycles_focus_through_every_pane_and_shift_tab_goes_back() {
    let mut app = app_with(many_rows(1), 80, 24);
    assert_eq!(app.focus(), Pane::Frames);
    let mut seen = vec![app.focus()];
    for _ in 0..6 {
        press(&mut app, KeyCode::Tab);
        seen.push(app.focus());
    }
    assert_eq!(
        seen,
        vec![
            Pane::Frames,
            Pane::Detail,
            Pane::State,
            Pane::Violations,
            Pane::Health,
            Pane::Connections,
            Pane::Frames
        ]
    );
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.focus(), Pane::Connections);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.focus(), Pane::Health);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.focus(), Pane::Violations);
    // The bottom area shows the last bottom pane focused.
    assert_eq!(app.bottom(), Pane::Violations);
    let s = screen(&app);
    assert!(s[15].starts_with("┏ Violations 1 "), "{}", s[15]);
}

#[test]
fn filter_entry_shows_errors_live_and_applies_only_valid_filters() {
    let mut app = app_with(many_rows(3), 80, 24);
    press(&mut app, KeyCode::Char('f'));
    type_str(&mut app, "chan:1");
    match app.overlay() {
        Overlay::FilterInput(input) => {
            let (text, error) = (input.text(), input.error());
            assert_eq!(text, "chan:1");
            assert!(error.unwrap().contains("unknown filter key 'chan'"));
        }
        o => panic!("{o:?}"),
    }
    let s = screen(&app);
    assert!(
        s[23].starts_with("filter: chan:1█  unknown filter key 'chan'"),
        "{}",
        s[23]
    );
    // Enter on an invalid filter keeps the line open and the list as it was.
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.overlay(), Overlay::FilterInput(_)));
    assert!(app.filter().is_empty());
    assert_eq!(app.frames().view().len(), 5);
    // Keys are text while typing: 'q' does not quit.
    for _ in 0..6 {
        press(&mut app, KeyCode::Backspace);
    }
    type_str(&mut app, "name:header !conn:2");
    press(&mut app, KeyCode::Enter);
    assert!(!app.quit());
    assert_eq!(*app.overlay(), Overlay::None);
    assert_eq!(app.filter().source, "name:header !conn:2");
    assert_eq!(app.frames().view().len(), 1);
    // New rows follow the filter as they arrive.
    for e in conversation(3, 900, &[(Dir::C2S, amqp10::HEADER.to_vec())], false) {
        app.handle(e);
    }
    assert_eq!(app.frames().view().len(), 2);
    // Esc clears it.
    press(&mut app, KeyCode::Esc);
    assert!(app.filter().is_empty());
    assert_eq!(app.frames().view().len(), 6);
    // Esc in the filter line cancels without applying.
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "violations");
    press(&mut app, KeyCode::Esc);
    assert!(app.filter().is_empty());
    assert_eq!(*app.overlay(), Overlay::None);
}

fn ctrl(app: &mut App, c: char) {
    app.handle(AppEvent::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )));
}

/// The filter line edits as a shell's does: `/` opens it empty (the filter applied comes back
/// with Up), Ctrl-U clears it, Ctrl-A and Left move the cursor and typing inserts there.
#[test]
fn the_filter_line_edits_like_a_shell_line_with_history() {
    let mut app = app_with(many_rows(3), 80, 24);
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "name:header");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "name:header");
    // Reopened: empty, so typing does not append to the old filter.
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "conn:2");
    let text = |app: &App| match app.overlay() {
        Overlay::FilterInput(input) => input.text().to_string(),
        o => panic!("{o:?}"),
    };
    assert_eq!(text(&app), "conn:2");
    ctrl(&mut app, 'u');
    assert_eq!(text(&app), "");
    // Up: the filter applied before; Down past the newest: empty again.
    press(&mut app, KeyCode::Up);
    assert_eq!(text(&app), "name:header");
    press(&mut app, KeyCode::Down);
    assert_eq!(text(&app), "");
    press(&mut app, KeyCode::Up);
    // Ctrl-A, then typing inserts at the start; Left, Right and Ctrl-E move.
    ctrl(&mut app, 'a');
    press(&mut app, KeyCode::Char('!'));
    assert_eq!(text(&app), "!name:header");
    ctrl(&mut app, 'e');
    press(&mut app, KeyCode::Left);
    press(&mut app, KeyCode::Char('X'));
    assert_eq!(text(&app), "!name:headeXr");
    press(&mut app, KeyCode::Backspace);
    assert_eq!(text(&app), "!name:header");
    // Ctrl-K cuts to the end, Ctrl-Y puts it back, Ctrl-U cuts to the start.
    ctrl(&mut app, 'k');
    assert_eq!(text(&app), "!name:heade");
    ctrl(&mut app, 'y');
    assert_eq!(text(&app), "!name:header");
    ctrl(&mut app, 'u');
    assert_eq!(text(&app), "");
    type_str(&mut app, "!name:header");
    ctrl(&mut app, 'a');
    let s = screen(&app);
    assert!(s[23].starts_with("filter: !name:header"), "{}", s[23]);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "!name:header");
    assert!(!app.quit());
}

#[test]
fn enter_on_a_violation_selects_its_frame_even_behind_a_filter() {
    let mut app = app_with(many_rows(20), 80, 24);
    // Hide the violating frames, and look at connection 2 only.
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "!violations");
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('c'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    assert_eq!(app.selected_conn(), Some(2));
    press(&mut app, KeyCode::Char('v'));
    assert_eq!(app.violations().rows().len(), 20);
    for _ in 0..4 {
        press(&mut app, KeyCode::Down);
    }
    let v = app.violations().rows()[4].violation.clone();
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.focus(), Pane::Frames);
    assert_eq!(app.selected_conn(), Some(1));
    assert!(
        app.filter().is_empty(),
        "the filter hid the frame, so it was cleared"
    );
    assert_eq!(
        app.message().as_deref(),
        Some("filter cleared to show the frame")
    );
    let row = app.selected_row().unwrap();
    assert_eq!((row.conn, row.dir, row.offset), (1, Some(v.dir), v.offset));
    assert_eq!(row.violations[0], v);
    assert!(!app.frames().follows());
    // The frame is on screen and marked.
    let s = screen(&app);
    let line = &s[7 + app.frames().cursor().selected() - app.frames().cursor().list().offset];
    assert!(
        line.starts_with("┃12:00:00.006 ->   - ! malformed "),
        "{line}"
    );
}

#[test]
fn n_and_shift_n_walk_frames_with_violations() {
    let mut ev = many_rows(2);
    ev.extend(conversation(
        5,
        600,
        &[(Dir::C2S, amqp10::HEADER.to_vec())],
        false,
    ));
    let mut app = app_with(ev, 80, 24);
    press(&mut app, KeyCode::Home);
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(app.frames().cursor().selected(), 1);
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(app.frames().cursor().selected(), 2);
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(app.frames().cursor().selected(), 2);
    assert_eq!(
        app.message().as_deref(),
        Some("no later frame with a violation")
    );
    press(&mut app, KeyCode::Char('N'));
    assert_eq!(app.frames().cursor().selected(), 1);
}

#[test]
fn detail_tree_collapses_and_expands_with_arrows() {
    let mut app = app_with(many_rows(1), 80, 24);
    press(&mut app, KeyCode::Up); // the malformed row
    press(&mut app, KeyCode::Enter); // detail
    assert_eq!(app.focus(), Pane::Detail);
    let s = screen(&app);
    println!("{}", s.join("\n"));
    let left = |s: &[String], i: usize| -> String {
        s[i].chars()
            .skip(1)
            .take(38)
            .collect::<String>()
            .trim_end()
            .to_string()
    };
    assert_eq!(
        s[15],
        "┏ malformed conn 1 -> @8 ━━━━━━━━━━━━━━━┓┌ hex: 12 bytes ──────────────────────┐"
    );
    assert_eq!(left(&s, 17), "  rule: \"codec.malformed-frame\"");
    assert_eq!(left(&s, 19), "▾ violations:");
    assert_eq!(left(&s, 20), "  ▾ [0]:");
    assert_eq!(left(&s, 21), "      dir: \"c2s\"");
    // The malformed frame's bytes, from the data events.
    assert_eq!(
        s[16].chars().skip(41).collect::<String>(),
        "│0000 00 00 00 0c 02 00 00 00 ........│"
    );
    assert_eq!(
        s[17].chars().skip(41).collect::<String>(),
        "│0008 00 53 99 45             .S.E    │"
    );
    for _ in 0..3 {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Left);
    let s = screen(&app);
    assert_eq!(left(&s, 19), "▸ violations: [1]");
    assert_eq!(left(&s, 20), "");
    press(&mut app, KeyCode::Right);
    let s = screen(&app);
    assert_eq!(left(&s, 20), "  ▾ [0]:");
    press(&mut app, KeyCode::Char(' '));
    let s = screen(&app);
    assert_eq!(left(&s, 19), "▸ violations: [1]");
    // Leaves do not toggle.
    press(&mut app, KeyCode::Up);
    let before = screen(&app);
    press(&mut app, KeyCode::Char(' '));
    assert_eq!(screen(&app), before);
}

#[test]
fn enter_on_a_link_filters_its_frames() {
    let mut app = app_with(conversation(1, 0, &amqp10_chunks(), false), 80, 24);
    press(&mut app, KeyCode::Char('c'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('s'));
    let items = amqpeek::tui::views::state_items::state_items(app.state_snapshot().unwrap());
    let row = items
        .iter()
        .position(|i| i.filter.as_deref() == Some("link:orders"))
        .expect("the orders link");
    for _ in 0..row {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "link:orders");
    assert_eq!(app.focus(), Pane::Frames);
    // Both attaches, the server's flow and the two transfers.
    assert_eq!(app.frames().view().len(), 5, "{}", dump(&app));
}

#[test]
fn mouse_wheel_scrolls_and_a_click_selects_and_focuses() {
    let mut app = app_with(many_rows(30), 80, 24);
    // Click the third visible frame row (screen row 7 is the first).
    app.handle(mouse(MouseEventKind::Down(MouseButton::Left), 10, 9));
    assert_eq!(app.focus(), Pane::Frames);
    assert_eq!(
        app.frames().cursor().selected(),
        app.frames().cursor().list().offset + 2
    );
    assert!(!app.frames().follows());
    let before = app.frames().cursor().selected();
    app.handle(mouse(MouseEventKind::ScrollUp, 10, 9));
    assert_eq!(app.frames().cursor().selected(), before - 3);
    // Clicking a connection row focuses the list and selects it.
    app.handle(mouse(MouseEventKind::Down(MouseButton::Left), 5, 3));
    assert_eq!(app.focus(), Pane::Connections);
    assert_eq!(app.selected_conn(), Some(1));
    assert_eq!(app.frames().view().len(), 31);
    // Wheel over the bottom pane scrolls it, not the frames.
    press(&mut app, KeyCode::Char('v'));
    app.handle(mouse(MouseEventKind::ScrollDown, 10, 19));
    assert_eq!(app.violations().cursor().selected(), 3);
}

#[test]
fn resizing_keeps_the_cursor_visible_and_draws_at_80x24() {
    let mut app = app_with(many_rows(40), 160, 60);
    press(&mut app, KeyCode::Char('g'));
    for _ in 0..30 {
        press(&mut app, KeyCode::Down);
    }
    app.handle(AppEvent::Resize(80, 24));
    let l = app.frames().cursor().list();
    assert_eq!(l.selected, 30);
    assert!(l.selected < l.offset + app.page(Pane::Frames), "{l:?}");
    let s = screen(&app);
    assert_eq!(s.len(), 24);
    assert!(s.iter().all(|l| l.chars().count() <= 80));
    // Tiny terminals do not panic.
    for (w, h) in [(1, 1), (10, 3), (20, 5), (0, 0)] {
        app.handle(AppEvent::Resize(w, h));
        let _ = screen(&app);
    }
}

#[test]
fn q_and_ctrl_c_quit() {
    let mut app = App::new(Default::default(), (80, 24));
    press(&mut app, KeyCode::Char('q'));
    assert!(app.quit());
    let mut app = App::new(Default::default(), (80, 24));
    app.handle(AppEvent::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    assert!(app.quit());
}

#[test]
fn a_gap_event_is_a_row_and_data_sizes_the_connection() {
    let mut app = app_with(Vec::new(), 80, 24);
    app.handle(AppEvent::Pipeline(Event {
        conn: 9,
        ts: Timestamp(T0),
        kind: EventKind::Data {
            dir: Dir::S2C,
            offset: 100,
            bytes: bytes::Bytes::from_static(b"abcd"),
        },
    }));
    assert_eq!(app.model().conns[&9].bytes, [0, 104]);
}

#[test]
fn frame_bytes_are_bounded_per_connection_too() {
    let opts = amqpeek::tui::TuiOptions {
        live: false,
        max_bytes_per_conn: 30,
        ..Default::default()
    };
    let mut app = App::new(opts, (80, 24));
    // A header (8 bytes) and three 12-byte malformed frames: 44 bytes, over the budget.
    for e in many_rows(3) {
        app.handle(e);
    }
    let c = &app.model().conns[&1];
    assert!(c.raw_bytes <= 30, "{}", c.raw_bytes);
    assert_eq!(
        c.raw_bytes,
        c.rows.iter().map(|r| r.raw.len()).sum::<usize>()
    );
    assert!(c.evicted >= 1);
    assert_eq!(
        c.rows.back().unwrap().raw.len(),
        12,
        "the newest frame keeps its bytes"
    );
}

#[test]
fn eviction_at_the_frame_bound_keeps_the_paused_cursor_on_its_row() {
    let opts = amqpeek::tui::TuiOptions {
        live: false,
        max_frames_per_conn: 10,
        ..Default::default()
    };
    let mut app = App::new(opts, (80, 24));
    for e in many_rows(8) {
        app.handle(e);
    }
    // Conn 1: header + 8 rows = 9; conn 2: 1 row.
    assert_eq!(app.frames().view().len(), 10);
    press(&mut app, KeyCode::Char('c'));
    press(&mut app, KeyCode::Down); // conn 1 only
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::Up);
    let (c, seq) = app.frames().view()[app.frames().cursor().selected()];
    // Five more malformed frames on conn 1: four of its oldest rows go.
    let mut insp = amqpeek::pipeline::Inspector::new(1, Default::default());
    let mut out = Vec::new();
    insp.chunk(
        Dir::C2S,
        Timestamp(T0),
        bytes::Bytes::from_static(amqp10::HEADER),
        &mut out,
    );
    // (The same stream as before, so offsets continue.)
    for _ in 0..8 {
        insp.chunk(
            Dir::C2S,
            Timestamp(T0),
            bytes::Bytes::from(amqp10::frame(0, &[0x00, 0x53, 0x99, 0x45])),
            &mut out,
        );
    }
    out.clear();
    for i in 0..5u64 {
        insp.chunk(
            Dir::C2S,
            Timestamp(T0 + 900_000 + i as i64),
            bytes::Bytes::from(amqp10::frame(0, &[0x00, 0x53, 0x99, 0x45])),
            &mut out,
        );
    }
    for e in out {
        app.handle(AppEvent::Pipeline(e));
    }
    assert_eq!(app.model().conns[&1].rows.len(), 10);
    assert_eq!(app.model().conns[&1].evicted, 4);
    assert_eq!(
        app.frames().view().len(),
        10,
        "no dropped entries linger in the list"
    );
    assert_eq!(
        app.frames().view()[app.frames().cursor().selected()],
        (c, seq),
        "cursor stays on its row"
    );
    let s = screen(&app);
    assert!(
        s[14].contains("4 older frames dropped from view (no capture written; --jsonl keeps all)"),
        "{}",
        s.join("\n")
    );
}

/// Connection 1 open, then `closed` connections (from 2) that open and close.
fn with_closed(app: &mut App, from: u64, to: u64) {
    for c in from..=to {
        for e in conversation(
            c,
            c as i64 * 10,
            &[(Dir::C2S, amqp10::HEADER.to_vec())],
            true,
        ) {
            app.handle(e);
        }
    }
}

fn forgetting_app() -> App {
    let opts = amqpeek::tui::TuiOptions {
        live: false,
        max_closed_conns: 2,
        ..Default::default()
    };
    let mut app = App::new(opts, (80, 24));
    for e in conversation(1, 0, &[(Dir::C2S, amqp10::HEADER.to_vec())], false) {
        app.handle(e);
    }
    with_closed(&mut app, 2, 4);
    press(&mut app, KeyCode::Char('c'));
    app
}

#[test]
fn old_closed_connections_are_forgotten_and_the_selection_kept() {
    // Connection 1 selected: it stays selected when older closed ones go.
    let mut app = forgetting_app();
    press(&mut app, KeyCode::Down);
    assert_eq!(app.selected_conn(), Some(1));
    with_closed(&mut app, 5, 6);
    // 5 closed > 2 (+10%): the three oldest closed go; the open one stays.
    assert_eq!(app.conn_ids(), &[1, 5, 6][..]);
    assert_eq!(app.model().conns_forgotten, 3);
    assert_eq!(
        app.selected_conn(),
        Some(1),
        "the selection stays on its connection"
    );
    assert!(!app.frames().view().is_empty());
    assert!(app.frames().view().iter().all(|(c, _)| *c == 1));
    let s = screen(&app);
    assert!(
        s[0].starts_with("┏ Connections 3 (1 open, 3 older closed ones forgotten) "),
        "{}",
        s[0]
    );
    // Connection 4 selected: forgotten, so the list shows all connections.
    let mut app = forgetting_app();
    press(&mut app, KeyCode::End);
    assert_eq!(app.selected_conn(), Some(4));
    with_closed(&mut app, 5, 6);
    assert_eq!(app.selected_conn(), None);
    assert!(
        app.frames()
            .view()
            .iter()
            .all(|(c, _)| [1, 5, 6].contains(c))
    );
}
