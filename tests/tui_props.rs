//! Whatever the user does, at whatever terminal size, with whatever arrives: the UI never
//! panics and its cursors stay inside their lists.
mod tui_support;

use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::tui::{App, AppEvent, Pane, TuiOptions};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use proptest::prelude::*;
use tui_support::*;

fn keys() -> impl Strategy<Value = AppEvent> {
    let codes = prop_oneof![
        Just(KeyCode::Up),
        Just(KeyCode::Down),
        Just(KeyCode::PageUp),
        Just(KeyCode::PageDown),
        Just(KeyCode::Home),
        Just(KeyCode::End),
        Just(KeyCode::Enter),
        Just(KeyCode::Tab),
        Just(KeyCode::BackTab),
        Just(KeyCode::Esc),
        Just(KeyCode::Left),
        Just(KeyCode::Right),
        Just(KeyCode::Backspace),
        proptest::char::range(' ', '~').prop_map(KeyCode::Char),
    ];
    codes
        .prop_filter("q quits", |c| *c != KeyCode::Char('q'))
        .prop_map(|c| AppEvent::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

fn mouse() -> impl Strategy<Value = AppEvent> {
    (0u16..130, 0u16..50, 0u8..3).prop_map(|(x, y, k)| {
        AppEvent::Mouse(MouseEvent {
            kind: match k {
                0 => MouseEventKind::ScrollUp,
                1 => MouseEventKind::ScrollDown,
                _ => MouseEventKind::Down(MouseButton::Left),
            },
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        })
    })
}

/// Real frame and state events of a real conversation, to pick from.
fn pool() -> Vec<EventKind> {
    conversation(1, 0, &amqp10_chunks(), true)
        .into_iter()
        .filter_map(|e| match e {
            AppEvent::Pipeline(Event {
                kind: k @ (EventKind::Frame(_) | EventKind::State(_)),
                ..
            }) => Some(k),
            _ => None,
        })
        .collect()
}

fn feed() -> impl Strategy<Value = AppEvent> {
    let pool = pool();
    let n = pool.len();
    (1u64..4, 0u64..200, any::<bool>(), 0u8..6, 0..n).prop_map(move |(conn, off, c2s, k, pick)| {
        let dir = if c2s { Dir::C2S } else { Dir::S2C };
        let kind = match k {
            0 => EventKind::Gap {
                dir,
                offset: off,
                len: 3,
                reason: "loss".into(),
            },
            1 => EventKind::Violation(
                amqpeek::state::rules::CODEC_MALFORMED_FRAME.violation(dir, off, "bad"),
            ),
            2 => EventKind::Data {
                dir,
                offset: off,
                bytes: bytes::Bytes::from_static(b"\x00\x00\x00\x08\x02\x00\x00\x00"),
            },
            3 => EventKind::Connect {
                client: format!("127.0.0.1:{}", 40000 + off).parse().unwrap(),
                upstream: "127.0.0.1:5672".parse().unwrap(),
            },
            // A real frame or a real tracker state, on any connection.
            _ => pool[pick].clone(),
        };
        AppEvent::Pipeline(Event {
            conn,
            ts: Timestamp(T0 + off as i64),
            kind,
        })
    })
}

fn any_event() -> impl Strategy<Value = AppEvent> {
    prop_oneof![
        4 => keys(),
        2 => mouse(),
        3 => feed(),
        1 => (0u16..140, 0u16..60).prop_map(|(w, h)| AppEvent::Resize(w, h)),
    ]
}

fn check(app: &App) {
    let n_conns = app.model().conns.len() + 1;
    assert!(app.conn_list().cursor().selected() < n_conns);
    assert!(
        app.frames().view().is_empty()
            || app.frames().cursor().selected() < app.frames().view().len()
    );
    assert!(
        app.frames().view().is_empty()
            || app.frames().cursor().list().offset <= app.frames().cursor().selected()
    );
    assert!(
        app.violations().rows().is_empty()
            || app.violations().cursor().selected() < app.violations().rows().len()
    );
    // The frame list, when on screen, shows its cursor.
    let page = app.page(Pane::Frames);
    if !app.frames().view().is_empty() && page > 0 {
        let l = app.frames().cursor().list();
        assert!(
            l.selected >= l.offset && l.selected < l.offset + page,
            "{l:?} page {page}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn never_panics_and_cursors_stay_in_their_lists(
        events in proptest::collection::vec(any_event(), 1..80),
        max_frames in 1usize..20,
    ) {
        let opts = TuiOptions { live: false, max_frames_per_conn: max_frames, ..Default::default() };
        let mut app = App::new(opts, (80, 24));
        for e in conversation(1, 0, &amqp10_chunks(), false) {
            app.handle(e);
        }
        for e in events {
            app.handle(e);
            let _ = screen(&app);
            if app.model().size.0 > 0 && app.model().size.1 > 0 {
                check(&app);
            }
        }
    }
}
