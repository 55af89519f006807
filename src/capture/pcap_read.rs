//! Streaming packet reader for pcap (both byte orders, µs and ns) and pcapng (any section byte
//! order, per-interface link type and `if_tsresol`) files.
//!
//! Reads through a fixed-size window, never the whole file; every record is bounds-checked
//! before it is buffered, and a truncated or corrupt file ends with an error that names the
//! byte offset where the damage starts. Block parsing is pcap-file's.

use std::io::{self, Read};

use bytes::{Bytes, BytesMut};

use std::net::SocketAddr;

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgParser};

use crate::event::Timestamp;

/// Largest record accepted; bigger lengths mean a corrupt file.
pub const MAX_RECORD: usize = 64 * 1024 * 1024;

const PCAPNG_SHB: u32 = 0x0A0D_0D0A;

/// The file formats recognised by their first four bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap.
    Pcap,
    /// pcapng.
    Pcapng,
    /// amqpeek JSONL.
    Jsonl,
}

/// Recognise a capture format from its first bytes.
pub fn detect(head: &[u8]) -> Option<Format> {
    let magic = head.get(..4)?;
    match magic {
        [0x0A, 0x0D, 0x0D, 0x0A] => Some(Format::Pcapng),
        [0xA1, 0xB2, 0xC3, 0xD4]
        | [0xD4, 0xC3, 0xB2, 0xA1]
        | [0xA1, 0xB2, 0x3C, 0x4D]
        | [0x4D, 0x3C, 0xB2, 0xA1] => Some(Format::Pcap),
        _ => {
            let first = head.iter().find(|b| !b.is_ascii_whitespace())?;
            (*first == b'{').then_some(Format::Jsonl)
        }
    }
}

/// A packet, borrowed from the reader's window.
#[derive(Debug)]
pub struct Packet<'a> {
    /// Capture time.
    pub ts: Timestamp,
    /// Link type of its interface.
    pub linktype: u32,
    /// Captured bytes.
    pub data: &'a [u8],
    /// The reader's window `data` lies in: parts of `data` can be shared from it
    /// ([`Bytes::slice_ref`]) instead of copied.
    pub window: &'a Bytes,
    /// Byte offset of its record in the file.
    pub file_offset: u64,
    /// The real server address named by an amqpeek packet comment on it (see
    /// [`super::real_addr`]).
    pub real_server: Option<std::net::SocketAddr>,
    /// Captured on an interface amqpeek's pcapng sink declared (`if_name` `amqpeek`): every TCP
    /// conversation on it is a connection amqpeek relayed, so an AMQP one whatever its port
    /// and first bytes.
    pub relayed: bool,
    /// An amqpeek packet comment on it says its payload starts at a frame or protocol header
    /// (see [`super::boundary`]).
    pub boundary: Option<super::boundary::Boundary>,
}

/// What amqpeek packet comments on one packet say.
#[derive(Clone, Copy, Debug, Default)]
struct Notes {
    /// The real server address (see [`super::real_addr`]).
    real_server: Option<SocketAddr>,
    /// Its payload starts at a boundary (see [`super::boundary`]).
    boundary: Option<super::boundary::Boundary>,
}

/// The `if_name` amqpeek's pcapng sink gives its one interface.
pub const RELAY_IF_NAME: &str = "amqpeek";

/// Why reading stopped early.
#[derive(Debug, thiserror::Error)]
#[error("at byte {file_offset}: {message}")]
pub struct ReadError {
    /// Where the unreadable part starts.
    pub file_offset: u64,
    /// What is wrong.
    pub message: String,
}

#[derive(Clone, Copy, Debug)]
struct Iface {
    linktype: u32,
    /// Timestamp units per second.
    units_per_sec: u64,
    /// Its `if_name` is [`RELAY_IF_NAME`].
    relayed: bool,
}

enum Kind {
    Pcap {
        big_endian: bool,
        nanos: bool,
        linktype: u32,
    },
    Pcapng {
        parser: Option<PcapNgParser>,
        big_endian: bool,
        ifaces: Vec<Iface>,
    },
}

/// Bytes read from the file at a time (the window grows for a larger record). Whatever keeps
/// a part of a packet (a frame shown in the TUI, a message being assembled) keeps its whole
/// window alive, so this is also the most memory one kept frame can hold: the same bound as the
/// proxy's read buffers.
const WINDOW: usize = 64 * 1024;

/// Windows still partly held elsewhere when reading moved on, kept to be reused once let go
/// (at most this many, of [`WINDOW`] bytes: 2 MiB).
const RETIRED_WINDOWS: usize = 32;

/// Reads packets one at a time from a pcap or pcapng stream.
pub struct PacketReader<R: Read> {
    src: R,
    /// The window: read-only once filled, so packets' bytes can be shared out of it; a refill
    /// starts a new one (with the unread tail copied over) and leaves the old one to whoever
    /// still holds parts of it. Only `..len` holds bytes of the file.
    buf: Bytes,
    /// Earlier windows still partly held elsewhere when reading moved on (oldest first).
    retired: Vec<Bytes>,
    pos: usize,
    len: usize,
    /// File offset of `buf[pos]`.
    file_offset: u64,
    kind: Kind,
    last_ts: Timestamp,
    done: bool,
}

impl<R: Read> PacketReader<R> {
    /// Start reading; `format` must be `Pcap` or `Pcapng` (see [`detect`]).
    pub fn new(src: R, format: Format) -> Result<Self, ReadError> {
        Self::with_head(Bytes::new(), src, format)
    }

    /// Start reading `head` (the stream's first bytes, already read to detect its format)
    /// followed by the rest of `src`: the window is filled straight from `src`, with no
    /// buffered reader copying every byte once more in between.
    pub fn with_head(head: Bytes, src: R, format: Format) -> Result<Self, ReadError> {
        let kind = match format {
            Format::Pcap => Kind::Pcap {
                big_endian: false,
                nanos: false,
                linktype: 0,
            },
            _ => Kind::Pcapng {
                parser: None,
                big_endian: false,
                ifaces: Vec::new(),
            },
        };
        let len = head.len();
        let mut r = PacketReader {
            src,
            buf: head,
            retired: Vec::new(),
            pos: 0,
            len,
            file_offset: 0,
            kind,
            last_ts: Timestamp(0),
            done: false,
        };
        if format == Format::Pcap {
            r.read_pcap_header()?;
        }
        Ok(r)
    }

    fn err(&mut self, message: impl Into<String>) -> ReadError {
        self.done = true;
        ReadError {
            file_offset: self.file_offset,
            message: message.into(),
        }
    }

    /// Make at least `n` bytes available at `buf[pos..]`; false at end of input.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        if self.len - self.pos >= n {
            return Ok(true);
        }
        let size = WINDOW.max(n.next_power_of_two());
        let mut len = self.len - self.pos;
        // The old window is taken back when nobody holds a part of it any more (the usual
        // case): no new allocation, and nothing to zero.
        let mut next = match std::mem::take(&mut self.buf).try_into_mut() {
            Ok(mut old) => {
                old.copy_within(self.pos..self.len, 0);
                if old.len() < size {
                    old.resize(size, 0);
                }
                old
            }
            Err(old) => {
                // Still shared (a message being assembled holds a part): reuse a retired
                // window nobody holds any more, or make a new one.
                let mut next = self.spare_window(size);
                next[..len].copy_from_slice(&old[self.pos..self.len]);
                // Only windows of the usual size: one grown for a huge record is not kept.
                if old.len() <= WINDOW {
                    if self.retired.len() == RETIRED_WINDOWS {
                        self.retired.remove(0);
                    }
                    self.retired.push(old);
                }
                next
            }
        };
        let mut more = true;
        while len < n {
            let got = match self.src.read(&mut next[len..]) {
                Ok(g) => g,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if got == 0 {
                more = false;
                break;
            }
            len += got;
        }
        // The window keeps its full size (bytes past `len` are stale, never handed out), so
        // reusing it zeroes nothing.
        self.buf = next.freeze();
        self.pos = 0;
        self.len = len;
        Ok(more)
    }

    /// A window of at least `size` bytes: a retired one whose parts were all let go (no
    /// allocation, nothing to zero), or a new one.
    fn spare_window(&mut self, size: usize) -> BytesMut {
        let free = self.retired.iter().position(Bytes::is_unique);
        if let Some(Ok(mut w)) = free.map(|i| self.retired.swap_remove(i).try_into_mut()) {
            if w.len() < size {
                w.resize(size, 0);
            }
            return w;
        }
        BytesMut::zeroed(size)
    }

    fn need(&mut self, n: usize, what: &str) -> Result<bool, ReadError> {
        match self.fill(n) {
            Ok(true) => Ok(true),
            Ok(false) if self.len == self.pos => Ok(false),
            Ok(false) => {
                let have = self.len - self.pos;
                Err(self.err(format!(
                    "file truncated inside {what} ({have} of {n} bytes present)"
                )))
            }
            Err(e) => Err(self.err(format!("read error: {e}"))),
        }
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.file_offset += n as u64;
    }

    fn read_pcap_header(&mut self) -> Result<(), ReadError> {
        if !self.need(24, "the pcap file header")? {
            return Err(self.err("empty file"));
        }
        let h = &self.buf[self.pos..self.pos + 24];
        let (big_endian, nanos) = match [h[0], h[1], h[2], h[3]] {
            [0xA1, 0xB2, 0xC3, 0xD4] => (true, false),
            [0xD4, 0xC3, 0xB2, 0xA1] => (false, false),
            [0xA1, 0xB2, 0x3C, 0x4D] => (true, true),
            [0x4D, 0x3C, 0xB2, 0xA1] => (false, true),
            _ => return Err(self.err("not a pcap file (bad magic)")),
        };
        let rd = |b: &[u8]| {
            let a = [b[0], b[1], b[2], b[3]];
            if big_endian {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        // The link type is the low 16 bits; the top bits carry FCS information.
        let linktype = rd(&h[20..24]) & 0xFFFF;
        self.kind = Kind::Pcap {
            big_endian,
            nanos,
            linktype,
        };
        self.consume(24);
        Ok(())
    }

    /// The next packet, `None` at the end of the file. After an error, `None` forever.
    #[inline]
    pub fn next_packet(&mut self) -> Option<Result<Packet<'_>, ReadError>> {
        if self.done {
            return None;
        }
        match &self.kind {
            Kind::Pcap { .. } => self.next_pcap(),
            Kind::Pcapng { .. } => self.next_pcapng(),
        }
    }

    fn next_pcap(&mut self) -> Option<Result<Packet<'_>, ReadError>> {
        let Kind::Pcap {
            big_endian,
            nanos,
            linktype,
        } = self.kind
        else {
            return None;
        };
        match self.need(16, "a packet record header") {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                return None;
            }
            Err(e) => return Some(Err(e)),
        }
        let h = &self.buf[self.pos..self.pos + 16];
        let rd = |at: usize| {
            let a = [h[at], h[at + 1], h[at + 2], h[at + 3]];
            if big_endian {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        let (sec, frac, incl) = (rd(0) as i64, rd(4) as i64, rd(8) as usize);
        if incl > MAX_RECORD {
            return Some(Err(
                self.err(format!("corrupt packet record (captured length {incl})"))
            ));
        }
        let micros = if nanos { frac / 1000 } else { frac };
        let ts = Timestamp(sec * 1_000_000 + micros);
        match self.need(16 + incl, "a packet record") {
            Ok(true) => {}
            Ok(false) => return Some(Err(self.err("file truncated inside a packet record"))),
            Err(e) => return Some(Err(e)),
        }
        let file_offset = self.file_offset;
        let start = self.pos + 16;
        self.consume(16 + incl);
        self.last_ts = ts;
        Some(Ok(Packet {
            ts,
            linktype,
            data: &self.buf[start..start + incl],
            window: &self.buf,
            file_offset,
            real_server: None,
            relayed: false,
            boundary: None,
        }))
    }

    /// The next packet when it is the usual one, a plain enhanced packet block (see
    /// [`plain_enhanced_packet`]) whole in the window: what [`PacketReader::next_packet`] reads
    /// of it. `None`, and nothing read, for anything else ([`PacketReader::next_packet`] then
    /// reads it).
    #[inline]
    pub fn plain_packet(&mut self) -> Option<Packet<'_>> {
        if self.done {
            return None;
        }
        let (ts, iface, off, n, file_offset) = self.plain_pcapng_packet()?;
        Some(Packet {
            ts,
            linktype: iface.linktype,
            data: self.buf.get(off..off + n).unwrap_or_default(),
            window: &self.buf,
            file_offset,
            real_server: None,
            relayed: iface.relayed,
            boundary: None,
        })
    }

    #[inline]
    fn next_pcapng(&mut self) -> Option<Result<Packet<'_>, ReadError>> {
        let found = match self.plain_pcapng_packet() {
            Some((ts, iface, off, n, file_offset)) => {
                (ts, iface, off, n, file_offset, Notes::default())
            }
            None => match self.next_pcapng_packet()? {
                Ok(found) => found,
                Err(e) => return Some(Err(e)),
            },
        };
        let (ts, iface, off, n, file_offset, notes) = found;
        Some(Ok(Packet {
            ts,
            linktype: iface.linktype,
            data: self.buf.get(off..off + n).unwrap_or_default(),
            window: &self.buf,
            file_offset,
            real_server: notes.real_server,
            relayed: iface.relayed,
            boundary: notes.boundary,
        }))
    }

    /// The next block's header: (is it a section header, its byte order, its type, its length),
    /// with the whole block in the window; `None` at the end of the file.
    fn pcapng_block_header(&mut self) -> Option<Result<(bool, bool, u32, usize), ReadError>> {
        match self.need(12, "a block header") {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                return None;
            }
            Err(e) => return Some(Err(e)),
        }
        let h = &self.buf[self.pos..self.pos + 12];
        let btype_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let is_shb = btype_le == PCAPNG_SHB;
        let big_endian = if is_shb {
            match [h[8], h[9], h[10], h[11]] {
                [0x1A, 0x2B, 0x3C, 0x4D] => true,
                [0x4D, 0x3C, 0x2B, 0x1A] => false,
                _ => return Some(Err(self.err("bad section header byte-order magic"))),
            }
        } else {
            match &self.kind {
                Kind::Pcapng { big_endian, .. } => *big_endian,
                Kind::Pcap { .. } => false,
            }
        };
        let rd = |b: &[u8]| {
            let a = [b[0], b[1], b[2], b[3]];
            if big_endian {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            }
        };
        let btype = rd(&h[0..4]);
        let blen = rd(&h[4..8]) as usize;
        if blen < 12 || !blen.is_multiple_of(4) || blen > MAX_RECORD {
            return Some(Err(
                self.err(format!("corrupt block (type {btype:#x}, length {blen})"))
            ));
        }
        match self.need(blen, "a block") {
            Ok(true) => {}
            Ok(false) => return Some(Err(self.err("file truncated inside a block"))),
            Err(e) => return Some(Err(e)),
        }
        Some(Ok((is_shb, big_endian, btype, blen)))
    }

    /// The next block when it is a plain enhanced packet block (see [`plain_enhanced_packet`])
    /// of a declared interface, whole in the window, in a section already open: (ts, its
    /// interface, data offset in `buf`, data length, file offset), read and consumed as
    /// [`PacketReader::next_pcapng_packet`] would, without its general steps. `None`, and
    /// nothing consumed, for anything else: the general path then reads it.
    #[inline]
    fn plain_pcapng_packet(&mut self) -> Option<(Timestamp, Iface, usize, usize, u64)> {
        let Kind::Pcapng {
            parser: Some(_),
            big_endian,
            ifaces,
        } = &self.kind
        else {
            return None;
        };
        let rest = self.buf.get(self.pos..self.len)?;
        // The byte order told once, not at every field.
        let (blen, iface_id, raw_ts, n) = if *big_endian {
            plain_block::<true>(rest)?
        } else {
            plain_block::<false>(rest)?
        };
        let iface = *ifaces.get(iface_id as usize)?;
        let off = self.pos + 28;
        let ts = Timestamp(units_to_micros(raw_ts, iface.units_per_sec));
        let file_offset = self.file_offset;
        self.consume(blen);
        self.last_ts = ts;
        Some((ts, iface, off, n, file_offset))
    }

    /// The next packet block: (ts, its interface, data offset in `buf`, data length, file
    /// offset, what its amqpeek comments say).
    #[allow(clippy::type_complexity)]
    fn next_pcapng_packet(
        &mut self,
    ) -> Option<Result<(Timestamp, Iface, usize, usize, u64, Notes), ReadError>> {
        loop {
            let (is_shb, big_endian, btype, blen) = match self.pcapng_block_header()? {
                Ok(h) => h,
                Err(e) => return Some(Err(e)),
            };
            let file_offset = self.file_offset;
            let (start, end) = (self.pos, self.pos + blen);
            self.consume(blen);
            let block_bytes = &self.buf[start..end];
            let Kind::Pcapng {
                parser,
                big_endian: section_be,
                ifaces,
            } = &mut self.kind
            else {
                return None;
            };
            let fail = |message: String| ReadError {
                file_offset,
                message,
            };
            if is_shb {
                match PcapNgParser::new(block_bytes) {
                    Ok((_, p)) => {
                        *parser = Some(p);
                        *section_be = big_endian;
                        ifaces.clear();
                        continue;
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(fail(format!("bad section header: {e}"))));
                    }
                }
            }
            let Some(p) = parser.as_mut() else {
                self.done = true;
                return Some(Err(fail("pcapng block before any section header".into())));
            };
            let found = match plain_enhanced_packet(btype, block_bytes, big_endian) {
                Some((iface_id, raw_ts, data)) => (iface_id, Some(raw_ts), data, Notes::default()),
                None => {
                    let block = match p.next_block(block_bytes) {
                        Ok((_, b)) => b,
                        Err(e) => {
                            self.done = true;
                            return Some(Err(fail(format!(
                                "corrupt block (type {btype:#x}): {e}"
                            ))));
                        }
                    };
                    let Some(found) = packet_of(block, ifaces) else {
                        continue;
                    };
                    found
                }
            };
            let (iface_id, raw_ts, data, notes) = found;
            let Some(iface) = ifaces.get(iface_id as usize).copied() else {
                self.done = true;
                return Some(Err(fail(format!(
                    "packet for undeclared interface {iface_id}"
                ))));
            };
            let ts = match raw_ts {
                Some(raw) => Timestamp(units_to_micros(raw, iface.units_per_sec)),
                None => self.last_ts,
            };
            self.last_ts = ts;
            let off = (data.as_ptr() as usize).saturating_sub(self.buf.as_ptr() as usize);
            return Some(Ok((ts, iface, off, data.len(), file_offset, notes)));
        }
    }
}

/// Block type of an enhanced packet block.
const PCAPNG_EPB: u32 = 6;

/// The block at the start of `rest` (bytes of byte order `BE`) when it is a plain enhanced
/// packet block (see [`plain_enhanced_packet`]) of a length the general path accepts, whole in
/// `rest`: (its length, its interface, raw timestamp, data length).
#[inline(always)]
fn plain_block<const BE: bool>(rest: &[u8]) -> Option<(usize, u32, u64, usize)> {
    let rd = |b: [u8; 4]| {
        if BE {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let btype = rd(*rest.first_chunk::<4>()?);
    let blen = rd(rest.get(4..8)?.try_into().ok()?) as usize;
    if btype != PCAPNG_EPB || !blen.is_multiple_of(4) || blen > MAX_RECORD {
        return None;
    }
    let (iface_id, raw_ts, data) = plain_epb::<BE>(btype, rest.get(..blen)?)?;
    Some((blen, iface_id, raw_ts, data.len()))
}

/// An enhanced packet block without options (the common kind), read in place: (its
/// interface, raw timestamp, data). `None` for any other block, and for one that is not
/// well-formed or carries options: pcap-file then parses it, and words its errors.
/// `block` is the whole block, its length (a multiple of 4, at least 12) already checked.
#[inline(always)]
fn plain_enhanced_packet(btype: u32, block: &[u8], big_endian: bool) -> Option<(u32, u64, &[u8])> {
    if big_endian {
        plain_epb::<true>(btype, block)
    } else {
        plain_epb::<false>(btype, block)
    }
}

/// [`plain_enhanced_packet`] of a block of byte order `BE`.
#[inline(always)]
fn plain_epb<const BE: bool>(btype: u32, block: &[u8]) -> Option<(u32, u64, &[u8])> {
    // Header: type, length, interface id, timestamp (high, low), captured length, original
    // length; then the data padded to 4 bytes, options (none here) and the length again.
    let h: &[u8; 28] = block.get(..28)?.try_into().ok()?;
    let trailer: [u8; 4] = block.get(block.len().checked_sub(4)?..)?.try_into().ok()?;
    let rd = |b: [u8; 4]| {
        if BE {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let at = |i: usize| rd([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    if btype != PCAPNG_EPB || rd(trailer) as usize != block.len() || block.len() < 32 {
        return None;
    }
    let captured = at(20) as usize;
    let padded = captured.checked_add(3)? & !3;
    if padded != block.len() - 32 {
        return None;
    }
    let raw_ts = (u64::from(at(12)) << 32) + u64::from(at(16));
    Some((at(8), raw_ts, block.get(28..28 + captured)?))
}

/// A pcapng block's packet: (its interface, raw timestamp, data, what its amqpeek comments
/// say); `None` for any other block (an interface description is noted in
/// `ifaces`), and for a packet whose data is not in the file's bytes as they are.
#[allow(clippy::type_complexity)]
fn packet_of<'b>(
    block: Block<'b>,
    ifaces: &mut Vec<Iface>,
) -> Option<(u32, Option<u64>, &'b [u8], Notes)> {
    let borrowed = |data: std::borrow::Cow<'b, [u8]>| match data {
        std::borrow::Cow::Borrowed(d) => Some(d),
        std::borrow::Cow::Owned(_) => None,
    };
    match block {
        Block::InterfaceDescription(idb) => {
            let mut units_per_sec = 1_000_000u64;
            let mut relayed = false;
            for opt in &idb.options {
                match opt {
                    InterfaceDescriptionOption::IfTsResol(r) => units_per_sec = tsresol_units(*r),
                    InterfaceDescriptionOption::IfName(n) => relayed = n == RELAY_IF_NAME,
                    _ => {}
                }
            }
            ifaces.push(Iface {
                linktype: u32::from(idb.linktype) & 0xFFFF,
                units_per_sec,
                relayed,
            });
            None
        }
        Block::EnhancedPacket(EnhancedPacketBlock {
            interface_id,
            timestamp,
            data,
            options,
            ..
        }) => {
            let mut notes = Notes::default();
            for o in &options {
                if let EnhancedPacketOption::Comment(c) = o {
                    notes.real_server = notes.real_server.or(super::real_addr::parse(c));
                    notes.boundary = notes.boundary.or(super::boundary::parse(c));
                }
            }
            // pcap-file hands the raw timestamp units over as "nanoseconds".
            let raw = timestamp.as_nanos() as u64;
            Some((interface_id, Some(raw), borrowed(data)?, notes))
        }
        Block::SimplePacket(spb) => Some((0, None, borrowed(spb.data)?, Notes::default())),
        Block::Packet(pb) => {
            let raw = pb.timestamp;
            Some((
                u32::from(pb.interface_id),
                Some(raw),
                borrowed(pb.data)?,
                Notes::default(),
            ))
        }
        _ => None,
    }
}

/// `if_tsresol` to units per second: bit 7 clear means 10^-v, set means 2^-v.
fn tsresol_units(r: u8) -> u64 {
    let v = u32::from(r & 0x7F);
    if r & 0x80 == 0 {
        10u64.checked_pow(v).unwrap_or(u64::MAX)
    } else {
        1u64.checked_shl(v).unwrap_or(u64::MAX)
    }
}

#[inline(always)]
fn units_to_micros(raw: u64, units_per_sec: u64) -> i64 {
    match units_per_sec {
        1_000_000 => return raw as i64,
        // Nanoseconds, the usual other resolution: a division by a constant (a multiplication),
        // the same quotient as below.
        1_000_000_000 => return (raw / 1000) as i64,
        _ => {}
    }
    // Whole units per microsecond: one division, the same quotient as below.
    if units_per_sec >= 1_000_000 && units_per_sec.is_multiple_of(1_000_000) {
        return (raw / (units_per_sec / 1_000_000)) as i64;
    }
    let units_per_sec = units_per_sec.max(1) as u128;
    ((raw as u128 * 1_000_000) / units_per_sec) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic pcap of `n` packets; packet `i` is `len(i)` bytes of `i as u8`.
    fn pcap(n: usize, len: impl Fn(usize) -> usize) -> Vec<u8> {
        let mut out = Vec::new();
        for v in [0xA1B2_C3D4u32, 0x0004_0002, 0, 0, 65535, 1] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for i in 0..n {
            let l = len(i) as u32;
            for v in [i as u32, 0, l, l] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend(std::iter::repeat_n(i as u8, l as usize));
        }
        out
    }

    /// A pcapng (one interface, nanosecond timestamps, named as amqpeek's sink names its own
    /// when `relayed`) of `n` enhanced packet blocks; packet `i` is `len(i)` bytes of `i as u8`
    /// at `i * 1,234,567 + 7` nanoseconds, with a comment option when `comment(i)`. Also the
    /// file offset of each packet's block.
    fn pcapng(
        n: usize,
        len: impl Fn(usize) -> usize,
        comment: impl Fn(usize) -> bool,
        relayed: bool,
    ) -> (Vec<u8>, Vec<u64>) {
        let mut out = Vec::new();
        let block = |out: &mut Vec<u8>, btype: u32, body: &[u8]| {
            let blen = (12 + body.len()) as u32;
            out.extend_from_slice(&btype.to_le_bytes());
            out.extend_from_slice(&blen.to_le_bytes());
            out.extend_from_slice(body);
            out.extend_from_slice(&blen.to_le_bytes());
        };
        let mut shb = vec![0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0];
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        block(&mut out, PCAPNG_SHB, &shb);
        // Ethernet, no snap length, option if_tsresol = 9, end of options.
        let mut idb = vec![1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 9, 0, 0, 0];
        if relayed {
            // if_name "amqpeek".
            idb.extend_from_slice(&[2, 0, 7, 0]);
            idb.extend_from_slice(b"amqpeek\0");
        }
        idb.extend_from_slice(&[0, 0, 0, 0]);
        block(&mut out, 0x0000_0001, &idb);
        let mut offsets = Vec::new();
        for i in 0..n {
            let l = len(i);
            let ts = i as u64 * 1_234_567 + 7;
            let mut body = Vec::new();
            for v in [0, (ts >> 32) as u32, ts as u32, l as u32, l as u32] {
                body.extend_from_slice(&v.to_le_bytes());
            }
            body.extend(std::iter::repeat_n(i as u8, l));
            body.resize(body.len().next_multiple_of(4), 0);
            if comment(i) {
                // opt_comment "x", then end of options.
                body.extend_from_slice(&[1, 0, 1, 0, b'x', 0, 0, 0, 0, 0, 0, 0]);
            }
            offsets.push(out.len() as u64);
            block(&mut out, PCAPNG_EPB, &body);
        }
        (out, offsets)
    }

    /// A pcapng section header, an interface description (Ethernet, no option) and an
    /// enhanced packet block on interface 0 (`len` bytes at raw time `ts`, with a comment
    /// option when `comment`), all in the byte order `big` says; and where the packet block
    /// starts.
    fn section_with_packet(big: bool, ts: u64, len: usize, comment: bool) -> (Vec<u8>, usize) {
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u16b = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let block = |out: &mut Vec<u8>, btype: u32, body: &[u8]| {
            let blen = (12 + body.len()) as u32;
            out.extend_from_slice(&u32b(btype));
            out.extend_from_slice(&u32b(blen));
            out.extend_from_slice(body);
            out.extend_from_slice(&u32b(blen));
        };
        let mut out = Vec::new();
        let mut shb = u32b(0x1A2B_3C4D).to_vec();
        shb.extend_from_slice(&u16b(1));
        shb.extend_from_slice(&u16b(0));
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        block(&mut out, PCAPNG_SHB, &shb);
        let mut idb = u16b(1).to_vec();
        idb.extend_from_slice(&u16b(0));
        idb.extend_from_slice(&u32b(0));
        block(&mut out, 1, &idb);
        let mut epb = Vec::new();
        for v in [0, (ts >> 32) as u32, ts as u32, len as u32, len as u32] {
            epb.extend_from_slice(&u32b(v));
        }
        epb.extend((0..len).map(|i| i as u8));
        epb.resize(epb.len().next_multiple_of(4), 0);
        if comment {
            for v in [1, 1] {
                epb.extend_from_slice(&u16b(v));
            }
            epb.extend_from_slice(b"x\0\0\0\0\0\0\0");
        }
        let at = out.len();
        block(&mut out, PCAPNG_EPB, &epb);
        (out, at)
    }

    #[test]
    fn plain_packet_blocks_of_either_byte_order_read_in_place_as_pcap_file_reads_them() {
        let ts = 0x0001_0203_0405_0607u64;
        for big in [false, true] {
            for len in [0, 1, 3, 4, 54, 1514] {
                for comment in [false, true] {
                    let (file, at) = section_with_packet(big, ts, len, comment);
                    let case = format!("big-endian {big}, {len} bytes, comment {comment}");
                    let (rest, mut parser) = PcapNgParser::new(&file).unwrap();
                    let (rest, _) = parser.next_block(rest).unwrap();
                    let (_, block) = parser.next_block(rest).unwrap();
                    let mut ifaces = Vec::new();
                    let (iface, raw, data, _) = packet_of(block, &mut ifaces).unwrap();
                    let plain = if big {
                        plain_block::<true>(&file[at..])
                    } else {
                        plain_block::<false>(&file[at..])
                    };
                    if comment {
                        assert_eq!(plain, None, "{case}: options go the general way");
                        continue;
                    }
                    assert_eq!(
                        plain,
                        Some((file.len() - at, iface, raw.unwrap(), data.len())),
                        "{case}"
                    );
                    assert_eq!(raw, Some(ts), "{case}");
                    assert_eq!(data, &file[at + 28..at + 28 + len], "{case}");
                }
            }
        }
    }

    #[test]
    fn pcapng_packets_read_the_same_whole_in_the_window_or_across_its_end() {
        let len = |i: usize| [0, 1, 54, 1514, 9001, 70_000][i % 6] + i % 5;
        let (file, offsets) = pcapng(600, len, |i| i % 7 == 3, false);
        for stream in [true, false] {
            let src = reading(&file, stream);
            let mut r = PacketReader::new(src, Format::Pcapng).unwrap();
            let mut i = 0;
            while let Some(p) = r.next_packet() {
                let p = p.unwrap();
                assert_eq!(
                    p.ts,
                    Timestamp((i as i64 * 1_234_567 + 7) / 1000),
                    "packet {i}"
                );
                assert_eq!(p.linktype, 1);
                assert_eq!(p.file_offset, offsets[i], "packet {i}");
                assert_eq!(p.data.len(), len(i), "packet {i}");
                assert!(p.data.iter().all(|&x| x == i as u8), "packet {i}");
                i += 1;
            }
            assert_eq!(i, 600);
        }
    }

    #[test]
    fn the_usual_packets_read_in_place_are_what_the_general_reading_gives() {
        let len = |i: usize| [0, 1, 54, 1514, 9001, 70_000][i % 6] + i % 5;
        let (file, _) = pcapng(600, len, |i| i % 7 == 3, true);
        // What a reading gives of a packet (its window's bytes aside).
        let fields = |p: Packet<'_>| {
            let notes = (p.real_server, p.relayed, format!("{:?}", p.boundary));
            (p.ts, p.linktype, p.data.to_vec(), p.file_offset, notes)
        };
        for stream in [true, false] {
            let mut general = PacketReader::new(reading(&file, stream), Format::Pcapng).unwrap();
            let mut plain = PacketReader::new(reading(&file, stream), Format::Pcapng).unwrap();
            let (mut n, mut in_place) = (0, 0);
            loop {
                let want = general.next_packet().map(|p| fields(p.unwrap()));
                let got = match plain.plain_packet() {
                    Some(p) => {
                        in_place += 1;
                        Some(fields(p))
                    }
                    None => plain.next_packet().map(|p| fields(p.unwrap())),
                };
                assert!(want.as_ref().is_none_or(|w| w.4.1), "packet {n}: relayed");
                assert_eq!(got, want, "packet {n}");
                if want.is_none() {
                    break;
                }
                n += 1;
            }
            assert_eq!(n, 600);
            assert!(in_place > 300, "{in_place} packets read in place");
        }
    }

    /// `file` to read: 7,000 bytes at a time (`dribble`), or whole.
    fn reading(file: &[u8], dribble: bool) -> Box<dyn Read> {
        let file = std::io::Cursor::new(file.to_vec());
        if dribble {
            Box::new(Dribble(file))
        } else {
            Box::new(file)
        }
    }

    /// Reads at most 7,000 bytes at a time, so windows end anywhere.
    struct Dribble(std::io::Cursor<Vec<u8>>);
    impl Read for Dribble {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(7000);
            self.0.read(&mut buf[..n])
        }
    }

    #[test]
    fn a_window_grown_for_a_huge_record_is_not_kept_for_reuse() {
        // Packet 3 is 1 MiB: its window grows to hold it.
        let len = |i: usize| if i == 3 { 1 << 20 } else { 30_000 };
        let file = pcap(40, len);
        let mut r = PacketReader::new(std::io::Cursor::new(file), Format::Pcap).unwrap();
        let mut kept = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            // Everything stays held, so every window is retired when reading moves on.
            kept.push(p.window.slice_ref(p.data));
        }
        assert_eq!(kept.len(), 40);
        assert_eq!(kept[3].len(), 1 << 20);
        assert!(!r.retired.is_empty());
        assert!(r.retired.iter().all(|w| w.len() <= WINDOW));
    }

    #[test]
    fn parts_kept_from_earlier_windows_are_never_overwritten() {
        let len = |i: usize| 200 + i * 7919 % 3000;
        let file = pcap(2000, len);
        assert!(file.len() > 40 * WINDOW, "enough windows to recycle");
        for stream in [true, false] {
            let src = reading(&file, stream);
            let mut r = PacketReader::new(src, Format::Pcap).unwrap();
            // Keep some packets for good, others only for a while (as a message being
            // assembled does), so that some windows are let go and reused and others not.
            let mut kept = Vec::new();
            let mut brief = std::collections::VecDeque::new();
            let mut i = 0;
            while let Some(p) = r.next_packet() {
                let p = p.unwrap();
                let part = p.window.slice_ref(p.data);
                if i % 5 == 0 {
                    kept.push((i, part));
                } else {
                    brief.push_back((i, part));
                    if brief.len() > 60 {
                        let (j, b) = brief.pop_front().unwrap();
                        assert!(b.iter().all(|&x| x == j as u8), "packet {j} changed");
                    }
                }
                i += 1;
            }
            assert_eq!(i, 2000);
            for (j, b) in kept.iter().chain(&brief) {
                assert_eq!(b.len(), len(*j), "packet {j}");
                assert!(b.iter().all(|&x| x == *j as u8), "packet {j} changed");
            }
        }
    }
}
