//! The frame list: time, direction, channel, a violation marker, name and summary of each row
//! of the selected connection (or all), after the filter.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::timeline::secs;
use super::{clock, count, fit, pane_block, selected_style};
use crate::event::Dir;
use crate::tui::app::{App, Pane, Row, RowKind, TimeMode};

/// What `g` at the top of a live list that dropped older frames says: how to reach them.
pub fn older_hint(app: &App) -> Option<String> {
    if app.model.pages() || app.evicted_in_scope() == 0 {
        return None;
    }
    let n = count(app.evicted_in_scope());
    let file = app
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
fn dropped_note(app: &App, evicted: u64) -> String {
    let n = count(evicted);
    match app.model.opts.captures.as_slice() {
        [] => {
            format!(" {n} older frames dropped from view (no capture written; --jsonl keeps all) ")
        }
        files => {
            let names: Vec<String> = files
                .iter()
                .map(|f| crate::base::escape::escape(f).into_owned())
                .collect();
            let what = if app.model.opts.filter.is_empty() {
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
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let focused = app.focus == Pane::Frames;
    let scope = match app.selected_conn() {
        Some(c) => format!("conn {c}"),
        None => "all".to_string(),
    };
    let total = app.rows_in_scope();
    let mut title = vec![Span::styled(
        format!(
            " Frames: {scope}{} ",
            if app.frames.marked_only() {
                ", marked only"
            } else {
                ""
            }
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    match app.frames.time_mode() {
        TimeMode::Absolute => {}
        TimeMode::Relative => title.push(Span::raw("time +since first ")),
        TimeMode::Delta => title.push(Span::raw("time +since previous ")),
    }
    if app.filter.applied().is_empty() && app.frames.marked_only() {
        // The rows listed are the marked ones: say how many of all.
        title.push(Span::raw(format!(
            "{} of {} rows ",
            count(app.frames.view().len() as u64),
            count(total as u64)
        )));
    } else if app.filter.applied().is_empty() {
        // Rows are frames, protocol headers, gaps and closes; frames are counted apart, as
        // `check` and `stats` count them.
        title.push(Span::raw(format!(
            "{} rows, {} frames ",
            count(total as u64),
            count(app.frames_in_scope())
        )));
    } else {
        title.push(Span::styled(
            format!(
                "{} of {} match /{} ",
                count(app.frames.view().len() as u64),
                count(total as u64),
                app.filter.applied().source
            ),
            Style::new().fg(Color::Yellow),
        ));
    }
    let mut block = pane_block(app, Pane::Frames, Line::from(title));
    let evicted = app.evicted_in_scope();
    if let Some(note) = window_note(app) {
        block = block.title_bottom(Line::styled(note, Style::new().fg(Color::Yellow)));
    } else if evicted > 0 {
        block = block.title_bottom(Line::styled(
            dropped_note(app, evicted),
            Style::new().fg(Color::Yellow),
        ));
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let with_conn = app.selected_conn().is_none();
    let mut lines = Vec::with_capacity(h);
    let start = app.frames.list().offset.min(app.frames.view().len());
    let origin = match app.selected_conn() {
        Some(c) => app.model.conns.get(&c).map(|c| c.first_ts),
        None => app.model.conns.values().map(|c| c.first_ts).min(),
    }
    .unwrap_or_default();
    let mut prev = start
        .checked_sub(1)
        .and_then(|i| app.frames.view().get(i))
        .and_then(|(c, s)| app.row(*c, *s))
        .map(|r| r.ts);
    for (i, (c, s)) in app.frames.view().iter().enumerate().skip(start).take(h) {
        let Some(r) = app.row(*c, *s) else {
            lines.push(Line::styled(
                "   (dropped)",
                Style::new().fg(Color::DarkGray),
            ));
            continue;
        };
        let mut style = row_style(r);
        if i == app.frames.list().selected {
            style = style.patch(selected_style(focused));
        }
        let marked = app.frames.is_marked(*c, *s);
        if marked {
            style = style.add_modifier(Modifier::BOLD);
        }
        let time = match app.frames.time_mode() {
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
fn window_note(app: &App) -> Option<String> {
    if !app.model.pages() {
        return None;
    }
    let total: u64 = match app.selected_conn() {
        Some(c) => app.model.conns.get(&c).map_or(0, |c| c.total_rows),
        None => app.model.conns.values().map(|c| c.total_rows).sum(),
    };
    let kept = app.rows_in_scope() as u64;
    if kept >= total {
        return None;
    }
    let gone = app.model.reachable_from();
    if gone > 0 {
        return Some(format!(
            " the session's first {} frames are gone from the spool: g G n N > < Enter reach #{} on ",
            count(gone),
            count(gone + 1)
        ));
    }
    let loading = if app.model.paging.loading.is_some() {
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
