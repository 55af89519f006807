//! The feed between the relay and the UI: never blocks, counts what it drops, keeps
//! connection structure, throttles state snapshots, and says when it has ended.
mod tui_support;

use amqpeek::event::{CloseInfo, Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector, Sink};
use amqpeek::tui::{self, AppEvent};
use bytes::Bytes;
use tui_support::*;

fn data(conn: u64, i: u64) -> Event {
    Event {
        conn,
        ts: Timestamp(T0 + i as i64),
        kind: EventKind::Data {
            dir: Dir::C2S,
            offset: i,
            bytes: Bytes::from_static(b"x"),
        },
    }
}

#[test]
fn a_full_channel_drops_and_counts_but_keeps_connects_and_closes() {
    let (feed, rx) = tui::channel(4);
    for i in 0..10 {
        assert!(feed.event(&data(1, i)));
    }
    let close = Event {
        conn: 1,
        ts: Timestamp(T0 + 20),
        kind: EventKind::Close(CloseInfo {
            reason: "client closed".into(),
            bytes_c2s: 10,
            bytes_s2c: 0,
        }),
    };
    assert!(feed.event(&close));
    assert_eq!(feed.dropped(), 6);
    assert_eq!(rx.dropped(), 6);
    let got = rx.drain(100).unwrap();
    assert_eq!(got.len(), 5, "4 queued + the close kept aside");
    assert!(matches!(
        got.last(),
        Some(AppEvent::Pipeline(Event {
            kind: EventKind::Close(_),
            ..
        }))
    ));
    // The UI shows the drops.
    let mut app = app_with(got, 80, 24);
    app.handle(AppEvent::Dropped(rx.dropped()));
    assert!(screen(&app)[23].contains("6 events dropped from view"));
    // Once every feed is gone and drained, the receiver says so.
    drop(feed);
    assert!(rx.drain(100).is_none());
}

#[test]
fn sending_to_a_closed_ui_reports_it() {
    let (feed, rx) = tui::channel(4);
    drop(rx);
    assert!(!feed.event(&data(1, 0)));
}

#[test]
fn a_lossless_feed_waits_instead_of_dropping() {
    let (feed, rx) = tui::channel(2);
    let feed = feed.lossless();
    let t = std::thread::spawn(move || {
        for i in 0..50 {
            feed.event(&data(1, i));
        }
    });
    let mut n = 0;
    while n < 50 {
        match rx.drain(8) {
            Some(b) => n += b.len(),
            None => break,
        }
    }
    t.join().unwrap();
    assert_eq!(n, 50);
    assert_eq!(rx.dropped(), 0);
}

#[test]
fn state_snapshots_are_throttled_by_event_time_and_always_sent_on_change() {
    let (mut feed, rx) = tui::channel(100);
    let insp = Inspector::new(1, InspectOptions::default());
    let t = insp.tracker();
    feed.state(1, Timestamp(T0), t); // first: sent
    feed.state(1, Timestamp(T0 + 10_000), t); // 10 ms later, same name: skipped
    feed.state(1, Timestamp(T0 + tui::STATE_INTERVAL_US), t); // interval passed: sent
    feed.state(2, Timestamp(T0 + tui::STATE_INTERVAL_US), t); // another connection: sent
    feed.state_now(1, Timestamp(T0 + tui::STATE_INTERVAL_US + 1), t); // forced: sent
    let got = rx.drain(100).unwrap();
    let conns: Vec<u64> = got
        .iter()
        .map(|e| match e {
            AppEvent::State { conn, name, .. } => {
                assert_eq!(name, &t.state_name());
                *conn
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(conns, vec![1, 1, 2, 1]);
}

#[test]
fn the_feed_is_a_sink() {
    let (mut feed, rx) = tui::channel(100);
    let mut insp = Inspector::new(7, InspectOptions::default());
    let mut out = Vec::new();
    insp.chunk(
        Dir::C2S,
        Timestamp(T0),
        Bytes::from_static(amqp10::HEADER),
        &mut out,
    );
    for e in &out {
        Sink::event(&mut feed, e).unwrap();
    }
    let got = rx.drain(100).unwrap();
    assert_eq!(got.len(), out.len());
    let app = app_with(got, 80, 24);
    assert_eq!(app.conns[&7].proto, "amqp-1.0");
}

#[test]
fn without_state_events_the_ui_tracks_state_itself_like_the_inspector() {
    let all = conversation(1, 0, &amqp10_chunks(), true);
    // What the inspector's own tracker said last.
    let (name, snapshot) = all
        .iter()
        .rev()
        .find_map(|e| match e {
            AppEvent::State { name, snapshot, .. } => Some((name.clone(), snapshot.clone())),
            _ => None,
        })
        .unwrap();
    let events: Vec<AppEvent> = all
        .into_iter()
        .filter(|e| !matches!(e, AppEvent::State { .. }))
        .collect();
    let mut app = app_with(events, 80, 24);
    app.handle(AppEvent::FeedEnded);
    let c = &app.conns[&1];
    assert_eq!(c.state, name);
    assert_eq!(c.snapshot, snapshot);
    // A feed that sends state wins: the UI stops tracking that connection.
    app.handle(AppEvent::State {
        conn: 1,
        ts: Timestamp(T0 + 1),
        name: "FROM-FEED".into(),
        snapshot: serde_json::json!({"x": 1}),
    });
    app.handle(AppEvent::Tick(Timestamp(T0 + 10_000_000)));
    assert_eq!(app.conns[&1].state, "FROM-FEED");
}
