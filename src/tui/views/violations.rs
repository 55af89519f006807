//! The violations pane: every violation with time, connection, direction, severity, rule,
//! spec section and message. Enter jumps to the frame.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{clock, count, pane_block, selected_style};
use crate::event::Severity;
use crate::tui::app::{App, Pane, ViolationRow};

/// The text of one violation line.
pub fn row_text(v: &ViolationRow) -> String {
    let sev = match v.violation.severity {
        Severity::Error => "error",
        Severity::Warning => "warn",
        Severity::Info => "info",
    };
    format!(
        "{} {:>3} {} {:<5} {}  [{}]  {}",
        clock(v.ts),
        v.conn,
        v.violation.dir.arrow(),
        sev,
        v.violation.rule,
        v.violation.spec,
        v.violation.message
    )
}

/// Draw the violations pane.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let focused = app.focus == Pane::Violations;
    let mut title = vec![Span::styled(
        format!(" Violations {} ", count(app.violations.len() as u64)),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if app.violations_evicted > 0 {
        title.push(Span::styled(
            format!(
                "({} older dropped from view) ",
                count(app.violations_evicted)
            ),
            Style::new().fg(Color::Yellow),
        ));
    }
    title.push(Span::styled(
        "Enter: go to frame ",
        Style::new().fg(Color::DarkGray),
    ));
    let block = pane_block(app, Pane::Violations, Line::from(title));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let mut lines = vec![Line::styled(
        "time          #   dir sev   rule  [spec]  message",
        Style::new()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::BOLD),
    )];
    let h = inner.height.saturating_sub(1) as usize;
    let start = app.violation_list.offset.min(app.violations.len());
    for (i, v) in app.violations.iter().enumerate().skip(start).take(h) {
        let mut style = match v.violation.severity {
            Severity::Error => Style::new().fg(Color::Red),
            Severity::Warning => Style::new().fg(Color::Yellow),
            Severity::Info => Style::new(),
        };
        if i == app.violation_list.selected {
            style = style.patch(selected_style(focused));
        }
        lines.push(Line::styled(row_text(v), style));
    }
    if app.violations.is_empty() {
        lines.push(Line::styled(
            "no violations",
            Style::new().fg(Color::DarkGray),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
