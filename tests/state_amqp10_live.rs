//! Real traffic, zero false reports: fe2o3-amqp (SASL PLAIN guest/guest) talks to RabbitMQ
//! through a recording TCP relay that keeps the order and time of every chunk in both
//! directions; the recording is replayed through `Inspector`, and the AMQP 1.0 state tracker
//! must report nothing except the spec breaches we determined RabbitMQ really commits
//! (listed in `KNOWN_BROKER_BREACHES`, each allowed only from the server; those every run
//! commits, `DETERMINISTIC_BROKER_BREACHES`, are asserted to be reported). Also checks the
//! snapshot's documented keys.
//!
//! Without a broker: FAILS when env `CI` is set, otherwise skips with a note.

mod support;

use std::time::Duration;

use amqpeek::event::{Dir, EventKind, Timestamp, Violation};
use amqpeek::pipeline::{InspectOptions, Inspector};
use bytes::Bytes;
use fe2o3_amqp::link::receiver::CreditMode;
use fe2o3_amqp::types::definitions::{ReceiverSettleMode, SenderSettleMode};
use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::primitives::{Binary, Value};
use fe2o3_amqp::{Connection, Receiver, Sender, Session};
use support::{Chunk, Relay, broker_or_skip};

/// Rules RabbitMQ 3.10 really breaks in this conversation, all from the server:
/// - `transfer-without-credit`: after fe2o3's flows (delivery-count 2, link-credit 4) then
///   (delivery-count 4, link-credit 4), RabbitMQ's own flow says delivery-count 4,
///   link-credit 4, and it then sends 6 transfers (delivery-count 4 -> 10, limit 8): its classic
///   queue adds up credit grants instead of applying §2.6.7's formula.
/// - `drain-not-honoured`: on fe2o3's drain RabbitMQ 3.10 crashes internally
///   (`function_clause` in `rabbit_classic_queue:handle_event({send_drained, ...})`) and ends
///   the session with amqp:internal-error instead of advancing delivery-count.
/// - `detach-not-closed`: RabbitMQ answers a closing detach with a detach without closed=true.
/// - `receiver-delivery-count-missing`: RabbitMQ's receiver flows (on the links fe2o3 sends on)
///   omit delivery-count, which §2.7.4 says "MUST be set to the last known value of the
///   corresponding sending endpoint" once the receiver has seen the sender's attach.
const KNOWN_BROKER_BREACHES: &[&str] = &[
    "amqp10.link.transfer-without-credit",
    "amqp10.link.drain-not-honoured",
    "amqp10.link.detach-not-closed",
    "amqp10.flow.receiver-delivery-count-missing",
];

/// The breaches above that RabbitMQ 3.10 commits in every run of this conversation (the drain
/// crash depends on timing inside the broker): a tracker that stops seeing them is broken.
const DETERMINISTIC_BROKER_BREACHES: &[&str] = &[
    "amqp10.link.transfer-without-credit",
    "amqp10.link.detach-not-closed",
    "amqp10.flow.receiver-delivery-count-missing",
];

/// fe2o3's own breach, seen once under load (1 run in many): an auto-credit flow of its receiver
/// saying `next-incoming-id=8 ... delivery-count=10`, i.e. its link counting two deliveries
/// more than its own session had received (and than RabbitMQ had sent). In this conversation
/// the server's transfer-ids start at 0, initial-delivery-count is 0 and the auto receiver is
/// the only receiving link until then, so a consistent receiver's delivery-count can never
/// exceed its flow's next-incoming-id. Only such a self-contradicting flow is excused.
fn fe2o3_flow_ahead_of_its_own_session(v: &Violation) -> bool {
    let field = |name: &str| -> Option<u64> {
        let frame = v.frame.as_deref()?;
        let at = frame.find(&format!("{name}="))? + name.len() + 1;
        let digits: String = frame[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    v.rule.id == "amqp10.flow.receiver-delivery-count-ahead"
        && v.dir == Dir::C2S
        && matches!(
            (field("next-incoming-id"), field("delivery-count")),
            (Some(n), Some(dc)) if dc > n
        )
}

/// Replay the recording through an inspector: (violations, frame names, snapshot).
fn replay(rec: &[Chunk]) -> (Vec<Violation>, Vec<String>, serde_json::Value) {
    let mut insp = Inspector::new(1, InspectOptions::default());
    let mut out = Vec::new();
    for (dir, ts, bytes) in rec {
        insp.chunk(*dir, *ts, Bytes::copy_from_slice(bytes), &mut out);
    }
    let snapshot = serde_json::to_value(insp.tracker().snapshot()).expect("a snapshot serialises");
    let end = rec.last().map_or(Timestamp(0), |r| r.1);
    insp.close(end, "test".into(), &mut out);
    let mut v = Vec::new();
    let mut names = Vec::new();
    for e in out {
        match e.kind {
            EventKind::Violation(x) => v.push(x),
            EventKind::Frame(f) => {
                if std::env::var_os("AMQPEEK_DUMP").is_some()
                    && let amqpeek::protocol::AnyFrame::Amqp10(x) = &f.frame
                {
                    eprintln!(
                        "{} {} @{} {}",
                        e.ts.0,
                        f.dir.as_str(),
                        f.offset,
                        x.summary()
                    );
                }
                names.push(format!("{} {}", f.dir.as_str(), f.frame.name()))
            }
            _ => {}
        }
    }
    (v, names, snapshot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fe2o3_and_rabbitmq_produce_no_false_reports() {
    if !broker_or_skip().await {
        return;
    }
    let relay = Relay::start().await;
    let port = relay.port();
    let pid = std::process::id();
    let q1 = format!("/queue/amqpeek-state10-a-{pid}");
    let q2 = format!("/queue/amqpeek-state10-b-{pid}");
    let url = format!("amqp://guest:guest@127.0.0.1:{port}");
    let mut connection = Connection::open("amqpeek-state10", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut connection).await.unwrap();

    // An unsettled sender (every delivery gets an outcome) and a pre-settled one.
    let mut unsettled = Sender::builder()
        .name("amqpeek-unsettled")
        .target(q1.as_str())
        .sender_settle_mode(SenderSettleMode::Unsettled)
        .attach(&mut session)
        .await
        .unwrap();
    let mut settled = Sender::builder()
        .name("amqpeek-settled")
        .target(q2.as_str())
        .sender_settle_mode(SenderSettleMode::Settled)
        .attach(&mut session)
        .await
        .unwrap();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    for i in 0..20u32 {
        let body = if i == 5 {
            big.clone()
        } else {
            format!("m{i}").into_bytes()
        };
        let msg = Message::builder().data(Binary::from(body)).build();
        let outcome = unsettled.send(msg).await.unwrap();
        assert!(outcome.is_accepted(), "{outcome:?}");
        let msg = Message::builder()
            .data(Binary::from(format!("s{i}").into_bytes()))
            .build();
        settled.send(msg).await.unwrap();
    }

    // A receiver with automatic credit (small window, so credit is re-granted several times)
    // that accepts, releases and rejects; and one with manual credit and a drain.
    let mut r1 = Receiver::builder()
        .name("amqpeek-auto")
        .source(q1.as_str())
        .receiver_settle_mode(ReceiverSettleMode::First)
        .credit_mode(CreditMode::Auto(4))
        .attach(&mut session)
        .await
        .unwrap();
    let mut accepted = 0;
    let mut released = false;
    while accepted < 20 {
        let d = tokio::time::timeout(Duration::from_secs(10), r1.recv::<Body<Value>>())
            .await
            .expect("receive in time")
            .unwrap();
        if accepted == 3 && !released {
            // Released once; it comes back.
            r1.release(&d).await.unwrap();
            released = true;
        } else {
            r1.accept(&d).await.unwrap();
            accepted += 1;
        }
    }
    let mut r2 = Receiver::builder()
        .name("amqpeek-manual")
        .source(q2.as_str())
        .credit_mode(CreditMode::Manual)
        .attach(&mut session)
        .await
        .unwrap();
    r2.set_credit(10).await.unwrap();
    for _ in 0..10 {
        let d = tokio::time::timeout(Duration::from_secs(10), r2.recv::<Body<Value>>())
            .await
            .expect("receive in time")
            .unwrap();
        r2.accept(&d).await.unwrap();
    }
    r2.set_credit(15).await.unwrap();
    for _ in 0..10 {
        let d = tokio::time::timeout(Duration::from_secs(10), r2.recv::<Body<Value>>())
            .await
            .expect("receive in time")
            .unwrap();
        r2.accept(&d).await.unwrap();
    }
    // 5 credits left, queue empty: drain them. RabbitMQ 3.10 crashes the session on a drain
    // (see KNOWN_BROKER_BREACHES), after which fe2o3's teardown has been seen to spin: the
    // drain is exercised only on request (AMQPEEK_LIVE_DRAIN=1), so the suite stays reliable.
    if std::env::var_os("AMQPEEK_LIVE_DRAIN").is_some() {
        let _ = tokio::time::timeout(Duration::from_secs(5), r2.drain()).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // A second session, so channel pairing is exercised beyond channel 0.
    let mut session2 = Session::begin(&mut connection).await.unwrap();
    let mut s3 = Sender::attach(&mut session2, "amqpeek-s2", q1.as_str())
        .await
        .unwrap();
    let outcome = s3
        .send(Message::builder().data(Binary::from(b"x".to_vec())).build())
        .await
        .unwrap();
    assert!(outcome.is_accepted());

    // Teardown: every step bounded, so a peer that never answers cannot hang the suite.
    let t = Duration::from_secs(5);
    for r in [
        tokio::time::timeout(t, r1.close()).await,
        tokio::time::timeout(t, r2.close()).await,
    ] {
        if !matches!(r, Ok(Ok(()))) {
            eprintln!("receiver close: {r:?}");
        }
    }
    for s in [
        tokio::time::timeout(t, unsettled.close()).await,
        tokio::time::timeout(t, settled.close()).await,
        tokio::time::timeout(t, s3.close()).await,
    ] {
        if !matches!(s, Ok(Ok(()))) {
            eprintln!("sender close: {s:?}");
        }
    }
    let _ = tokio::time::timeout(t, session2.end()).await;
    let _ = tokio::time::timeout(t, session.end()).await;
    let _ = tokio::time::timeout(t, connection.close()).await;
    let rec = relay.finish_one(Duration::from_secs(10)).await.chunks;

    let (violations, names, snapshot) = replay(&rec);
    for v in &violations {
        eprintln!(
            "{} {} @{} {}: {}",
            v.dir.as_str(),
            v.rule,
            v.offset,
            v.severity.as_str(),
            v.message
        );
    }
    let unexpected: Vec<&Violation> = violations
        .iter()
        .filter(|v| !(KNOWN_BROKER_BREACHES.contains(&v.rule.id) && v.dir == Dir::S2C))
        .filter(|v| !fe2o3_flow_ahead_of_its_own_session(v))
        .collect();
    assert!(unexpected.is_empty(), "false reports: {unexpected:#?}");
    for rule in DETERMINISTIC_BROKER_BREACHES {
        assert!(
            violations
                .iter()
                .any(|v| v.rule == *rule && v.dir == Dir::S2C),
            "RabbitMQ's {rule} was not reported"
        );
    }
    // The conversation really was what we think it was.
    for want in [
        "c2s sasl-init",
        "s2c sasl-outcome",
        "c2s open",
        "s2c begin",
        "c2s attach",
        "s2c transfer",
        "c2s disposition",
        "c2s flow",
        "c2s close",
    ] {
        assert!(names.iter().any(|n| n == want), "no {want} in {names:?}");
    }

    // Snapshot shape (taken before the close frames were fed would lose links, so it is
    // taken after the last chunk: the connection is closed, sessions ended).
    let c = &snapshot["connection"];
    assert_eq!(c["state"], "END");
    assert_eq!(c["sasl"]["mechanism"], "PLAIN");
    assert_eq!(c["sasl"]["outcome"], "ok");
    assert_eq!(c["client"]["container-id"], "amqpeek-state10");
    assert!(c["server"]["container-id"].is_string());
    for k in ["max-frame-size", "channel-max", "idle-time-out"] {
        assert!(
            c[k].get("c2s").is_some() && c[k].get("s2c").is_some(),
            "{k}: {c}"
        );
    }
    assert!(snapshot["sessions"].is_array() && snapshot["links"].is_array());
}

/// The same conversation stopped half way: the snapshot shows live sessions and links, with
/// credit history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_of_a_live_session_has_the_documented_keys() {
    if !broker_or_skip().await {
        return;
    }
    let relay = Relay::start().await;
    let port = relay.port();
    let q = format!("/queue/amqpeek-state10-snap-{}", std::process::id());
    let url = format!("amqp://guest:guest@127.0.0.1:{port}");
    let mut connection = Connection::open("amqpeek-snap", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut connection).await.unwrap();
    let mut sender = Sender::attach(&mut session, "snap-sender", q.as_str())
        .await
        .unwrap();
    for i in 0..5 {
        sender
            .send(Message::builder().data(Binary::from(vec![i; 10])).build())
            .await
            .unwrap();
    }
    let mut receiver = Receiver::attach(&mut session, "snap-receiver", q.as_str())
        .await
        .unwrap();
    for _ in 0..5 {
        let d = tokio::time::timeout(Duration::from_secs(10), receiver.recv::<Body<Value>>())
            .await
            .expect("receive in time")
            .unwrap();
        receiver.accept(&d).await.unwrap();
    }
    // The recording so far holds the five deliveries and the broker's settlement of the five
    // sends once the replayed snapshot says so.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let live = loop {
        let live = relay.chunks_so_far();
        let (_, _, snap) = replay(&live);
        let link = |name: &str| {
            snap["links"]
                .as_array()
                .and_then(|ls| ls.iter().find(|l| l["name"] == name).cloned())
                .unwrap_or_default()
        };
        if link("snap-receiver")["deliveries"] == 5 && link("snap-sender")["unsettled"] == 0 {
            break live;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the recording never showed the five deliveries settled: {snap}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let t = Duration::from_secs(5);
    let _ = tokio::time::timeout(t, receiver.close()).await;
    let _ = tokio::time::timeout(t, sender.close()).await;
    let _ = tokio::time::timeout(t, session.end()).await;
    let _ = tokio::time::timeout(t, connection.close()).await;
    let _ = relay.wait(1, Duration::from_secs(10)).await;

    let (violations, _, snap) = replay(&live);
    let unexpected: Vec<&Violation> = violations
        .iter()
        .filter(|v| !(KNOWN_BROKER_BREACHES.contains(&v.rule.id) && v.dir == Dir::S2C))
        .filter(|v| !fe2o3_flow_ahead_of_its_own_session(v))
        .collect();
    assert!(unexpected.is_empty(), "false reports: {unexpected:#?}");
    assert_eq!(snap["connection"]["state"], "OPENED");
    let sessions = snap["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{snap}");
    let s = &sessions[0];
    assert_eq!(s["state"], "MAPPED");
    for side in ["c2s", "s2c"] {
        for k in [
            "next-outgoing-id",
            "next-incoming-id",
            "incoming-window",
            "outgoing-window",
            "handle-max",
            "remote-incoming-window",
        ] {
            assert!(s[side].get(k).is_some(), "{side}.{k} missing: {s}");
        }
    }
    let links = snap["links"].as_array().unwrap();
    assert_eq!(links.len(), 2, "{snap}");
    let rcv = links.iter().find(|l| l["name"] == "snap-receiver").unwrap();
    assert_eq!(rcv["role"], "receiver");
    assert_eq!(rcv["sender"], "s2c");
    assert_eq!(rcv["state"], "ATTACHED");
    assert_eq!(rcv["source-address"], q.as_str());
    assert_eq!(rcv["deliveries"], 5);
    for k in [
        "handle",
        "target-address",
        "snd-settle-mode",
        "rcv-settle-mode",
        "delivery-count",
        "link-credit",
        "available",
        "drain",
        "unsettled",
    ] {
        assert!(rcv.get(k).is_some(), "{k} missing: {rcv}");
    }
    let hist = rcv["credit_history"].as_array().unwrap();
    assert!(!hist.is_empty(), "{rcv}");
    let snd = links.iter().find(|l| l["name"] == "snap-sender").unwrap();
    assert_eq!(snd["role"], "sender");
    assert_eq!(snd["target-address"], q.as_str());
    assert_eq!(
        snd["unsettled"], 0,
        "every delivery was accepted and settled: {snd}"
    );
}
