//! Copying the selected frame through the terminal's clipboard (OSC 52): as hex, to paste into
//! `amqpeek decode`, or as its JSONL record. The app only says what to copy
//! ([`Effect::Clipboard`](super::app::Effect)); the event loop writes [`osc52`] to the
//! terminal, which puts it on the clipboard (tmux, kitty, iTerm2, WezTerm, Windows Terminal,
//! xterm with `allowWindowOps`).

use base64::Engine;

use super::app::{App, Effect};
use crate::event::{Event, EventKind};
use crate::sinks::{JsonOptions, event_json};

/// The most text copied at once (terminals cap OSC 52 payloads; beyond this, nothing is sent).
pub const MAX_COPY: usize = 1 << 20;

/// The escape sequence that puts `text` on the clipboard.
pub fn osc52(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07")
}

impl App {
    /// `y` (`json` false): the selected frame's bytes as hex; `Y`: its JSONL record.
    pub(super) fn copy_selected(&mut self, json: bool) {
        let Some(r) = self.selected_row() else {
            self.message = Some("no frame selected".into());
            return;
        };
        let text = if json {
            let record = r.frame.as_ref().and_then(|f| {
                event_json(
                    &Event {
                        conn: r.conn,
                        ts: r.ts,
                        kind: EventKind::Frame(f.clone()),
                    },
                    &JsonOptions {
                        max_body: self.model.opts.max_body,
                    },
                )
            });
            record.unwrap_or_else(|| r.fields_json()).to_string()
        } else {
            hex::encode(r.frame.as_ref().map_or(&r.raw, |f| &f.raw))
        };
        if text.len() > MAX_COPY {
            self.message = Some(format!(
                "not copied: {} bytes is more than a terminal clipboard takes",
                text.len()
            ));
            return;
        }
        let what = format!(
            "{} {} as {}",
            r.name,
            if json { "record" } else { "bytes" },
            if json { "JSON" } else { "hex" }
        );
        self.effects.push(Effect::Clipboard { text, what });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_wraps_base64_text() {
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
