//! The SASL frames as typed views (sasl-mechanisms, sasl-init, sasl-challenge, sasl-response,
//! sasl-outcome) and where their credentials sit, for masking.

use std::ops::Range;

use bytes::Bytes;

use super::composite::{Composite, CompositeDef};
use super::fields::FieldList;
use super::value::{Str, Symbol};
use super::views::code;

/// `sasl-code` (ubyte): 0 ok, 1 auth, 2 sys, 3 sys-perm, 4 sys-temp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaslCode(pub u8);

impl SaslCode {
    /// The spec's name for the code, or `unknown`.
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "ok",
            1 => "auth",
            2 => "sys",
            3 => "sys-perm",
            4 => "sys-temp",
            _ => "unknown",
        }
    }
}

/// One SASL frame body.
#[derive(Clone, Debug, PartialEq)]
pub enum SaslFrame {
    /// `sasl-mechanisms` (0x40).
    Mechanisms {
        /// Normalised from single or array.
        sasl_server_mechanisms: Vec<Symbol>,
    },
    /// `sasl-init` (0x41).
    Init {
        /// The chosen mechanism.
        mechanism: Symbol,
        /// The initial response (credentials for PLAIN).
        initial_response: Option<Bytes>,
        /// Virtual host.
        hostname: Option<Str>,
    },
    /// `sasl-challenge` (0x42).
    Challenge {
        /// Challenge data.
        challenge: Bytes,
    },
    /// `sasl-response` (0x43).
    Response {
        /// Response data.
        response: Bytes,
    },
    /// `sasl-outcome` (0x44).
    Outcome {
        /// The result.
        code: SaslCode,
        /// Extra data.
        additional_data: Option<Bytes>,
    },
}

impl SaslFrame {
    /// The typed view of a checked composite; `None` when it is not a SASL frame. `raw` is the
    /// frame `c` was decoded from.
    pub fn from_composite(c: &Composite, raw: &Bytes) -> Option<Self> {
        c.with_field_list(raw, |f| Self::from_fields(c.def, f))
    }

    /// The typed view of the checked fields `f` of a composite of `def`; `None` when it is not
    /// a SASL frame.
    pub fn from_fields(def: &CompositeDef, f: &FieldList<'_>) -> Option<Self> {
        Some(match def.code {
            code::SASL_MECHANISMS => SaslFrame::Mechanisms {
                sasl_server_mechanisms: f.symbols(0),
            },
            code::SASL_INIT => SaslFrame::Init {
                mechanism: f.symbol(0).unwrap_or_default(),
                initial_response: f.binary(1),
                hostname: f.string(2),
            },
            code::SASL_CHALLENGE => SaslFrame::Challenge {
                challenge: f.binary(0).unwrap_or_default(),
            },
            code::SASL_RESPONSE => SaslFrame::Response {
                response: f.binary(0).unwrap_or_default(),
            },
            code::SASL_OUTCOME => SaslFrame::Outcome {
                code: SaslCode(f.ubyte(0).unwrap_or_default()),
                additional_data: f.binary(1),
            },
            _ => return None,
        })
    }

    /// Every SASL frame's spec name.
    pub const NAMES: [&'static str; 5] = [
        "sasl-mechanisms",
        "sasl-init",
        "sasl-challenge",
        "sasl-response",
        "sasl-outcome",
    ];

    /// The spec name (`sasl-init` ...).
    pub fn name(&self) -> &'static str {
        match self {
            SaslFrame::Mechanisms { .. } => "sasl-mechanisms",
            SaslFrame::Init { .. } => "sasl-init",
            SaslFrame::Challenge { .. } => "sasl-challenge",
            SaslFrame::Response { .. } => "sasl-response",
            SaslFrame::Outcome { .. } => "sasl-outcome",
        }
    }
}

/// The content bytes (after the vbin8/vbin32 constructor and length) of the binary encoded at
/// `span` within `raw`.
fn binary_content(raw: &[u8], span: Range<usize>) -> Option<Range<usize>> {
    let header = match raw.get(span.start)? {
        0xa0 => 2,
        0xb0 => 5,
        _ => return None,
    };
    let start = span.start.checked_add(header)?;
    (start <= span.end && span.end <= raw.len()).then_some(start..span.end)
}

/// Byte ranges (within `raw`) of the credentials a SASL frame carries: a PLAIN
/// `initial-response`'s password, any other mechanism's whole `initial-response`, a
/// `sasl-response`'s whole response.
///
/// Fails closed: when the response is not where or what the spec says (typed as a string or
/// anything but binary, or followed by fields the frame does not define), everything from the
/// response to the end of the frame's fields is masked. Content bytes only where the type is a
/// string or binary, so the masked frame still decodes; otherwise whole encodings, and the
/// caller treats a frame that no longer decodes as malformed.
#[inline(never)]
pub fn secret_ranges(sasl: &SaslFrame, c: &Composite, raw: &Bytes) -> Vec<Range<usize>> {
    let (field, defined) = match sasl {
        SaslFrame::Init { .. } => (1, 3),
        SaslFrame::Response { .. } => (0, 1),
        _ => return Vec::new(),
    };
    let spans = c.spans(raw);
    let Some(span) = spans.get(field).cloned() else {
        return Vec::new();
    };
    let Some(content) = binary_content(raw, span.clone()) else {
        // Not binary: null (absent) is fine, anything else is masked whole.
        if raw.get(span.start) == Some(&super::value::code::NULL) && spans.len() <= defined {
            return Vec::new();
        }
        return text_content(raw, span.clone())
            .into_iter()
            .chain(spans[field + 1..].iter().cloned())
            .chain(text_content(raw, span.clone()).is_none().then_some(span))
            .filter(|r| !r.is_empty())
            .collect();
    };
    let mut out: Vec<Range<usize>> = match sasl {
        SaslFrame::Init {
            mechanism,
            initial_response: Some(resp),
            ..
        } if mechanism.as_str().eq_ignore_ascii_case("PLAIN") => {
            let mut nuls = resp.iter().enumerate().filter(|(_, b)| **b == 0);
            match (nuls.next(), nuls.next()) {
                (Some(_), Some((second, _))) => {
                    std::iter::once(content.start + second + 1..content.end).collect()
                }
                _ => vec![content],
            }
        }
        _ => vec![content],
    };
    // Fields the frame does not define, after the response: masked whole.
    if spans.len() > defined {
        out.extend(spans[field + 1..].iter().cloned());
    }
    out.retain(|r| !r.is_empty());
    out
}

/// The content bytes of a string or symbol encoding at `span` (its constructor and length
/// left intact, so masking keeps the encoding valid).
fn text_content(raw: &[u8], span: Range<usize>) -> Option<Range<usize>> {
    let header = match raw.get(span.start)? {
        0xa1 | 0xa3 => 2,
        0xb1 | 0xb3 => 5,
        _ => return None,
    };
    let start = span.start.checked_add(header)?;
    (start <= span.end && span.end <= raw.len()).then_some(start..span.end)
}
