//! A decoded frame with where it was found, as the pipeline hands it to the trackers and the
//! sinks.

use bytes::Bytes;

use super::{AnyFrame, AnyMessage};
use crate::base::{Dir, FrameContext};
use crate::codec::DecodeError;

/// A decoded frame with where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameEvent {
    /// Which way (`C2S`: sent by the client; `S2C`: by the server).
    pub dir: Dir,
    /// Byte offset of the frame in that direction's stream.
    pub offset: u64,
    /// The frame's bytes, credentials masked (unless `--show-secrets`); `frame` is decoded
    /// from them, so its fields show the mask too.
    pub raw: Bytes,
    /// The decoded frame.
    pub frame: AnyFrame,
    /// The message this frame completes, if any.
    pub message: Option<Result<AnyMessage, DecodeError>>,
    /// What the state layer knows of the frame: its link or channel, its delivery, what it
    /// settles. Computed once, as the frame is tracked; every consumer reads it from here.
    pub context: FrameContext,
}

impl FrameEvent {
    /// The frame's full size: `raw` holds all of it, or (a frame larger than the inspection
    /// budget) its head, the rest having been streamed to the sinks as `Undecoded` bytes.
    pub fn size(&self) -> u64 {
        self.raw.len() as u64 + self.frame.streamed()
    }

    /// The frame's line as every text output shows it and the filter's free text searches
    /// it: its summary (its name when it has none), then, when it completes a message whose
    /// body the summary does not show (AMQP 1.0), the body in a few words.
    pub fn line(&self) -> String {
        let mut text = String::new();
        self.line_into(&mut text);
        text
    }

    /// Append the frame's line ([`FrameEvent::line`]) to `out`.
    pub fn line_into(&self, out: &mut String) {
        let start = out.len();
        self.frame.summary_into(out);
        if out.len() == start {
            out.push_str(self.frame.name());
        }
        self.message_summary_after(out, start);
    }

    /// The summary, then what the message it completes adds (see [`FrameEvent::line`]).
    pub fn summary_with_message(&self) -> String {
        let mut text = self.frame.summary();
        self.message_summary_after(&mut text, 0);
        text
    }

    /// Append what the message the frame completes adds to its line, after a space when the
    /// line (from `out[start..]`) already holds something.
    fn message_summary_after(&self, out: &mut String, start: usize) {
        match &self.message {
            Some(Ok(m)) => {
                let before = out.len();
                if before > start {
                    out.push(' ');
                }
                let at = out.len();
                m.line_summary_into(out);
                if out.len() == at {
                    // No words to add: no separator either.
                    out.truncate(before);
                }
            }
            // A message that does not decode says where and why, as its JSONL record does.
            Some(Err(e)) => {
                if out.len() > start {
                    out.push(' ');
                }
                out.push_str("message does not decode ");
                crate::base::escape::escape_into(out, &e.to_string());
            }
            None => {}
        }
    }
}
