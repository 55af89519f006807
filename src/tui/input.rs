//! Keys and mouse -> [`Action`]s. Pure mapping: no state beyond "is the filter line open".
//!
//! The help overlay (`views::help`) lists [`KEYS`]; keep the two in step.

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use super::app::Pane;

/// What the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Leave.
    Quit,
    /// Toggle the help overlay.
    Help,
    /// Close the overlay, leave zoom, or clear the filter.
    Escape,
    /// Start typing a filter.
    OpenFilter,
    /// A character typed into the filter line.
    FilterChar(char),
    /// Backspace in the filter line.
    FilterBackspace,
    /// Editing in a text line: a move or a deletion (Ctrl-A/E, Ctrl-U/K/W, Ctrl-Y, arrows).
    Edit(tui_input::InputRequest),
    /// The previous filter of the history (Up in the filter line).
    HistoryPrev,
    /// The next filter of the history (Down in the filter line).
    HistoryNext,
    /// Apply the typed filter.
    FilterSubmit,
    /// Close the filter line without applying.
    FilterCancel,
    /// Tab in a text line (the filter line: complete the word; the export line: what to export).
    TextTab,
    /// Mark / unmark the selected frame, or connection in the connection list.
    Mark,
    /// List only the marked frames (toggle).
    MarkedOnly,
    /// Start typing an export's path.
    OpenExport,
    /// Copy the selected frame as hex (OSC 52).
    CopyHex,
    /// Copy the selected frame as its JSONL record (OSC 52).
    CopyJson,
    /// Times in the frame list: absolute, relative to the first frame, delta to the previous.
    CycleTime,
    /// Follow the selected frame's link (AMQP 1.0) or channel (0-9-1) over time.
    Timeline,
    /// The statistics: frames per name and direction, rates, settlement latency (toggle).
    Stats,
    /// The whole text of the selection, wrapped, in an overlay (toggle).
    FullText,
    /// The messages of the selected frame's link, channel, consumer or queue (toggle).
    Messages,
    /// The focused pane fills the screen (toggle).
    Zoom,
    /// Focus the next pane.
    FocusNext,
    /// Focus the previous pane.
    FocusPrev,
    /// Focus a given pane.
    FocusPane(Pane),
    /// Cursor up.
    Up,
    /// Cursor down.
    Down,
    /// A page up.
    PageUp,
    /// A page down.
    PageDown,
    /// First row.
    Home,
    /// Last row (and follow, in the frame list).
    End,
    /// Follow new frames.
    Follow,
    /// Open / jump / expand, depending on the pane.
    Enter,
    /// Collapse the tree node.
    Collapse,
    /// Expand the tree node.
    Expand,
    /// Toggle the tree node.
    ToggleNode,
    /// Show frames of all connections.
    AllConnections,
    /// Next frame with a violation.
    NextViolation,
    /// Previous frame with a violation.
    PrevViolation,
    /// Next frame the filter matches (of the whole capture, in a file replay).
    NextMatch,
    /// Previous frame the filter matches.
    PrevMatch,
    /// Scroll the hex dump up.
    HexUp,
    /// Scroll the hex dump down.
    HexDown,
    /// Mouse wheel over a pane.
    Scroll {
        /// Column.
        x: u16,
        /// Row.
        y: u16,
        /// Towards later rows.
        down: bool,
    },
    /// Left click.
    Click {
        /// Column.
        x: u16,
        /// Row.
        y: u16,
    },
}

/// Every key, as the help overlay shows it: (keys, what they do).
pub const KEYS: &[(&str, &str)] = &[
    ("Up/Down j/k", "move the cursor"),
    ("PgUp/PgDn ^U/^D", "a page up / down"),
    (
        "g/Home G/End F",
        "first / last row (End, G, F resume follow)",
    ),
    ("Tab/Shift-Tab", "next / previous pane"),
    (
        "c d s v H",
        "focus connections / detail / state / violations / health",
    ),
    (
        "Enter",
        "open: conn->frames, frame->detail, violation/diagnosis->frame",
    ),
    (
        "Left/Right h/l",
        "scroll sideways; in the detail tree collapse / expand first",
    ),
    ("/ or f", "filter frames (Enter applies, Esc cancels)"),
    (
        "  in a line",
        "Up/Down history, Tab complete, ^A/^E, ^U/^K/^W cut, ^Y paste",
    ),
    ("Esc", "close overlay, leave zoom, clear filter"),
    (
        "n/N >/<",
        "next / previous frame with a violation / the filter matches",
    ),
    (
        "a / z / w / t",
        "all connections' frames / zoom / whole text / time column",
    ),
    (
        "m / M / e",
        "mark (connection in its list) / only marked / export",
    ),
    ("y / Y", "copy the frame as hex / as JSON (OSC 52)"),
    (
        "L / b / S",
        "follow a link or channel / its messages / statistics",
    ),
    (
        "[ ] mouse",
        "scroll the hex dump; wheel scrolls, click selects",
    ),
    ("? / q Ctrl-C", "this help / quit"),
];

/// Filter syntax lines for the help overlay.
pub const FILTER_HELP: &[&str] = &[
    "name:transfer channel:1 link:orders dir:c2s conn:2",
    "proto:0-9-1 rule:credit violations  words  \"quoted words\"",
    "fields: handle:1 delivery-id:2..5 settled:false  !t: not  a|b: either",
];

/// A key in a text line (the filter or the export path): the editing keys of a shell's line.
fn text_line_action(key: KeyEvent, ctrl: bool) -> Option<Action> {
    use tui_input::InputRequest as E;
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let edit = match key.code {
        KeyCode::Enter => return Some(Action::FilterSubmit),
        KeyCode::Esc => return Some(Action::FilterCancel),
        KeyCode::Backspace if ctrl || alt => E::DeletePrevWord,
        KeyCode::Backspace => return Some(Action::FilterBackspace),
        KeyCode::Tab => return Some(Action::TextTab),
        KeyCode::Up => return Some(Action::HistoryPrev),
        KeyCode::Down => return Some(Action::HistoryNext),
        KeyCode::Delete => E::DeleteNextChar,
        KeyCode::Left if ctrl || alt => E::GoToPrevWord,
        KeyCode::Right if ctrl || alt => E::GoToNextWord,
        KeyCode::Left => E::GoToPrevChar,
        KeyCode::Right => E::GoToNextChar,
        KeyCode::Home => E::GoToStart,
        KeyCode::End => E::GoToEnd,
        KeyCode::Char(c) if ctrl => match c {
            'a' => E::GoToStart,
            'e' => E::GoToEnd,
            'b' => E::GoToPrevChar,
            'f' => E::GoToNextChar,
            'u' => E::DeleteFromStart,
            'k' => E::DeleteTillEnd,
            'w' | 'h' => E::DeletePrevWord,
            'd' => E::DeleteNextChar,
            'y' => E::Yank,
            'p' => return Some(Action::HistoryPrev),
            'n' => return Some(Action::HistoryNext),
            _ => return None,
        },
        KeyCode::Char('b') if alt => E::GoToPrevWord,
        KeyCode::Char('f') if alt => E::GoToNextWord,
        KeyCode::Char('d') if alt => E::DeleteNextWord,
        KeyCode::Char(c) => return Some(Action::FilterChar(c)),
        _ => return None,
    };
    Some(Action::Edit(edit))
}

/// The action for a key press (`filtering`: the filter line is open).
pub fn key_action(key: KeyEvent, filtering: bool) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c')) {
        return Some(Action::Quit);
    }
    if filtering {
        return text_line_action(key, ctrl);
    }
    Some(match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Esc => Action::Escape,
        KeyCode::Char('/') | KeyCode::Char('f') => Action::OpenFilter,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::Char('u') if ctrl => Action::PageUp,
        KeyCode::Char('d') if ctrl => Action::PageDown,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Char('F') => Action::Follow,
        KeyCode::Tab => Action::FocusNext,
        KeyCode::BackTab => Action::FocusPrev,
        KeyCode::Enter => Action::Enter,
        KeyCode::Left | KeyCode::Char('h') => Action::Collapse,
        KeyCode::Right | KeyCode::Char('l') => Action::Expand,
        KeyCode::Char(' ') => Action::ToggleNode,
        KeyCode::Char('a') => Action::AllConnections,
        KeyCode::Char('n') => Action::NextViolation,
        KeyCode::Char('N') => Action::PrevViolation,
        KeyCode::Char('>') => Action::NextMatch,
        KeyCode::Char('<') => Action::PrevMatch,
        KeyCode::Char('z') => Action::Zoom,
        KeyCode::Char('w') => Action::FullText,
        KeyCode::Char('b') => Action::Messages,
        KeyCode::Char('m') => Action::Mark,
        KeyCode::Char('M') => Action::MarkedOnly,
        KeyCode::Char('e') => Action::OpenExport,
        KeyCode::Char('y') => Action::CopyHex,
        KeyCode::Char('Y') => Action::CopyJson,
        KeyCode::Char('t') => Action::CycleTime,
        KeyCode::Char('L') => Action::Timeline,
        KeyCode::Char('S') => Action::Stats,
        KeyCode::Char('[') => Action::HexUp,
        KeyCode::Char(']') => Action::HexDown,
        KeyCode::Char('c') => Action::FocusPane(Pane::Connections),
        KeyCode::Char('d') => Action::FocusPane(Pane::Detail),
        KeyCode::Char('s') => Action::FocusPane(Pane::State),
        KeyCode::Char('v') => Action::FocusPane(Pane::Violations),
        KeyCode::Char('H') => Action::FocusPane(Pane::Health),
        _ => return None,
    })
}

/// The action for a mouse event.
pub fn mouse_action(m: MouseEvent) -> Option<Action> {
    let (x, y) = (m.column, m.row);
    match m.kind {
        MouseEventKind::ScrollDown => Some(Action::Scroll { x, y, down: true }),
        MouseEventKind::ScrollUp => Some(Action::Scroll { x, y, down: false }),
        MouseEventKind::Down(MouseButton::Left) => Some(Action::Click { x, y }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn letters_are_commands_outside_the_filter_line_and_text_inside_it() {
        assert_eq!(key_action(k(KeyCode::Char('q')), false), Some(Action::Quit));
        assert_eq!(
            key_action(k(KeyCode::Char('q')), true),
            Some(Action::FilterChar('q'))
        );
        assert_eq!(
            key_action(k(KeyCode::Esc), true),
            Some(Action::FilterCancel)
        );
        assert_eq!(key_action(k(KeyCode::Esc), false), Some(Action::Escape));
    }

    #[test]
    fn ctrl_c_quits_even_while_typing_a_filter() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(key_action(ctrl_c, true), Some(Action::Quit));
        assert_eq!(key_action(ctrl_c, false), Some(Action::Quit));
    }

    #[test]
    fn key_releases_are_ignored() {
        let mut e = k(KeyCode::Char('j'));
        e.kind = KeyEventKind::Release;
        assert_eq!(key_action(e, false), None);
    }
}
