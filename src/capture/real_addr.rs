//! The server port a pcapng is written with, and the real server address it stands for.
//!
//! Wireshark's AMQP dissector claims TCP port 5672 only, and takes 5671 (amqps) for TLS: the
//! plaintext of a TLS leg written under 5671 shows as "Continuation Data", and a broker on any
//! other port as bare TCP. So amqpeek's pcapng writes every other server port as
//! [`WIRESHARK_PORT`] and names the real server address in a packet comment on the
//! conversation's SYN ([`comment`]); amqpeek's reader takes that comment back ([`parse`]) and
//! restores the real address in every segment of the conversation ([`RealAddrs`]), so `check`
//! and `replay` of the pcapng report the addresses the live run did.
//!
//! Pure data: no I/O.

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::hash::HashMap;

use super::link::TcpSegment;

/// The server port written into pcapng files: the one Wireshark dissects as AMQP.
pub const WIRESHARK_PORT: u16 = 5672;

/// How the SYN comment starts.
const PREFIX: &str = "amqpeek: real server ";

/// The SYN comment naming the real server address of a conversation written with
/// [`WIRESHARK_PORT`].
pub fn comment(real: SocketAddr) -> String {
    format!(
        "{PREFIX}{real} (server port written as {WIRESHARK_PORT} so that Wireshark dissects AMQP)"
    )
}

/// The real server address named by a [`comment`], if `text` is one.
pub fn parse(text: &str) -> Option<SocketAddr> {
    text.strip_prefix(PREFIX)?.split(' ').next()?.parse().ok()
}

/// Real server addresses announced by SYN comments, by the written (client, server) pair.
///
/// Bounded: past `cap` announcements the oldest is forgotten (a connection still open then
/// shows its written port from there on).
#[derive(Debug)]
pub struct RealAddrs {
    map: HashMap<(SocketAddr, SocketAddr), SocketAddr>,
    order: VecDeque<(SocketAddr, SocketAddr)>,
    cap: usize,
}

impl RealAddrs {
    /// An empty table remembering at most `cap` conversations.
    pub fn new(cap: usize) -> Self {
        RealAddrs {
            map: HashMap::default(),
            order: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    /// `seg` carried the comment naming `real`: when it is a client's SYN, the conversation it
    /// opens (its source is the client, its destination the written server) is `real`'s.
    pub fn announce(&mut self, seg: &TcpSegment<'_>, real: SocketAddr) {
        if !seg.syn || seg.ack {
            return;
        }
        let key = (seg.src, seg.dst);
        if self.map.insert(key, real).is_none() {
            if self.order.len() >= self.cap
                && let Some(old) = self.order.pop_front()
            {
                self.map.remove(&old);
            }
            self.order.push_back(key);
        }
    }

    /// Put the real server address into `seg` when its conversation was announced.
    #[inline]
    pub fn restore(&self, seg: &mut TcpSegment<'_>) {
        if !self.map.is_empty() {
            self.restore_announced(seg);
        }
    }

    /// [`RealAddrs::restore`] once some conversation was announced.
    fn restore_announced(&self, seg: &mut TcpSegment<'_>) {
        if let Some(real) = self.map.get(&(seg.src, seg.dst)) {
            seg.dst = *real;
        } else if let Some(real) = self.map.get(&(seg.dst, seg.src)) {
            seg.src = *real;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(src: &str, dst: &str, syn: bool, ack: bool) -> TcpSegment<'static> {
        TcpSegment {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            seq: 0,
            ack_no: 0,
            relayed: false,
            boundary: None,
            syn,
            ack,
            fin: false,
            rst: false,
            payload: &[],
            window: None,
        }
    }

    #[test]
    fn the_comment_names_the_real_address_and_reads_back() {
        for real in ["127.0.0.1:5671", "[::1]:15672"] {
            let real: SocketAddr = real.parse().unwrap();
            assert_eq!(parse(&comment(real)), Some(real));
        }
        assert_eq!(parse("amqpeek error amqp10.x: y"), None);
        assert_eq!(parse("amqpeek: real server nonsense"), None);
    }

    #[test]
    fn a_syn_announces_its_conversation_both_ways_and_the_table_is_bounded() {
        let mut t = RealAddrs::new(1);
        let real: SocketAddr = "10.0.0.2:5671".parse().unwrap();
        t.announce(&seg("10.0.0.1:4000", "10.0.0.2:5672", true, true), real);
        let mut s = seg("10.0.0.1:4000", "10.0.0.2:5672", false, true);
        t.restore(&mut s);
        assert_eq!(s.dst.port(), 5672, "a SYN-ACK announces nothing");
        t.announce(&seg("10.0.0.1:4000", "10.0.0.2:5672", true, false), real);
        t.restore(&mut s);
        assert_eq!(s.dst, real);
        let mut back = seg("10.0.0.2:5672", "10.0.0.1:4000", false, true);
        t.restore(&mut back);
        assert_eq!(back.src, real);
        t.announce(
            &seg("10.0.0.1:4001", "10.0.0.2:5672", true, false),
            "10.0.0.2:1".parse().unwrap(),
        );
        let mut old = seg("10.0.0.1:4000", "10.0.0.2:5672", false, true);
        t.restore(&mut old);
        assert_eq!(old.dst.port(), 5672, "the oldest was forgotten");
    }
}
