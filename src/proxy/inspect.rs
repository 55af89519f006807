//! The inspection side of the proxy: one thread that owns an [`Inspector`] per connection and
//! the sinks, fed by the relays through one queue in which each connection has a bounded budget
//! (see `queue.rs`).
//!
//! It takes messages in batches, hands every event to every sink, and flushes the sinks once
//! per batch. It must never be on the forwarding path: the relay writes a chunk to the peer
//! before queueing it here.

use crate::hash::{HashMap, HashSet};
use std::io;
use std::net::SocketAddr;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::BoxSink;
use crate::event::{ConnId, Dir, Event, EventKind, Timestamp};
use crate::pipeline::{InspectOptions, Inspector};

/// What a relay tells the inspection side, in order per connection.
#[derive(Debug)]
pub enum InspectMsg {
    /// A client connected and an upstream connection was attempted.
    Open {
        /// Connection.
        conn: ConnId,
        /// When.
        ts: Timestamp,
        /// Client address.
        client: SocketAddr,
        /// Upstream address.
        upstream: SocketAddr,
    },
    /// Bytes relayed (already written to the peer).
    Chunk {
        /// Connection.
        conn: ConnId,
        /// Direction.
        dir: Dir,
        /// When they were read.
        ts: Timestamp,
        /// The bytes, shared with the relay (no copy).
        bytes: Bytes,
        /// This chunk's share of its connection's queue budget, given back when the chunk has
        /// been inspected (`None` for the few bytes read while setting TLS up).
        permit: Option<super::queue::Permit>,
    },
    /// AMQP's TLS upgrade header (`AMQP 2 1 0 0`) was relayed in `dir`; what follows on this
    /// direction is the plaintext inside TLS, starting with a protocol header again.
    TlsHeader {
        /// Connection.
        conn: ConnId,
        /// Direction.
        dir: Dir,
        /// When.
        ts: Timestamp,
        /// The header's bytes.
        bytes: Bytes,
    },
    /// Something about the connection worth a warning (e.g. an unverified upstream
    /// certificate), shown as a violation event.
    Notice {
        /// Connection.
        conn: ConnId,
        /// When.
        ts: Timestamp,
        /// What.
        violation: crate::event::Violation,
    },
    /// The sender of `dir` closed its side (FIN, or TLS close_notify), after every chunk of
    /// `dir`; the relay passed it on and the other direction may go on (a half-close).
    Fin {
        /// Connection.
        conn: ConnId,
        /// Direction that ended.
        dir: Dir,
        /// When the end was read.
        ts: Timestamp,
    },
    /// The connection is over.
    Close {
        /// Connection.
        conn: ConnId,
        /// When.
        ts: Timestamp,
        /// Why, in plain words.
        reason: String,
    },
}

/// Most messages taken off the queue before the sinks are flushed.
const MAX_BATCH: usize = 512;

/// How long the inspection thread sleeps between polls while traffic flows (the most a trace
/// line or capture record lags behind the relay, plus processing).
const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

/// Empty polls before the inspection thread parks until the next message.
const IDLE_POLLS: u32 = 200;

/// Whether the inspection is behind the relay: a message waited [`MAX_LAG`] or more, or an
/// eighth of the queue (at least 8 messages) was waiting. Once behind, it stays so for
/// at least [`SKIM_AT_LEAST`] and until messages wait less than a quarter of that lag again.
/// The hold keeps a flood from being decoded in bursts between skims: decoding what a live
/// view cannot show anyway would only take CPU from the relay. A burst of messages that is
/// handled at once (many connections speaking together) is not lag.
#[derive(Debug)]
struct Backlog {
    capacity: usize,
    behind_until: Option<std::time::Instant>,
}

/// How long a message may wait in the queue before the inspection counts as behind.
const MAX_LAG: std::time::Duration = std::time::Duration::from_millis(10);

/// Shortest stretch of skimming once the inspection fell behind.
const SKIM_AT_LEAST: std::time::Duration = std::time::Duration::from_millis(250);

impl Backlog {
    /// `lag`: how long the message at hand waited; `queued`: how many messages were queued from
    /// it on.
    fn behind(&mut self, lag: std::time::Duration, queued: usize, now: std::time::Instant) -> bool {
        if lag >= MAX_LAG || queued >= (self.capacity / 8).max(8) {
            self.behind_until = Some(now + SKIM_AT_LEAST);
        } else if lag < MAX_LAG / 4 && self.behind_until.is_some_and(|t| now >= t) {
            self.behind_until = None;
        }
        self.behind_until.is_some()
    }
}

impl InspectMsg {
    /// When the relay queued it (near enough: when its bytes were read).
    fn ts(&self) -> Timestamp {
        match self {
            InspectMsg::Open { ts, .. }
            | InspectMsg::Chunk { ts, .. }
            | InspectMsg::TlsHeader { ts, .. }
            | InspectMsg::Notice { ts, .. }
            | InspectMsg::Fin { ts, .. }
            | InspectMsg::Close { ts, .. } => *ts,
        }
    }
}

/// Run until every sender is gone; then flush and drop the sinks (closing their files).
/// Returns what made sinks fail (a capture that could not be written: its error names it),
/// each reported once on stderr when it happened; the relay went on without that sink.
///
/// `capacity` is the queue's. When no sink needs every frame (the TUI alone) and the
/// inspection lags (see [`Backlog`]), chunks are skimmed ([`Inspector::skim`]) until it has
/// caught up, so the relay never waits for decoding; otherwise every chunk is decoded and the
/// full queue makes the relay wait (lossless).
pub(crate) fn run(
    mut rx: super::queue::InspectRx,
    capacity: usize,
    mut sinks: Vec<BoxSink>,
    opts: InspectOptions,
) -> io::Result<Vec<String>> {
    let mut failed = Failures::default();
    let may_skim = sinks.iter().all(|s| !s.needs_every_frame());
    let mut backlog = Backlog {
        capacity,
        behind_until: None,
    };
    let mut conns: HashMap<ConnId, Inspector> = HashMap::default();
    let mut poisoned: HashSet<ConnId> = HashSet::default();
    let mut events = Vec::new();
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut idle_polls = 0u32;
    // Connections that got bytes since the last flush.
    let mut touched: Vec<ConnId> = Vec::new();
    loop {
        // While traffic flows, poll the queue on a short timer instead of parking: a parked
        // receiver makes every relay `send` pay a thread wake-up (a syscall and a context
        // switch per chunk). After a while without traffic, park until the next message.
        match rx.try_recv() {
            Ok(m) => {
                idle_polls = 0;
                batch.push(m);
            }
            Err(mpsc::error::TryRecvError::Empty) if idle_polls < IDLE_POLLS => {
                idle_polls += 1;
                std::thread::sleep(POLL_INTERVAL);
                continue;
            }
            Err(mpsc::error::TryRecvError::Empty) => match rx.blocking_recv() {
                Some(m) => {
                    idle_polls = 0;
                    batch.push(m);
                }
                None => break,
            },
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        // Whether to skim is decided per chunk, from how long it waited and how many
        // messages were queued behind it when the batch was taken.
        let waiting = rx.len();
        let taken = batch.len();
        for (i, msg) in batch.drain(..).enumerate() {
            let skim = may_skim && matches!(msg, InspectMsg::Chunk { .. }) && {
                let lag = Timestamp::now().0.saturating_sub(msg.ts().0).max(0) as u64;
                backlog.behind(
                    std::time::Duration::from_micros(lag),
                    taken - i + waiting,
                    std::time::Instant::now(),
                )
            };
            match msg {
                InspectMsg::Open {
                    conn,
                    ts,
                    client,
                    upstream,
                } => {
                    conns.insert(conn, Inspector::new(conn, opts.clone()));
                    events.push(Event {
                        conn,
                        ts,
                        kind: EventKind::Connect { client, upstream },
                    });
                }
                InspectMsg::Chunk {
                    conn,
                    dir,
                    ts,
                    bytes,
                    permit: _inspected,
                } => {
                    if poisoned.contains(&conn) {
                        continue;
                    }
                    if opts.emit_data {
                        touched.push(conn);
                    }
                    let insp = conns
                        .entry(conn)
                        .or_insert_with(|| Inspector::new(conn, opts.clone()));
                    let at = insp.bytes_seen(dir);
                    let len = bytes.len() as u64;
                    let mut out = Vec::new();
                    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        if skim {
                            insp.skim(dir, ts, bytes, &mut out)
                        } else {
                            insp.chunk(dir, ts, bytes, &mut out)
                        }
                    }));
                    match ok {
                        Ok(()) => events.append(&mut out),
                        Err(_) => {
                            // A decoder bug must not take the other connections' inspection
                            // down with it; this connection is no longer inspected.
                            tracing::error!(
                                "#{conn}: the inspector panicked; not inspecting this connection any more"
                            );
                            conns.remove(&conn);
                            poisoned.insert(conn);
                            events.push(Event {
                                conn,
                                ts,
                                kind: EventKind::Gap {
                                    dir,
                                    offset: at,
                                    len,
                                    reason: "inspector failed; the rest of this connection is not inspected".into(),
                                },
                            });
                        }
                    }
                }
                InspectMsg::TlsHeader {
                    conn,
                    dir,
                    ts,
                    bytes,
                } => {
                    if !poisoned.contains(&conn) {
                        conns
                            .entry(conn)
                            .or_insert_with(|| Inspector::new(conn, opts.clone()))
                            .tls_header(dir, ts, bytes, &mut events);
                    }
                }
                InspectMsg::Notice {
                    conn,
                    ts,
                    violation,
                } => events.push(Event {
                    conn,
                    ts,
                    kind: EventKind::Violation(violation),
                }),
                InspectMsg::Fin { conn, dir, ts } => {
                    if let Some(insp) = conns.get_mut(&conn) {
                        insp.fin(dir, ts, &mut events);
                    }
                }
                InspectMsg::Close { conn, ts, reason } => {
                    poisoned.remove(&conn);
                    let mut insp = conns
                        .remove(&conn)
                        .unwrap_or_else(|| Inspector::new(conn, opts.clone()));
                    insp.close(ts, reason, &mut events);
                }
            }
            deliver(&mut sinks, &mut events, &mut failed);
        }
        // The batch is done: what it changed is shown as of its last frame.
        for insp in conns.values_mut() {
            insp.publish_state(insp.latest_ts(), &mut events);
        }
        // The bytes of incomplete frames reach the captures too before they are flushed, so
        // a capture holds every relayed byte however the proxy ends (kill -9 included).
        touched.sort_unstable();
        touched.dedup();
        let now = Timestamp::now();
        for conn in touched.drain(..) {
            if let Some(insp) = conns.get_mut(&conn) {
                insp.flush_data(now, &mut events);
            }
        }
        deliver(&mut sinks, &mut events, &mut failed);
        flush(&mut sinks, &mut failed);
    }
    // Every relay is gone. Connections still open (cut at shutdown) get their close event.
    let ts = Timestamp::now();
    let mut open: Vec<_> = conns.into_iter().collect();
    open.sort_by_key(|(c, _)| *c);
    for (_, mut insp) in open {
        insp.close(ts, "proxy stopped".into(), &mut events);
        deliver(&mut sinks, &mut events, &mut failed);
    }
    flush(&mut sinks, &mut failed);
    Ok(failed.0)
}

/// Why sinks were dropped.
#[derive(Debug, Default)]
struct Failures(Vec<String>);

impl Failures {
    /// Whether the sink that returned `e` stays (never, but for a reader of stdout gone away:
    /// `| head`, a closed Wireshark, which is the reader's choice, not a failure).
    fn keep(&mut self, e: io::Error) -> bool {
        if e.kind() != io::ErrorKind::BrokenPipe {
            let what = format!("{e}: this capture is incomplete (the relay went on)");
            tracing::error!("{what}");
            self.0.push(what);
        }
        false
    }
}

fn deliver(sinks: &mut Vec<BoxSink>, events: &mut Vec<Event>, failed: &mut Failures) {
    for ev in events.drain(..) {
        sinks.retain_mut(|s| s.event(&ev).map_or_else(|e| failed.keep(e), |()| true));
    }
}

fn flush(sinks: &mut Vec<BoxSink>, failed: &mut Failures) {
    sinks.retain_mut(|s| s.flush().map_or_else(|e| failed.keep(e), |()| true));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn behind_from_a_lag_or_an_eighth_of_the_queue_for_at_least_the_hold() {
        let mut b = Backlog {
            capacity: 256,
            behind_until: None,
        };
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert!(
            !b.behind(ms(1), 31, t0),
            "a burst handled at once is not lag"
        );
        assert!(b.behind(MAX_LAG, 1, t0), "waited too long: behind");
        assert!(b.behind(ms(0), 1, t0 + ms(50)), "held");
        assert!(
            b.behind(MAX_LAG / 2, 1, t0 + SKIM_AT_LEAST),
            "still lagging"
        );
        assert!(
            !b.behind(ms(1), 1, t0 + SKIM_AT_LEAST),
            "caught up after the hold"
        );
        let t1 = t0 + SKIM_AT_LEAST;
        assert!(
            b.behind(ms(0), 32, t1),
            "an eighth of the queue waiting: behind"
        );
        assert!(b.behind(ms(0), 0, t1 + SKIM_AT_LEAST / 2), "held again");
    }

    /// Keeps every event it is given.
    struct Keep(std::sync::Arc<std::sync::Mutex<Vec<Event>>>);

    impl crate::pipeline::Sink for Keep {
        fn event(&mut self, ev: &Event) -> io::Result<()> {
            self.0.lock().unwrap().push(ev.clone());
            Ok(())
        }
    }

    #[test]
    fn the_end_of_a_batch_publishes_the_state_after_its_last_frame() {
        let t = |ms: i64| Timestamp(1_764_417_600_000_000 + ms * 1000);
        // AMQP 1.0: both headers and opens, then the client's begin 1 ms after the server's
        // open, too soon for the time throttle and without a new connection state name.
        let open = hex::decode("000000110200000000531 0c00401a10163".replace(' ', "")).unwrap();
        let begin =
            hex::decode("0000001a0200000000531 1c00d0440437000000064 7000000064".replace(' ', ""))
                .unwrap();
        let header = b"AMQP\x00\x01\x00\x00".to_vec();
        let (tx, rx) = super::super::queue::channel();
        tx.send(InspectMsg::Open {
            conn: 1,
            ts: t(0),
            client: "127.0.0.1:40000".parse().unwrap(),
            upstream: "127.0.0.1:5672".parse().unwrap(),
        })
        .unwrap();
        let chunks = [
            (Dir::C2S, header.clone()),
            (Dir::S2C, header),
            (Dir::C2S, open.clone()),
            (Dir::S2C, open),
            (Dir::C2S, begin),
        ];
        for (i, (dir, bytes)) in chunks.into_iter().enumerate() {
            tx.send(InspectMsg::Chunk {
                conn: 1,
                dir,
                ts: t(1 + i as i64),
                bytes: Bytes::from(bytes),
                permit: None,
            })
            .unwrap();
        }
        drop(tx);
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sinks: Vec<BoxSink> = vec![Box::new(Keep(events.clone()))];
        run(rx, 64, sinks, InspectOptions::default()).unwrap();
        let events = events.lock().unwrap();
        assert!(
            !events
                .iter()
                .any(|e| matches!(e.kind, EventKind::Violation(_))),
            "a clean conversation"
        );
        let sessions = |s: &crate::state::Snapshot| match &s.detail {
            crate::state::snapshot::Detail::Amqp10(a) => a.sessions.len(),
            _ => 0,
        };
        // The state with the begin's session, as of the begin, before the proxy stopped.
        let with_session: Vec<(Timestamp, usize)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::State(s) if sessions(s) == 1 => Some((e.ts, sessions(s))),
                _ => None,
            })
            .collect();
        assert_eq!(with_session, vec![(t(5), 1)]);
    }
}
