//! The message view (`b`), full screen: the list of the scope's messages at the top (time,
//! direction, the frame that completed it, its size, its summary), the selected one below it
//! in full: its header, annotations, properties and application properties (AMQP 0-9-1: the
//! method's arguments, the content properties and the headers table), then its body,
//! pretty-printed when it is JSON, as lines when it is text, as a hex dump otherwise.
//!
//! The message is the row's, rendered once with its body cut at `--max-body`; every line
//! that holds a wire string is escaped (`base::escape`) here, and a message shows at most
//! [`MAX_LINES`] lines.

use base64::Engine;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use serde_json::Value;

use super::detail::preview;
use super::{clock, count, fit, selected_style};
use crate::event::escape::escape;
use crate::tui::messages::{MessageView, entries_in, selected_index};
use crate::tui::model::Model;
use crate::tui::model::Row;

/// Lines a message shows at most (hostile maps cannot make the view unbounded).
pub const MAX_LINES: usize = 5000;

/// What a line of a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A section's name.
    Heading,
    /// A value or a line of the body.
    Text,
    /// A line of a hex dump.
    Hex,
    /// What the view says about the message (sizes, cuts).
    Note,
}

/// One line of a message as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsgLine {
    /// What it is.
    pub kind: Kind,
    /// Its text, escaped.
    pub text: String,
}

fn push(out: &mut Vec<MsgLine>, kind: Kind, text: &str) {
    if out.len() < MAX_LINES {
        out.push(MsgLine {
            kind,
            text: escape(text).into_owned(),
        });
    }
}

/// The view's place on a screen of `size`: all of it above the status line.
fn area(size: (u16, u16)) -> Rect {
    Rect::new(0, 0, size.0, size.1.saturating_sub(1))
}

/// The list's and the selected message's parts of the inside of the view.
fn split(inner: Rect) -> (Rect, Rect, Rect) {
    let list_h = (inner.height / 3).max(3).min(inner.height);
    let list = Rect::new(inner.x, inner.y, inner.width, list_h);
    let rule_y = inner.y + list_h;
    let rule = Rect::new(
        inner.x,
        rule_y,
        inner.width,
        u16::from(rule_y < inner.bottom()),
    );
    let detail_y = (rule_y + 1).min(inner.bottom());
    let detail = Rect::new(inner.x, detail_y, inner.width, inner.bottom() - detail_y);
    (list, rule, detail)
}

/// Lines of the selected message shown at once on a screen of `size`.
pub fn detail_page(size: (u16, u16)) -> usize {
    split(Block::bordered().inner(area(size))).2.height as usize
}

/// The width of the message's lines on a screen of `size`.
pub fn text_width(size: (u16, u16)) -> usize {
    Block::bordered().inner(area(size)).width as usize
}

/// A section of named values: its heading, then `name: value` a line, a container value as
/// indented JSON below its name.
fn section(out: &mut Vec<MsgLine>, heading: &str, v: &Value) {
    push(out, Kind::Heading, heading);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                entry(out, k, v);
            }
        }
        Value::Object(_) => push(out, Kind::Note, "  (empty)"),
        other => push(out, Kind::Text, &format!("  {}", preview(other))),
    }
}

/// One `name: value` of a section.
fn entry(out: &mut Vec<MsgLine>, k: &str, v: &Value) {
    let p = preview(v);
    let container = matches!(v, Value::Object(m) if p.starts_with('{') && !m.is_empty())
        || matches!(v, Value::Array(a) if !a.is_empty());
    if !container {
        push(out, Kind::Text, &format!("  {k}: {p}"));
        return;
    }
    push(out, Kind::Text, &format!("  {k}:"));
    let json = serde_json::to_string_pretty(v).unwrap_or_default();
    for l in json.lines() {
        push(out, Kind::Text, &format!("    {l}"));
    }
}

/// A body of text: pretty JSON when it parses as an object or array, else its lines.
fn text_body(out: &mut Vec<MsgLine>, text: &str, len: u64) {
    let json = serde_json::from_str::<Value>(text)
        .ok()
        .filter(|v| v.is_object() || v.is_array());
    match json {
        Some(v) => {
            push(
                out,
                Kind::Heading,
                &format!("body (JSON, {} bytes)", count(len)),
            );
            let pretty = serde_json::to_string_pretty(&v).unwrap_or_default();
            for l in pretty.lines() {
                push(out, Kind::Text, &format!("  {l}"));
            }
        }
        None => {
            push(
                out,
                Kind::Heading,
                &format!("body (text, {} bytes)", count(len)),
            );
            for l in text.split('\n') {
                push(
                    out,
                    Kind::Text,
                    &format!("  {}", l.strip_suffix('\r').unwrap_or(l)),
                );
            }
        }
    }
    cut_note(out, text.len() as u64, len);
}

/// A body of bytes: a hex dump, 16 bytes a line.
fn binary_body(out: &mut Vec<MsgLine>, bytes: &[u8], len: u64) {
    push(
        out,
        Kind::Heading,
        &format!("body (binary, {} bytes)", count(len)),
    );
    for (n, chunk) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = chunk
            .iter()
            .map(|b| {
                if b.is_ascii_graphic() || *b == b' ' {
                    *b as char
                } else {
                    '.'
                }
            })
            .collect();
        push(
            out,
            Kind::Hex,
            &format!("  {:04x}  {:<47}  {ascii}", n * 16, hex.join(" ")),
        );
    }
    cut_note(out, bytes.len() as u64, len);
}

fn cut_note(out: &mut Vec<MsgLine>, shown: u64, len: u64) {
    if shown < len {
        push(
            out,
            Kind::Note,
            &format!(
                "  (the first {} of {} bytes: --max-body keeps no more)",
                count(shown),
                count(len)
            ),
        );
    }
}

/// An AMQP 1.0 body value as a data section gives it (`{"text"}` or `{"binary"}`, with
/// `"len"` when cut), else any other value as JSON.
fn data_body(out: &mut Vec<MsgLine>, v: &Value) {
    let len = |shown: u64| v.get("len").and_then(Value::as_u64).unwrap_or(shown);
    if let Some(t) = v.get("text").and_then(Value::as_str) {
        text_body(out, t, len(t.len() as u64));
    } else if let Some(h) = v.get("binary").and_then(Value::as_str) {
        let bytes = hex::decode(h).unwrap_or_default();
        binary_body(out, &bytes, len(bytes.len() as u64));
    } else if let Some(t) = v.as_str() {
        text_body(out, t, t.len() as u64);
    } else {
        section(out, "body (AMQP value)", &serde_json::json!({ "value": v }));
    }
}

/// The sections of an AMQP 1.0 message in wire order, then its size.
fn amqp10_lines(out: &mut Vec<MsgLine>, m: &serde_json::Map<String, Value>) {
    for name in [
        "header",
        "delivery-annotations",
        "message-annotations",
        "properties",
        "application-properties",
    ] {
        if let Some(v) = m.get(name) {
            section(out, name, v);
        }
    }
    if let Some(Value::Array(data)) = m.get("data") {
        for d in data {
            data_body(out, d);
        }
    }
    if let Some(v) = m.get("amqp-value") {
        data_body(out, v);
    }
    if let Some(v) = m.get("amqp-sequence") {
        section(
            out,
            "body (AMQP sequence)",
            &serde_json::json!({ "sequence": v }),
        );
    }
    if let Some(v) = m.get("footer") {
        section(out, "footer", v);
    }
    if let Some(e) = m.get("decode-error") {
        push(out, Kind::Note, &format!("does not decode: {}", preview(e)));
    }
    let size = m.get("size").and_then(Value::as_u64).unwrap_or(0);
    let transfers = m.get("transfers").and_then(Value::as_u64).unwrap_or(1);
    push(
        out,
        Kind::Note,
        &format!("{} bytes in {transfers} transfer(s)", count(size)),
    );
    if let Some(t) = m.get("truncated") {
        let held = t.get("held").and_then(Value::as_u64).unwrap_or(0);
        push(
            out,
            Kind::Note,
            &format!("only the first {} bytes were kept", count(held)),
        );
    }
}

/// An AMQP 0-9-1 message: its method and arguments, properties, headers, body.
fn amqp091_lines(out: &mut Vec<MsgLine>, m: &serde_json::Map<String, Value>) {
    let method = m.get("method").and_then(Value::as_str).unwrap_or("?");
    let class = m.get("class").and_then(Value::as_str).unwrap_or("");
    let name = if method.contains('.') || class.is_empty() {
        method.to_string()
    } else {
        format!("{class}.{method}")
    };
    section(
        out,
        &format!("{name} arguments"),
        m.get("arguments").unwrap_or(&Value::Null),
    );
    let mut props = m.get("properties").cloned().unwrap_or(Value::Null);
    let headers = props.as_object_mut().and_then(|p| p.remove("headers"));
    section(out, "properties", &props);
    if let Some(h) = headers {
        section(out, "headers (application properties)", &h);
    }
    let size = m.get("body-size").and_then(Value::as_u64).unwrap_or(0);
    if let Some(t) = m.get("body").and_then(Value::as_str) {
        text_body(out, t, size);
    } else if let Some(b) = m.get("body-base64").and_then(Value::as_str) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b)
            .unwrap_or_default();
        binary_body(out, &bytes, size);
    }
}

/// The lines of the message row `r` completes (none when it completes none).
pub fn message_lines(r: &Row) -> Vec<MsgLine> {
    let mut out = Vec::new();
    match r.message.as_ref() {
        Some(Value::Object(m)) if m.contains_key("arguments") => amqp091_lines(&mut out, m),
        Some(Value::Object(m)) => amqp10_lines(&mut out, m),
        Some(other) => push(&mut out, Kind::Text, &preview(other)),
        None => {}
    }
    if out.len() >= MAX_LINES {
        out.truncate(MAX_LINES - 1);
        out.push(MsgLine {
            kind: Kind::Note,
            text: format!("(only the first {MAX_LINES} lines are shown)"),
        });
    }
    out
}

/// The message's lines wrapped to `width` (hex dumps are not: they fit or are cut).
pub fn wrapped_lines(r: &Row, width: usize) -> Vec<MsgLine> {
    let mut out = Vec::new();
    for l in message_lines(r) {
        if l.kind == Kind::Hex {
            out.push(l);
            continue;
        }
        for text in super::fulltext::wrap(&l.text, width) {
            out.push(MsgLine { kind: l.kind, text });
        }
    }
    out
}

/// A line, the search's matches in it lit (ASCII case folded).
fn lit(l: &MsgLine, query: &str, width: usize) -> Line<'static> {
    let style = match l.kind {
        Kind::Heading => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        Kind::Note => Style::new().fg(Color::DarkGray),
        Kind::Hex | Kind::Text => Style::new(),
    };
    let text = fit(&l.text, width).trim_end().to_string();
    if query.is_empty() {
        return Line::styled(text, style);
    }
    let (hay, needle) = (text.to_ascii_lowercase(), query.to_ascii_lowercase());
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(i) = hay[from..].find(&needle).map(|i| i + from) {
        spans.push(Span::styled(text[from..i].to_string(), style));
        let end = i + needle.len();
        spans.push(Span::styled(
            text[i..end].to_string(),
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ));
        from = end;
    }
    spans.push(Span::styled(text[from..].to_string(), style));
    Line::from(spans)
}

/// One line of the message list: its number, time, direction, what carried it (the AMQP
/// 0-9-1 method, the AMQP 1.0 frame), its size and the start of its body.
fn list_line(n: usize, r: &Row) -> String {
    let dir = r.dir.map_or(" ", |d| d.arrow());
    let lines = message_lines(r);
    let what = lines
        .first()
        .and_then(|l| l.text.strip_suffix(" arguments"))
        .unwrap_or(r.name.as_str());
    let body = lines
        .iter()
        .skip_while(|l| !(l.kind == Kind::Heading && l.text.starts_with("body")))
        .skip(1)
        .map(|l| l.text.trim())
        .filter(|t| !t.is_empty() && *t != "{" && *t != "[")
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "{n:>5} {} {dir} {what:<14} {:>7}  {body}",
        clock(r.ts),
        super::bytes(message_size(r)),
    )
}

/// The size of the message row `r` completes, as its message states it.
fn message_size(r: &Row) -> u64 {
    let m = r.message.as_ref();
    m.and_then(|m| m.get("size").or(m.get("body-size")))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The search being typed, over the last line of the message.
fn search_line(f: &mut Frame, at: Rect, text: &str) {
    let line = Line::from(vec![
        Span::styled("search: ", Style::new().fg(Color::Yellow)),
        Span::raw(escape(text).into_owned()),
        Span::styled("█", Style::new().fg(Color::Yellow)),
        Span::styled(
            "  Enter finds, Esc cancels",
            Style::new().fg(Color::DarkGray),
        ),
    ]);
    f.render_widget(Clear, at);
    f.render_widget(Paragraph::new(line), at);
}

/// Draw the view.
pub fn render(view: &MessageView, model: &Model, f: &mut Frame) {
    let r = area(model.size);
    f.render_widget(Clear, r);
    let list = entries_in(model, view);
    let at = selected_index(view, &list);
    let title = format!(
        " Messages of {} of conn {}: {} ",
        view.shown().title(),
        view.conn(),
        count(list.len() as u64)
    );
    let keys = if view.scopes().len() > 1 {
        " Enter: its frames  /: search  n/N: next/prev  Tab: channel/consumer/queue  Esc closes "
    } else {
        " Enter: its frames  /: search  n/N: next/prev  PgUp/PgDn: scroll  Esc closes "
    };
    let block = Block::bordered()
        .border_style(Style::new().fg(Color::Cyan))
        .title(Line::styled(
            title,
            Style::new().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Line::styled(keys, Style::new().fg(Color::DarkGray)));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let (list_area, rule, detail) = split(inner);
    let width = inner.width as usize;
    if list.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled(
                "no message of it among the frames in memory",
                Style::new().fg(Color::DarkGray),
            )),
            list_area,
        );
        return;
    }
    let h = list_area.height as usize;
    let offset = at.saturating_sub(h.saturating_sub(1));
    let lines: Vec<Line> = list
        .iter()
        .enumerate()
        .skip(offset)
        .take(h)
        .filter_map(|(i, e)| Some((i, model.row(view.conn(), e.seq)?)))
        .map(|(i, row)| {
            let style = if i == at {
                selected_style(true)
            } else {
                Style::new()
            };
            Line::styled(fit(&list_line(i + 1, row), width), style)
        })
        .collect();
    f.render_widget(Paragraph::new(lines), list_area);
    let Some(row) = list.get(at).and_then(|e| model.row(view.conn(), e.seq)) else {
        return;
    };
    let body = wrapped_lines(row, width);
    let page = detail.height as usize;
    let scroll = view.scroll().min(body.len().saturating_sub(page));
    let rule_text = format!(
        "─ message {} of {}, lines {}-{} of {} ",
        at + 1,
        list.len(),
        (scroll + 1).min(body.len()),
        (scroll + page).min(body.len()),
        body.len()
    );
    f.render_widget(
        Paragraph::new(Line::styled(
            format!("{rule_text:─<width$}"),
            Style::new().fg(Color::DarkGray),
        )),
        rule,
    );
    let shown: Vec<Line> = body
        .iter()
        .skip(scroll)
        .take(page)
        .map(|l| lit(l, view.query(), width))
        .collect();
    f.render_widget(Paragraph::new(shown), detail);
    if let Some(text) = view.typing() {
        let y = detail.bottom().saturating_sub(1);
        search_line(f, Rect::new(inner.x, y, inner.width, 1), text.as_str());
    }
}
