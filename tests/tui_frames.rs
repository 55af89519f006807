//! The UI on real decoded AMQP 1.0 and 0-9-1 frames: names, link names on transfers, the field
//! tree and hex of a frame with the selected field's bytes lit, filters by name / channel / link.
mod tui_support;

use amqpeek::event::Dir;
use amqpeek::protocol::{AnyFrame, StreamDecoder};
use amqpeek::tui::App;
use crossterm::event::KeyCode;
use tui_support::*;

/// The summary the codec writes for `bytes` (one frame after an AMQP 1.0 header).
fn summary_of(frame: &[u8]) -> String {
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    d.push(bytes::Bytes::from_static(amqp10::HEADER), &mut out);
    d.push(bytes::Bytes::copy_from_slice(frame), &mut out);
    match out.pop() {
        Some(amqpeek::protocol::Item::Frame(fe)) => fe.frame.summary(),
        other => panic!("not a frame: {other:?}"),
    }
}

fn frame_of(frame: &[u8]) -> AnyFrame {
    let mut d = StreamDecoder::new();
    let mut out = Vec::new();
    d.push(bytes::Bytes::from_static(amqp10::HEADER), &mut out);
    d.push(bytes::Bytes::copy_from_slice(frame), &mut out);
    match out.pop() {
        Some(amqpeek::protocol::Item::Frame(fe)) => fe.frame.clone(),
        other => panic!("not a frame: {other:?}"),
    }
}

fn app() -> App {
    app_with(conversation(1, 0, &amqp10_chunks(), false), 80, 24)
}

fn names(app: &App) -> Vec<String> {
    app.frames()
        .view()
        .iter()
        .map(|(c, s)| app.row(*c, *s).unwrap().name.clone())
        .collect()
}

#[test]
fn frames_are_listed_by_spec_name_with_direction_and_channel() {
    let app = app();
    assert_eq!(
        names(&app),
        vec![
            "header", "header", "open", "open", "begin", "begin", "attach", "attach", "flow",
            "transfer", "transfer", "empty"
        ]
    );
    let c = &app.model().conns[&1];
    assert_eq!((c.frames[0], c.frames[1]), (6, 4));
    let s = screen(&app);
    let chunks = amqp10_chunks();
    // The last rows, newest at the bottom (follow mode).
    let line = |ms: u32, arrow: &str, name: &str, summary: &str| {
        let t = format!("12:00:00.{ms:03}   1 {arrow}   0   {name:<14} {summary}");
        let inner: String = t.chars().take(78).collect();
        format!("┃{inner:<78}┃").trim_end().to_string()
    };
    // One connection: its pane is 5 rows, the frame list starts at row 5.
    assert!(
        s[5].starts_with("┏ Frames: all 12 rows, 10 frames ━"),
        "{}",
        s[5]
    );
    assert_eq!(s[12], line(12, "->", "empty", &summary_of(&chunks[11].1)));
    assert_eq!(
        s[11],
        line(11, "->", "transfer", &summary_of(&chunks[10].1))
    );
    assert_eq!(s[8], line(8, "<-", "attach", &summary_of(&chunks[7].1)));
}

#[test]
fn transfers_carry_the_name_of_their_link_so_link_filters_find_them() {
    let mut app = app();
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "link:orders");
    press(&mut app, KeyCode::Enter);
    // Both attaches (name), the flow (handle 0 of the receiver side) and both transfers.
    assert_eq!(
        names(&app),
        vec!["attach", "attach", "flow", "transfer", "transfer"]
    );
    let s = screen(&app);
    assert!(
        s[5].starts_with("┏ Frames: all 5 of 12 match /link:orders ━"),
        "{}",
        s[5]
    );
    press(&mut app, KeyCode::Char('/'));
    for _ in 0.."link:orders".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_str(&mut app, "name:transfer|flow !dir:s2c");
    press(&mut app, KeyCode::Enter);
    assert_eq!(names(&app), vec!["transfer", "transfer"]);
    press(&mut app, KeyCode::Char('/'));
    for _ in 0.."name:transfer|flow !dir:s2c".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_str(&mut app, "channel:0 name:open");
    press(&mut app, KeyCode::Enter);
    assert_eq!(names(&app), vec!["open", "open"]);
}

#[test]
fn the_detail_pane_shows_fields_by_spec_name_and_the_frame_bytes() {
    let mut app = app();
    // Select the client's attach (row 6) and show the detail.
    press(&mut app, KeyCode::Char('g'));
    for _ in 0..6 {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Enter);
    let s = screen(&app);
    println!("{}", s.join("\n"));
    let chunks = amqp10_chunks();
    let attach = &chunks[6].1;
    // Its offset: everything the client sent before it.
    let offset: usize = chunks[..6]
        .iter()
        .filter(|(d, _)| *d == Dir::C2S)
        .map(|(_, b)| b.len())
        .sum();
    let title = format!(" attach conn 1 -> @{offset} ch 0 ");
    assert_eq!(
        s[14],
        format!(
            "┏{title}{}┓┌ hex: {} bytes {}┐",
            "━".repeat(39 - title.chars().count()),
            attach.len(),
            "─".repeat(37 - format!(" hex: {} bytes ", attach.len()).len())
        )
    );
    let left = |i: usize| -> String {
        s[i].chars()
            .skip(1)
            .take(38)
            .collect::<String>()
            .trim_end()
            .to_string()
    };
    let fields = frame_of(attach).fields_json();
    let obj = fields.as_object().unwrap();
    // Fields in the codec's order, by their spec names.
    let first: Vec<&String> = obj.keys().take(3).collect();
    // In spec order (the codec's spans give it).
    assert_eq!(left(15), "  name: \"orders\"");
    assert_eq!(left(16), "  handle: 0");
    assert_eq!(left(17), "  role: false");
    let _ = first;
    assert!(obj.contains_key("name") && obj.contains_key("handle") && obj.contains_key("role"));
    assert!(
        s.iter().any(|l| l.contains("name: \"orders\"")),
        "{}",
        s.join("\n")
    );
    // The hex dump shows the selected field's line (the name, at bytes 20..28) with the line
    // before it: bytes 8..16 first.
    let hex_line = |base: usize| {
        let b = &attach[base..base + 8];
        format!(
            "│{base:04x} {} {}│",
            b.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(" "),
            b.iter()
                .map(|x| if x.is_ascii_graphic() {
                    *x as char
                } else {
                    '.'
                })
                .collect::<String>()
        )
    };
    assert_eq!(s[15].chars().skip(41).collect::<String>(), hex_line(8));
    assert_eq!(s[16].chars().skip(41).collect::<String>(), hex_line(16));
}

/// Is byte `i` of the selected frame lit in the hex dump (8 bytes a line, right of the tree)?
fn lit(app: &App, i: usize) -> bool {
    let s = screen(app);
    let buf = buffer(app);
    let label = format!("│{:04x} ", i / 8 * 8);
    let y = s
        .iter()
        .position(|l| l.chars().skip(41).collect::<String>().starts_with(&label))
        .unwrap_or_else(|| panic!("no hex line for byte {i}:\n{}", s.join("\n")));
    // The hex pane's border is column 41; its text starts at 42 with a 5-column label.
    let x = 42 + 5 + (i % 8) * 3;
    buf[(x as u16, y as u16)].bg == ratatui::style::Color::Yellow
}

#[test]
fn the_selected_field_is_highlighted_in_the_hex_dump() {
    let mut app = app();
    // The client's first transfer (row 9).
    press(&mut app, KeyCode::Char('g'));
    for _ in 0..9 {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Enter);
    let row = app.selected_row().unwrap().clone();
    assert_eq!(row.name, "transfer");
    let spans = row.spans().expect("the AMQP 1.0 codec gives field spans");
    let span = |n: &str| spans.iter().find(|(x, _)| *x == n).unwrap().1.clone();
    // Fields are listed in spec order: handle, delivery-id, delivery-tag, message-format.
    let s = screen(&app);
    let left = |s: &[String], i: usize| -> String {
        s[i].chars()
            .skip(1)
            .take(38)
            .collect::<String>()
            .trim_end()
            .to_string()
    };
    assert_eq!(left(&s, 15), "  handle: 0");
    assert_eq!(left(&s, 16), "  delivery-id: 0");
    assert!(span("handle").clone().all(|i| lit(&app, i)));
    // delivery-id (uint 0: 70 00 00 00 00) is lit, handle's bytes are not.
    press(&mut app, KeyCode::Down);
    assert_eq!(span("delivery-id").len(), 5);
    assert!(span("delivery-id").all(|i| lit(&app, i)));
    assert!(!span("handle").any(|i| lit(&app, i)));
    // The message node lights the payload: every byte after the performative.
    for _ in 0..3 {
        press(&mut app, KeyCode::Down);
    }
    assert_eq!(left(&screen(&app), 19), "▾ message:");
    let payload = span("$payload");
    assert_eq!(payload.end, row.len);
    assert!(payload.clone().all(|i| lit(&app, i)));
    assert!(!span("delivery-id").any(|i| lit(&app, i)));
}

/// An AMQP 0-9-1 frame.
fn f091(ty: u8, channel: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![ty];
    v.extend_from_slice(&channel.to_be_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(payload);
    v.push(0xce);
    v
}

#[test]
fn amqp091_publish_content_and_heartbeat() {
    // basic.publish (60, 40): reserved-1, exchange "", routing-key "orders", no flags.
    let mut publish = vec![0, 60, 0, 40, 0, 0, 0, 6];
    publish.extend_from_slice(b"orders");
    publish.push(0);
    // content header: class 60, weight 0, body size 5, no properties.
    let header = [0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0];
    let chunks = vec![
        (Dir::C2S, hex("414d515000000901")),
        (Dir::C2S, f091(1, 1, &publish)),
        (Dir::C2S, f091(2, 1, &header)),
        (Dir::C2S, f091(3, 1, b"hello")),
        // The server answers without a protocol header.
        (Dir::S2C, hex("08 0000 00000000 ce")),
    ];
    let mut app = app_with(conversation(3, 0, &chunks, false), 80, 24);
    assert_eq!(
        names(&app),
        vec![
            "header",
            "basic.publish",
            "content-header",
            "content-body",
            "heartbeat"
        ]
    );
    let s = screen(&app);
    // One connection: the list starts at row 6. Summaries lose a repeated name. The publish
    // carries a violation marker: the state tracker saw no handshake before it.
    assert!(
        s[7].starts_with("┃12:00:00.002   3 ->   1 ! basic.publish  exchange=\"\" routing-key"),
        "{}",
        s[7]
    );
    assert!(
        s[10].starts_with("┃12:00:00.005   3 <-   0   heartbeat "),
        "{}",
        s[10]
    );
    assert_eq!(app.model().conns[&3].proto, "amqp-0-9-1");
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "channel:1");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        names(&app),
        vec!["basic.publish", "content-header", "content-body"]
    );
    // The body frame completes the message: the detail shows it.
    press(&mut app, KeyCode::Char('G'));
    let row = app.selected_row().unwrap();
    assert_eq!(row.name, "content-body");
    assert!(
        row.message.is_some(),
        "the message is attached to its last frame"
    );
    press(&mut app, KeyCode::Enter);
    let s = screen(&app);
    println!("{}", s.join("\n"));
    assert!(
        s.iter().any(|l| l.contains("▾ message:")),
        "{}",
        s.join("\n")
    );
    // Words search summaries: the routing key.
    press(&mut app, KeyCode::Char('/'));
    for _ in 0.."channel:1".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_str(&mut app, "link:orders");
    press(&mut app, KeyCode::Enter);
    assert_eq!(names(&app), vec!["basic.publish"]);
}
