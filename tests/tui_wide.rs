//! Wide content: a pane whose lines are wider than it scrolls sideways (Left/Right or h/l)
//! and says so on its border; the state pane keeps the link counts in view at 80 columns;
//! addresses are not cut; zoom gives the detail tree the whole width; Enter on a detail leaf
//! and `w` on a connection show them whole. At 80x24 and 160x45.
mod tui_support;

use amqpeek::event::{Dir, Event, EventKind};
use amqpeek::tui::{App, AppEvent};
use crossterm::event::KeyCode;
use tui_support::*;

/// A connection with one violation (an unknown performative), its message replaced by
/// `message`.
fn violation_with(message: &str) -> Vec<AppEvent> {
    let mut ev = conversation(
        1,
        0,
        &[
            (Dir::C2S, amqp10::HEADER.to_vec()),
            (Dir::S2C, amqp10::HEADER.to_vec()),
            (Dir::C2S, amqp10::frame(0, &[0x00, 0x53, 0x99, 0x45])),
        ],
        false,
    );
    for e in &mut ev {
        if let AppEvent::Pipeline(Event {
            kind: EventKind::Violation(v),
            ..
        }) = e
        {
            v.message = message.to_string();
        }
    }
    ev
}

/// A connection whose link `name` is attached both ways with address `addr`, credit given,
/// and one transfer sent.
fn link_with(name: &str, addr: &str) -> Vec<AppEvent> {
    use amqp10::*;
    conversation(
        1,
        0,
        &[
            (Dir::C2S, HEADER.to_vec()),
            (Dir::S2C, HEADER.to_vec()),
            (Dir::C2S, open("client")),
            (Dir::S2C, open("broker")),
            (Dir::C2S, begin(0)),
            (Dir::S2C, begin_reply(0, 0)),
            (Dir::C2S, attach(0, name, 0, false, addr)),
            (Dir::S2C, attach(0, name, 0, true, addr)),
            (Dir::S2C, flow(0, 0, 10)),
            (Dir::C2S, transfer(0, 0, 0, b"hello")),
        ],
        false,
    )
}

/// The screen as one string.
fn text(app: &App) -> String {
    screen(app).join("\n")
}

/// Select the first frame-list row named `name`.
fn select_frame(app: &mut App, name: &str) {
    let i = app
        .frames()
        .view()
        .iter()
        .position(|(c, s)| app.row(*c, *s).is_some_and(|r| r.name == name))
        .unwrap_or_else(|| panic!("no {name}:\n{}", dump(app)));
    press(app, KeyCode::Char('g'));
    for _ in 0..i {
        press(app, KeyCode::Down);
    }
}

/// Press `key` until `want` shows, at most `max` times; how many presses it took.
fn press_until(app: &mut App, key: KeyCode, want: &str, max: usize) -> usize {
    for n in 0..=max {
        if text(app).contains(want) {
            return n;
        }
        press(app, key);
    }
    panic!("{want} never shows after {max} presses:\n{}", dump(app));
}

#[test]
fn a_long_violation_message_scrolls_into_view_in_its_pane_at_80x24() {
    let words: Vec<String> = (1..=30).map(|i| format!("word{i:02}")).collect();
    let message = format!("{} thoughtfully-the-end", words.join(" "));
    let mut app = app_with(violation_with(&message), 80, 24);
    press(&mut app, KeyCode::Char('v'));
    assert!(
        !text(&app).contains("thoughtfully-the-end"),
        "{}",
        dump(&app)
    );
    assert!(
        text(&app).contains("Left/Right scroll"),
        "the border says the lines are wider:\n{}",
        dump(&app)
    );
    let n = press_until(&mut app, KeyCode::Right, "thoughtfully-the-end", 40);
    assert!(n > 0);
    // The spec section, after the message, is there too.
    press_until(&mut app, KeyCode::Char('l'), "]", 40);
    // And back to the start.
    press_until(&mut app, KeyCode::Left, "time ", 40);
    assert!(text(&app).contains("word01"), "{}", dump(&app));
}

#[test]
fn the_state_pane_shows_dlv_count_and_credit_at_80_columns_and_scrolls_to_the_rest() {
    let addr = "/queue/amqpeek-demo10-2-orders-eu-west-primary";
    let mut app = app_with(link_with("orders", addr), 80, 24);
    press(&mut app, KeyCode::Char('s'));
    let s = text(&app);
    let heads = screen(&app)
        .into_iter()
        .find(|l| l.contains("channel handle role"))
        .unwrap_or_else(|| panic!("no column heads:\n{s}"));
    assert!(
        heads.contains("dlv-count") && heads.contains("credit"),
        "the link counts at 80 columns:\n{s}"
    );
    assert!(!s.contains("snd-settle"), "{s}");
    press_until(&mut app, KeyCode::Right, addr, 20);
    press_until(&mut app, KeyCode::Right, "snd-settle", 20);
}

#[test]
fn a_long_target_shows_whole_in_the_state_pane_at_160x45() {
    let addr = "/queue/amqpeek-demo10-2-orders-eu-west-primary-replica";
    let mut app = app_with(link_with("orders", addr), 160, 45);
    press(&mut app, KeyCode::Char('s'));
    let s = text(&app);
    assert!(s.contains(&format!(" {addr}")), "{s}");
    assert!(s.contains("dlv-count") && s.contains("unsettled"), "{s}");
}

#[test]
fn a_connection_shows_whole_in_the_full_text_and_its_list_scrolls_when_narrow() {
    let mut app = app_with(link_with("orders", "q"), 80, 24);
    press(&mut app, KeyCode::Char('c'));
    let s = text(&app);
    assert!(!s.contains("127.0.0.1:50001 -> 127.0.0.1:5672"), "{s}");
    // `w`: the connection whole.
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('w'));
    let s = text(&app);
    assert!(s.contains("Connection"), "{s}");
    assert!(s.contains("client    127.0.0.1:50001"), "{s}");
    assert!(s.contains("upstream  127.0.0.1:5672"), "{s}");
    // A pane narrower than its fixed columns scrolls to the last of them.
    let mut app = app_with(link_with("orders", "q"), 60, 24);
    press(&mut app, KeyCode::Char('c'));
    assert!(!text(&app).contains("viol"), "{}", dump(&app));
    press_until(&mut app, KeyCode::Right, "viol", 20);
}

#[test]
fn zoom_gives_the_detail_tree_the_whole_width_at_160x45() {
    let addr = format!("/queue/{}-the-address-ends-here", "a".repeat(100));
    let mut app = app_with(link_with("orders", &addr), 160, 45);
    select_frame(&mut app, "attach");
    press(&mut app, KeyCode::Char('d'));
    assert!(!text(&app).contains("ends-here"), "{}", dump(&app));
    press(&mut app, KeyCode::Char('z'));
    assert!(text(&app).contains("ends-here"), "{}", dump(&app));
    // The hex dump is still there, below.
    assert!(text(&app).contains("hex:"), "{}", dump(&app));
}

#[test]
fn right_on_a_detail_leaf_scrolls_and_enter_shows_it_whole_at_80x24() {
    let name = format!("link-{}-named-at-length-ends-here", "n".repeat(90));
    let mut app = app_with(link_with(&name, "q"), 80, 24);
    select_frame(&mut app, "attach");
    press(&mut app, KeyCode::Char('d'));
    // The first node is the name, a leaf: Right scrolls the tree.
    press(&mut app, KeyCode::Char('g'));
    press_until(&mut app, KeyCode::Right, "ends-here", 40);
    press_until(&mut app, KeyCode::Left, "name: ", 40);
    press(&mut app, KeyCode::Enter);
    let s: String = screen(&app)
        .iter()
        .map(|l| l.trim_start_matches('│').trim_end_matches('│').trim_end())
        .collect();
    assert!(s.contains("Field"), "the whole value:\n{}", dump(&app));
    assert!(s.contains(&name), "{}", dump(&app));
}

#[test]
fn the_health_list_scrolls_to_a_long_link_name_at_80x24() {
    use amqp10::*;
    use amqpeek::event::Timestamp;
    use amqpeek::pipeline::{InspectOptions, Inspector};
    let name = format!("link-{}-ends-here", "x".repeat(80));
    let at = |ms: i64| Timestamp(T0 + ms * 1000);
    let mut insp = Inspector::new(1, InspectOptions::default());
    let mut out = vec![Event {
        conn: 1,
        ts: at(0),
        kind: EventKind::Connect {
            client: "127.0.0.1:50001".parse().unwrap(),
            upstream: "127.0.0.1:5672".parse().unwrap(),
        },
    }];
    // A receiver the broker's sender never gets credit for, 40 s on.
    let steps = [
        (1, Dir::C2S, HEADER.to_vec()),
        (2, Dir::S2C, HEADER.to_vec()),
        (3, Dir::C2S, open("client")),
        (4, Dir::S2C, open("broker")),
        (5, Dir::C2S, begin(0)),
        (6, Dir::S2C, begin_reply(0, 0)),
        (7, Dir::C2S, attach(0, &name, 0, true, "q")),
        (8, Dir::S2C, attach(0, &name, 0, false, "q")),
        (40_008, Dir::C2S, EMPTY.to_vec()),
    ];
    for (ms, dir, b) in steps {
        insp.chunk(dir, at(ms), bytes::Bytes::from(b), &mut out);
    }
    insp.tick(at(40_008), &mut out);
    let mut app = app_with(out.into_iter().map(AppEvent::Pipeline).collect(), 80, 24);
    press(&mut app, KeyCode::Char('H'));
    assert!(text(&app).contains("link \"link-xxx"), "{}", dump(&app));
    assert!(!text(&app).contains("ends-here\""), "{}", dump(&app));
    press_until(&mut app, KeyCode::Right, "ends-here\"", 40);
}
