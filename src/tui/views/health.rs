//! The Health pane: the diagnoses (why a flow is stuck), the active ones first with how long
//! they have held, then the ended ones dimmed with how long they lasted and why they ended;
//! below the list, the selected one's finding, its evidence frames (Enter selects the first
//! in the frame list), what to do, the likely cause, and the spec or broker text it rests on.
//!
//! The list scrolls sideways (Left/Right); the selected diagnosis wraps.
//!
//! Names and details come from the wire: they are escaped before they are drawn.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::{Chrome, block_of, clock, count, scrolled_by, selected_style, window};
use crate::event::escape::escape;
use crate::event::{Diagnosis, Timestamp};
use crate::tui::components::health::Health;
use crate::tui::health::HealthEntry;

/// A duration in µs, short and exact to the second: `42s`, `1m12s`, `3h04m`, `2d03h`.
pub fn held(us: i64) -> String {
    let s = us.max(0) / 1_000_000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else {
        format!("{}d{:02}h", s / 86_400, s / 3600 % 24)
    }
}

/// The text of one entry at time `now`: `for 1m12s  1  amqp10.link.no-credit  link "x" s2c`,
/// or, ended, `lasted 45s` and why it ended at the end.
pub fn row_text(e: &HealthEntry, now: Timestamp) -> String {
    let d = &e.diagnosis;
    let how_long = match &d.ended {
        None => format!("for {}", held(d.held_us(now))),
        Some(_) => format!("lasted {}", held(d.held_us(now))),
    };
    let mut s = columns(&how_long, &d.conn.to_string(), d.check.id, &escape(&d.name));
    if let Some(end) = &d.ended {
        s.push_str(&format!("  ({})", end.why.as_str()));
    }
    s
}

/// One line of the list from its cells: how long, connection, check id, scope name.
fn columns(how_long: &str, conn: &str, id: &str, name: &str) -> String {
    format!("{how_long:<12} {conn:>3}  {id:<33} {name}")
}

/// The list's part (its column heads included) and the selected entry's part of the pane's
/// inside, for `entries` entries: the list takes what it needs up to half when there is room
/// for both, else everything.
pub fn split(inner: Rect, entries: usize) -> (Rect, Rect) {
    if inner.height < 8 {
        return (inner, Rect::default());
    }
    let wanted = (entries.max(1) + 1).min(u16::MAX as usize) as u16;
    let list_h = wanted.min(inner.height / 2);
    let list = Rect::new(inner.x, inner.y, inner.width, list_h);
    let detail = Rect::new(
        inner.x,
        inner.y + list_h,
        inner.width,
        inner.height - list_h,
    );
    (list, detail)
}

/// How many of `entries` entries the pane shows in `rect` (its borders included).
pub fn list_rows(rect: Rect, entries: usize) -> usize {
    let inner = Block::bordered().inner(rect);
    split(inner, entries).0.height.saturating_sub(1) as usize
}

/// The pane's title: counts, what was dropped, what Enter does.
fn title(h: &Health) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!(
            " Health {} active, {} ended ",
            count(h.active().len() as u64),
            count(h.ended().len() as u64)
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if h.dropped() > 0 {
        spans.push(Span::styled(
            format!("({} older dropped from view) ", count(h.dropped())),
            Style::new().fg(Color::Yellow),
        ));
    }
    spans.push(Span::styled(
        "Enter: go to evidence ",
        Style::new().fg(Color::DarkGray),
    ));
    Line::from(spans)
}

/// The list's lines in `list_area` (column heads first) at their full width, with their styles.
fn lines_of(
    health: &Health,
    now: Timestamp,
    focused: bool,
    list_area: Rect,
) -> Vec<(String, Style)> {
    let mut lines = vec![(
        columns("held", "#", "diagnosis", "scope"),
        Style::new()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::BOLD),
    )];
    let h = list_area.height.saturating_sub(1) as usize;
    let start = health.cursor().list().offset.min(health.len());
    for i in start..(start + h).min(health.len()) {
        let Some(e) = health.get(i) else { break };
        let mut style = if e.diagnosis.ended.is_some() {
            Style::new().fg(Color::DarkGray).add_modifier(Modifier::DIM)
        } else {
            Style::new().fg(Color::Yellow)
        };
        if i == health.cursor().selected() {
            style = style.patch(selected_style(focused));
        }
        lines.push((row_text(e, now), style));
    }
    lines
}

/// The width of the widest line of the list in a pane of `area` (the selected diagnosis
/// below it wraps).
pub fn widest(health: &Health, now: Timestamp, area: Rect) -> usize {
    let inner = Block::bordered().inner(area);
    let (list_area, _) = split(inner, health.len());
    lines_of(health, now, false, list_area)
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0)
}

/// Draw the Health pane.
pub fn render(health: &Health, now: Timestamp, chrome: Chrome, f: &mut Frame, area: Rect) {
    let block = block_of(chrome.focused, title(health));
    let inner = block.inner(area);
    if inner.height == 0 {
        f.render_widget(block, area);
        return;
    }
    let (list_area, detail_area) = split(inner, health.len());
    let rows = lines_of(health, now, chrome.focused, list_area);
    let width = inner.width as usize;
    let (block, mut lines) = scrolled_by(chrome.shift, block, rows, width, window);
    f.render_widget(block, area);
    if health.is_empty() {
        lines.push(Line::styled(
            "no diagnoses: no flow has been stuck past its threshold",
            Style::new().fg(Color::DarkGray),
        ));
    }
    f.render_widget(Paragraph::new(lines), list_area);
    if detail_area.height > 0
        && let Some(e) = health.selected()
    {
        let text = detail_lines(&e.diagnosis, now);
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), detail_area);
    }
}

/// The selected diagnosis in full: what it is, where, since when, what the frames show and
/// which frames, what to do, the likely cause, what it rests on.
pub fn detail_lines(d: &Diagnosis, now: Timestamp) -> Vec<Line<'static>> {
    let label = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let field = |name: &'static str, text: String| {
        Line::from(vec![
            Span::styled(format!("{name:<9}"), label),
            Span::raw(text),
        ])
    };
    let when = match &d.ended {
        None => format!("since {}, for {}", clock(d.since), held(d.held_us(now))),
        Some(end) => format!(
            "from {} to {} ({}), lasted {}",
            clock(d.since),
            clock(end.ts),
            end.why.as_str(),
            held(d.held_us(now))
        ),
    };
    let evidence: Vec<String> = d
        .evidence
        .iter()
        .map(|f| format!("{} offset {}", f.dir.as_str(), f.offset))
        .collect();
    let evidence = if evidence.is_empty() {
        "none".to_string()
    } else {
        format!("{} (Enter: the first)", evidence.join(", "))
    };
    vec![
        Line::from(vec![
            Span::styled(format!("{} ", d.check.id), label),
            Span::raw(d.check.summary),
        ]),
        field(
            "where",
            format!("connection {}, {}, {when}", d.conn, escape(&d.name)),
        ),
        field("shows", escape(&d.detail).into_owned()),
        field("evidence", evidence),
        field("to do", d.check.todo.to_string()),
        field("cause", d.check.cause.to_string()),
        field("basis", d.check.basis.to_string()),
    ]
}
