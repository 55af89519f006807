//! The timeline of a followed link or channel (`L`), over the whole screen but the status
//! line: each frame's time since the first and since the one before, direction, name and
//! summary, and for a delivery how long it took to settle. In the replay of a file, "reading"
//! until the pager has brought back the followed frames of the whole capture.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::{fit, selected_style};
use crate::event::Dir;
use crate::tui::components::timeline_view::TimelineView;
use crate::tui::model::Model;
use crate::tui::timeline::Entry;

/// Width of the settlement column (`disposition +123.456ms`, the longest).
const SETTLED_W: usize = 22;

/// Seconds with microseconds, signed: `+0.012345`.
pub fn secs(us: i64) -> String {
    let sign = if us < 0 { '-' } else { '+' };
    let a = us.unsigned_abs();
    format!("{sign}{}.{:06}", a / 1_000_000, a % 1_000_000)
}

/// A settlement latency, short: `1.234ms`.
fn latency(us: i64) -> String {
    if us < 1000 {
        format!("{us}us")
    } else if us < 1_000_000 {
        format!("{:.3}ms", us as f64 / 1e3)
    } else {
        format!("{:.3}s", us as f64 / 1e6)
    }
}

/// The text of one timeline row.
pub fn entry_text(e: &Entry) -> String {
    let settled = match (e.settled, e.not_awaited) {
        (Some((us, by)), _) => format!("{by} +{}", latency(us)),
        (None, Some(why)) => why.to_string(),
        (None, None) => String::new(),
    };
    format!(
        "{:>12} {:>10} {} {:>3} {} {} {}",
        secs(e.rel_us),
        secs(e.delta_us),
        e.dir.map_or("  ", Dir::arrow),
        e.channel.map_or("-".into(), |c| c.to_string()),
        fit(&e.name, 14),
        fit(&settled, SETTLED_W),
        e.summary
            .strip_prefix(e.name.as_str())
            .unwrap_or(&e.summary)
            .trim_start(),
    )
}

/// Draw the timeline `view` shows of `model` over `area`.
pub fn render(view: &TimelineView, model: &Model, f: &mut Frame, area: Rect) {
    let (follow, list) = (view.follow(), view.cursor().list());
    let items = view.entries(model);
    let settled: Vec<i64> = items
        .iter()
        .filter_map(|e| e.settled)
        .map(|s| s.0)
        .collect();
    let mut title = if view.reading() {
        format!(" Following {}: reading the capture... ", follow.title())
    } else {
        let more = match view.cut() {
            (false, false) => "",
            (true, false) => "(more before) ",
            (false, true) => "(more after) ",
            (true, true) => "(more before and after) ",
        };
        format!(
            " Following {}: {} frames {more}",
            follow.title(),
            items.len()
        )
    };
    if !settled.is_empty() {
        let mut s = settled.clone();
        s.sort_unstable();
        title.push_str(&format!(
            "| {} settled, median {} max {} ",
            s.len(),
            latency(s[s.len() / 2]),
            latency(s[s.len() - 1])
        ));
    }
    let block = Block::bordered()
        .border_style(Style::new().fg(Color::Cyan))
        .title(Line::styled(
            title,
            Style::new().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Line::styled(
            " Enter: go to the frame  Esc/L: close ",
            Style::new().fg(Color::DarkGray),
        ));
    f.render_widget(Clear, area);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut lines = vec![Line::styled(
        format!(
            "{:>12} {:>10} dir  ch {} {} summary",
            "relative",
            "delta",
            fit("name", 14),
            fit("settled by", SETTLED_W)
        ),
        Style::new()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::BOLD),
    )];
    let h = (inner.height as usize).saturating_sub(1);
    for (i, e) in items.iter().enumerate().skip(list.offset).take(h) {
        let mut style = Style::new();
        if i == list.selected {
            style = style.patch(selected_style(true));
        }
        lines.push(Line::styled(entry_text(e), style));
    }
    if view.reading() {
        lines.push(Line::styled(
            "   reading the followed frames of the whole capture...",
            Style::new().fg(Color::DarkGray),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_latencies_are_short() {
        assert_eq!(secs(1_234_567), "+1.234567");
        assert_eq!(secs(-5), "-0.000005");
        assert_eq!(latency(800), "800us");
        assert_eq!(latency(1500), "1.500ms");
    }
}
