//! The bundle's environment file: amqpeek's version, the command line that made the bundle
//! (URL passwords masked), the operating system, and the peers' products and versions as
//! they announced them (AMQP 1.0 `open` properties, 0-9-1 `connection.start` server- and
//! `connection.start-ok` client-properties).

use std::collections::BTreeMap;

use crate::base::escape::Escaped;
use crate::event::{Event, EventKind};
use crate::pipeline::Sink;
use crate::sinks::JsonOptions;

/// Distinct peers kept (a capture of a million connections names a few products).
const MAX_PEERS: usize = 64;

/// A peer as it named itself.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Peer {
    /// `client` or `server`.
    pub side: &'static str,
    /// Its `product` property.
    pub product: String,
    /// Its `version` property (empty when absent).
    pub version: String,
    /// Its `platform` property (empty when absent).
    pub platform: String,
}

/// A sink that notes the peers' properties from the frames that carry them.
#[derive(Debug, Default)]
pub(super) struct PeerSink {
    seen: BTreeMap<Peer, u64>,
}

impl PeerSink {
    /// The peers seen, each once.
    pub(super) fn into_peers(self) -> Vec<Peer> {
        self.seen.into_keys().collect()
    }
}

/// Which properties of which frame name a peer: (frame name, field, side).
const CARRIERS: [(&str, &str, Option<&str>); 3] = [
    ("open", "properties", None),
    ("connection.start", "server-properties", Some("server")),
    ("connection.start-ok", "client-properties", Some("client")),
];

impl Sink for PeerSink {
    fn event(&mut self, ev: &Event) -> std::io::Result<()> {
        let EventKind::Frame(f) = &ev.kind else {
            return Ok(());
        };
        let name = f.frame.name();
        let Some((_, field, side)) = CARRIERS.iter().find(|(n, _, _)| *n == name) else {
            return Ok(());
        };
        if self.seen.len() >= MAX_PEERS {
            return Ok(());
        }
        let Some(json) = crate::sinks::jsonl::event_json(ev, &JsonOptions { max_body: 0 }) else {
            return Ok(());
        };
        let props = &json["fields"][field];
        let text = |k: &str| props[k].as_str().unwrap_or_default().to_string();
        let product = text("product");
        if product.is_empty() {
            return Ok(());
        }
        let side = side.unwrap_or(match f.dir {
            crate::event::Dir::C2S => "client",
            crate::event::Dir::S2C => "server",
        });
        let peer = Peer {
            side,
            product,
            version: text("version"),
            platform: text("platform"),
        };
        *self.seen.entry(peer).or_default() += 1;
        Ok(())
    }
}

/// `args` joined by spaces, every `amqp://user:password@` password replaced by `*`.
pub fn masked_command_line(args: &[String]) -> String {
    let mut line = args.join(" ").into_bytes();
    for r in crate::codec::credential::url_passwords(&line) {
        line[r].fill(b'*');
    }
    String::from_utf8_lossy(&line).into_owned()
}

/// The environment file; `peers` come with the folder of the capture they were seen in.
pub(super) fn render(command_line: &[String], peers: &[(String, Peer)]) -> String {
    let mut t = String::new();
    t.push_str(&format!("amqpeek: {}\n", env!("CARGO_PKG_VERSION")));
    t.push_str(&format!(
        "command: {}\n",
        Escaped(&masked_command_line(command_line))
    ));
    t.push_str(&format!(
        "os: {} {}{}\n",
        std::env::consts::OS,
        std::env::consts::ARCH,
        os_release()
            .map(|r| format!(" ({})", Escaped(&r)))
            .unwrap_or_default()
    ));
    t.push_str(&format!(
        "written: {}\n",
        crate::event::Timestamp::now().rfc3339()
    ));
    t.push_str(&format!("peers: {}\n", peers.len()));
    for (folder, p) in peers {
        t.push_str(&format!(
            "  {folder}: {} {} {}{}\n",
            p.side,
            Escaped(&p.product),
            Escaped(&p.version),
            if p.platform.is_empty() {
                String::new()
            } else {
                format!(" on {}", Escaped(&p.platform))
            }
        ));
    }
    t
}

/// The distribution and kernel, where the system says (`/etc/os-release`, `uname -r`'s
/// file).
fn os_release() -> Option<String> {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|k| format!("kernel {}", k.trim()));
    let parts: Vec<String> = [pretty, kernel].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_masks_url_passwords_and_keeps_the_rest() {
        let args: Vec<String> = [
            "amqpeek",
            "proxy",
            "--upstream",
            "amqp://bob:s3cret@host:5672",
        ]
        .map(String::from)
        .to_vec();
        let line = masked_command_line(&args);
        assert_eq!(line, "amqpeek proxy --upstream amqp://bob:******@host:5672");
    }
}
