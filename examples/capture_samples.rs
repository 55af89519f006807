//! Writes `/tmp/amqpeek-sample-lapin.pcapng` and `/tmp/amqpeek-sample-fe2o3.pcapng`: a real
//! lapin (AMQP 0-9-1) and fe2o3-amqp (AMQP 1.0) session with RabbitMQ on 127.0.0.1:5672,
//! recorded through a relay, inspected and written as `--pcap` does, for looking at in
//! Wireshark. The tests in `tests/capture_tshark.rs` check the same captures automatically.
//!
//!     cargo run --example capture_samples

#[path = "../tests/capture_common/mod.rs"]
mod capture_common;
#[path = "../tests/capture_sessions/mod.rs"]
mod capture_sessions;
#[path = "../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::time::Duration;

#[tokio::main]
async fn main() {
    assert!(
        support::broker_or_skip().await,
        "RabbitMQ must answer on {}",
        support::BROKER
    );
    for (v091, name) in [(true, "lapin"), (false, "fe2o3")] {
        let relay = support::Relay::start().await;
        if v091 {
            capture_sessions::lapin_session(relay.port()).await;
        } else {
            capture_sessions::fe2o3_session(relay.port()).await;
        }
        let recs = relay.finish(1, Duration::from_secs(10)).await;
        let path = PathBuf::from(format!("/tmp/amqpeek-sample-{name}.pcapng"));
        capture_common::write_pcapng(&capture_common::inspect(&recs), &path);
        println!("wrote {}", path.display());
    }
}
