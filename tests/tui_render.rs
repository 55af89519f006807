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
        "┌ Connections 2 (1 open) ───────────────────────────────────────────── amqpeek ┐",
        "│  # client -> upstream   proto  state        age bytes ->/<- frames ->/<- viol│",
        "│  * all connections                                     36/8          0/0    2│",
        "│  1 127.0.0.1:50001 -> … 1.0    HDR_EXCH      0s        20/8          0/0    1│",
        // A closed connection keeps the state it died in (greyed): here, before the handshake.
        "│  2 127.0.0.1:50002 -> … 0-9-1  AWAITING_…    0s        16/0          0/0    1│",
        "└──────────────────────────────────────────────────────────────────────────────┘",
        "┏ Frames: all 7 rows, 0 frames ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓",
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
        "┏ Frames: conn 1 4 rows, 0 frames ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓"
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
    assert!(!app.frames().follows(), "g stops following");
    assert!(s[23].starts_with(" PAUSED F:follow "), "{}", s[23]);
}

#[test]
fn a_filter_narrows_the_list_and_the_title_counts_matches() {
    let mut app = app_with(broken_events(), 80, 24);
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "violations dir:c2s");
    let s = screen(&app);
    assert!(
        s[23].starts_with("filter: violations dir:c2s█  Enter apply, Esc cancel, Up/Down earlier"),
        "{}",
        s[23]
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
    assert!(
        s[6].starts_with("┏ Frames: all 7 rows, 0 frames ━"),
        "{}",
        s[6]
    );
}

#[test]
fn help_overlay_lists_every_key() {
    let mut app = app_with(broken_events(), 80, 24);
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app);
    println!("{}", s.join("\n"));
    assert_eq!(
        s[0],
        "┌ amqpeek keys (Esc or ? closes) ──────────────────────────────────────────────┐"
    );
    assert_eq!(s[1], boxed("│", "Up/Down j/k     move the cursor", "│", 80));
    assert_eq!(s[18], boxed("│", "Filter:", "│", 80));
    assert_eq!(
        s[19],
        boxed(
            "│",
            "  name:transfer channel:1 link:orders dir:c2s conn:2",
            "│",
            80
        )
    );
    assert_eq!(
        s[23],
        " FOLLOW                                                            ?:help q:quit"
    );
    for (k, what) in amqpeek::tui::input::KEYS {
        assert!(
            s.iter().any(|l| l.contains(&format!("{k:<16}{what}"))),
            "{k} missing"
        );
    }
    press(&mut app, KeyCode::Esc);
    assert!(!screen(&app).iter().any(|l| l.contains("amqpeek keys")));
}

#[test]
fn violations_pane_lists_rule_severity_and_spec() {
    let mut app = app_with(broken_events(), 80, 24);
    press(&mut app, KeyCode::Char('v'));
    let s = screen(&app);
    println!("{}", s.join("\n"));
    assert_eq!(
        s[15],
        "┏ Violations 2 Enter: go to frame ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓"
    );
    assert_eq!(
        s[16],
        boxed(
            "┃",
            "time          #   dir sev   rule  message  [spec]",
            "┃",
            80
        )
    );
    let msgs = messages(&broken_events());
    assert_eq!(
        s[17],
        boxed(
            "┃",
            &format!(
                "12:00:00.003   1 -> error codec.malformed-frame  {}  [AMQP 1.0 §1, §2.3 / AMQP 0-9-1 §4.2]",
                msgs[0]
            ),
            "┃",
            80
        )
    );
    assert!(s[18].starts_with("┃12:00:00.102   2 -> error codec.malformed-frame"));
}

#[test]
fn dropped_events_and_evicted_frames_are_announced() {
    let mut ev = broken_events();
    ev.push(AppEvent::Dropped(1234));
    let opts = amqpeek::tui::TuiOptions {
        live: false,
        max_frames_per_conn: 2,
        ..Default::default()
    };
    let mut app = amqpeek::tui::App::new(opts, (80, 24));
    for e in ev {
        app.handle(e);
    }
    let s = screen(&app);
    println!("{}", s.join("\n"));
    assert!(
        s[23].starts_with(" FOLLOW  1,234 events dropped from view "),
        "{}",
        s[23]
    );
    // Conn 1 had 4 rows (2 headers, 1 malformed, 1 gap), conn 2 had 3: 3 dropped.
    assert_eq!(
        s[14],
        "┗ 3 older frames dropped from view (no capture written; --jsonl keeps all) ━━━━┛"
    );
    assert!(
        s[6].starts_with("┏ Frames: all 4 rows, 0 frames ━"),
        "{}",
        s[6]
    );
}

#[test]
fn zoom_gives_the_focused_pane_the_whole_screen() {
    let mut app = app_with(broken_events(), 80, 24);
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Char('z'));
    let s = screen(&app);
    assert_eq!(
        s[0],
        "┏ Violations 2 Enter: go to frame ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓"
    );
    // Its lines are wider than the screen: the border says so.
    assert_eq!(
        s[22],
        "┗ columns 1-78 of 174: Left/Right scroll, w: whole text ━━━━━━━━━━━━━━━━━━━━━━━┛"
    );
    // Keys still act on it; Esc leaves zoom.
    // Enter jumps to the violation's frame: the zoomed pane is now the frame list.
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.focus(), amqpeek::tui::Pane::Frames);
    let s = screen(&app);
    assert!(
        s[0].starts_with("┏ Frames: all 7 rows, 0 frames ━"),
        "{}",
        s[0]
    );
    let msgs = messages(&broken_events());
    assert_eq!(
        s[3],
        boxed(
            "┃",
            &format!("12:00:00.003   1 ->   - ! malformed      {}", msgs[0]),
            "┃",
            80
        )
    );
    press(&mut app, KeyCode::Esc);
    assert!(!app.zoom());
    assert!(screen(&app)[0].starts_with("┌ Connections 2 (1 open) "));
}

#[test]
fn state_pane_fits_80x24_with_the_sparkline_kept() {
    // The tracker's state after a real conversation: link `orders` granted 10, 2 sent.
    let mut app = app_with(conversation(1, 0, &amqp10_chunks(), false), 80, 24);
    press(&mut app, KeyCode::Char('c'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('s'));
    let s = screen(&app);
    println!("{}", s.join("\n"));
    let top = s
        .iter()
        .position(|l| l.starts_with("┏ State: conn 1 OPENED "))
        .expect("the state pane");
    assert_eq!(
        s[top],
        format!("┏ State: conn 1 OPENED {}┓", "━".repeat(78 - 22))
    );
    let links = top
        + s[top..]
            .iter()
            .position(|l| l.starts_with("┃links (1)"))
            .expect("the links table in view");
    assert_eq!(
        s[links + 1],
        format!(
            "┃{:<61} {:<16}┃",
            "name   channel handle role   state    dlv-count credit avail…", "credit history"
        )
    );
    // Credit 10, then 9 and 8 after each transfer: the sparkline falls.
    assert_eq!(
        s[links + 2],
        format!(
            "┃{:<61} {:<16}┃",
            "orders 0       0      sender ATTACHED 2         8      -    …", "█▇▆"
        )
    );
}
