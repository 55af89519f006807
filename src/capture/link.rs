//! From a captured link-layer frame to a TCP segment: Ethernet (with 802.1Q / 802.1ad VLAN
//! tags), Linux cooked capture (SLL and SLL2), BSD loopback / null (either byte order), and raw
//! IP link types; then IPv4 or IPv6 (extension headers skipped, by etherparse) and TCP.
//!
//! Pure functions over borrowed bytes: nothing is copied, nothing panics on short or hostile
//! frames.

use std::net::{IpAddr, SocketAddr};

use etherparse::{IpNumber, IpSlice, TcpSlice};

/// Link types (pcap `LINKTYPE_*` values) this module understands.
pub mod linktype {
    /// BSD loopback, 4-byte address family in the capturing host's byte order.
    pub const NULL: u32 = 0;
    /// Ethernet II.
    pub const ETHERNET: u32 = 1;
    /// Raw IP on some BSDs.
    pub const RAW_12: u32 = 12;
    /// Raw IP on some other BSDs.
    pub const RAW_14: u32 = 14;
    /// Raw IP (`LINKTYPE_RAW`).
    pub const RAW: u32 = 101;
    /// OpenBSD loopback, address family in network byte order.
    pub const LOOP: u32 = 108;
    /// Linux cooked capture v1.
    pub const LINUX_SLL: u32 = 113;
    /// Raw IPv4.
    pub const IPV4: u32 = 228;
    /// Raw IPv6.
    pub const IPV6: u32 = 229;
    /// Linux cooked capture v2.
    pub const LINUX_SLL2: u32 = 276;
}

/// A TCP segment found in a frame.
#[derive(Clone, Copy, Debug)]
pub struct TcpSegment<'a> {
    /// Sender.
    pub src: SocketAddr,
    /// Receiver.
    pub dst: SocketAddr,
    /// Sequence number.
    pub seq: u32,
    /// SYN flag.
    pub syn: bool,
    /// ACK flag.
    pub ack: bool,
    /// Acknowledgement number (meaningful when `ack` is set): the sender has received every
    /// byte of the other direction before it.
    pub ack_no: u32,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// TCP payload (possibly cut short by the capture's snap length).
    pub payload: &'a [u8],
    /// The buffer `payload` lies in, when the reader has one: delivered payloads are then
    /// shared out of it instead of copied.
    pub window: Option<&'a bytes::Bytes>,
    /// The capture says the segment belongs to a connection amqpeek relayed (see
    /// [`super::pcap_read::Packet::relayed`]): an AMQP connection whatever its port.
    pub relayed: bool,
    /// The capture says the payload starts exactly at a frame or protocol header (see
    /// [`super::boundary`]): decoding after a hole resumes there.
    pub boundary: Option<super::boundary::Boundary>,
}

/// Why a frame yielded no TCP segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotTcp {
    /// A link type this module does not decode.
    UnsupportedLink(u32),
    /// Not IPv4/IPv6 (ARP, LLDP, ...).
    NotIp,
    /// IP but not TCP.
    OtherTransport,
    /// An IP fragment (not reassembled): its bytes will show as a gap.
    Fragment,
    /// Headers too short or inconsistent.
    Malformed,
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88A8;
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Strip the link layer; returns the IP packet, or why not.
pub fn ip_payload(linktype: u32, frame: &[u8]) -> Result<&[u8], NotTcp> {
    let (ethertype, rest) = match linktype {
        linktype::ETHERNET => {
            let mut at = 12usize;
            let mut et = be16(frame, at).ok_or(NotTcp::Malformed)?;
            let mut tags = 0;
            while matches!(et, ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD) && tags < 4 {
                at += 4;
                et = be16(frame, at).ok_or(NotTcp::Malformed)?;
                tags += 1;
            }
            (Some(et), frame.get(at + 2..).ok_or(NotTcp::Malformed)?)
        }
        linktype::LINUX_SLL => {
            let et = be16(frame, 14).ok_or(NotTcp::Malformed)?;
            (Some(et), frame.get(16..).ok_or(NotTcp::Malformed)?)
        }
        linktype::LINUX_SLL2 => {
            let et = be16(frame, 0).ok_or(NotTcp::Malformed)?;
            (Some(et), frame.get(20..).ok_or(NotTcp::Malformed)?)
        }
        linktype::NULL | linktype::LOOP => {
            let h = frame.get(..4).ok_or(NotTcp::Malformed)?;
            // Host byte order for NULL: a small family value has its zero bytes first when
            // big-endian.
            let family = if h[0] == 0 && h[1] == 0 {
                u32::from_be_bytes([h[0], h[1], h[2], h[3]])
            } else {
                u32::from_le_bytes([h[0], h[1], h[2], h[3]])
            };
            let et = match family {
                2 => ETHERTYPE_IPV4,
                10 | 24 | 28 | 30 => ETHERTYPE_IPV6,
                _ => return Err(NotTcp::NotIp),
            };
            (Some(et), &frame[4..])
        }
        linktype::RAW | linktype::RAW_12 | linktype::RAW_14 | linktype::IPV4 | linktype::IPV6 => {
            (None, frame)
        }
        other => return Err(NotTcp::UnsupportedLink(other)),
    };
    match ethertype {
        None | Some(ETHERTYPE_IPV4) | Some(ETHERTYPE_IPV6) => Ok(rest),
        Some(_) => Err(NotTcp::NotIp),
    }
}

/// An IPv4 packet carrying a whole TCP segment (no fragment, no authentication header: the
/// common case), read in place. `None` for any other packet, and for one whose headers do not
/// add up: etherparse then decodes it and says why it yields no segment. What it accepts,
/// etherparse decodes the same.
#[inline]
fn ipv4_tcp(ip: &[u8]) -> Option<TcpSegment<'_>> {
    let h: &[u8; 20] = ip.get(..20)?.try_into().ok()?;
    if h[0] >> 4 != 4 || h[9] != 6 {
        return None;
    }
    let header_len = usize::from(h[0] & 0x0F) * 4;
    let total_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
    // More fragments, or a fragment offset.
    if u16::from_be_bytes([h[6], h[7]]) & 0x3FFF != 0 || header_len < 20 || total_len < header_len {
        return None;
    }
    let tcp = ip.get(header_len..total_len)?;
    let t: &[u8; 20] = tcp.get(..20)?.try_into().ok()?;
    let tcp_len = usize::from((t[12] & 0xF0) >> 2);
    if tcp_len < 20 {
        return None;
    }
    let payload = tcp.get(tcp_len..)?;
    let be32 = |at: usize| u32::from_be_bytes([t[at], t[at + 1], t[at + 2], t[at + 3]]);
    let flags = t[13];
    Some(TcpSegment {
        src: SocketAddr::new(
            IpAddr::from([h[12], h[13], h[14], h[15]]),
            u16::from_be_bytes([t[0], t[1]]),
        ),
        dst: SocketAddr::new(
            IpAddr::from([h[16], h[17], h[18], h[19]]),
            u16::from_be_bytes([t[2], t[3]]),
        ),
        seq: be32(4),
        syn: flags & 0x02 != 0,
        ack: flags & 0x10 != 0,
        ack_no: be32(8),
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        payload,
        window: None,
        relayed: false,
        boundary: None,
    })
}

/// The TCP segment of the usual frame, untagged Ethernet carrying a whole IPv4 TCP segment,
/// read in place: what [`tcp_segment`] gives for it, without its general steps. `None` for
/// any other frame.
#[inline]
pub fn plain_tcp_segment(linktype: u32, frame: &[u8]) -> Option<TcpSegment<'_>> {
    match (linktype, frame.get(12..14)) {
        (linktype::ETHERNET, Some([0x08, 0x00])) => ipv4_tcp(frame.get(14..)?),
        _ => None,
    }
}

/// Decode a captured frame down to its TCP segment.
pub fn tcp_segment(linktype: u32, frame: &[u8]) -> Result<TcpSegment<'_>, NotTcp> {
    let ip = ip_payload(linktype, frame)?;
    match ipv4_tcp(ip) {
        Some(seg) => Ok(seg),
        None => parsed_tcp_segment(ip),
    }
}

/// The TCP segment in an IP packet, as etherparse reads it.
fn parsed_tcp_segment(ip: &[u8]) -> Result<TcpSegment<'_>, NotTcp> {
    let ip = match IpSlice::from_slice(ip) {
        Ok(ip) => ip,
        Err(_) => return Err(NotTcp::Malformed),
    };
    if ip.is_fragmenting_payload() {
        return Err(NotTcp::Fragment);
    }
    if ip.payload_ip_number() != IpNumber::TCP {
        return Err(NotTcp::OtherTransport);
    }
    let (src, dst): (IpAddr, IpAddr) = match &ip {
        IpSlice::Ipv4(v4) => (
            v4.header().source_addr().into(),
            v4.header().destination_addr().into(),
        ),
        IpSlice::Ipv6(v6) => (
            v6.header().source_addr().into(),
            v6.header().destination_addr().into(),
        ),
    };
    let tcp = TcpSlice::from_slice(ip.payload().payload).map_err(|_| NotTcp::Malformed)?;
    Ok(TcpSegment {
        src: SocketAddr::new(src, tcp.source_port()),
        dst: SocketAddr::new(dst, tcp.destination_port()),
        seq: tcp.sequence_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        ack_no: tcp.acknowledgment_number(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: tcp.payload(),
        window: None,
        relayed: false,
        boundary: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 packet (with `ip_options` words of options) carrying a TCP segment (with
    /// `tcp_options` words of options) of `payload`.
    fn packet(ip_options: usize, tcp_options: usize, payload: &[u8]) -> Vec<u8> {
        let (ihl, doff) = (5 + ip_options, 5 + tcp_options);
        let total = ihl * 4 + doff * 4 + payload.len();
        let mut p = vec![0x40 | ihl as u8, 0];
        p.extend_from_slice(&(total as u16).to_be_bytes());
        p.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1]);
        p.resize(ihl * 4, 1);
        p.extend_from_slice(&[0x9c, 0x40, 0x16, 0x28, 1, 2, 3, 4, 5, 6, 7, 8]);
        p.extend_from_slice(&[(doff as u8) << 4, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        p.resize(ihl * 4 + doff * 4, 1);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn the_usual_frame_reads_the_same_by_the_plain_and_the_general_path() {
        let ip = packet(0, 1, b"AMQP\x00\x00\x09\x01");
        let mut eth = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
        eth.extend_from_slice(&ip);
        let plain = plain_tcp_segment(linktype::ETHERNET, &eth).expect("read in place");
        let general = tcp_segment(linktype::ETHERNET, &eth).unwrap();
        assert_eq!(format!("{plain:?}"), format!("{general:?}"));
        // Tagged, cooked, raw, IPv6 or cut short: the general path only.
        let mut tagged = eth[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0, 7]);
        tagged.extend_from_slice(&eth[12..]);
        let cooked = [&[0u8; 14][..], &[0x08, 0x00], &ip].concat();
        for (lt, frame) in [
            (linktype::ETHERNET, &tagged),
            (linktype::LINUX_SLL, &cooked),
            (linktype::RAW, &ip),
        ] {
            assert!(plain_tcp_segment(lt, frame).is_none());
            let seg = tcp_segment(lt, frame).unwrap();
            assert_eq!(format!("{seg:?}"), format!("{general:?}"));
        }
        let mut v6 = eth.clone();
        v6[12..14].copy_from_slice(&[0x86, 0xDD]);
        assert!(plain_tcp_segment(linktype::ETHERNET, &v6).is_none());
        assert!(plain_tcp_segment(linktype::ETHERNET, &eth[..40]).is_none());
    }

    #[test]
    fn the_in_place_ipv4_reader_agrees_with_etherparse_or_defers_to_it() {
        let mut read = 0;
        for (ip_options, tcp_options) in [(0, 0), (1, 0), (0, 3), (2, 2)] {
            let good = packet(ip_options, tcp_options, b"AMQP\x00\x00\x09\x01");
            // Every header byte set to a few telling values, and every length cut.
            let mut cases = vec![good.clone()];
            for at in 0..good.len().min(80) {
                for v in [0x00, 0x01, 0x06, 0x20, 0x3f, 0x45, 0x4f, 0x50, 0xf0, 0xff] {
                    let mut p = good.clone();
                    p[at] = v;
                    cases.push(p);
                }
            }
            cases.extend((0..good.len()).map(|n| good[..n].to_vec()));
            for p in &cases {
                let Some(seg) = ipv4_tcp(p) else { continue };
                read += 1;
                let parsed = parsed_tcp_segment(p).expect("etherparse reads it too");
                assert_eq!(format!("{seg:?}"), format!("{parsed:?}"), "{p:02x?}");
            }
        }
        assert!(read > 100, "the in-place reader took {read} packets");
    }
}
