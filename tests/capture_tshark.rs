//! Interop: real lapin (0-9-1) and fe2o3-amqp (1.0, SASL PLAIN) sessions against RabbitMQ,
//! recorded through a relay, run through the real `Inspector`, written by `PcapngSink`, and
//! dissected by tshark with no options: same frames in the same order per connection and
//! direction, clean TCP (no bad checksums, no analysis flags, nothing malformed), reassembled
//! bytes equal to what was relayed (secrets masked), and violations as packet comments.

mod capture_common;
mod capture_sessions;
mod secrets;
mod support;

use std::collections::BTreeMap;

use amqpeek::event::{Dir, Event, EventKind, Severity, Timestamp, Violation};
use capture_common::*;
use capture_sessions::{fe2o3_session, lapin_session};
use support::{Relay, broker_or_skip};

/// tshark's AMQP frames per (tcp stream, src port), in order: (frame type, code).
fn tshark_frames(file: &str, v091: bool) -> BTreeMap<(u32, u16), Vec<(u8, u32)>> {
    let fields: &[&str] = if v091 {
        &["amqp.type", "amqp.method.class", "amqp.method.method"]
    } else {
        &["amqp.type", "amqp.performative", "amqp.sasl.method"]
    };
    let mut args = vec![
        "-r",
        file,
        "-Y",
        "amqp",
        "-T",
        "fields",
        "-E",
        "separator=|",
    ];
    args.extend(["-e", "tcp.stream", "-e", "tcp.srcport"]);
    for f in fields {
        args.extend(["-e", f]);
    }
    let out = tshark(&args);
    let mut map: BTreeMap<(u32, u16), Vec<(u8, u32)>> = BTreeMap::new();
    let list = |s: &str| -> Vec<u32> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(|x| {
                let x = x.trim();
                x.strip_prefix("0x")
                    .map(|h| u32::from_str_radix(h, 16).unwrap())
                    .unwrap_or_else(|| x.parse().unwrap())
            })
            .collect()
    };
    for line in out.lines() {
        let cols: Vec<&str> = line.split('|').collect();
        let key = (cols[0].parse().unwrap(), cols[1].parse().unwrap());
        let types = list(cols[2]);
        let mut a = list(cols[3]).into_iter();
        let mut b = list(cols[4]).into_iter();
        let frames = map.entry(key).or_default();
        for t in types {
            let code = if v091 {
                if t == 1 {
                    (a.next().unwrap() << 16) | b.next().unwrap()
                } else {
                    0
                }
            } else if t == 0 {
                a.next().unwrap_or(0)
            } else {
                b.next().unwrap_or(0)
            };
            frames.push((t as u8, code));
        }
    }
    map
}

fn check_session(recs: &[capture_common::Recording], v091: bool, name: &str) {
    assert!(!recs.is_empty());
    let events = inspect(recs);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.pcapng"));
    write_pcapng(&events, &path);
    let file = path.to_str().unwrap();

    // Our own reader gets the same connections and bytes back.
    let back: Vec<amqpeek::capture::SourceEvent> =
        amqpeek::capture::open(&path, Default::default())
            .unwrap()
            .collect();
    for (i, rec) in recs.iter().enumerate() {
        let conn = i as u64 + 1;
        assert!(back.iter().any(|e| matches!(e,
            amqpeek::capture::SourceEvent::Connect { conn: c, client, server, .. }
                if *c == conn && *client == rec.client && *server == rec.upstream)));
        for d in [Dir::C2S, Dir::S2C] {
            let got = amqpeek::capture::conn_table::chunk_bytes(&back, conn, d);
            assert_eq!(
                &got[..],
                &data_bytes(&events, conn, d)[..],
                "{name} {d:?}: read back"
            );
        }
    }

    // TCP-level cleanliness, checksum validation on.
    let bad = tshark(&[
        "-r",
        file,
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
        "-Y",
        "ip.checksum.status == \"Bad\" || tcp.checksum.status == \"Bad\" || _ws.malformed || _ws.expert.severity >= warning || tcp.analysis.flags",
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "_ws.col.Info",
    ]);
    assert_eq!(bad.trim(), "", "{name}: packets tshark flags");

    for (i, rec) in recs.iter().enumerate() {
        let conn = i as u64 + 1;
        // Reassembled bytes equal the relayed bytes, except masked secrets.
        let follow = tshark(&["-r", file, "-q", "-z", &format!("follow,tcp,raw,{i}")]);
        let (mut c2s, mut s2c) = (String::new(), String::new());
        for line in follow.lines() {
            if line.starts_with('=') || line.contains(':') && !line.starts_with('\t') {
                continue;
            }
            let (target, hexs) = match line.strip_prefix('\t') {
                Some(h) => (&mut s2c, h),
                None => (&mut c2s, line),
            };
            if hexs.chars().all(|c| c.is_ascii_hexdigit()) {
                target.push_str(hexs);
            }
        }
        for (d, hexs) in [(Dir::C2S, c2s), (Dir::S2C, s2c)] {
            let got = hex::decode(hexs).unwrap();
            let relayed = rec.bytes(d);
            assert_eq!(
                got,
                data_bytes(&events, conn, d),
                "{name} {d:?}: pcap vs Data"
            );
            assert_eq!(got.len(), relayed.len(), "{name} {d:?}: length");
            // The inspector masks exactly the password, client to server only.
            match d {
                Dir::C2S => secrets::assert_exactly_password_masked(
                    &got,
                    &relayed,
                    "guest",
                    "guest",
                    &format!("{name} {d:?}"),
                ),
                Dir::S2C => assert!(got == relayed, "{name} {d:?}: nothing masked"),
            }
        }
    }

    // Same frames, same order, per connection and direction.
    let ts_frames = tshark_frames(file, v091);
    for (i, rec) in recs.iter().enumerate() {
        let conn = i as u64 + 1;
        for (d, port) in [
            (Dir::C2S, rec.client.port()),
            (Dir::S2C, rec.upstream.port()),
        ] {
            let stream = data_bytes(&events, conn, d);
            let ours = delimit(&stream, v091);
            assert!(ours.len() >= 5, "{name} {d:?}: a real session has frames");
            let theirs = ts_frames
                .get(&(i as u32, port))
                .cloned()
                .unwrap_or_default();
            let ours_tc: Vec<(u8, u32)> = ours.iter().map(|f| (f.ftype, f.code)).collect();
            assert_eq!(theirs, ours_tc, "{name} {d:?}: tshark frames vs ours");
            // And the inspector's frames (once the codecs decode) sit at the same offsets.
            let insp: Vec<(u64, usize, &'static str)> = events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Frame(f) if e.conn == conn && f.dir == d => {
                        Some((f.offset, f.raw.len(), f.frame.name()))
                    }
                    _ => None,
                })
                .collect();
            let want: Vec<(u64, usize)> = ours.iter().map(|f| (f.offset as u64, f.len)).collect();
            let got: Vec<(u64, usize)> = insp.iter().map(|f| (f.0, f.1)).collect();
            assert_eq!(got, want, "{name} {d:?}: inspector frames vs tshark's");
            assert!(insp.iter().all(|f| f.2 != "unknown"));
        }
    }

    // Every violation the inspector raised is a comment on some packet of its connection.
    let violations = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Violation(_)))
        .count();
    let comments = tshark(&[
        "-r",
        file,
        "-Y",
        "frame.comment",
        "-T",
        "fields",
        "-e",
        "frame.comment",
    ]);
    let n_comments: usize = comments
        .lines()
        .map(|l| l.split(',').filter(|c| c.contains("amqpeek")).count())
        .sum();
    assert_eq!(n_comments, violations, "{name}: one comment per violation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lapin_091_session_dissects_identically_in_tshark() {
    if !broker_or_skip().await || !require_tshark("lapin tshark") {
        return;
    }
    let relay = Relay::start().await;
    lapin_session(relay.port()).await;
    let recs = relay.finish(1, std::time::Duration::from_secs(10)).await;
    check_session(&recs, true, "lapin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fe2o3_10_sasl_session_dissects_identically_in_tshark() {
    if !broker_or_skip().await || !require_tshark("fe2o3 tshark") {
        return;
    }
    let relay = Relay::start().await;
    fe2o3_session(relay.port()).await;
    let recs = relay.finish(1, std::time::Duration::from_secs(10)).await;
    check_session(&recs, false, "fe2o3");
}

#[test]
fn violation_comment_lands_on_the_packet_holding_its_frame() {
    if !require_tshark("violation comment") {
        return;
    }
    let client = "10.9.8.7:50123".parse().unwrap();
    let upstream = "10.9.8.1:5672".parse().unwrap();
    let mut stream = b"AMQP\x00\x00\x09\x01".to_vec();
    // Two heartbeats, in separate Data events (separate packets).
    let hb = [8u8, 0, 0, 0, 0, 0, 0, 0xCE];
    let ev = |ts: i64, kind| Event {
        conn: 1,
        ts: Timestamp(1_764_417_600_000_000 + ts),
        kind,
    };
    let mut events = vec![ev(0, EventKind::Connect { client, upstream })];
    events.push(ev(
        1,
        EventKind::Data {
            dir: Dir::C2S,
            offset: 0,
            bytes: bytes::Bytes::copy_from_slice(&stream),
        },
    ));
    events.push(ev(
        2,
        EventKind::Violation(Violation {
            rule: &amqpeek::state::amqp091::rules::CONNECTION_PIPELINED,
            severity: Severity::Warning,
            spec: "AMQP 0-9-1 §4.2.7".into(),
            message: "second heartbeat flagged".into(),
            dir: Dir::C2S,
            offset: 16,
            frame: None,
        }),
    ));
    for (i, off) in [8u64, 16].iter().enumerate() {
        events.push(ev(
            3 + i as i64,
            EventKind::Data {
                dir: Dir::C2S,
                offset: *off,
                bytes: bytes::Bytes::copy_from_slice(&hb),
            },
        ));
        stream.extend_from_slice(&hb);
    }
    events.push(ev(
        9,
        EventKind::Close(amqpeek::event::CloseInfo {
            reason: "client closed".into(),
            bytes_c2s: stream.len() as u64,
            bytes_s2c: 0,
        }),
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.pcapng");
    write_pcapng(&events, &path);
    let out = tshark(&[
        "-r",
        path.to_str().unwrap(),
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-e",
        "tcp.seq",
        "-e",
        "tcp.len",
        "-e",
        "frame.comment",
    ]);
    let commented: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("amqp091.connection.pipelined-before-open-ok"))
        .collect();
    assert_eq!(commented.len(), 1, "{out}");
    // Relative seq 17 = stream offset 16: the packet carrying the second heartbeat.
    assert!(commented[0].starts_with("17|8|"), "{out}");
    assert!(commented[0].contains("AMQP 0-9-1 §4.2.7"));
}
