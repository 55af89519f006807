//! The selected frame: its fields (by spec name), message and violations as an expandable
//! tree, beside a hex dump of its bytes that highlights the selected field's bytes when the
//! codec gives per-field spans.

use std::collections::HashSet;
use std::ops::Range;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use super::{Chrome, block_of, selected_style};
use crate::tui::app::{App, Row};
use crate::tui::components::cursor::ListState;
use crate::tui::components::detail::Detail;

/// Containers at this depth and deeper start collapsed.
pub const OPEN_DEPTH: usize = 2;
/// Nesting below this depth is not shown (hostile JSON cannot blow up the tree).
pub const MAX_DEPTH: usize = 16;

/// The span name of a frame's message bytes: selecting any node of the message lights them.
pub use crate::event::PAYLOAD_SPAN;

/// One visible line of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Nesting depth (0 = top).
    pub depth: usize,
    /// Key or index.
    pub label: String,
    /// The value (leaves) or its size (containers).
    pub preview: String,
    /// Unique path used for expansion state (`source.address`, `message.body`).
    pub path: String,
    /// Path within the frame's fields, for byte spans (`None` outside the fields).
    pub field_path: Option<String>,
    /// Has children.
    pub container: bool,
    /// Children shown.
    pub expanded: bool,
}

/// Typed-value objects shown on one line: `{"symbol": "x"}`, `{"binary": "00ff"}`, timestamps.
fn is_inline(map: &serde_json::Map<String, serde_json::Value>) -> bool {
    !map.is_empty()
        && map.keys().all(|k| {
            matches!(
                k.as_str(),
                "symbol"
                    | "binary"
                    | "len"
                    | "text"
                    | "timestamp"
                    | "utc"
                    | "decimal32"
                    | "decimal64"
                    | "decimal128"
                    | "decimal"
                    | "bytes"
                    | "hex"
            )
        })
}

/// A value on one line.
pub fn preview(v: &serde_json::Value) -> String {
    use serde_json::Value as V;
    match v {
        V::Object(m) if is_inline(m) => {
            if let Some(V::String(s)) = m.get("symbol") {
                return format!(":{s}");
            }
            if let Some(V::String(s)) = m.get("utc") {
                return s.clone();
            }
            if let Some(V::String(t)) = m.get("text") {
                let t = serde_json::Value::String(t.clone()).to_string();
                return match m.get("len") {
                    Some(n) => format!("{t}… ({n} bytes)"),
                    None => t,
                };
            }
            if let Some(V::String(s)) = m.get("binary") {
                return match m.get("len") {
                    Some(n) => format!("0x{s}… ({n} bytes)"),
                    None => format!("0x{s}"),
                };
            }
            v.to_string()
        }
        V::Object(m) => format!("{{{}}}", m.len()),
        V::Array(a) => format!("[{}]", a.len()),
        other => other.to_string(),
    }
}

fn is_container(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(m) => !is_inline(m) && !m.is_empty(),
        serde_json::Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

#[allow(clippy::too_many_arguments)]
fn walk(
    out: &mut Vec<Node>,
    label: String,
    v: &serde_json::Value,
    depth: usize,
    path: String,
    field_path: Option<String>,
    toggled: &HashSet<String>,
) {
    let container = is_container(v) && depth < MAX_DEPTH;
    let expanded = container && ((depth < OPEN_DEPTH) != toggled.contains(&path));
    out.push(Node {
        depth,
        label,
        preview: preview(v),
        path: path.clone(),
        field_path: field_path.clone(),
        container,
        expanded,
    });
    if !expanded {
        return;
    }
    let child = |k: &str| {
        (
            format!("{path}.{k}"),
            field_path.as_ref().map(|f| format!("{f}.{k}")),
        )
    };
    match v {
        serde_json::Value::Object(m) => {
            let mut entries: Vec<(&String, &serde_json::Value)> = m.iter().collect();
            if path == "$message" {
                // A message's sections in the order the spec puts them on the wire (§3.2),
                // not the byte order of their names.
                entries.sort_by_key(|(k, _)| section_rank(k));
            }
            for (k, c) in entries {
                let (p, fp) = child(k);
                walk(out, k.clone(), c, depth + 1, p, fp, toggled);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                let (p, fp) = child(&i.to_string());
                walk(out, format!("[{i}]"), c, depth + 1, p, fp, toggled);
            }
        }
        _ => {}
    }
}

/// Where an AMQP 1.0 message section goes in wire order (header, delivery-annotations,
/// message-annotations, properties, application-properties, the body, footer); anything
/// else (sizes, counts, a 0-9-1 message's keys) after them, in name order.
fn section_rank(key: &str) -> u8 {
    match key {
        "header" => 0,
        "delivery-annotations" => 1,
        "message-annotations" => 2,
        "properties" => 3,
        "application-properties" => 4,
        "data" | "amqp-sequence" | "amqp-value" => 5,
        "footer" => 6,
        _ => 7,
    }
}

/// The visible tree lines of `row`: its fields at the top level, then `message` and
/// `violations` sections.
pub fn tree_nodes(row: &Row, toggled: &HashSet<String>) -> Vec<Node> {
    let mut out = Vec::new();
    match row.fields_json() {
        serde_json::Value::Object(m) => {
            // Spec order when the codec gives spans (they come in field order), else the
            // map's order.
            let mut keys: Vec<&String> = m.keys().collect();
            if let Some(spans) = row.spans() {
                let pos = |k: &str| {
                    spans
                        .iter()
                        .position(|(n, _)| *n == k)
                        .unwrap_or(usize::MAX)
                };
                keys.sort_by_key(|k| pos(k));
            }
            for k in keys {
                walk(
                    &mut out,
                    k.clone(),
                    &m[k],
                    0,
                    k.clone(),
                    Some(k.clone()),
                    toggled,
                );
            }
        }
        serde_json::Value::Null => {}
        other => walk(
            &mut out,
            "fields".into(),
            &other,
            0,
            "fields".into(),
            None,
            toggled,
        ),
    }
    if let Some(m) = &row.message {
        walk(
            &mut out,
            "message".into(),
            m,
            0,
            "$message".into(),
            Some(PAYLOAD_SPAN.into()),
            toggled,
        );
    }
    if !row.violations.is_empty() {
        let v = serde_json::to_value(&row.violations).unwrap_or_default();
        walk(
            &mut out,
            "violations".into(),
            &v,
            0,
            "$violations".into(),
            None,
            toggled,
        );
    }
    out
}

/// The byte ranges to highlight for the field at `field_path`: its own span, its
/// descendants' spans, or failing both its nearest spanned ancestor's.
pub fn highlight(spans: &[(&str, Range<usize>)], field_path: &str) -> Vec<Range<usize>> {
    let own: Vec<Range<usize>> = spans
        .iter()
        .filter(|(n, _)| {
            *n == field_path
                || n.strip_prefix(field_path)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
        .map(|(_, r)| r.clone())
        .collect();
    if !own.is_empty() {
        return own;
    }
    spans
        .iter()
        .filter(|(n, _)| {
            field_path
                .strip_prefix(*n)
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .max_by_key(|(n, _)| n.len())
        .map(|(_, r)| vec![r.clone()])
        .unwrap_or_default()
}

/// Bytes per hex line that fit `width` columns (offset + hex + ASCII).
pub fn bytes_per_line(width: u16) -> usize {
    [16usize, 8, 4]
        .into_iter()
        .find(|n| 5 + n * 3 + n <= width as usize)
        .unwrap_or(4)
}

/// Hex dump lines of `raw` from line `first`, `count` lines, highlighting `hl`.
pub fn hex_lines(
    raw: &[u8],
    per_line: usize,
    first: usize,
    count: usize,
    hl: &[Range<usize>],
) -> Vec<Line<'static>> {
    let on = Style::new().fg(Color::Black).bg(Color::Yellow);
    let lit = |i: usize| hl.iter().any(|r| r.contains(&i));
    let mut out = Vec::new();
    for (n, chunk) in raw
        .chunks(per_line.max(1))
        .enumerate()
        .skip(first)
        .take(count)
    {
        let base = n * per_line;
        let mut spans = vec![Span::styled(
            format!("{base:04x} "),
            Style::new().fg(Color::DarkGray),
        )];
        for (j, b) in chunk.iter().enumerate() {
            let s = format!("{b:02x}");
            spans.push(if lit(base + j) {
                Span::styled(s, on)
            } else {
                Span::raw(s)
            });
            spans.push(Span::raw(" "));
        }
        for _ in chunk.len()..per_line {
            spans.push(Span::raw("   "));
        }
        for (j, b) in chunk.iter().enumerate() {
            let c = if b.is_ascii_graphic() || *b == b' ' {
                *b as char
            } else {
                '.'
            };
            spans.push(if lit(base + j) {
                Span::styled(c.to_string(), on)
            } else {
                Span::styled(c.to_string(), Style::new().fg(Color::DarkGray))
            });
        }
        out.push(Line::from(spans));
    }
    out
}

/// What the detail pane is drawn of: its component's state, the selected frame's row, and
/// whether the pane is zoomed (the hex dump then goes below the tree).
#[derive(Clone, Copy)]
pub struct Shown<'a> {
    /// The pane's component.
    pub detail: &'a Detail,
    /// The selected frame's row, if any.
    pub row: Option<&'a Row>,
    /// The pane fills the screen.
    pub zoom: bool,
}

impl<'a> Shown<'a> {
    /// What the detail pane of `app` shows.
    pub fn of(app: &'a App) -> Shown<'a> {
        Shown {
            detail: &app.detail,
            row: app.selected_row(),
            zoom: app.zoom,
        }
    }
}

/// Draw the detail pane.
pub fn render(shown: Shown, chrome: Chrome, f: &mut Frame, area: Rect) {
    let focused = chrome.focused;
    let Some(row) = shown.row else {
        let block = block_of(focused, Line::from(" Detail "));
        let inner = block.inner(area);
        f.render_widget(block, area);
        f.render_widget(
            Paragraph::new(Line::styled(
                "no frame selected",
                Style::new().fg(Color::DarkGray),
            )),
            inner,
        );
        return;
    };
    let title = title(row);
    let (tree_area, hex_area) = split(area, shown.zoom);
    let hex_w = hex_area.width;
    let mut block = block_of(focused, title);
    let inner = block.inner(tree_area);
    let nodes = tree_nodes(row, shown.detail.toggled());
    let h = inner.height as usize;
    let list = shown_list(shown.detail, &nodes, h);
    let texts = node_texts(&nodes, &list, h);
    let width = inner.width as usize;
    let widest = texts.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    let from = chrome.shift.min(super::max_shift(widest, width));
    if let Some(hint) = super::shift_hint(from, widest, width) {
        block = block.title_bottom(hint);
    }
    f.render_widget(block, tree_area);
    let lines = tree_lines(&nodes, &list, focused, (from, width), h);
    f.render_widget(Paragraph::new(lines), inner);

    if hex_w == 0 {
        return;
    }
    render_hex(shown.detail, row, &nodes, &list, f, hex_area);
}

/// The tree's and the hex dump's parts of the pane: the hex dump takes the right side when
/// there is room for 8 bytes a line (16 on a wide pane), the tree the rest; zoomed (`z`), the
/// tree takes the whole width and the hex dump goes below it.
fn split(area: Rect, zoomed: bool) -> (Rect, Rect) {
    if zoomed && area.height >= 12 {
        let hex_h = area.height / 3;
        let tree = Rect {
            height: area.height - hex_h,
            ..area
        };
        let hex = Rect {
            y: area.y + tree.height,
            height: hex_h,
            ..area
        };
        return (tree, hex);
    }
    let hex_w: u16 = if area.width >= 150 {
        5 + 16 * 4 + 2
    } else if area.width >= 76 {
        5 + 8 * 4 + 2
    } else {
        0
    };
    let tree_area = Rect {
        width: area.width - hex_w,
        ..area
    };
    let hex_area = Rect {
        x: area.x + tree_area.width,
        width: hex_w,
        ..area
    };
    (tree_area, hex_area)
}

/// The width of the tree's lines in a detail pane of `area`.
pub fn tree_width(zoom: bool, area: Rect) -> usize {
    Block::bordered().inner(split(area, zoom).0).width as usize
}

/// The tree's cursor as drawn in `h` lines: the selected node within the nodes, and shown.
fn shown_list(detail: &Detail, nodes: &[Node], h: usize) -> ListState {
    let mut list = detail.cursor().list();
    if !nodes.is_empty() {
        list.selected = list.selected.min(nodes.len() - 1);
        if list.selected >= list.offset + h.max(1) {
            list.offset = list.selected + 1 - h.max(1);
        }
    }
    list
}

/// The width of the widest tree line the detail pane of `area` shows now.
pub fn widest(shown: Shown, area: Rect) -> usize {
    let Some(row) = shown.row else {
        return 0;
    };
    let inner = Block::bordered().inner(split(area, shown.zoom).0);
    let nodes = tree_nodes(row, shown.detail.toggled());
    let h = inner.height as usize;
    let list = shown_list(shown.detail, &nodes, h);
    node_texts(&nodes, &list, h)
        .iter()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0)
}

/// The text of each tree line shown (`height` of `nodes` from `list`'s offset), whole.
fn node_texts(nodes: &[Node], list: &ListState, height: usize) -> Vec<String> {
    nodes
        .iter()
        .skip(list.offset)
        .take(height)
        .map(|n| {
            let marker = if !n.container {
                "  "
            } else if n.expanded {
                "▾ "
            } else {
                "▸ "
            };
            format!(
                "{}{}{}: {}",
                "  ".repeat(n.depth),
                marker,
                n.label,
                if n.container && n.expanded {
                    ""
                } else {
                    n.preview.as_str()
                }
            )
        })
        .collect()
}

/// The detail pane's title: the frame's name, connection, direction, offset and channel.
fn title(row: &Row) -> Line<'static> {
    let dir = row.dir.map_or("", |d| d.arrow());
    Line::from(vec![
        Span::styled(
            format!(" {} ", row.name),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::raw(match row.dir {
            Some(_) => format!(
                "conn {} {} @{}{} ",
                row.conn,
                dir,
                row.offset,
                row.channel.map_or(String::new(), |c| format!(" ch {c}"))
            ),
            None => format!("conn {} ", row.conn),
        }),
    ])
}

/// The lines of the field tree as shown: `height` lines of `nodes` from `list`'s offset, the
/// selected one marked, each scrolled `shift.0` columns and cut to `shift.1`.
fn tree_lines(
    nodes: &[Node],
    list: &ListState,
    focused: bool,
    shift: (usize, usize),
    height: usize,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let texts = node_texts(nodes, list, height);
    for ((i, n), text) in nodes.iter().enumerate().skip(list.offset).zip(texts) {
        let mut style = if n.depth == 0 && n.path.starts_with('$') {
            Style::new().fg(Color::Yellow)
        } else {
            Style::new()
        };
        if i == list.selected {
            style = style.patch(selected_style(focused));
        }
        lines.push(Line::styled(super::shifted(&text, shift.0, shift.1), style));
    }
    if nodes.is_empty() {
        lines.push(Line::styled(
            "(no fields decoded)",
            Style::new().fg(Color::DarkGray),
        ));
    }
    lines
}

/// The hex dump beside the tree, the selected field's bytes highlighted.
fn render_hex(
    detail: &Detail,
    row: &Row,
    nodes: &[Node],
    list: &ListState,
    f: &mut Frame,
    hex_area: Rect,
) {
    let hl = match (
        row.spans(),
        nodes.get(list.selected).and_then(|n| n.field_path.as_ref()),
    ) {
        (Some(spans), Some(p)) => highlight(spans, p),
        _ => Vec::new(),
    };
    let title = if row.raw.len() < row.len {
        format!(" hex: first {} of {} bytes ", row.raw.len(), row.len)
    } else {
        format!(" hex: {} bytes ", row.raw.len())
    };
    let block = Block::bordered()
        .border_style(Style::new().fg(Color::DarkGray))
        .title(title);
    let hex_inner = block.inner(hex_area);
    f.render_widget(block, hex_area);
    let per = bytes_per_line(hex_inner.width);
    let total_lines = row.raw.len().div_ceil(per);
    let hh = hex_inner.height as usize;
    let first = match hl.iter().map(|r| r.start).min() {
        Some(s) => (s / per).saturating_sub(1),
        None => detail.hex_scroll(),
    }
    .min(total_lines.saturating_sub(hh));
    f.render_widget(
        Paragraph::new(hex_lines(&row.raw, per, first, hh, &hl)),
        hex_inner,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlight_prefers_own_span_then_children_then_ancestor() {
        let spans = vec![
            ("source", 10..30),
            ("source.address", 12..20),
            ("handle", 5..6),
        ];
        assert_eq!(highlight(&spans, "source.address"), vec![12..20]);
        assert_eq!(highlight(&spans, "source"), vec![10..30, 12..20]);
        assert_eq!(highlight(&spans, "source.durable"), vec![10..30]);
        assert_eq!(highlight(&spans, "hand"), Vec::<Range<usize>>::new());
        assert_eq!(highlight(&[], "handle"), Vec::<Range<usize>>::new());
    }

    #[test]
    fn hex_lines_show_offset_hex_and_ascii() {
        let hl: &[Range<usize>] = &[Range { start: 0, end: 4 }];
        let l = hex_lines(b"AMQP\x00\x01\x00\x00", 8, 0, 1, hl);
        let text: String = l[0].spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "0000 41 4d 51 50 00 01 00 00 AMQP....");
        assert_eq!(l[0].spans[1].style.bg, Some(Color::Yellow));
        assert_eq!(l[0].spans[9].style.bg, None);
        assert_eq!(bytes_per_line(38), 8);
        assert_eq!(bytes_per_line(69), 16);
    }

    #[test]
    fn message_sections_come_in_wire_order() {
        // As the JSON holds them: keys in byte order.
        let message = serde_json::json!({
            "size": 90,
            "amqp-value": "x",
            "application-properties": {},
            "footer": {},
            "header": {},
            "message-annotations": {},
            "properties": {},
            "delivery-annotations": {},
        });
        let mut nodes = Vec::new();
        let toggled = HashSet::new();
        walk(
            &mut nodes,
            "message".into(),
            &message,
            0,
            "$message".into(),
            None,
            &toggled,
        );
        let keys: Vec<&str> = nodes.iter().skip(1).map(|n| n.label.as_str()).collect();
        assert_eq!(
            keys,
            [
                "header",
                "delivery-annotations",
                "message-annotations",
                "properties",
                "application-properties",
                "amqp-value",
                "footer",
                "size"
            ]
        );
    }

    #[test]
    fn typed_values_preview_on_one_line() {
        assert_eq!(
            preview(&serde_json::json!({"symbol": "amqp:accepted"})),
            ":amqp:accepted"
        );
        assert_eq!(preview(&serde_json::json!({"binary": "00ff"})), "0x00ff");
        assert_eq!(
            preview(&serde_json::json!({"binary": "6869", "text": "hi"})),
            "\"hi\""
        );
        assert_eq!(
            preview(&serde_json::json!({"binary": "6869", "text": "hi", "len": 900})),
            "\"hi\"… (900 bytes)"
        );
        assert_eq!(preview(&serde_json::json!([1, 2])), "[2]");
        assert_eq!(preview(&serde_json::json!("x")), "\"x\"");
    }
}
