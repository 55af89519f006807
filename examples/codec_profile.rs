//! A fixed amount of codec work for instruction-count profiling (`valgrind --tool=callgrind`),
//! where wall-clock benchmarks are too noisy on a shared machine: the frame mixes of
//! benches/amqp10_codec.rs and benches/amqp091_codec.rs decoded a given number of rounds.
//!
//! `codec_profile <amqp10|amqp091|amqp091-stream|inspect-flood|inspect-flood-nodiag> [rounds]`
//! prints the frames decoded; divide the instruction count of the run (minus a run with 0
//! rounds, for setup) by it.

/// The allocator the `amqpeek` binary uses, so the in-process proxy runs as shipped.
#[global_allocator]
static GLOBAL: amqpeek::base::allocator::Allocator = amqpeek::base::allocator::Allocator;

use std::hint::black_box;

#[path = "../benches/support/mixes.rs"]
mod mixes;

use amqpeek::codec::amqp091::{ContentAssembler, decode_frame};
use amqpeek::codec::{ProtocolHeader, amqp10};
use amqpeek::protocol::StreamDecoder;
use bytes::Bytes;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "amqp10".into());
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut frames = 0usize;
    match which.as_str() {
        "amqp10" => {
            let mix: Vec<Bytes> = mixes::amqp10_mix().into_iter().map(|(f, _)| f).collect();
            for _ in 0..rounds {
                for f in &mix {
                    black_box(amqp10::decode_frame(black_box(f.clone()), 0).unwrap());
                    frames += 1;
                }
            }
        }
        "amqp091" => {
            let mix = mixes::amqp091_mix(1);
            let mut asm = ContentAssembler::default();
            for _ in 0..rounds {
                for f in &mix {
                    let fr = decode_frame(black_box(f.clone()), 0).unwrap();
                    black_box(asm.push(&fr));
                    black_box(&fr);
                    frames += 1;
                }
            }
        }
        "amqp091-stream" => {
            let mix = mixes::amqp091_mix(1);
            let per_push = 1000;
            let stream: Bytes = (0..per_push)
                .flat_map(|_| mix.iter().flat_map(|f| f.iter().copied()))
                .collect::<Vec<u8>>()
                .into();
            let mut items = Vec::with_capacity(per_push * mix.len());
            for _ in 0..rounds / per_push {
                let mut d = StreamDecoder::assuming(ProtocolHeader::Amqp091);
                items.clear();
                d.push(stream.clone(), &mut items);
                frames += items.len();
                black_box(&items);
            }
        }
        "inspect-flood" | "inspect-flood-nodiag" => {
            // What the proxy's inspection thread does for the relay bench's small-transfer
            // flood: 32-byte settled transfers on one link, pushed in 64 KiB reads (with
            // `-nodiag`, as `--no-diagnoses` does: the diagnoser's cost is the difference).
            use amqpeek::event::{Dir, Timestamp};
            use amqpeek::pipeline::{InspectOptions, Inspector};
            let flood = mixes::amqp10_flood(rounds, 32);
            let server: Bytes = flood.server_open.into();
            let stream: Bytes = flood.client.into();
            let opts = InspectOptions {
                show_secrets: false,
                emit_data: false,
                diagnoses: which == "inspect-flood",
                ..InspectOptions::DEFAULT
            };
            let mut insp = Inspector::new(1, opts);
            let mut out = Vec::new();
            let open = mixes::amqp10_client_open().len();
            insp.chunk(Dir::C2S, Timestamp(0), stream.slice(..open), &mut out);
            insp.chunk(Dir::S2C, Timestamp(0), server, &mut out);
            let stream = stream.slice(open..);
            let t = std::time::Instant::now();
            for (i, c) in stream.chunks(64 * 1024).enumerate() {
                insp.chunk(Dir::C2S, Timestamp(i as i64), stream.slice_ref(c), &mut out);
                frames += out.len();
                for e in &out {
                    if let amqpeek::event::EventKind::Violation(v) = &e.kind {
                        panic!("the flood is spec-correct, but: {v:?}");
                    }
                }
                black_box(&out);
                out.clear();
            }
            let secs = t.elapsed().as_secs_f64();
            eprintln!("{:.2} M events/s", frames as f64 / secs / 1e6);
        }
        "sizes" => {
            use std::mem::size_of;
            println!("Item {}", size_of::<amqpeek::protocol::stream::Item>());
            println!("AnyFrame {}", size_of::<amqpeek::protocol::AnyFrame>());
            println!("AnyMessage {}", size_of::<amqpeek::protocol::AnyMessage>());
            println!("amqp10::Frame {}", size_of::<amqp10::Frame>());
            println!("amqp10::FrameBody {}", size_of::<amqp10::FrameBody>());
            println!("amqp10::Composite {}", size_of::<amqp10::Composite>());
            println!("amqp10::Performative {}", size_of::<amqp10::Performative>());
            println!("amqp10::SaslFrame {}", size_of::<amqp10::SaslFrame>());
            println!("amqp10::Message {}", size_of::<amqp10::Message>());
            println!(
                "amqp091::Frame {}",
                size_of::<amqpeek::codec::amqp091::Frame>()
            );
            println!(
                "amqp091::Message {}",
                size_of::<amqpeek::codec::amqp091::Message>()
            );
            println!("DecodeError {}", size_of::<amqpeek::codec::DecodeError>());
        }
        other => panic!("unknown mix {other}"),
    }
    println!("{frames} frames");
}
