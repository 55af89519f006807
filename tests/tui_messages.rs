//! The message view (`b`): lapin and fe2o3-amqp publish and consume through an in-process
//! proxy to RabbitMQ, and the proxy's events feed the UI. The view lists the messages of the
//! selected frame's channel (a consumer, a queue) or link in order, shows each one's
//! properties, headers or application properties and its body (JSON pretty-printed, text as
//! lines, binary as hex), masked and escaped; `/` and `n` search it; Enter selects the
//! message's first frame in the frame list and says which frames carried it.
//!
//! Without a broker: FAILS when env `CI` is set, otherwise skips with a note.

mod common;
mod support;
mod tui_support;

use std::time::Duration;

use amqpeek::event::Event;
use amqpeek::tui::{App, AppEvent};
use crossterm::event::KeyCode;
use lapin::options::*;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use tui_support::{app_with, dump, press, screen, type_str};

/// The bodies the 0-9-1 publisher sends, in order.
fn bodies() -> Vec<Vec<u8>> {
    vec![
        br#"{"order":42,"items":["apple","pear"],"note":"needle here"}"#.to_vec(),
        b"plain text line one\nline two of the text".to_vec(),
        vec![0x00, 0x01, 0x02, 0xff, 0xfe, b'b', b'i', b'n'],
        b"connect to amqp://guest:hunter2@db.example/ now".to_vec(),
        b"evil \x1b]52;c;cHduZWQ=\x07 end".to_vec(),
    ]
}

/// A lapin publisher publishes [`bodies`] to a fresh queue (JSON content type, a `tenant`
/// header) and a lapin consumer takes them, both through the proxy: the proxy's events and
/// the queue's name (named after `test`: the tests run at once on one broker).
async fn lapin_session(test: &str) -> Option<(Vec<Event>, String)> {
    let broker = common::broker().await?;
    let proxy = common::start_proxy(broker, Vec::new()).await;
    let uri = format!("amqp://guest:guest@{}/%2f", proxy.addr);
    let publisher = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .unwrap();
    let pch = publisher.create_channel().await.unwrap();
    let queue = format!("amqpeek-tui-messages-{test}-{}", std::process::id());
    pch.queue_declare(
        queue.as_str().into(),
        QueueDeclareOptions {
            auto_delete: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await
    .unwrap();
    let consumer = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .unwrap();
    let cch = consumer.create_channel().await.unwrap();
    let mut headers = FieldTable::default();
    headers.insert(
        ShortString::from("tenant"),
        AMQPValue::LongString("acme".into()),
    );
    for b in bodies() {
        pch.basic_publish(
            "".into(),
            queue.as_str().into(),
            BasicPublishOptions::default(),
            &b,
            BasicProperties::default()
                .with_content_type("application/json".into())
                .with_headers(headers.clone()),
        )
        .await
        .unwrap();
    }
    let (_c, got) = support::collect(&cch, &queue, "", true, bodies().len()).await;
    assert_eq!(got.len(), bodies().len());
    publisher.close(200, "bye".into()).await.unwrap();
    consumer.close(200, "bye".into()).await.unwrap();
    proxy.wait_closed(1).await;
    proxy.wait_closed(2).await;
    let (_, events) = proxy.stop().await;
    Some((events, queue))
}

/// An app of `w` x `h` fed `events`.
fn app_of(events: &[Event], w: u16, h: u16) -> App {
    app_with(
        events.iter().cloned().map(AppEvent::Pipeline).collect(),
        w,
        h,
    )
}

/// Select the first frame-list row named `name` (of all connections).
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

/// The screen's lines, each trimmed, for finding a line whole.
fn trimmed(app: &App) -> Vec<String> {
    screen(app)
        .iter()
        .map(|l| {
            l.trim_matches(|c: char| c == '│' || c.is_whitespace())
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channels_messages_show_properties_headers_and_bodies_by_their_kind_at_80x24() {
    let Some((events, _queue)) = lapin_session("kinds").await else {
        return;
    };
    let mut app = app_of(&events, 80, 24);
    select_frame(&mut app, "basic.publish");
    press(&mut app, KeyCode::Char('b'));
    let s = dump(&app);
    assert!(
        s.contains("Messages of channel 1 of conn 1: 5"),
        "the publisher's channel and its five messages:\n{s}"
    );
    // The first: its properties, its headers, its JSON body pretty-printed a member a line.
    let lines = trimmed(&app);
    assert!(s.contains("basic.publish arguments"), "{s}");
    assert!(s.contains("content-type: \"application/json\""), "{s}");
    assert!(s.contains("headers (application properties)"), "{s}");
    assert!(s.contains("tenant:"), "{s}");
    assert!(s.contains("body (JSON, 58 bytes)"), "{s}");
    // The list: what carried each, and the start of its body.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("basic.publish") && l.contains("plain text line one line two")),
        "{s}"
    );
    press(&mut app, KeyCode::PageDown);
    let (s, lines) = (dump(&app), trimmed(&app));
    for want in ["\"order\": 42", "\"apple\",", "\"note\": \"needle here\","] {
        assert!(
            lines.iter().any(|l| l == want),
            "{want} on a line of its own:\n{s}"
        );
    }
    // Text: a line a line.
    press(&mut app, KeyCode::Down);
    let (s, lines) = (dump(&app), trimmed(&app));
    assert!(s.contains("body (text, 40 bytes)"), "{s}");
    assert!(lines.iter().any(|l| l == "line two of the text"), "{s}");
    // Binary: a hex dump.
    press(&mut app, KeyCode::Down);
    let s = dump(&app);
    assert!(s.contains("body (binary, 8 bytes)"), "{s}");
    assert!(s.contains("0000  00 01 02 ff fe 62 69 6e"), "{s}");
    // A URL's password is masked, as in every output.
    press(&mut app, KeyCode::Down);
    let s = dump(&app);
    assert!(s.contains("amqp://guest:*******@db.example/"), "{s}");
    assert!(!s.contains("hunter2"), "a password shown:\n{s}");
    // A terminal escape in a body is escaped, not sent to the terminal.
    press(&mut app, KeyCode::Down);
    let s = dump(&app);
    assert!(s.contains("evil") && s.contains("end"), "{s}");
    assert!(
        !s.contains('\x1b') && !s.contains('\x07'),
        "a raw ESC or BEL on screen:\n{s:?}"
    );
    // Esc closes the view.
    press(&mut app, KeyCode::Esc);
    assert!(!dump(&app).contains("Messages of"), "{}", dump(&app));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_a_message_and_enter_selects_its_frames_at_160x45() {
    let Some((events, _queue)) = lapin_session("search").await else {
        return;
    };
    let mut app = app_of(&events, 160, 45);
    select_frame(&mut app, "basic.publish");
    press(&mut app, KeyCode::Char('b'));
    // From the last message, a search wraps round to the first that holds the words.
    press(&mut app, KeyCode::End);
    press(&mut app, KeyCode::Char('/'));
    type_str(&mut app, "NEEDLE");
    let s = dump(&app);
    assert!(s.contains("search: NEEDLE"), "the search line:\n{s}");
    press(&mut app, KeyCode::Enter);
    let s = dump(&app);
    assert!(s.contains("message 1 of 5"), "the JSON message found:\n{s}");
    // `n` looks further: no later message holds it.
    press(&mut app, KeyCode::Char('n'));
    assert!(
        dump(&app).contains("no later message holds"),
        "{}",
        dump(&app)
    );
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    // Enter: the frame list, on the message's method frame; its three frames named.
    press(&mut app, KeyCode::Enter);
    let s = dump(&app);
    assert!(!s.contains("Messages of"), "the view closed:\n{s}");
    let row = app.selected_row().expect("a frame selected");
    assert_eq!(row.name, "basic.publish", "{s}");
    assert!(
        s.contains("message 3: 3 frame(s) from the selected one: basic.publish, content-header, content-body"),
        "{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deliverys_view_offers_its_consumer_and_its_queue() {
    let Some((events, queue)) = lapin_session("consumer").await else {
        return;
    };
    let mut app = app_of(&events, 160, 45);
    select_frame(&mut app, "basic.deliver");
    press(&mut app, KeyCode::Char('b'));
    let s = dump(&app);
    assert!(s.contains("Messages of channel 1 of conn 2: 5"), "{s}");
    assert!(s.contains("basic.deliver arguments"), "{s}");
    press(&mut app, KeyCode::Tab);
    let s = dump(&app);
    assert!(
        s.contains("Messages of consumer \"amq.ctag-") && s.contains("of conn 2: 5"),
        "the consumer's deliveries:\n{s}"
    );
    press(&mut app, KeyCode::Tab);
    let s = dump(&app);
    assert!(
        s.contains(&format!(
            "Messages of queue \"{queue}\" (default exchange) of conn 2: 5"
        )),
        "the queue's deliveries:\n{s}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amqp10_links_messages_show_application_properties_and_every_transfer() {
    use fe2o3_amqp::types::messaging::{ApplicationProperties, Message, MessageId, Properties};
    use fe2o3_amqp::types::primitives::{Binary, OrderedMap, SimpleValue, Symbol};
    use fe2o3_amqp::{Connection, Sender, Session};
    let Some(broker) = common::broker().await else {
        return;
    };
    let proxy = common::start_proxy(broker, Vec::new()).await;
    let url = format!("amqp://guest:guest@{}", proxy.addr);
    let queue = format!("/queue/amqpeek-tui-messages-10-{}", std::process::id());
    let mut connection = Connection::open("amqpeek-tui-messages", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut connection).await.unwrap();
    let mut sender = Sender::attach(&mut session, "amqpeek-msg-sender", queue.as_str())
        .await
        .unwrap();
    let mut app_props = OrderedMap::new();
    app_props.insert("region".to_string(), SimpleValue::String("eu-west".into()));
    let json = Message::builder()
        .properties(Properties {
            message_id: Some(MessageId::String("m-1".into())),
            subject: Some("orders".into()),
            content_type: Some(Symbol::from("application/json")),
            ..Default::default()
        })
        .application_properties(ApplicationProperties(app_props))
        .data(Binary::from(br#"{"id":7,"lines":[1,2]}"#.to_vec()))
        .build();
    sender.send(json).await.unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    sender
        .send(Message::builder().data(Binary::from(big)).build())
        .await
        .unwrap();
    let _ = sender.close().await;
    let _ = session.end().await;
    let _ = connection.close().await;
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    // Let the queue go: the broker is shared.
    tokio::time::sleep(Duration::from_millis(10)).await;

    let mut app = app_of(&events, 80, 24);
    select_frame(&mut app, "transfer");
    press(&mut app, KeyCode::Char('b'));
    let (s, lines) = (dump(&app), trimmed(&app));
    assert!(
        s.contains("Messages of link \"amqpeek-msg-sender\" of conn 1: 2"),
        "{s}"
    );
    for want in [
        "properties",
        "application-properties",
        "region: \"eu-west\"",
        "\"id\": 7,",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want}:\n{s}");
    }
    assert!(s.contains("subject: \"orders\""), "{s}");
    press(&mut app, KeyCode::Down);
    let s = dump(&app);
    assert!(s.contains("body (binary, 300,000 bytes)"), "{s}");
    assert!(
        s.contains("0000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"),
        "{s}"
    );
    press(&mut app, KeyCode::Enter);
    let s = dump(&app);
    let row = app.selected_row().expect("a frame selected");
    assert_eq!(row.name, "transfer");
    let n: usize = s
        .split("message 2: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("how many frames:\n{s}"));
    assert!(
        n > 1,
        "a body of 300,000 bytes takes several transfers:\n{s}"
    );
}
