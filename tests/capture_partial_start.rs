//! One direction captured from its start, the other not: a foreign capture (no SYN) of the
//! shipped fe2o3-amqp session through RabbitMQ in which the server's stream starts with its
//! AMQP protocol header, but the client's first captured bytes are its first transfer (its
//! header, open, begin and attach went by before the capture started). What the client did
//! before its first captured byte is unknown: nothing the server sends may be judged against a
//! client that sent nothing (a begin answering a begin never seen, credit never granted), and
//! every finding must be one the whole capture gives too.

mod capture_common;
mod support;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::event::Dir;
use capture_common::Segment;

const ISN: [u32; 2] = [70_000, 900_000];

/// `check`'s findings of `file` as (rule, direction).
fn findings(file: &Path) -> BTreeSet<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["check", "--format", "json", "--fail-on", "info"])
        .arg(file)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {:?}", file.display(), out));
    assert_eq!(v["connections"], 1, "{}: {v}", file.display());
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["dir"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Each chunk of the shipped capture: direction, capture time (µs), stream offset, bytes.
fn chunks() -> Vec<(Dir, u64, u64, Vec<u8>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/amqp10-fe2o3.pcapng");
    let mut at = [0u64; 2];
    capture::open(&path, CaptureOptions::default())
        .unwrap()
        .filter_map(|e| match e {
            SourceEvent::Chunk(c) => {
                let o = at[c.dir.index()];
                at[c.dir.index()] += c.bytes.len() as u64;
                Some((c.dir, c.ts.0 as u64, o, c.bytes.to_vec()))
            }
            _ => None,
        })
        .collect()
}

/// A foreign pcap of `all` with the server's chunks from index `server_from` and the client's
/// from `client_from` on (what each sent before is missing), no SYN, FINs at the end.
fn cut_capture(
    all: &[(Dir, u64, u64, Vec<u8>)],
    server_from: usize,
    client_from: usize,
    path: &Path,
) {
    let client: SocketAddr = "10.7.0.1:45716".parse().unwrap();
    let server: SocketAddr = "10.7.0.2:5672".parse().unwrap();
    let ends = |dir: Dir| match dir {
        Dir::C2S => (client, server),
        Dir::S2C => (server, client),
    };
    // Each direction acknowledges what the other sent before (captured or not).
    let mut sent = [0u64; 2];
    let mut segments = Vec::new();
    for (i, (dir, ts, offset, bytes)) in all.iter().enumerate() {
        let d = dir.index();
        let from = if *dir == Dir::C2S {
            client_from
        } else {
            server_from
        };
        let (src, dst) = ends(*dir);
        if i >= from {
            segments.push(Segment {
                ts_us: *ts,
                src,
                dst,
                seq: ISN[d].wrapping_add(*offset as u32),
                ack: Some(ISN[1 - d].wrapping_add(sent[1 - d] as u32)),
                syn: false,
                fin: false,
                rst: false,
                payload: bytes,
            });
        }
        sent[d] = offset + bytes.len() as u64;
    }
    let last = all.last().unwrap().1;
    for (k, dir) in [Dir::C2S, Dir::S2C].into_iter().enumerate() {
        let d = dir.index();
        let (src, dst) = ends(dir);
        segments.push(Segment {
            ts_us: last + 100 + k as u64,
            src,
            dst,
            seq: ISN[d].wrapping_add(sent[d] as u32),
            ack: Some(ISN[1 - d].wrapping_add(sent[1 - d] as u32 + k as u32)),
            syn: false,
            fin: true,
            rst: false,
            payload: b"",
        });
    }
    capture_common::write_pcap(&segments, path);
}

#[test]
fn a_direction_whose_start_was_not_captured_is_not_judged_as_silent() {
    let all = chunks();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/amqp10-fe2o3.pcapng");
    let whole = findings(&shipped);
    // The server's stream from its AMQP header; the client's from each of its chunks after
    // it (the first transfer among them: its open, begin and attach went by uncaptured).
    let server_from = all
        .iter()
        .position(|c| c.0 == Dir::S2C && c.3.starts_with(b"AMQP\x00\x01\x00\x00"))
        .unwrap();
    let first_transfer = all
        .iter()
        .position(|c| c.0 == Dir::C2S && c.3.get(8..11) == Some(&[0x00, 0x53, 0x14][..]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cuts = 0;
    for client_from in (server_from + 1..all.len()).filter(|&i| all[i].0 == Dir::C2S) {
        let cut = dir.path().join(format!("cut-{client_from}.pcap"));
        cut_capture(&all, server_from, client_from, &cut);
        let got = findings(&cut);
        let invented: Vec<_> = got.difference(&whole).collect();
        assert!(
            invented.is_empty(),
            "client from chunk {client_from} (first transfer: {first_transfer}): findings the \
             whole capture does not give: {invented:?} (whole: {whole:?})"
        );
        cuts += 1;
    }
    assert!(cuts > 10, "{cuts} cuts");
}
