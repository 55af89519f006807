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

/// Decode a captured frame down to its TCP segment.
pub fn tcp_segment(linktype: u32, frame: &[u8]) -> Result<TcpSegment<'_>, NotTcp> {
    let ip = ip_payload(linktype, frame)?;
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
