//! The full-text overlay (`w`): what a pane cuts to its column is there whole, wrapped,
//! scrolled, and escaped; and the panes' flexible columns take the width there is.
mod tui_support;

use amqpeek::event::{Dir, Event, EventKind};
use amqpeek::tui::{App, AppEvent};
use crossterm::event::KeyCode;
use tui_support::*;

/// An AMQP 1.0 frame whose performative has an unknown descriptor: a violation.
fn bad_frame() -> Vec<u8> {
    amqp10::frame(0, &[0x00, 0x53, 0x99, 0x45])
}

/// A connection with one violation, its message replaced by `message`.
fn violation_with(message: &str) -> Vec<AppEvent> {
    let mut ev = conversation(
        1,
        0,
        &[
            (Dir::C2S, amqp10::HEADER.to_vec()),
            (Dir::S2C, amqp10::HEADER.to_vec()),
            (Dir::C2S, bad_frame()),
        ],
        false,
    );
    let mut found = 0;
    for e in &mut ev {
        if let AppEvent::Pipeline(Event {
            kind: EventKind::Violation(v),
            ..
        }) = e
        {
            v.message = message.to_string();
            found += 1;
        }
    }
    assert!(found > 0, "the bad frame gives a violation");
    ev
}

/// A connection whose link `name` is attached with address `addr`, both ways.
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
        ],
        false,
    )
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

/// Focus the detail tree on the selected frame's node labelled `label`.
fn select_field(app: &mut App, label: &str) {
    press(app, KeyCode::Char('d'));
    let row = app.selected_row().expect("a frame selected");
    let nodes = amqpeek::tui::views::detail::tree_nodes(row, app.detail().toggled());
    let i = nodes
        .iter()
        .position(|n| n.label == label)
        .unwrap_or_else(|| panic!("no field {label}: {nodes:?}"));
    press(app, KeyCode::Char('g'));
    for _ in 0..i {
        press(app, KeyCode::Down);
    }
}

/// The screen's text as one string, its lines joined by spaces.
fn text(app: &App) -> String {
    screen(app).join(" ")
}

/// The overlay's text as one string: each screen line inside its borders, joined as they
/// were wrapped (a word broken at the edge comes out whole).
fn inside(app: &App) -> String {
    screen(app)
        .iter()
        .map(|l| l.trim_start_matches('│').trim_end_matches('│').trim_end())
        .collect()
}

/// A long message of numbered words, `n` of them, ending with `last`.
fn long_words(n: usize, last: &str) -> String {
    let mut words: Vec<String> = (1..=n).map(|i| format!("word{i:03}")).collect();
    words.push(last.to_string());
    words.join(" ")
}

#[test]
fn a_long_violation_message_shows_every_word_in_the_overlay_at_80x24() {
    let message = long_words(40, "thoughtfully-the-end");
    let mut app = app_with(violation_with(&message), 80, 24);
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Char('w'));
    let s = text(&app);
    for word in message.split(' ') {
        assert!(s.contains(word), "{word} missing:\n{}", dump(&app));
    }
    assert!(s.contains("severity"), "{}", dump(&app));
    assert!(s.contains("offset"), "{}", dump(&app));
    press(&mut app, KeyCode::Esc);
    assert!(
        !text(&app).contains("thoughtfully-the-end"),
        "{}",
        dump(&app)
    );
}

#[test]
fn a_frame_with_a_long_summary_shows_its_end_in_the_overlay() {
    let addr = format!(
        "/queue/amqpeek-demo10-{}-the-address-ends-here",
        "x".repeat(90)
    );
    let mut app = app_with(link_with("orders", &addr), 80, 24);
    select_frame(&mut app, "attach");
    assert!(
        !text(&app).contains("the-address-ends-here"),
        "{}",
        dump(&app)
    );
    press(&mut app, KeyCode::Char('w'));
    let s = inside(&app);
    assert!(s.contains("-the-address-ends-here"), "{}", dump(&app));
}

#[test]
fn a_detail_field_with_a_long_value_shows_whole_in_the_overlay() {
    let name = format!("link-{}-named-at-length-ends-here", "n".repeat(150));
    let mut app = app_with(link_with(&name, "q"), 80, 24);
    select_frame(&mut app, "attach");
    select_field(&mut app, "name");
    assert!(!text(&app).contains("ends-here"), "{}", dump(&app));
    press(&mut app, KeyCode::Char('w'));
    let s = inside(&app);
    assert!(s.contains(&name), "{}", dump(&app));
    assert!(s.contains("field"), "{}", dump(&app));
}

#[test]
fn scrolling_the_overlay_reaches_the_last_line_of_a_long_text() {
    let message = long_words(400, "the-very-last-word");
    let mut app = app_with(violation_with(&message), 80, 24);
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Char('w'));
    assert!(!text(&app).contains("the-very-last-word"), "{}", dump(&app));
    assert!(text(&app).contains("word001"), "{}", dump(&app));
    assert!(text(&app).contains("rule "), "{}", dump(&app));
    press(&mut app, KeyCode::Down);
    assert!(!text(&app).contains("rule "), "{}", dump(&app));
    for _ in 0..10 {
        press(&mut app, KeyCode::PageDown);
    }
    let s = text(&app);
    assert!(s.contains("the-very-last-word"), "{}", dump(&app));
    // The last page ends with the text's last line, not past it.
    assert!(s.contains("about"), "{}", dump(&app));
    press(&mut app, KeyCode::PageUp);
    press(&mut app, KeyCode::Home);
    assert!(text(&app).contains("word001"), "{}", dump(&app));
}

#[test]
fn a_hostile_string_from_the_wire_shows_escaped_in_the_overlay() {
    let name = "o\x1b[2J\u{202e}x";
    let mut app = app_with(link_with(name, "q"), 80, 24);
    select_frame(&mut app, "attach");
    select_field(&mut app, "name");
    press(&mut app, KeyCode::Char('w'));
    let s = screen(&app);
    assert!(s.iter().any(|l| l.contains(r"\u{202e}x")), "{}", dump(&app));
    assert!(
        s.iter()
            .all(|l| !l.contains('\x1b') && !l.contains('\u{202e}')),
        "{}",
        dump(&app)
    );
    // A hostile violation message, too.
    let mut app = app_with(violation_with("bad \x1b]0;pwned\x07\u{202e} end"), 80, 24);
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Char('w'));
    let s = screen(&app);
    assert!(
        s.iter()
            .any(|l| l.contains(r"bad \x1b]0;pwned\x07\u{202e} end")),
        "{}",
        dump(&app)
    );
}

/// A connection whose client attaches a sender link `orders` with no source and target
/// address `addr`, and the broker answers.
fn sender_to(addr: &str) -> Vec<AppEvent> {
    use amqp10::*;
    let attach = |receiver: bool| {
        let target = described(0x29, list(&[str8(addr)]));
        let mut fields = vec![
            str8("orders"),
            uint(0),
            boolean(receiver),
            null(),
            null(),
            null(),
            target,
        ];
        if !receiver {
            fields.extend([null(), null(), uint(0)]);
        }
        frame(0, &described(0x12, list(&fields)))
    };
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
            (Dir::C2S, attach(false)),
            (Dir::S2C, attach(true)),
        ],
        false,
    )
}

#[test]
fn the_state_pane_shows_a_long_target_whole_when_the_line_has_room_for_it() {
    let addr = "/queue/amqpeek-demo10-2-orders-eu";
    let mut app = app_with(sender_to(addr), 160, 40);
    press(&mut app, KeyCode::Char('s'));
    let s = screen(&app);
    let row = s
        .iter()
        .find(|l| l.contains("ATTACHED"))
        .unwrap_or_else(|| panic!("no link row:\n{}", dump(&app)));
    assert!(row.contains(&format!(" {addr} ")), "{}", dump(&app));
    // Every column still there, the last one whole.
    assert!(row.contains("0 "), "{row}");
    let heads = s.iter().find(|l| l.contains("snd-settle")).unwrap();
    assert!(heads.contains("unsettled"), "{}", dump(&app));
    // At 80 columns the pane still starts with the link's name and state.
    let mut app = app_with(sender_to(addr), 80, 24);
    press(&mut app, KeyCode::Char('s'));
    press(&mut app, KeyCode::Char('z'));
    let s = screen(&app);
    assert!(
        s.iter()
            .any(|l| l.contains("orders") && l.contains("ATTACHED")),
        "{}",
        dump(&app)
    );
}

#[test]
fn a_state_row_shows_every_column_by_name_in_the_overlay() {
    let addr = "/queue/amqpeek-demo10-2-orders-eu";
    let mut app = app_with(sender_to(addr), 80, 24);
    press(&mut app, KeyCode::Char('s'));
    for _ in 0..3 {
        press(&mut app, KeyCode::Down);
    }
    assert!(!text(&app).contains("snd-settle"), "{}", dump(&app));
    press(&mut app, KeyCode::Char('w'));
    let s = screen(&app);
    assert!(
        s.iter().any(|l| l.contains(&format!("target    {addr}"))),
        "{}",
        dump(&app)
    );
    assert!(
        s.iter().any(|l| l.contains("snd-settle mixed")),
        "{}",
        dump(&app)
    );
    assert!(
        s.iter().any(|l| l.contains("unsettled 0")),
        "{}",
        dump(&app)
    );
}

#[test]
fn a_narrow_violations_pane_shows_the_message_before_the_spec() {
    let mut app = app_with(
        violation_with("the peer sent an unknown performative"),
        80,
        24,
    );
    press(&mut app, KeyCode::Char('v'));
    let s = screen(&app);
    let row = s
        .iter()
        .find(|l| l.contains("codec.malformed-frame"))
        .unwrap_or_else(|| panic!("no violation row:\n{}", dump(&app)));
    assert!(row.contains("the peer sent an unknown"), "{}", dump(&app));
    assert!(
        s.iter().any(|l| l.contains("rule  message  [spec]")),
        "{}",
        dump(&app)
    );
    // With the room for the whole line, the spec section stays before the message.
    let mut app = app_with(
        violation_with("the peer sent an unknown performative"),
        200,
        40,
    );
    press(&mut app, KeyCode::Char('v'));
    assert!(
        screen(&app)
            .iter()
            .any(|l| l.contains("]  the peer sent an unknown performative")),
        "{}",
        dump(&app)
    );
}

#[test]
fn the_violations_pane_draws_a_hostile_message_escaped() {
    let mut app = app_with(violation_with("bad \x1b[2J\u{202e} end"), 120, 30);
    press(&mut app, KeyCode::Char('v'));
    let s = screen(&app);
    assert!(
        s.iter().any(|l| l.contains(r"bad \x1b[2J\u{202e} end")),
        "{}",
        dump(&app)
    );
    assert!(
        s.iter()
            .all(|l| !l.contains('\x1b') && !l.contains('\u{202e}')),
        "{}",
        dump(&app)
    );
}
