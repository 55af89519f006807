//! The statistics overlay (`S`): the latest report of the pipeline's statistics sink, as
//! `amqpeek stats` prints it, over the panes.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::tui::App;

/// Draw the statistics over `area`, scrolled (lines, columns).
pub fn render(app: &App, f: &mut Frame, area: Rect, (scroll, column): (usize, u16)) {
    let lines = crate::tui::components::stats_view::StatsView::lines(&app.model);
    let body: Vec<Line> = if lines.is_empty() {
        vec![Line::raw("no statistics yet: nothing has been seen")]
    } else {
        lines
            .iter()
            .skip(scroll)
            .map(|l| {
                if l.starts_with(' ') || l.is_empty() {
                    Line::raw(l.clone())
                } else {
                    Line::styled(l.clone(), Style::new().add_modifier(Modifier::BOLD))
                }
            })
            .collect()
    };
    let title = format!(
        " Statistics{} (S or Esc closes; arrows, PgUp/PgDn, g/G scroll) ",
        if app.model.feed_ended { "" } else { ", so far" }
    );
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(body).scroll((0, column)).block(
            Block::bordered()
                .border_style(Style::new().fg(Color::Cyan))
                .title(Line::styled(
                    title,
                    Style::new().add_modifier(Modifier::BOLD),
                )),
        ),
        area,
    );
}
