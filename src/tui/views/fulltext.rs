//! The full-text overlay (`w`): the whole of what the focused pane has selected, wrapped to
//! the screen's width and scrolled a line or a page at a time, where the panes cut it to one
//! line of their column.
//!
//! The text is escaped when the overlay opens (`tui::fulltext`); wrapping here breaks at
//! spaces, a word wider than the overlay at any character, and keeps the text's own line
//! breaks.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

/// The overlay's place on a screen of `size` (columns, rows): all of it above the status line.
pub fn area(size: (u16, u16)) -> Rect {
    Rect::new(0, 0, size.0, size.1.saturating_sub(1))
}

/// How many text lines the overlay shows on a screen of `size`.
pub fn page(size: (u16, u16)) -> usize {
    Block::bordered().inner(area(size)).height as usize
}

/// The width of the text inside the overlay on a screen of `size`.
pub fn text_width(size: (u16, u16)) -> usize {
    Block::bordered().inner(area(size)).width as usize
}

/// The columns `c` takes on a terminal.
fn char_width(c: char) -> usize {
    let mut buf = [0u8; 4];
    Span::raw(&*c.encode_utf8(&mut buf)).width()
}

/// `text` in lines of at most `width` columns: each of its lines wrapped at spaces, a word
/// longer than `width` broken where it reaches the edge. An empty line stays one.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut used = 0;
        // Whether the line holds a word: the next one goes after a space.
        let mut started = false;
        for word in para.split(' ') {
            let w: usize = word.chars().map(char_width).sum();
            let gap = usize::from(started);
            if used + gap + w <= width {
                if started {
                    line.push(' ');
                }
                line.push_str(word);
                used += gap + w;
                started = true;
                continue;
            }
            if started {
                out.push(std::mem::take(&mut line));
                used = 0;
            }
            for c in word.chars() {
                let cw = char_width(c);
                if used + cw > width && used > 0 {
                    out.push(std::mem::take(&mut line));
                    used = 0;
                }
                line.push(c);
                used += cw;
            }
            started = true;
        }
        out.push(line);
    }
    out
}

/// The line the overlay can scroll to at most: the last page shows the text's end.
pub fn last_scroll(text: &str, size: (u16, u16)) -> usize {
    wrap(text, text_width(size))
        .len()
        .saturating_sub(page(size))
}

/// Draw the overlay: `title`, and `text` wrapped, from line `scroll`.
pub fn render(f: &mut Frame, size: (u16, u16), title: &str, text: &str, scroll: usize) {
    let r = area(size);
    let lines = wrap(text, text_width(size));
    let page = page(size);
    let scroll = scroll.min(lines.len().saturating_sub(page));
    let more = if lines.len() > page {
        format!(
            " lines {}-{} of {}: Up/Down PgUp/PgDn scroll ",
            scroll + 1,
            (scroll + page).min(lines.len()),
            lines.len()
        )
    } else {
        String::new()
    };
    let block = Block::bordered()
        .border_style(Style::new().fg(Color::Cyan))
        .title(format!(" {title} (Esc or w closes) "))
        .title_bottom(Line::styled(more, Style::new().fg(Color::DarkGray)));
    let shown: Vec<Line> = lines
        .into_iter()
        .skip(scroll)
        .take(page)
        .map(Line::raw)
        .collect();
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(shown).block(block), r);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_then_inside_long_words_and_keeps_line_breaks() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(wrap("a\n\nb", 10), ["a", "", "b"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("  x", 10), ["  x"]);
        assert_eq!(wrap("aa 漢字漢", 4), ["aa", "漢字", "漢"]);
    }
}
