//! `proxy --metrics` scraped by a real Prometheus (Debian's `/usr/bin/prometheus`, scraping
//! every second): lapin's AMQP 0-9-1 and fe2o3-amqp's AMQP 1.0 clients go through the proxy
//! to RabbitMQ with `--jsonl`, and what Prometheus' query API returns equals what
//! `amqpeek stats --format json` reports for that JSONL: frames and bytes by protocol,
//! direction and name; connections; deliveries; settlements and their latency counts per
//! kind; deliveries needing no settlement; gaps; diagnoses. And, without Prometheus: the
//! health and readiness endpoints, and OpenMetrics when it is asked for.
//!
//! Without a broker or without prometheus: FAILS when env `CI` is set, otherwise skips with
//! a note.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use lapin::options::*;
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use serde_json::Value;

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// True when prometheus runs; false (skip, with a note) when not and CI is unset.
fn require_prometheus(test: &str) -> bool {
    let ok = Command::new(PROMETHEUS)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: {PROMETHEUS} not installed and CI is set"
        );
        eprintln!("SKIP {test}: {PROMETHEUS} not installed");
    }
    ok
}

/// `GET path` of `addr` (HTTP/1.0, one request per connection): the status and the body.
fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, format!("{head}\r\n\r\n{body}")))
}

/// The body of a response `get` returned.
fn body(resp: &str) -> &str {
    resp.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The proxy's addresses from its stderr: where it listens and where it serves metrics.
fn addresses(stderr: &mut impl BufRead) -> (String, SocketAddr) {
    let mut metrics = None;
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "proxy exited early"
        );
        if let Some(rest) = line.split("serving metrics on http://").nth(1) {
            metrics = Some(rest.trim().trim_end_matches("/metrics").parse().unwrap());
        }
        if let Some(rest) = line.split("listening on ").nth(1) {
            let listen = rest.split(',').next().unwrap().trim().to_string();
            return (listen, metrics.expect("the metrics address came first"));
        }
    }
}

/// The proxy process, killed when the test ends before [`stop`] (a failed assertion), so that
/// it does not go on running after the test.
struct ProxyChild(Option<Child>);

impl Drop for ProxyChild {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `amqpeek proxy --listen 127.0.0.1:0 --metrics 127.0.0.1:0 ARGS`: the child, its stderr,
/// its listening address and its metrics address.
fn start_proxy(args: &[&str]) -> (ProxyChild, BufReader<ChildStderr>, String, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
        ])
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let child = ProxyChild(Some(child));
    let (listen, metrics) = addresses(&mut stderr);
    (child, stderr, listen, metrics)
}

/// [`start_proxy`] relaying to the test broker, quiet, writing its JSONL capture to `jsonl`.
fn start_proxy_to_broker(
    jsonl: &std::path::Path,
) -> (ProxyChild, BufReader<ChildStderr>, String, SocketAddr) {
    start_proxy(&[
        "--upstream",
        support::BROKER,
        "--quiet",
        "--jsonl",
        jsonl.to_str().unwrap(),
    ])
}

/// Stop the proxy as Ctrl-C does; it must exit cleanly.
fn stop(mut proxy: ProxyChild) {
    let mut proxy = proxy.0.take().expect("running");
    let _ = Command::new("kill")
        .args(["-INT", &proxy.id().to_string()])
        .status();
    assert!(proxy.wait().unwrap().success());
}

/// A running Prometheus scraping `target` every second, killed when dropped.
struct Prometheus {
    child: Child,
    web: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: SocketAddr) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: amqpeek\n    static_configs:\n      \
                 - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let web: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Prometheus {
            child,
            web,
            _dir: dir,
        }
    }

    /// The instant vector of `query`: each series' labels and value.
    fn query(&self, query: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let path = format!("/api/v1/query?query={}", percent(query));
        let Ok((200, resp)) = get(self.web, &path, None) else {
            return Vec::new();
        };
        let v: Value = serde_json::from_str(body(&resp)).unwrap();
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let labels = r["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect();
                let value = r["value"][1].as_str().unwrap().parse().unwrap();
                (labels, value)
            })
            .collect()
    }

    /// The value of a query of one series (`None`: no such series yet).
    fn value(&self, query: &str) -> Option<f64> {
        self.query(query).first().map(|(_, v)| *v)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `s` as a URL query value.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

const CONFIRMED: usize = 12;
const UNCONFIRMED: usize = 4;
const TRANSFERS: usize = 6;

/// lapin: CONFIRMED publishes in confirm mode, consumed and acked; UNCONFIRMED outside
/// confirm mode, drained by a no-ack consumer.
async fn lapin_traffic(uri: &str) {
    let conn = Connection::connect(uri, ConnectionProperties::default())
        .await
        .unwrap();
    let (pubch, subch) = (
        conn.create_channel().await.unwrap(),
        conn.create_channel().await.unwrap(),
    );
    pubch.confirm_select(Default::default()).await.unwrap();
    let declare = QueueDeclareOptions {
        exclusive: true,
        auto_delete: true,
        ..Default::default()
    };
    let q = pubch
        .queue_declare("".into(), declare, FieldTable::default())
        .await
        .unwrap();
    let q2 = subch
        .queue_declare("".into(), declare, FieldTable::default())
        .await
        .unwrap();
    for i in 0..CONFIRMED {
        let confirm = pubch
            .basic_publish(
                "".into(),
                q.name().as_str().into(),
                BasicPublishOptions::default(),
                format!("confirmed {i}").as_bytes(),
                BasicProperties::default(),
            )
            .await
            .unwrap();
        assert!(confirm.await.unwrap().is_ack());
    }
    for i in 0..UNCONFIRMED {
        subch
            .basic_publish(
                "".into(),
                q2.name().as_str().into(),
                BasicPublishOptions::default(),
                format!("unconfirmed {i}").as_bytes(),
                BasicProperties::default(),
            )
            .await
            .unwrap();
    }
    let (_, got) = support::collect(&subch, q.name().as_str(), "", false, CONFIRMED).await;
    for d in got {
        d.ack(BasicAckOptions::default()).await.unwrap();
    }
    support::collect(&subch, q2.name().as_str(), "", true, UNCONFIRMED).await;
    conn.close(200, "bye".into()).await.unwrap();
}

/// fe2o3-amqp: TRANSFERS messages sent (each accepted), then received and accepted.
async fn fe2o3_traffic(addr: &str) {
    use fe2o3_amqp::types::messaging::{Body, Message};
    use fe2o3_amqp::types::primitives::Value as AmqpValue;
    use fe2o3_amqp::{Receiver, Sender, Session};

    let queue = format!("/queue/amqpeek-metrics-{}", std::process::id());
    let url = format!("amqp://guest:guest@{addr}");
    let mut connection = fe2o3_amqp::Connection::open("amqpeek-metrics", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut connection).await.unwrap();
    let mut sender = Sender::attach(&mut session, "metrics-sender", queue.as_str())
        .await
        .unwrap();
    for i in 0..TRANSFERS {
        let outcome = sender
            .send(Message::builder().value(format!("m{i}")).build())
            .await
            .unwrap();
        assert!(outcome.is_accepted());
    }
    let mut receiver = Receiver::attach(&mut session, "metrics-receiver", queue.as_str())
        .await
        .unwrap();
    for _ in 0..TRANSFERS {
        let d = tokio::time::timeout(Duration::from_secs(10), receiver.recv::<Body<AmqpValue>>())
            .await
            .expect("receive in time")
            .unwrap();
        receiver.accept(&d).await.unwrap();
    }
    let _ = receiver.close().await;
    let _ = sender.close().await;
    let _ = session.end().await;
    let _ = connection.close().await;
}

/// `amqpeek stats --format json CAPTURE`.
fn stats_json(capture: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["stats", "--format", "json"])
        .arg(capture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stats failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Wait until Prometheus has scraped the proxy after both connections closed.
fn wait_for_the_last_scrape(prom: &Prometheus, connections: f64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let opened = prom.value("amqpeek_connections_opened_total");
        let open = prom.value("amqpeek_connections_open");
        if opened == Some(connections) && open == Some(0.0) {
            // Counters no longer move: one more scrape interval, and the values are final.
            std::thread::sleep(Duration::from_millis(1500));
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never scraped the closed connections (opened {opened:?}, open {open:?}):\n{}",
            prom.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Series of `metric` by the values of `keys`, summed over the other labels.
fn by(prom: &Prometheus, metric: &str, keys: &[&str]) -> BTreeMap<Vec<String>, u64> {
    let mut out = BTreeMap::new();
    for (labels, v) in prom.query(metric) {
        let key = keys
            .iter()
            .map(|k| labels.get(*k).cloned().unwrap_or_default())
            .collect();
        *out.entry(key).or_default() += v as u64;
    }
    out
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_what_stats_reports_for_the_same_runs_jsonl() {
    let test = "prometheus_scrapes_what_stats_reports_for_the_same_runs_jsonl";
    if !require_prometheus(test) || !support::broker_or_skip().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let jsonl: PathBuf = dir.path().join("run.jsonl");
    let (proxy, _stderr, listen, metrics) = start_proxy_to_broker(&jsonl);
    let prom = Prometheus::start(metrics);
    lapin_traffic(&format!("amqp://guest:guest@{listen}/%2f")).await;
    fe2o3_traffic(&listen).await;
    tokio::task::spawn_blocking(move || {
        wait_for_the_last_scrape(&prom, 2.0);
        prom
    })
    .await
    .map(|prom| {
        stop(proxy);
        compare(&prom, &stats_json(&jsonl));
    })
    .unwrap();
}

/// Every number of the stats report that a metric carries, equal in both.
fn compare(prom: &Prometheus, s: &Value) {
    assert_eq!(prom.value("up{job=\"amqpeek\"}"), Some(1.0));
    assert_eq!(
        prom.value("amqpeek_connections_opened_total"),
        Some(u(&s["connections"]) as f64)
    );

    // Frames and bytes by protocol, direction and name: the same rows, none more.
    let keys = ["protocol", "direction", "name"];
    let frames = by(prom, "amqpeek_frames_total", &keys);
    let bytes = by(prom, "amqpeek_bytes_total", &keys);
    let mut want_frames = BTreeMap::new();
    let mut want_bytes = BTreeMap::new();
    for r in s["by_name"].as_array().unwrap() {
        let key: Vec<String> = ["proto", "dir", "name"]
            .iter()
            .map(|k| r[*k].as_str().unwrap().to_string())
            .collect();
        want_frames.insert(key.clone(), u(&r["frames"]));
        want_bytes.insert(key, u(&r["bytes"]));
    }
    assert_eq!(
        frames, want_frames,
        "frames by protocol, direction and name"
    );
    assert_eq!(bytes, want_bytes, "bytes by protocol, direction and name");
    let protocols: Vec<&str> = want_frames.keys().map(|k| k[0].as_str()).collect();
    assert!(
        protocols.contains(&"amqp-0-9-1") && protocols.contains(&"amqp-1.0"),
        "both clients' traffic is there: {protocols:?}"
    );

    // Deliveries started, per direction: the flows' messages, summed.
    let mut messages: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for d in s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["dirs"].as_array().unwrap())
    {
        *messages
            .entry(vec![d["dir"].as_str().unwrap().to_string()])
            .or_default() += u(&d["messages"]);
    }
    let deliveries = by(prom, "amqpeek_deliveries_total", &["direction"]);
    assert_eq!(deliveries, messages, "deliveries by direction");
    assert_eq!(
        messages.values().sum::<u64>(),
        (2 * (CONFIRMED + UNCONFIRMED) + 2 * TRANSFERS) as u64,
        "what the clients did"
    );

    // Settlements per kind: the latency histogram's count, the settlements by outcome, and
    // the deliveries that needed none.
    let settled = by(prom, "amqpeek_settlements_total", &["kind"]);
    let timed = by(prom, "amqpeek_settlement_latency_seconds_count", &["kind"]);
    let not_awaited = by(prom, "amqpeek_deliveries_not_awaited_total", &["kind"]);
    for row in s["settlement"].as_array().unwrap() {
        let kind = vec![row["kind"].as_str().unwrap().to_string()];
        let count = row["latency"]["count"].as_u64().unwrap_or(0);
        assert_eq!(timed.get(&kind).copied(), Some(count), "{kind:?} timed");
        assert_eq!(settled.get(&kind).copied(), Some(count), "{kind:?} settled");
        assert_eq!(
            not_awaited.get(&kind).copied(),
            Some(u(&row["not_awaited"])),
            "{kind:?} not awaited"
        );
    }
    assert_eq!(
        settled.get(&vec!["publish->confirm".to_string()]).copied(),
        Some(CONFIRMED as u64),
        "what the clients did"
    );
    assert_eq!(
        prom.value("amqpeek_deliveries_untimed_total"),
        Some(u(&s["untimed"]) as f64)
    );
    assert_eq!(
        prom.value("sum(amqpeek_gaps_total)"),
        Some(u(&s["gaps"]) as f64)
    );
    assert_eq!(
        prom.value("sum(amqpeek_diagnoses_total)"),
        Some(u(&s["diagnoses"]["total"]) as f64)
    );
    // Closed: nothing waits, nothing is open.
    for gauge in [
        "amqpeek_unsettled_deliveries",
        "amqpeek_unconfirmed_publishes",
        "amqpeek_channels_open",
        "amqpeek_links_open",
        "amqpeek_sessions_open",
        "amqpeek_consumers_open",
    ] {
        assert_eq!(prom.value(gauge), Some(0.0), "{gauge}");
    }
    let closed = by(prom, "amqpeek_connections_closed_total", &["reason"]);
    assert_eq!(closed.values().sum::<u64>(), 2, "{closed:?}");
}

#[test]
fn the_health_endpoints_answer_and_readiness_follows_the_upstream() {
    // An upstream that refuses: a socket bound but not listening. Holding it keeps the port
    // from being handed to the proxy's own listener (which would relay into itself).
    let refuser = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    refuser
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    let refusing = refuser
        .local_addr()
        .unwrap()
        .as_socket()
        .unwrap()
        .to_string();
    let (proxy, _stderr, listen, metrics) = start_proxy(&["--upstream", &refusing, "--quiet"]);
    let (status, _) = get(metrics, "/healthz", None).unwrap();
    assert_eq!(status, 200);
    let (status, resp) = get(metrics, "/readyz", None).unwrap();
    assert_eq!(status, 200, "listening, no connect failed yet: {resp}");

    // A client whose upstream connect is refused: not ready, and counted.
    let mut client = TcpStream::connect(&listen).unwrap();
    let _ = client.read(&mut [0u8; 16]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, resp) = get(metrics, "/readyz", None).unwrap();
        let (_, text) = get(metrics, "/metrics", None).unwrap();
        if status == 503
            && text.contains("amqpeek_upstream_connect_errors_total{reason=\"refused\"} 1")
        {
            assert!(body(&resp).contains("upstream"), "{resp}");
            break;
        }
        assert!(Instant::now() < deadline, "{status} {resp}\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }

    let (_, text) = get(metrics, "/metrics", None).unwrap();
    assert!(
        text.contains("content-type: text/plain; version=0.0.4"),
        "{text}"
    );
    assert!(text.contains("# TYPE amqpeek_connections_opened_total counter"));
    let (_, om) = get(
        metrics,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
    )
    .unwrap();
    assert!(
        om.contains("content-type: application/openmetrics-text"),
        "{om}"
    );
    assert!(
        om.contains("# TYPE amqpeek_connections_opened counter"),
        "{om}"
    );
    assert!(om.trim_end().ends_with("# EOF"), "{om}");
    stop(proxy);
    drop(refuser);
}

/// The value of the unlabelled series `name` in a Prometheus text scrape.
fn scraped(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Scrape `metrics` until `f` holds of the body (10 s at most); the last body.
fn scrape_until(metrics: SocketAddr, what: &str, f: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, text) = get(metrics, "/metrics", None).unwrap();
        if f(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what}:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_gauges_follow_real_clients_channels_consumers_sessions_and_links() {
    use fe2o3_amqp::{Receiver, Session};
    if !support::broker_or_skip().await {
        return;
    }
    // A capture beside the metrics keeps the inspection lossless: metrics alone let a loaded
    // machine's inspection skim frames (counted as skimmed bytes), and a skimmed
    // `channel.open` would leave a gauge behind what the clients did.
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("gauges.jsonl");
    let (proxy, _stderr, listen, metrics) = start_proxy_to_broker(&jsonl);
    let gauge = |text: &str, name: &str| scraped(text, name).unwrap_or(-1.0);

    // lapin: two channels, one consumer on the second.
    let conn = Connection::connect(
        &format!("amqp://guest:guest@{listen}/%2f"),
        ConnectionProperties::default(),
    )
    .await
    .unwrap();
    let _first = conn.create_channel().await.unwrap();
    let ch = conn.create_channel().await.unwrap();
    let declare = QueueDeclareOptions {
        exclusive: true,
        auto_delete: true,
        ..Default::default()
    };
    let q = ch
        .queue_declare("".into(), declare, FieldTable::default())
        .await
        .unwrap();
    let _consumer = ch
        .basic_consume(
            q.name().as_str().into(),
            "gauge".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    // fe2o3-amqp: one session, one receiving link.
    let url = format!("amqp://guest:guest@{listen}");
    let mut amqp10 = fe2o3_amqp::Connection::open("amqpeek-gauges", url.as_str())
        .await
        .unwrap();
    let mut session = Session::begin(&mut amqp10).await.unwrap();
    let queue = format!("/queue/amqpeek-gauges-{}", std::process::id());
    let receiver = Receiver::attach(&mut session, "gauge-receiver", queue.as_str())
        .await
        .unwrap();

    let open = tokio::task::spawn_blocking(move || {
        scrape_until(metrics, "both clients' scopes open", |t| {
            gauge(t, "amqpeek_channels_open") == 2.0
                && gauge(t, "amqpeek_consumers_open") == 1.0
                && gauge(t, "amqpeek_sessions_open") == 1.0
                && gauge(t, "amqpeek_links_open") == 1.0
        })
    })
    .await
    .unwrap();
    assert_eq!(gauge(&open, "amqpeek_connections_open"), 2.0, "{open}");

    let _ = receiver.close().await;
    let _ = session.end().await;
    let _ = amqp10.close().await;
    conn.close(200, "bye".into()).await.unwrap();
    tokio::task::spawn_blocking(move || {
        scrape_until(metrics, "everything closed again", |t| {
            [
                "amqpeek_connections_open",
                "amqpeek_channels_open",
                "amqpeek_consumers_open",
                "amqpeek_sessions_open",
                "amqpeek_links_open",
                "amqpeek_unsettled_deliveries",
            ]
            .iter()
            .all(|g| gauge(t, g) == 0.0)
        });
        stop(proxy);
    })
    .await
    .unwrap();
}
