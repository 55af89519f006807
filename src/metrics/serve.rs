//! The HTTP endpoint of `--metrics ADDR`, on a tokio task of its own beside the relay's:
//!
//! - `GET /metrics`: the metrics, OpenMetrics when the `Accept` header asks for it, else
//!   Prometheus text;
//! - `GET /healthz`: 200 while the process is up;
//! - `GET /readyz`: 200 while the proxy accepts connections and the upstream answered its
//!   latest connect (no connect yet counts as answered), 503 with the reason otherwise.
//!
//! A scrape reads atomics and encodes a few kilobytes; the relay never waits for it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

use super::{Format, Metrics};

/// Bind the endpoint's socket (before the proxy starts, so a port in use fails the run).
pub async fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serve `/metrics`, `/healthz` and `/readyz` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) -> io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(scrape))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(metrics);
    axum::serve(listener, app).await
}

async fn scrape(State(m): State<Arc<Metrics>>, headers: HeaderMap) -> impl IntoResponse {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::from_accept(accept);
    let body = m.encode(format);
    ([(header::CONTENT_TYPE, format.content_type())], body)
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(m): State<Arc<Metrics>>) -> impl IntoResponse {
    match m.ready() {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}
