//! Capture reading throughput: a large generated pcapng of AMQP 0-9-1 and 1.0 traffic (written
//! by `PcapngSink`), read back through `capture::open` (block parsing, link/IP/TCP decoding,
//! reassembly, connection tracking), alone and followed by the `Inspector`; and the same file
//! dissected by `tshark -r FILE -Y amqp`, timed once in the same run for comparison.
//!
//! `AMQPEEK_BENCH_MB` sets the file size (default 200); `AMQPEEK_BENCH_TSHARK=0` skips tshark.

use std::path::{Path, PathBuf};
use std::time::Instant;

use amqpeek::capture::{self, CaptureOptions, SourceEvent};
use amqpeek::event::{Dir, Event, EventKind, Timestamp};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::sinks::pcapng::PcapngSink;
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn f091(ftype: u8, channel: u16, payload: &[u8], out: &mut Vec<u8>) {
    out.push(ftype);
    out.extend_from_slice(&channel.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out.push(0xCE);
}

fn f10(body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&((8 + body.len()) as u32).to_be_bytes());
    out.extend_from_slice(&[2, 0, 0, 1]);
    out.extend_from_slice(body);
}

/// Generate the capture; returns (path, AMQP frames in it).
fn generate(mb: usize) -> (PathBuf, u64) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let path = dir.join(format!("bench-capture-{mb}mb-1448.pcapng"));
    let frames_path = path.with_extension("frames");
    if let (true, Ok(n)) = (path.exists(), std::fs::read_to_string(&frames_path))
        && let Ok(n) = n.trim().parse()
    {
        return (path, n);
    }
    let mut sink = PcapngSink::create(&path).unwrap();
    let target = (mb * 1024 * 1024) as u64;
    let mut written = 0u64;
    let mut frames = 0u64;
    let mut conn = 0u64;
    let mut t = 1_764_417_600_000_000i64;
    while written < target {
        conn += 1;
        let v091 = conn % 2 == 1;
        let ev = |t: i64, kind| Event {
            conn,
            ts: Timestamp(t),
            kind,
        };
        let client = format!(
            "10.0.{}.{}:{}",
            conn / 250 % 250,
            conn % 250 + 1,
            30000 + conn % 30000
        )
        .parse()
        .unwrap();
        sink.event(&ev(
            t,
            EventKind::Connect {
                client,
                upstream: "10.1.0.1:5672".parse().unwrap(),
            },
        ))
        .unwrap();
        let mut off = [0u64; 2];
        let hdr: &[u8] = if v091 {
            b"AMQP\x00\x00\x09\x01"
        } else {
            b"AMQP\x00\x01\x00\x00"
        };
        for dir in [Dir::C2S, Dir::S2C] {
            sink.event(&ev(
                t,
                EventKind::Data {
                    dir,
                    offset: 0,
                    bytes: Bytes::from_static(hdr),
                },
            ))
            .unwrap();
            off[dir.index()] = 8;
        }
        // ~4 MB per connection in chunks of ~16 KiB of whole frames.
        let mut conn_bytes = 0u64;
        let mut k = 0u64;
        while conn_bytes < 4 * 1024 * 1024 {
            let mut buf = Vec::with_capacity(17_000);
            while buf.len() < 16_384 {
                k += 1;
                let body_len = 100 + (k * 7919 % 1900) as usize;
                if v091 {
                    f091(1, 1, &[0, 60, 0, 40, 0, 0, 0, 1, b'q', 0], &mut buf);
                    f091(
                        2,
                        1,
                        &[0, 60, 0, 0, 0, 0, 0, 0, 0, 0, body_len as u8, 0, 0, 0],
                        &mut buf,
                    );
                    f091(3, 1, &vec![b'm'; body_len], &mut buf);
                    frames += 3;
                } else {
                    let mut body = vec![0x00, 0x53, 0x14, 0xC0, 0x07, 0x05, 0x43, 0x52];
                    body.extend_from_slice(&(k as u32).to_be_bytes());
                    body.extend(vec![b'm'; body_len]);
                    f10(&body, &mut buf);
                    frames += 1;
                }
            }
            t += 50;
            let n = buf.len() as u64;
            let dir = if k.is_multiple_of(5) {
                Dir::S2C
            } else {
                Dir::C2S
            };
            // Ethernet-sized segments, as tcpdump on a real link would see them.
            let buf = Bytes::from(buf);
            let mut at = 0usize;
            while at < buf.len() {
                let end = (at + 1448).min(buf.len());
                let offset = off[dir.index()] + at as u64;
                let bytes = buf.slice(at..end);
                sink.event(&ev(t, EventKind::Data { dir, offset, bytes }))
                    .unwrap();
                at = end;
            }
            off[dir.index()] += n;
            conn_bytes += n;
        }
        sink.event(&ev(
            t,
            EventKind::Close(amqpeek::event::CloseInfo {
                reason: "client closed".into(),
                bytes_c2s: off[0],
                bytes_s2c: off[1],
            }),
        ))
        .unwrap();
        sink.flush().unwrap();
        written += conn_bytes;
    }
    drop(sink);
    std::fs::write(&frames_path, frames.to_string()).unwrap();
    (path, frames)
}

fn read_all(path: &Path) -> u64 {
    let mut bytes = 0u64;
    for ev in capture::open(path, CaptureOptions::default()).unwrap() {
        if let SourceEvent::Chunk(c) = ev {
            bytes += c.bytes.len() as u64;
        }
    }
    bytes
}

/// What `amqpeek check` does: read, reassemble, decode, track state, collect the verdict.
fn read_and_inspect(path: &Path) -> u64 {
    let opts = InspectOptions {
        show_secrets: false,
        emit_data: false,
    };
    let mut replayer = amqpeek::replay::Replayer::new(opts);
    let mut report = amqpeek::sinks::check::CheckReport::new();
    let mut out = Vec::new();
    let mut events = 0u64;
    for ev in capture::open(path, CaptureOptions::default()).unwrap() {
        replayer.feed(ev, &mut out);
        for e in out.drain(..) {
            events += 1;
            let _ = report.event(&e);
        }
    }
    replayer.finish(&mut out);
    events + out.len() as u64
}

fn bench(c: &mut Criterion) {
    // Under `cargo test --all-targets` (no `--bench` argument) this is a smoke run on a small
    // capture, without tshark.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let mb: usize = std::env::var("AMQPEEK_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if smoke { 2 } else { 200 });
    let (path, frames) = generate(mb);
    let size = std::fs::metadata(&path).unwrap().len();
    eprintln!(
        "capture: {} ({:.1} MB, {frames} AMQP frames)",
        path.display(),
        size as f64 / 1e6
    );

    // One timed pass each, for frames/s figures next to tshark's.
    let t = Instant::now();
    let payload = read_all(&path);
    let ours = t.elapsed().as_secs_f64();
    eprintln!(
        "amqpeek read+reassemble: {:.2} s, {:.0} MB/s of file, {:.0} frames/s ({payload} payload bytes)",
        ours,
        size as f64 / 1e6 / ours,
        frames as f64 / ours
    );
    let t = Instant::now();
    let _ = read_and_inspect(&path);
    let ours_insp = t.elapsed().as_secs_f64();
    eprintln!(
        "amqpeek read+reassemble+decode+track+verdict (check): {:.2} s, {:.0} MB/s, {:.0} frames/s",
        ours_insp,
        size as f64 / 1e6 / ours_insp,
        frames as f64 / ours_insp
    );
    if !smoke && std::env::var("AMQPEEK_BENCH_TSHARK").as_deref() != Ok("0") {
        let t = Instant::now();
        let out = std::process::Command::new("tshark")
            .args([
                "-r",
                path.to_str().unwrap(),
                "-Y",
                "amqp",
                "-T",
                "fields",
                "-e",
                "frame.number",
            ])
            .output();
        let secs = t.elapsed().as_secs_f64();
        match out {
            Ok(o) if o.status.success() => {
                let packets = o.stdout.iter().filter(|b| **b == b'\n').count();
                eprintln!(
                    "tshark -Y amqp: {:.2} s, {:.1} MB/s, {:.0} frames/s ({packets} AMQP packets); amqpeek read is {:.0}x, read+inspect {:.0}x",
                    secs,
                    size as f64 / 1e6 / secs,
                    frames as f64 / secs,
                    secs / ours,
                    secs / ours_insp
                );
            }
            _ => eprintln!("tshark not available: comparison skipped"),
        }
    }

    let mut g = c.benchmark_group("capture");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(size));
    g.bench_function("read_reassemble", |b| b.iter(|| read_all(&path)));
    g.bench_function("read_reassemble_inspect", |b| {
        b.iter(|| read_and_inspect(&path))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
