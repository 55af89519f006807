//! The statistics overlay (`S`): the latest report of the pipeline's statistics sink, as
//! `amqpeek stats` prints it, over the panes.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use crate::tui::components::stats_view::StatsView;
use crate::tui::model::Model;

/// Draw the statistics of `model` over `area`, scrolled as `view` is.
pub fn render(view: &StatsView, model: &Model, f: &mut Frame, area: Rect) {
    let (scroll, column) = (view.scroll(), view.column());
    let lines = StatsView::lines(model);
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
        if model.feed_ended { "" } else { ", so far" }
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
