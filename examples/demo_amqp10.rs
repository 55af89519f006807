//! A small AMQP 1.0 client (fe2o3-amqp, SASL PLAIN) that sends and receives a few messages.
//! Point it at `amqpeek proxy` to see the traffic:
//!
//! ```text
//! cargo run --example demo_amqp10 -- amqp://guest:guest@127.0.0.1:5673
//! ```

use std::time::Duration;

use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::primitives::Value;
use fe2o3_amqp::{Connection, Receiver, Sender, Session};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "amqp://guest:guest@127.0.0.1:5673".into());
    let queue = format!("/queue/amqpeek-demo10-{}", std::process::id());
    let mut connection = Connection::open("amqpeek-demo", url.as_str()).await?;
    let mut session = Session::begin(&mut connection).await?;
    let mut sender = Sender::attach(&mut session, "demo-sender", queue.as_str()).await?;
    for i in 0..3 {
        let msg = Message::builder()
            .value(format!("hello from amqpeek demo, message {i}"))
            .build();
        let outcome = sender.send(msg).await?;
        println!("sent {i}: accepted={}", outcome.is_accepted());
    }
    let mut receiver = Receiver::attach(&mut session, "demo-receiver", queue.as_str()).await?;
    for _ in 0..3 {
        let d =
            tokio::time::timeout(Duration::from_secs(10), receiver.recv::<Body<Value>>()).await??;
        receiver.accept(&d).await?;
        println!("received: {:?}", d.body());
    }
    // RabbitMQ 3.10 answers a closing detach without closed=true; fe2o3 reports that as an error.
    if let Err(e) = receiver.close().await {
        eprintln!("receiver close: {e}");
    }
    if let Err(e) = sender.close().await {
        eprintln!("sender close: {e}");
    }
    if let Err(e) = session.end().await {
        eprintln!("session end: {e}");
    }
    connection.close().await?;
    Ok(())
}
