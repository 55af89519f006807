//! The frame list: time, direction, channel, a violation marker, name and summary of each row
//! of the selected connection (or all), after the filter.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::timeline::secs;
use super::{Chrome, block_of, clock, count, fit, selected_style};
use crate::event::ConnId;
use crate::event::Dir;
use crate::tui::app::{App, Row, RowKind, TimeMode};
use crate::tui::components::frame_list::FrameList;
use crate::tui::filter::Filter;
use crate::tui::model::Model;

/// What the frame list is drawn of: its component's state, the filter it applies, the shared
/// model and the connection chosen (`None`: all).
#[derive(Clone, Copy)]
pub struct Shown<'a> {
    /// The list's component.
    pub frames: &'a FrameList,
    /// The filter applied.
    pub filter: &'a Filter,
    /// The shared data.
    pub model: &'a Model,
    /// The connection chosen in the connection list.
    pub scope: Option<ConnId>,
}

impl<'a> Shown<'a> {
    /// What the frame list of `app` shows.
    pub fn of(app: &'a App) -> Shown<'a> {
        Shown {
            frames: &app.frames,
            filter: app.filter.applied(),
            model: &app.model,
            scope: app.selected_conn(),
        }
    }
}

/// What `g` at the top of a live list that dropped older frames says: how to reach them.
pub fn older_hint(shown: Shown) -> Option<String> {
    if shown.model.pages() || shown.model.evicted_in(shown.scope) == 0 {
        return None;
    }
    let n = count(shown.model.evicted_in(shown.scope));
    let file = shown
        .model
        .opts
        .captures
        .first()
        .map(|f| crate::base::escape::escape(f).into_owned());
    Some(match file {
        Some(f) => format!("{n} older frames are not in memory: amqpeek replay {f} reaches them"),
        None => format!("{n} older frames are not in memory, and no capture is written"),
    })
}

/// Where the frames dropped from view are, as far as the view knows: in the captures being
/// written, or nowhere (no capture is written: `--jsonl` would keep them). A spooled live
/// view reaches them instead (`window_note`).
fn dropped_note(shown: Shown, evicted: u64) -> String {
    let n = count(evicted);
    match shown.model.opts.captures.as_slice() {
        [] => {
            format!(" {n} older frames dropped from view (no capture written; --jsonl keeps all) ")
        }
        files => {
            let names: Vec<String> = files
                .iter()
                .map(|f| crate::base::escape::escape(f).into_owned())
                .collect();
            let what = if shown.model.opts.filter.is_empty() {
                "all"
            } else {
                "those --filter passes"
            };
            format!(
                " {n} older frames dropped from view ({what} kept in {}) ",
                names.join(", ")
            )
        }
    }
}

/// Width of the name column.
pub const NAME_W: usize = 14;

/// The text of one row, after its time column `time`; `with_conn` adds the connection number
/// (all-connections view); `marked` puts a `*` before the violation marker.
pub fn row_text(r: &Row, time: &str, with_conn: bool, marked: bool) -> String {
    let dir = r.dir.map_or("  ", Dir::arrow);
    let ch = r.channel.map_or("-".to_string(), |c| c.to_string());
    let mark = if r.violations.is_empty() { ' ' } else { '!' };
    let star = if marked { '*' } else { ' ' };
    let conn = if with_conn {
        format!("{:>3} ", r.conn)
    } else {
        String::new()
    };
    // Summaries that repeat the name (0-9-1's `basic.publish exchange=...`) lose it here, and
    // then the name is shown whole even when longer than its column.
    let rest = r.summary.strip_prefix(r.name.as_str()).and_then(|s| {
        if s.is_empty() {
            Some(s)
        } else {
            s.strip_prefix(' ')
        }
    });
    let (name, summary) = match rest {
        Some(rest) => (format!("{:<NAME_W$}", r.name), rest),
        None => (fit(&r.name, NAME_W), r.summary.as_str()),
    };
    format!("{time} {conn}{dir} {ch:>3}{star}{mark} {name} {summary}")
}

fn row_style(r: &Row) -> Style {
    if !r.violations.is_empty() {
        return Style::new().fg(Color::Red);
    }
    match r.kind {
        RowKind::Header => Style::new().fg(Color::Magenta),
        RowKind::Malformed => Style::new().fg(Color::Red),
        RowKind::Gap => Style::new().fg(Color::Yellow),
        RowKind::Close => Style::new().fg(Color::DarkGray),
        RowKind::Frame => match r.dir {
            Some(Dir::C2S) => Style::new().fg(Color::Cyan),
            _ => Style::new().fg(Color::Green),
        },
    }
}

/// Draw the frame list.
pub fn render(shown: Shown, chrome: Chrome, f: &mut Frame, area: Rect) {
    let focused = chrome.focused;
    let scope = match shown.scope {
        Some(c) => format!("conn {c}"),
        None => "all".to_string(),
    };
    let total = shown.model.rows_in(shown.scope);
    let mut title = vec![Span::styled(
        format!(
            " Frames: {scope}{} ",
            if shown.frames.marked_only() {
                ", marked only"
            } else {
                ""
            }
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    match shown.frames.time_mode() {
        TimeMode::Absolute => {}
        TimeMode::Relative => title.push(Span::raw("time +since first ")),
        TimeMode::Delta => title.push(Span::raw("time +since previous ")),
    }
    if shown.filter.is_empty() && shown.frames.marked_only() {
        // The rows listed are the marked ones: say how many of all.
        title.push(Span::raw(format!(
            "{} of {} rows ",
            count(shown.frames.view().len() as u64),
            count(total as u64)
        )));
    } else if shown.filter.is_empty() {
        // Rows are frames, protocol headers, gaps and closes; frames are counted apart, as
        // `check` and `stats` count them.
        title.push(Span::raw(format!(
            "{} rows, {} frames ",
            count(total as u64),
            count(shown.model.frames_in(shown.scope))
        )));
    } else {
        title.push(Span::styled(
            format!(
                "{} of {} match /{} ",
                count(shown.frames.view().len() as u64),
                count(total as u64),
                shown.filter.source
            ),
            Style::new().fg(Color::Yellow),
        ));
    }
    let mut block = block_of(focused, Line::from(title));
    let evicted = shown.model.evicted_in(shown.scope);
    if let Some(note) = window_note(shown) {
        block = block.title_bottom(Line::styled(note, Style::new().fg(Color::Yellow)));
    } else if evicted > 0 {
        block = block.title_bottom(Line::styled(
            dropped_note(shown, evicted),
            Style::new().fg(Color::Yellow),
        ));
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let with_conn = shown.scope.is_none();
    let mut lines = Vec::with_capacity(h);
    let start = shown
        .frames
        .cursor()
        .list()
        .offset
        .min(shown.frames.view().len());
    let origin = match shown.scope {
        Some(c) => shown.model.conns.get(&c).map(|c| c.first_ts),
        None => shown.model.conns.values().map(|c| c.first_ts).min(),
    }
    .unwrap_or_default();
    let mut prev = start
        .checked_sub(1)
        .and_then(|i| shown.frames.view().get(i))
        .and_then(|(c, s)| shown.model.row(*c, *s))
        .map(|r| r.ts);
    for (i, (c, s)) in shown.frames.view().iter().enumerate().skip(start).take(h) {
        let Some(r) = shown.model.row(*c, *s) else {
            lines.push(Line::styled(
                "   (dropped)",
                Style::new().fg(Color::DarkGray),
            ));
            continue;
        };
        let mut style = row_style(r);
        if i == shown.frames.cursor().selected() {
            style = style.patch(selected_style(focused));
        }
        let marked = shown.frames.is_marked(*c, *s);
        if marked {
            style = style.add_modifier(Modifier::BOLD);
        }
        let time = match shown.frames.time_mode() {
            TimeMode::Absolute => clock(r.ts),
            TimeMode::Relative => format!("{:>12}", secs(r.ts.0 - origin.0)),
            TimeMode::Delta => format!("{:>12}", secs(r.ts.0 - prev.unwrap_or(r.ts).0)),
        };
        prev = Some(r.ts);
        lines.push(Line::styled(row_text(r, &time, with_conn, marked), style));
    }
    if lines.is_empty() {
        let msg = if total == 0 {
            "no frames yet"
        } else {
            "no frame matches the filter (Esc clears it)"
        };
        lines.push(Line::styled(msg, Style::new().fg(Color::DarkGray)));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// In a file replay or a spooled live view whose whole session is not in memory: which of
/// its rows are, or (the spool ring having removed its oldest part) which are gone.
fn window_note(shown: Shown) -> Option<String> {
    if !shown.model.pages() {
        return None;
    }
    let total: u64 = match shown.scope {
        Some(c) => shown.model.conns.get(&c).map_or(0, |c| c.total_rows),
        None => shown.model.conns.values().map(|c| c.total_rows).sum(),
    };
    let kept = shown.model.rows_in(shown.scope) as u64;
    if kept >= total {
        return None;
    }
    let gone = shown.model.reachable_from();
    if gone > 0 {
        return Some(format!(
            " the session's first {} frames are gone from the spool: g G n N > < Enter reach #{} on ",
            count(gone),
            count(gone + 1)
        ));
    }
    let loading = if shown.model.paging.loading.is_some() {
        " (loading)"
    } else {
        ""
    };
    Some(format!(
        " {} of {} frames in memory{loading}: g G n N > < Enter reach the rest ",
        count(kept),
        count(total)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Timestamp;

    fn row(name: &str, summary: &str) -> Row {
        let ts = Timestamp(1_764_417_600_123_456);
        let mut r = Row::bare(3, ts, Some(Dir::S2C), 0, RowKind::Frame);
        r.channel = Some(1);
        r.name = name.into();
        r.proto = "amqp-0-9-1";
        r.summary = summary.into();
        r
    }

    #[test]
    fn a_summary_repeating_the_name_shows_the_whole_name_once() {
        assert_eq!(
            row_text(
                &row("channel.close-ok", "channel.close-ok"),
                "12:00:00.123",
                false,
                false
            ),
            "12:00:00.123 <-   1   channel.close-ok "
        );
        assert_eq!(
            row_text(
                &row("basic.ack", "basic.ack delivery-tag=4"),
                "12:00:00.123",
                true,
                true
            ),
            "12:00:00.123   3 <-   1*  basic.ack      delivery-tag=4"
        );
        // Otherwise the name is cut to its column.
        assert_eq!(
            row_text(
                &row("sasl-mechanisms", "@sasl-mechanisms(64) [..]"),
                "12:00:00.123",
                false,
                false
            ),
            "12:00:00.123 <-   1   sasl-mechanis… @sasl-mechanisms(64) [..]"
        );
    }
}
