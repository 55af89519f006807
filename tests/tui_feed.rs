//! The feed between the relay and the UI: never blocks, counts what it drops, keeps
//! connection structure and each connection's latest state, and says when it has ended; the
//! pipeline's state events are throttled and the UI shows the latest.
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

/// The `State` events among `events`: (time, state name, snapshot).
fn states(events: &[Event]) -> Vec<(i64, std::sync::Arc<amqpeek::state::Snapshot>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::State(s) => Some((e.ts.0, s.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_pipeline_throttles_state_by_event_time_and_publishes_the_last_one() {
    let mut insp = Inspector::new(1, InspectOptions::default());
    let mut out = Vec::new();
    let chunks = amqp10_chunks();
    for (i, (dir, bytes)) in chunks.iter().enumerate() {
        // 1 ms apart, except one pause longer than the interval before the last transfer.
        let pause = if i == chunks.len() - 2 {
            tui_interval()
        } else {
            0
        };
        let ts = Timestamp(T0 + i as i64 * 1000 + pause);
        insp.chunk(*dir, ts, Bytes::copy_from_slice(bytes), &mut out);
    }
    let got = states(&out);
    // Each one either names a new state or comes an interval after the one before.
    for w in got.windows(2) {
        assert!(
            w[0].1.name != w[1].1.name || w[1].0 - w[0].0 >= tui_interval(),
            "{:?} then {:?}",
            (w[0].0, &w[0].1.name),
            (w[1].0, &w[1].1.name)
        );
    }
    assert!(got.len() < chunks.len(), "not throttled: {}", got.len());
    // The pause let the transfer after it through.
    assert!(got.iter().any(|(ts, _)| *ts >= T0 + tui_interval()));
    // The last frame (an empty one) changed nothing visible, but the driver's end-of-batch
    // publish gives the state after it, once.
    out.clear();
    insp.publish_state(Timestamp(T0 + 1), &mut out);
    let last = states(&out);
    assert_eq!(last.len(), 1);
    assert_eq!(*last[0].1, insp.tracker().snapshot());
    out.clear();
    insp.publish_state(Timestamp(T0 + 2), &mut out);
    assert!(states(&out).is_empty(), "nothing new: nothing published");
    // A frame, then close: the state after it comes before the close event.
    insp.chunk(
        Dir::S2C,
        Timestamp(T0 + 3),
        Bytes::from_static(amqp10::EMPTY),
        &mut out,
    );
    insp.close(Timestamp(T0 + 4), "client closed".into(), &mut out);
    let kinds: Vec<&str> = out
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::State(_) => Some("state"),
            EventKind::Close(_) => Some("close"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec!["state", "close"]);
}

fn tui_interval() -> i64 {
    amqpeek::pipeline::STATE_INTERVAL_US
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
    assert_eq!(app.model().conns[&7].proto, "amqp-1.0");
}

#[test]
fn the_ui_shows_the_last_state_published_and_never_an_older_one() {
    let all = conversation(1, 0, &amqp10_chunks(), true);
    let published: Vec<Event> = all
        .iter()
        .filter_map(|e| match e {
            AppEvent::Pipeline(
                ev @ Event {
                    kind: EventKind::State(_),
                    ..
                },
            ) => Some(ev.clone()),
            _ => None,
        })
        .collect();
    let (first, last) = (published[0].clone(), published.last().unwrap().clone());
    let mut app = app_with(all, 80, 24);
    let EventKind::State(want) = &last.kind else {
        unreachable!()
    };
    assert_eq!(app.model().conns[&1].snapshot, *want);
    assert_eq!(app.model().conns[&1].state, "OPENED");
    // A state kept aside while the feed was full may arrive after a newer one: ignored.
    app.handle(AppEvent::Pipeline(first));
    assert_eq!(app.model().conns[&1].snapshot, *want);
}

#[test]
fn a_full_feed_keeps_the_latest_state_of_each_connection() {
    let (feed, rx) = tui::channel(1);
    assert!(feed.event(&data(1, 0)));
    let state = |conn: u64, ts: i64, name: &str| Event {
        conn,
        ts: Timestamp(T0 + ts),
        kind: EventKind::State(std::sync::Arc::new(amqpeek::state::Snapshot {
            name: name.into(),
            ..Default::default()
        })),
    };
    for (conn, ts, name) in [(1, 1, "A"), (2, 2, "X"), (1, 3, "B"), (1, 4, "C")] {
        assert!(feed.event(&state(conn, ts, name)));
    }
    assert_eq!(rx.dropped(), 0);
    let got: Vec<(u64, String)> = rx
        .drain(100)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            AppEvent::Pipeline(Event {
                conn,
                kind: EventKind::State(s),
                ..
            }) => Some((conn, s.name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(got, vec![(1, "C".to_string()), (2, "X".to_string())]);
}
