//! The command line's shape (clap derive): subcommands and the option groups they share.
//!
//! Holds only argument definitions; what each command does lives in `main.rs`. Option groups
//! are separate structs so later commands (`replay`, `check`) and flags (`--pcap`, TLS) can be
//! flattened into the commands that need them.

use std::net::SocketAddr;
use std::path::PathBuf;

use amqpeek::protocol::ProtocolId;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// A man-in-the-middle AMQP 0-9-1 / 1.0 relay that decodes, tracks and checks every frame.
#[derive(Debug, Parser)]
#[command(name = "amqpeek", version, about)]
pub struct Cli {
    /// More diagnostics on stderr (-v debug, -vv trace); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decode a protocol header and/or frames given as hex (or hex text or raw bytes on stdin
    /// with `-`).
    Decode(DecodeArgs),
    /// Relay clients to a broker, decoding every frame in both directions.
    Proxy(Box<ProxyArgs>),
    /// Replay a capture (JSONL, pcap, pcapng) through the same pipeline: TUI or text trace,
    /// and `--jsonl` / `--pcap` to convert.
    Replay(ReplayArgs),
    /// Read a capture and give a CI verdict: exit 0 clean, 1 on violations at or above
    /// `--fail-on` (or diagnoses `--fail-on-diagnosis` names), 2 when anything else went wrong
    /// (unreadable input, unwritable output, no AMQP connection in the capture without
    /// `--allow-empty`). Diagnoses (why a flow is stuck) are listed in their own section.
    Check(CheckArgs),
    /// Traffic statistics of a capture, as `tshark -z` gives them: frames and bytes per
    /// performative or method and direction, rates per link and channel, settlement latency
    /// percentiles (transfer->disposition, publish->confirm, deliver->ack); and the diagnoses
    /// (why a flow is stuck).
    Stats(StatsArgs),
    /// Run COMMAND behind the proxy on a free local port, then exit with its status or the
    /// verdict.
    ///
    /// The proxy's address is exported to the command as AMQP_URL (amqp://127.0.0.1:PORT, no
    /// credentials), AMQPEEK_LISTEN (127.0.0.1:PORT) and AMQPEEK_PORT; SIGINT and SIGTERM are
    /// passed to it. Exits with the command's status when it failed (128+N when signal N
    /// ended it), else 0 clean, 1 on findings at or above `--fail-on` (default error), 2 when
    /// anything else went wrong. Never opens the TUI.
    Wrap(Box<WrapArgs>),
    /// Write one archive (.tar.gz) for a bug report or a CI artifact: each capture as pcapng
    /// and JSONL, its `check` report (text, JSON, JUnit), its statistics and diagnoses, an
    /// environment file (versions, command line, OS, the peers' products) and a README.
    /// Credentials masked unless `--show-secrets`.
    Bundle(BundleArgs),
    /// Print a shell completion script: `mkdir -p ~/.local/share/bash-completion/completions &&
    /// amqpeek completions bash > ~/.local/share/bash-completion/completions/amqpeek`.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff), or write them all: `amqpeek man check | man -l -`,
    /// `amqpeek man --dir ~/.local/share/man/man1`.
    Man(ManArgs),
}

/// `amqpeek man`: which page, or where to write them all.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print (`check` prints amqpeek-check(1)); without it, the
    /// page of amqpeek itself.
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "dir")]
    pub page: Option<String>,
    /// Write every page (amqpeek.1 and one amqpeek-SUBCOMMAND.1 per subcommand, with all its
    /// options) into DIR, created if missing, instead of printing one.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// A violation severity, for `--fail-on`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any MUST / MUST NOT broken (or malformed bytes).
    Error,
    /// Also SHOULD / SHOULD NOT.
    Warning,
    /// Anything reported.
    Info,
}

/// Output format of `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// Human-readable.
    Text,
    /// One JSON document.
    Json,
    /// JUnit XML (one test case per rule; and a suite of diagnoses, one case per diagnosis id,
    /// failing only those --fail-on-diagnosis names).
    Junit,
}

/// Which capture to read and how to find AMQP in it.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// The capture: amqpeek JSONL, pcap or pcapng (tcpdump, Wireshark, amqpeek --pcap); `-`
    /// reads it from stdin as it is made (`tcpdump -U -w - port 5672 | amqpeek replay -`).
    #[arg(value_name = "CAPTURE")]
    pub capture: PathBuf,
    /// TCP ports whose streams are AMQP even without a protocol header in sight (captures that
    /// start mid-connection); 5672 and 5671 always are.
    #[arg(long = "port", value_name = "PORT")]
    pub ports: Vec<u16>,
}

/// `amqpeek replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Input.
    #[command(flatten)]
    pub input: CaptureArgs,
    /// Outputs.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Threads decoding connections (without the TUI, reading a file), 1 to 256 [default: the
    /// number of CPUs]; 1 does everything on one thread. Every output is the same whatever the
    /// number.
    #[arg(long, short, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<std::num::NonZeroUsize>,
    /// Exit 1 when a finding at or above this severity was seen, naming the failing rules.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// How findings are judged (with `--fail-on`).
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// How findings are judged: shared by `check`, `proxy --fail-on` and `replay --fail-on`. The
/// same settings can be in a config file (`amqpeek.toml` in the current folder, or
/// `--config`); these add to it.
#[derive(Clone, Debug, Default, Args)]
#[command(next_help_heading = "Judging")]
pub struct PolicyArgs {
    /// Ignore findings of the rules this glob matches (repeatable); a `client:` or `server:`
    /// prefix limits it to that peer's findings. Ignored findings are still counted and
    /// listed, as ignored.
    #[arg(long = "ignore", value_name = "PATTERN")]
    pub ignore: Vec<String>,
    /// Judge the rules RULE matches (a glob; `client:`/`server:` allowed) at LEVEL (error,
    /// warning, info); repeatable, the last match wins.
    #[arg(long = "severity", value_name = "RULE=LEVEL")]
    pub severity: Vec<String>,
    /// Findings of a rule and peer in this baseline (`check --write-baseline`) are known and
    /// do not fail: only new ones do.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Read these settings from PATH [default: ./amqpeek.toml when there is one].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The threshold of diagnosis ID, in seconds (a count for amqp.delivery.redelivery-loop;
    /// seconds before the expiry for amqp10.cbs.token-expiring); repeatable.
    #[arg(long = "diagnosis-threshold", value_name = "ID=SECS")]
    pub diagnosis_threshold: Vec<String>,
    /// Fail (exit 1) when diagnosis ID was made (`all`: any); repeatable. Diagnoses fail
    /// nothing otherwise: they are listed (`check`'s Diagnoses section; in JUnit a suite of
    /// their own, a case per diagnosis id, a failure only when this flag names it, else
    /// passing with the diagnoses in its system-out).
    #[arg(long = "fail-on-diagnosis", value_name = "ID|all")]
    pub fail_on_diagnosis: Vec<String>,
    /// Make no diagnoses: the diagnoser does not run (the config's `diagnoses = false` does
    /// the same). Violations, state and statistics are unchanged; `--fail-on-diagnosis` is
    /// then refused.
    #[arg(long)]
    pub no_diagnoses: bool,
}

/// `amqpeek check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Input.
    #[command(flatten)]
    pub input: CaptureArgs,
    /// Exit 1 when a finding at or above this severity was found [default: the config's
    /// `fail-on`, else error].
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// How findings are judged.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Record today's findings (rule and peer) in FILE as the baseline for `--baseline`; the
    /// exit status is then 0 unless something went wrong.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Verdict format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: CheckFormat,
    /// Write the verdict to PATH instead of stdout.
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Threads inspecting connections, 1 to 256 [default: the number of CPUs]; 1 does
    /// everything on one thread. The verdict is the same whatever the number.
    #[arg(long, short, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<std::num::NonZeroUsize>,
    /// Pass a capture with no AMQP connection in it (by default that is an error, exit 2: a
    /// wrong file, port or filter would otherwise pass the gate having checked nothing).
    #[arg(long)]
    pub allow_empty: bool,
    /// Inspection memory per connection, e.g. 4M (K, M, G: KiB, MiB, GiB): a frame larger than
    /// a quarter of it is decoded from its head.
    #[arg(long, default_value = "4M", value_name = "BYTES", value_parser = parse_inspect_memory)]
    pub inspect_memory: usize,
}

/// Output format of `stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    /// Aligned tables.
    Text,
    /// One JSON document.
    Json,
}

/// `amqpeek stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Input.
    #[command(flatten)]
    pub input: CaptureArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: StatsFormat,
    /// Write the statistics to PATH instead of stdout.
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Count only the frames this filter passes (the TUI's filter language, e.g. `conn:2`,
    /// `link:orders`, `channel:1`), and time only the deliveries they start: the frame that
    /// settles one need not pass. `violations` and `rule:` terms are refused.
    #[arg(long, value_name = "EXPR", value_parser = parse_filter)]
    pub filter: Option<amqpeek::filter::Filter>,
    /// Threads decoding connections, 1 to 256 [default: the number of CPUs]; the numbers are
    /// the same whatever the number.
    #[arg(long, short, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<std::num::NonZeroUsize>,
    /// Inspection memory per connection, e.g. 4M (K, M, G: KiB, MiB, GiB): a frame larger than
    /// a quarter of it is decoded from its head.
    #[arg(long, default_value = "4M", value_name = "BYTES", value_parser = parse_inspect_memory)]
    pub inspect_memory: usize,
    /// The threshold of diagnosis ID, as `check` takes it (seconds; a count for
    /// amqp.delivery.redelivery-loop; seconds before the expiry for amqp10.cbs.token-expiring);
    /// repeatable. The Diagnoses section lists what held its threshold.
    #[arg(long = "diagnosis-threshold", value_name = "ID=SECS")]
    pub diagnosis_threshold: Vec<String>,
    /// Read the diagnosis thresholds from PATH [default: ./amqpeek.toml when there is one].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Make no diagnoses: the diagnoser does not run and the Diagnoses section is empty (the
    /// config's `diagnoses = false` does the same); the statistics are unchanged.
    #[arg(long)]
    pub no_diagnoses: bool,
}

/// Which protocol bare frames (no protocol header in the input) are in: any registered one,
/// by its [`ProtocolId::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocol(pub ProtocolId);

impl ValueEnum for Protocol {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<Protocol>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| ProtocolId::ALL.iter().copied().map(Protocol).collect())
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.title()))
    }
}

/// `amqpeek decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// One JSON object per item (the JSONL frame shape without ts/conn) instead of summaries.
    #[arg(long)]
    pub json: bool,
    /// Protocol of input that does not start with a protocol header [default: the first
    /// listed].
    #[arg(long, value_enum)]
    pub protocol: Option<Protocol>,
    /// Show credentials (SASL responses, 0-9-1 start-ok secrets, put-token tokens, URL
    /// passwords) instead of masking them with `*`.
    #[arg(long)]
    pub show_secrets: bool,
    /// Under each frame's line, its parts and fields one per line, indented by depth, each
    /// with its byte range in the input (`[start..end)`), as `tshark -V -x` does.
    #[arg(long)]
    pub tree: bool,
    /// Hex bytes (concatenated; whitespace and colons ignored, `0x` prefixes allowed), or `-`
    /// for stdin: decoded as hex when it is all hex text (hex digits, whitespace, `:`, `0x`),
    /// else taken as raw bytes.
    #[arg(required = true, value_name = "HEX")]
    pub hex: Vec<String>,
}

/// Where the proxy listens and relays to.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// Address to listen on for clients.
    #[arg(long, default_value = "127.0.0.1:5673")]
    pub listen: SocketAddr,
    /// The broker (host:port).
    #[arg(long, default_value = "127.0.0.1:5672")]
    pub upstream: String,
    /// Seconds to wait for the broker to accept a connection (more than 0, at most 86400: a
    /// day).
    #[arg(long, default_value_t = 5.0, value_name = "SECS", value_parser = parse_connect_timeout)]
    pub connect_timeout: f64,
    /// Connections relayed at once, at least 1; at the limit new clients wait in the listen
    /// backlog until one closes [default: from the open-files limit, two descriptors per
    /// connection].
    #[arg(long, value_name = "N", value_parser = parse_max_connections)]
    pub max_connections: Option<usize>,
    /// Seconds a client has to send its protocol header before it is closed (0: no limit; at
    /// most 86400, a day).
    #[arg(long, default_value_t = 30.0, value_name = "SECS", value_parser = parse_timeout)]
    pub handshake_timeout: f64,
    /// Close a connection that passes no byte either way for this many seconds (0: no limit;
    /// at most 86400, a day) [default: off].
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    pub idle_timeout: Option<f64>,
}

/// What is shown and captured (shared by every command that produces events).
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Never start the TUI: print the text trace (the default when stdout is not a terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// No text trace on stdout.
    #[arg(short, long)]
    pub quiet: bool,
    /// Write a JSON Lines capture to PATH (`-`: stdout, e.g. into `jq`).
    #[arg(long, value_name = "PATH")]
    pub jsonl: Option<PathBuf>,
    /// Write a pcapng capture to PATH (opens in Wireshark; violations as packet comments; `-`:
    /// stdout, e.g. into `wireshark -k -i -`).
    #[arg(long, value_name = "PATH")]
    pub pcap: Option<PathBuf>,
    /// Show credentials instead of masking them with '*'.
    #[arg(long)]
    pub show_secrets: bool,
    /// Truncate message bodies in captures after this many bytes (only this much of each body
    /// is kept while a message is assembled).
    #[arg(long, default_value_t = 4096, value_name = "BYTES")]
    pub max_body: usize,
    /// Inspection memory per connection, e.g. 4M (K, M, G: KiB, MiB, GiB): a frame larger than
    /// a quarter of it is decoded from its head and the rest streamed to the captures.
    #[arg(long, default_value = "4M", value_name = "BYTES", value_parser = parse_inspect_memory)]
    pub inspect_memory: usize,
    /// Show and write only the frames this filter passes (the TUI's filter language, e.g.
    /// `name:transfer handle:1 settled:false`); the TUI starts with it. Never filters what is
    /// relayed, nor the verdict.
    #[arg(long, value_name = "EXPR", value_parser = parse_filter)]
    pub filter: Option<amqpeek::filter::Filter>,
}

/// `--inspect-memory`: bytes, with an optional K, M or G (binary) suffix, at least 64K.
pub fn parse_inspect_memory(s: &str) -> Result<usize, String> {
    let bytes = parse_bytes(s)?;
    let min = amqpeek::codec::limits::MIN_INSPECT_MEMORY;
    if bytes < min {
        return Err(format!("{s:?} is below the least budget, {}K", min >> 10));
    }
    Ok(bytes)
}

/// `--spool-size`: bytes, with an optional K, M or G (binary) suffix; 0 writes no spool.
pub fn parse_spool_size(s: &str) -> Result<u64, String> {
    parse_bytes(s).map(|n| n as u64)
}

/// A number of bytes, with an optional K, M or G (binary) suffix.
fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit
        .trim_end_matches(['B', 'b', 'i'])
        .to_ascii_uppercase()
        .as_str()
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => {
            return Err(format!(
                "{s:?}: a number of bytes, optionally with K, M or G"
            ));
        }
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{s:?}: a number of bytes, optionally with K, M or G"))?;
    n.checked_mul(1usize << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// The most threads `--jobs` starts: more than this only costs memory (each thread holds its
/// stack and its connections' state) without decoding any faster.
pub const MAX_JOBS: usize = 256;

/// The longest timeout a flag takes, in seconds (a day): longer is a typo, not a deadline.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// `--jobs`: 1 to [`MAX_JOBS`].
fn parse_jobs(s: &str) -> Result<std::num::NonZeroUsize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_JOBS).contains(n))
        .and_then(std::num::NonZeroUsize::new)
        .ok_or_else(|| format!("{s:?}: a number of threads from 1 to {MAX_JOBS}"))
}

/// `--max-connections`: at least 1 (a proxy that relays nothing is no proxy).
fn parse_max_connections(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| format!("{s:?}: a number of connections, at least 1"))
}

/// Seconds from 0 to [`MAX_TIMEOUT_SECS`] (`--handshake-timeout`, `--idle-timeout`; 0: none).
fn parse_timeout(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| (0.0..=MAX_TIMEOUT_SECS).contains(x))
        .ok_or_else(|| format!("{s:?}: seconds from 0 (no limit) to {MAX_TIMEOUT_SECS} (a day)"))
}

/// `--connect-timeout`: seconds, more than 0, at most [`MAX_TIMEOUT_SECS`].
fn parse_connect_timeout(s: &str) -> Result<f64, String> {
    parse_timeout(s)
        .ok()
        .filter(|x| *x > 0.0)
        .ok_or_else(|| format!("{s:?}: seconds, more than 0, at most {MAX_TIMEOUT_SECS} (a day)"))
}

fn parse_filter(s: &str) -> Result<amqpeek::filter::Filter, String> {
    amqpeek::filter::Filter::parse(s).map_err(|e| e.to_string())
}

/// Whether a path is `-`: stdin for a capture read, stdout for a capture written.
pub fn is_stdio(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

impl OutputArgs {
    /// Whether a capture goes to stdout (`--jsonl -` or `--pcap -`): then neither the trace nor
    /// the TUI does.
    pub fn capture_on_stdout(&self) -> bool {
        [&self.jsonl, &self.pcap]
            .into_iter()
            .flatten()
            .any(|p| is_stdio(p))
    }

    /// Whether the text trace goes to stdout.
    pub fn trace(&self) -> bool {
        !self.quiet && !self.capture_on_stdout()
    }
}

/// `amqpeek proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Addresses.
    #[command(flatten)]
    pub net: NetArgs,
    /// Outputs.
    #[command(flatten)]
    pub output: OutputArgs,
    /// At shutdown, exit 1 if a finding at or above this severity was seen, naming the
    /// failing rules (for running a CI job's integration tests through the proxy).
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// How findings are judged (with `--fail-on`).
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// TLS.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Threads inspecting connections (each connection on one of them), 1 to 256 [default: the
    /// number of CPUs]. Per connection, every output is in order whatever the number.
    #[arg(long, short, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<std::num::NonZeroUsize>,
    /// At exit, write a bundle of the run (see `amqpeek bundle`) to PATH: of the --jsonl or
    /// --pcap capture, or of one kept for it meanwhile; with --ring, also one beside each dump.
    #[arg(long, value_name = "PATH")]
    pub bundle: Option<PathBuf>,
    /// The ring capture.
    #[command(flatten)]
    pub ring: RingArgs,
    /// The terminal UI's spool.
    #[command(flatten)]
    pub spool: SpoolArgs,
    /// Prometheus metrics.
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// `amqpeek bundle`.
#[derive(Debug, Args)]
pub struct BundleArgs {
    /// The captures (amqpeek JSONL, pcap, pcapng): one folder of the archive each.
    #[arg(required = true, value_name = "CAPTURE")]
    pub captures: Vec<PathBuf>,
    /// The archive to write (a gzipped tar, e.g. report.tar.gz).
    #[arg(long, short, value_name = "PATH")]
    pub output: PathBuf,
    /// Write credentials as they are instead of masking them with '*'.
    #[arg(long)]
    pub show_secrets: bool,
    /// Truncate message bodies in the JSONL after this many bytes.
    #[arg(long, default_value_t = 4096, value_name = "BYTES")]
    pub max_body: usize,
    /// Inspection memory per connection, e.g. 4M (K, M, G: KiB, MiB, GiB).
    #[arg(long, default_value = "4M", value_name = "BYTES", value_parser = parse_inspect_memory)]
    pub inspect_memory: usize,
    /// The check reports' verdict fails at or above this severity [default: the config's
    /// `fail-on`, else error].
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// How findings are judged in the check reports.
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// `proxy --ring`: the most recent traffic in memory, written out when something goes wrong.
#[derive(Debug, Args)]
#[command(next_help_heading = "Ring capture")]
pub struct RingArgs {
    /// Keep the most recent SIZE of masked records (as JSONL) of all connections in memory,
    /// each connection's opening frames included, e.g. 64M (K, M, G); write nothing until a
    /// --dump-on trigger fires or SIGUSR1 asks.
    #[arg(long, value_name = "SIZE", value_parser = parse_ring_size)]
    pub ring: Option<usize>,
    /// Dump the ring on a finding at or above `error` or `warning`, on any `diagnosis`, or on
    /// the rule or diagnosis of this id; repeatable [default: error].
    #[arg(long = "dump-on", value_name = "error|warning|diagnosis|ID", requires = "ring",
          value_parser = parse_trigger)]
    pub dump_on: Vec<amqpeek::ring::Trigger>,
    /// Seconds after the trigger whose traffic the dump still holds (0 to 86400).
    #[arg(long, default_value_t = 5.0, value_name = "SECS", value_parser = parse_timeout,
          requires = "ring")]
    pub dump_after: f64,
    /// Where dumps are written (amqpeek-ring-TIME-TRIGGER.jsonl and .pcapng).
    #[arg(long, default_value = ".", value_name = "DIR", requires = "ring")]
    pub dump_dir: PathBuf,
    /// Dumps kept: past this many, the oldest of this run is removed.
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = parse_max_connections,
          requires = "ring")]
    pub dump_keep: usize,
}

/// `--ring`: a size as `--inspect-memory` takes it, at least 64K.
fn parse_ring_size(s: &str) -> Result<usize, String> {
    parse_inspect_memory(s)
}

fn parse_trigger(s: &str) -> Result<amqpeek::ring::Trigger, String> {
    amqpeek::ring::Trigger::parse(s)
}

/// Where the terminal UI keeps the frames it drops from memory when no capture is written.
#[derive(Debug, Args)]
pub struct SpoolArgs {
    /// Keep the TUI's spool (every frame it was shown, masked, as JSONL in four segment
    /// files; the TUI pages it, `amqpeek replay` reads each) in this folder after the run
    /// [default: the temporary folder, removed at exit].
    #[arg(long, value_name = "DIR")]
    pub spool_dir: Option<PathBuf>,
    /// The most the TUI's spool holds on disk: a ring that removes its oldest quarter to take
    /// newer frames (0: no spool).
    #[arg(long, default_value = "512M", value_name = "BYTES", value_parser = parse_spool_size)]
    pub spool_size: u64,
}

/// Prometheus metrics and health endpoints (docs/metrics.md).
#[derive(Debug, Args)]
#[command(next_help_heading = "Metrics")]
pub struct MetricsArgs {
    /// Serve /metrics (Prometheus text or OpenMetrics), /healthz and /readyz on ADDR
    /// (e.g. 127.0.0.1:9464).
    #[arg(long = "metrics", value_name = "ADDR")]
    pub addr: Option<std::net::SocketAddr>,
    /// Also count the N AMQP 1.0 links with the most traffic under their own `link` label
    /// (1 to 1000), the rest summed under `link="other"`.
    #[arg(long, value_name = "N", requires = "addr", value_parser = parse_top_links)]
    pub metrics_top_links: Option<usize>,
}

/// The most links `--metrics-top-links` labels: each adds three series per direction.
pub const MAX_TOP_LINKS: usize = 1000;

/// `--metrics-top-links`: 1 to [`MAX_TOP_LINKS`].
fn parse_top_links(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_TOP_LINKS).contains(n))
        .ok_or_else(|| format!("{s:?}: a number of links from 1 to {MAX_TOP_LINKS}"))
}

/// `amqpeek wrap`: the proxy's options (listening on a free local port unless `--listen`
/// says otherwise; never the TUI) and the command to run behind `--`.
#[derive(Debug, Args)]
#[command(
    mut_arg("listen", |a| a.default_value("127.0.0.1:0")
        .help("Address to listen on for the command's clients (port 0: a free one)")),
    mut_arg("no_tui", |a| a.hide(true)),
)]
pub struct WrapArgs {
    /// Addresses.
    #[command(flatten)]
    pub net: NetArgs,
    /// Outputs (`--jsonl`, `--pcap` to files: the command has stdout).
    #[command(flatten)]
    pub output: OutputArgs,
    /// Exit 1 if a finding at or above this severity was seen, naming the failing rules.
    #[arg(long, value_enum, value_name = "SEVERITY", default_value = "error")]
    pub fail_on: FailOn,
    /// How findings are judged.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// TLS.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Threads inspecting connections, 1 to 256 [default: the number of CPUs].
    #[arg(long, short, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<std::num::NonZeroUsize>,
    /// When the command is done, write a bundle of the run (see `amqpeek bundle`) to PATH.
    #[arg(long, value_name = "PATH")]
    pub bundle: Option<PathBuf>,
    /// Prometheus metrics.
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// The command to run and its arguments (after `--`), with stdin, stdout and stderr
    /// inherited.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// TLS on either leg of the proxy (AMQPS, Azure Service Bus / Event Hubs).
#[derive(Debug, Args)]
#[command(next_help_heading = "TLS")]
pub struct TlsArgs {
    /// Connect to the broker over TLS (implied by an `amqps://host:port` upstream).
    #[arg(long)]
    pub upstream_tls: bool,
    /// Also trust this CA certificate (PEM) for the broker, besides the system roots.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Do not verify the broker's certificate (warned about on every connection).
    #[arg(long)]
    pub insecure: bool,
    /// Server name to send (SNI) and verify [default: the upstream host].
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// Accept TLS from clients (with --cert/--key, or a certificate generated for localhost).
    #[arg(long)]
    pub listen_tls: bool,
    /// Certificate chain (PEM) shown to clients; also enables AMQP's TLS upgrade (AMQP 2 1 0 0).
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// Private key (PEM) for --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Where to write the generated certificate (PEM) for clients to trust.
    #[arg(long, value_name = "PATH")]
    pub cert_out: Option<PathBuf>,
    /// Write the upstream leg's TLS secrets to FILE (SSLKEYLOGFILE format, for Wireshark).
    #[arg(long, value_name = "FILE")]
    pub keylog: Option<PathBuf>,
}

impl TlsArgs {
    /// The files these options write (`--keylog`, `--cert-out`), with their flags.
    pub fn outputs(&self) -> Vec<(&'static str, &std::path::Path)> {
        [("--keylog", &self.keylog), ("--cert-out", &self.cert_out)]
            .into_iter()
            .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
            .collect()
    }

    /// The library's view of these options.
    pub fn options(&self) -> amqpeek::proxy::tls::TlsOptions {
        amqpeek::proxy::tls::TlsOptions {
            upstream_tls: self.upstream_tls,
            ca: self.ca.clone(),
            insecure: self.insecure,
            sni: self.sni.clone(),
            listen_tls: self.listen_tls,
            cert: self.cert.clone(),
            key: self.key.clone(),
            cert_out: self.cert_out.clone(),
            keylog: self.keylog.clone(),
        }
    }
}
