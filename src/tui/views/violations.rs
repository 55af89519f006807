//! The violations pane: every violation with time, connection, direction, severity, rule,
//! spec section and message; when a line shown is wider than the pane, the message comes
//! before the spec section, so a narrow pane still shows what happened; Left/Right scroll the
//! lines sideways and `w` shows the selected one whole.
//! Enter jumps to the frame. Spec and message are escaped: a message may quote the wire.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{Chrome, block_of, clock, count, scrolled_by, selected_style, window};
use crate::event::Severity;
use crate::event::escape::escape;
use crate::tui::app::ViolationRow;
use crate::tui::components::violations::Violations;

/// The text of one violation line.
pub fn row_text(v: &ViolationRow) -> String {
    line_text(v, false)
}

/// The column heads, in the order of [`line_text`].
fn heads(message_first: bool) -> &'static str {
    if message_first {
        "time          #   dir sev   rule  message  [spec]"
    } else {
        "time          #   dir sev   rule  [spec]  message"
    }
}

/// The text of one violation line, the message before the spec section when `message_first`.
fn line_text(v: &ViolationRow, message_first: bool) -> String {
    let sev = match v.violation.severity {
        Severity::Error => "error",
        Severity::Warning => "warn",
        Severity::Info => "info",
    };
    let head = format!(
        "{} {:>3} {} {:<5} {}",
        clock(v.ts),
        v.conn,
        v.violation.dir.arrow(),
        sev,
        v.violation.rule,
    );
    let (spec, message) = (escape(&v.violation.spec), escape(&v.violation.message));
    if message_first {
        format!("{head}  {message}  [{spec}]")
    } else {
        format!("{head}  [{spec}]  {message}")
    }
}

/// The lines the pane shows in `inner` (column heads first) at their full width, each with its
/// style: the message before the spec section when a line is wider than the pane.
fn lines_of(pane: &Violations, focused: bool, inner: Rect) -> Vec<(String, Style)> {
    let h = inner.height.saturating_sub(1) as usize;
    let start = pane.cursor().list().offset.min(pane.rows().len());
    let message_first = pane
        .rows()
        .iter()
        .skip(start)
        .take(h)
        .any(|v| row_text(v).chars().count() > inner.width as usize);
    let mut lines = vec![(
        heads(message_first).to_string(),
        Style::new()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::BOLD),
    )];
    for (i, v) in pane.rows().iter().enumerate().skip(start).take(h) {
        let mut style = match v.violation.severity {
            Severity::Error => Style::new().fg(Color::Red),
            Severity::Warning => Style::new().fg(Color::Yellow),
            Severity::Info => Style::new(),
        };
        if i == pane.cursor().selected() {
            style = style.patch(selected_style(focused));
        }
        lines.push((line_text(v, message_first), style));
    }
    lines
}

/// The width of the widest line the pane shows in `area`.
pub fn widest(pane: &Violations, area: Rect) -> usize {
    let inner = ratatui::widgets::Block::bordered().inner(area);
    lines_of(pane, false, inner)
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0)
}

/// Draw the violations pane.
pub fn render(pane: &Violations, chrome: Chrome, f: &mut Frame, area: Rect) {
    let mut title = vec![Span::styled(
        format!(" Violations {} ", count(pane.rows().len() as u64)),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if pane.evicted() > 0 {
        title.push(Span::styled(
            format!("({} older dropped from view) ", count(pane.evicted())),
            Style::new().fg(Color::Yellow),
        ));
    }
    title.push(Span::styled(
        "Enter: go to frame ",
        Style::new().fg(Color::DarkGray),
    ));
    let block = block_of(chrome.focused, Line::from(title));
    let inner = block.inner(area);
    if inner.height == 0 {
        f.render_widget(block, area);
        return;
    }
    let rows = lines_of(pane, chrome.focused, inner);
    let (block, mut lines) = scrolled_by(chrome.shift, block, rows, inner.width as usize, window);
    f.render_widget(block, area);
    if pane.rows().is_empty() {
        lines.push(Line::styled(
            "no violations",
            Style::new().fg(Color::DarkGray),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
