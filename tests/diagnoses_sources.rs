//! The same diagnoses from every source: `amqpeek proxy --jsonl FILE --pcap FILE` relays a
//! stalled lapin consumer (basic.qos 1, a delivery never acked) to the RabbitMQ on
//! 127.0.0.1:5672; the diagnosis records of its JSONL equal those the library pipeline makes
//! reading its pcapng (ids, scopes, names, times, the start frames' offsets).
//!
//! With env CI set, an unreachable broker fails the test; otherwise it is skipped with a note.

mod cli_common;
mod support;

use std::collections::BTreeSet;
use std::io::{self, BufRead};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use amqpeek::event::{Event, EventKind};
use amqpeek::pipeline::InspectOptions;
use amqpeek::state::diagnose::Thresholds;
use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};

const LIMITS: [(&str, &str); 2] = [
    ("amqp091.consumer.prefetch-full", "1"),
    ("amqp091.channel.unacked", "1"),
];

/// One diagnosis record: phase, id, scope, name, since, at, the evidence (dir offset), and
/// for an end the frame that ended it.
type Record = (
    String,
    String,
    String,
    String,
    String,
    String,
    Vec<String>,
    String,
);

fn frame_ref(v: &serde_json::Value) -> String {
    format!("{} {}", v["dir"].as_str().unwrap(), v["offset"])
}

fn from_jsonl(text: &str) -> BTreeSet<Record> {
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "diagnosis")
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (
                s("phase"),
                s("id"),
                s("scope"),
                s("name"),
                s("since"),
                s("at"),
                v["evidence"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(frame_ref)
                    .collect(),
                v.get("end_frame").map(frame_ref).unwrap_or_default(),
            )
        })
        .collect()
}

struct Diagnoses(Vec<Arc<amqpeek::event::Diagnosis>>);

impl amqpeek::pipeline::Sink for Diagnoses {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        if let EventKind::Diagnosis(d) = &ev.kind {
            self.0.push(d.clone());
        }
        Ok(())
    }
}

fn from_pcapng(path: &std::path::Path) -> BTreeSet<Record> {
    let mut t = Thresholds::new();
    for (id, v) in LIMITS {
        t.set(id, v.parse().unwrap()).unwrap();
    }
    let opts = InspectOptions {
        diagnosis: Some(Arc::new(t)),
        ..InspectOptions::default()
    };
    let src = amqpeek::capture::open(path, Default::default()).unwrap();
    let mut sink = Diagnoses(Vec::new());
    amqpeek::replay::run(src, opts, &mut [&mut sink]).unwrap();
    let r = |f: &amqpeek::event::FrameRef| format!("{} {}", f.dir.as_str(), f.offset);
    sink.0
        .iter()
        .map(|d| {
            (
                if d.ended.is_some() { "end" } else { "start" }.to_string(),
                d.check.id.to_string(),
                d.scope.as_str().to_string(),
                d.name.clone(),
                d.since.rfc3339(),
                d.at.rfc3339(),
                d.evidence.iter().map(r).collect(),
                d.ended
                    .as_ref()
                    .and_then(|e| e.frame.as_ref())
                    .map(r)
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// A consumer with prefetch 1 holding its delivery past the thresholds, then closing.
async fn stalled_consumer(addr: &str) {
    let uri = format!("amqp://guest:guest@{addr}/%2f");
    let conn = Connection::connect(&uri, ConnectionProperties::default())
        .await
        .expect("connect through the proxy");
    let ch = conn.create_channel().await.unwrap();
    let q = format!("amqpeek-diag-sources-{}", std::process::id());
    ch.queue_declare(
        q.as_str().into(),
        QueueDeclareOptions {
            exclusive: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await
    .unwrap();
    ch.basic_qos(1, BasicQosOptions::default()).await.unwrap();
    for i in 0..3 {
        ch.basic_publish(
            "".into(),
            q.as_str().into(),
            BasicPublishOptions::default(),
            format!("m{i}").as_bytes(),
            BasicProperties::default(),
        )
        .await
        .unwrap();
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let consumer = ch
        .basic_consume(
            q.as_str().into(),
            "held".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    consumer.set_delegate(move |d: lapin::message::DeliveryResult| {
        if let Ok(Some(d)) = d {
            let _ = tx.send(d);
        }
        async {}
    });
    let _held = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a delivery in time");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    ch.close(200, "bye".into()).await.unwrap();
    conn.close(200, "bye".into()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jsonl_and_the_pcapng_of_a_stalled_consumer_give_the_same_diagnoses() {
    if !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("cap.jsonl");
    let pcap = dir.path().join("cap.pcapng");
    let limits: Vec<String> = LIMITS.iter().map(|(id, v)| format!("{id}={v}")).collect();
    let mut args = vec![
        "--no-tui",
        "--upstream",
        support::BROKER,
        "--jsonl",
        jsonl.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ];
    for l in &limits {
        args.extend(["--diagnosis-threshold", l.as_str()]);
    }
    let (child, stderr, addr) = cli_common::start_proxy(&args, Stdio::null());
    // Keep the proxy's stderr drained (it reports there).
    std::thread::spawn(move || for _ in stderr.lines() {});
    tokio::time::timeout(Duration::from_secs(60), stalled_consumer(&addr))
        .await
        .expect("the conversation in time");
    // The connection's close reaches the proxy's sinks before it stops.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let st = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);

    let live = from_jsonl(&std::fs::read_to_string(&jsonl).unwrap());
    let read = from_pcapng(&pcap);
    let ids: BTreeSet<(&str, &str)> = live.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect();
    assert_eq!(
        ids,
        BTreeSet::from([
            ("end", "amqp091.channel.unacked"),
            ("end", "amqp091.consumer.prefetch-full"),
            ("start", "amqp091.channel.unacked"),
            ("start", "amqp091.consumer.prefetch-full"),
        ]),
        "{live:#?}"
    );
    assert_eq!(live, read, "JSONL {live:#?}\npcapng {read:#?}");
}
