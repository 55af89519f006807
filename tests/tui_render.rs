//! Render tests of every view against ratatui's `TestBackend`, on real bytes decoded by the
//! real pipeline. Rows whose text the codec writes (summaries, error messages) are built from
//! the same events, so the expected lines are exact.
mod tui_support;

use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::tui::AppEvent;
use crossterm::event::KeyCode;
use tui_support::*;

/// An AMQP 1.0 frame whose performative has an unknown descriptor (0x99): malformed for any
/// codec.
fn bad_amqp10_frame() -> Vec<u8> {
    amqp10::frame(0, &[0x00, 0x53, 0x99, 0x45])
}

/// An AMQP 0-9-1 heartbeat whose frame-end octet is 0x00, not 0xCE: malformed for any codec.
fn bad_amqp091_frame() -> Vec<u8> {
    hex("08 0000 00000000 00")
}

/// Two connections whose rows do not depend on a codec's frame names: headers, malformed
/// frames, a gap and a close.
fn broken_events() -> Vec<AppEvent> {
    let mut ev = conversation(
        1,
        0,
        &[
            (Dir::C2S, amqp10::HEADER.to_vec()),
            (Dir::S2C, amqp10::HEADER.to_vec()),
            (Dir::C2S, bad_amqp10_frame()),
        ],
        false,
    );
    ev.extend(conversation(
        2,
        100,
        &[
            (Dir::C2S, hex("414d515000000901")),
            (Dir::C2S, bad_amqp091_frame()),
        ],
        true,
    ));
    ev.push(AppEvent::Pipeline(Event {
        conn: 1,
        ts: Timestamp(T0 + 200_000),
        kind: EventKind::Gap {
            dir: Dir::S2C,
            offset: 8,
            len: 120,
            reason: "capture loss".into(),
        },
    }));
    ev
}

/// The violation messages in arrival order.
fn messages(ev: &[AppEvent]) -> Vec<String> {
    ev.iter()
        .filter_map(|e| match e {
            AppEvent::Pipeline(Event {
                kind: EventKind::Violation(v),
                ..
            }) => Some(v.message.clone()),
            _ => None,
        })
        .collect()
}

/// `text` inside a pane's side borders at `width` columns, as `screen` gives it.
fn boxed(left: &str, text: &str, right: &str, width: usize) -> String {
    let inner: String = text.chars().take(width - 2).collect();
    format!("{left}{inner:<w$}{right}", w = width - 2)
        .trim_end()
        .to_string()
}

#[test]
fn the_whole_80x24_screen_shows_every_pane() {
    let ev = broken_events();
    let msgs = messages(&ev);
    assert_eq!(msgs.len(), 2, "two malformed frames");
    let app = app_with(ev, 80, 24);
    let s = screen(&app);
    println!("{}", s.join("\n"));
    let f = |t: &str| boxed("┃", t, "┃", 80);
    let mut expected: Vec<String> = [
        "┌ Connections 2 (1 open) ──────────────────────────────────────────────────────┐",
        "│  # client -> upstream   proto  state        age bytes ->/<- frames ->/<- viol│",
        "│  * all connections                                     36/8          0/0    2│",
        "│  1 127.0.0.1:50001 -> … 1.0    -             0s        20/8          0/0    1│",
        "│  2 127.0.0.1:50002 -> … 0-9-1  closed        0s        16/0          0/0    1│",
        "└──────────────────────────────────────────────────────────────────────────────┘",
        "┏ Frames: all 7 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓",
    ]
    .map(String::from)
    .to_vec();
    expected.extend([
        f("12:00:00.001   1 ->   -   header         amqp-1.0 protocol header"),
        f("12:00:00.002   1 <-   -   header         amqp-1.0 protocol header"),
        f(&format!("12:00:00.003   1 ->   - ! malformed      {}", msgs[0])),
        f("12:00:00.101   2 ->   -   header         amqp-0-9-1 protocol header"),
        f(&format!("12:00:00.102   2 ->   - ! malformed      {}", msgs[1])),
        f("12:00:00.103   2      -   close          connection closed: client closed (16 bytes ->, 0 bytes <-)"),
        f("12:00:00.200   1 <-   -   gap            120 bytes not seen: capture loss"),
    ]);
    expected.extend(
        [
            "┗━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┛",
            "┌ gap conn 1 <- @8 ─────────────────────┐┌ hex: 0 bytes ───────────────────────┐",
            "│  len: 120                             ││                                     │",
            "│  reason: \"capture loss\"               ││                                     │",
        ]
        .map(String::from),
    );
    for _ in 0..4 {
        expected.push(
            "│                                       ││                                     │"
                .into(),
        );
    }
    expected.push(
        "└───────────────────────────────────────┘└─────────────────────────────────────┘".into(),
    );
    expected.push(
        " FOLLOW                                                            ?:help q:quit".into(),
    );
    assert_eq!(s, expected);
}

#[test]
fn selecting_a_connection_lists_only_its_frames_and_the_hex_of_a_header() {
    let mut app = app_with(broken_events(), 80, 24);
    press(&mut app, KeyCode::Char('c'));
    press(&mut app, KeyCode::Down); // conn 1
    let s = screen(&app);
    assert_eq!(
        s[6],
        "┏ Frames: conn 1 4 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓"
            .replace('┏', "┌")
            .replace('━', "─")
            .replace('┓', "┐")
    );
    // Without the connection column.
    assert_eq!(
        s[7],
        boxed(
            "│",
            "12:00:00.001 ->   -   header         amqp-1.0 protocol header",
            "│",
            80
        )
    );
    // Go to the first frame: the header's bytes in hex.
    press(&mut app, KeyCode::Tab);
    press(&mut app, KeyCode::Char('g'));
    let s = screen(&app);
    assert_eq!(
        s[15],
        "┌ header conn 1 -> @0 ──────────────────┐┌ hex: 8 bytes ───────────────────────┐"
    );
    assert_eq!(
        s[16],
        "│  bytes: \"414d515000010000\"            ││0000 41 4d 51 50 00 01 00 00 AMQP....│"
    );
    assert_eq!(
        s[17],
        "│  protocol: \"amqp-1.0\"                 ││                                     │"
    );
    assert!(!app.follow, "g stops following");
    assert!(s[23].starts_with(" PAUSED F:follow "), "{}", s[23]);
}

#[test]
fn a_filter_narrows_the_list_and_the_title_counts_matches() {
    let mut app = app_with(broken_events(), 80, 24);
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "violations dir:c2s");
    let s = screen(&app);
    assert_eq!(
        s[23],
        "filter: violations dir:c2s█  Enter apply, Esc cancel"
    );
    press(&mut app, KeyCode::Enter);
    let s = screen(&app);
    println!("{}", s.join("\n"));
    assert_eq!(
        s[6],
        "┏ Frames: all 2 of 7 match /violations dir:c2s ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓"
    );
    let msgs = messages(&broken_events());
    assert_eq!(
        s[7],
        boxed(
            "┃",
            &format!("12:00:00.003   1 ->   - ! malformed      {}", msgs[0]),
            "┃",
            80
        )
    );
    assert_eq!(
        s[8],
        boxed(
            "┃",
            &format!("12:00:00.102   2 ->   - ! malformed      {}", msgs[1]),
            "┃",
            80
        )
    );
    assert_eq!(s[9], boxed("┃", "", "┃", 80));
    assert!(
        s[23].starts_with(" FOLLOW  /violations dir:c2s "),
        "{}",
        s[23]
    );
    // A filter nothing matches says so; Esc clears it.
    press(&mut app, KeyCode::Char('/'));
    for _ in 0.."violations dir:c2s".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_str(&mut app, "name:transfer");
    press(&mut app, KeyCode::Enter);
    let s = screen(&app);
    assert_eq!(
        s[7],
        boxed("┃", "no frame matches the filter (Esc clears it)", "┃", 80)
    );
    press(&mut app, KeyCode::Esc);
    let s = screen(&app);
    assert!(s[6].starts_with("┏ Frames: all 7 ━"), "{}", s[6]);
}
