//! The command line's shape (clap derive): subcommands and the option groups they share.
//!
//! Holds only argument definitions; what each command does lives in `main.rs`. Option groups
//! are separate structs so later commands (`replay`, `check`) and flags (`--pcap`, TLS) can be
//! flattened into the commands that need them.

use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// Decode a protocol header and/or frames given as hex (or raw bytes on stdin with `-`).
    Decode(DecodeArgs),
    /// Relay clients to a broker, decoding every frame in both directions.
    Proxy(ProxyArgs),
}

/// Which protocol bare frames (no protocol header in the input) are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    /// AMQP 1.0 (and its SASL frames).
    Amqp10,
    /// AMQP 0-9-1.
    Amqp091,
}

/// `amqpeek decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// One JSON object per item (the JSONL frame shape without ts/conn) instead of summaries.
    #[arg(long)]
    pub json: bool,
    /// Protocol of input that does not start with a protocol header [default: amqp10].
    #[arg(long, value_enum)]
    pub protocol: Option<Protocol>,
    /// Hex bytes (concatenated; whitespace and colons ignored), or `-` for raw bytes on stdin.
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
    /// Seconds to wait for the broker to accept a connection.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub connect_timeout: f64,
}

/// What is shown and captured (shared by every command that produces events).
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Never start the TUI: print the text trace (the TUI is not there yet, so this is always
    /// the case for now).
    #[arg(long)]
    pub no_tui: bool,
    /// No text trace on stdout.
    #[arg(short, long)]
    pub quiet: bool,
    /// Write a JSON Lines capture to PATH.
    #[arg(long, value_name = "PATH")]
    pub jsonl: Option<PathBuf>,
    /// Show credentials instead of masking them with '*'.
    #[arg(long)]
    pub show_secrets: bool,
    /// Truncate message bodies in captures after this many bytes.
    #[arg(long, default_value_t = 4096, value_name = "BYTES")]
    pub max_body: usize,
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
}
