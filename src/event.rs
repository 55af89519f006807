//! The pipeline's vocabulary: what a source produces ([`Chunk`]) and what flows to the sinks
//! ([`Event`]).
//!
//! ```text
//! Source (proxy | pcap/pcapng | JSONL) -> Chunk -> decode -> track state -> Event -> sinks
//! ```
//!
//! The base types ([`crate::base`]) and the decoded frame ([`FrameEvent`], of the protocol
//! layer) are re-exported here for the layers above the state trackers, with the data the
//! events carry (the state [`snapshot`], the [`ProtocolHeader`], the payload's span name): a
//! sink reads the pipeline's output through this module and names no tracker or decoder.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;

pub mod sink;

pub use crate::base::*;
pub use crate::codec::{PAYLOAD_SPAN, ProtocolHeader};
pub use crate::protocol::FrameEvent;
pub use crate::state::snapshot::{self, Snapshot};
pub use sink::{Render, Sink};

/// What happened.
#[derive(Clone, Debug)]
pub enum EventKind {
    /// A client connected and (for the proxy) an upstream connection was attempted.
    Connect {
        /// The client's address.
        client: SocketAddr,
        /// The upstream (broker) address.
        upstream: SocketAddr,
    },
    /// A protocol header.
    Header {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset.
        offset: u64,
        /// Which header.
        header: ProtocolHeader,
        /// Its bytes.
        raw: Bytes,
    },
    /// A frame, decoded once and shared by every sink.
    Frame(Arc<FrameEvent>),
    /// Bytes as relayed (credentials masked unless `--show-secrets`), in stream order, cut at
    /// frame boundaries: every relayed byte appears in exactly one `Data` event. Used by the
    /// pcap sink; other sinks ignore it.
    Data {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset of `bytes[0]`.
        offset: u64,
        /// The bytes.
        bytes: Bytes,
    },
    /// Relayed bytes that are neither a protocol header nor a decoded frame: a malformed frame,
    /// the stream after decoding stopped, an incomplete frame cut by a gap or by the close.
    /// Masked like frames, and wholly (past the frame header) where they may hold a credential.
    /// With the `Header` and `Frame` events, every relayed byte is in exactly one such event,
    /// in stream order (the JSONL's `bytes` records).
    Undecoded {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset of `bytes[0]`.
        offset: u64,
        /// The bytes.
        bytes: Bytes,
    },
    /// A spec violation (including malformed bytes, with their offset).
    Violation(Violation),
    /// Bytes that were relayed but not seen by the inspector (capture loss, mid-stream start),
    /// or skimmed (passed over undecoded while the inspection of a live view fell behind).
    Gap {
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Byte offset where the gap starts.
        offset: u64,
        /// How many bytes are missing (0 when unknown).
        len: u64,
        /// Why the bytes are missing, in plain words.
        reason: String,
    },
    /// The sender of `dir` closed its side (TCP FIN, or TLS close_notify on a TLS leg): no
    /// byte follows in `dir`, while the other direction may go on (a half-close). Comes after
    /// every `Data` of `dir`; a connection that ends by reset, or whose capture stops, has no
    /// `Fin` for the directions still open.
    Fin {
        /// Direction that ended.
        dir: Dir,
        /// Its stream's length: the offset the FIN stands at.
        offset: u64,
    },
    /// The connection closed.
    Close(CloseInfo),
    /// The connection's tracked state, published by the pipeline after frames changed it (at
    /// most every [`STATE_INTERVAL_US`](crate::pipeline::STATE_INTERVAL_US) of event time
    /// unless its state name changes, and always before the close event). For live views;
    /// captures and checks ignore it.
    State(Arc<crate::state::Snapshot>),
    /// A diagnosis started (`ended` is `None`) or ended: why a flow is stuck or about to fail
    /// (see [`Diagnosis`]). Made by the pipeline from the frames and the clock's ticks, so
    /// every source gives the same ones; a JSONL holds them as `diagnosis` records.
    Diagnosis(Arc<Diagnosis>),
}

/// One thing that happened on one connection at one time.
#[derive(Clone, Debug)]
pub struct Event {
    /// The connection (its number, from 1, unique within the run or the capture).
    pub conn: ConnId,
    /// When it happened (the relay\'s read time, or the capture time).
    pub ts: Timestamp,
    /// What happened.
    pub kind: EventKind,
}
