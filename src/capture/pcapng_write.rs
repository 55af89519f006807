//! Synthesising the TCP conversation of a relayed connection: Ethernet + IPv4/IPv6 + TCP
//! packets with the addresses and ports given, a three-way handshake, consistent sequence and
//! acknowledgement numbers, payload cut into segments, each side's FIN where it closed (or at
//! the end) or an RST, and correct checksums (etherparse builds the headers), so Wireshark
//! reassembles the stream with no options.
//!
//! Pure packet building: no file I/O here (the pcapng sink writes the blocks).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use etherparse::{PacketBuilder, TcpHeader, TcpOptionElement};

use crate::event::Dir;

/// Largest TCP payload per synthesised segment (keeps the IPv4 total length below 65536).
pub const MAX_SEGMENT: usize = 65_000;

/// Window scale announced in the SYNs (window 65535 << 7, about 8 MiB).
const WINDOW_SCALE: u8 = 7;

/// The receiver acknowledges once this many bytes are outstanding in one direction.
const ACK_EVERY: u64 = 1024 * 1024;

const CLIENT_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
const SERVER_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];

/// One synthesised packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthPacket {
    /// Who sent it.
    pub dir: Dir,
    /// The Ethernet frame.
    pub frame: Vec<u8>,
    /// Stream offsets (in `dir`'s stream) of the payload it carries; empty for control packets.
    pub payload: std::ops::Range<u64>,
}

/// TCP state of one synthesised conversation.
#[derive(Clone, Debug)]
pub struct Conversation {
    addrs: [SocketAddr; 2],
    /// Sequence number of the next byte each side sends.
    next_seq: [u32; 2],
    /// Stream offset of the next byte each side sends.
    offset: [u64; 2],
    /// Bytes each side sent that the other has not acknowledged.
    unacked: [u64; 2],
    /// Each side has sent its FIN.
    fin: [bool; 2],
    /// Who sent the first FIN.
    first_fin: Option<Dir>,
    ended: bool,
}

fn same_family(a: SocketAddr, b: SocketAddr) -> (SocketAddr, SocketAddr) {
    let v6 = |s: SocketAddr| match s.ip() {
        IpAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), s.port()),
        IpAddr::V6(_) => s,
    };
    if a.is_ipv4() == b.is_ipv4() {
        (a, b)
    } else {
        (v6(a), v6(b))
    }
}

impl Conversation {
    /// A conversation between `client` and `server` (mixed IPv4/IPv6 pairs are written as
    /// IPv6 with IPv4-mapped addresses), with initial sequence numbers derived from `seed`.
    pub fn new(client: SocketAddr, server: SocketAddr, seed: u64) -> Self {
        let (client, server) = same_family(client, server);
        let mix = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Conversation {
            addrs: [client, server],
            next_seq: [(mix >> 32) as u32, mix as u32 ^ 0x5A5A_5A5A],
            offset: [0, 0],
            unacked: [0, 0],
            fin: [false, false],
            first_fin: None,
            ended: false,
        }
    }

    /// The client and server addresses as written.
    pub fn addrs(&self) -> (SocketAddr, SocketAddr) {
        (self.addrs[0], self.addrs[1])
    }

    /// Stream offset of the next byte `dir` sends.
    pub fn offset(&self, dir: Dir) -> u64 {
        self.offset[dir.index()]
    }

    /// True once FIN or RST was written.
    pub fn ended(&self) -> bool {
        self.ended
    }

    fn packet(&mut self, dir: Dir, hdr: TcpHeader, payload: &[u8]) -> Vec<u8> {
        let i = dir.index();
        let (src, dst) = (self.addrs[i], self.addrs[1 - i]);
        let (smac, dmac) = if i == 0 {
            (CLIENT_MAC, SERVER_MAC)
        } else {
            (SERVER_MAC, CLIENT_MAC)
        };
        let eth = PacketBuilder::ethernet2(smac, dmac);
        let mut out = Vec::with_capacity(payload.len() + 80);
        let res = match (src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => eth
                .ipv4(s.octets(), d.octets(), 64)
                .tcp_header(hdr)
                .write(&mut out, payload),
            (s, d) => {
                let six = |a: IpAddr| match a {
                    IpAddr::V6(v6) => v6,
                    IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                };
                let (s, d): (Ipv6Addr, Ipv6Addr) = (six(s), six(d));
                eth.ipv6(s.octets(), d.octets(), 64)
                    .tcp_header(hdr)
                    .write(&mut out, payload)
            }
        };
        // Writing to a Vec only fails on sizes we never produce; fall back to an empty frame.
        if res.is_err() {
            out.clear();
        }
        out
    }

    fn header(&self, dir: Dir) -> TcpHeader {
        let i = dir.index();
        let mut h = TcpHeader::new(
            self.addrs[i].port(),
            self.addrs[1 - i].port(),
            self.next_seq[i],
            u16::MAX,
        );
        h.ack = true;
        h.acknowledgment_number = self.next_seq[1 - i];
        h
    }

    fn control(&mut self, dir: Dir, hdr: TcpHeader) -> SynthPacket {
        let o = self.offset[dir.index()];
        SynthPacket {
            dir,
            frame: self.packet(dir, hdr, &[]),
            payload: o..o,
        }
    }

    /// SYN, SYN-ACK, ACK.
    pub fn handshake(&mut self, out: &mut Vec<SynthPacket>) {
        let opts = [TcpOptionElement::WindowScale(WINDOW_SCALE)];
        let mut syn = self.header(Dir::C2S);
        syn.ack = false;
        syn.acknowledgment_number = 0;
        syn.syn = true;
        let _ = syn.set_options(&opts);
        out.push(self.control(Dir::C2S, syn));
        self.next_seq[0] = self.next_seq[0].wrapping_add(1);
        let mut synack = self.header(Dir::S2C);
        synack.syn = true;
        let _ = synack.set_options(&opts);
        out.push(self.control(Dir::S2C, synack));
        self.next_seq[1] = self.next_seq[1].wrapping_add(1);
        let ack = self.header(Dir::C2S);
        out.push(self.control(Dir::C2S, ack));
    }

    /// Payload sent by `dir` at stream offset `offset` (a later offset than expected skips
    /// sequence space: the missing bytes show as not captured). Segments of at most
    /// [`MAX_SEGMENT`] bytes; the receiver acknowledges now and then.
    pub fn data(&mut self, dir: Dir, offset: u64, payload: &[u8], out: &mut Vec<SynthPacket>) {
        let i = dir.index();
        if offset > self.offset[i] {
            let skip = offset - self.offset[i];
            self.next_seq[i] = self.next_seq[i].wrapping_add(skip as u32);
            self.offset[i] = offset;
        }
        for seg in payload.chunks(MAX_SEGMENT) {
            let mut h = self.header(dir);
            h.psh = true;
            let start = self.offset[i];
            let frame = self.packet(dir, h, seg);
            self.next_seq[i] = self.next_seq[i].wrapping_add(seg.len() as u32);
            self.offset[i] += seg.len() as u64;
            self.unacked[i] += seg.len() as u64;
            out.push(SynthPacket {
                dir,
                frame,
                payload: start..self.offset[i],
            });
            if self.unacked[i] >= ACK_EVERY {
                self.unacked[i] = 0;
                let ack = self.header(dir.flip());
                out.push(self.control(dir.flip(), ack));
            }
        }
    }

    /// The bytes `dir` sent before stream offset `end` that are not written (left out of an
    /// export, or missing from the capture it is written from): their sequence space is
    /// skipped, and the other side acknowledges it at once in a bare ACK (Wireshark: "ACKed
    /// segment that wasn't captured"), so that a reader knows of the hole before anything sent
    /// after it. Nothing when `end` is not past what was written.
    pub fn lost(&mut self, dir: Dir, end: u64, out: &mut Vec<SynthPacket>) {
        let i = dir.index();
        if self.ended || self.fin[i] || end <= self.offset[i] {
            return;
        }
        let skip = end - self.offset[i];
        self.next_seq[i] = self.next_seq[i].wrapping_add(skip as u32);
        self.offset[i] = end;
        self.unacked[i] = 0;
        let ack = self.header(dir.flip());
        out.push(self.control(dir.flip(), ack));
    }

    /// `dir` closes its side (a half-close) after its byte at stream offset `offset - 1`: FIN
    /// from `dir` (a later offset than expected skips sequence space, as [`Conversation::data`]
    /// does), acknowledged by the other side, which may go on sending. Once per side. The
    /// second FIN's acknowledgement is left to [`Conversation::fin`] at the close, so the close
    /// always has a packet to carry what is reported then.
    pub fn fin_from(&mut self, dir: Dir, offset: u64, out: &mut Vec<SynthPacket>) {
        let i = dir.index();
        if self.ended || self.fin[i] {
            return;
        }
        if offset > self.offset[i] {
            let skip = offset - self.offset[i];
            self.next_seq[i] = self.next_seq[i].wrapping_add(skip as u32);
            self.offset[i] = offset;
        }
        self.fin[i] = true;
        self.first_fin.get_or_insert(dir);
        let mut h = self.header(dir);
        h.fin = true;
        out.push(self.control(dir, h));
        self.next_seq[i] = self.next_seq[i].wrapping_add(1);
        self.unacked[i] = 0;
        if !self.fin[1 - i] {
            let ack = self.header(dir.flip());
            out.push(self.control(dir.flip(), ack));
        }
    }

    /// An orderly close: a FIN from each side that has not sent one yet (client first), each
    /// acknowledged by the other; the last by the side that sent its FIN first.
    pub fn fin(&mut self, out: &mut Vec<SynthPacket>) {
        self.fin_first(Some(Dir::C2S), out);
    }

    /// [`Conversation::fin`] with `first`'s FIN first when neither side has sent one (the
    /// other's FIN acknowledges it: a reader sees who closed first); with `None`, FINs that
    /// cross (neither acknowledges the other's: a reader cannot tell who was first), each
    /// acknowledged after.
    pub fn fin_first(&mut self, first: Option<Dir>, out: &mut Vec<SynthPacket>) {
        if self.ended {
            return;
        }
        let Some(first) = first.or(self.first_fin) else {
            for dir in [Dir::C2S, Dir::S2C] {
                let mut h = self.header(dir);
                h.fin = true;
                out.push(self.control(dir, h));
            }
            for dir in [Dir::C2S, Dir::S2C] {
                self.next_seq[dir.index()] = self.next_seq[dir.index()].wrapping_add(1);
                self.fin[dir.index()] = true;
            }
            for dir in [Dir::C2S, Dir::S2C] {
                let ack = self.header(dir);
                out.push(self.control(dir, ack));
            }
            self.ended = true;
            return;
        };
        for dir in [first, first.flip()] {
            let offset = self.offset[dir.index()];
            self.fin_from(dir, offset, out);
        }
        let first = self.first_fin.unwrap_or(Dir::C2S);
        let ack = self.header(first);
        out.push(self.control(first, ack));
        self.ended = true;
    }

    /// An abortive close: RST from `dir`.
    pub fn rst(&mut self, dir: Dir, out: &mut Vec<SynthPacket>) {
        if self.ended {
            return;
        }
        self.ended = true;
        let mut h = self.header(dir);
        h.rst = true;
        out.push(self.control(dir, h));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::link::{linktype, tcp_segment};

    #[test]
    fn synthesised_packets_parse_back_with_consistent_sequence_numbers() {
        let c: SocketAddr = "10.1.2.3:40000".parse().unwrap();
        let s: SocketAddr = "[::1]:5672".parse().unwrap();
        let mut conv = Conversation::new(c, s, 7);
        let mut out = Vec::new();
        conv.handshake(&mut out);
        let big = vec![0xAB; MAX_SEGMENT + 10];
        conv.data(Dir::C2S, 0, &big, &mut out);
        conv.data(Dir::S2C, 0, b"hello", &mut out);
        conv.fin(&mut out);
        let segs: Vec<_> = out
            .iter()
            .map(|p| tcp_segment(linktype::ETHERNET, &p.frame).unwrap())
            .collect();
        assert!(segs[0].syn && !segs[0].ack);
        assert!(segs[1].syn && segs[1].ack);
        assert_eq!(segs[3].seq, segs[0].seq.wrapping_add(1));
        assert_eq!(segs[3].payload.len(), MAX_SEGMENT);
        assert_eq!(segs[4].seq, segs[3].seq.wrapping_add(MAX_SEGMENT as u32));
        assert_eq!(segs[4].payload.len(), 10);
        assert!(
            segs[3].src.ip().is_ipv6(),
            "mixed families are written as IPv6"
        );
        assert_eq!(out[4].payload, MAX_SEGMENT as u64..MAX_SEGMENT as u64 + 10);
        let fins: Vec<_> = segs.iter().filter(|s| s.fin).collect();
        assert_eq!(fins.len(), 2);
        assert_eq!(fins[0].src, segs[0].src, "the client's FIN first");
        assert_eq!(
            fins[1].seq,
            segs[5].seq.wrapping_add(5),
            "after the server's bytes"
        );
        let last = segs.last().unwrap();
        assert!(
            last.ack && !last.fin,
            "the client acknowledges the server's FIN"
        );
    }

    #[test]
    fn a_half_close_puts_the_fin_before_the_other_sides_later_bytes() {
        let c: SocketAddr = "10.0.0.1:40000".parse().unwrap();
        let s: SocketAddr = "10.0.0.2:5672".parse().unwrap();
        let mut conv = Conversation::new(c, s, 1);
        let mut out = Vec::new();
        conv.handshake(&mut out);
        conv.data(Dir::C2S, 0, b"AMQP", &mut out);
        conv.fin_from(Dir::C2S, 4, &mut out);
        conv.fin_from(Dir::C2S, 4, &mut out);
        conv.data(Dir::S2C, 0, b"later", &mut out);
        conv.fin(&mut out);
        let segs: Vec<_> = out
            .iter()
            .map(|p| tcp_segment(linktype::ETHERNET, &p.frame).unwrap())
            .collect();
        let flags: Vec<(bool, bool, usize)> = segs
            .iter()
            .map(|s| (s.src == c, s.fin, s.payload.len()))
            .collect();
        assert_eq!(
            &flags[3..],
            &[
                (true, false, 4),
                (true, true, 0),
                (false, false, 0),
                (false, false, 5),
                (false, true, 0),
                (true, false, 0),
            ],
            "data, FIN, ACK, the server's later data, its FIN, the last ACK"
        );
        assert_eq!(segs[4].seq, segs[3].seq.wrapping_add(4));
    }
}
