//! A live view that cannot keep up says so: lapin publishes fast through the proxy to RabbitMQ
//! while the only sink is a slow live view, so the inspection skims; fed to the TUI, the
//! status line says how many frames were skimmed and that `--jsonl` keeps them all. The
//! connection, open before the skim, stays `OPEN` while only channel frames (the publishes on
//! channel 1) were skimmed; once a skim passed over channel 0 (the connection.close at the end)
//! it shows as `OPEN?` (open as last seen, bytes missed since), never as a bare `UNKNOWN`.
mod common;
mod support;

use std::time::Duration;

use amqpeek::event::{Event, EventKind};
use amqpeek::tui::{App, AppEvent, TuiOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const MESSAGES: usize = 20_000;

fn screen(app: &App) -> Vec<String> {
    let (w, h) = app.model().size;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| app.render(f)).unwrap();
    let buf = t.backend().buffer();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

/// Frames the inspection reported skimmed, from the gaps' reasons.
fn skimmed(events: &[Event]) -> u64 {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Gap { reason, .. } if reason.starts_with("skimmed:") => {
                let n = reason.split("relay (").nth(1)?.split(' ').next()?;
                n.parse::<u64>().ok()
            }
            _ => None,
        })
        .sum()
}

async fn publish_flood(addr: std::net::SocketAddr) {
    use lapin::options::*;
    use lapin::types::FieldTable;
    use lapin::{BasicProperties, Connection, ConnectionProperties};
    let url = format!("amqp://guest:guest@{addr}/%2f");
    let conn = Connection::connect(&url, ConnectionProperties::default())
        .await
        .expect("connect through the proxy");
    let ch = conn.create_channel().await.unwrap();
    let queue = format!("amqpeek-tui-skim-{}", std::process::id());
    let mut args = FieldTable::default();
    args.insert("x-max-length".into(), 100.into());
    ch.queue_declare(
        queue.clone().into(),
        QueueDeclareOptions {
            auto_delete: true,
            exclusive: true,
            ..Default::default()
        },
        args,
    )
    .await
    .unwrap();
    for i in 0..MESSAGES {
        // No confirms are asked for: the confirm the publish returns is not awaited.
        drop(
            ch.basic_publish(
                "".into(),
                queue.clone().into(),
                BasicPublishOptions::default(),
                format!("m{i}").as_bytes(),
                BasicProperties::default(),
            )
            .await
            .unwrap(),
        );
    }
    // A round trip: everything published has reached the broker.
    ch.queue_declare(
        queue.clone().into(),
        QueueDeclareOptions {
            passive: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await
    .unwrap();
    conn.close(200, "bye".into()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skimming_live_view_says_so_and_marks_only_what_the_skim_could_hide() {
    let Some(broker) = common::broker().await else {
        return;
    };
    let mut config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker);
    config.queue_chunks = 4;
    config.read_buffer = 4096;
    let proxy = common::start_live_proxy(config, Duration::from_micros(200)).await;
    publish_flood(proxy.addr).await;
    proxy.wait_closed(1).await;
    let (_, events) = proxy.stop().await;
    let skims = skimmed(&events);
    assert!(skims > 0, "the slow view made the inspection skim");

    let mut app = App::new(TuiOptions::default(), (100, 30));
    let mut states = Vec::new();
    let mut seen_notice = false;
    // A skim over channel 0 (or too many channels to list) was reported: the connection's own
    // state may have changed unseen. (A state published may precede the gap reporting the
    // skim that changed it: this is judged over the whole feed.)
    let mut connection_hit = false;
    for e in events {
        let is_gap = matches!(&e.kind, EventKind::Gap { .. });
        let state = matches!(&e.kind, EventKind::State(_));
        if let EventKind::Gap { reason, .. } = &e.kind {
            let hits_0 = reason.ends_with("on channel 0")
                || reason.contains("on channels 0,")
                || reason.ends_with("on many channels");
            connection_hit |= hits_0;
        }
        app.handle(AppEvent::Tick(e.ts));
        app.handle(AppEvent::Pipeline(e));
        if let Some(c) = app.model().conns.get(&1)
            && state
        {
            states.push(c.state.clone());
        }
        if is_gap && !seen_notice {
            let s = screen(&app);
            let status = s.last().unwrap();
            assert!(status.contains(" SKIMMING "), "{status}");
            assert!(status.contains("--jsonl FILE keeps all"), "{status}");
            seen_notice = true;
        }
    }
    assert!(seen_notice);
    // The counts add up to what the gaps reported, and say it once the feed is over.
    assert_eq!(app.model().skimmed.frames, skims);
    app.handle(AppEvent::FeedEnded);
    let s = screen(&app);
    let status = s.last().unwrap();
    let want = format!(" SKIMMED {} frames", amqpeek::tui::views::count(skims));
    assert!(status.contains(&want), "{status} (want {want})");
    // Open before the skim: `OPEN` after a skim of channel frames, never a bare UNKNOWN.
    assert!(states.iter().any(|s| s == "OPEN"), "{states:?}");
    assert!(!states.iter().any(|s| s == "UNKNOWN"), "{states:?}");
    // A `?` only where a skim passed over the connection's own frames.
    assert!(
        connection_hit || !states.iter().any(|s| s.ends_with('?')),
        "{states:?}"
    );
    let list = screen(&app).join("\n");
    assert!(!list.contains("UNKNOWN"), "{list}");
}
