//! `amqpeek decode`: decodes a protocol header and/or frames given as hex (arguments or
//! stdin) or raw bytes (stdin), and prints one line per item (`--json`: one JSON object),
//! with `--tree` each frame's fields and their byte ranges.

mod input;
mod tree;

use std::io::{self, Write};
use std::process::ExitCode;

use bytes::Bytes;

use amqpeek::codec::ProtocolHeader;

use amqpeek::protocol::{Item, ProtocolId, StreamDecoder};
use amqpeek::sinks::{JsonOptions, jsonl};

use crate::EXIT_BAD_INPUT;
use crate::cli::DecodeArgs;

/// Runs `amqpeek decode`: exit 0 when everything decoded, 2 otherwise (with the reason and
/// its offset on stderr).
pub fn run(args: DecodeArgs) -> anyhow::Result<ExitCode> {
    let parsed = if args.hex.len() == 1 && args.hex[0] == "-" {
        input::read_stdin()
    } else {
        input::parse_hex(&args.hex)
    };
    let input = match parsed {
        Ok(b) => b,
        Err(e) => {
            say!("{e}");
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
    };
    let chosen = args.protocol.map_or(ProtocolId::ALL[0], |p| p.0);
    let header = (!input.starts_with(b"AMQP")).then(|| chosen.header());
    let mut decoded = decode(&input, header, !args.show_secrets);
    if decoded.failure.is_some() && header.is_some() && args.protocol.is_none() {
        // Bare frames that are not of the first protocol but decode whole as another are
        // of that one: said first, then decoded as such.
        let other = ProtocolId::ALL[1..].iter().find_map(|p| {
            let d = decode(&input, Some(p.header()), !args.show_secrets);
            d.failure.is_none().then_some((p, d))
        });
        if let Some((p, d)) = other {
            eprintln!(
                "amqpeek: no protocol header, and these are {} frames (not {}): decoded as \
                 such (--protocol chooses)",
                p.title(),
                chosen.title()
            );
            decoded = d;
        }
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for item in &decoded.items {
        print_item(&mut out, item, &args)?;
    }
    out.flush()?;
    match decoded.failure {
        Some(f) => {
            say!("{f}");
            Ok(ExitCode::from(EXIT_BAD_INPUT))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// What decoding the input gave: the items up to the first failure, and that failure.
struct Decoded {
    items: Vec<Item>,
    failure: Option<String>,
}

/// Decodes `input` from its header (`header` `None`) or as bare frames of `header`, masking
/// credentials when `mask`. Items after a malformed or undecodable one are dropped.
fn decode(input: &[u8], header: Option<ProtocolHeader>, mask: bool) -> Decoded {
    let mut decoder = match header {
        None => StreamDecoder::new(),
        Some(h) => StreamDecoder::assuming(h),
    };
    let mut items = Vec::new();
    let mut masker = amqpeek::mask::Masker::new(decoder.framing());
    decoder.push(Bytes::copy_from_slice(input), &mut items);
    if mask {
        masker.items(&decoder, &mut items, &mut Vec::new());
    }
    let mut failure = None;
    let first_bad = items.iter().enumerate().find_map(|(i, it)| match it {
        Item::Malformed { offset, raw, error } => Some((
            i,
            format!(
                "malformed {} byte frame at offset {offset}: {error}",
                raw.len()
            ),
        )),
        Item::Undecodable { offset, error } => {
            Some((i, format!("cannot decode from offset {offset}: {error}")))
        }
        _ => None,
    });
    if let Some((i, f)) = first_bad {
        items.truncate(i);
        failure = Some(f);
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
    Decoded { items, failure }
}

/// One item's line (or JSON object), and with `--tree` a frame's field lines.
fn print_item(out: &mut impl Write, item: &Item, args: &DecodeArgs) -> anyhow::Result<()> {
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
                writeln!(
                    out,
                    "{}",
                    amqpeek::json::to_string(&serde_json::Value::Object(m))
                )?;
            } else {
                writeln!(out, "@{offset} header {}", header.describe())?;
            }
        }
        Item::Frame(fe) => {
            let (offset, raw, frame, message) = (&fe.offset, &fe.raw, &fe.frame, &fe.message);
            if args.json {
                let opts = JsonOptions::default();
                let mut m = jsonl::frame_json(*offset, raw, frame, message.as_ref(), &opts);
                m.insert("v".into(), jsonl::FORMAT_VERSION.into());
                m.insert("event".into(), "frame".into());
                writeln!(
                    out,
                    "{}",
                    amqpeek::json::to_string(&serde_json::Value::Object(m))
                )?;
            } else {
                writeln!(out, "@{offset} ch {} {}", frame.channel(), frame.summary())?;
                if args.tree {
                    write!(out, "{}", tree::lines(*offset, raw, frame))?;
                }
            }
        }
        Item::Malformed { .. } | Item::Undecodable { .. } => {}
    }
    Ok(())
}
