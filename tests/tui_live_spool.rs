//! A live session longer than the frame list keeps: lapin publishes through the proxy to
//! RabbitMQ, and the view, keeping 100 frames per connection, drops older ones from view. The
//! frame list's notice says where they are: nowhere when no capture is written (and that
//! `--jsonl` keeps them), in the capture's file when one is, and only those `--filter` passes
//! when a preset filter narrows the capture.
mod common;
mod support;

use std::time::Duration;

use amqpeek::event::Event;
use amqpeek::filter::Filter;
use amqpeek::tui::{App, AppEvent, TuiOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const MESSAGES: usize = 300;

fn screen(app: &App) -> String {
    let (w, h) = app.size;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| app.render(f)).unwrap();
    let buf = t.backend().buffer();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The events of one lapin session publishing [`MESSAGES`] through the proxy.
async fn session() -> Option<Vec<Event>> {
    use lapin::options::*;
    use lapin::types::FieldTable;
    use lapin::{BasicProperties, Connection, ConnectionProperties};
    let broker = common::broker().await?;
    let config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker);
    let proxy = common::start_live_proxy(config, Duration::ZERO).await;
    let url = format!("amqp://guest:guest@{}/%2f", proxy.addr);
    let conn = Connection::connect(&url, ConnectionProperties::default())
        .await
        .expect("connect through the proxy");
    let ch = conn.create_channel().await.unwrap();
    let queue = format!("amqpeek-tui-spool-{}", std::process::id());
    let options = QueueDeclareOptions {
        exclusive: true,
        auto_delete: true,
        ..Default::default()
    };
    ch.queue_declare(queue.clone().into(), options, FieldTable::default())
        .await
        .unwrap();
    ch.confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    for i in 0..MESSAGES {
        ch.basic_publish(
            "".into(),
            queue.clone().into(),
            BasicPublishOptions::default(),
            format!("m{i}").as_bytes(),
            BasicProperties::default(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    }
    conn.close(200, "bye".into()).await.unwrap();
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    Some(events)
}

fn view(events: &[Event], opts: TuiOptions) -> String {
    let mut app = App::new(
        TuiOptions {
            max_frames_per_conn: 100,
            ..opts
        },
        (100, 30),
    );
    for e in events {
        app.handle(AppEvent::Pipeline(e.clone()));
    }
    assert!(app.evicted_in_scope() > 0);
    screen(&app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dropped_frames_notice_says_where_the_older_frames_are() {
    let Some(events) = session().await else {
        return;
    };
    let none = view(&events, TuiOptions::default());
    assert!(
        none.contains("older frames dropped from view (no capture written; --jsonl keeps all)"),
        "{none}"
    );
    assert!(!none.contains("captures on disk"), "{none}");
    let kept = view(
        &events,
        TuiOptions {
            captures: vec!["session.jsonl".into(), "session.pcapng".into()],
            ..TuiOptions::default()
        },
    );
    assert!(
        kept.contains("older frames dropped from view (all kept in session.jsonl, session.pcapng)"),
        "{kept}"
    );
    let filtered = view(
        &events,
        TuiOptions {
            captures: vec!["publishes.jsonl".into()],
            filter: Filter::parse("name:basic.").unwrap(),
            ..TuiOptions::default()
        },
    );
    assert!(
        filtered.contains("(those --filter passes kept in publishes.jsonl)"),
        "{filtered}"
    );
    // A file name from the command line is escaped like any other text.
    let hostile = view(
        &events,
        TuiOptions {
            captures: vec!["evil\u{1b}[2J.jsonl".into()],
            ..TuiOptions::default()
        },
    );
    assert!(!hostile.contains('\u{1b}'), "{hostile}");
}
