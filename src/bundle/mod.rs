//! `amqpeek bundle`: one archive (a gzipped tar) for a bug report or a CI artifact. For each
//! capture it holds the traffic as pcapng and as JSONL, the `check` report in text, JSON and
//! JUnit, the statistics in text and JSON, and the diagnoses still active at the capture's end
//! and those that ended; at the top an environment file (amqpeek's version, its command line,
//! the OS, the peers' products and versions) and a README saying how to open each file.
//!
//! Every capture is read once through the offline pipeline into all of those outputs
//! ([`inspect`]), whatever its format: a pcap from tcpdump comes out masked as amqpeek's own
//! captures are, unless `show_secrets` says otherwise.

mod archive;
mod environment;
mod inspect;
mod readme;

use std::path::{Path, PathBuf};

pub use environment::{Peer, masked_command_line};
pub use inspect::{Inspected, inspect};

use crate::verdict::Policy;

/// How a bundle is made.
#[derive(Clone, Debug)]
pub struct BundleOptions {
    /// Write credentials as they were instead of masking them.
    pub show_secrets: bool,
    /// Message bodies in the JSONL are cut after this many bytes.
    pub max_body: usize,
    /// Inspection memory per connection (`--inspect-memory`).
    pub inspect_memory: usize,
    /// How the findings are judged in the check reports.
    pub policy: Policy,
    /// The command line that made the bundle (written masked into the environment file).
    pub command_line: Vec<String>,
}

/// What went wrong making a bundle; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A capture could not be read at all.
    #[error("{path}: {message}")]
    Input {
        /// The capture.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// An output (the archive, or a file staged for it) could not be written.
    #[error("{path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What one bundle holds, for the caller's message.
#[derive(Debug, Default)]
pub struct BundleSummary {
    /// Paths inside the archive, in the order written.
    pub entries: Vec<String>,
    /// Connections over all captures.
    pub connections: u64,
}

/// Write the bundle of `captures` to `out` (created or replaced: written beside it first, then
/// renamed, so a reader never sees half an archive).
pub fn write(
    captures: &[PathBuf],
    out: &Path,
    opts: &BundleOptions,
) -> Result<BundleSummary, BundleError> {
    let staging = archive::Staging::beside(out)?;
    let mut parts = Vec::new();
    let mut peers = Vec::new();
    let mut summary = BundleSummary::default();
    for (i, capture) in captures.iter().enumerate() {
        let folder = folder_name(i, capture);
        let dir = staging.folder(&folder)?;
        let done = inspect(capture, &dir, opts)?;
        summary.connections += done.connections;
        peers.extend(done.peers.iter().cloned().map(|p| (folder.clone(), p)));
        parts.push((folder, dir));
    }
    let env = environment::render(&opts.command_line, &peers);
    let readme = readme::render(&parts.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>());
    summary.entries = staging.finish(out, &readme, &env, &parts)?;
    Ok(summary)
}

/// The folder of capture `i` in the archive: its file name without the extension, numbered so
/// two captures of the same name stay apart.
fn folder_name(i: usize, capture: &Path) -> String {
    let stem = capture
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let clean = clean.trim_start_matches('.');
    format!(
        "{}-{}",
        i + 1,
        if clean.is_empty() { "capture" } else { clean }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_are_numbered_and_keep_only_safe_characters() {
        assert_eq!(folder_name(0, Path::new("/tmp/a b.jsonl")), "1-a_b");
        assert_eq!(folder_name(1, Path::new("../../x.pcapng")), "2-x");
        assert_eq!(folder_name(2, Path::new("..")), "3-capture");
        assert_eq!(folder_name(0, Path::new("é\n.jsonl")), "1-__");
    }
}
