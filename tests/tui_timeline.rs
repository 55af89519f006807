//! Following a link or a channel over time (`L`) and the frame list's time modes (`t`), on the
//! shipped captures of real peers: fe2o3-amqp's AMQP 1.0 session with RabbitMQ (transfers and
//! the dispositions that settle them) and lapin's 0-9-1 channel (publish -> confirm, deliver ->
//! ack), replayed through the real pipeline into the app.
mod tui_support;

use amqpeek::event::Event;
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::tui::app::Overlay;
use amqpeek::tui::timeline::{Follow, entries};
use amqpeek::tui::{App, AppEvent, Pane, TuiOptions};
use crossterm::event::KeyCode;
use tui_support::*;

struct Feed<'a>(&'a mut App);

impl Sink for Feed<'_> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.handle(AppEvent::Pipeline(ev.clone()));
        Ok(())
    }
}

fn replayed(name: &str) -> App {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name);
    let opts = TuiOptions {
        live: false,
        ..TuiOptions::default()
    };
    let mut app = App::new(opts, (140, 45));
    let src = amqpeek::capture::open(&path, Default::default()).unwrap();
    amqpeek::replay::run(src, InspectOptions::default(), &mut [&mut Feed(&mut app)]).unwrap();
    app.handle(AppEvent::FeedEnded);
    app
}

fn select(app: &mut App, name: &str, with: &str) {
    let i = app
        .frames()
        .view()
        .iter()
        .position(|(c, s)| {
            app.row(*c, *s)
                .is_some_and(|r| r.name == name && r.summary.contains(with))
        })
        .unwrap_or_else(|| panic!("no {name} {with}"));
    press(app, KeyCode::Char('g'));
    for _ in 0..i {
        press(app, KeyCode::Down);
    }
}

fn names(app: &App, follow: &Follow) -> Vec<String> {
    entries(app, follow)
        .iter()
        .map(|e| app.row(follow.conn(), e.seq).unwrap().name.clone())
        .collect()
}

#[test]
fn l_follows_an_amqp10_link_with_the_dispositions_that_settle_its_deliveries() {
    let mut app = replayed("amqp10-fe2o3.jsonl");
    select(&mut app, "transfer", "handle=0, delivery-id=1");
    press(&mut app, KeyCode::Char('L'));
    let Overlay::Timeline(tl) = app.overlay().clone() else {
        panic!("no timeline: {:?}", app.message());
    };
    let (follow, list) = (tl.follow().clone(), tl.cursor().list());
    assert!(
        app.effects().is_empty(),
        "not a file's whole capture: the rows in memory, nothing asked of a pager"
    );
    assert_eq!(
        follow,
        Follow::Link {
            conn: 1,
            name: "demo-sender".into()
        }
    );
    let n = names(&app, &follow);
    // It attached, sent three messages each settled by RabbitMQ, detached, and attached
    // once more before leaving.
    assert_eq!(
        n,
        [
            "attach",
            "attach",
            "flow",
            "transfer",
            "disposition",
            "transfer",
            "disposition",
            "transfer",
            "disposition",
            "detach",
            "detach",
            "attach",
            "attach",
            "flow",
            "detach",
            "detach"
        ],
        "the link's frames, and only the dispositions of its deliveries"
    );
    // The cursor starts on the selected transfer.
    assert_eq!(n[list.selected], "transfer");
    let e = entries(&app, &follow);
    assert_eq!(e[0].rel_us, 0);
    assert!(
        e.windows(2)
            .all(|w| w[1].rel_us - w[0].rel_us == w[1].delta_us)
    );
    let settled: Vec<_> = e.iter().filter_map(|e| e.settled).collect();
    assert_eq!(settled.len(), 3, "{e:?}");
    // RabbitMQ's disposition came 296 us after the first transfer (13:30:20.648745 ->
    // 13:30:20.649041).
    assert_eq!(settled[0], (296, "disposition"));
    let s = dump(&app);
    assert!(
        s.contains("Following link \"demo-sender\" of conn 1: 16 frames"),
        "{s}"
    );
    assert!(s.contains("disposition +296us"), "{s}");
    assert!(s.contains("+0.000000"), "{s}");
    // Enter goes to the frame; Esc had closed it too.
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    assert_eq!(*app.overlay(), Overlay::None);
    assert_eq!(app.focus(), Pane::Frames);
    assert_eq!(app.selected_row().unwrap().name, "disposition");
}

#[test]
fn l_follows_an_amqp091_channel_from_publish_to_confirm_and_deliver_to_ack() {
    let mut app = replayed("amqp091-lapin.jsonl");
    select(&mut app, "basic.publish", "");
    press(&mut app, KeyCode::Char('L'));
    let Overlay::Timeline(tl) = app.overlay().clone() else {
        panic!("no timeline");
    };
    let follow = tl.follow().clone();
    assert_eq!(
        follow,
        Follow::Channel {
            conn: 1,
            channel: 1
        }
    );
    let e = entries(&app, &follow);
    let by = |what: &str| {
        e.iter()
            .filter(|x| x.settled.is_some_and(|s| s.1 == what))
            .map(|x| app.row(1, x.seq).unwrap().name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(by("confirm"), ["basic.publish"; 3]);
    assert_eq!(
        by("ack"),
        ["basic.get-ok", "basic.deliver", "basic.deliver"]
    );
    assert!(
        !names(&app, &follow)
            .iter()
            .any(|n| n.starts_with("content-"))
    );
    let s = dump(&app);
    assert!(s.contains("confirm +166us"), "{s}");
    assert!(s.contains("ack +"), "{s}");
    press(&mut app, KeyCode::Esc);
    assert_eq!(*app.overlay(), Overlay::None);
}

#[test]
fn t_shows_times_relative_to_the_first_frame_and_to_the_row_above() {
    let mut app = replayed("amqp091-lapin.jsonl");
    press(&mut app, KeyCode::Char('g'));
    let first = |app: &App| {
        screen(app)
            .into_iter()
            .find(|l| l.contains("header"))
            .unwrap()
    };
    assert!(first(&app).contains("13:30:19.577"), "{}", first(&app));
    press(&mut app, KeyCode::Char('t'));
    let s = dump(&app);
    assert!(s.contains("time +since first"), "{s}");
    // The header came 286 us after the connect (13:30:19.577132 -> .577418).
    assert!(first(&app).contains("+0.000286"), "{s}");
    press(&mut app, KeyCode::Char('t'));
    let s = screen(&app);
    assert!(s.iter().any(|l| l.contains("time +since previous")));
    // The first row listed has nothing above it.
    assert!(first(&app).contains("+0.000000"), "{}", first(&app));
    press(&mut app, KeyCode::Char('t'));
    assert!(first(&app).contains("13:30:19.577"));
}
