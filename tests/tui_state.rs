//! The state pane, drawn (ratatui TestBackend) from the state the real pipeline publishes for
//! real conversations: the cells must be the tracker's values (channel numbers, handles,
//! credit, counts), and after a skim the counts the missed bytes could have changed must say
//! they are uncertain.
mod state_amqp091_conv;
mod tui_support;

use amqpeek::codec::amqp091::{ContentHeader, FrameKind, encode_frame};
use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::tui::AppEvent;
use bytes::Bytes;
use crossterm::event::KeyCode;
use state_amqp091_conv::{K, bit, ll, long, lstr, m, short, sstr};
use tui_support::*;

/// The state pane's lines (between its borders, right-trimmed), from its title line on.
fn state_pane(app: &amqpeek::tui::App, conn: u64) -> Vec<String> {
    let s = screen(app);
    let top = s
        .iter()
        .position(|l| l.contains(&format!(" State: conn {conn} ")))
        .unwrap_or_else(|| panic!("no state pane:\n{}", s.join("\n")));
    s[top..]
        .iter()
        .map(|l| {
            l.trim_start_matches(['┃', '│'])
                .trim_end_matches(['┃', '│'])
                .trim_end()
                .to_string()
        })
        .collect()
}

/// Show connection `conn`'s state pane.
fn show_state(app: &mut amqpeek::tui::App, nth_conn: usize) {
    press(app, KeyCode::Char('c'));
    for _ in 0..nth_conn {
        press(app, KeyCode::Down);
    }
    press(app, KeyCode::Char('s'));
    press(app, KeyCode::Char('z'));
}

/// Two links on one session on channel 0: `orders` (the client sends, handle 0 both ways) and
/// `replies` (the client receives, handle 1 both ways), with credit granted and used.
fn two_links() -> Vec<(Dir, Vec<u8>)> {
    use amqp10::*;
    vec![
        (Dir::C2S, HEADER.to_vec()),
        (Dir::S2C, HEADER.to_vec()),
        (Dir::C2S, open("client")),
        (Dir::S2C, open("broker")),
        (Dir::C2S, begin(0)),
        (Dir::S2C, begin_reply(0, 0)),
        (Dir::C2S, attach(0, "orders", 0, false, "q.orders")),
        (Dir::S2C, attach(0, "orders", 0, true, "q.orders")),
        (Dir::C2S, attach(0, "replies", 1, true, "q.replies")),
        (Dir::S2C, attach(0, "replies", 1, false, "q.replies")),
        (Dir::S2C, flow(0, 0, 10)),
        (Dir::C2S, transfer(0, 0, 0, b"one")),
        (Dir::C2S, transfer(0, 0, 1, b"two")),
        (Dir::C2S, flow(0, 1, 5)),
        (Dir::S2C, transfer(0, 1, 0, b"re")),
    ]
}

#[test]
fn two_links_on_channel_0_show_their_own_channel_handle_and_credit() {
    let mut app = app_with(conversation(1, 0, &two_links(), false), 160, 40);
    show_state(&mut app, 1);
    let p = state_pane(&app, 1);
    println!("{}", p.join("\n"));
    assert!(p[0].contains(" State: conn 1 OPENED "), "{}", p[0]);
    let at = |heading: &str| {
        p.iter()
            .position(|l| l.starts_with(heading))
            .unwrap_or_else(|| panic!("no {heading}"))
    };
    let s = at("sessions (1)");
    assert_eq!(p[s], "sessions (1)  values client/server");
    assert_eq!(
        p[s + 1],
        "channel state  next-out next-in in-win out-win unsettled links"
    );
    // As the frames said: the client's flow (after its 2 transfers) announced next-outgoing-id
    // 0, the server sent 1 transfer after its flow; all 3 transfers are still unsettled.
    assert_eq!(
        p[s + 2],
        "0       MAPPED 0/1      0       100    100     2/1       2"
    );
    let l = at("links (2)");
    let cols = &p[l + 1];
    assert!(
        cols.starts_with(
            "name    channel handle role     state    dlv-count credit avail drain unsettled source    target    snd-settle rcv-settle"
        ),
        "{cols}"
    );
    assert!(cols.ends_with("credit history"), "{cols}");
    // orders: granted 10, 2 sent; replies: granted 5, 1 received. Sparklines from the
    // tracker's history: 10, 9, 8 and 5, 4.
    let orders = &p[l + 2];
    let replies = &p[l + 3];
    assert!(
        orders.starts_with(
            "orders  0       0      sender   ATTACHED 2         8      -     false 2         q.orders  q.orders  mixed      first"
        ),
        "{orders}"
    );
    assert!(
        replies.starts_with(
            "replies 0       1      receiver ATTACHED 1         4      -     false 1         q.replies q.replies mixed      first"
        ),
        "{replies}"
    );
    assert!(orders.ends_with("█▇▆"), "{orders}");
    assert!(replies.ends_with("█▆"), "{replies}");
}

#[test]
fn enter_on_the_second_link_filters_its_frames_by_name() {
    let mut app = app_with(conversation(1, 0, &two_links(), false), 160, 40);
    show_state(&mut app, 1);
    press(&mut app, KeyCode::Char('z'));
    let items = amqpeek::tui::views::state_items::state_items(app.state_snapshot().unwrap());
    let at = items
        .iter()
        .position(|i| i.filter.as_deref() == Some("link:replies"))
        .expect("a replies row");
    for _ in 0..at {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "link:replies");
    // Its attaches, the client's flow and the server's transfer.
    assert_eq!(app.frames().view().len(), 4, "{}", dump(&app));
}

/// An 0-9-1 frame's bytes.
fn frame091(ch: u16, kind: FrameKind) -> Bytes {
    let mut b = Vec::new();
    encode_frame(ch, &kind, &mut b);
    Bytes::from(b)
}

fn method(ch: u16, kind: K, args: &[(&str, amqpeek::codec::amqp091::Value)]) -> Bytes {
    frame091(ch, FrameKind::Method(m(kind, args).into()))
}

/// A delivery of `tag` on channel 1 (method, header, body).
fn delivery(tag: u64) -> Bytes {
    let mut b = method(
        1,
        K::BasicDeliver,
        &[("consumer-tag", sstr("ctag")), ("delivery-tag", ll(tag))],
    )
    .to_vec();
    b.extend_from_slice(&frame091(
        1,
        FrameKind::Header(ContentHeader::basic(2).into()),
    ));
    b.extend_from_slice(&frame091(1, FrameKind::Body(Bytes::from_static(b"xy"))));
    Bytes::from(b)
}

/// A publish on channel 1 (method, header, body).
fn publish() -> Bytes {
    let mut b = method(1, K::BasicPublish, &[("routing-key", sstr("q"))]).to_vec();
    b.extend_from_slice(&frame091(
        1,
        FrameKind::Header(ContentHeader::basic(1).into()),
    ));
    b.extend_from_slice(&frame091(1, FrameKind::Body(Bytes::from_static(b"p"))));
    Bytes::from(b)
}

/// A consuming, confirming 0-9-1 client on channel 1: 3 deliveries (1 acked), 2 publishes
/// (none confirmed). With `skim`, 20 more deliveries and an ack of them, and 5 confirms, are
/// passed over undecoded, as the live view's inspection does when it falls behind; then one
/// more delivery and one more publish are decoded.
fn consumer(skim: bool, then: &[(Dir, Bytes)]) -> Vec<AppEvent> {
    let mut insp = Inspector::new(2, InspectOptions::default());
    let mut out = vec![Event {
        conn: 2,
        ts: Timestamp(T0),
        kind: EventKind::Connect {
            client: "127.0.0.1:50002".parse().unwrap(),
            upstream: "127.0.0.1:5672".parse().unwrap(),
        },
    }];
    let mut ts = T0;
    let mut apps = Vec::new();
    let mut feed = |insp: &mut Inspector, dir: Dir, bytes: Bytes, skimmed: bool| {
        ts += 1000;
        if skimmed {
            insp.skim(dir, Timestamp(ts), bytes, &mut out);
        } else {
            insp.chunk(dir, Timestamp(ts), bytes, &mut out);
        }
        insp.publish_state(Timestamp(ts), &mut out);
        apps.extend(out.drain(..).map(AppEvent::Pipeline));
    };
    use Dir::{C2S, S2C};
    feed(
        &mut insp,
        C2S,
        Bytes::from_static(b"AMQP\x00\x00\x09\x01"),
        false,
    );
    let start = method(
        0,
        K::ConnectionStart,
        &[("mechanisms", lstr("PLAIN")), ("locales", lstr("en_US"))],
    );
    feed(&mut insp, S2C, start, false);
    let start_ok = method(
        0,
        K::ConnectionStartOk,
        &[
            ("mechanism", sstr("PLAIN")),
            ("response", lstr("\0guest\0guest")),
        ],
    );
    feed(&mut insp, C2S, start_ok, false);
    let tune = [
        ("channel-max", short(2047)),
        ("frame-max", long(131072)),
        ("heartbeat", short(0)),
    ];
    feed(&mut insp, S2C, method(0, K::ConnectionTune, &tune), false);
    feed(&mut insp, C2S, method(0, K::ConnectionTuneOk, &tune), false);
    let open = method(0, K::ConnectionOpen, &[("virtual-host", sstr("/"))]);
    feed(&mut insp, C2S, open, false);
    feed(&mut insp, S2C, method(0, K::ConnectionOpenOk, &[]), false);
    feed(&mut insp, C2S, method(1, K::ChannelOpen, &[]), false);
    feed(&mut insp, S2C, method(1, K::ChannelOpenOk, &[]), false);
    let qos = method(1, K::BasicQos, &[("prefetch-count", short(50))]);
    feed(&mut insp, C2S, qos, false);
    feed(&mut insp, S2C, method(1, K::BasicQosOk, &[]), false);
    feed(&mut insp, C2S, method(1, K::ConfirmSelect, &[]), false);
    feed(&mut insp, S2C, method(1, K::ConfirmSelectOk, &[]), false);
    let consume = method(
        1,
        K::BasicConsume,
        &[
            ("queue", sstr("q")),
            ("consumer-tag", sstr("ctag")),
            ("no-ack", bit(false)),
        ],
    );
    feed(&mut insp, C2S, consume, false);
    let consume_ok = method(1, K::BasicConsumeOk, &[("consumer-tag", sstr("ctag"))]);
    feed(&mut insp, S2C, consume_ok, false);
    for tag in 1..=3 {
        feed(&mut insp, S2C, delivery(tag), false);
    }
    feed(
        &mut insp,
        C2S,
        method(1, K::BasicAck, &[("delivery-tag", ll(1))]),
        false,
    );
    feed(&mut insp, C2S, publish(), false);
    feed(&mut insp, C2S, publish(), false);
    if skim {
        for tag in 4..=23 {
            feed(&mut insp, S2C, delivery(tag), true);
        }
        let ack = method(
            1,
            K::BasicAck,
            &[("delivery-tag", ll(23)), ("multiple", bit(true))],
        );
        feed(&mut insp, C2S, ack, true);
        for tag in 1..=5 {
            feed(
                &mut insp,
                S2C,
                method(1, K::BasicAck, &[("delivery-tag", ll(tag))]),
                true,
            );
        }
        feed(&mut insp, S2C, delivery(24), false);
        feed(&mut insp, C2S, publish(), false);
    }
    for (dir, bytes) in then {
        feed(&mut insp, *dir, bytes.clone(), false);
    }
    apps
}

/// The channel table's heading, columns and channel 1's row.
fn channel_table(skim: bool, then: &[(Dir, Bytes)]) -> Vec<String> {
    let mut app = app_with(consumer(skim, then), 130, 40);
    show_state(&mut app, 1);
    let p = state_pane(&app, 2);
    println!("{}", p.join("\n"));
    let at = p
        .iter()
        .position(|l| l.starts_with("channels (1)"))
        .expect("a channel table");
    p[at..at + 3].to_vec()
}

#[test]
fn an_0_9_1_channel_shows_prefetch_unacked_confirms_and_consumers() {
    assert_eq!(
        channel_table(false, &[]),
        vec![
            "channels (1)",
            "channel state prefetch unacked confirm pending consumers content flow   tx",
            "1       OPEN  50       2       on      2       ctag      -       active -",
        ]
    );
}

#[test]
fn after_a_skim_the_0_9_1_counts_say_they_are_uncertain() {
    assert_eq!(
        channel_table(true, &[]),
        vec![
            "channels (1)  ?: bytes were missed, counts only as seen since",
            "channel state prefetch unacked confirm pending consumers content flow   tx",
            // What was delivered, acked and confirmed while skimming is unknown: the counts
            // start again from what was seen since (none of it countable yet).
            "1       OPEN  50       0?      on      0?      ctag      -       active -",
        ]
    );
}

/// The AMQP 1.0 conversation with the client's flow for `replies` skimmed (passed over
/// undecoded, as the live view's inspection does when it falls behind).
fn two_links_skimmed() -> Vec<AppEvent> {
    let mut insp = Inspector::new(1, InspectOptions::default());
    let mut out = Vec::new();
    let mut ts = T0;
    for (dir, bytes) in two_links() {
        ts += 1000;
        let b = Bytes::from(bytes.clone());
        if bytes == amqp10::flow(0, 1, 5) {
            insp.skim(dir, Timestamp(ts), b, &mut out);
        } else {
            insp.chunk(dir, Timestamp(ts), b, &mut out);
        }
        insp.publish_state(Timestamp(ts), &mut out);
    }
    out.into_iter().map(AppEvent::Pipeline).collect()
}

#[test]
fn after_a_skim_the_links_counts_say_they_are_uncertain() {
    let mut app = app_with(two_links_skimmed(), 160, 40);
    show_state(&mut app, 1);
    let p = state_pane(&app, 1);
    println!("{}", p.join("\n"));
    let l = p
        .iter()
        .position(|l| l.starts_with("links (2)"))
        .expect("a links table");
    assert!(
        p[l].ends_with("?: bytes were missed, counts only as seen since"),
        "{}",
        p[l]
    );
    // Both links share the session the skimmed bytes touched; the credit the skimmed flow
    // granted is not known at all.
    assert!(
        p[l + 2].contains(" 2?        8?     -     false 2?"),
        "{}",
        p[l + 2]
    );
    assert!(
        p[l + 3].contains(" 1?        -?     -     false 1?"),
        "{}",
        p[l + 3]
    );
}

#[test]
fn an_0_9_1_content_in_progress_shows_how_much_of_its_body_came() {
    let publish = method(1, K::BasicPublish, &[("routing-key", sstr("q"))]);
    let header = frame091(1, FrameKind::Header(ContentHeader::basic(10).into()));
    let body = frame091(1, FrameKind::Body(Bytes::from_static(b"abc")));
    let table = channel_table(
        false,
        &[(Dir::C2S, publish), (Dir::C2S, header), (Dir::C2S, body)],
    );
    assert_eq!(
        table[2],
        "1       OPEN  50       2       on      3       ctag      body 3/10/- active -"
    );
}

/// In a replay, the state pane shows the connection as it was just after the selected frame:
/// after the server's begin, one session and no link yet; after the last frame, both links
/// (the issue: "the state pane shows only the final state").
#[test]
fn in_a_replay_the_state_is_shown_as_of_the_selected_frame() {
    // A replay's app, the frame list moved by `keys`, then the state pane zoomed.
    let pane_after = |keys: &[KeyCode]| {
        let mut app = app_with(conversation(1, 0, &two_links(), false), 160, 40);
        for k in keys {
            press(&mut app, *k);
        }
        press(&mut app, KeyCode::Char('s'));
        press(&mut app, KeyCode::Char('z'));
        state_pane(&app, 1)
    };
    // Rows: header, header, open, open, begin, begin (the server's, row 5), attach ...
    let early = pane_after(&[
        KeyCode::Char('g'),
        KeyCode::Down,
        KeyCode::Down,
        KeyCode::Down,
        KeyCode::Down,
        KeyCode::Down,
    ]);
    println!("{}", early.join("\n"));
    assert!(
        early.iter().any(|l| l.starts_with("sessions (1)")),
        "{}",
        early.join("\n")
    );
    assert!(
        early.iter().any(|l| l.starts_with("links (0)")),
        "no link attached yet after the begin:\n{}",
        early.join("\n")
    );
    let last = pane_after(&[KeyCode::Char('G')]);
    assert!(
        last.iter().any(|l| l.starts_with("links (2)")),
        "{}",
        last.join("\n")
    );
}

/// A link name holding a bidi override and an escape sequence is drawn escaped in the state
/// pane, as every other output writes it: the characters a terminal acts on show as text.
#[test]
fn a_hostile_link_name_is_drawn_escaped() {
    use amqp10::*;
    let name = "evil\u{202e}lnk\x1b[2J";
    let chunks = vec![
        (Dir::C2S, HEADER.to_vec()),
        (Dir::S2C, HEADER.to_vec()),
        (Dir::C2S, open("client")),
        (Dir::S2C, open("broker")),
        (Dir::C2S, begin(0)),
        (Dir::S2C, begin_reply(0, 0)),
        (Dir::C2S, attach(0, name, 0, false, "q.orders")),
        (Dir::S2C, attach(0, name, 0, true, "q.orders")),
    ];
    let mut app = app_with(conversation(1, 0, &chunks, false), 160, 40);
    show_state(&mut app, 1);
    let p = state_pane(&app, 1).join("\n");
    assert!(p.contains(r"evil\u{202e}lnk\x1b[2J"), "{p}");
}
