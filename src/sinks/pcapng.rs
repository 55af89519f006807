//! The pcapng sink: every relayed connection as a TCP conversation Wireshark and tshark
//! reassemble and dissect as AMQP with no options (a server port other than 5672 is written as
//! 5672, the real address in the SYN's comment: see [`real_addr`]), violations attached as
//! packet comments (`frame.comment`) to the packet holding the offending frame, and each
//! direction's FIN where its `Fin` event puts it (a half-close before the other side's later
//! data), the rest at the close in the order the source saw them (the clean closer's FIN before
//! the other's RST; see [`ending`]).
//!
//! Writes the bytes of `Data` events exactly (already masked); never reorders a direction.
//! Complete blocks reach the file at each `flush`, so a reader sees a valid file between
//! batches.

use crate::hash::{HashMap, HashSet};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use pcap_file::DataLink;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};

use super::coalesce::{Coalescer, Repeated};
use crate::capture::pcapng_write::{Conversation, SynthPacket};
use crate::capture::{boundary, real_addr};
use crate::event::{CloseReason, ConnId, Dir, Event, EventKind, Failure, Timestamp, Violation};
use crate::pipeline::Sink;

/// Per-connection state.
struct ConnState {
    conv: Conversation,
    /// Which violations become comments one by one, which are counted.
    coalescer: Coalescer,
    /// Violations waiting for the packet that holds their frame.
    pending: Vec<Violation>,
    /// The comment for the conversation's SYN (the real server address, when its port was
    /// written as 5672).
    syn_comment: Option<String>,
    /// Per direction: the frames and headers seen whose bytes are not written yet, as (offset,
    /// JSONL `"proto"`, `None` for a header), oldest first, at most [`MAX_STARTS`].
    starts: [VecDeque<(u64, Option<&'static str>)>; 2],
    /// Per direction: bytes were left out since the last bytes written.
    hole: [bool; 2],
    /// The boundary comment for the next packet of this direction that carries bytes.
    mark: Option<(Dir, String)>,
}

/// Frame starts remembered per direction ahead of the bytes written (the oldest forgotten
/// beyond: the packet after a hole then goes unmarked, and a reader searches for frames).
const MAX_STARTS: usize = 256;

/// Writes events as a pcapng file.
pub struct PcapngSink<W: Write> {
    writer: PcapNgWriter<W>,
    conns: HashMap<ConnId, ConnState>,
    /// The (client, server) pairs written for the open conversations.
    written: HashSet<(SocketAddr, SocketAddr)>,
    packets: Vec<SynthPacket>,
}

fn io_err(e: pcap_file::PcapError) -> std::io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => std::io::Error::other(other.to_string()),
    }
}

impl PcapngSink<BufWriter<File>> {
    /// Create (truncate) `path` and write the section and interface headers.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Self::new(BufWriter::with_capacity(1 << 20, File::create(path)?))
    }
}

impl<W: Write> PcapngSink<W> {
    /// Write the section and interface headers to `out`.
    pub fn new(out: W) -> std::io::Result<Self> {
        let mut writer = PcapNgWriter::new(out).map_err(io_err)?;
        let mut idb = InterfaceDescriptionBlock::new(DataLink::ETHERNET, 0);
        idb.options = vec![
            // The name marks every conversation on it as one amqpeek relayed (read back as AMQP
            // whatever its port).
            InterfaceDescriptionOption::IfName(Cow::Borrowed(
                crate::capture::pcap_read::RELAY_IF_NAME,
            )),
            // Timestamps written in nanoseconds (pcap-file writes Duration::as_nanos).
            InterfaceDescriptionOption::IfTsResol(9),
        ];
        writer.write_pcapng_block(idb).map_err(io_err)?;
        Ok(PcapngSink {
            writer,
            conns: HashMap::default(),
            written: HashSet::default(),
            packets: Vec::new(),
        })
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        self.writer.get_ref()
    }

    /// Finish and return the underlying writer (flushed).
    pub fn into_inner(mut self) -> std::io::Result<W> {
        self.flush()?;
        Ok(self.writer.into_inner())
    }

    /// The state of `conn`, made for a conversation between `client` and `server` if new.
    ///
    /// A server port other than 5672 is written as 5672, the one port Wireshark dissects as
    /// AMQP (see [`real_addr`]), with the real address in the SYN's comment; unless another
    /// open conversation is written with the same addresses already (the two would merge).
    fn conn(&mut self, conn: ConnId, client: SocketAddr, server: SocketAddr) -> &mut ConnState {
        let written = &mut self.written;
        self.conns.entry(conn).or_insert_with(|| {
            let mut state = ConnState {
                conv: Conversation::new(client, server, conn),
                coalescer: Coalescer::default(),
                pending: Vec::new(),
                syn_comment: None,
                starts: [VecDeque::new(), VecDeque::new()],
                hole: [false, false],
                mark: None,
            };
            if server.port() != real_addr::WIRESHARK_PORT {
                let as_written = SocketAddr::new(server.ip(), real_addr::WIRESHARK_PORT);
                let conv = Conversation::new(client, as_written, conn);
                if !written.contains(&conv.addrs()) {
                    state.conv = conv;
                    state.syn_comment = Some(real_addr::comment(server));
                }
            }
            written.insert(state.conv.addrs());
            state
        })
    }

    /// Forget `conn` (its conversation has ended).
    fn remove(&mut self, conn: ConnId) {
        if let Some(st) = self.conns.remove(&conn) {
            self.written.remove(&st.conv.addrs());
        }
    }

    /// A connection whose `Connect` this sink never saw: invent documentation addresses.
    fn ensure_conn(&mut self, ev: &Event) -> std::io::Result<()> {
        if self.conns.contains_key(&ev.conn) {
            return Ok(());
        }
        let port = 1024 + (ev.conn % 60_000) as u16;
        let client = SocketAddr::from(([192, 0, 2, 1], port));
        let server = SocketAddr::from(([192, 0, 2, 2], 5672));
        let mut out = std::mem::take(&mut self.packets);
        self.conn(ev.conn, client, server).conv.handshake(&mut out);
        self.write_packets(ev.ts, &mut out, ev.conn)?;
        self.packets = out;
        Ok(())
    }

    /// Write synthesised packets, attaching pending violations whose offset each one covers
    /// (or precedes: those go on the next packet of their direction). Once the conversation
    /// has ended, the last packet written takes whatever is still pending, whichever direction
    /// it is about (its comment names the direction).
    fn write_packets(
        &mut self,
        ts: Timestamp,
        packets: &mut Vec<SynthPacket>,
        conn: ConnId,
    ) -> std::io::Result<()> {
        let micros = ts.0.max(0) as u64;
        let count = packets.len();
        for (i, p) in packets.drain(..).enumerate() {
            let mut options = Vec::new();
            if let Some(st) = self.conns.get_mut(&conn) {
                // The handshake is written first: its SYN takes the address comment.
                if let Some(c) = st.syn_comment.take() {
                    options.push(EnhancedPacketOption::Comment(Cow::Owned(c)));
                }
                if !p.payload.is_empty()
                    && let Some((d, _)) = &st.mark
                    && *d == p.dir
                    && let Some((_, c)) = st.mark.take()
                {
                    options.push(EnhancedPacketOption::Comment(Cow::Owned(c)));
                }
                let carries = !p.payload.is_empty() || st.conv.ended();
                let last = st.conv.ended() && i + 1 == count;
                st.pending.retain(|v| {
                    let here = last
                        || v.dir == p.dir
                            && carries
                            && v.offset < p.payload.end.max(p.payload.start + 1);
                    if here {
                        options.push(EnhancedPacketOption::Comment(Cow::Owned(comment(v))));
                    }
                    !here
                });
            }
            let len = p.frame.len() as u32;
            let block = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: Duration::from_micros(micros),
                original_len: len,
                data: Cow::Owned(p.frame),
                options,
            };
            self.writer.write_pcapng_block(block).map_err(io_err)?;
        }
        Ok(())
    }
}

impl ConnState {
    /// A frame (of JSONL `"proto"` `proto_name`) or, with `None`, a protocol header starts at
    /// `offset` of `dir`: remembered until its bytes are written.
    fn starts(&mut self, dir: Dir, offset: u64, proto_name: Option<&'static str>) {
        let starts = &mut self.starts[dir.index()];
        if offset < self.conv.offset(dir) || starts.back().is_some_and(|s| s.0 >= offset) {
            return;
        }
        if starts.len() >= MAX_STARTS {
            starts.pop_front();
        }
        starts.push_back((offset, proto_name));
    }

    /// `bytes` of `dir` at `offset` go out, the first packet marked as starting at a boundary
    /// when they follow a hole and start where a frame or header does.
    fn data(&mut self, dir: Dir, offset: u64, bytes: &[u8], out: &mut Vec<SynthPacket>) {
        if bytes.is_empty() {
            return;
        }
        let i = dir.index();
        let hole = std::mem::take(&mut self.hole[i]) || offset > self.conv.offset(dir);
        let starts = &mut self.starts[i];
        while starts.front().is_some_and(|s| s.0 < offset) {
            starts.pop_front();
        }
        if hole
            && let Some(&(at, proto)) = starts.front()
            && at == offset
        {
            self.mark = Some((dir, boundary::comment(proto)));
        }
        self.conv.data(dir, offset, bytes, out);
    }
}

/// The packet comment for a violation.
pub fn comment(v: &Violation) -> String {
    let spec = if v.spec.is_empty() {
        String::new()
    } else {
        format!(" [{}]", v.spec)
    };
    format!(
        "amqpeek {} {}: {}{} ({} offset {})",
        v.severity.as_str(),
        v.rule,
        v.message,
        spec,
        v.dir.as_str(),
        v.offset
    )
}

impl<W: Write> Sink for PcapngSink<W> {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        let mut out = std::mem::take(&mut self.packets);
        let res = match &ev.kind {
            EventKind::Connect { client, upstream } => {
                // A reused connection number starts a fresh conversation.
                self.remove(ev.conn);
                self.conn(ev.conn, *client, *upstream)
                    .conv
                    .handshake(&mut out);
                self.write_packets(ev.ts, &mut out, ev.conn)
            }
            EventKind::Data { dir, offset, bytes } => self.ensure_conn(ev).and_then(|_| {
                if let Some(st) = self.conns.get_mut(&ev.conn) {
                    st.data(*dir, *offset, bytes, &mut out);
                }
                self.write_packets(ev.ts, &mut out, ev.conn)
            }),
            EventKind::Gap {
                dir, offset, len, ..
            } => self.ensure_conn(ev).and_then(|_| {
                if let Some(st) = self.conns.get_mut(&ev.conn) {
                    let end = offset.saturating_add(*len);
                    if end > st.conv.offset(*dir) {
                        st.conv.lost(*dir, end, &mut out);
                        st.hole[dir.index()] = true;
                    }
                }
                self.write_packets(ev.ts, &mut out, ev.conn)
            }),
            EventKind::Header { dir, offset, .. } => {
                if let Some(st) = self.conns.get_mut(&ev.conn) {
                    st.starts(*dir, *offset, None);
                }
                Ok(())
            }
            EventKind::Violation(v) => self.ensure_conn(ev).map(|_| {
                if let Some(st) = self.conns.get_mut(&ev.conn)
                    && st.coalescer.keep(ev)
                {
                    st.pending.push(v.clone());
                }
            }),
            EventKind::Frame(f) => {
                if let Some(st) = self.conns.get_mut(&ev.conn) {
                    st.coalescer.keep(ev);
                    st.starts(f.dir, f.offset, Some(f.frame.proto_name()));
                }
                Ok(())
            }
            EventKind::Fin { dir, offset } => self.ensure_conn(ev).and_then(|_| {
                if let Some(st) = self.conns.get_mut(&ev.conn) {
                    st.conv.fin_from(*dir, *offset, &mut out);
                }
                self.write_packets(ev.ts, &mut out, ev.conn)
            }),
            EventKind::Close(info) => self.ensure_conn(ev).and_then(|_| {
                if let Some(st) = self.conns.get_mut(&ev.conn) {
                    // What was counted: a comment each on the last packet.
                    let counted = st.coalescer.close(ev.conn);
                    st.pending.extend(counted.iter().map(Repeated::violation));
                    match ending(&info.reason) {
                        Ending::Fins { first } => st.conv.fin_first(first, &mut out),
                        Ending::Reset { after_fin, by } => {
                            if let Some(d) = after_fin {
                                let offset = st.conv.offset(d);
                                st.conv.fin_from(d, offset, &mut out);
                            }
                            st.conv.rst(by, &mut out);
                        }
                    }
                }
                let res = self.write_packets(ev.ts, &mut out, ev.conn);
                self.remove(ev.conn);
                res
            }),
            // The rest carries no bytes of its own (Data does).
            _ => Ok(()),
        };
        out.clear();
        self.packets = out;
        res
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.get_mut().flush()
    }

    fn records_cuts(&self) -> bool {
        true
    }
}

/// How a connection's packets end.
enum Ending {
    /// FINs both ways, `first`'s first (unless a half-close wrote one already); crossing
    /// when who closed first is not known.
    Fins {
        /// The side whose FIN goes first, when known.
        first: Option<Dir>,
    },
    /// An RST from `by`, after `after_fin`'s FIN when that side had closed cleanly first.
    Reset {
        /// The side that closed cleanly before the reset (its FIN goes first).
        after_fin: Option<Dir>,
        /// The side that reset.
        by: Dir,
    },
}

/// How a connection that closed for `reason` ends in the packets written, in the order the
/// source saw it: a reset the proxy saw (`client reset: ...`) is an RST from that peer, after
/// the FIN of the peer that had closed cleanly before (`client closed, then upstream reset:
/// ...`) when no `Fin` event wrote it already; the upstream refusing the proxy's connection an
/// RST from it; a reset a capture saw likewise (from the client when it did not say whom).
/// Anything else ends with FINs, the first closer's acknowledged by the other's; FINs that
/// cross when the source does not say who closed first (a capture's `FIN both ways`, the proxy
/// stopping, a capture ending, unknown words), so that reading the file back blames nobody the
/// source did not.
fn ending(reason: &CloseReason) -> Ending {
    match reason {
        CloseReason::Failed {
            clean_first,
            by,
            how: Failure::Reset,
            ..
        } => Ending::Reset {
            after_fin: *clean_first,
            by: *by,
        },
        CloseReason::Refused(_) => Ending::Reset {
            after_fin: None,
            by: Dir::S2C,
        },
        CloseReason::Reset { by, after_fin } => Ending::Reset {
            after_fin: *after_fin,
            by: by.unwrap_or(Dir::C2S),
        },
        CloseReason::Closed { first } => Ending::Fins {
            first: Some(*first),
        },
        CloseReason::FinBothWays { first } => Ending::Fins { first: *first },
        _ => Ending::Fins { first: None },
    }
}
