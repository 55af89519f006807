//! Whole-capture navigation in the replay of a file: the UI keeps a window
//! of the capture's rows, and `g`/`G`, `n`/`N`, Enter on a violation and scrolling past the
//! window's edge bring back the rows they need through the pager, which re-runs the pipeline
//! over the file; with a filter on, `>`/`<` (and `g`/`G`, `n`/`N`) search the whole capture
//! for the rows it matches, and it stays on; `L` follows a link across the whole capture. Driven here as `replay` drives it (the first pass through the real pipeline
//! into the app, the app's window requests performed by a real pager), on captures generated
//! by the test, and the screen read from ratatui's `TestBackend`.

mod tui_support;

use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use amqpeek::capture::{self, CaptureOptions};
use amqpeek::driver::offline::{self, Pace};
use amqpeek::event::Event;
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::replay::pager::{Opener, Pager, WindowSize};
use amqpeek::tui::app::{Effect, Overlay};
use amqpeek::tui::timeline::{self, Follow};
use amqpeek::tui::{App, AppEvent, TuiOptions};
use crossterm::event::KeyCode;
use tui_support::*;

/// The pipeline's events into the app, as the lossless feed of `replay` gives them.
struct ToApp<'a>(&'a mut App);

impl Sink for ToApp<'_> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.handle(AppEvent::Pipeline(ev.clone()));
        Ok(())
    }
}

fn inspect() -> InspectOptions {
    InspectOptions {
        state_each_frame: true,
        ..InspectOptions::DEFAULT
    }
}

fn options(max_frames: usize) -> TuiOptions {
    TuiOptions {
        live: false,
        whole_capture: true,
        follow: true,
        max_frames_per_conn: max_frames,
        ..TuiOptions::default()
    }
}

/// The first pass of `replay` into the UI: every event of the capture, then the end.
fn first_pass(path: &Path, opts: TuiOptions) -> App {
    let mut app = App::new(opts, (120, 40));
    let source = capture::open(path, CaptureOptions::default()).unwrap();
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(ToApp(&mut app))];
    offline::run(source, inspect(), sinks, NonZeroUsize::MIN, Pace::Batched);
    app.handle(AppEvent::FeedEnded);
    app
}

fn pager(path: &Path, rows: usize) -> Pager {
    let p = path.to_path_buf();
    let open: Opener =
        Box::new(move |stop| capture::open_stoppable(&p, CaptureOptions::default(), stop).ok());
    let size = WindowSize {
        rows,
        max_bytes: 32 << 20,
    };
    Pager::spawn(open, inspect(), size, Arc::new(AtomicU64::new(0)), 0)
}

fn selected(app: &App) -> (u64, u64, String) {
    let r = app.selected_row().expect("a row is selected");
    (r.conn, r.seq, r.name.clone())
}

#[test]
fn g_and_big_g_reach_the_first_and_the_last_row_of_a_connection_beyond_the_ring() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    write_whole_capture(&path, 2, 3000);
    let mut app = first_pass(&path, options(500));
    let pager = pager(&path, 500);
    choose_conn(&mut app, 1);
    let (first, last, total) = {
        let c = &app.model().conns[&1];
        (c.first_seq.unwrap(), c.last_seq, c.total_rows)
    };
    assert_eq!(total, 3000 + 4 + 1, "headers, opens, frames, close");
    assert!(
        app.row(1, first).is_none(),
        "the first row is out of the ring"
    );

    key(&mut app, &pager, KeyCode::Char('g'));
    assert_eq!(
        selected(&app),
        (1, first, "header".into()),
        "{}",
        dump(&app)
    );
    let s = dump(&app);
    assert!(s.contains("amqp-1.0 protocol header"), "{s}");
    assert!(s.contains("frames in memory"), "{s}");

    key(&mut app, &pager, KeyCode::Char('G'));
    assert_eq!(selected(&app), (1, last, "close".into()), "{}", dump(&app));
    assert!(dump(&app).contains("connection closed"));
}

#[test]
fn enter_on_an_early_violation_and_n_beyond_the_window_bring_their_frames_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    write_whole_capture(&path, 2, 3000);
    let mut app = first_pass(&path, options(500));
    let pager = pager(&path, 500);
    assert_eq!(app.violations().rows().len(), 4, "two per connection");
    // The first violation is conn 1's early one, long out of the ring.
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Home);
    let v = app.violations().rows()[0].clone();
    assert_eq!(v.conn, 1);
    key(&mut app, &pager, KeyCode::Enter);
    let r = app.selected_row().expect("the violation's frame");
    assert_eq!(
        (r.conn, r.dir, r.offset),
        (1, Some(v.violation.dir), v.violation.offset)
    );
    assert_eq!(r.violations[0].rule, v.violation.rule);
    assert!(app.message().is_none(), "{:?}", app.message());

    // From the early one, `n` finds conn 1's late violation, far beyond the window.
    choose_conn(&mut app, 1);
    let early = selected(&app).1;
    key(&mut app, &pager, KeyCode::Char('n'));
    let r = app.selected_row().expect("the late violation's frame");
    assert!(r.seq > early + 1000, "{} after {early}", r.seq);
    assert_eq!((r.conn, r.violations.len()), (1, 1), "{}", dump(&app));
    // And `N` back to the early one.
    key(&mut app, &pager, KeyCode::Char('N'));
    assert_eq!(selected(&app).1, early);
}

/// Every row reached by scrolling a connection from its first to its last row through windows
/// is the row the first pass made of it, with the same state as of it: what a UI holding the
/// whole capture shows.
#[test]
fn scrolling_through_windows_shows_every_row_with_its_state_as_the_first_pass_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    write_whole_capture(&path, 2, 1200);
    let full = first_pass(&path, options(1_000_000));
    let mut app = first_pass(&path, options(150));
    let pager = pager(&path, 150);
    choose_conn(&mut app, 1);
    key(&mut app, &pager, KeyCode::Char('g'));
    let mut seen = 0;
    let mut states = std::collections::HashSet::new();
    loop {
        let (conn, seq, _) = selected(&app);
        let want = full.row(conn, seq).expect("the first pass made this row");
        let got = app.selected_row().unwrap();
        assert_eq!((&got.name, &got.summary), (&want.name, &want.summary));
        let rules = |r: &amqpeek::tui::app::Row| -> Vec<String> {
            r.violations.iter().map(|v| v.rule.id.to_string()).collect()
        };
        assert_eq!(rules(got), rules(want), "row {seq}");
        let state = app.model().conns[&conn]
            .state_after(seq)
            .map(|s| (**s).clone());
        let truth = full.model().conns[&conn]
            .state_after(seq)
            .map(|s| (**s).clone());
        assert_eq!(state, truth, "state as of row {seq}");
        states.insert(format!("{:?}", truth.map(|s| s.detail)));
        seen += 1;
        if seq == app.model().conns[&conn].last_seq {
            break;
        }
        let before = seq;
        key(&mut app, &pager, KeyCode::Down);
        assert!(
            selected(&app).1 > before,
            "stuck at row {before}: {:?} {:?} {}",
            app.message(),
            app.model().paging,
            app.frames().view().len()
        );
    }
    assert_eq!(seen as u64, full.model().conns[&1].total_rows);
    assert!(states.len() >= 2, "the walk crossed a change of state");
    // And back up across the windows' upper edges: each row the one before, as it was made.
    for _ in 0..400 {
        let before = selected(&app).1;
        key(&mut app, &pager, KeyCode::Up);
        let (conn, seq, name) = selected(&app);
        assert!(seq < before, "stuck at row {before}");
        assert_eq!(name, full.row(conn, seq).unwrap().name, "row {seq}");
        let state = app.model().conns[&conn]
            .state_after(seq)
            .map(|s| (**s).clone());
        let truth = full.model().conns[&conn]
            .state_after(seq)
            .map(|s| (**s).clone());
        assert_eq!(state, truth, "state as of row {seq}");
    }
}

#[test]
fn the_first_pass_shows_how_far_it_has_read() {
    let mut app = App::new(options(100), (100, 20));
    app.handle(AppEvent::Progress(50, 100));
    let s = dump(&app);
    assert!(s.contains("reading [##########..........] 50%"), "{s}");
    app.handle(AppEvent::FeedEnded);
    assert!(!dump(&app).contains("reading ["));
}

/// The state of connection `conn` as of row `seq`, as `app` shows it.
fn state_of(app: &App, conn: u64, seq: u64) -> Option<amqpeek::state::Snapshot> {
    app.model().conns[&conn]
        .state_after(seq)
        .map(|s| (**s).clone())
}

/// With a filter on, `g`, then `>` again and again, reach every row of the whole capture the
/// filter matches, in turn (most of them beyond the window in memory, found by a search of the
/// capture), each with its state as of it, the filter staying on; `<` comes back through them
/// all; past the last and the first, "no match".
#[test]
fn next_and_previous_match_reach_every_row_the_filter_matches_across_the_capture() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    write_whole_capture_with(&path, 2, 3000, Some(97));
    let mut full = first_pass(&path, options(1_000_000));
    choose_conn(&mut full, 1);
    set_filter(&mut full, "name:begin");
    let want: Vec<u64> = full.frames().view().iter().map(|(_, s)| *s).collect();
    assert!(want.len() > 25, "{} matches", want.len());

    let mut app = first_pass(&path, options(100));
    let pager = pager(&path, 8);
    choose_conn(&mut app, 1);
    set_filter(&mut app, "name:begin");
    assert!(
        app.frames().view().len() < 3,
        "the ring holds few matches: {}",
        app.frames().view().len()
    );
    key(&mut app, &pager, KeyCode::Char('g'));
    let mut seen = vec![selected(&app).1];
    let mut searches = 0;
    loop {
        press(&mut app, KeyCode::Char('>'));
        if !app.effects().is_empty() {
            let m = app.message().clone().unwrap_or_default();
            assert_eq!(m, "searching (0%)");
            // The pager's progress, as the event loop passes it on: of the capture's rows.
            let rows: u64 = app.model().conns.values().map(|c| c.total_rows).sum();
            app.handle(AppEvent::Scanned(rows / 2));
            assert!(dump(&app).contains("searching (50%)"), "{}", dump(&app));
        }
        searches += settle(&mut app, &pager);
        if let Some(m) = app.message().clone() {
            assert_eq!(m, format!("no match after #{}", want.last().unwrap() + 1));
            break;
        }
        let (conn, seq, name) = selected(&app);
        assert_eq!(app.filter().source, "name:begin", "the filter stays on");
        assert_eq!(name, full.row(conn, seq).unwrap().name, "row {seq}");
        assert_eq!(
            state_of(&app, conn, seq),
            state_of(&full, conn, seq),
            "row {seq}"
        );
        seen.push(seq);
        assert!(seen.len() <= want.len(), "{seen:?}");
    }
    assert_eq!(seen, want);
    assert!(
        searches >= 3,
        "the matches were found beyond the window: {searches} searches"
    );

    let mut back = vec![selected(&app).1];
    loop {
        key(&mut app, &pager, KeyCode::Char('<'));
        if let Some(m) = app.message().clone() {
            assert_eq!(m, format!("no match before #{}", want[0] + 1));
            break;
        }
        back.push(selected(&app).1);
        assert!(back.len() <= want.len(), "{back:?}");
    }
    back.reverse();
    assert_eq!(back, want);
}

/// With a filter on, far jumps keep it: `g` brings back the first row it matches, `n` / `N`
/// the next / previous row it matches that has a violation, however far; each row shown has
/// its state as of it, also when the rows between (not shown) changed it.
#[test]
fn far_jumps_keep_the_filter_and_each_row_shown_has_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    write_whole_capture_with(&path, 2, 3000, Some(97));
    let full = first_pass(&path, options(1_000_000));
    let mut app = first_pass(&path, options(100));
    let pager = pager(&path, 8);
    choose_conn(&mut app, 1);
    set_filter(&mut app, "name:end");
    let [early, late] = violation_frames(3000);
    let check = |app: &App| {
        let (conn, seq, name) = selected(app);
        assert_eq!(name, "end", "{}", dump(app));
        assert_eq!(app.filter().source, "name:end", "the filter stays on");
        assert_eq!(
            state_of(app, conn, seq),
            state_of(&full, conn, seq),
            "row {seq}"
        );
        seq
    };
    key(&mut app, &pager, KeyCode::Char('g'));
    let first = check(&app);
    assert!(app.message().is_none(), "{:?}", app.message());
    // Every row the window holds is one the filter matches.
    assert!(app.model().conns[&1].rows.iter().all(|r| r.name == "end"));
    // The late one: the sessions begun since the early one (rows not kept) are in its state.
    key(&mut app, &pager, KeyCode::Char('>'));
    assert!(check(&app) > first + 1000);

    press(&mut app, KeyCode::Char('/'));
    press(&mut app, KeyCode::Up);
    type_str(&mut app, "|begin");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter().source, "name:end|begin");
    key(&mut app, &pager, KeyCode::Char('g'));
    let check = |app: &App| {
        let (conn, seq, _) = selected(app);
        assert_eq!(app.filter().source, "name:end|begin", "the filter stays on");
        assert_eq!(
            state_of(app, conn, seq),
            state_of(&full, conn, seq),
            "row {seq}"
        );
        assert_eq!(app.selected_row().unwrap().violations.len(), 1);
        seq
    };
    assert_eq!(check(&app), first);
    key(&mut app, &pager, KeyCode::Char('n'));
    let second = check(&app);
    assert!(
        second > first + 2 * (late - early) as u64 - 10,
        "{second} {:?}",
        app.message()
    );
    key(&mut app, &pager, KeyCode::Char('N'));
    assert_eq!(check(&app), first);
}

/// Perform the app's follow request with `pager` as the event loop does, until the followed
/// frames have come.
fn settle_follow(app: &mut App, pager: &Pager) {
    for e in app.take_effects() {
        if let Effect::Follow(r) = e {
            pager.follow(r);
        }
    }
    let start = Instant::now();
    while timeline::reading(app) {
        match pager.try_recv_followed() {
            Some(f) => app.handle(AppEvent::Followed(Box::new(f))),
            None => std::thread::sleep(Duration::from_millis(2)),
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no followed frames came"
        );
    }
}

/// `L` on a link's first transfer in a 200,000-frame capture, 1,000 rows in memory: the
/// timeline lists the link's frames of the whole capture from there (1,000 of them, the
/// window's bound, reaching far beyond the rows in memory), with the dispositions that settle
/// its deliveries, each delivery timed over the whole file (its disposition 50,050 frames
/// later, or beyond the entries listed); Enter on the last entry selects that frame.
#[test]
fn l_follows_a_link_across_the_whole_capture_with_its_far_settlements() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("link.jsonl");
    let frames = 200_000;
    write_link_capture(&path, frames);
    let mut app = first_pass(&path, options(1000));
    let pager = pager(&path, 1000);
    choose_conn(&mut app, 1);
    key(&mut app, &pager, KeyCode::Char('g'));
    while selected(&app).2 != "transfer" {
        press(&mut app, KeyCode::Down);
    }
    let (_, t0, _) = selected(&app);
    assert!(
        app.selected_row()
            .unwrap()
            .summary
            .contains("delivery-id=0")
    );
    let in_memory = app.model().conns[&1]
        .rows
        .iter()
        .map(|r| r.seq)
        .max()
        .unwrap();
    assert!(in_memory < t0 + 1100, "a window of the capture's start");

    press(&mut app, KeyCode::Char('L'));
    let Overlay::Timeline(tl) = app.overlay().clone() else {
        panic!("no timeline: {:?}", app.message());
    };
    let follow = tl.follow().clone();
    assert_eq!(
        follow,
        Follow::Link {
            conn: 1,
            name: "orders".into()
        }
    );
    assert!(dump(&app).contains("reading"), "{}", dump(&app));
    settle_follow(&mut app, &pager);
    let e = timeline::entries(&app, &follow);
    assert_eq!(e.len(), 1000, "the bound: a window's rows");
    let names: Vec<&str> = e.iter().take(6).map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "attach", "attach", "flow", "transfer", "transfer", "transfer"
        ]
    );
    let beyond = e.iter().filter(|e| e.seq > in_memory).count();
    assert!(beyond > 900, "{beyond} entries beyond the rows in memory");
    // The cursor is on the transfer the timeline was opened on.
    let Overlay::Timeline(tl) = app.overlay().clone() else {
        panic!("closed");
    };
    let list = tl.cursor().list();
    assert_eq!(e[list.selected].seq, t0);
    // Delivery 0: settled 50,050 frames later, by a disposition listed.
    let us = link_capture_us(50_050);
    assert_eq!(e[list.selected].settled, Some((us, "disposition")));
    let far = e
        .iter()
        .find(|x| x.name == "disposition" && x.summary.contains("first=0"))
        .unwrap_or_else(|| panic!("no disposition of delivery 0: {e:?}"));
    assert_eq!(far.rel_us, us, "{far:?}");
    // Delivery 1: settled at the end of the capture, beyond the entries listed.
    let t1 = e
        .iter()
        .find(|x| x.summary.contains("delivery-id=1,"))
        .unwrap();
    let after = link_capture_us(frames - 50) - link_capture_us(200);
    assert_eq!(t1.settled, Some((after, "disposition")), "{t1:?}");
    // The others 100 frames after their transfer, each disposition listed after it.
    let t2 = e
        .iter()
        .find(|x| x.summary.contains("delivery-id=2,"))
        .unwrap();
    assert_eq!(t2.settled, Some((1000, "disposition")));
    let s = dump(&app);
    assert!(
        s.contains("Following link \"orders\" of conn 1: 1000 frames (more after)"),
        "the title says the list was cut at the bound: {s}"
    );
    assert!(s.contains("disposition +500.500ms"), "{s}");

    // Enter on the last entry, far beyond the rows in memory: that frame is selected.
    let last = e.last().unwrap().clone();
    assert!(last.seq > in_memory + 50_000, "{last:?}");
    press(&mut app, KeyCode::End);
    press(&mut app, KeyCode::Enter);
    settle(&mut app, &pager);
    assert_eq!(*app.overlay(), Overlay::None);
    let (conn, seq, name) = selected(&app);
    assert_eq!((conn, seq, name), (1, last.seq, last.name.clone()));
    assert_eq!(app.selected_row().unwrap().summary, last.summary);
}

/// `L` on a late transfer: at most half the bound of the followed frames are before it, and
/// the rest from it on (here the capture's end comes first); Esc before they come stops the
/// re-run and forgets them.
#[test]
fn l_on_a_late_frame_keeps_half_the_bound_before_it_and_esc_forgets_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("link.jsonl");
    write_link_capture(&path, 60_000);
    let mut app = first_pass(&path, options(300));
    let pager = pager(&path, 200);
    choose_conn(&mut app, 1);
    // The last transfer is among the rows in memory (the latest ones).
    let last = app.model().conns[&1]
        .rows
        .iter()
        .rev()
        .position(|r| r.name == "transfer")
        .unwrap();
    press(&mut app, KeyCode::End);
    for _ in 0..last {
        press(&mut app, KeyCode::Up);
    }
    let (_, t, name) = selected(&app);
    assert_eq!(name, "transfer");
    press(&mut app, KeyCode::Char('L'));
    settle_follow(&mut app, &pager);
    let Overlay::Timeline(tl) = app.overlay().clone() else {
        panic!("no timeline: {:?}", app.message());
    };
    let (follow, list) = (tl.follow().clone(), tl.cursor().list());
    let e = timeline::entries(&app, &follow);
    assert_eq!(e[list.selected].seq, t);
    let before = e.iter().filter(|x| x.seq < t).count();
    assert_eq!(before, 100, "half the bound before it");
    assert!(e.len() < 200, "the capture ends first: {}", e.len());
    assert!(
        dump(&app).contains(" frames (more before) "),
        "{}",
        dump(&app)
    );
    assert!(
        e.windows(2).all(|w| w[0].seq < w[1].seq),
        "in capture order"
    );

    press(&mut app, KeyCode::Char('L'));
    assert_eq!(*app.overlay(), Overlay::None, "L closes it too");
    assert!(!timeline::reading(&app), "nothing kept of it");
    assert!(app.effects().is_empty(), "nothing to stop");
    // Opened again and closed before the frames come: the re-run is stopped.
    press(&mut app, KeyCode::Char('L'));
    assert!(timeline::reading(&app));
    press(&mut app, KeyCode::Esc);
    assert_eq!(*app.overlay(), Overlay::None);
    assert!(!timeline::reading(&app));
    assert!(
        app.effects()
            .iter()
            .any(|e| matches!(e, Effect::StopFollow)),
        "the re-run is stopped"
    );
}
