//! What the full-text overlay (`w`) shows of the focused pane's selection, whole: a
//! violation with its rule, severity, spec, message, frame and place; a frame's name, place,
//! summary and violations; a detail field's path and value (a container as indented JSON);
//! a state line; a diagnosis as the Health pane details it; a connection with its addresses,
//! counts and close. `w` opens it in every pane, Enter too on a leaf of the detail tree. And
//! its keys: the overlay scrolls, Esc or `w` closes it.
//!
//! Every string that came from the wire is escaped here, line by line, with the escape the
//! panes use (`base::escape`); the overlay's own line breaks separate the parts.

use crate::event::escape::escape;

use super::app::{App, Pane, Row, ViolationRow};
use super::views;
use super::views::state_items::{ItemKind, StateItem};

/// A labelled part of the text: `label` in its column, then `text` escaped.
fn part(out: &mut Vec<String>, label: &str, text: &str) {
    out.push(format!("{label:<9} {}", escape(text)));
}

/// A violation, whole, with the summary of its frame (the violation's own or its row's).
fn violation_text(v: &ViolationRow, row: Option<&Row>) -> Vec<String> {
    let x = &v.violation;
    let mut out = Vec::new();
    part(&mut out, "rule", x.rule.id);
    part(&mut out, "severity", x.severity.as_str());
    part(&mut out, "spec", &x.spec);
    part(&mut out, "message", &x.message);
    let frame = x.frame.as_deref().or(row.map(|r| r.summary.as_str()));
    part(&mut out, "frame", frame.unwrap_or("(not a decoded frame)"));
    let at = format!(
        "connection {}, {} offset {}, {}",
        v.conn,
        x.dir.as_str(),
        x.offset,
        views::clock(v.ts)
    );
    part(&mut out, "where", &at);
    part(&mut out, "about", x.rule.text);
    out
}

/// A frame-list row, whole: what and where, its summary, its violations.
fn row_text(r: &Row) -> Vec<String> {
    let mut out = Vec::new();
    part(&mut out, "frame", &r.name);
    let mut at = format!("connection {}", r.conn);
    if let Some(d) = r.dir {
        at.push_str(&format!(", {} offset {}", d.as_str(), r.offset));
    }
    if let Some(c) = r.channel {
        at.push_str(&format!(", channel {c}"));
    }
    at.push_str(&format!(", {}", views::clock(r.ts)));
    part(&mut out, "where", &at);
    part(&mut out, "summary", &r.summary);
    for v in &r.violations {
        part(
            &mut out,
            "violation",
            &format!("{}: {}", v.rule.id, v.message),
        );
    }
    out
}

/// The JSON value at a detail node's `path` below `v` (`rest`: `""` or `.key.0.key`), a key
/// with dots in it matched whole.
fn descend<'a>(v: &'a serde_json::Value, rest: &str) -> Option<&'a serde_json::Value> {
    if rest.is_empty() {
        return Some(v);
    }
    let rest = rest.strip_prefix('.')?;
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .filter(|(k, _)| {
                rest.strip_prefix(k.as_str())
                    .is_some_and(|after| after.is_empty() || after.starts_with('.'))
            })
            .max_by_key(|(k, _)| k.len())
            .and_then(|(k, c)| descend(c, &rest[k.len()..])),
        serde_json::Value::Array(a) => {
            let (i, after) = rest.split_at(rest.find('.').unwrap_or(rest.len()));
            descend(a.get(i.parse::<usize>().ok()?)?, after)
        }
        _ => None,
    }
}

/// The value of the detail node at `path` (as `views::detail::tree_nodes` names them).
fn node_value(row: &Row, path: &str) -> Option<serde_json::Value> {
    if let Some(rest) = path.strip_prefix("$message") {
        return descend(row.message.as_ref()?, rest).cloned();
    }
    if let Some(rest) = path.strip_prefix("$violations") {
        let v = serde_json::to_value(&row.violations).ok()?;
        return descend(&v, rest).cloned();
    }
    let fields = row.fields_json();
    if fields.is_object() {
        return descend(&fields, &format!(".{path}")).cloned();
    }
    descend(&fields, path.strip_prefix("fields")?).cloned()
}

/// The detail tree's selected field, whole: its path, and its value (one line, or a
/// container as indented JSON).
fn field_text(app: &App, row: &Row) -> Option<Vec<String>> {
    let nodes = views::detail::tree_nodes(row, app.detail.toggled());
    let n = nodes.get(app.detail.cursor().selected())?;
    let mut out = Vec::new();
    part(&mut out, "field", n.path.trim_start_matches('$'));
    let value = node_value(row, &n.path);
    match value.filter(|_| n.container) {
        Some(v) => {
            out.push("value".into());
            let json = serde_json::to_string_pretty(&v).unwrap_or_default();
            out.extend(json.lines().map(|l| escape(l).into_owned()));
        }
        None => part(&mut out, "value", &n.preview),
    }
    Some(out)
}

/// A line of the state pane: a table row as one `column value` line a column (the columns
/// start where the names in the table's column line do), anything else as it is.
fn state_text(items: &[StateItem], selected: usize) -> Option<Vec<String>> {
    let it = items.get(selected)?;
    let columns = items[..selected]
        .iter()
        .rev()
        .find(|i| i.kind == ItemKind::Columns)
        .filter(|_| it.kind == ItemKind::Row);
    let Some(columns) = columns else {
        return Some(vec![escape(&it.text).into_owned()]);
    };
    let names: Vec<char> = columns.text.chars().collect();
    let starts: Vec<usize> = (0..names.len())
        .filter(|&i| names[i] != ' ' && (i == 0 || names[i - 1] == ' '))
        .collect();
    let cells: Vec<char> = it.text.chars().collect();
    let mut out = Vec::new();
    for (n, &from) in starts.iter().enumerate() {
        let to = starts.get(n + 1).copied().unwrap_or(usize::MAX);
        let name = cell_of(&names, from, to);
        part(&mut out, name.trim(), cell_of(&cells, from, to).trim());
    }
    Some(out)
}

/// The characters `from..to` of `chars` (as many as there are).
fn cell_of(chars: &[char], from: usize, to: usize) -> String {
    let to = to.min(chars.len());
    chars
        .get(from..to)
        .map_or(String::new(), |c| c.iter().collect())
}

/// A connection, whole: its addresses, protocol and state, counts, and how it closed.
fn conn_text(c: &super::model::Conn) -> Vec<String> {
    let mut out = Vec::new();
    part(&mut out, "conn", &c.id.to_string());
    part(
        &mut out,
        "client",
        &c.client.map_or("?".into(), |a| a.to_string()),
    );
    part(
        &mut out,
        "upstream",
        &c.upstream.map_or("?".into(), |a| a.to_string()),
    );
    part(&mut out, "protocol", &c.proto);
    part(&mut out, "state", &c.state);
    let counts = format!(
        "{} bytes / {} frames client to server, {} bytes / {} frames back, {} violation(s)",
        c.bytes[0], c.frames[0], c.bytes[1], c.frames[1], c.violations
    );
    part(&mut out, "traffic", &counts);
    part(
        &mut out,
        "since",
        &format!("{} ({})", c.first_ts.rfc3339(), views::clock(c.first_ts)),
    );
    if let Some(close) = &c.closed {
        part(&mut out, "closed", &close.reason.to_string());
    }
    out
}

/// The title and lines of the full text of the focused pane's selection in `app`, if it has
/// one.
pub(super) fn of_selection(app: &App) -> Option<(String, Vec<String>)> {
    match app.focus {
        Pane::Violations => {
            let v = app.violations.selected()?;
            let row = v.seq.and_then(|s| app.row(v.conn, s));
            Some(("Violation".into(), violation_text(v, row)))
        }
        Pane::Frames => Some(("Frame".into(), row_text(app.selected_row()?))),
        Pane::Detail => Some(("Field".into(), field_text(app, app.selected_row()?)?)),
        Pane::State => {
            let snapshot = app.state_snapshot()?;
            let items = views::state_items::state_items_in(snapshot, usize::MAX);
            Some((
                "State".into(),
                state_text(&items, app.state.cursor().selected())?,
            ))
        }
        Pane::Health => {
            let d = &app.health.selected()?.diagnosis;
            let lines = views::health::detail_lines(d, app.model.now)
                .iter()
                .map(|l| {
                    let s: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                    escape(&s).into_owned()
                })
                .collect();
            Some(("Diagnosis".into(), lines))
        }
        Pane::Connections => {
            let id = app.selected_conn()?;
            Some(("Connection".into(), conn_text(app.model.conns.get(&id)?)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descend_finds_keys_with_dots_and_array_items() {
        let v = serde_json::json!({"a.b": {"c": [1, {"d": 2}]}, "a": 0});
        assert_eq!(descend(&v, ".a.b.c.1.d"), Some(&serde_json::json!(2)));
        assert_eq!(descend(&v, ".a"), Some(&serde_json::json!(0)));
        assert_eq!(descend(&v, ".x"), None);
    }
}
