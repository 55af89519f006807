//! Which records a connection's state rests on, pinned apart from the ring's eviction so that a
//! dump replays with that state known: the connection's start and protocol headers, and the
//! frames that open and set it up.

use crate::event::EventKind;

/// The frames pinned, by name: AMQP 1.0 SASL and the opening performatives; 0-9-1 the
/// connection's negotiation and open, channel.open, and the consumer, qos, confirm and
/// transaction set-up of a channel, each with its answer.
const PINNED_FRAMES: &[&str] = &[
    // AMQP 1.0 (and its SASL layer).
    "sasl-mechanisms",
    "sasl-init",
    "sasl-challenge",
    "sasl-response",
    "sasl-outcome",
    "open",
    "begin",
    "attach",
    // AMQP 0-9-1.
    "connection.start",
    "connection.start-ok",
    "connection.secure",
    "connection.secure-ok",
    "connection.tune",
    "connection.tune-ok",
    "connection.open",
    "connection.open-ok",
    "channel.open",
    "channel.open-ok",
    "basic.consume",
    "basic.consume-ok",
    "basic.qos",
    "basic.qos-ok",
    "confirm.select",
    "confirm.select-ok",
    "tx.select",
    "tx.select-ok",
];

/// Whether the record of `kind` is pinned.
pub(super) fn pinned(kind: &EventKind) -> bool {
    match kind {
        EventKind::Connect { .. } | EventKind::Header { .. } => true,
        EventKind::Frame(f) => PINNED_FRAMES.contains(&f.frame.name()),
        _ => false,
    }
}
