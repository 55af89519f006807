//! What a source yields: [`SourceEvent`]s in order, the same live (the proxy's relays) and
//! offline (a capture reader): a connection appears, bytes flow per direction, bytes go
//! missing, the connection ends; plus what only one kind of source knows (read errors
//! positioned in a file; TLS upgrades and notices of the proxy). The driver routes them to one
//! inspector per connection.
//!
//! Only vocabulary lives here: no parsing, no I/O.

use std::net::SocketAddr;

use crate::codec::ProtocolHeader;
use bytes::Bytes;

use crate::event::{Chunk, CloseReason, ConnId, Dir, Timestamp, Violation};

/// One thing a capture source found, in capture order.
///
/// Stream offsets: a direction's stream offset starts at 0 with its first byte (the byte after
/// the SYN, or the first byte seen when the capture starts mid-connection). Each `Chunk`
/// continues exactly where the previous `Chunk` or `Gap` of that direction ended, so a consumer
/// can keep offsets by adding `bytes.len()` and `len`.
#[derive(Clone, Debug)]
pub enum SourceEvent {
    /// A connection appeared (first sign of it that turned out to be AMQP).
    Connect {
        /// Connection number (from 1, unique within this capture).
        conn: ConnId,
        /// When: its SYN's capture time when the handshake was captured, else its first
        /// bytes'.
        ts: Timestamp,
        /// The client (SYN sender, or see the orientation rules in [`crate::capture`]).
        client: SocketAddr,
        /// The server (broker).
        server: SocketAddr,
    },
    /// Bytes of one direction, in stream order, with no hole before them.
    Chunk(Chunk),
    /// Bytes of one direction that the capture does not hold.
    Gap {
        /// The connection (its number, from 1, unique within the run or the capture).
        conn: ConnId,
        /// When it was noticed (for a packet capture: the capture time of the bytes right
        /// after it, or of the acknowledgement, FIN or RST that showed the bytes are missing).
        ts: Timestamp,
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// Stream offset where the missing bytes start.
        offset: u64,
        /// How many bytes are missing (0 when unknown, e.g. before a mid-connection start).
        len: u64,
        /// In plain words, e.g. `resynchronised at offset 8123 after skipping 35 bytes`.
        reason: String,
        /// When set, the next chunk of this direction starts at a frame boundary of this
        /// protocol (found by [`crate::protocol::resync`]): start a decoder with
        /// `StreamDecoder::assuming(protocol)` there, protocol state unknown.
        resync: Option<ProtocolHeader>,
    },
    /// The sender of `dir` closed its side (its FIN), after every byte of `dir` before it;
    /// the other direction may go on (a half-close). At most once per direction, before the
    /// `Close`.
    Fin {
        /// The connection (its number, from 1, unique within the run or the capture).
        conn: ConnId,
        /// Direction that ended.
        dir: Dir,
        /// When it happened (the relay\'s read time, or the capture time).
        ts: Timestamp,
    },
    /// The connection ended (FIN both ways, RST, or the capture ended with it still open).
    Close {
        /// The connection (its number, from 1, unique within the run or the capture).
        conn: ConnId,
        /// When it happened (the relay\'s read time, or the capture time).
        ts: Timestamp,
        /// Who closed or reset first and how, e.g. [`CloseReason::FinBothWays`].
        reason: CloseReason,
    },
    /// AMQP's TLS upgrade header (`AMQP 2 1 0 0`) was relayed in `dir` (the proxy only):
    /// what follows on this direction is the plaintext inside TLS, starting with a protocol
    /// header again.
    TlsHeader {
        /// The connection (its number, from 1, unique within the run or the capture).
        conn: ConnId,
        /// Which way (`C2S`: sent by the client; `S2C`: by the server).
        dir: Dir,
        /// When it happened (the relay\'s read time, or the capture time).
        ts: Timestamp,
        /// The header's bytes.
        bytes: Bytes,
    },
    /// Something about the connection worth a warning that no byte shows (the proxy only: an
    /// unverified upstream certificate), reported as a violation event.
    Notice {
        /// The connection (its number, from 1, unique within the run or the capture).
        conn: ConnId,
        /// When it happened (the relay\'s read time, or the capture time).
        ts: Timestamp,
        /// The warning, reported as a violation of the connection.
        violation: Violation,
    },
    /// The file could not be read past this point (truncated or corrupt), or one record of it
    /// was unusable. For packet captures this is the last item; for JSONL, reading goes on with
    /// the next line.
    Error {
        /// Byte offset in the file where the unreadable part starts.
        file_offset: u64,
        /// What is wrong there.
        message: String,
    },
}

impl SourceEvent {
    /// The connection this event belongs to (`None` for file errors).
    pub fn conn(&self) -> Option<ConnId> {
        match self {
            SourceEvent::Connect { conn, .. }
            | SourceEvent::Gap { conn, .. }
            | SourceEvent::Fin { conn, .. }
            | SourceEvent::TlsHeader { conn, .. }
            | SourceEvent::Notice { conn, .. }
            | SourceEvent::Close { conn, .. } => Some(*conn),
            SourceEvent::Chunk(c) => Some(c.conn),
            SourceEvent::Error { .. } => None,
        }
    }

    /// When it happened (`None` for file errors, which carry no time).
    pub fn ts(&self) -> Option<Timestamp> {
        match self {
            SourceEvent::Connect { ts, .. }
            | SourceEvent::Gap { ts, .. }
            | SourceEvent::Fin { ts, .. }
            | SourceEvent::TlsHeader { ts, .. }
            | SourceEvent::Notice { ts, .. }
            | SourceEvent::Close { ts, .. } => Some(*ts),
            SourceEvent::Chunk(c) => Some(c.ts),
            SourceEvent::Error { .. } => None,
        }
    }
}
