//! The SASL layer (AMQP 1.0 §5.3): which frame may come next, from which peer, the offered
//! mechanisms, the chosen one and the outcome.
//!
//! Pure state; never panics on input.

use crate::base::{Dir, Violation};
use crate::codec::amqp10::SaslFrame;

use super::rules;

/// Where the SASL exchange stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SaslStep {
    /// Waiting for sasl-mechanisms from the server.
    #[default]
    Mechanisms,
    /// Waiting for sasl-init from the client.
    Init,
    /// Challenges and responses until the outcome.
    Exchange,
    /// The outcome was sent.
    Done,
}

/// The SASL exchange of one connection.
#[derive(Clone, Debug, Default)]
pub struct Sasl {
    /// A SASL header was seen (the layer is in use).
    pub used: bool,
    /// The next expected step.
    pub step: SaslStep,
    /// Mechanisms the server offered.
    pub mechanisms: Vec<String>,
    /// The mechanism the client chose.
    pub mechanism: Option<String>,
    /// The outcome code (0 ok).
    pub outcome: Option<u8>,
    /// The outcome code's name.
    pub outcome_name: Option<&'static str>,
}

impl Sasl {
    /// The layer finished with code ok.
    pub fn succeeded(&self) -> bool {
        self.outcome == Some(0)
    }

    /// A SASL frame from `dir` at `offset`. `unknown`: the start was missed (learn, don't judge).
    pub fn frame(
        &mut self,
        dir: Dir,
        offset: u64,
        f: &SaslFrame,
        unknown: bool,
        out: &mut Vec<Violation>,
    ) {
        let from_server = dir == Dir::S2C;
        let unexpected = |why: String, out: &mut Vec<Violation>| {
            if !unknown {
                out.push(rules::SASL_UNEXPECTED_FRAME.violation(dir, offset, why));
            }
        };
        if !self.used && !unknown {
            unexpected(
                format!(
                    "{} outside a SASL layer (no SASL protocol header)",
                    f.name()
                ),
                out,
            );
        }
        match f {
            SaslFrame::Mechanisms {
                sasl_server_mechanisms,
            } => {
                if !from_server || self.step != SaslStep::Mechanisms {
                    unexpected(
                        format!(
                            "sasl-mechanisms from the {} at step {:?}: only the server sends it, first",
                            peer(dir),
                            self.step
                        ),
                        out,
                    );
                }
                self.mechanisms = sasl_server_mechanisms
                    .iter()
                    .map(|s| s.as_str().to_owned())
                    .collect();
                if self.step == SaslStep::Mechanisms {
                    self.step = SaslStep::Init;
                }
            }
            SaslFrame::Init { mechanism, .. } => {
                self.init(dir, offset, mechanism.as_str(), unknown, out);
            }
            SaslFrame::Challenge { .. } | SaslFrame::Response { .. } => {
                let is_challenge = matches!(f, SaslFrame::Challenge { .. });
                if is_challenge != from_server || self.step != SaslStep::Exchange {
                    unexpected(
                        format!(
                            "{} from the {} at step {:?}: challenges come from the server and responses from the client, between sasl-init and sasl-outcome",
                            f.name(),
                            peer(dir),
                            self.step
                        ),
                        out,
                    );
                }
            }
            SaslFrame::Outcome { code, .. } => {
                if !from_server || self.step != SaslStep::Exchange {
                    unexpected(
                        format!(
                            "sasl-outcome from the {} at step {:?}: the server sends it once, after sasl-init",
                            peer(dir),
                            self.step
                        ),
                        out,
                    );
                }
                if from_server {
                    self.outcome = Some(code.0);
                    self.outcome_name = Some(code.name());
                    self.step = SaslStep::Done;
                }
            }
        }
    }

    /// sasl-init: the client sends it once, after sasl-mechanisms, choosing an offered
    /// mechanism. `unknown`: the start was missed (learn, don't judge).
    fn init(
        &mut self,
        dir: Dir,
        offset: u64,
        mechanism: &str,
        unknown: bool,
        out: &mut Vec<Violation>,
    ) {
        let from_server = dir == Dir::S2C;
        if (from_server || self.step != SaslStep::Init) && !unknown {
            out.push(rules::SASL_UNEXPECTED_FRAME.violation(
                dir,
                offset,
                format!(
                    "sasl-init from the {} at step {:?}: the client sends it once, after sasl-mechanisms",
                    peer(dir),
                    self.step
                ),
            ));
        }
        let m = mechanism.to_owned();
        if !from_server && self.step == SaslStep::Init && !self.mechanisms.iter().any(|o| o == &m) {
            out.push(rules::SASL_MECHANISM_NOT_OFFERED.violation(
                dir,
                offset,
                format!(
                    "sasl-init chose {m:?}; the server offered {:?}",
                    self.mechanisms
                ),
            ));
        }
        self.mechanism = Some(m);
        if self.step <= SaslStep::Init {
            self.step = SaslStep::Exchange;
        }
    }
}

fn peer(dir: Dir) -> &'static str {
    match dir {
        Dir::C2S => "client",
        Dir::S2C => "server",
    }
}

impl PartialOrd for SaslStep {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some((*self as u8).cmp(&(*other as u8)))
    }
}
