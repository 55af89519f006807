//! A live session longer than the frame list keeps: lapin publishes through the proxy to
//! RabbitMQ, and the view, keeping 100 frames per connection, drops older ones from view. The
//! frame list's notice says where they are: nowhere when no capture is written (and that
//! `--jsonl` keeps them), in the capture's file when one is, and only those `--filter` passes
//! when a preset filter narrows the capture. With the view's spool ring beside it, the view
//! pages them back as a file replay does: `g` reaches the first frame, a search finds a frame
//! no longer in memory, with the numbers the view gave them; a ring smaller than the session
//! keeps its newest part within `--spool-size` on disk, and the view says which frames are gone.
mod common;
mod support;
mod tui_support;

use std::time::Duration;

use amqpeek::event::Event;
use amqpeek::filter::Filter;
use amqpeek::tui::{App, AppEvent, TuiOptions};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const MESSAGES: usize = 300;

fn screen(app: &App) -> String {
    let (w, h) = app.model().size;
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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use amqpeek::browse::numbering::{Numbering, Place};
use amqpeek::event::EventKind;
use amqpeek::pipeline::InspectOptions;
use amqpeek::replay::pager::{Pager, WindowSize};
use amqpeek::tui::spool::{SpoolOptions, SpoolRing};
use crossterm::event::KeyCode;

/// The session through a proxy whose sinks are a collector, the spool ring (`size` bytes at
/// most, in `dir`) and the view's feed; the events, the view fed from the feed as the UI is,
/// the ring's pager, and the most bytes the ring's files held on disk while it ran (looked at
/// every millisecond).
async fn spooled_session(
    dir: &std::path::Path,
    size: u64,
) -> Option<(Vec<Event>, App, Pager, u64)> {
    let broker = common::broker().await?;
    let (feed, rx) = amqpeek::tui::channel(amqpeek::tui::DEFAULT_CAPACITY);
    let opts = SpoolOptions {
        dir: Some(dir.to_path_buf()),
        size,
        max_body: 4096,
    };
    let spool = SpoolRing::create(&opts, feed.clone()).unwrap();
    assert!(spool.kept());
    let name = spool.name();
    let pager = Pager::spawn_ring(spool.opener(), inspect(), window_size());
    let config = amqpeek::proxy::ProxyConfig::new("127.0.0.1:0".parse().unwrap(), broker);
    let proxy = common::start_proxy_with(config, vec![Box::new(spool), Box::new(feed)]).await;
    let watching = Arc::new(AtomicBool::new(true));
    let watch = {
        let (dir, watching) = (dir.to_path_buf(), watching.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while watching.load(Ordering::Relaxed) {
                most = most.max(on_disk(&dir));
                std::thread::sleep(Duration::from_millis(1));
            }
            most.max(on_disk(&dir))
        })
    };
    let events = publish_through(proxy).await;
    watching.store(false, Ordering::Relaxed);
    let most = watch.join().unwrap();
    let mut app = App::new(
        TuiOptions {
            max_frames_per_conn: 100,
            spool: Some(name),
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
    Some((events, app, pager, most))
}

/// Bytes of the files in `dir`.
fn on_disk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The inspection the live view's pager re-runs the ring with (as `amqpeek proxy` gives it).
fn inspect() -> InspectOptions {
    InspectOptions {
        emit_data: true,
        state_each_frame: true,
        emit_state: true,
        ..InspectOptions::DEFAULT
    }
}

fn window_size() -> WindowSize {
    WindowSize {
        rows: 100,
        max_bytes: 32 << 20,
    }
}

use tui_support::key;

/// The rows of the session as the view numbers them: (number, connection, name) of each.
fn numbered(events: &[Event]) -> Vec<(u64, u64, String)> {
    let mut n = Numbering::default();
    events
        .iter()
        .filter_map(|e| {
            let Place::Row(seq) = n.place(e) else {
                return None;
            };
            let name = match &e.kind {
                EventKind::Frame(f) => f.frame.name().to_string(),
                EventKind::Header { .. } => "header".into(),
                EventKind::Close(_) => "close".into(),
                EventKind::Gap { .. } => "gap".into(),
                _ => "malformed".into(),
            };
            Some((seq, e.conn, name))
        })
        .collect()
}

/// `n` as the view writes counts: 1,117.
fn commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn selected(app: &App) -> (u64, u64, String) {
    let r = app.selected_row().expect("a row is selected");
    (r.seq, r.conn, r.name.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_session_longer_than_memory_is_reached_whole_through_its_spool() {
    let dir = tempfile::tempdir().unwrap();
    let Some((events, mut app, pager, _)) = spooled_session(dir.path(), 512 << 20).await else {
        return;
    };
    assert!(app.evicted_in_scope() > 0);
    assert_eq!(app.model().spool.from, 0);
    // The ring holds the whole session: no frame is said to be dropped or gone.
    let s = screen(&app);
    assert!(!s.contains("dropped"), "{s}");
    assert!(!s.contains("gone"), "{s}");
    // `g` reaches the session's first row (its protocol header), not the first in memory.
    key(&mut app, &pager, KeyCode::Char('g'));
    // The event loop passes on the pager's progress: a live view reads no file through.
    app.handle(AppEvent::Progress(
        pager.read.load(Ordering::Relaxed),
        pager.total,
    ));
    assert!(!screen(&app).contains("reading ["), "{}", screen(&app));
    let first = app.selected_row().expect("a row is selected");
    assert_eq!(
        (first.seq, first.name.as_str()),
        (0, "header"),
        "{}",
        screen(&app)
    );
    // A search finds a frame long dropped from memory, with the number the view gave it.
    key(&mut app, &pager, KeyCode::Char('G'));
    let last = numbered(&events).last().cloned().unwrap();
    assert_eq!(selected(&app), last);
    tui_support::press(&mut app, KeyCode::Char('/'));
    tui_support::type_str(&mut app, "name:queue.declare-ok");
    tui_support::press(&mut app, KeyCode::Enter);
    key(&mut app, &pager, KeyCode::Char('<'));
    let declared = numbered(&events)
        .into_iter()
        .find(|r| r.2 == "queue.declare-ok")
        .unwrap();
    assert!(declared.0 < 100, "{declared:?}");
    assert_eq!(selected(&app), declared, "{}", screen(&app));
    // The ring is masked JSONL: lapin's PLAIN password is not in it, nor the row marks.
    let text = spooled(dir.path());
    assert!(text.contains("start-ok"), "the handshake is spooled");
    assert!(
        text.contains(r#""password":"*****","username":"guest""#),
        "password masked"
    );
    assert!(!text.contains(r#""password":"guest""#), "password masked");
    assert!(!text.contains('\u{1e}'));
}

/// The text of the ring's files in `dir`.
fn spooled(dir: &std::path::Path) -> String {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_smaller_than_the_session_says_what_is_gone_and_g_reaches_its_first_frame() {
    let dir = tempfile::tempdir().unwrap();
    let Some((events, mut app, pager, _)) = spooled_session(dir.path(), 40 << 10).await else {
        return;
    };
    let from = app.model().spool.from;
    let rows = numbered(&events);
    assert!(from > 0 && from < rows.last().unwrap().0, "{from}");
    let s = screen(&app);
    let gone = format!(
        "the session's first {} frames are gone from the spool: g G n N > < Enter reach #{} on",
        commas(from),
        commas(from + 1)
    );
    assert!(s.contains(&gone), "{s}");
    assert!(!s.contains("dropped"), "{s}");
    // `g`: the first frame the ring still holds, numbered as the view numbered it live.
    key(&mut app, &pager, KeyCode::Char('g'));
    let want = rows.iter().find(|r| r.0 >= from).cloned().unwrap();
    assert_eq!(selected(&app), want, "{}", screen(&app));
    // Scrolling up from it brings back nothing older: the ring does not hold it.
    key(&mut app, &pager, KeyCode::Up);
    assert_eq!(selected(&app), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ring_never_holds_more_than_its_size_on_disk_and_keeps_the_newest_frames() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 40 << 10;
    let Some((events, _, _, most)) = spooled_session(dir.path(), limit).await else {
        return;
    };
    assert!(most <= limit, "{most} bytes on disk");
    let now = on_disk(dir.path());
    assert!(now > limit / 2, "{now}");
    // The newest frames are the ring's: the session's end is in it, masked JSONL throughout.
    let text = spooled(dir.path());
    let last = numbered(&events).last().cloned().unwrap();
    assert_eq!(last.2, "close");
    assert!(
        text.contains("connection.close-ok"),
        "the session's end is spooled"
    );
    assert!(!text.contains("start-ok"), "the session's start is gone");
}
