//! The connection list: one row per connection (number, client -> upstream, protocol, state,
//! age, bytes and frames each way, violations), after an "all connections" row. The
//! addresses take the width the other columns leave; `w` shows a connection whole.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use std::collections::HashSet;

use super::{Chrome, age, block_of, bytes, fit, scrolled_by, selected_style, shifted};
use crate::event::ConnId;
use crate::tui::app::{App, Conn};
use crate::tui::components::conn_list::ConnList;
use crate::tui::model::Model;

/// `amqp-1.0` -> `1.0`, `amqp-0-9-1` -> `0-9-1`.
fn short_proto(p: &str) -> &str {
    p.strip_prefix("amqp-").unwrap_or(p)
}

/// The address column: `client -> upstream`.
pub fn addresses(c: &Conn) -> String {
    match (c.client, c.upstream) {
        (Some(a), Some(b)) => format!("{a} -> {b}"),
        (Some(a), None) => a.to_string(),
        _ => "?".into(),
    }
}

/// One row from its cells (number, addresses, proto, state, age, bytes, frames, violations),
/// at `addr_w` for the address column.
fn row_text(c: [&str; 8], addr_w: usize) -> String {
    format!(
        "{:>3} {} {} {} {:>5} {:>11} {:>12} {:>4}",
        c[0],
        fit(c[1], addr_w),
        fit(c[2], 6),
        fit(c[3], 10),
        c[4],
        c[5],
        c[6],
        c[7]
    )
}

/// The lines the list shows in `inner` (column heads first) at their full width, with their
/// styles: the fixed columns take 58 characters with their separators, the addresses the rest
/// (at least 8: a pane narrower than 66 columns scrolls sideways; `w` shows a connection
/// whole).
fn lines_of(shown: Shown, focused: bool, inner: Rect) -> Vec<(String, Style)> {
    let height = inner.height.saturating_sub(1) as usize;
    let total = shown.model.conns.len() + 1;
    let start = shown
        .list
        .cursor()
        .list()
        .offset
        .min(total.saturating_sub(1));
    let addr_w = (inner.width as usize).saturating_sub(58).max(8);
    let mut lines = vec![(
        row_text(
            [
                "#",
                "client -> upstream",
                "proto",
                "state",
                "age",
                "bytes ->/<-",
                "frames ->/<-",
                "viol",
            ],
            addr_w,
        ),
        Style::new()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::BOLD),
    )];
    for i in start..(start + height).min(total) {
        let (text, style) = if i == 0 {
            all_row(shown.model, addr_w)
        } else {
            let Some(c) = shown
                .model
                .conn_ids()
                .get(i - 1)
                .and_then(|id| shown.model.conns.get(id))
            else {
                break;
            };
            conn_row(shown, c, addr_w)
        };
        let style = if i == shown.list.cursor().selected() {
            style.patch(selected_style(focused))
        } else {
            style
        };
        lines.push((text, style));
    }
    lines
}

/// The width of the widest line the list shows in `area`.
pub fn widest(shown: Shown, area: Rect) -> usize {
    let inner = ratatui::widgets::Block::bordered().inner(area);
    lines_of(shown, false, inner)
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0)
}

/// What the connection list is drawn of: its component's state, the shared model, and the
/// connections marked (`m`).
#[derive(Clone, Copy)]
pub struct Shown<'a> {
    /// The list's component.
    pub list: &'a ConnList,
    /// The shared data.
    pub model: &'a Model,
    /// The marked connections.
    pub marked: &'a HashSet<ConnId>,
}

impl<'a> Shown<'a> {
    /// What the connection list of `app` shows.
    pub fn of(app: &'a App) -> Shown<'a> {
        Shown {
            list: &app.conn_list,
            model: &app.model,
            marked: app.frames.marked_conns(),
        }
    }
}

/// Draw the connection list.
pub fn render(shown: Shown, chrome: Chrome, f: &mut Frame, area: Rect) {
    let live = shown
        .model
        .conns
        .values()
        .filter(|c| c.closed.is_none())
        .count();
    let title = title(shown.model, live);
    let block = block_of(chrome.focused, title).title_top(
        Line::styled(
            format!(" {} ", shown.model.opts.title),
            Style::new().fg(Color::DarkGray),
        )
        .right_aligned(),
    );
    let inner = block.inner(area);
    if inner.height == 0 {
        f.render_widget(block, area);
        return;
    }
    let rows = lines_of(shown, chrome.focused, inner);
    let (block, lines) = scrolled_by(chrome.shift, block, rows, inner.width as usize, shifted);
    f.render_widget(block, area);
    f.render_widget(Paragraph::new(lines), inner);
}

/// The pane's title: how many connections, how many open (and forgotten).
fn title(model: &Model, live: usize) -> Line<'static> {
    Line::from(vec![Span::styled(
        if model.conns_forgotten > 0 {
            format!(
                " Connections {} ({} open, {} older closed ones forgotten) ",
                model.conns.len(),
                live,
                model.conns_forgotten
            )
        } else {
            format!(" Connections {} ({} open) ", model.conns.len(), live)
        },
        Style::new().add_modifier(Modifier::BOLD),
    )])
}

/// The first row: every connection's totals.
fn all_row(model: &Model, addr_w: usize) -> (String, Style) {
    let sum = |g: &dyn Fn(&Conn) -> u64| model.conns.values().map(g).sum::<u64>();
    let v = sum(&|c| c.violations);
    (
        row_text(
            [
                "*",
                "all connections",
                "",
                "",
                "",
                &format!(
                    "{}/{}",
                    bytes(sum(&|c| c.bytes[0])),
                    bytes(sum(&|c| c.bytes[1]))
                ),
                &format!("{}/{}", sum(&|c| c.frames[0]), sum(&|c| c.frames[1])),
                &v.to_string(),
            ],
            addr_w,
        ),
        if v > 0 {
            Style::new().fg(Color::Red)
        } else {
            Style::new()
        },
    )
}

/// The row of connection `c`.
fn conn_row(shown: Shown, c: &Conn, addr_w: usize) -> (String, Style) {
    let end = if c.closed.is_some() {
        c.last_ts
    } else {
        shown.model.now.max(c.last_ts)
    };
    let state = if c.closed.is_some() && c.state == "-" {
        "closed".to_string()
    } else {
        c.state.clone()
    };
    let style = if c.violations > 0 {
        Style::new().fg(Color::Red)
    } else if c.closed.is_some() {
        Style::new().fg(Color::DarkGray)
    } else {
        Style::new()
    };
    (
        row_text(
            [
                &if shown.marked.contains(&c.id) {
                    format!("*{}", c.id)
                } else {
                    c.id.to_string()
                },
                &addresses(c),
                short_proto(&c.proto),
                &state,
                &age(end.0.saturating_sub(c.first_ts.0)),
                &format!("{}/{}", bytes(c.bytes[0]), bytes(c.bytes[1])),
                &format!("{}/{}", c.frames[0], c.frames[1]),
                &c.violations.to_string(),
            ],
            addr_w,
        ),
        style,
    )
}
