//! Why a connection ended, as a type: who closed or reset first and how. The relay and the
//! capture reader make it; the JSONL, trace and TUI show its text ([`CloseReason`]'s
//! `Display`, the same words amqpeek always wrote), and a JSONL's `reason` is parsed back
//! into it ([`CloseReason::parse`]), so consumers match on the type instead of reading text.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Dir;

/// Why a connection ended. Renders (`Display`) to the words a JSONL `reason` holds, and
/// [`CloseReason::parse`] reads them back: `parse(&r.to_string()) == r` for every reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum CloseReason {
    /// The proxy saw both peers end their side cleanly (FIN or TLS close_notify); `first` did
    /// so first. `client closed`, `upstream closed`.
    Closed {
        /// The peer that closed first.
        first: Dir,
    },
    /// A leg of the proxy failed while relaying (or while setting TLS up): `by`'s socket was
    /// reset or failed otherwise. `clean_first` is the peer that had closed cleanly before
    /// it, when one had. `upstream reset: ...`, `client closed, then upstream reset: ...`,
    /// `client error: ...`.
    Failed {
        /// The peer that had closed cleanly before the failure, when one had.
        clean_first: Option<Dir>,
        /// The peer whose socket failed.
        by: Dir,
        /// Reset or another error.
        how: Failure,
        /// The operating system's words for the error.
        detail: String,
    },
    /// The upstream refused the proxy's connection (it answered with RST):
    /// `upstream refused: ...`.
    Refused(String),
    /// The proxy could not reach the upstream (no route, or no answer in time):
    /// `upstream unreachable: ...`.
    Unreachable(String),
    /// The upstream did not answer AMQP's TLS upgrade header.
    TlsUpgradeUnanswered,
    /// The upstream closed while the proxy passed the TLS upgrade header on:
    /// `upstream closed during the TLS upgrade: ...`.
    TlsUpgradeClosed(String),
    /// The TLS handshake with `by` failed: `client TLS handshake failed: ...`.
    TlsHandshake {
        /// The peer the handshake was with.
        by: Dir,
        /// Why, in the TLS library's words (or `no answer within ...`).
        detail: String,
    },
    /// The proxy ended the connection when one of its deadlines passed (`src/proxy/limits.rs`).
    Timeout(Timeout),
    /// The proxy stopped with the connection open.
    ProxyStopped,
    /// A packet capture saw a FIN from each peer: `FIN both ways, client first` when the
    /// second FIN acknowledges the first (it answers it), `FIN both ways` when the packets do
    /// not say (the FINs crossed).
    FinBothWays {
        /// The peer whose FIN the other's answers, when the packets say.
        first: Option<Dir>,
    },
    /// A packet capture saw an RST from `by` (`reset by client`, `reset by server`), or from a
    /// peer it cannot tell (`reset`); `after_fin` is the peer whose FIN came before it (the
    /// RST acknowledges it, or carries no acknowledgement): `FIN by client, then reset by
    /// server`, as the proxy's `client closed, then upstream reset: ...`.
    Reset {
        /// The peer that sent the RST, when known.
        by: Option<Dir>,
        /// The peer that had sent its FIN before the reset, when one had.
        after_fin: Option<Dir>,
    },
    /// The capture ended with the connection still open.
    CaptureEnded,
    /// A packet capture's reader gave up on the connection to bound its memory.
    Evicted,
    /// A packet capture saw a new connection (a SYN) on the same addresses and ports.
    Superseded,
    /// Words this version does not know (a JSONL from another version): kept as they are.
    Other(String),
}

/// How a proxy leg failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The socket was reset (or the pipe broke): `reset`.
    Reset,
    /// Any other error: `error`.
    Error,
}

/// Which proxy deadline passed, and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// `--handshake-timeout`: the client sent no protocol header within it.
    Handshake(Duration),
    /// `--idle-timeout`: no byte passed either way for it.
    Idle(Duration),
}

const CAPTURE_ENDED: &str = "capture ended with the connection open";
const EVICTED: &str = "evicted: too many connections tracked at once";
const SUPERSEDED: &str = "superseded by a new connection on the same ports";
const TLS_UNANSWERED: &str = "upstream did not answer the TLS upgrade header";
const TLS_CLOSED: &str = "upstream closed during the TLS upgrade: ";
const HANDSHAKE: &str = "handshake timeout: the client sent no protocol header within ";
const IDLE: &str = "idle timeout: no bytes either way for ";

/// A packet capture's name for the peer sending in `d`.
fn capture_side(d: Dir) -> &'static str {
    match d {
        Dir::C2S => "client",
        Dir::S2C => "server",
    }
}

/// The proxy's name for the peer sending in `d`.
fn side(d: Dir) -> &'static str {
    match d {
        Dir::C2S => "client",
        Dir::S2C => "upstream",
    }
}

/// The peer the proxy calls `word`.
fn side_of(word: &str) -> Option<Dir> {
    match word {
        "client" => Some(Dir::C2S),
        "upstream" => Some(Dir::S2C),
        _ => None,
    }
}

/// `30s`, `1.5s`: a duration as a close reason states it.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}s", s as u64)
    } else {
        format!("{s}s")
    }
}

/// [`seconds`] read back.
fn parse_seconds(s: &str) -> Option<Duration> {
    Duration::try_from_secs_f64(s.strip_suffix('s')?.parse().ok()?).ok()
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::Closed { first } => write!(f, "{} closed", side(*first)),
            CloseReason::Failed {
                clean_first,
                by,
                how,
                detail,
            } => {
                if let Some(c) = clean_first {
                    write!(f, "{} closed, then ", side(*c))?;
                }
                let how = match how {
                    Failure::Reset => "reset",
                    Failure::Error => "error",
                };
                write!(f, "{} {how}: {detail}", side(*by))
            }
            CloseReason::Refused(e) => write!(f, "upstream refused: {e}"),
            CloseReason::Unreachable(e) => write!(f, "upstream unreachable: {e}"),
            CloseReason::TlsUpgradeUnanswered => f.write_str(TLS_UNANSWERED),
            CloseReason::TlsUpgradeClosed(e) => write!(f, "{TLS_CLOSED}{e}"),
            CloseReason::TlsHandshake { by, detail } => {
                write!(f, "{} TLS handshake failed: {detail}", side(*by))
            }
            CloseReason::Timeout(Timeout::Handshake(d)) => write!(f, "{HANDSHAKE}{}", seconds(*d)),
            CloseReason::Timeout(Timeout::Idle(d)) => write!(f, "{IDLE}{}", seconds(*d)),
            CloseReason::ProxyStopped => f.write_str("proxy stopped"),
            CloseReason::FinBothWays { first: None } => f.write_str("FIN both ways"),
            CloseReason::FinBothWays { first: Some(d) } => {
                write!(f, "FIN both ways, {} first", capture_side(*d))
            }
            CloseReason::Reset { by, after_fin } => {
                if let Some(d) = after_fin {
                    write!(f, "FIN by {}, then ", capture_side(*d))?;
                }
                match by {
                    Some(d) => write!(f, "reset by {}", capture_side(*d)),
                    None => f.write_str("reset"),
                }
            }
            CloseReason::CaptureEnded => f.write_str(CAPTURE_ENDED),
            CloseReason::Evicted => f.write_str(EVICTED),
            CloseReason::Superseded => f.write_str(SUPERSEDED),
            CloseReason::Other(s) => f.write_str(s),
        }
    }
}

impl CloseReason {
    /// The reason `text` (a JSONL `reason`) says; words that no reason renders to are
    /// [`CloseReason::Other`], so rendering the result always gives `text` back.
    pub fn parse(text: &str) -> CloseReason {
        match Self::known(text) {
            Some(r) if r.renders_as(text) => r,
            _ => CloseReason::Other(text.to_owned()),
        }
    }

    /// Whether `Display` gives exactly `text` (compared as it is written, nothing allocated).
    fn renders_as(&self, text: &str) -> bool {
        /// What is left of the expected text; a write that does not start it fails.
        struct Rest<'a>(&'a str);
        impl fmt::Write for Rest<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0 = self.0.strip_prefix(s).ok_or(fmt::Error)?;
                Ok(())
            }
        }
        let mut rest = Rest(text);
        fmt::write(&mut rest, format_args!("{self}")).is_ok() && rest.0.is_empty()
    }

    /// A leg failure of the proxy, `by`'s socket failing with `e` (a reset when its kind is
    /// one); nobody had closed cleanly before.
    pub fn failed(by: Dir, e: &std::io::Error) -> CloseReason {
        let how = match e.kind() {
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => Failure::Reset,
            _ => Failure::Error,
        };
        CloseReason::Failed {
            clean_first: None,
            by,
            how,
            detail: e.to_string(),
        }
    }

    /// The structured reason `text` looks like, if any (checked against its rendering by
    /// [`CloseReason::parse`]).
    fn known(text: &str) -> Option<CloseReason> {
        let fixed = [
            CloseReason::ProxyStopped,
            CloseReason::CaptureEnded,
            CloseReason::Evicted,
            CloseReason::Superseded,
            CloseReason::TlsUpgradeUnanswered,
            CloseReason::Closed { first: Dir::C2S },
            CloseReason::Closed { first: Dir::S2C },
        ];
        if let Some(r) = fixed
            .into_iter()
            .chain(Self::capture_endings())
            .find(|r| r.renders_as(text))
        {
            return Some(r);
        }
        if let Some(e) = text.strip_prefix("upstream refused: ") {
            return Some(CloseReason::Refused(e.into()));
        }
        if let Some(e) = text.strip_prefix("upstream unreachable: ") {
            return Some(CloseReason::Unreachable(e.into()));
        }
        if let Some(e) = text.strip_prefix(TLS_CLOSED) {
            return Some(CloseReason::TlsUpgradeClosed(e.into()));
        }
        if let Some(d) = text.strip_prefix(HANDSHAKE) {
            return Some(CloseReason::Timeout(Timeout::Handshake(parse_seconds(d)?)));
        }
        if let Some(d) = text.strip_prefix(IDLE) {
            return Some(CloseReason::Timeout(Timeout::Idle(parse_seconds(d)?)));
        }
        let (who, rest) = text.split_once(' ')?;
        if let Some(detail) = rest.strip_prefix("TLS handshake failed: ") {
            return Some(CloseReason::TlsHandshake {
                by: side_of(who)?,
                detail: detail.into(),
            });
        }
        Self::failure(text)
    }

    /// Every FIN and RST ending a packet capture names.
    fn capture_endings() -> impl Iterator<Item = CloseReason> {
        let sides = [None, Some(Dir::C2S), Some(Dir::S2C)];
        let fins = sides.map(|first| CloseReason::FinBothWays { first });
        let resets = sides
            .into_iter()
            .flat_map(move |by| sides.map(|after_fin| CloseReason::Reset { by, after_fin }));
        fins.into_iter().chain(resets)
    }

    /// `[client closed, then ]upstream reset: detail` and the like.
    fn failure(text: &str) -> Option<CloseReason> {
        let clean = [Dir::C2S, Dir::S2C].into_iter().find_map(|d| {
            let rest = text.strip_prefix(side(d))?.strip_prefix(" closed, then ")?;
            Some((d, rest))
        });
        let (clean_first, rest) = match clean {
            Some((d, rest)) => (Some(d), rest),
            None => (None, text),
        };
        let (head, detail) = rest.split_once(": ")?;
        let (who, how) = head.split_once(' ')?;
        let how = match how {
            "reset" => Failure::Reset,
            "error" => Failure::Error,
            _ => return None,
        };
        Some(CloseReason::Failed {
            clean_first,
            by: side_of(who)?,
            how,
            detail: detail.into(),
        })
    }
}

impl From<&str> for CloseReason {
    fn from(text: &str) -> Self {
        CloseReason::parse(text)
    }
}

impl From<String> for CloseReason {
    fn from(text: String) -> Self {
        CloseReason::parse(&text)
    }
}

impl From<CloseReason> for String {
    fn from(r: CloseReason) -> Self {
        r.to_string()
    }
}

impl PartialEq<str> for CloseReason {
    fn eq(&self, text: &str) -> bool {
        self.renders_as(text)
    }
}

impl PartialEq<&str> for CloseReason {
    fn eq(&self, text: &&str) -> bool {
        self.renders_as(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One reason of every kind (and every side where a side is named).
    fn every_reason() -> Vec<CloseReason> {
        let mut all = vec![
            CloseReason::Refused("Connection refused (os error 111)".into()),
            CloseReason::Unreachable("no answer within 5s".into()),
            CloseReason::TlsUpgradeUnanswered,
            CloseReason::TlsUpgradeClosed("early eof".into()),
            CloseReason::Timeout(Timeout::Handshake(Duration::from_secs(30))),
            CloseReason::Timeout(Timeout::Idle(Duration::from_millis(1500))),
            CloseReason::ProxyStopped,
            CloseReason::CaptureEnded,
            CloseReason::Evicted,
            CloseReason::Superseded,
            CloseReason::Other("closed".into()),
            CloseReason::Other("client reset".into()),
        ];
        all.extend(CloseReason::capture_endings());
        for d in [Dir::C2S, Dir::S2C] {
            all.push(CloseReason::Closed { first: d });
            all.push(CloseReason::TlsHandshake {
                by: d,
                detail: "no answer within 10s".into(),
            });
            for how in [Failure::Reset, Failure::Error] {
                for clean_first in [None, Some(Dir::C2S), Some(Dir::S2C)] {
                    all.push(CloseReason::Failed {
                        clean_first,
                        by: d,
                        how,
                        detail: "Connection reset by peer (os error 104)".into(),
                    });
                }
            }
        }
        all
    }

    #[test]
    fn every_reason_renders_and_parses_back_to_itself() {
        for r in every_reason() {
            let text = r.to_string();
            assert_eq!(CloseReason::parse(&text), r, "{text}");
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, serde_json::to_string(&text).unwrap());
            assert_eq!(serde_json::from_str::<CloseReason>(&json).unwrap(), r);
        }
    }

    #[test]
    fn the_words_are_todays_words() {
        let cases = [
            (CloseReason::Closed { first: Dir::C2S }, "client closed"),
            (CloseReason::Closed { first: Dir::S2C }, "upstream closed"),
            (
                CloseReason::Failed {
                    clean_first: Some(Dir::C2S),
                    by: Dir::S2C,
                    how: Failure::Reset,
                    detail: "Connection reset by peer (os error 104)".into(),
                },
                "client closed, then upstream reset: Connection reset by peer (os error 104)",
            ),
            (
                CloseReason::Refused("Connection refused (os error 111)".into()),
                "upstream refused: Connection refused (os error 111)",
            ),
            (
                CloseReason::Timeout(Timeout::Handshake(Duration::from_secs(30))),
                "handshake timeout: the client sent no protocol header within 30s",
            ),
            (
                CloseReason::Timeout(Timeout::Idle(Duration::from_millis(1500))),
                "idle timeout: no bytes either way for 1.5s",
            ),
            (
                CloseReason::Reset {
                    by: Some(Dir::C2S),
                    after_fin: None,
                },
                "reset by client",
            ),
            (
                CloseReason::Reset {
                    by: Some(Dir::S2C),
                    after_fin: Some(Dir::C2S),
                },
                "FIN by client, then reset by server",
            ),
            (CloseReason::FinBothWays { first: None }, "FIN both ways"),
            (
                CloseReason::FinBothWays {
                    first: Some(Dir::S2C),
                },
                "FIN both ways, server first",
            ),
            (
                CloseReason::CaptureEnded,
                "capture ended with the connection open",
            ),
            (CloseReason::ProxyStopped, "proxy stopped"),
        ];
        for (r, text) in cases {
            assert_eq!(r.to_string(), text);
            assert_eq!(CloseReason::parse(text), r);
        }
    }

    #[test]
    fn unknown_words_are_kept_as_they_are() {
        for text in [
            "",
            "closed",
            "client reset",
            "idle timeout: no bytes either way for 1.50s",
            "idle timeout: no bytes either way for -1s",
            "server reset: x",
            "client closed, then client",
        ] {
            assert_eq!(CloseReason::parse(text), CloseReason::Other(text.into()));
            assert_eq!(CloseReason::parse(text).to_string(), text);
        }
    }
}
