//! TCP endings read from the packets, crafted where no real peer is needed to show the
//! ordering: an RST after its sender's own FIN takes no byte (the FIN took the sequence
//! number before it), an RST that acknowledges the partner's FIN answers it, one sent before
//! the FIN arrived does not, and a second FIN acknowledging the first says who closed first.
//! tshark reads the same files as a control: it sees no lost segment where amqpeek sees no gap.

mod capture_common;
mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::event::{CloseReason, Dir};
use capture_common::Segment;

const HEADER: &[u8] = b"AMQP\x00\x00\x09\x01";
const HEARTBEAT: &[u8] = &[8, 0, 0, 0, 0, 0, 0, 0xce];
const CLIENT_ISN: u32 = 1000;
const SERVER_ISN: u32 = 5000;

/// One crafted packet: from the client?, sequence number, acknowledgement (if any), FIN, RST,
/// payload.
#[derive(Clone, Copy)]
struct P(bool, u32, Option<u32>, bool, bool, &'static [u8]);

/// A classic pcap of a handshake, the client's header and the server's heartbeat, then `tail`.
fn write(tail: &[P], file: &Path) {
    let c: SocketAddr = "10.9.0.1:40000".parse().unwrap();
    let s: SocketAddr = "10.9.0.2:5672".parse().unwrap();
    let (c1, s1) = (CLIENT_ISN + 1, SERVER_ISN + 1);
    let head = [
        P(true, CLIENT_ISN, None, false, false, b""),
        P(false, SERVER_ISN, Some(c1), false, false, b""),
        P(true, c1, Some(s1), false, false, HEADER),
        P(false, s1, Some(c1 + 8), false, false, HEARTBEAT),
    ];
    let segments: Vec<Segment> = head
        .iter()
        .chain(tail)
        .enumerate()
        .map(|(i, &P(from_client, seq, ack, fin, rst, payload))| {
            let (src, dst) = if from_client { (c, s) } else { (s, c) };
            Segment {
                ts_us: 1_764_417_600_000_000 + i as u64 * 1000,
                src,
                dst,
                seq,
                ack,
                syn: i < 2,
                fin,
                rst,
                payload,
            }
        })
        .collect();
    capture_common::write_pcap(&segments, file);
}

/// The close reason and the number of gaps amqpeek reads from `file`.
fn read(file: &Path) -> (CloseReason, usize) {
    let evs: Vec<SourceEvent> = capture::open(file, CaptureOptions::default())
        .unwrap()
        .collect();
    let gaps = evs
        .iter()
        .filter(|e| matches!(e, SourceEvent::Gap { .. }))
        .count();
    let reason = evs
        .iter()
        .find_map(|e| match e {
            SourceEvent::Close { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .expect("a close");
    (reason, gaps)
}

/// What `file` ends with, as amqpeek reads it.
fn ending(tail: &[P]) -> CloseReason {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.pcap");
    write(tail, &file);
    let (reason, gaps) = read(&file);
    assert_eq!(gaps, 0, "{reason}");
    reason
}

const C_END: u32 = CLIENT_ISN + 1 + 8;
const S_END: u32 = SERVER_ISN + 1 + 8;

#[test]
fn a_reset_after_its_senders_fin_is_no_lost_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fin-rst.pcap");
    // `[F.] seq 9` then `[R.] seq 10` from the client: correct TCP.
    write(
        &[
            P(true, C_END, Some(S_END), true, false, b""),
            P(true, C_END + 1, Some(S_END), false, true, b""),
        ],
        &file,
    );
    let (reason, gaps) = read(&file);
    assert_eq!(gaps, 0, "no gap event");
    assert_eq!(reason, "FIN by client, then reset by client");
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["stats", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["gaps"], 0, "stats counts no gap: {stats}");
    assert_eq!(stats["frames"], 1, "{stats}");
    if capture_common::require_tshark("a_reset_after_its_senders_fin_is_no_lost_byte") {
        let lost = capture_common::tshark(&[
            "-r",
            file.to_str().unwrap(),
            "-Y",
            "tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment",
        ]);
        assert_eq!(lost, "", "tshark sees no lost segment either");
    }
}

#[test]
fn a_reset_answering_the_partners_fin_names_the_fin_first() {
    // The server's RST acknowledges the client's FIN: the client left first.
    let answered = ending(&[
        P(true, C_END, Some(S_END), true, false, b""),
        P(false, S_END, Some(C_END + 1), false, true, b""),
    ]);
    assert_eq!(answered, "FIN by client, then reset by server");
    // An RST with no acknowledgement after the FIN: the capture's order.
    let bare = ending(&[
        P(true, C_END, Some(S_END), true, false, b""),
        P(false, S_END, None, false, true, b""),
    ]);
    assert_eq!(bare, "FIN by client, then reset by server");
    // Sent before the FIN arrived (it acknowledges less): the reset came first.
    let crossed = ending(&[
        P(true, C_END, Some(S_END), true, false, b""),
        P(false, S_END, Some(C_END), false, true, b""),
    ]);
    assert_eq!(crossed, "reset by server");
    // A reset alone.
    let alone = ending(&[P(false, S_END, Some(C_END), false, true, b"")]);
    assert_eq!(
        alone,
        CloseReason::Reset {
            by: Some(Dir::S2C),
            after_fin: None
        }
    );
}

#[test]
fn a_fin_acknowledging_the_other_says_who_closed_first() {
    let server_first = ending(&[
        P(false, S_END, Some(C_END), true, false, b""),
        P(true, C_END, Some(S_END + 1), true, false, b""),
    ]);
    assert_eq!(server_first, "FIN both ways, server first");
    let crossed = ending(&[
        P(false, S_END, Some(C_END), true, false, b""),
        P(true, C_END, Some(S_END), true, false, b""),
    ]);
    assert_eq!(crossed, "FIN both ways");
    // Half-closed, data after it, then the other side's FIN answering.
    let half = ending(&[
        P(true, C_END, Some(S_END), true, false, b""),
        P(false, S_END, Some(C_END + 1), false, false, HEARTBEAT),
        P(false, S_END + 8, Some(C_END + 1), true, false, b""),
    ]);
    assert_eq!(half, "FIN both ways, client first");
}
