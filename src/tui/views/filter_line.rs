//! The filter line at the bottom while a filter is typed: the prompt, the text with its
//! cursor and the live error (or the keys' hint), wrapped onto as many lines as it takes so
//! the whole error shows, and below it the candidates of a Tab completion under way.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::text_with_cursor;
use crate::tui::components::filter_line::FilterInput;
use crate::tui::line::Completion;

/// The lines of the filter line `input` on a screen `width` columns wide.
pub(super) fn lines(input: &FilterInput, width: u16) -> Vec<Line<'static>> {
    let (text, error, completion) = (input.text(), input.error(), input.completion());
    let mut spans: Vec<Span<'static>> =
        vec![Span::styled("filter: ", Style::new().fg(Color::Yellow))];
    text_with_cursor(text, &mut spans);
    let w = usize::from(width.max(1));
    if let Some(e) = error {
        spans.push(Span::styled(format!("  {e}"), Style::new().fg(Color::Red)));
    }
    let mut out = wrap(spans, w);
    if error.is_none()
        && let Some(last) = out.last_mut()
    {
        // The keys' hint in what room the last line has left.
        let room = w.saturating_sub(last.width());
        let hint = "  Enter apply, Esc cancel, Up/Down earlier filters, Ctrl-U clear, Tab complete";
        if room > 2 {
            let cut = super::fit(hint, room.min(hint.len()));
            last.spans
                .push(Span::styled(cut, Style::new().fg(Color::DarkGray)));
        }
    }
    if let Some(c) = completion {
        out.push(candidates(c, w));
    }
    out
}

/// `spans` cut into lines of `width` characters.
fn wrap(spans: Vec<Span<'static>>, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = vec![Line::default()];
    let mut used = 0;
    for span in spans {
        let mut rest: &str = &span.content;
        while !rest.is_empty() {
            if used == width {
                lines.push(Line::default());
                used = 0;
            }
            let take = rest
                .char_indices()
                .nth(width - used)
                .map_or(rest.len(), |(i, _)| i);
            let (part, more) = rest.split_at(take);
            used += part.chars().count();
            if let Some(line) = lines.last_mut() {
                line.spans.push(Span::styled(part.to_owned(), span.style));
            }
            rest = more;
        }
    }
    lines
}

/// The candidates on one line, the one the filter shows reversed, from a few before it so
/// it is in view, with how many more there are; or that nothing completes the word.
fn candidates(c: &Completion, width: usize) -> Line<'static> {
    let dim = Style::new().fg(Color::DarkGray);
    if c.words.is_empty() {
        return Line::from(Span::styled("Tab: nothing completes this word", dim));
    }
    let mut spans = vec![Span::styled(
        format!("Tab {}/{}:", c.at + 1, c.words.len()),
        dim,
    )];
    let mut used = spans[0].content.chars().count();
    let from = c.at.saturating_sub(2);
    for (i, w) in c.words.iter().enumerate().skip(from) {
        let n = w.chars().count() + 1;
        if used + n > width {
            break;
        }
        used += n;
        spans.push(Span::raw(" "));
        let style = if i == c.at {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new().fg(Color::Cyan)
        };
        spans.push(Span::styled(w.clone(), style));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_cuts_at_the_width_and_keeps_every_character() {
        let spans = vec![Span::raw("abcdef"), Span::raw("ghij")];
        let lines = wrap(spans, 4);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["abcd", "efgh", "ij"]);
    }
}
