//! The status line, when no line is being typed there: whether the frame list follows, the
//! diagnoses holding, the filter and the marks, what was skimmed or dropped, the first pass's
//! progress, and the latest message. [`Shown`] gathers what it says from the app; the line is
//! drawn from that alone.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{bytes, count};
use crate::tui::app::App;
use crate::tui::window::percent;

/// What the status line says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shown<'a> {
    /// The frame list follows new frames.
    pub follows: bool,
    /// Diagnoses active.
    pub stuck: usize,
    /// The filter applied (its source), if any.
    pub filter: Option<&'a str>,
    /// Only the marked frames are listed.
    pub marked_only: bool,
    /// Frames marked, with those of the marked connections.
    pub marked: usize,
    /// Whether any frame or connection is marked.
    pub any_marked: bool,
    /// What the inspection skimmed, when it did (see [`skim_notice`]).
    pub skim: Option<String>,
    /// Events the feeder dropped.
    pub dropped: u64,
    /// The first pass's progress bar, while it reads the file.
    pub progress: Option<String>,
    /// The latest message, if any.
    pub message: Option<&'a str>,
    /// The feed has ended.
    pub feed_ended: bool,
}

impl<'a> Shown<'a> {
    /// What the status line of `app` says.
    pub fn of(app: &'a App) -> Shown<'a> {
        let (frames, model) = (app.frames(), app.model());
        let marked_rows: usize = frames
            .marked_conns()
            .iter()
            .filter_map(|c| model.conns.get(c))
            .map(|c| c.rows.len())
            .sum();
        let skimmed = model.skimmed.frames > 0 || model.skimmed.bytes > 0;
        Shown {
            follows: frames.follows(),
            stuck: app.health().active().len(),
            filter: Some(app.filter().source.as_str()).filter(|_| !app.filter().is_empty()),
            marked_only: frames.marked_only(),
            marked: frames.marks().len() + marked_rows,
            any_marked: frames.marks().len() + frames.marked_conns().len() > 0,
            skim: skimmed.then(|| skim_notice(app)),
            dropped: model.dropped,
            progress: progress_bar(app),
            message: app.message().as_deref(),
            feed_ended: model.feed_ended,
        }
    }
}

/// Draw the status line saying `shown` in `area`.
pub fn render(shown: &Shown, f: &mut Frame, area: Rect) {
    let mut spans: Vec<Span> = Vec::new();
    if shown.follows {
        spans.push(Span::styled(
            " FOLLOW ",
            Style::new().fg(Color::Black).bg(Color::Green),
        ));
    } else {
        spans.push(Span::styled(
            " PAUSED F:follow ",
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ));
    }
    if shown.stuck > 0 {
        spans.push(Span::styled(
            format!(" Health {} (H) ", count(shown.stuck as u64)),
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ));
    }
    if let Some(source) = shown.filter {
        spans.push(Span::styled(
            format!(" /{source}"),
            Style::new().fg(Color::Yellow),
        ));
    }
    if shown.any_marked || shown.marked_only {
        let only = if shown.marked_only { "only " } else { "" };
        spans.push(Span::styled(
            format!(" {only}{} marked", shown.marked),
            Style::new().fg(Color::Magenta),
        ));
    }
    if let Some(skim) = &shown.skim {
        spans.push(Span::styled(
            skim.clone(),
            Style::new().fg(Color::Black).bg(Color::Red),
        ));
    }
    if shown.dropped > 0 {
        spans.push(Span::styled(
            format!(" {} events dropped from view", count(shown.dropped)),
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(bar) = &shown.progress {
        spans.push(Span::styled(bar.clone(), Style::new().fg(Color::Green)));
    }
    if let Some(m) = shown.message {
        spans.push(Span::styled(format!(" {m}"), Style::new().fg(Color::Cyan)));
    } else if shown.feed_ended {
        spans.push(Span::styled(
            " end of feed",
            Style::new().fg(Color::DarkGray),
        ));
    }
    let hint = " ?:help q:quit";
    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    let pad = (area.width as usize).saturating_sub(used + hint.len());
    spans.push(Span::raw(" ".repeat(pad)));
    spans.push(Span::styled(hint, Style::new().fg(Color::DarkGray)));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The view skimmed: how much, and how to get everything decoded (`--jsonl` makes the
/// inspection lossless). `skimming` while the latest skim is under 2 s old, else `skimmed`.
fn skim_notice(app: &App) -> String {
    let model = app.model();
    let k = &model.skimmed;
    let now = model.now.0.saturating_sub(k.last.0) < 2_000_000 && !model.feed_ended;
    format!(
        " {} {} frames ({}B): --jsonl FILE keeps all ",
        if now { "SKIMMING" } else { "SKIMMED" },
        count(k.frames),
        bytes(k.bytes)
    )
}

/// While the first pass of a file replay reads it: ` reading [#####.....] 42%`.
fn progress_bar(app: &App) -> Option<String> {
    const WIDTH: usize = 20;
    let model = app.model();
    let (read, total) = model.paging.progress?;
    if model.feed_ended || !model.opts.whole_capture {
        return None;
    }
    let pct = percent(read, total) as usize;
    let full = pct * WIDTH / 100;
    Some(format!(
        " reading [{}{}] {pct}%",
        "#".repeat(full),
        ".".repeat(WIDTH - full)
    ))
}
