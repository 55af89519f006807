//! What the connection's state and negotiated limits make of every frame (the frame size and
//! channel allowed, the silence after which a heartbeat is missed, whether channel frames go
//! on), derived once each time they change rather than on every frame.

use super::connection::{ConnState, Connection};

/// The per-frame tests a [`Connection`] sets, as plain numbers: each one a comparison that is
/// never true when the connection sets no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Limits {
    /// The largest frame allowed ([`Connection::frame_limit`]; `u64::MAX`: none).
    pub(super) frame_max: u64,
    /// The highest channel allowed ([`Connection::channel_limit`]; `u16::MAX`: none, as no
    /// channel is above it).
    pub(super) channel_max: u16,
    /// The longest silence (µs) before a heartbeat counts as missed: twice the negotiated
    /// heartbeat while the connection is watched (from tune-ok until it closes); `i64::MAX`
    /// when no silence is (no saturated silence is longer).
    pub(super) silence_max: i64,
    /// Channel frames go on (the connection is open, or its state unknown).
    pub(super) open: bool,
}

impl Limits {
    /// The limits `conn` sets now.
    pub(super) fn of(conn: &Connection) -> Limits {
        let watching = matches!(
            conn.state,
            ConnState::AwaitingOpen | ConnState::AwaitingOpenOk | ConnState::Open
        );
        let silence_max = match conn.heartbeat() {
            Some(hb) if watching => i64::from(hb) * 2_000_000,
            _ => i64::MAX,
        };
        Limits {
            frame_max: conn.frame_limit().map_or(u64::MAX, u64::from),
            channel_max: conn.channel_limit().unwrap_or(u16::MAX),
            silence_max,
            open: matches!(conn.state, ConnState::Open | ConnState::Unknown),
        }
    }
}

/// The silence from `last` to `now` (µs, saturated) when it is longer than `max`.
#[inline]
pub(super) fn silence_over(now: i64, last: i64, max: i64) -> Option<i64> {
    // A silence that fits and is within the limit (almost every one) needs no saturation.
    if now.checked_sub(last).is_some_and(|s| s <= max) {
        return None;
    }
    let silent = now.saturating_sub(last);
    (silent > max).then_some(silent)
}

impl Default for Limits {
    fn default() -> Self {
        Limits::of(&Connection::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silence_is_over_the_limit_as_its_saturated_length_says() {
        let edges = [
            i64::MIN,
            i64::MIN + 1,
            -120_000_001,
            -1,
            0,
            1,
            119_999_999,
            120_000_000,
            120_000_001,
            i64::MAX - 1,
            i64::MAX,
        ];
        for now in edges {
            for last in edges {
                for max in [0, 120_000_000, i64::MAX - 1, i64::MAX] {
                    let silent = now.saturating_sub(last);
                    let want = (silent > max).then_some(silent);
                    assert_eq!(silence_over(now, last, max), want, "{now} {last} {max}");
                }
            }
        }
    }

    /// The limits judge every frame size, channel and silence as the connection's own
    /// accessors do, in every state with and without negotiated values.
    #[test]
    fn limits_judge_as_the_connection_does() {
        let states = [
            ConnState::AwaitingStart,
            ConnState::AwaitingTune,
            ConnState::AwaitingTuneOk,
            ConnState::AwaitingOpen,
            ConnState::AwaitingOpenOk,
            ConnState::Open,
            ConnState::Closing {
                by: [true, false],
                ok: [false; 2],
            },
            ConnState::Closed,
            ConnState::Unknown,
        ];
        let negotiated = [
            None,
            Some((0, 0, 0)),
            Some((10, 4096, 5)),
            Some((u16::MAX, u32::MAX, u16::MAX)),
            Some((1, 131_072, 0)),
        ];
        for state in states {
            for n in negotiated {
                let mut conn = Connection::default();
                conn.state = state;
                conn.negotiated = n;
                let l = Limits::of(&conn);
                for size in [0u64, 4095, 4096, 4097, 131_073, u64::from(u32::MAX) + 1] {
                    let want = conn.frame_limit().is_some_and(|f| size > u64::from(f));
                    assert_eq!(size > l.frame_max, want, "{state:?} {n:?} {size}");
                }
                for ch in [0u16, 1, 10, 11, u16::MAX] {
                    let want = conn.channel_limit().is_some_and(|m| ch > m);
                    assert_eq!(ch > l.channel_max, want, "{state:?} {n:?} {ch}");
                }
                let watching = matches!(
                    state,
                    ConnState::AwaitingOpen | ConnState::AwaitingOpenOk | ConnState::Open
                );
                for silent in [0i64, 9_999_999, 10_000_000, 10_000_001, i64::MAX] {
                    let want = watching
                        && conn
                            .heartbeat()
                            .is_some_and(|hb| silent > i64::from(hb) * 2_000_000);
                    assert_eq!(silent > l.silence_max, want, "{state:?} {n:?} {silent}");
                }
                let open = matches!(state, ConnState::Open | ConnState::Unknown);
                assert_eq!(l.open, open);
            }
        }
    }
}
