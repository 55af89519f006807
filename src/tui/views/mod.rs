//! Drawing: the screen layout and every pane, from `&App` only. Each pane and overlay draws
//! from its component and the shared model (and what it follows of the others: the selected
//! frame's row, the connection chosen, the filter, the marks), with its [`Chrome`] (focus,
//! sideways scroll); `render` here gathers them. The status line (`status.rs`), which says
//! where the whole session stands, draws from what it gathers of `App`.
//!
//! Rendering never mutates the app and does no I/O; the same app state always draws the same
//! screen. [`layout`] is shared with the app so that mouse clicks and page sizes agree with
//! what is drawn.

pub mod connections;
pub mod detail;
mod filter_line;
pub mod frames;
pub mod fulltext;
pub mod health;
pub mod help;
pub mod messages;
pub mod state;
pub mod state_items;
pub mod stats;
pub mod status;
pub mod timeline;
pub mod violations;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph};

use super::app::{App, Overlay, Pane};
use crate::event::Timestamp;

/// Where each pane goes on a screen of a given size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    /// Connection list.
    pub conns: Rect,
    /// Frame list.
    pub frames: Rect,
    /// The bottom pane.
    pub bottom: Rect,
    /// Which pane the bottom area shows.
    pub bottom_pane: Pane,
    /// Status line.
    pub status: Rect,
}

impl Areas {
    /// The rectangle of `pane` (empty when not shown).
    pub fn rect(&self, pane: Pane) -> Rect {
        match pane {
            Pane::Connections => self.conns,
            Pane::Frames => self.frames,
            p if p == self.bottom_pane => self.bottom,
            _ => Rect::default(),
        }
    }
}

/// The layout for `app` on a `size` (columns, rows) screen.
pub fn layout(app: &App, size: (u16, u16)) -> Areas {
    let (w, h) = size;
    // The status line, taller while the filter line needs more (a long error, candidates).
    let lines = status_height(app, w).min(h / 3).max(1).min(h);
    let status = Rect::new(0, h.saturating_sub(lines), w, lines);
    let rest = h.saturating_sub(lines);
    let mut a = Areas {
        status,
        bottom_pane: app.bottom,
        ..Default::default()
    };
    if app.zoom {
        let full = Rect::new(0, 0, w, rest);
        match app.focus {
            Pane::Connections => a.conns = full,
            Pane::Frames => a.frames = full,
            p => {
                a.bottom_pane = p;
                a.bottom = full;
            }
        }
        return a;
    }
    let wanted = app.model.conns.len() as u16 + 1 + 3;
    let conns_h = wanted.clamp(4, (rest * 3 / 10).max(4)).min(rest);
    let remaining = rest - conns_h;
    let bottom_h = remaining / 2;
    let frames_h = remaining - bottom_h;
    a.conns = Rect::new(0, 0, w, conns_h);
    a.frames = Rect::new(0, conns_h, w, frames_h);
    a.bottom = Rect::new(0, conns_h + frames_h, w, bottom_h);
    a
}

/// Does `pane` draw a column header row under its top border?
fn has_header(pane: Pane) -> bool {
    matches!(pane, Pane::Connections | Pane::Violations | Pane::Health)
}

/// How many list rows `pane` shows in `rect` (the Health pane's depend on its entries too:
/// [`health::list_rows`]).
pub fn list_height(rect: Rect, pane: Pane) -> usize {
    let chrome = 2 + u16::from(has_header(pane));
    rect.height.saturating_sub(chrome) as usize
}

/// The screen row of the first list row of `pane` in `rect`.
pub fn first_row_y(rect: Rect, pane: Pane) -> Option<u16> {
    if rect.height <= 2 {
        return None;
    }
    Some(rect.y + 1 + u16::from(has_header(pane)))
}

/// How many lines the status line takes on a screen `width` columns wide: one, or what the
/// filter line needs to show its whole error and its completion's candidates.
fn status_height(app: &App, width: u16) -> u16 {
    match &app.overlay {
        Overlay::FilterInput(input) => filter_line::lines(input, width)
            .len()
            .min(u16::MAX as usize) as u16,
        _ => 1,
    }
}

/// Draw the whole screen.
pub fn render(app: &App, f: &mut Frame) {
    let area = f.area();
    let areas = layout(app, (area.width, area.height));
    if areas.conns.height > 0 {
        let chrome = chrome(app, Pane::Connections);
        connections::render(connections::Shown::of(app), chrome, f, areas.conns);
    }
    if areas.frames.height > 0 {
        let chrome = chrome(app, Pane::Frames);
        frames::render(frames::Shown::of(app), chrome, f, areas.frames);
    }
    if areas.bottom.height > 0 {
        match areas.bottom_pane {
            Pane::State => {
                let chrome = chrome(app, Pane::State);
                state::render(state::Shown::of(app), chrome, f, areas.bottom)
            }
            Pane::Violations => {
                let chrome = chrome(app, Pane::Violations);
                violations::render(&app.violations, chrome, f, areas.bottom)
            }
            Pane::Health => {
                let chrome = chrome(app, Pane::Health);
                health::render(&app.health, app.model.now, chrome, f, areas.bottom)
            }
            _ => {
                let chrome = chrome(app, Pane::Detail);
                detail::render(detail::Shown::of(app), chrome, f, areas.bottom)
            }
        }
    }
    status(app, f, areas.status);
    if app.overlay == Overlay::Help {
        help::render(f, area);
    }
    if let Overlay::Timeline(t) = &app.overlay {
        let above = Rect::new(0, 0, area.width, area.height.saturating_sub(1));
        timeline::render(t, &app.model, f, above);
    }
    if let Overlay::Stats(v) = &app.overlay {
        let above = Rect::new(0, 0, area.width, area.height.saturating_sub(1));
        stats::render(v, &app.model, f, above);
    }
    if let Overlay::FullText(v) = &app.overlay {
        let size = (area.width, area.height);
        fulltext::render(f, size, v.title(), v.text(), v.scroll());
    }
    if let Overlay::Messages(view) = &app.overlay {
        messages::render(view, &app.model, f);
    }
}

/// A bordered block, highlighted when focused.
pub fn pane_block<'a>(app: &App, pane: Pane, title: Line<'a>) -> Block<'a> {
    block_of(app.focus == pane, title)
}

/// How a pane is drawn around its component's own state: whether it has the focus, and how
/// far it is scrolled sideways.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chrome {
    /// The pane has the focus.
    pub focused: bool,
    /// Columns it is scrolled sideways.
    pub shift: usize,
}

/// The chrome of `pane` in `app`.
pub fn chrome(app: &App, pane: Pane) -> Chrome {
    Chrome {
        focused: app.focus == pane,
        shift: app.shift(pane),
    }
}

/// A bordered block, highlighted when `focused`.
pub fn block_of(focused: bool, title: Line<'_>) -> Block<'_> {
    let (style, kind) = if focused {
        (Style::new().fg(Color::Cyan), BorderType::Thick)
    } else {
        (Style::new().fg(Color::DarkGray), BorderType::Plain)
    };
    Block::bordered()
        .border_type(kind)
        .border_style(style)
        .title(title)
}

/// Style of the selected row (brighter in the focused pane).
pub fn selected_style(focused: bool) -> Style {
    if focused {
        Style::new().add_modifier(Modifier::REVERSED)
    } else {
        Style::new().bg(Color::DarkGray)
    }
}

/// `s` cut or padded to exactly `w` characters (an ellipsis marks a cut).
pub fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        let mut out = String::with_capacity(w);
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', w - n));
        out
    } else if w == 0 {
        String::new()
    } else {
        let mut out: String = s.chars().take(w - 1).collect();
        out.push('…');
        out
    }
}

/// The part of `s` a pane scrolled `from` columns sideways shows in `w` columns: cut or
/// padded as [`fit`] does.
pub fn shifted(s: &str, from: usize, w: usize) -> String {
    match s.char_indices().nth(from) {
        Some((at, _)) => fit(&s[at..], w),
        None => fit("", w),
    }
}

/// As [`shifted`], cut short without a mark and not padded (the pane's border says its lines
/// are wider).
pub fn window(s: &str, from: usize, w: usize) -> String {
    s.chars()
        .skip(from)
        .take(w)
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// The rows of `pane`, a list that scrolls sideways, as the lines its `width` columns show
/// from the pane's shift (each row cut by `cut`: [`shifted`] or [`window`]); `block` gains the
/// bottom-border hint when the rows are wider than the pane.
pub fn scrolled<'a>(
    app: &App,
    pane: Pane,
    block: Block<'a>,
    rows: Vec<(String, Style)>,
    width: usize,
    cut: fn(&str, usize, usize) -> String,
) -> (Block<'a>, Vec<Line<'a>>) {
    scrolled_by(app.shift(pane), block, rows, width, cut)
}

/// As [`scrolled`], for a pane scrolled `shift` columns sideways.
pub fn scrolled_by<'a>(
    shift: usize,
    block: Block<'a>,
    rows: Vec<(String, Style)>,
    width: usize,
    cut: fn(&str, usize, usize) -> String,
) -> (Block<'a>, Vec<Line<'a>>) {
    let widest = rows
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0);
    let from = shift.min(max_shift(widest, width));
    let block = match shift_hint(from, widest, width) {
        Some(hint) => block.title_bottom(hint),
        None => block,
    };
    let lines = rows
        .into_iter()
        .map(|(t, style)| Line::styled(cut(&t, from, width), style))
        .collect();
    (block, lines)
}

/// The columns a pane scrolls sideways to, at most: the widest of its lines shown fits.
pub fn max_shift(widest: usize, width: usize) -> usize {
    widest.saturating_sub(width)
}

/// The bottom-border hint of a pane whose lines are wider than it (`None` when they fit):
/// which columns show, and the keys that scroll.
pub fn shift_hint(from: usize, widest: usize, width: usize) -> Option<Line<'static>> {
    if widest <= width {
        return None;
    }
    let from = from.min(max_shift(widest, width));
    Some(Line::styled(
        format!(
            " columns {}-{} of {widest}: Left/Right scroll, w: whole text ",
            from + 1,
            (from + width).min(widest)
        ),
        Style::new().fg(Color::DarkGray),
    ))
}

/// How wide the widest line `pane` shows now is (its sideways scrolling stops there).
pub fn widest(app: &App, pane: Pane) -> usize {
    let areas = layout(app, app.model.size);
    let rect = areas.rect(pane);
    match pane {
        Pane::Connections => connections::widest(connections::Shown::of(app), rect),
        Pane::Violations => violations::widest(&app.violations, rect),
        Pane::State => state::widest(app.state_snapshot(), rect),
        Pane::Health => health::widest(&app.health, app.model.now, rect),
        Pane::Detail => detail::widest(detail::Shown::of(app), rect),
        Pane::Frames => 0,
    }
}

/// The width of the text inside `pane`'s rectangle as drawn (the detail tree's beside the hex
/// dump, the state pane's beside its sparklines).
pub fn text_width(app: &App, pane: Pane) -> usize {
    let rect = layout(app, app.model.size).rect(pane);
    match pane {
        Pane::Detail => detail::tree_width(app.zoom, rect),
        Pane::State => state::text_width(rect),
        _ => Block::bordered().inner(rect).width as usize,
    }
}

/// `HH:MM:SS.mmm` UTC.
pub fn clock(ts: Timestamp) -> String {
    let us = ts.0.rem_euclid(86_400_000_000);
    let ms = us / 1000;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// A duration in micro seconds, short: `42s`, `12m`, `3h04m`, `2d03h`.
pub fn age(us: i64) -> String {
    let s = us.max(0) / 1_000_000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else {
        format!("{}d{:02}h", s / 86_400, s / 3600 % 24)
    }
}

/// A byte count, short: `812`, `12.3k`, `4.5M`, `1.2G`.
pub fn bytes(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else {
        format!("{:.1}G", n as f64 / 1e9)
    }
}

/// A number with thousands separators.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A text line's spans: the text, the character under the cursor reversed (a block at the
/// end).
pub(super) fn text_with_cursor(text: &crate::tui::line::TextLine, spans: &mut Vec<Span<'static>>) {
    let (before, under, after) = text.around_cursor();
    spans.push(Span::raw(before.to_owned()));
    match under {
        Some(c) => spans.push(Span::styled(
            c.to_string(),
            Style::new().add_modifier(Modifier::REVERSED),
        )),
        None => spans.push(Span::styled("█", Style::new().fg(Color::Yellow))),
    }
    spans.push(Span::raw(after.to_owned()));
}

/// The status line: the filter or export line while one is typed, else where the session
/// stands (`status.rs`).
fn status(app: &App, f: &mut Frame, area: Rect) {
    if area.height == 0 {
        return;
    }
    if let Overlay::FilterInput(input) = &app.overlay {
        let lines = filter_line::lines(input, area.width);
        f.render_widget(Paragraph::new(lines), area);
        return;
    }
    if let Overlay::Export(line) = &app.overlay {
        let (text, scope) = (line.text(), line.scope());
        let mut spans = vec![Span::styled(
            format!("export {} to: ", scope.name()),
            Style::new().fg(Color::Yellow),
        )];
        text_with_cursor(text, &mut spans);
        spans.push(Span::styled(
            "  Tab: marked/shown/connection, .jsonl or pcapng, Enter writes, Esc cancels",
            Style::new().fg(Color::DarkGray),
        ));
        f.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    status::render(&status::Shown::of(app), f, area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_pads_and_cuts_with_an_ellipsis() {
        assert_eq!(fit("abc", 5), "abc  ");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 0), "");
    }

    #[test]
    fn short_formats() {
        assert_eq!(clock(Timestamp(1_764_417_600_123_456)), "12:00:00.123");
        assert_eq!(age(42_000_000), "42s");
        assert_eq!(age(3_723_000_000), "1h02m");
        assert_eq!(bytes(999), "999");
        assert_eq!(bytes(12_345), "12.3k");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
