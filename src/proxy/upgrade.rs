//! TLS on the proxy's two legs before the relay starts: AMQP's own upgrade (a client that
//! starts with `AMQP 2 1 0 0` on a plain leg, answered here or by the broker) and the TLS
//! handshakes with the client and the upstream. Failures are close reasons; what the peers
//! send meanwhile is told to the inspection side as it is relayed.

use std::io;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::limits::Activity;
use super::relay::{Leg, send};
use super::tls::{AMQP_TLS_HEADER, TlsConfig};
use crate::capture::SourceEvent;
use crate::driver::queue::ConnQueue;
use crate::event::{Chunk, CloseReason, ConnId, Dir, Failure, Timestamp, Violation};

/// What came of a client's first bytes on a plain leg that could be upgraded.
enum Upgrade {
    /// It asked for AMQP's TLS upgrade and got it: TLS follows on both legs.
    Accepted,
    /// It asked, and the broker refused (answered with the header it wants): relay as is.
    Refused,
    /// It did not ask: its first bytes (if any) were passed on.
    NotAsked,
}

/// Put TLS where it belongs on both legs; errors are close reasons.
pub(super) async fn establish(
    conn: ConnId,
    mut client: TcpStream,
    mut upstream: TcpStream,
    tls: &TlsConfig,
    inspect: &Option<ConnQueue>,
    activity: &Activity,
) -> Result<(Leg, Leg), CloseReason> {
    let client_tls = tls.listen_tls && tls.server.is_some();
    // AMQP's own TLS upgrade is answered only when there is certificate material to do it.
    let mut upgrade = false;
    if !client_tls && tls.server.is_some() {
        match negotiate(conn, &mut client, &mut upstream, tls, inspect, activity).await? {
            Upgrade::Accepted => upgrade = true,
            Upgrade::Refused => return Ok((Leg::Tcp(client), Leg::Tcp(upstream))),
            Upgrade::NotAsked => {}
        }
    }
    handshakes(
        conn,
        client,
        upstream,
        tls,
        inspect,
        client_tls || upgrade,
        upgrade,
    )
    .await
}

/// Read the client's first bytes: AMQP's TLS upgrade header, answered (by the broker when its
/// leg is plain, here when it is TLS already), or the start of the conversation, passed on.
async fn negotiate(
    conn: ConnId,
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    tls: &TlsConfig,
    inspect: &Option<ConnQueue>,
    activity: &Activity,
) -> Result<Upgrade, CloseReason> {
    let mut head = [0u8; 8];
    let mut n = 0;
    while n < head.len() {
        let read = client
            .read(&mut head[n..])
            .await
            .map_err(setup_error(Dir::C2S))?;
        if read == 0 {
            break;
        }
        activity.passed(read, true);
        n += read;
        if !AMQP_TLS_HEADER.starts_with(&head[..n]) {
            break;
        }
    }
    if n == head.len() && head == AMQP_TLS_HEADER {
        let raw = Bytes::copy_from_slice(&head);
        let header = SourceEvent::TlsHeader {
            conn,
            dir: Dir::C2S,
            ts: Timestamp::now(),
            bytes: raw.clone(),
        };
        send(inspect, header).await;
        return if tls.upstream_tls {
            answer_here(conn, client, inspect).await
        } else {
            ask_the_broker(conn, client, upstream, &raw, tls, inspect).await
        };
    }
    if n > 0 {
        // Not an upgrade: these are the first bytes of the conversation.
        let bytes = Bytes::copy_from_slice(&head[..n]);
        let chunk = Chunk {
            conn,
            dir: Dir::C2S,
            ts: Timestamp::now(),
            bytes: bytes.clone(),
        };
        send(inspect, SourceEvent::Chunk(chunk)).await;
        upstream
            .write_all(&bytes)
            .await
            .map_err(setup_error(Dir::S2C))?;
    }
    Ok(Upgrade::NotAsked)
}

/// The broker's leg is plain: ask it for the same upgrade, and pass its answer on.
async fn ask_the_broker(
    conn: ConnId,
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    raw: &Bytes,
    tls: &TlsConfig,
    inspect: &Option<ConnQueue>,
) -> Result<Upgrade, CloseReason> {
    upstream
        .write_all(raw)
        .await
        .map_err(setup_error(Dir::S2C))?;
    let mut reply = [0u8; 8];
    tokio::time::timeout(tls.handshake_timeout, upstream.read_exact(&mut reply))
        .await
        .map_err(|_| CloseReason::TlsUpgradeUnanswered)?
        .map_err(|e| CloseReason::TlsUpgradeClosed(e.to_string()))?;
    client
        .write_all(&reply)
        .await
        .map_err(setup_error(Dir::C2S))?;
    let bytes = Bytes::copy_from_slice(&reply);
    let ts = Timestamp::now();
    if reply != AMQP_TLS_HEADER {
        // The broker refuses TLS (answers with the header it wants): relay on untouched, the
        // client will give up or retry.
        let chunk = Chunk {
            conn,
            dir: Dir::S2C,
            ts,
            bytes,
        };
        send(inspect, SourceEvent::Chunk(chunk)).await;
        return Ok(Upgrade::Refused);
    }
    let header = SourceEvent::TlsHeader {
        conn,
        dir: Dir::S2C,
        ts,
        bytes,
    };
    send(inspect, header).await;
    Ok(Upgrade::Accepted)
}

/// The broker's leg is TLS already: answer the client's upgrade here.
async fn answer_here(
    conn: ConnId,
    client: &mut TcpStream,
    inspect: &Option<ConnQueue>,
) -> Result<Upgrade, CloseReason> {
    client
        .write_all(&AMQP_TLS_HEADER)
        .await
        .map_err(setup_error(Dir::C2S))?;
    let header = SourceEvent::TlsHeader {
        conn,
        dir: Dir::S2C,
        ts: Timestamp::now(),
        bytes: Bytes::from_static(&AMQP_TLS_HEADER),
    };
    send(inspect, header).await;
    Ok(Upgrade::Accepted)
}

/// The TLS handshakes, both legs at once: with the client when it speaks TLS (`client_tls`),
/// with the upstream when its leg is TLS or the client upgraded (`upgrade`).
async fn handshakes(
    conn: ConnId,
    client: TcpStream,
    upstream: TcpStream,
    tls: &TlsConfig,
    inspect: &Option<ConnQueue>,
    client_tls: bool,
    upgrade: bool,
) -> Result<(Leg, Leg), CloseReason> {
    let no_answer = || format!("no answer within {:?}", tls.handshake_timeout);
    let accept_client = async {
        match (&tls.server, client_tls) {
            (Some(server), true) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(server.clone());
                match tokio::time::timeout(tls.handshake_timeout, acceptor.accept(client)).await {
                    Ok(Ok(s)) => Ok(Leg::Tls(Box::new(s))),
                    Ok(Err(e)) => Err(handshake_failed(Dir::C2S, e.to_string())),
                    Err(_) => Err(handshake_failed(Dir::C2S, no_answer())),
                }
            }
            _ => Ok(Leg::Tcp(client)),
        }
    };
    let connect_upstream = async {
        if !(tls.upstream_tls || upgrade) {
            return Ok(Leg::Tcp(upstream));
        }
        if tls.insecure {
            tracing::warn!(
                "#{conn}: upstream certificate NOT verified (--insecure): anyone on the path can read this connection"
            );
            let notice = SourceEvent::Notice {
                conn,
                ts: Timestamp::now(),
                violation: insecure_notice(),
            };
            send(inspect, notice).await;
        }
        let connector = tokio_rustls::TlsConnector::from(tls.client.clone());
        let name = tls.server_name.clone();
        match tokio::time::timeout(tls.handshake_timeout, connector.connect(name, upstream)).await {
            Ok(Ok(s)) => Ok(Leg::Tls(Box::new(s))),
            Ok(Err(e)) => Err(handshake_failed(Dir::S2C, e.to_string())),
            Err(_) => Err(handshake_failed(Dir::S2C, no_answer())),
        }
    };
    let (client, upstream) = tokio::join!(accept_client, connect_upstream);
    match (client, upstream) {
        (Ok(c), Ok(u)) => Ok((c, u)),
        // The upstream's failure is the more telling one: the client side usually fails
        // only because its peer went away.
        (_, Err(e)) | (Err(e), _) => Err(e),
    }
}

/// The TLS handshake with `by`'s side failed (`detail`: why).
fn handshake_failed(by: Dir, detail: String) -> CloseReason {
    CloseReason::TlsHandshake { by, detail }
}

/// The warning shown on every connection relayed with `--insecure`.
fn insecure_notice() -> Violation {
    crate::state::rules::PROXY_TLS_INSECURE.violation(
        Dir::S2C,
        0,
        "upstream TLS certificate NOT verified (--insecure): the broker's identity is unchecked",
    )
}

/// A failure of `by`'s socket while TLS is being set up: an `error` whatever its kind (as
/// the words have always said).
fn setup_error(by: Dir) -> impl Fn(io::Error) -> CloseReason {
    move |e| CloseReason::Failed {
        clean_first: None,
        by,
        how: Failure::Error,
        detail: e.to_string(),
    }
}
