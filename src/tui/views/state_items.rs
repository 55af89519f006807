//! The lines of the state pane, built from the tracker's typed [`Snapshot`]: the connection's
//! state, tables of links and sessions (AMQP 1.0, each link with its credit history for the
//! sparkline) or of channels (AMQP 0-9-1), then what the peers announced.
//!
//! A value the tracker cannot vouch for (its part of the state was touched by missed bytes: a
//! capture gap, a skim) is shown with a `?` after it, and the table's heading says what that
//! means; nothing is shown as certain that is not. Values per direction are `client/server`
//! (one value when both agree).

use crate::event::Dir;
use crate::event::snapshot::{
    Amqp10Snapshot, Amqp091Snapshot, ChannelSnapshot, Detail, LinkSnapshot, PeerSnapshot,
    PendingContent, PerDir, SessionSnapshot, Snapshot,
};

use super::fit;
use crate::event::escape::escape;

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
    /// Link-credit history drawn as a sparkline at the end of the line (oldest first).
    pub credit: Option<Vec<i64>>,
}

impl StateItem {
    /// A line of `text`, escaped: it holds what peers sent (container ids, host names,
    /// products, reasons).
    fn line(kind: ItemKind, text: String) -> Self {
        StateItem {
            kind,
            text: escape(&text).into_owned(),
            filter: None,
            credit: None,
        }
    }
}

/// Marks a value its tracker cannot vouch for.
pub const UNCERTAIN: &str = "?";

/// Column cells wider than this are cut, unless the column is a flexible one (a name, an
/// address, the consumers) and the pane has the width to spare.
const MAX_CELL: usize = 24;

/// Cells of the columns shown whole are cut at this width all the same.
const MAX_WHOLE: usize = 128;

/// `value`, with [`UNCERTAIN`] after it unless `sure`.
fn sure(value: impl std::fmt::Display, sure: bool) -> String {
    if sure {
        value.to_string()
    } else {
        format!("{value}{UNCERTAIN}")
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// `client/server`, or one value when both are the same.
fn pair<T: std::fmt::Display + PartialEq>(p: &PerDir<Option<T>>) -> String {
    if p.c2s == p.s2c {
        opt(p.c2s.as_ref())
    } else {
        format!("{}/{}", opt(p.c2s.as_ref()), opt(p.s2c.as_ref()))
    }
}

fn quote(s: &str) -> String {
    if s.chars().any(|c| c.is_whitespace() || c == '"' || c == '|') {
        format!("\"{}\"", s.replace('"', ""))
    } else {
        s.to_string()
    }
}

/// A table being built: column names and rows of cells.
struct Table {
    heading: String,
    columns: &'static [&'static str],
    /// The columns given the width the others leave (indexes into `columns`).
    flex: &'static [usize],
    /// The columns shown whole, up to [`MAX_WHOLE`] (the addresses): the line is then wider
    /// than a narrow pane, which scrolls sideways to them.
    whole: &'static [usize],
    rows: Vec<TableRow>,
}

struct TableRow {
    cells: Vec<String>,
    filter: Option<String>,
    credit: Option<Vec<i64>>,
}

impl Table {
    /// The width of each column in a line of `width` characters: what its widest cell needs,
    /// at most [`MAX_CELL`]; then what the line has left given, a character at a time, to the
    /// flexible columns still cut.
    fn widths(&self, width: usize) -> Vec<usize> {
        let natural: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| r.cells.get(i).map_or(0, |c| c.chars().count()))
                    .chain(std::iter::once(self.columns[i].chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut widths: Vec<usize> = natural
            .iter()
            .enumerate()
            .map(|(i, w)| {
                (*w).min(if self.whole.contains(&i) {
                    MAX_WHOLE
                } else {
                    MAX_CELL
                })
            })
            .collect();
        let used = widths.iter().sum::<usize>() + widths.len().saturating_sub(1);
        let mut spare = width.saturating_sub(used);
        while spare > 0 {
            let mut gave = false;
            for &i in self.flex {
                if spare > 0 && widths[i] < natural[i] {
                    widths[i] += 1;
                    spare -= 1;
                    gave = true;
                }
            }
            if !gave {
                break;
            }
        }
        widths
    }

    /// The table's lines, for a pane `width` characters wide.
    fn push_into(mut self, out: &mut Vec<StateItem>, width: usize) {
        // Cells hold wire strings (link names, addresses, consumer tags, queues): escaped
        // before they are measured, so a column fits what is drawn.
        for cell in self.rows.iter_mut().flat_map(|r| r.cells.iter_mut()) {
            if let std::borrow::Cow::Owned(e) = escape(cell) {
                *cell = e;
            }
        }
        let widths = self.widths(width);
        out.push(StateItem::line(ItemKind::Heading, self.heading));
        if self.rows.is_empty() {
            return;
        }
        let join = |cells: &mut dyn Iterator<Item = &str>| {
            cells
                .zip(&widths)
                .map(|(c, w)| fit(c, *w))
                .collect::<Vec<_>>()
                .join(" ")
                .trim_end()
                .to_string()
        };
        out.push(StateItem::line(
            ItemKind::Columns,
            join(&mut self.columns.iter().copied()),
        ));
        for r in self.rows {
            out.push(StateItem {
                kind: ItemKind::Row,
                text: join(&mut r.cells.iter().map(String::as_str)),
                filter: r.filter,
                credit: r.credit,
            });
        }
    }
}

fn peer_line(label: &str, p: &PeerSnapshot) -> String {
    let mut s = format!("{label}: {}", p.state);
    if let Some(c) = &p.container_id {
        s.push_str(&format!(" container-id {c}"));
    }
    if let Some(h) = &p.hostname {
        s.push_str(&format!(" hostname {h}"));
    }
    if let Some(m) = p.max_frame_size {
        s.push_str(&format!(" max-frame-size {m}"));
    }
    if let Some(c) = p.channel_max {
        s.push_str(&format!(" channel-max {c}"));
    }
    if let Some(t) = p.idle_time_out {
        s.push_str(&format!(" idle-time-out {t}ms"));
    }
    if !p.known {
        s.push_str(" (bytes it sent were missed)");
    }
    s
}

fn session_row(s: &SessionSnapshot) -> TableRow {
    let both = |f: &dyn Fn(&crate::event::snapshot::SessionSideSnapshot) -> Option<u32>| {
        pair(&PerDir {
            c2s: f(&s.c2s),
            s2c: f(&s.s2c),
        })
    };
    let unsettled = format!("{}/{}", s.c2s.unsettled, s.s2c.unsettled);
    TableRow {
        cells: vec![
            pair(&s.channel),
            s.state.to_string(),
            both(&|x| x.next_outgoing_id),
            both(&|x| x.next_incoming_id),
            both(&|x| x.incoming_window),
            both(&|x| x.outgoing_window),
            sure(unsettled, s.known),
            s.links.to_string(),
        ],
        filter: s
            .channel
            .c2s
            .or(s.channel.s2c)
            .map(|c| format!("channel:{c}")),
        credit: None,
    }
}

fn link_row(l: &LinkSnapshot) -> TableRow {
    let k = l.known;
    let terminus = |a: &Option<String>| a.clone().unwrap_or_else(|| "-".into());
    TableRow {
        cells: vec![
            l.name.clone(),
            pair(&l.channel),
            pair(&l.handle),
            l.role.to_string(),
            l.state.to_string(),
            sure(opt(l.delivery_count), k),
            sure(opt(l.link_credit), k),
            opt(l.available),
            l.drain.to_string(),
            sure(l.unsettled, k),
            terminus(&l.source_address),
            terminus(&l.target_address),
            l.snd_settle_mode.clone(),
            opt(l.rcv_settle_mode.as_ref()),
        ],
        filter: Some(format!("link:{}", quote(&l.name))),
        credit: Some(l.credit_history.clone()),
    }
}

const SESSION_COLUMNS: &[&str] = &[
    "channel",
    "state",
    "next-out",
    "next-in",
    "in-win",
    "out-win",
    "unsettled",
    "links",
];
const LINK_COLUMNS: &[&str] = &[
    "name",
    "channel",
    "handle",
    "role",
    "state",
    "dlv-count",
    "credit",
    "avail",
    "drain",
    "unsettled",
    "source",
    "target",
    "snd-settle",
    "rcv-settle",
];

/// `known: false` somewhere: say what the `?` means.
fn heading(what: &str, n: usize, uncertain: bool) -> String {
    if uncertain {
        format!("{what} ({n})  {UNCERTAIN}: bytes were missed, counts only as seen since")
    } else {
        format!("{what} ({n})")
    }
}

/// The connection in one line, then links (the most looked at), sessions, and the peers' opens.
fn amqp10(s: &Amqp10Snapshot, out: &mut Vec<StateItem>, width: usize) {
    let c = &s.connection;
    out.push(StateItem::line(
        ItemKind::Value,
        format!("connection: {}", c.state),
    ));
    Table {
        heading: heading("links", s.links.len(), s.links.iter().any(|x| !x.known)),
        columns: LINK_COLUMNS,
        // The name; source and target whole (the counts come before the addresses: a
        // narrow pane shows them, and scrolls sideways to the rest).
        flex: &[0],
        whole: &[10, 11],
        rows: s.links.iter().map(link_row).collect(),
    }
    .push_into(out, width);
    Table {
        heading: format!(
            "{}  values client/server",
            heading(
                "sessions",
                s.sessions.len(),
                s.sessions.iter().any(|x| !x.known)
            )
        ),
        columns: SESSION_COLUMNS,
        flex: &[],
        whole: &[],
        rows: s.sessions.iter().map(session_row).collect(),
    }
    .push_into(out, width);
    out.push(StateItem::line(
        ItemKind::Value,
        peer_line("client", &c.client),
    ));
    out.push(StateItem::line(
        ItemKind::Value,
        peer_line("server", &c.server),
    ));
    if let Some(sasl) = &c.sasl {
        out.push(StateItem::line(
            ItemKind::Value,
            format!(
                "sasl: {} (offered {}) outcome {}",
                opt(sasl.mechanism.as_ref()),
                sasl.mechanisms.join(" "),
                opt(sasl.outcome)
            ),
        ));
    }
}

/// A direction's content in progress, in a few characters.
fn content(p: &PendingContent) -> String {
    match p {
        PendingContent::None => "-".into(),
        PendingContent::AwaitingHeader { .. } => "header".into(),
        PendingContent::AwaitingBody { size, remaining } => {
            format!("body {}/{size}", size.saturating_sub(*remaining))
        }
        PendingContent::Unknown => UNCERTAIN.into(),
    }
}

fn channel_row(c: &ChannelSnapshot) -> TableRow {
    let k = !c.uncertain;
    let pc = &c.pending_content;
    let pending_content = if pc.c2s == pc.s2c {
        content(&pc.c2s)
    } else {
        format!(
            "{}/{}",
            content(pc.get(Dir::C2S)),
            content(pc.get(Dir::S2C))
        )
    };
    TableRow {
        cells: vec![
            c.channel.to_string(),
            c.state.to_string(),
            opt(c.prefetch),
            sure(c.unacked_deliveries, k),
            if c.confirm_mode { "on" } else { "off" }.to_string(),
            if c.confirm_mode {
                sure(c.pending_confirms, k)
            } else {
                "-".into()
            },
            c.consumers.join(","),
            pending_content,
            if c.flow_active { "active" } else { "stopped" }.to_string(),
            if c.tx_mode { "tx" } else { "-" }.to_string(),
        ],
        filter: Some(format!("channel:{}", c.channel)),
        credit: None,
    }
}

const CHANNEL_COLUMNS: &[&str] = &[
    "channel",
    "state",
    "prefetch",
    "unacked",
    "confirm",
    "pending",
    "consumers",
    "content",
    "flow",
    "tx",
];

fn amqp091(s: &Amqp091Snapshot, out: &mut Vec<StateItem>, width: usize) {
    let c = &s.connection;
    let mut line = format!("connection: {}", c.state);
    if let Some(v) = &c.vhost {
        line.push_str(&format!(" vhost {v}"));
    }
    for (k, v) in [
        ("frame-max", c.frame_max.map(u64::from)),
        ("channel-max", c.channel_max.map(u64::from)),
        ("heartbeat", c.heartbeat.map(u64::from)),
    ] {
        if let Some(v) = v {
            line.push_str(&format!(" {k} {v}"));
        }
    }
    if c.uncertain {
        line.push_str(" (bytes were missed)");
    }
    out.push(StateItem::line(ItemKind::Value, line));
    Table {
        heading: heading(
            "channels",
            s.channels.len(),
            s.channels.iter().any(|x| x.uncertain),
        ),
        columns: CHANNEL_COLUMNS,
        // The consumers.
        flex: &[6],
        whole: &[],
        rows: s.channels.iter().map(channel_row).collect(),
    }
    .push_into(out, width);
    let product = |p: &Option<String>, v: &Option<String>| {
        format!("{} {}", opt(p.as_ref()), v.as_deref().unwrap_or(""))
            .trim_end()
            .to_string()
    };
    out.push(StateItem::line(
        ItemKind::Value,
        format!(
            "server: {}  client: {}  mechanism {}",
            product(&c.server_product, &c.server_version),
            product(&c.client_product, &c.client_version),
            opt(c.mechanism.as_ref())
        ),
    ));
    if c.blocked {
        out.push(StateItem::line(
            ItemKind::Value,
            format!("blocked: {}", opt(c.blocked_reason.as_ref())),
        ));
    }
}

/// The lines of the state pane for `snapshot` (none before a protocol is known), each
/// table cell at most [`MAX_CELL`] wide. The lines are the same, one for one, at any width.
pub fn state_items(snapshot: &Snapshot) -> Vec<StateItem> {
    state_items_in(snapshot, 0)
}

/// The lines of the state pane for `snapshot` in a pane `width` characters wide: the
/// flexible columns of a table (link names and addresses, consumers) take the width the
/// other columns leave, so a long address shows whole when there is room for it.
pub fn state_items_in(snapshot: &Snapshot, width: usize) -> Vec<StateItem> {
    let mut out = Vec::new();
    protocol_items(&snapshot.detail, &mut out, width);
    out
}

/// What the state pane shows of one protocol's snapshot: implemented for the unit type of
/// each registered protocol.
pub trait StateView {
    /// Its tracker's snapshot.
    type Snapshot;
    /// Append the lines of `s` to `out`, for a pane `width` characters wide (0: any).
    fn items(s: &Self::Snapshot, out: &mut Vec<StateItem>, width: usize);
}

impl StateView for crate::protocol::amqp10::Amqp10 {
    type Snapshot = Amqp10Snapshot;
    fn items(s: &Amqp10Snapshot, out: &mut Vec<StateItem>, width: usize) {
        amqp10(s, out, width)
    }
}

impl StateView for crate::protocol::amqp091::Amqp091 {
    type Snapshot = Amqp091Snapshot;
    fn items(s: &Amqp091Snapshot, out: &mut Vec<StateItem>, width: usize) {
        amqp091(s, out, width)
    }
}

/// Generates, from the protocol table, `protocol_items`: the lines of any protocol's
/// snapshot, by its [`StateView`].
macro_rules! state_views {
    ($($(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $variant:ident($field:ident) => $imp:ty),+ $(,)?) => {
        /// The lines of `detail`'s protocol (none before a protocol is known).
        fn protocol_items(detail: &Detail, out: &mut Vec<StateItem>, width: usize) {
            match detail {
                Detail::None => {}
                $($(#[cfg($cfg)])? Detail::$variant(s) => <$imp as StateView>::items(s, out, width)),+
            }
        }
    };
}

crate::protocol::registered_protocols!(state_views);
