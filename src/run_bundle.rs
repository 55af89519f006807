//! The bundle and the ring as the proxy and `wrap` run them: the capture a bundle at exit is
//! made of, the ring's dumps (and their bundles), `SIGUSR1`, and the messages.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use amqpeek::bundle::BundleOptions;
use amqpeek::proxy::BoxSink;
use amqpeek::ring::{Ring, RingOptions, RingSink};
use amqpeek::sinks::{JsonOptions, JsonlSink};
use amqpeek::verdict::Policy;

use crate::cli::{OutputArgs, RingArgs, is_stdio};

/// A run's bundle options: masking and bodies as its outputs have them, its policy.
pub fn options(output: &OutputArgs, policy: Policy) -> BundleOptions {
    BundleOptions {
        show_secrets: output.show_secrets,
        max_body: output.max_body,
        inspect_memory: output.inspect_memory,
        policy,
        command_line: std::env::args().collect(),
    }
}

/// Write the bundle of `captures` to `out`, saying so on stderr.
pub fn write(captures: &[PathBuf], out: &Path, opts: &BundleOptions) -> anyhow::Result<()> {
    let done = amqpeek::bundle::write(captures, out, opts)
        .with_context(|| format!("writing the bundle {}", out.display()))?;
    tracing::info!(
        "bundle {}: {} file(s), {} connection(s)",
        out.display(),
        done.entries.len(),
        done.connections
    );
    Ok(())
}

/// The capture of the run a bundle at exit is made of: the `--jsonl` or `--pcap` file, or a
/// JSONL kept beside the bundle for it and removed afterwards.
#[derive(Debug)]
pub struct RunCapture {
    path: PathBuf,
    temporary: bool,
}

impl RunCapture {
    /// The capture for `--bundle` (nothing without it), adding its sink to `sinks` when none
    /// of the outputs is a file.
    pub fn new(
        bundle: Option<&Path>,
        output: &OutputArgs,
        sinks: &mut Vec<BoxSink>,
    ) -> anyhow::Result<Option<RunCapture>> {
        let Some(bundle) = bundle else {
            return Ok(None);
        };
        let files: Vec<&PathBuf> = [&output.jsonl, &output.pcap]
            .into_iter()
            .flatten()
            .filter(|p| !is_stdio(p))
            .collect();
        let mut outs = vec![("--bundle", bundle)];
        outs.extend(files.iter().map(|p| ("--jsonl/--pcap", p.as_path())));
        crate::outputs::check_distinct(None, &outs)?;
        if let Some(p) = files.first() {
            return Ok(Some(RunCapture {
                path: p.to_path_buf(),
                temporary: false,
            }));
        }
        let name = bundle.file_name().unwrap_or_default().to_string_lossy();
        let path = bundle
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join(format!(".{name}.run-{}.jsonl", std::process::id()));
        let file = amqpeek::files::create(&path)
            .with_context(|| format!("creating {} for --bundle", path.display()))?;
        let named = crate::outputs::Named::new(format!("--bundle {}", path.display()), file);
        let opts = JsonOptions {
            max_body: output.max_body,
        };
        sinks.push(Box::new(JsonlSink::new(BufWriter::new(named), opts)));
        Ok(Some(RunCapture {
            path,
            temporary: true,
        }))
    }

    /// Write the bundle to `out`; false (said on stderr) when it failed.
    pub fn bundle(self, out: &Path, opts: &BundleOptions) -> bool {
        let written = write(std::slice::from_ref(&self.path), out, opts);
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
        match written {
            Ok(()) => true,
            Err(e) => {
                say!("{e:#}");
                false
            }
        }
    }
}

/// Start the ring `args` asks for (nothing without `--ring`); with `bundle`, each dump also
/// writes a bundle beside it.
pub fn start_ring(
    args: &RingArgs,
    output: &OutputArgs,
    bundle: Option<BundleOptions>,
) -> anyhow::Result<Option<(RingSink, Ring)>> {
    let Some(size) = args.ring else {
        return Ok(None);
    };
    std::fs::create_dir_all(&args.dump_dir)
        .with_context(|| format!("creating --dump-dir {}", args.dump_dir.display()))?;
    let after_dump: Option<amqpeek::ring::AfterDump> = bundle.map(|opts| {
        let hook: amqpeek::ring::AfterDump = Box::new(move |dump| {
            let out = dump.jsonl.with_extension("tar.gz");
            amqpeek::bundle::write(std::slice::from_ref(&dump.jsonl), &out, &opts)
                .map(|_| vec![out.clone()])
                .map_err(|e| format!("writing the bundle {}: {e}", out.display()))
        });
        hook
    });
    let opts = RingOptions {
        size,
        triggers: args.dump_on.clone(),
        after: Duration::from_secs_f64(args.dump_after),
        dir: args.dump_dir.clone(),
        keep: args.dump_keep,
        show_secrets: output.show_secrets,
        max_body: output.max_body,
        inspect_memory: output.inspect_memory,
        after_dump,
    };
    let started = Ring::start(opts).context("starting the ring capture")?;
    Ok(Some(started))
}

/// `SIGUSR1` dumps the ring, for the rest of the run.
pub fn dump_on_sigusr1(rt: &tokio::runtime::Runtime, ring: &Ring) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handle = ring.handle();
        let mut usr1 = {
            let _in = rt.enter();
            signal(SignalKind::user_defined1()).context("catching SIGUSR1")?
        };
        rt.spawn(async move {
            while usr1.recv().await.is_some() {
                tracing::info!("SIGUSR1: dumping the ring");
                handle.dump_now();
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (rt, ring);
    Ok(())
}

/// End the ring (writing the dump armed, if any); true when a dump failed (each said on
/// stderr).
pub fn finish_ring(ring: Option<Ring>) -> bool {
    let Some(ring) = ring else { return false };
    let report = ring.finish();
    tracing::info!("ring: {} dump(s)", report.dumps.len());
    for f in &report.failures {
        say!("{f}");
    }
    !report.failures.is_empty()
}
