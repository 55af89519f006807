//! Copying the selected frame through the terminal's clipboard (OSC 52): as hex, to paste into
//! `amqpeek decode`, or as its JSONL record. The app only says what to copy
//! ([`Effect::Clipboard`](super::app::Effect)); the event loop writes [`osc52`] to the
//! terminal, which puts it on the clipboard (tmux, kitty, iTerm2, WezTerm, Windows Terminal,
//! xterm with `allowWindowOps`).

use base64::Engine;

use super::app::Effect;
use super::model::Row;
use crate::event::{Event, EventKind};
use crate::sinks::{JsonOptions, event_json};

/// The most text copied at once (terminals cap OSC 52 payloads; beyond this, nothing is sent).
pub const MAX_COPY: usize = 1 << 20;

/// The escape sequence that puts `text` on the clipboard.
pub fn osc52(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07")
}

/// `y` (`json` false): the clipboard copy of `row`'s bytes as hex; `Y`: of its JSONL record
/// (bodies cut at `max_body`). What the status line says instead when there is none to copy.
pub(super) fn copy(row: Option<&Row>, json: bool, max_body: usize) -> Result<Effect, String> {
    let Some(r) = row else {
        return Err("no frame selected".into());
    };
    let text = if json {
        let record = r.frame.as_ref().and_then(|f| {
            event_json(
                &Event {
                    conn: r.conn,
                    ts: r.ts,
                    kind: EventKind::Frame(f.clone()),
                },
                &JsonOptions { max_body },
            )
        });
        record.unwrap_or_else(|| r.fields_json()).to_string()
    } else {
        hex::encode(r.frame.as_ref().map_or(&r.raw, |f| &f.raw))
    };
    if text.len() > MAX_COPY {
        return Err(format!(
            "not copied: {} bytes is more than a terminal clipboard takes",
            text.len()
        ));
    }
    let what = format!(
        "{} {} as {}",
        r.name,
        if json { "record" } else { "bytes" },
        if json { "JSON" } else { "hex" }
    );
    Ok(Effect::Clipboard { text, what })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_wraps_base64_text() {
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
