//! Captures: writing relayed connections as pcapng ([`pcapng_write`] and [`real_addr`], used by
//! `sinks::pcapng`), and reading any capture back as a stream of [`SourceEvent`]s for offline
//! replay: pcap and pcapng from tcpdump / Wireshark (see [`link`] for the link types) and
//! amqpeek's own JSONL, told apart by their first bytes.
//!
//! ```no_run
//! use amqpeek::capture::{self, CaptureOptions, SourceEvent};
//! let source = capture::open("trace.pcapng".as_ref(), CaptureOptions::default())?;
//! for ev in source {
//!     match ev {
//!         SourceEvent::Chunk(chunk) => { /* inspector.chunk(chunk.dir, chunk.ts, chunk.bytes, ..) */ }
//!         SourceEvent::Error { file_offset, message } => eprintln!("{file_offset}: {message}"),
//!         _ => {}
//!     }
//! }
//! # Ok::<(), capture::OpenError>(())
//! ```
//!
//! Reading streams: constant memory whatever the file size (bounded windows, bounded
//! reassembly, closed connections evicted). Never panics on hostile files.

pub mod boundary;
pub mod conn_table;
pub mod counted;
pub mod jsonl_read;
pub mod link;
pub mod pcap_read;
pub mod pcapng_write;
pub mod real_addr;
pub mod source;
pub mod stop;
pub mod tcp_reassembly;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

pub use conn_table::{CaptureOptions, ConnTable};
pub use pcap_read::Format;
pub use source::SourceEvent;
pub use stop::Stop;

use bytes::Bytes;

use crate::event::Timestamp;
use link::NotTcp;
use pcap_read::{Packet, PacketReader};

/// Why a capture could not be opened at all.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The first bytes are not pcap, pcapng or JSONL.
    #[error("{0}: not a pcap, pcapng or amqpeek JSONL file")]
    UnknownFormat(String),
    /// The file header is unreadable.
    #[error("{0}")]
    BadHeader(#[from] pcap_read::ReadError),
}

/// Counts of packets the reader passed over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkipCounts {
    /// Packets read.
    pub packets: u64,
    /// Not TCP over IP, or of an unsupported link type.
    pub not_tcp: u64,
    /// IP fragments (not reassembled; their bytes show up as gaps).
    pub fragments: u64,
    /// Malformed headers.
    pub malformed: u64,
}

/// Source events from a pcap or pcapng stream.
pub struct PacketSource<R: Read> {
    reader: PacketReader<R>,
    format: Format,
    table: ConnTable,
    /// Real server addresses named by amqpeek's SYN comments.
    real: real_addr::RealAddrs,
    last_ts: Timestamp,
    skips: SkipCounts,
    error: Option<SourceEvent>,
    done: bool,
}

impl<R: Read> PacketSource<R> {
    /// Read packets from `src` in `format` (`Pcap` or `Pcapng`).
    pub fn new(src: R, format: Format, opts: CaptureOptions) -> Result<Self, OpenError> {
        Self::with_head(Bytes::new(), src, format, opts)
    }

    /// Read packets from `head` then the rest of `src` (see [`PacketReader::with_head`]).
    pub fn with_head(
        head: Bytes,
        src: R,
        format: Format,
        opts: CaptureOptions,
    ) -> Result<Self, OpenError> {
        Ok(PacketSource {
            reader: PacketReader::with_head(head, src, format)?,
            format,
            real: real_addr::RealAddrs::new(opts.max_connections),
            table: ConnTable::new(opts),
            last_ts: Timestamp(0),
            skips: SkipCounts::default(),
            error: None,
            done: false,
        })
    }

    /// What was skipped so far.
    pub fn skips(&self) -> SkipCounts {
        self.skips
    }
}

impl<R: Read> Iterator for PacketSource<R> {
    type Item = SourceEvent;

    fn next(&mut self) -> Option<SourceEvent> {
        loop {
            if let Some(e) = self.table.pop() {
                return Some(e);
            }
            if self.done {
                return self.error.take();
            }
            let (table, real, skips) = (&mut self.table, &mut self.real, &mut self.skips);
            // The usual packet read in place, else by the general path.
            if let Some(p) = self.reader.plain_packet() {
                self.last_ts = p.ts;
                match take(table, real, skips, p) {
                    Some(e) => return Some(e),
                    None => continue,
                }
            }
            match self.reader.next_packet() {
                Some(Ok(p)) => {
                    self.last_ts = p.ts;
                    if let Some(e) = take(table, real, skips, p) {
                        return Some(e);
                    }
                }
                Some(Err(e)) => {
                    self.error = Some(SourceEvent::Error {
                        file_offset: e.file_offset,
                        message: e.message,
                    });
                    self.table.finish_all(self.last_ts);
                    self.done = true;
                }
                None => {
                    self.table.finish_all(self.last_ts);
                    self.done = true;
                }
            }
        }
    }
}

/// Take packet `p`: its TCP segment through `table` (with the real server addresses `real`
/// restored), counted in `skips`; the next event made so far, if any.
#[inline(always)]
fn take(
    table: &mut ConnTable,
    real: &mut real_addr::RealAddrs,
    skips: &mut SkipCounts,
    p: Packet<'_>,
) -> Option<SourceEvent> {
    skips.packets += 1;
    // The usual frame read in place, else the general decoding.
    let mut seg = match link::plain_tcp_segment(p.linktype, p.data) {
        Some(seg) => seg,
        None => match link::tcp_segment(p.linktype, p.data) {
            Ok(seg) => seg,
            Err(NotTcp::Fragment) => {
                skips.fragments += 1;
                return None;
            }
            Err(NotTcp::Malformed) => {
                skips.malformed += 1;
                return None;
            }
            Err(_) => {
                skips.not_tcp += 1;
                return None;
            }
        },
    };
    seg.window = Some(p.window);
    if let Some(addr) = p.real_server {
        real.announce(&seg, addr);
    }
    real.restore(&mut seg);
    seg.relayed = p.relayed;
    seg.boundary = p.boundary;
    table.segment_then_pop(p.ts, &seg)
}

/// A capture being read, whatever its format.
pub enum CaptureSource {
    /// pcap / pcapng (boxed: it holds the read window and the connection table).
    Packets(Box<PacketSource<Box<dyn Read + Send>>>),
    /// amqpeek JSONL.
    Jsonl(jsonl_read::JsonlSource<Box<dyn BufRead + Send>>),
}

impl CaptureSource {
    /// The format being read.
    pub fn format(&self) -> Format {
        match self {
            CaptureSource::Packets(p) => p.format,
            CaptureSource::Jsonl(_) => Format::Jsonl,
        }
    }

    /// Packets passed over so far (packet captures only).
    pub fn skips(&self) -> Option<SkipCounts> {
        match self {
            CaptureSource::Packets(p) => Some(p.skips()),
            CaptureSource::Jsonl(_) => None,
        }
    }
}

impl Iterator for CaptureSource {
    type Item = SourceEvent;
    fn next(&mut self) -> Option<SourceEvent> {
        match self {
            CaptureSource::Packets(p) => p.next(),
            CaptureSource::Jsonl(j) => j.next(),
        }
    }
}

/// Open a capture file, detecting its format from its first bytes.
pub fn open(path: &Path, opts: CaptureOptions) -> Result<CaptureSource, OpenError> {
    open_with(path, opts, |f| f)
}

/// As [`open`], reading no further once `stop` is set (the capture then ends where reading
/// stopped, as a file would).
pub fn open_stoppable(
    path: &Path,
    opts: CaptureOptions,
    stop: &Stop,
) -> Result<CaptureSource, OpenError> {
    open_with(path, opts, |f| stop::stoppable(f, stop, false))
}

/// As [`open_stoppable`], adding the bytes read of the file to `read` (a progress bar).
pub fn open_counted(
    path: &Path,
    opts: CaptureOptions,
    stop: &Stop,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Result<CaptureSource, OpenError> {
    open_with(path, opts, |f| {
        stop::stoppable(Box::new(counted::Counted::new(f, read)), stop, false)
    })
}

fn open_with(
    path: &Path,
    opts: CaptureOptions,
    wrap: impl FnOnce(Box<dyn Read + Send>) -> Box<dyn Read + Send>,
) -> Result<CaptureSource, OpenError> {
    let io = |source| OpenError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    from_reader(wrap(Box::new(file)), opts).map_err(|e| match e {
        OpenError::UnknownFormat(_) => OpenError::UnknownFormat(path.display().to_string()),
        other => other,
    })
}

/// Read a capture from any byte stream (a file, a pipe), detecting its format from its first
/// bytes (read until they tell, however few each read returns).
pub fn from_reader(
    mut src: Box<dyn Read + Send>,
    opts: CaptureOptions,
) -> Result<CaptureSource, OpenError> {
    /// Bytes looked at to tell the format (JSONL may start with blank space).
    const SNIFF: usize = 1 << 16;
    let mut head = Vec::with_capacity(4096);
    let format = loop {
        let have = head.len();
        if let Some(f) = pcap_read::detect(&head) {
            break Some(f);
        }
        // Four bytes that are no magic, and something but blank space: nothing known.
        let undecided = have < 4 || head.iter().all(u8::is_ascii_whitespace);
        if !undecided || have >= SNIFF {
            break None;
        }
        head.resize(have + 4096, 0);
        let got = loop {
            match src.read(&mut head[have..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        head.truncate(have + *got.as_ref().unwrap_or(&0));
        match got {
            // Nothing but blank space: a JSONL capture with no record in it (a proxy run
            // with no connection), read as the empty capture it is.
            Ok(0) if head.iter().all(u8::is_ascii_whitespace) => break Some(Format::Jsonl),
            Ok(0) => break pcap_read::detect(&head),
            Ok(_) => {}
            Err(source) => {
                return Err(OpenError::Io {
                    path: "<input>".into(),
                    source,
                });
            }
        }
    };
    match format {
        Some(Format::Jsonl) => Ok(CaptureSource::Jsonl(
            jsonl_read::JsonlSource::with_max_connections(
                Box::new(BufReader::with_capacity(
                    1 << 16,
                    std::io::Cursor::new(head).chain(src),
                )),
                opts.max_connections,
            ),
        )),
        // The packet reader has its own window: hand it what was read and the stream itself,
        // so no buffered reader copies every byte once more.
        Some(f) => Ok(CaptureSource::Packets(Box::new(PacketSource::with_head(
            Bytes::from(head),
            src,
            f,
            opts,
        )?))),
        None => Err(OpenError::UnknownFormat("<input>".into())),
    }
}
