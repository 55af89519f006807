//! A live session longer than the frame list keeps: lapin publishes through the proxy to
//! RabbitMQ, and the view, keeping 100 frames per connection, drops older ones from view. The
//! frame list's notice says where they are: nowhere when no capture is written (and that
//! `--jsonl` keeps them), in the capture's file when one is, and only those `--filter` passes
//! when a preset filter narrows the capture. With the view's spool beside it, they are in the
//! spool: masked JSONL that replays to every frame of the session, bounded by its size (once
//! full, the view says how many of the frames it dropped are gone).
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
    let broker = common::broker().await?;
    let config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker);
    let proxy = common::start_live_proxy(config, Duration::ZERO).await;
    Some(publish_through(proxy).await)
}

/// lapin's session through `proxy`: publishes [`MESSAGES`] with confirms, closes; the events.
async fn publish_through(proxy: common::Running) -> Vec<Event> {
    use lapin::options::*;
    use lapin::types::FieldTable;
    use lapin::{BasicProperties, Connection, ConnectionProperties};
    let url = format!("amqp://guest:guest@{}/%2f", proxy.addr);
    let conn = Connection::connect(&url, ConnectionProperties::default())
        .await
        .expect("connect through the proxy");
    let ch = conn.create_channel().await.unwrap();
    static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let queue = format!("amqpeek-tui-spool-{}-{n}", std::process::id());
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
    events
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

fn frames(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.kind, amqpeek::event::EventKind::Frame(_)))
        .count()
}

/// The session through a proxy whose sinks are a collector, the spool (`size` bytes at most,
/// in `dir`) and the view's feed; the events, and the view fed from the feed as the UI is.
async fn spooled_session(dir: &std::path::Path, size: u64) -> Option<(Vec<Event>, App, String)> {
    use amqpeek::tui::spool::{Spool, SpoolOptions};
    let broker = common::broker().await?;
    let (feed, rx) = amqpeek::tui::channel(amqpeek::tui::DEFAULT_CAPACITY);
    let opts = SpoolOptions {
        dir: Some(dir.to_path_buf()),
        size,
        max_body: 4096,
    };
    let spool = Spool::create(&opts, feed.clone()).unwrap();
    assert!(spool.kept());
    let path = spool.path().display().to_string();
    let config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker);
    let proxy = common::start_proxy_with(config, vec![Box::new(spool), Box::new(feed)]).await;
    let events = publish_through(proxy).await;
    let mut app = App::new(
        TuiOptions {
            max_frames_per_conn: 100,
            spool: Some(path.clone()),
            ..TuiOptions::default()
        },
        (100, 30),
    );
    while let Some(batch) = rx.drain(usize::MAX) {
        if batch.is_empty() {
            break;
        }
        for e in batch {
            app.handle(e);
        }
    }
    Some((events, app, path))
}

/// The spool read back as a capture, through the ordinary pipeline.
fn replay(path: &str) -> Vec<Event> {
    use amqpeek::capture::{self, CaptureOptions};
    use amqpeek::driver::offline::{self, Pace};
    use amqpeek::pipeline::{InspectOptions, Sink};
    struct Keep<'a>(&'a mut Vec<Event>);
    impl Sink for Keep<'_> {
        fn event(&mut self, ev: &Event) -> std::io::Result<()> {
            self.0.push(ev.clone());
            Ok(())
        }
    }
    let mut events = Vec::new();
    let source = capture::open(std::path::Path::new(path), CaptureOptions::default()).unwrap();
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(Keep(&mut events))];
    offline::run(
        source,
        InspectOptions::default(),
        sinks,
        std::num::NonZeroUsize::MIN,
        Pace::Batched,
    );
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spool_holds_every_frame_of_the_session_masked_and_replays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let Some((events, app, path)) = spooled_session(dir.path(), 512 << 20).await else {
        return;
    };
    assert!(app.evicted_in_scope() > 0);
    let s = screen(&app);
    assert!(
        s.contains("older frames dropped from view (in the spool "),
        "{s}"
    );
    // `g` goes to the first frame in memory and says where the older ones are.
    let mut app = app;
    app.handle(AppEvent::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('g'),
        crossterm::event::KeyModifiers::NONE,
    )));
    assert_eq!(app.frame_list.selected, 0);
    let hint = app.message.clone().unwrap_or_default();
    assert!(
        hint.ends_with(&format!(
            "older frames are not in memory: amqpeek replay {path} reaches them"
        )),
        "{hint}"
    );
    // Every frame of the session is in the spool, and replays.
    let live = frames(&events);
    assert!(live > 2 * MESSAGES, "{live}");
    let back = replay(&path);
    assert_eq!(frames(&back), live);
    // Masked: lapin's PLAIN password is not in it.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("start-ok"), "the handshake is spooled");
    assert!(
        text.contains(r#""password":"*****","username":"guest""#),
        "password masked"
    );
    assert!(!text.contains(r#""password":"guest""#), "password masked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_spool_takes_no_more_and_the_view_says_how_many_dropped_frames_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 40 << 10;
    let Some((events, app, path)) = spooled_session(dir.path(), limit).await else {
        return;
    };
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size <= limit && size > limit / 2, "{size}");
    // Whole lines only: it reads back as a capture that ends early.
    let back = replay(&path);
    assert!(frames(&back) > 0 && frames(&back) < frames(&events));
    assert!(app.spool.full.is_some());
    assert!(app.spool.gone > 0);
    let s = screen(&app);
    assert!(s.contains("gone: the spool filled at "), "{s}");
}
