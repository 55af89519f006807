//! The state pane: the tracker's snapshot of the shown connection. `sessions`, `links` and
//! `channels` become tables (links with a link-credit sparkline); every other key is shown as
//! an indented key/value tree. Works on any JSON object: the trackers own the shape.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Sparkline};

use super::{fit, pane_block, selected_style};
use crate::tui::app::{App, Pane};

/// Sections drawn as tables, in this order.
pub const TABLE_SECTIONS: [&str; 3] = ["sessions", "links", "channels"];

/// Preferred column order per section (others follow in the order they first appear).
fn preferred(section: &str) -> &'static [&'static str] {
    match section {
        "links" => &[
            "name",
            "handle",
            "role",
            "source",
            "target",
            "snd-settle-mode",
            "rcv-settle-mode",
            "delivery-count",
            "link-credit",
            "available",
            "drain",
            "unsettled",
        ],
        "channels" => &[
            "channel",
            "state",
            "consumers",
            "unacked",
            "confirm",
            "pending-confirms",
            "prefetch",
        ],
        "sessions" => &[
            "channel",
            "remote-channel",
            "state",
            "next-incoming-id",
            "incoming-window",
            "next-outgoing-id",
            "outgoing-window",
        ],
        _ => &[],
    }
}

/// Short column headers for the long spec names.
fn header(key: &str) -> &str {
    match key {
        "snd-settle-mode" => "snd-settle",
        "rcv-settle-mode" => "rcv-settle",
        "delivery-count" => "dlv-count",
        "link-credit" => "credit",
        "pending-confirms" => "pending",
        "next-incoming-id" => "next-in",
        "next-outgoing-id" => "next-out",
        "incoming-window" => "in-win",
        "outgoing-window" => "out-win",
        "remote-channel" => "remote-ch",
        other => other,
    }
}

/// A value as one table cell: addresses of terminus objects, counts of arrays and maps.
pub fn cell(v: &serde_json::Value) -> String {
    use serde_json::Value as V;
    match v {
        V::Null => "-".into(),
        V::String(s) => s.clone(),
        V::Object(m) => {
            if let Some(a) = m.get("address") {
                return cell(a);
            }
            if let Some(V::String(s)) = m.get("symbol") {
                return s.clone();
            }
            if m.is_empty() {
                return "-".into();
            }
            m.len().to_string()
        }
        V::Array(a) => a.len().to_string(),
        other => other.to_string(),
    }
}

/// The rows of a table section: (key when the section is a map, the row object).
fn section_rows(v: &serde_json::Value) -> Vec<(Option<String>, &serde_json::Value)> {
    match v {
        serde_json::Value::Array(a) => a.iter().map(|x| (None, x)).collect(),
        serde_json::Value::Object(m) => m.iter().map(|(k, x)| (Some(k.clone()), x)).collect(),
        _ => Vec::new(),
    }
}

/// The identity of a link for its credit history: its name, else its map key, else its handle.
fn link_key(key: Option<&str>, link: &serde_json::Value, index: usize) -> String {
    if let Some(n) = link.get("name").and_then(|n| n.as_str()) {
        return n.to_string();
    }
    if let Some(k) = key {
        return k.to_string();
    }
    match link.get("handle") {
        Some(h) => format!("handle {h}"),
        None => format!("#{index}"),
    }
}

fn credit_of(link: &serde_json::Value) -> Option<u64> {
    ["link-credit", "credit", "link_credit"]
        .iter()
        .find_map(|k| link.get(*k).and_then(|c| c.as_u64()))
}

/// (link key, link-credit) of every link in a snapshot that states its credit.
pub fn credit_samples(snapshot: &serde_json::Value) -> Vec<(String, u64)> {
    let Some(links) = snapshot.get("links") else {
        return Vec::new();
    };
    section_rows(links)
        .into_iter()
        .enumerate()
        .filter_map(|(i, (k, l))| Some((link_key(k.as_deref(), l, i), credit_of(l)?)))
        .collect()
}

/// What a line of the state pane is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// A section title.
    Heading,
    /// Column names.
    Columns,
    /// A table row.
    Row,
    /// A key/value line.
    Value,
}

/// One line of the state pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateItem {
    /// What it is.
    pub kind: ItemKind,
    /// The text.
    pub text: String,
    /// The frame filter Enter applies (`link:NAME`, `channel:N`).
    pub filter: Option<String>,
    /// The link whose credit sparkline goes at the end of the line.
    pub credit_key: Option<String>,
}

fn quote(s: &str) -> String {
    if s.chars().any(|c| c.is_whitespace() || c == '"' || c == '|') {
        format!("\"{}\"", s.replace('"', ""))
    } else {
        s.to_string()
    }
}

fn table(section: &str, v: &serde_json::Value, out: &mut Vec<StateItem>) {
    let rows = section_rows(v);
    out.push(StateItem {
        kind: ItemKind::Heading,
        text: format!("{} ({})", section, rows.len()),
        filter: None,
        credit_key: None,
    });
    if rows.is_empty() {
        return;
    }
    // Columns: the map key (if any), preferred keys present, then other keys.
    let keyed = rows.iter().any(|(k, _)| k.is_some());
    let mut cols: Vec<String> = Vec::new();
    for p in preferred(section) {
        if rows.iter().any(|(_, r)| r.get(*p).is_some()) {
            cols.push(p.to_string());
        }
    }
    for (_, r) in &rows {
        if let Some(m) = r.as_object() {
            for k in m.keys() {
                if !cols.contains(k) {
                    cols.push(k.clone());
                }
            }
        }
    }
    let mut grid: Vec<Vec<String>> = Vec::new();
    let mut heads: Vec<String> = Vec::new();
    if keyed {
        heads.push("key".into());
    }
    heads.extend(cols.iter().map(|c| header(c).to_string()));
    for (k, r) in &rows {
        let mut line = Vec::new();
        if keyed {
            line.push(k.clone().unwrap_or_default());
        }
        for c in &cols {
            line.push(r.get(c).map_or(String::new(), cell));
        }
        grid.push(line);
    }
    let widths: Vec<usize> = (0..heads.len())
        .map(|i| {
            grid.iter()
                .map(|l| l.get(i).map_or(0, |s| s.chars().count()))
                .chain(std::iter::once(heads[i].chars().count()))
                .max()
                .unwrap_or(0)
                .min(24)
        })
        .collect();
    let join = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| fit(c, *w))
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end()
            .to_string()
    };
    out.push(StateItem {
        kind: ItemKind::Columns,
        text: join(&heads),
        filter: None,
        credit_key: None,
    });
    for (i, ((k, r), cells)) in rows.iter().zip(&grid).enumerate() {
        let filter = match section {
            "links" => r
                .get("name")
                .and_then(|n| n.as_str())
                .map(|n| format!("link:{}", quote(n))),
            _ => ["channel", "local-channel", "id"]
                .iter()
                .find_map(|c| r.get(*c).and_then(|v| v.as_u64()))
                .map(|c| format!("channel:{c}")),
        };
        let credit_key = (section == "links").then(|| link_key(k.as_deref(), r, i));
        out.push(StateItem {
            kind: ItemKind::Row,
            text: join(cells),
            filter,
            credit_key,
        });
    }
}

fn values(label: &str, v: &serde_json::Value, depth: usize, out: &mut Vec<StateItem>) {
    let pad = "  ".repeat(depth);
    let push = |out: &mut Vec<StateItem>, text: String| {
        out.push(StateItem {
            kind: ItemKind::Value,
            text,
            filter: None,
            credit_key: None,
        })
    };
    match v {
        serde_json::Value::Object(m) if depth < 4 && !m.is_empty() => {
            push(out, format!("{pad}{label}:"));
            for (k, c) in m {
                values(k, c, depth + 1, out);
            }
        }
        serde_json::Value::Array(a) if depth < 4 && !a.is_empty() => {
            push(out, format!("{pad}{label}: [{}]", a.len()));
            for (i, c) in a.iter().enumerate().take(64) {
                values(&format!("[{i}]"), c, depth + 1, out);
            }
        }
        other => push(out, format!("{pad}{label}: {}", cell(other))),
    }
}

/// The lines of the state pane for `snapshot`.
pub fn state_items(snapshot: &serde_json::Value) -> Vec<StateItem> {
    let mut out = Vec::new();
    match snapshot {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                if !TABLE_SECTIONS.contains(&k.as_str()) {
                    values(k, v, 0, &mut out);
                }
            }
            for s in TABLE_SECTIONS {
                if let Some(v) = m.get(s) {
                    table(s, v, &mut out);
                }
            }
        }
        serde_json::Value::Null => {}
        other => values("state", other, 0, &mut out),
    }
    out
}

/// Width of the sparkline column.
pub const SPARK_W: u16 = 16;

/// Draw the state pane.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let focused = app.focus == Pane::State;
    let conn = app.state_conn();
    let title = match conn {
        Some(c) => format!(" State: conn {} {} ", c.id, c.state),
        None => " State ".to_string(),
    };
    let block = pane_block(
        app,
        Pane::State,
        Line::styled(title, Style::new().add_modifier(Modifier::BOLD)),
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let items = conn.map(|c| state_items(&c.snapshot)).unwrap_or_default();
    if items.is_empty() {
        let msg = if conn.is_some() {
            "nothing tracked yet"
        } else {
            "no connection selected"
        };
        f.render_widget(
            Paragraph::new(Line::styled(msg, Style::new().fg(Color::DarkGray))),
            inner,
        );
        return;
    }
    let spark = inner.width >= 60;
    let text_w = if spark {
        inner.width - SPARK_W - 1
    } else {
        inner.width
    };
    let h = inner.height as usize;
    let mut list = app.state_list;
    list.selected = list.selected.min(items.len() - 1);
    if list.selected >= list.offset + h.max(1) {
        list.offset = list.selected + 1 - h.max(1);
    }
    for (row, (i, it)) in items
        .iter()
        .enumerate()
        .skip(list.offset)
        .take(h)
        .enumerate()
    {
        let mut style = match it.kind {
            ItemKind::Heading => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ItemKind::Columns => Style::new().fg(Color::DarkGray),
            _ => Style::new(),
        };
        if i == list.selected {
            style = style.patch(selected_style(focused));
        }
        let y = inner.y + row as u16;
        f.render_widget(
            Paragraph::new(Line::styled(fit(&it.text, text_w as usize), style)),
            Rect::new(inner.x, y, text_w, 1),
        );
        if !spark {
            continue;
        }
        let sx = inner.x + text_w + 1;
        if it.kind == ItemKind::Columns && it.text.contains("credit") {
            f.render_widget(
                Paragraph::new(Line::styled(
                    "credit history",
                    Style::new().fg(Color::DarkGray),
                )),
                Rect::new(sx, y, SPARK_W, 1),
            );
        }
        let hist = it
            .credit_key
            .as_ref()
            .and_then(|k| conn.and_then(|c| c.credit.get(k)));
        if let Some(hist) = hist {
            let data: Vec<u64> = hist
                .iter()
                .rev()
                .take(SPARK_W as usize)
                .rev()
                .copied()
                .collect();
            let max = data.iter().copied().max().unwrap_or(0).max(1);
            f.render_widget(
                Sparkline::default()
                    .data(data)
                    .max(max)
                    .style(Style::new().fg(Color::Green)),
                Rect::new(sx, y, SPARK_W, 1),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap() -> serde_json::Value {
        serde_json::json!({
            "links": [
                {"name": "orders", "handle": 0, "role": "sender",
                 "target": {"address": "q1"}, "link-credit": 7, "unsettled": [1, 2]},
                {"name": "my link", "handle": 1, "role": "receiver", "link-credit": 0}
            ],
            "sessions": {"0": {"next-incoming-id": 5}},
            "remote-container-id": "broker"
        })
    }

    #[test]
    fn sections_become_tables_with_filters() {
        let items = state_items(&snap());
        let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "remote-container-id: broker",
                "sessions (1)",
                "key next-in",
                "0   5",
                "links (2)",
                "name    handle role     target credit unsettled",
                "orders  0      sender   q1     7      2",
                "my link 1      receiver        0",
            ]
        );
        assert_eq!(items[6].filter.as_deref(), Some("link:orders"));
        assert_eq!(items[7].filter.as_deref(), Some("link:\"my link\""));
        assert_eq!(items[3].filter, None);
        assert_eq!(items[7].credit_key.as_deref(), Some("my link"));
    }

    #[test]
    fn credit_samples_come_from_links() {
        assert_eq!(
            credit_samples(&snap()),
            vec![("orders".to_string(), 7), ("my link".to_string(), 0)]
        );
        assert!(credit_samples(&serde_json::json!({"channels": []})).is_empty());
    }
}
