//! Shared helpers for the TUI tests: real bytes through the real pipeline into `App`, and the
//! rendered screen as text lines.
#![allow(dead_code)]

use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Inspector};
use amqpeek::tui::{App, AppEvent, TuiOptions};
use bytes::Bytes;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// 2025-11-29T12:00:00Z.
pub const T0: i64 = 1_764_417_600_000_000;

/// Minimal AMQP 1.0 encoders for building frames in tests.
pub mod amqp10 {
    pub fn null() -> Vec<u8> {
        vec![0x40]
    }
    pub fn boolean(b: bool) -> Vec<u8> {
        vec![if b { 0x41 } else { 0x42 }]
    }
    pub fn uint(n: u32) -> Vec<u8> {
        let mut v = vec![0x70];
        v.extend_from_slice(&n.to_be_bytes());
        v
    }
    pub fn str8(s: &str) -> Vec<u8> {
        let mut v = vec![0xa1, s.len() as u8];
        v.extend_from_slice(s.as_bytes());
        v
    }
    pub fn bin8(b: &[u8]) -> Vec<u8> {
        let mut v = vec![0xa0, b.len() as u8];
        v.extend_from_slice(b);
        v
    }
    pub fn list(items: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = items.concat();
        let mut v = vec![0xd0];
        v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        v.extend_from_slice(&(items.len() as u32).to_be_bytes());
        v.extend_from_slice(&body);
        v
    }
    pub fn described(code: u8, body: Vec<u8>) -> Vec<u8> {
        let mut v = vec![0x00, 0x53, code];
        v.extend_from_slice(&body);
        v
    }
    /// An AMQP frame (type 0) on `channel` carrying `body`.
    pub fn frame(channel: u16, body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(&[2, 0]);
        v.extend_from_slice(&channel.to_be_bytes());
        v.extend_from_slice(body);
        v
    }
    pub fn open(container: &str) -> Vec<u8> {
        frame(0, &described(0x10, list(&[str8(container)])))
    }
    pub fn begin(channel: u16) -> Vec<u8> {
        frame(
            channel,
            &described(0x11, list(&[null(), uint(0), uint(100), uint(100)])),
        )
    }
    /// The answering begin: remote-channel names the begin it answers (§2.7.2).
    pub fn begin_reply(channel: u16, remote: u16) -> Vec<u8> {
        let mut remote_channel = vec![0x60];
        remote_channel.extend_from_slice(&remote.to_be_bytes());
        frame(
            channel,
            &described(0x11, list(&[remote_channel, uint(0), uint(100), uint(100)])),
        )
    }
    /// A sender (`role` false) or receiver attach.
    pub fn attach(channel: u16, name: &str, handle: u32, receiver: bool, addr: &str) -> Vec<u8> {
        let source = described(0x28, list(&[str8(addr)]));
        let target = described(0x29, list(&[str8(addr)]));
        let mut fields = vec![
            str8(name),
            uint(handle),
            boolean(receiver),
            null(),
            null(),
            source,
            target,
        ];
        if !receiver {
            fields.extend([null(), null(), uint(0)]);
        }
        frame(channel, &described(0x12, list(&fields)))
    }
    pub fn flow(channel: u16, handle: u32, credit: u32) -> Vec<u8> {
        frame(
            channel,
            &described(
                0x13,
                list(&[
                    uint(0),
                    uint(100),
                    uint(0),
                    uint(100),
                    uint(handle),
                    uint(0),
                    uint(credit),
                ]),
            ),
        )
    }
    pub fn transfer(channel: u16, handle: u32, id: u32, body: &[u8]) -> Vec<u8> {
        let mut b = described(
            0x14,
            list(&[uint(handle), uint(id), bin8(&id.to_be_bytes()), uint(0)]),
        );
        b.extend(described(0x75, {
            let mut d = vec![0xa0, body.len() as u8];
            d.extend_from_slice(body);
            d
        }));
        frame(channel, &b)
    }
    /// A settled disposition of deliveries `first..=last` by the receiver (`receiver`) or the
    /// sender, accepted.
    pub fn disposition(channel: u16, receiver: bool, first: u32, last: u32) -> Vec<u8> {
        let accepted = described(0x24, list(&[]));
        frame(
            channel,
            &described(
                0x15,
                list(&[
                    boolean(receiver),
                    uint(first),
                    uint(last),
                    boolean(true),
                    accepted,
                ]),
            ),
        )
    }
    pub const HEADER: &[u8] = b"AMQP\x00\x01\x00\x00";
    pub const EMPTY: &[u8] = &[0, 0, 0, 8, 2, 0, 0, 0];
}

/// Bytes from a hex string (spaces allowed).
pub fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    hex::decode(s).expect("test hex")
}

/// The events one connection produces for `chunks` (each 1 ms after the last, starting at
/// `T0 + start_ms`), after a connect event, through the real inspector (its `State` events
/// included, published after each chunk).
pub fn conversation(
    conn: u64,
    start_ms: i64,
    chunks: &[(Dir, Vec<u8>)],
    close: bool,
) -> Vec<AppEvent> {
    let mut insp = Inspector::new(conn, InspectOptions::default());
    let mut out: Vec<Event> = vec![Event {
        conn,
        ts: Timestamp(T0 + start_ms * 1000),
        kind: EventKind::Connect {
            client: format!("127.0.0.1:{}", 50000 + conn).parse().unwrap(),
            upstream: "127.0.0.1:5672".parse().unwrap(),
        },
    }];
    let mut apps = Vec::new();
    let mut ts = T0 + start_ms * 1000;
    for (dir, bytes) in chunks {
        ts += 1000;
        insp.chunk(*dir, Timestamp(ts), Bytes::copy_from_slice(bytes), &mut out);
        // Each chunk its own batch, as the proxy's inspection does when traffic is light.
        insp.publish_state(Timestamp(ts), &mut out);
        apps.extend(out.drain(..).map(AppEvent::Pipeline));
    }
    if close {
        ts += 1000;
        insp.close(Timestamp(ts), "client closed".into(), &mut out);
        apps.extend(out.drain(..).map(AppEvent::Pipeline));
    }
    apps
}

/// A typical AMQP 1.0 client: header, open, begin, attach `orders` (sender), transfers.
pub fn amqp10_chunks() -> Vec<(Dir, Vec<u8>)> {
    use amqp10::*;
    vec![
        (Dir::C2S, HEADER.to_vec()),
        (Dir::S2C, HEADER.to_vec()),
        (Dir::C2S, open("client")),
        (Dir::S2C, open("broker")),
        (Dir::C2S, begin(0)),
        (Dir::S2C, begin_reply(0, 0)),
        (Dir::C2S, attach(0, "orders", 0, false, "orders")),
        (Dir::S2C, attach(0, "orders", 0, true, "orders")),
        (Dir::S2C, flow(0, 0, 10)),
        (Dir::C2S, transfer(0, 0, 0, b"hello")),
        (Dir::C2S, transfer(0, 0, 1, b"world")),
        (Dir::C2S, EMPTY.to_vec()),
    ]
}

/// An app of `w` x `h` fed `events`.
pub fn app_with(events: Vec<AppEvent>, w: u16, h: u16) -> App {
    let opts = TuiOptions {
        live: false,
        ..TuiOptions::default()
    };
    let mut app = App::new(opts, (w, h));
    for e in events {
        app.handle(e);
    }
    app
}

/// The screen as text lines (trailing spaces trimmed).
pub fn screen(app: &App) -> Vec<String> {
    let (w, h) = app.model().size;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| app.render(f)).unwrap();
    let buf = t.backend().buffer();
    (0..h)
        .map(|y| {
            let mut s = String::new();
            for x in 0..w {
                s.push_str(buf[(x, y)].symbol());
            }
            s.trim_end().to_string()
        })
        .collect()
}

/// The rendered buffer (for style checks).
pub fn buffer(app: &App) -> ratatui::buffer::Buffer {
    let (w, h) = app.model().size;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| app.render(f)).unwrap();
    t.backend().buffer().clone()
}

/// Print the screen (shown by `cargo test -- --nocapture` when a test fails).
pub fn dump(app: &App) -> String {
    screen(app).join("\n")
}

/// Press a key.
pub fn press(app: &mut App, code: KeyCode) {
    app.handle(AppEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

/// Type text into the app (e.g. a filter).
pub fn type_str(app: &mut App, s: &str) {
    for c in s.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// Frame indexes (per connection) of the generated capture's two violations.
pub fn violation_frames(frames: usize) -> [usize; 2] {
    [10, frames.saturating_sub(10)]
}

/// Write an amqpeek JSONL capture of `conns` AMQP 1.0 connections taking turns frame by
/// frame, each with its headers, an open each way, then `frames` frames: empty ones, an `end`
/// on a channel never begun (a violation) at [`violation_frames`], and halfway a session begun
/// by the client and answered (the state changes there). Generated, never committed: a big
/// capture in a test.
pub fn write_whole_capture(path: &std::path::Path, conns: usize, frames: usize) {
    write_whole_capture_with(path, conns, frames, None)
}

/// As [`write_whole_capture`], and (`begin_every`) every so many frames, a session begun by
/// the client on a channel of its own (100, 101, ...): rows spread over the capture for a search.
pub fn write_whole_capture_with(
    path: &std::path::Path,
    conns: usize,
    frames: usize,
    begin_every: Option<usize>,
) {
    use base64::Engine;
    use std::io::Write;
    let ts = "2026-12-01T10:00:00.000000Z";
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for c in 1..=conns {
        writeln!(
            out,
            r#"{{"v":1,"ts":"{ts}","conn":{c},"event":"connect","client":"127.0.0.1:{}","upstream":"127.0.0.1:5672"}}"#,
            40000 + c
        )
        .unwrap();
    }
    let mut offsets = vec![[0usize; 2]; conns];
    let mut put = |conn: usize, kind: &str, d: usize, raw: &[u8]| {
        let dir = ["c2s", "s2c"][d];
        let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
        writeln!(
            out,
            r#"{{"v":1,"ts":"{ts}","conn":{},"event":"{kind}","dir":"{dir}","offset":{},"proto":"amqp-1.0","raw":"{b64}"}}"#,
            conn + 1,
            offsets[conn][d]
        )
        .unwrap();
        offsets[conn][d] += raw.len();
    };
    let open = amqp10::open("c1");
    for c in 0..conns {
        for d in 0..2 {
            put(c, "header", d, b"AMQP\x00\x01\x00\x00");
            put(c, "frame", d, &open);
        }
    }
    let bad = amqp10::frame(7, &amqp10::described(0x17, amqp10::list(&[])));
    let empty = amqp10::frame(0, &[]);
    let (begin, reply) = (amqp10::begin(1), amqp10::begin_reply(1, 1));
    let bad_at = violation_frames(frames);
    for i in 0..frames {
        let extra = begin_every
            .filter(|e| i % e == e / 2 && i != frames / 2 + 1)
            .map(|e| amqp10::begin(100 + (i / e) as u16));
        let (d, raw) = if bad_at.contains(&i) {
            (0, &bad)
        } else if i == frames / 2 {
            (0, &begin)
        } else if i == frames / 2 + 1 {
            (1, &reply)
        } else if let Some(b) = &extra {
            (0, b)
        } else {
            (i % 2, &empty)
        };
        for c in 0..conns {
            put(c, "frame", d, raw);
        }
    }
}

/// The capture time of frame `i` of [`write_link_capture`]: 10 µs apart.
pub fn link_capture_us(i: usize) -> i64 {
    i as i64 * 10
}

/// Write an amqpeek JSONL capture of one AMQP 1.0 connection with one link, `orders`, sent by
/// the client on a session both ends began: its attaches and a flow, then `frames` frames 10 µs
/// apart ([`link_capture_us`]), mostly empty, a transfer every 200th (delivery-id `i / 200`)
/// settled by the receiver's disposition 100 frames later; but delivery 0 is settled at frame
/// 50,050 and delivery 1 at frame `frames - 50`, far from their transfers. Generated, never
/// committed.
pub fn write_link_capture(path: &std::path::Path, frames: usize) {
    use base64::Engine;
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let ts = |us: i64| {
        format!(
            "2026-12-01T10:00:{:02}.{:06}Z",
            us / 1_000_000,
            us % 1_000_000
        )
    };
    writeln!(
        out,
        r#"{{"v":1,"ts":"{}","conn":1,"event":"connect","client":"127.0.0.1:40001","upstream":"127.0.0.1:5672"}}"#,
        ts(0)
    )
    .unwrap();
    let mut offsets = [0usize; 2];
    let mut put = |us: i64, kind: &str, d: usize, raw: &[u8]| {
        let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
        writeln!(
            out,
            r#"{{"v":1,"ts":"{}","conn":1,"event":"{kind}","dir":"{}","offset":{},"proto":"amqp-1.0","raw":"{b64}"}}"#,
            ts(us),
            ["c2s", "s2c"][d],
            offsets[d]
        )
        .unwrap();
        offsets[d] += raw.len();
    };
    for d in 0..2 {
        put(0, "header", d, amqp10::HEADER);
    }
    for (d, raw) in [
        (0, amqp10::open("c1")),
        (1, amqp10::open("broker")),
        (0, amqp10::begin(0)),
        (1, amqp10::begin_reply(0, 0)),
        (0, amqp10::attach(0, "orders", 0, false, "q")),
        (1, amqp10::attach(0, "orders", 0, true, "q")),
        (1, amqp10::flow(0, 0, 1_000_000)),
    ] {
        put(0, "frame", d, &raw);
    }
    let empty = amqp10::frame(0, &[]);
    for i in 0..frames {
        let k = (i / 200) as u32;
        let (d, raw) = match i % 200 {
            0 => (0, amqp10::transfer(0, 0, k, b"m")),
            100 if k >= 2 => (1, amqp10::disposition(0, true, k, k)),
            _ if i == 50_050 => (1, amqp10::disposition(0, true, 0, 0)),
            _ if i == frames - 50 => (1, amqp10::disposition(0, true, 1, 1)),
            _ => (i % 2, empty.clone()),
        };
        put(link_capture_us(i), "frame", d, &raw);
    }
}

/// Perform the app's window requests with `pager` as the event loop does, until the window
/// asked last has come; how many windows were asked for.
pub fn settle(app: &mut App, pager: &amqpeek::replay::pager::Pager) -> usize {
    let mut asked = 0;
    let start = std::time::Instant::now();
    loop {
        for e in app.take_effects() {
            if let amqpeek::tui::app::Effect::LoadWindow(r) = e {
                pager.request(r);
                asked += 1;
            }
        }
        if app.model().paging.loading.is_none() {
            return asked;
        }
        match pager.try_recv() {
            Some(w) => app.handle(AppEvent::Window(Box::new(w))),
            None => std::thread::sleep(std::time::Duration::from_millis(2)),
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "no window came"
        );
    }
}

/// Press a key, then perform the window requests it makes ([`settle`]); how many it made.
pub fn key(app: &mut App, pager: &amqpeek::replay::pager::Pager, code: KeyCode) -> usize {
    press(app, code);
    settle(app, pager)
}

/// Apply the filter `f` as the user types it.
pub fn set_filter(app: &mut App, f: &str) {
    press(app, KeyCode::Char('/'));
    type_str(app, f);
    press(app, KeyCode::Enter);
    assert_eq!(app.filter().source, f);
}

/// The frame list shows connection `nth` (from 1) only.
pub fn choose_conn(app: &mut App, nth: usize) {
    press(app, KeyCode::Char('c'));
    press(app, KeyCode::Home);
    for _ in 0..nth {
        press(app, KeyCode::Down);
    }
    press(app, KeyCode::Enter);
    assert_eq!(app.focus(), amqpeek::tui::Pane::Frames);
}
