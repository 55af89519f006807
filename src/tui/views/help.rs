//! The help overlay: every key and the filter syntax.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::tui::input::{FILTER_HELP, KEYS};

/// The overlay's lines.
pub fn lines() -> Vec<Line<'static>> {
    let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let mut out: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:<16}"), key),
                Span::raw(*what),
            ])
        })
        .collect();
    out.push(Line::styled(
        "Filter:",
        Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
    ));
    out.extend(FILTER_HELP.iter().map(|l| Line::raw(format!("  {l}"))));
    out
}

/// Draw the overlay centred in `area`.
pub fn render(f: &mut Frame, area: Rect) {
    let lines = lines();
    let w = area.width.min(80);
    let h = area.height.min(lines.len() as u16 + 2);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines).block(
            Block::bordered()
                .border_style(Style::new().fg(Color::Cyan))
                .title(" amqpeek keys (Esc or ? closes) "),
        ),
        r,
    );
}
