//! The state pane: the tracker's typed snapshot of the shown connection, as the lines
//! [`state_items`] builds, with a link-credit sparkline beside each link (from the tracker's
//! own credit history). Lines wider than the pane scroll sideways (Left/Right), the
//! sparklines staying where they are.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Sparkline};

use super::state_items::{ItemKind, state_items_in};
use super::{Chrome, block_of, max_shift, selected_style, shift_hint, shifted};
use crate::event::Snapshot;
use crate::tui::app::App;
use crate::tui::components::state_pane::StatePane;
use crate::tui::model::Conn;

/// Width of the sparkline column.
pub const SPARK_W: u16 = 16;

/// The width of the state lines in a pane of `area`: all of it, less the sparklines' column
/// when the pane is wide enough for them.
pub fn text_width(area: Rect) -> usize {
    let inner = ratatui::widgets::Block::bordered().inner(area);
    if inner.width >= 60 {
        (inner.width - SPARK_W - 1) as usize
    } else {
        inner.width as usize
    }
}

/// The width of the widest state line in a pane of `area` (the lines are built at the pane's
/// width and may be wider: Left/Right scroll them).
pub fn widest(snapshot: Option<&Snapshot>, area: Rect) -> usize {
    snapshot
        .map(|s| state_items_in(s, text_width(area)))
        .unwrap_or_default()
        .iter()
        .map(|i| i.text.chars().count())
        .max()
        .unwrap_or(0)
}

/// What the state pane is drawn of: its component's state, the connection it shows and the
/// state of that connection it shows (as of the selected frame, in a replay).
#[derive(Clone, Copy)]
pub struct Shown<'a> {
    /// The pane's component.
    pub pane: &'a StatePane,
    /// The connection shown.
    pub conn: Option<&'a Conn>,
    /// Its state shown.
    pub snapshot: Option<&'a Snapshot>,
}

impl<'a> Shown<'a> {
    /// What the state pane of `app` shows.
    pub fn of(app: &'a App) -> Shown<'a> {
        Shown {
            pane: &app.state,
            conn: app.state_conn(),
            snapshot: app.state_snapshot(),
        }
    }
}

/// The pane's title: the connection shown and the name of its state shown.
fn title(shown: Shown) -> Line<'static> {
    let title = match shown.conn {
        Some(c) => {
            let name = shown.snapshot.map_or(c.state.as_str(), |s| s.name.as_str());
            format!(" State: conn {} {name} ", c.id)
        }
        None => " State ".to_string(),
    };
    Line::styled(title, Style::new().add_modifier(Modifier::BOLD))
}

/// Draw the state pane.
pub fn render(shown: Shown, chrome: Chrome, f: &mut Frame, area: Rect) {
    let focused = chrome.focused;
    let conn = shown.conn;
    let mut block = block_of(focused, title(shown));
    let inner = block.inner(area);
    let spark = inner.width >= 60;
    let text_w = text_width(area) as u16;
    let items = shown
        .snapshot
        .map(|s| state_items_in(s, text_w as usize))
        .unwrap_or_default();
    let widest = items
        .iter()
        .map(|i| i.text.chars().count())
        .max()
        .unwrap_or(0);
    let from = chrome.shift.min(max_shift(widest, text_w as usize));
    if let Some(hint) = shift_hint(from, widest, text_w as usize) {
        block = block.title_bottom(hint);
    }
    f.render_widget(block, area);
    if items.is_empty() {
        let msg = if conn.is_some() {
            "nothing tracked yet"
        } else {
            "no connection selected"
        };
        f.render_widget(
            Paragraph::new(Line::styled(msg, Style::new().fg(Color::DarkGray))),
            inner,
        );
        return;
    }
    let h = inner.height as usize;
    let mut list = shown.pane.cursor().list();
    list.selected = list.selected.min(items.len() - 1);
    if list.selected >= list.offset + h.max(1) {
        list.offset = list.selected + 1 - h.max(1);
    }
    for (row, (i, it)) in items
        .iter()
        .enumerate()
        .skip(list.offset)
        .take(h)
        .enumerate()
    {
        let mut style = match it.kind {
            ItemKind::Heading => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ItemKind::Columns => Style::new().fg(Color::DarkGray),
            _ => Style::new(),
        };
        if i == list.selected {
            style = style.patch(selected_style(focused));
        }
        let y = inner.y + row as u16;
        f.render_widget(
            Paragraph::new(Line::styled(
                shifted(&it.text, from, text_w as usize),
                style,
            )),
            Rect::new(inner.x, y, text_w, 1),
        );
        if !spark {
            continue;
        }
        let sx = inner.x + text_w + 1;
        if it.kind == ItemKind::Columns && it.text.contains("credit") {
            f.render_widget(
                Paragraph::new(Line::styled(
                    "credit history",
                    Style::new().fg(Color::DarkGray),
                )),
                Rect::new(sx, y, SPARK_W, 1),
            );
        }
        if let Some(hist) = &it.credit {
            // Negative credit (lowered below what is in flight) draws as none left.
            let data: Vec<u64> = hist
                .iter()
                .rev()
                .take(SPARK_W as usize)
                .rev()
                .map(|c| (*c).max(0) as u64)
                .collect();
            let max = data.iter().copied().max().unwrap_or(0).max(1);
            f.render_widget(
                Sparkline::default()
                    .data(data)
                    .max(max)
                    .style(Style::new().fg(Color::Green)),
                Rect::new(sx, y, SPARK_W, 1),
            );
        }
    }
}
