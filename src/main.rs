//! The `amqpeek` command line: parses arguments (see `cli.rs`), sets up diagnostics on stderr,
//! and runs a command. The only place that uses `anyhow`.

mod cli;

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Parser;

use amqpeek::codec::{Item, ProtocolHeader, StreamDecoder};
use amqpeek::pipeline::InspectOptions;
use amqpeek::proxy::{BoxSink, Proxy, ProxyConfig, shutdown};
use amqpeek::sinks::{JsonOptions, JsonlSink, TraceSink, jsonl};
use cli::{Cli, Command, DecodeArgs, Protocol, ProxyArgs};

/// Exit status for input the tool cannot decode.
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let result = match cli.command {
        Command::Decode(args) => decode(args),
        Command::Proxy(args) => proxy(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("amqpeek: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "amqpeek=info",
        1 => "amqpeek=debug",
        _ => "amqpeek=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_target(false)
        .init();
}

/// Hex digits from every argument, concatenated; whitespace and ':' ignored.
fn parse_hex(args: &[String]) -> Result<Vec<u8>, String> {
    let mut digits = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        for (pos, c) in arg.char_indices() {
            if c.is_whitespace() || c == ':' {
                continue;
            }
            match c.to_digit(16) {
                Some(d) => digits.push(d as u8),
                None => {
                    return Err(format!(
                        "invalid hex digit {c:?} at character {pos} of argument {}",
                        i + 1
                    ));
                }
            }
        }
    }
    if digits.len() % 2 != 0 {
        return Err(format!(
            "odd number of hex digits ({}): the last byte is incomplete",
            digits.len()
        ));
    }
    Ok(digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect())
}

fn decode(args: DecodeArgs) -> anyhow::Result<ExitCode> {
    let input = if args.hex.len() == 1 && args.hex[0] == "-" {
        let mut buf = Vec::new();
        io::stdin().read_to_end(&mut buf).context("reading stdin")?;
        buf
    } else {
        match parse_hex(&args.hex) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("amqpeek: {e}");
                return Ok(ExitCode::from(EXIT_BAD_INPUT));
            }
        }
    };
    let mut decoder = if input.starts_with(b"AMQP") {
        StreamDecoder::new()
    } else {
        StreamDecoder::assuming(match args.protocol {
            Some(Protocol::Amqp091) => ProtocolHeader::Amqp091,
            Some(Protocol::Amqp10) | None => ProtocolHeader::Amqp10,
        })
    };
    let mut items = Vec::new();
    decoder.push(Bytes::from(input), &mut items);
    let opts = JsonOptions::default();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut failure = None;
    for item in &items {
        match item {
            Item::Header {
                offset,
                raw,
                header,
            } => {
                if args.json {
                    let mut m = jsonl::header_json(*offset, *header, raw);
                    m.insert("v".into(), jsonl::FORMAT_VERSION.into());
                    m.insert("event".into(), "header".into());
                    writeln!(out, "{}", serde_json::Value::Object(m))?;
                } else {
                    writeln!(out, "header {}", header.describe())?;
                }
            }
            Item::Frame {
                offset,
                raw,
                frame,
                message,
            } => {
                if args.json {
                    let mut m = jsonl::frame_json(*offset, raw, frame, message.as_ref(), &opts);
                    m.insert("v".into(), jsonl::FORMAT_VERSION.into());
                    m.insert("event".into(), "frame".into());
                    writeln!(out, "{}", serde_json::Value::Object(m))?;
                } else {
                    writeln!(out, "{}", frame.summary())?;
                }
            }
            Item::Malformed { offset, raw, error } => {
                failure = Some(format!(
                    "malformed {} byte frame at offset {offset}: {error}",
                    raw.len()
                ));
                break;
            }
            Item::Undecodable { offset, error } => {
                failure = Some(format!("cannot decode from offset {offset}: {error}"));
                break;
            }
        }
    }
    if failure.is_none() && decoder.buffered() > 0 {
        let at = decoder.offset() - decoder.buffered() as u64;
        failure = Some(format!(
            "input ends inside a frame at offset {at} (only {} bytes of it given)",
            decoder.buffered()
        ));
    }
    if failure.is_none() && items.is_empty() {
        failure = Some("no input".into());
    }
    out.flush()?;
    match failure {
        Some(f) => {
            eprintln!("amqpeek: {f}");
            Ok(ExitCode::from(EXIT_BAD_INPUT))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

fn proxy(args: ProxyArgs) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(proxy_async(args))
}

async fn proxy_async(args: ProxyArgs) -> anyhow::Result<ExitCode> {
    let ProxyArgs { net, output, tls } = args;
    let spec = amqpeek::proxy::tls::UpstreamSpec::parse(&net.upstream);
    let upstream = tokio::net::lookup_host(&spec.address)
        .await
        .with_context(|| format!("resolving upstream {}", net.upstream))?
        .next()
        .with_context(|| format!("upstream {} has no address", net.upstream))?;
    if !(net.connect_timeout.is_finite() && net.connect_timeout > 0.0) {
        bail!("--connect-timeout must be a positive number of seconds");
    }
    let mut config = ProxyConfig::new(net.listen, upstream);
    config.connect_timeout = Duration::from_secs_f64(net.connect_timeout);
    config.inspect = InspectOptions {
        show_secrets: output.show_secrets,
    };
    config.tls = tls_config(&spec, &tls)?;

    let mut sinks: Vec<BoxSink> = Vec::new();
    // No TUI yet: the text trace is the live view, with or without --no-tui.
    let _ = output.no_tui;
    if !output.quiet {
        sinks.push(Box::new(TraceSink::new(BufWriter::new(io::stdout()))));
    }
    if let Some(path) = &output.jsonl {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        sinks.push(Box::new(JsonlSink::new(
            BufWriter::with_capacity(256 * 1024, file),
            JsonOptions {
                max_body: output.max_body,
            },
        )));
    }

    let proxy = Proxy::bind(config)
        .await
        .with_context(|| format!("listening on {}", net.listen))?;
    tracing::info!(
        "listening on {}, relaying to {upstream}",
        proxy.local_addr()?
    );
    let summary = proxy.run(sinks, shutdown::first_signal()).await?;
    tracing::info!("stopped after {} connection(s)", summary.connections);
    Ok(ExitCode::SUCCESS)
}

/// TLS set-up from the command line: the config, plus start-up notes on stderr.
fn tls_config(
    spec: &amqpeek::proxy::tls::UpstreamSpec,
    args: &cli::TlsArgs,
) -> anyhow::Result<Option<std::sync::Arc<amqpeek::proxy::tls::TlsConfig>>> {
    let (config, generated) = amqpeek::proxy::tls::TlsConfig::from_options(spec, &args.options())
        .context("setting up TLS")?;
    if let Some(g) = generated {
        tracing::info!(
            "clients: trust the generated certificate {} (for localhost, 127.0.0.1, ::1)",
            g.pem_path.display()
        );
    }
    if let Some(c) = &config {
        if c.insecure {
            tracing::warn!(
                "--insecure: the upstream's TLS certificate is NOT verified; anyone on the path can read and change this traffic"
            );
        }
        if let Some(k) = &args.keylog {
            tracing::info!("writing the upstream leg's TLS secrets to {}", k.display());
        }
    }
    Ok(config.map(std::sync::Arc::new))
}

#[cfg(test)]
mod tests {
    use super::parse_hex;

    #[test]
    fn hex_tolerates_whitespace_and_colons_across_arguments() {
        let args = vec!["41:4d 51".to_string(), "50".to_string()];
        assert_eq!(parse_hex(&args).unwrap(), b"AMQP");
        assert!(parse_hex(&["4g".to_string()]).unwrap_err().contains("'g'"));
        assert!(parse_hex(&["414".to_string()]).unwrap_err().contains("odd"));
    }
}
