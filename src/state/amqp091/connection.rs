//! The AMQP 0-9-1 connection's own life cycle (channel 0): the handshake, the negotiated
//! limits, blocked/unblocked, and closing. Judges connection-class methods only.
//!
//! Sans-IO; never reports what it did not see (`Unknown` after a gap: it learns instead).

use bytes::Bytes;

use super::rules;
use crate::base::{Dir, Violation};
use crate::codec::amqp091::{Arg, FieldValue, Method, MethodKind};

/// frame-min-size: the smallest frame-max, and the limit before tune-ok.
pub const FRAME_MIN_SIZE: u32 = 4096;

/// Where the connection is, named after the method each state waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Protocol header sent; connection.start expected from the server.
    AwaitingStart,
    /// connection.start-ok expected from the client.
    AwaitingStartOk,
    /// connection.secure or connection.tune expected from the server.
    AwaitingTune,
    /// connection.secure-ok expected from the client.
    AwaitingSecureOk,
    /// connection.tune-ok expected from the client.
    AwaitingTuneOk,
    /// connection.open expected from the client.
    AwaitingOpen,
    /// connection.open-ok expected from the server.
    AwaitingOpenOk,
    /// Open: channels may be used.
    Open,
    /// connection.close sent (by `by[dir]`), not every close answered yet.
    Closing {
        /// Which directions sent close (both when the closes crossed).
        by: [bool; 2],
        /// Which directions sent close-ok.
        ok: [bool; 2],
    },
    /// close-ok seen: nothing more may be sent.
    Closed,
    /// Seen from the middle: state not known.
    Unknown,
}

impl ConnState {
    /// The state's name, spec style.
    pub fn name(&self) -> &'static str {
        match self {
            ConnState::AwaitingStart => "AWAITING_START",
            ConnState::AwaitingStartOk => "AWAITING_START_OK",
            ConnState::AwaitingTune => "AWAITING_TUNE",
            ConnState::AwaitingSecureOk => "AWAITING_SECURE_OK",
            ConnState::AwaitingTuneOk => "AWAITING_TUNE_OK",
            ConnState::AwaitingOpen => "AWAITING_OPEN",
            ConnState::AwaitingOpenOk => "AWAITING_OPEN_OK",
            ConnState::Open => "OPEN",
            ConnState::Closing { .. } => "CLOSING",
            ConnState::Closed => "CLOSED",
            ConnState::Unknown => "UNKNOWN",
        }
    }

    /// Whether the handshake is over (tune-ok seen): negotiated limits apply.
    pub fn tuned(&self) -> bool {
        !matches!(
            self,
            ConnState::AwaitingStart
                | ConnState::AwaitingStartOk
                | ConnState::AwaitingTune
                | ConnState::AwaitingSecureOk
                | ConnState::AwaitingTuneOk
        )
    }
}

/// The connection (channel 0) as both peers see it.
#[derive(Clone, Debug)]
pub struct Connection {
    /// Life-cycle state.
    pub state: ConnState,
    /// Mechanisms offered in start (space separated).
    pub mechanisms: Option<Bytes>,
    /// Locales offered in start.
    pub locales: Option<Bytes>,
    /// The mechanism chosen in start-ok.
    pub mechanism: Option<String>,
    /// The server's product / version / platform from start's server-properties.
    pub server: [Option<String>; 3],
    /// The client's product / version from start-ok's client-properties.
    pub client: [Option<String>; 2],
    /// The server's tune proposal (channel-max, frame-max, heartbeat).
    pub proposed: Option<(u16, u32, u16)>,
    /// Negotiated in tune-ok (channel-max, frame-max, heartbeat).
    pub negotiated: Option<(u16, u32, u16)>,
    /// connection.open's virtual host.
    pub vhost: Option<String>,
    /// connection.blocked's reason while blocked.
    pub blocked: Option<String>,
    /// connection.update-secret sent, ok not yet.
    update_secret_pending: bool,
}

impl Default for Connection {
    fn default() -> Self {
        Connection {
            state: ConnState::AwaitingStart,
            mechanisms: None,
            locales: None,
            mechanism: None,
            server: Default::default(),
            client: Default::default(),
            proposed: None,
            negotiated: None,
            vhost: None,
            blocked: None,
            update_secret_pending: false,
        }
    }
}

fn text(b: Option<&Bytes>) -> Option<String> {
    b.map(|b| String::from_utf8_lossy(b).into_owned())
}

fn property(m: &Method, table: Arg, key: &str) -> Option<String> {
    match m.get_table(table)?.get(key)? {
        FieldValue::LongStr(b) => text(Some(b)),
        _ => None,
    }
}

/// Whether the space-separated `list` contains `word`.
fn offers(list: &[u8], word: &[u8]) -> bool {
    list.split(|&c| c == b' ').any(|w| w == word)
}

impl Connection {
    /// A connection method on channel 0 from `dir`. Appends violations to `out`.
    pub fn method(&mut self, dir: Dir, offset: u64, m: &Method, out: &mut Vec<Violation>) {
        if !self.closing(dir, offset, m, out) {
            self.state = self.next_state(dir, offset, m, out);
        }
    }

    /// connection.close and what follows it: close is legal in every state, and the closing
    /// states have their own rules. True when the method was handled here.
    fn closing(&mut self, dir: Dir, offset: u64, m: &Method, out: &mut Vec<Violation>) -> bool {
        use ConnState as S;
        use MethodKind as K;
        match (self.state, m.kind()) {
            (S::Closing { mut by, ok }, K::ConnectionClose)
                if !by[dir.index()] && !ok[dir.index()] =>
            {
                by[dir.index()] = true;
                self.state = S::Closing { by, ok };
            }
            // connection.close: "The response to receiving a Close after sending Close must be
            // to send Close-Ok." With crossing closes each peer answers the other's.
            (S::Closing { by, mut ok }, K::ConnectionCloseOk)
                if by[dir.flip().index()] && !ok[dir.index()] =>
            {
                ok[dir.index()] = true;
                let answered = |d: usize| !by[d] || ok[1 - d];
                self.state = if answered(0) && answered(1) {
                    S::Closed
                } else {
                    S::Closing { by, ok }
                };
            }
            (S::Closing { by, ok }, _) => {
                let i = dir.index();
                if by[i] || ok[i] {
                    out.push(rules::CONNECTION_AFTER_CLOSE.violation(
                        dir,
                        offset,
                        if ok[i] {
                            format!("{} after this peer sent connection.close-ok", m.name())
                        } else {
                            format!(
                                "{} after this peer sent connection.close (only close-ok may follow)",
                                m.name()
                            )
                        },
                    ));
                }
                // The receiver's frames sent before it saw close are in flight: discarded.
            }
            (S::Closed, _) => {
                out.push(rules::CONNECTION_AFTER_CLOSE.violation(
                    dir,
                    offset,
                    format!("{} after connection.close-ok", m.name()),
                ));
            }
            (_, K::ConnectionClose) => {
                let mut by = [false; 2];
                by[dir.index()] = true;
                self.state = S::Closing { by, ok: [false; 2] };
            }
            _ => return false,
        }
        true
    }

    /// The handshake and the methods of an open connection: the state `m` from `dir` leads to
    /// (reported when the state does not allow it).
    fn next_state(
        &mut self,
        dir: Dir,
        offset: u64,
        m: &Method,
        out: &mut Vec<Violation>,
    ) -> ConnState {
        use ConnState as S;
        use MethodKind as K;
        match (self.state, m.kind(), dir) {
            (S::AwaitingStart | S::Unknown, K::ConnectionStart, Dir::S2C) => {
                self.start(m);
                S::AwaitingStartOk
            }
            (S::AwaitingStartOk, K::ConnectionStartOk, Dir::C2S) => {
                self.start_ok(dir, offset, m, out);
                S::AwaitingTune
            }
            (S::Unknown, K::ConnectionStartOk, Dir::C2S) => {
                self.mechanism = text(m.mechanism());
                S::AwaitingTune
            }
            (S::AwaitingTune | S::Unknown, K::ConnectionSecure, Dir::S2C) => S::AwaitingSecureOk,
            (S::AwaitingSecureOk | S::Unknown, K::ConnectionSecureOk, Dir::C2S) => S::AwaitingTune,
            (S::AwaitingTune | S::Unknown, K::ConnectionTune, Dir::S2C) => {
                self.tune(dir, offset, m, out);
                S::AwaitingTuneOk
            }
            (S::AwaitingTuneOk | S::Unknown, K::ConnectionTuneOk, Dir::C2S) => {
                let judge = self.state != S::Unknown;
                let tuned = tune_values(m);
                if judge {
                    self.tune_ok(dir, offset, tuned, out);
                }
                self.negotiated = Some(tuned);
                if judge { S::AwaitingOpen } else { S::Unknown }
            }
            (S::AwaitingOpen, K::ConnectionOpen, Dir::C2S) => {
                self.vhost = text(m.get_bytes(Arg::VirtualHost));
                S::AwaitingOpenOk
            }
            (S::Unknown, K::ConnectionOpen, Dir::C2S) => S::Unknown,
            (S::AwaitingOpenOk | S::Unknown, K::ConnectionOpenOk, Dir::S2C) => S::Open,
            // RabbitMQ extensions: blocked/unblocked may come any time after tuning.
            (
                S::AwaitingOpen | S::AwaitingOpenOk | S::Open | S::Unknown,
                K::ConnectionBlocked,
                Dir::S2C,
            ) => {
                self.blocked = Some(text(m.get_bytes(Arg::Reason)).unwrap_or_default());
                self.state
            }
            (
                S::AwaitingOpen | S::AwaitingOpenOk | S::Open | S::Unknown,
                K::ConnectionUnblocked,
                Dir::S2C,
            ) => {
                self.blocked = None;
                self.state
            }
            (S::Open | S::Unknown, K::ConnectionUpdateSecret, Dir::C2S) => {
                self.update_secret_pending = true;
                self.state
            }
            (S::Open | S::Unknown, K::ConnectionUpdateSecretOk, Dir::S2C)
                if self.update_secret_pending || self.state == S::Unknown =>
            {
                self.update_secret_pending = false;
                self.state
            }
            (S::Unknown, _, _) => S::Unknown,
            (state, _, _) => {
                out.push(rules::HANDSHAKE_ORDER.violation(
                    dir,
                    offset,
                    format!(
                        "{} ({}) in connection state {}{}",
                        m.name(),
                        dir.as_str(),
                        state.name(),
                        match expected(state) {
                            Some(e) => format!(", expected {e}"),
                            None => String::new(),
                        }
                    ),
                ));
                state
            }
        }
    }

    /// The server's connection.start: its mechanisms, locales and properties.
    fn start(&mut self, m: &Method) {
        self.mechanisms = m.get_bytes(Arg::Mechanisms).cloned();
        self.locales = m.get_bytes(Arg::Locales).cloned();
        self.server = [
            property(m, Arg::ServerProperties, "product"),
            property(m, Arg::ServerProperties, "version"),
            property(m, Arg::ServerProperties, "platform"),
        ];
    }

    /// The server's connection.tune: frame-max at least frame-min-size (0: no limit).
    fn tune(&mut self, dir: Dir, offset: u64, m: &Method, out: &mut Vec<Violation>) {
        let proposed = tune_values(m);
        if proposed.1 != 0 && proposed.1 < FRAME_MIN_SIZE && self.state != ConnState::Unknown {
            out.push(rules::FRAME_MAX_TOO_SMALL.violation(
                dir,
                offset,
                format!(
                    "connection.tune frame-max {} < frame-min-size {FRAME_MIN_SIZE}",
                    proposed.1
                ),
            ));
        }
        self.proposed = Some(proposed);
    }

    fn start_ok(&mut self, dir: Dir, offset: u64, m: &Method, out: &mut Vec<Violation>) {
        self.mechanism = text(m.mechanism());
        self.client = [
            property(m, Arg::ClientProperties, "product"),
            property(m, Arg::ClientProperties, "version"),
        ];
        if let (Some(offered), Some(chosen)) = (&self.mechanisms, m.mechanism())
            && !offers(offered, chosen)
        {
            out.push(rules::MECHANISM_NOT_OFFERED.violation(
                dir,
                offset,
                format!(
                    "mechanism {:?} is not among those offered: {:?}",
                    String::from_utf8_lossy(chosen),
                    String::from_utf8_lossy(offered)
                ),
            ));
        }
        if let (Some(offered), Some(chosen)) = (&self.locales, m.get_bytes(Arg::Locale))
            && !offers(offered, chosen)
        {
            out.push(rules::LOCALE_NOT_OFFERED.violation(
                dir,
                offset,
                format!(
                    "locale {:?} is not among those offered: {:?}",
                    String::from_utf8_lossy(chosen),
                    String::from_utf8_lossy(offered)
                ),
            ));
        }
    }

    fn tune_ok(&mut self, dir: Dir, offset: u64, tuned: (u16, u32, u16), out: &mut Vec<Violation>) {
        let (channel_max, frame_max, _) = tuned;
        if let Some((p_channel_max, p_frame_max, _)) = self.proposed {
            // 0 means "no limit": it exceeds every non-zero proposal.
            let exceeds_u32 = |want: u32, cap: u32| cap != 0 && (want == 0 || want > cap);
            if exceeds_u32(channel_max.into(), p_channel_max.into()) {
                out.push(rules::TUNE_EXCEEDS_SERVER.violation(
                    dir,
                    offset,
                    format!("tune-ok channel-max {channel_max} exceeds the server's tune channel-max {p_channel_max}"),
                ));
            }
            if exceeds_u32(frame_max, p_frame_max) {
                out.push(rules::TUNE_EXCEEDS_SERVER.violation(
                    dir,
                    offset,
                    format!("tune-ok frame-max {frame_max} exceeds the server's tune frame-max {p_frame_max}"),
                ));
            }
        }
        if frame_max != 0 && frame_max < FRAME_MIN_SIZE {
            out.push(rules::FRAME_MAX_TOO_SMALL.violation(
                dir,
                offset,
                format!("tune-ok frame-max {frame_max} < frame-min-size {FRAME_MIN_SIZE}"),
            ));
        }
    }

    /// The negotiated frame-max in force (None = no limit), frame-min-size before tune-ok.
    pub fn frame_limit(&self) -> Option<u32> {
        match self.negotiated {
            Some((_, 0, _)) => None,
            Some((_, f, _)) => Some(f),
            None if self.state == ConnState::Unknown => None,
            None => Some(FRAME_MIN_SIZE),
        }
    }

    /// The highest usable channel number, once negotiated.
    pub fn channel_limit(&self) -> Option<u16> {
        match self.negotiated {
            Some((0, _, _)) | None => None,
            Some((c, _, _)) => Some(c),
        }
    }

    /// The negotiated heartbeat in seconds (0 = none), once negotiated.
    pub fn heartbeat(&self) -> Option<u16> {
        self.negotiated.map(|(_, _, h)| h).filter(|&h| h > 0)
    }

    /// The connection as the TUI shows it (`uncertain` is the caller's to set).
    pub fn snapshot(&self) -> super::snapshot::ConnectionSnapshot {
        let neg = self.negotiated;
        let [server_product, server_version, server_platform] = self.server.clone();
        let [client_product, client_version] = self.client.clone();
        super::snapshot::ConnectionSnapshot {
            state: self.state.name(),
            frame_max: neg.map(|n| n.1),
            channel_max: neg.map(|n| n.0),
            heartbeat: neg.map(|n| n.2),
            mechanism: self.mechanism.clone(),
            vhost: self.vhost.clone(),
            server_product,
            server_version,
            server_platform,
            client_product,
            client_version,
            blocked: self.blocked.is_some(),
            blocked_reason: self.blocked.clone(),
            uncertain: false,
        }
    }
}

/// (channel-max, frame-max, heartbeat) of tune / tune-ok.
fn tune_values(m: &Method) -> (u16, u32, u16) {
    (
        m.channel_max().unwrap_or(0),
        m.frame_max().unwrap_or(0),
        m.heartbeat().unwrap_or(0),
    )
}

/// What the state waits for, for messages.
fn expected(state: ConnState) -> Option<&'static str> {
    match state {
        ConnState::AwaitingStart => Some("connection.start from the server"),
        ConnState::AwaitingStartOk => Some("connection.start-ok from the client"),
        ConnState::AwaitingTune => Some("connection.secure or connection.tune from the server"),
        ConnState::AwaitingSecureOk => Some("connection.secure-ok from the client"),
        ConnState::AwaitingTuneOk => Some("connection.tune-ok from the client"),
        ConnState::AwaitingOpen => Some("connection.open from the client"),
        ConnState::AwaitingOpenOk => Some("connection.open-ok from the server"),
        ConnState::Open | ConnState::Closing { .. } | ConnState::Closed | ConnState::Unknown => {
            None
        }
    }
}
