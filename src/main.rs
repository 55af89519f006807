//! The `amqpeek` command line: parses arguments (see `cli.rs`), sets up diagnostics on stderr,
//! and runs a command. The only place that uses `anyhow`.

/// `eprintln!("amqpeek: ...")` with the message escaped (`amqpeek::base::escape`): messages
/// name files and carry a capture's or a peer's words, and stderr is often a terminal.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("amqpeek: {}", amqpeek::base::escape::Escaped(&format!($($arg)*)))
    };
}

mod cli;
mod decode;
mod gate;
mod outputs;
mod run_bundle;
mod wrap;

/// mimalloc ([`amqpeek::base::allocator`]): the per-frame paths allocate a few small objects
/// per frame.
#[global_allocator]
static GLOBAL: amqpeek::base::allocator::Allocator = amqpeek::base::allocator::Allocator;

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;

use amqpeek::capture::{self, CaptureOptions};
use amqpeek::driver::offline::{self, Pace};
use amqpeek::pipeline::{InspectOptions, Sink};
use amqpeek::proxy::{BoxSink, Proxy, ProxyConfig, shutdown};
use amqpeek::replay::{export, pager, parallel};
use amqpeek::sinks::pcapng::PcapngSink;
use amqpeek::sinks::stats_feed::StatsFeed;
use amqpeek::sinks::{FilteredSink, JsonOptions, JsonlSink, TraceSink};
use amqpeek::stats::Collector;
use amqpeek::tui::{self, TuiOptions};
use amqpeek::verdict::{Format, SharedReport};
use cli::{
    BundleArgs, CaptureArgs, CheckArgs, CheckFormat, Cli, Command, OutputArgs, ProxyArgs,
    ReplayArgs, StatsArgs, StatsFormat, is_stdio,
};

/// Exit status for input the tool cannot decode, and for anything else that went wrong (an
/// unwritable output, a port in use, an upstream that does not resolve, a bad config): CI can
/// tell "never ran" (2) from "a peer broke a MUST" (1).
pub(crate) const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    amqpeek::driver::reclaim::disable_transparent_huge_pages();
    let cli = Cli::parse();
    let tui = match &cli.command {
        Command::Proxy(a) => use_tui(&a.output),
        Command::Replay(a) => use_tui(&a.output),
        Command::Decode(_)
        | Command::Check(_)
        | Command::Stats(_)
        | Command::Wrap(_)
        | Command::Bundle(_)
        | Command::Completions { .. }
        | Command::Man(_) => false,
    };
    init_tracing(cli.verbose, tui);
    let result = match cli.command {
        Command::Decode(args) => decode::run(args),
        Command::Proxy(args) => proxy(*args, tui),
        Command::Replay(args) => replay(args, tui),
        Command::Check(args) => check(args),
        Command::Stats(args) => stats(args),
        Command::Wrap(args) => wrap::run(*args),
        Command::Bundle(args) => bundle(args),
        Command::Completions { shell } => completions(shell),
        Command::Man(args) => man_page(args),
    };
    match result {
        Ok(code) => code,
        // The reader of stdout went away (`| head`): stop quietly, as ripgrep does.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<io::Error>()
                    .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        // Status 1 means violations; an error is anything else.
        Err(e) => {
            say!("{e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// `amqpeek completions SHELL`: the completion script, generated from the command line's
/// definition (so it never lags behind a flag).
fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let mut out = io::stdout().lock();
    clap_complete::generate(shell, &mut Cli::command(), "amqpeek", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `amqpeek man`: a manual page in roff (amqpeek's own, or one subcommand's with all its
/// options), or every page written into a folder; generated from the command line's
/// definition, so the pages name exactly the options `--help` does.
fn man_page(args: cli::ManArgs) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    if let Some(dir) = args.dir {
        std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        clap_mangen::generate_to(Cli::command(), &dir)
            .with_context(|| format!("writing manual pages into {}", dir.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    // As the folder's pages are made: no `help` subcommand, and subcommands titled
    // `amqpeek-NAME` (the names the main page's SEE ALSO gives).
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let page = match args.page {
        None => cmd,
        Some(name) => match cmd.find_subcommand(&name) {
            Some(sub) => sub.clone(),
            None => {
                let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
                anyhow::bail!(
                    "no manual page for {name:?}: the pages are amqpeek and {}",
                    names.join(", ")
                );
            }
        },
    };
    let mut out = io::stdout().lock();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The TUI is the live view when stdout is a terminal, unless `--no-tui` or `--quiet`.
fn use_tui(output: &OutputArgs) -> bool {
    use std::io::IsTerminal;
    !output.no_tui && output.trace() && io::stdout().is_terminal()
}

fn init_tracing(verbose: u8, tui: bool) {
    let default = match verbose {
        0 => "amqpeek=info",
        1 => "amqpeek=debug",
        _ => "amqpeek=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // While the TUI owns the terminal, diagnostics would garble it: only errors, and only
    // after the UI is gone would they be readable, so they are dropped.
    // Colour only on a terminal (a log written to a file carries no escape codes), and never
    // with NO_COLOR set.
    let ansi =
        std::io::IsTerminal::is_terminal(&io::stderr()) && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_target(false)
        // A diagnostic that cannot be written (stderr closed by whoever started us) is
        // dropped; reporting that on stderr too would panic.
        .log_internal_errors(false);
    if tui {
        builder.with_writer(io::sink).init();
    } else {
        builder.with_writer(io::stderr).init();
    }
}

/// Where a capture goes: the file at `path`, or stdout for `-`; buffered (the sinks flush once
/// per batch).
/// per batch). `flag` (`--jsonl`, `--pcap`) and the path name every later write error.
fn capture_out(
    flag: &str,
    path: &std::path::Path,
) -> anyhow::Result<BufWriter<Box<dyn Write + Send>>> {
    let out: Box<dyn Write + Send> = if is_stdio(path) {
        Box::new(io::stdout())
    } else {
        Box::new(
            amqpeek::files::create(path).with_context(|| format!("creating {}", path.display()))?,
        )
    };
    let named = outputs::Named::new(format!("{flag} {}", path.display()), out);
    Ok(BufWriter::with_capacity(256 * 1024, Box::new(named)))
}

/// Refuses, before anything is opened for writing, outputs (the captures and `extra`) that are
/// one file, or the capture being read (`input`).
fn check_outputs(
    input: Option<&std::path::Path>,
    output: &OutputArgs,
    extra: &[(&str, &std::path::Path)],
) -> anyhow::Result<()> {
    let mut outs: Vec<(&str, &std::path::Path)> = extra.to_vec();
    if let Some(p) = &output.jsonl {
        outs.push(("--jsonl", p));
    }
    if let Some(p) = &output.pcap {
        outs.push(("--pcap", p));
    }
    outputs::check_distinct(input, &outs)
}

/// `sink`, behind `--filter` when one was given.
fn filtered<S: Sink + Send + 'static>(output: &OutputArgs, sink: S) -> BoxSink {
    match &output.filter {
        Some(f) => Box::new(FilteredSink::new(sink, f.clone())),
        None => Box::new(sink),
    }
}

/// The captures asked for (`--jsonl`, `--pcap`), each behind `--filter`; at most one of them
/// on stdout.
fn file_sinks(output: &OutputArgs) -> anyhow::Result<Vec<BoxSink>> {
    check_stdout_use(output)?;
    let mut sinks: Vec<BoxSink> = Vec::new();
    if let Some(path) = &output.jsonl {
        let sink = JsonlSink::new(
            capture_out("--jsonl", path)?,
            JsonOptions {
                max_body: output.max_body,
            },
        );
        sinks.push(filtered(output, sink));
    }
    if let Some(path) = &output.pcap {
        let sink = PcapngSink::new(capture_out("--pcap", path)?)
            .with_context(|| format!("writing {}", path.display()))?;
        sinks.push(filtered(output, sink));
    }
    Ok(sinks)
}

/// Refuses `--jsonl -` with `--pcap -`: stdout takes one capture.
fn check_stdout_use(output: &OutputArgs) -> anyhow::Result<()> {
    let dash = |p: &Option<std::path::PathBuf>| p.as_deref().is_some_and(is_stdio);
    if dash(&output.jsonl) && dash(&output.pcap) {
        bail!("--jsonl - and --pcap - both ask for stdout: give one of them a file");
    }
    Ok(())
}

/// The live view's spool (`amqpeek::tui::spool`), when the view is the only record: no
/// `--jsonl` or `--pcap` (they keep every frame), no `--show-secrets` (the spool holds masked
/// frames only) and a `--spool-size` above 0. A spool that cannot be created ends the run,
/// naming its path.
fn live_spool(
    output: &OutputArgs,
    args: &cli::SpoolArgs,
    feed: &tui::TuiFeed,
) -> anyhow::Result<Option<tui::spool::SpoolRing>> {
    if output.jsonl.is_some()
        || output.pcap.is_some()
        || output.show_secrets
        || args.spool_size == 0
    {
        return Ok(None);
    }
    let opts = tui::spool::SpoolOptions {
        dir: args.spool_dir.clone(),
        size: args.spool_size,
        max_body: output.max_body,
    };
    let spool = tui::spool::SpoolRing::create(&opts, feed.clone()).context("the TUI's spool")?;
    Ok(Some(spool))
}

/// The live view paging its spool ring: the ring's pager re-runs it with the inspection a
/// replay into the UI has (masked: the ring holds masked frames only), judged with the
/// proxy's own diagnosis thresholds and switch, so paged rows show what the live rows showed.
fn live_paged(
    rx: tui::TuiReceiver,
    opts: TuiOptions,
    output: &OutputArgs,
    open: pager::RingOpener,
    thresholds: Arc<amqpeek::state::diagnose::Thresholds>,
    diagnoses: bool,
) -> std::io::Result<()> {
    let inspect = InspectOptions {
        show_secrets: false,
        emit_data: true,
        inspect_memory: output.inspect_memory,
        max_body: output.max_body,
        state_each_frame: true,
        emit_state: true,
        diagnosis: Some(thresholds),
        diagnoses,
        emit_frames: true,
    };
    let size = pager::WindowSize {
        rows: opts.max_frames_per_conn,
        max_bytes: opts.max_bytes_per_conn,
    };
    let pager = pager::Pager::spawn_ring(open, inspect, size);
    tui::run_paged(rx, opts, pager, export::write)
}

fn tui_options(output: &OutputArgs, title: String, live: bool) -> TuiOptions {
    TuiOptions {
        title,
        live,
        max_body: output.max_body,
        filter: output.filter.clone().unwrap_or_default(),
        captures: [&output.jsonl, &output.pcap]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect(),
        ..TuiOptions::default()
    }
}

/// Raise the soft limit on open files to the hard limit: every relayed connection takes two
/// descriptors, and the usual soft limit (1,024) would cap the proxy near 500 connections.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::debug!("open files limit: {n}"),
        Err(e) => tracing::warn!("could not raise the open files limit: {e}"),
    }
}

/// `--max-connections` when not given: what the open-files limit (as raised) leaves room for.
fn default_max_connections() -> usize {
    let open_files = rlimit::getrlimit(rlimit::Resource::NOFILE)
        .map(|(soft, _)| soft)
        .unwrap_or(1024);
    amqpeek::proxy::limits::default_max_connections(open_files)
}

/// A timeout flag in seconds: absent or 0 is no limit; negative or not a number is refused.
fn optional_seconds(flag: &str, secs: Option<f64>) -> anyhow::Result<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(0.0) => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(_) => bail!("{flag} must be a positive number of seconds (or 0 for no limit)"),
    }
}

/// The runtime the proxy relays on (idle threads give memory back).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(amqpeek::driver::reclaim::on_idle)
        .build()
        .context("starting the async runtime")
}

fn proxy(args: ProxyArgs, tui: bool) -> anyhow::Result<ExitCode> {
    raise_open_files_limit();
    let rt = runtime()?;
    let ProxyArgs {
        net,
        output,
        fail_on,
        policy,
        tls,
        jobs,
        bundle,
        ring,
        spool,
        metrics,
    } = args;
    // Checked before listening: a bad config never starts a proxy CI would wait on.
    let judged = gate::policy(&policy, fail_on)?;
    let bundle_opts = run_bundle::options(&output, judged.clone());
    let thresholds = Arc::new(judged.thresholds.clone());
    let diagnoses = judged.diagnoses;
    let policy = (fail_on.is_some() || !judged.fail_on_diagnosis.is_empty()).then_some(judged);
    check_outputs(None, &output, &tls.outputs())?;
    let mut config = proxy_config(&rt, &net, &output, &tls, jobs, tui)?;
    config.inspect.diagnosis = Some(thresholds.clone());
    config.inspect.diagnoses = diagnoses;
    let upstream = config.upstream;
    let mut sinks = file_sinks(&output)?;
    let run_capture = run_bundle::RunCapture::new(bundle.as_deref(), &output, &mut sinks)?;
    let ring = run_bundle::start_ring(
        &ring,
        &output,
        bundle.is_some().then(|| bundle_opts.clone()),
    )?;
    let ring = ring.map(|(sink, ring)| {
        sinks.push(Box::new(sink));
        ring
    });
    metrics_endpoint(&rt, &metrics, &mut config, &mut sinks)?;
    let mut feed_rx = None;
    let mut spool_at = None;
    let mut ring_open = None;
    if tui {
        let (feed, rx) = tui::channel(tui::DEFAULT_CAPACITY);
        sinks.push(Box::new(stats_feed(&feed)));
        if let Some(s) = live_spool(&output, &spool, &feed)? {
            spool_at = Some((s.name(), s.kept()));
            ring_open = Some(s.opener());
            sinks.push(Box::new(s));
        }
        sinks.push(Box::new(feed));
        feed_rx = Some(rx);
    } else if output.trace() {
        sinks.push(filtered(
            &output,
            TraceSink::new(BufWriter::new(io::stdout())),
        ));
    }
    let verdict = policy.map(|p| {
        let report = SharedReport::default();
        sinks.push(Box::new(report.clone()));
        (report, p)
    });

    let proxy = rt
        .block_on(Proxy::bind(config))
        .with_context(|| format!("listening on {}", net.listen))?;
    let local = proxy.local_addr()?;
    // Caught from here on: a Ctrl-C as soon as the proxy says it listens stops it gracefully.
    let signals = shutdown::first_signal();
    if let Some(ring) = &ring {
        run_bundle::dump_on_sigusr1(&rt, ring)?;
    }
    tracing::info!("listening on {local}, relaying to {upstream}");

    let summary = match feed_rx {
        Some(rx) => {
            // The proxy runs on the runtime's threads; the UI owns this one. Quitting the UI
            // stops the proxy, which then flushes and closes every capture.
            let stop = std::sync::Arc::new(tokio::sync::Notify::new());
            let stop_proxy = stop.clone();
            let handle = std::thread::spawn(move || {
                rt.block_on(proxy.run(sinks, async move {
                    tokio::select! {
                        _ = signals => {}
                        _ = stop_proxy.notified() => {}
                    }
                }))
            });
            let mut opts = tui_options(&output, format!("proxy {local} -> {upstream}"), true);
            let ui = match ring_open {
                Some(open) => {
                    opts.spool = spool_at.as_ref().map(|(name, _)| name.clone());
                    live_paged(rx, opts, &output, open, thresholds.clone(), diagnoses)
                }
                None => tui::run(rx, opts, export::write),
            };
            stop.notify_one();
            let summary = handle
                .join()
                .map_err(|_| anyhow::anyhow!("the proxy thread panicked"))??;
            ui.context("terminal UI")?;
            if let Some((name, true)) = &spool_at {
                eprintln!(
                    "the session is spooled in {} (amqpeek replay reads each, oldest first)",
                    amqpeek::base::escape::Escaped(name)
                );
            }
            summary
        }
        None => rt.block_on(proxy.run(sinks, signals))?,
    };
    tracing::info!("stopped after {} connection(s)", summary.connections);
    let mut failed = run_bundle::finish_ring(ring);
    if let (Some(path), Some(capture)) = (&bundle, run_capture) {
        failed |= !capture.bundle(path, &bundle_opts);
    }
    let code = match verdict {
        Some((report, policy)) => {
            let report = report.0.lock().unwrap_or_else(|p| p.into_inner());
            gate::conclude(&report, &policy, true)
        }
        None => ExitCode::SUCCESS,
    };
    if failed {
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    if !summary.sink_failures.is_empty() {
        // Reported on stderr when it happened, unless the TUI owned the terminal then. A
        // capture that is incomplete is a failure of the run, whatever the verdict.
        if tui {
            for what in &summary.sink_failures {
                say!("{what}");
            }
        }
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    Ok(code)
}

/// `--metrics ADDR`: the endpoint bound (a port in use fails the run before it listens) and
/// served on its own task of `rt`, and the sink that counts the pipeline's events; the
/// inspection publishes each connection's state for the open sessions, links and channels.
pub(crate) fn metrics_endpoint(
    rt: &tokio::runtime::Runtime,
    args: &cli::MetricsArgs,
    config: &mut ProxyConfig,
    sinks: &mut Vec<BoxSink>,
) -> anyhow::Result<()> {
    let Some(addr) = args.addr else {
        return Ok(());
    };
    let metrics = Arc::new(
        amqpeek::metrics::Metrics::new(args.metrics_top_links).with_probe(config.probe.clone()),
    );
    let listener = rt
        .block_on(amqpeek::metrics::serve::bind(addr))
        .with_context(|| format!("--metrics {addr}"))?;
    let local = listener.local_addr()?;
    tracing::info!("serving metrics on http://{local}/metrics");
    let served = metrics.clone();
    rt.spawn(async move {
        if let Err(e) = amqpeek::metrics::serve::serve(listener, served).await {
            tracing::error!("--metrics {local}: {e}");
        }
    });
    sinks.push(Box::new(metrics.sink()));
    config.inspect.emit_state = true;
    Ok(())
}

/// The capture `input` names, opened; with `stop`, reading ends as soon as it is set (the TUI's
/// `q`), even from a pipe that never closes.
/// The capture options the command line asks for.
fn capture_options(input: &CaptureArgs) -> CaptureOptions {
    let mut opts = CaptureOptions::default();
    for p in &input.ports {
        if !opts.ports.contains(p) {
            opts.ports.push(*p);
        }
    }
    opts
}

/// Open the capture (stopped by `stop` when given; the bytes read of a file counted into
/// `read` when given).
fn open_capture(
    input: &CaptureArgs,
    stop: Option<&capture::Stop>,
    read: Option<Arc<AtomicU64>>,
) -> Result<capture::CaptureSource, ExitCode> {
    let opts = capture_options(input);
    let opened = if reads_stdin(input) {
        use std::io::IsTerminal;
        if io::stdin().is_terminal() {
            say!(
                "stdin is a terminal, not a capture: pipe one in, e.g. \
                 `tcpdump -U -w - port 5672 | amqpeek replay -`"
            );
            return Err(ExitCode::from(EXIT_BAD_INPUT));
        }
        let stdin: Box<dyn Read + Send> = Box::new(io::stdin());
        let stdin = match stop {
            Some(stop) => capture::stop::stoppable(stdin, stop, true),
            None => stdin,
        };
        capture::from_reader(stdin, opts)
    } else {
        match (stop, read) {
            (Some(stop), Some(read)) => capture::open_counted(&input.capture, opts, stop, read),
            (Some(stop), None) => capture::open_stoppable(&input.capture, opts, stop),
            (None, _) => capture::open(&input.capture, opts),
        }
    };
    opened.map_err(|e| {
        say!("{e}");
        ExitCode::from(EXIT_BAD_INPUT)
    })
}

/// Whether the capture is `-`: read from stdin, as it is being made (`tcpdump -U -w - | ...`).
fn reads_stdin(input: &CaptureArgs) -> bool {
    is_stdio(&input.capture)
}

/// For a capture read from stdin without the TUI: the first Ctrl-C does not stop amqpeek. The
/// program writing the capture (`tcpdump`, `dumpcap`, `ssh`) gets it too and ends the pipe, so
/// the replay or the check finishes with what it read: the verdict, the close events, complete
/// files. A second Ctrl-C exits at once (status 130).
fn finish_on_first_interrupt() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let interrupted = Arc::new(AtomicBool::new(false));
    // Registered first, so it sees the flag as it was before this Ctrl-C set it.
    let _ = signal_hook::flag::register_conditional_shutdown(
        signal_hook::consts::SIGINT,
        130,
        Arc::clone(&interrupted),
    );
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted);
}

/// The capture's name in titles and verdicts: its path, or `<stdin>`.
fn input_name(input: &CaptureArgs) -> String {
    if reads_stdin(input) {
        "<stdin>".to_string()
    } else {
        input.capture.display().to_string()
    }
}

fn report_read_errors(stats: &amqpeek::replay::ReplayStats) {
    for (offset, message) in &stats.read_errors {
        say!("capture unreadable from byte {offset}: {message}");
    }
}

fn replay(args: ReplayArgs, tui: bool) -> anyhow::Result<ExitCode> {
    check_outputs(Some(&args.input.capture), &args.output, &[])?;
    // A capture read as it is made: every frame shows as soon as it arrives.
    let live = reads_stdin(&args.input);
    if live && !tui {
        finish_on_first_interrupt();
    }
    let judged = gate::policy(&args.policy, args.fail_on)?;
    let thresholds = Arc::new(judged.thresholds.clone());
    let diagnoses = judged.diagnoses;
    let policy = (args.fail_on.is_some() || !judged.fail_on_diagnosis.is_empty()).then_some(judged);
    let report = SharedReport::default();
    // Quitting the UI stops the reading, whatever the source: the replay then ends at once.
    let stop = tui.then(capture::Stop::new);
    // A file into the UI: its first pass shows how far it has read, and the pager reaches
    // every frame of it afterwards.
    let read = (tui && !live).then(|| Arc::new(AtomicU64::new(0)));
    let source = match open_capture(&args.input, stop.as_ref(), read.clone()) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let inspect = InspectOptions {
        show_secrets: args.output.show_secrets,
        emit_data: tui || args.output.pcap.is_some(),
        inspect_memory: args.output.inspect_memory,
        max_body: args.output.max_body,
        // Into the TUI, each frame's state: the state pane shows it as of the selected frame.
        state_each_frame: tui,
        emit_state: tui,
        diagnosis: Some(thresholds),
        diagnoses,
        emit_frames: true,
    };
    // A capture read as it is made: what each packet makes is written before the next is read.
    let pace = if live { Pace::AsItComes } else { Pace::Batched };
    let mut sinks = file_sinks(&args.output)?;
    if policy.is_some() {
        sinks.push(Box::new(report.clone()));
    }
    let done = if tui {
        replay_in_tui(&args, source, &inspect, sinks, stop.as_ref(), pace, read)?
    } else {
        if args.output.trace() {
            let trace = TraceSink::new(BufWriter::new(io::stdout()));
            sinks.push(filtered(&args.output, trace));
        }
        // Decoded on `--jobs` threads, every output written in capture order.
        let jobs = args.jobs.unwrap_or_else(parallel::default_jobs);
        offline::run(source, inspect, sinks, jobs, pace)
    };
    let stats = done.stats;
    if stop.as_ref().is_some_and(capture::Stop::cut_short) {
        // The user quit before the capture ended: what was cut is no read error, and the
        // outputs hold what was read until then.
        if args.output.jsonl.is_some() || args.output.pcap.is_some() {
            say!(
                "quit before the end of {}: the captures written hold what was read \
                 until then",
                input_name(&args.input)
            );
        }
    } else {
        report_read_errors(&stats);
        if stats.nothing_readable() {
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
    }
    let code = match policy {
        Some(policy) => {
            let report = report.0.lock().unwrap_or_else(|p| p.into_inner());
            gate::conclude(&report, &policy, true)
        }
        None => ExitCode::SUCCESS,
    };
    // A capture that is incomplete is a failure of the run, whatever the verdict.
    if !done.sink_failures.is_empty() {
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    Ok(code)
}

/// The statistics of the run for the UI's `S` pane, published through `feed`.
fn stats_feed(feed: &tui::TuiFeed) -> StatsFeed {
    let feed = feed.clone();
    StatsFeed::new(Box::new(move |report| feed.stats(report)))
}

/// The replay into the UI: the capture is decoded on another thread into it without loss;
/// the UI stays open until the user quits. A file (`read` counting its first pass) is reached
/// whole through a pager; stdin keeps the ring of the latest frames.
fn replay_in_tui(
    args: &ReplayArgs,
    source: capture::CaptureSource,
    inspect: &InspectOptions,
    mut sinks: Vec<Box<dyn Sink + Send>>,
    stop: Option<&capture::Stop>,
    pace: Pace,
    read: Option<Arc<AtomicU64>>,
) -> anyhow::Result<amqpeek::driver::Finished> {
    let (feed, rx) = tui::channel(tui::DEFAULT_CAPACITY);
    sinks.push(Box::new(stats_feed(&feed)));
    sinks.push(Box::new(feed.lossless()));
    let first = inspect.clone();
    let worker = std::thread::spawn(move || {
        offline::run(source, first, sinks, std::num::NonZeroUsize::MIN, pace)
    });
    let title = format!(
        "replay {}",
        amqpeek::base::escape::Escaped(&input_name(&args.input))
    );
    let mut opts = tui_options(&args.output, title, false);
    let ui = match read {
        Some(read) => {
            opts.whole_capture = true;
            let (path, copts) = (args.input.capture.clone(), capture_options(&args.input));
            let open: pager::Opener =
                Box::new(move |stop| capture::open_stoppable(&path, copts.clone(), stop).ok());
            let total = std::fs::metadata(&args.input.capture).map_or(0, |m| m.len());
            let size = pager::WindowSize {
                rows: opts.max_frames_per_conn,
                max_bytes: opts.max_bytes_per_conn,
            };
            let pager = pager::Pager::spawn(open, inspect.clone(), size, read, total);
            tui::run_paged(rx, opts, pager, export::write)
        }
        None => tui::run(rx, opts, export::write),
    };
    if let Some(stop) = stop {
        stop.stop();
    }
    let done = worker
        .join()
        .map_err(|_| anyhow::anyhow!("the replay thread panicked"))?;
    ui.context("terminal UI")?;
    for what in &done.sink_failures {
        say!("{what}");
    }
    Ok(done)
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let mut outs: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(out) = &args.output {
        outs.push(("-o", out));
    }
    if let Some(out) = &args.write_baseline {
        outs.push(("--write-baseline", out));
    }
    outputs::check_distinct(Some(&args.input.capture), &outs)?;
    if reads_stdin(&args.input) {
        finish_on_first_interrupt();
    }
    let policy = gate::policy(&args.policy, args.fail_on)?;
    let source = match open_capture(&args.input, None, None) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let jobs = args.jobs.unwrap_or_else(parallel::default_jobs);
    let opts = InspectOptions {
        inspect_memory: args.inspect_memory,
        diagnosis: Some(Arc::new(policy.thresholds.clone())),
        diagnoses: policy.diagnoses,
        ..InspectOptions::DEFAULT
    };
    let parallel::CheckRun { report, stats, .. } = parallel::check_with(source, jobs, opts);
    report_read_errors(&stats);
    if stats.nothing_readable() {
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    if stats.connections == 0 && !args.allow_empty {
        say!(
            "no AMQP connection in {}: nothing was checked (wrong file, port or \
             capture filter? --allow-empty passes such a capture)",
            input_name(&args.input)
        );
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    let format = match args.format {
        CheckFormat::Text => Format::Text,
        CheckFormat::Json => Format::Json,
        CheckFormat::Junit => Format::Junit,
    };
    let mut policy = policy;
    if args.write_baseline.is_some() {
        // The report is judged as the next run will judge it: with the baseline being written,
        // so every finding it holds is known (and the verdict and the status agree).
        policy.baseline = Some(amqpeek::verdict::Baseline::of(report.findings()));
    }
    let text = report
        .judge(&policy)
        .render(format, &input_name(&args.input));
    match &args.output {
        Some(path) => amqpeek::files::write(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => io::stdout().write_all(text.as_bytes())?,
    }
    if let Some(path) = &args.write_baseline {
        gate::write_baseline(&report, path)?;
    }
    Ok(gate::conclude(&report, &policy, false))
}

/// `amqpeek bundle`: the archive of the captures.
fn bundle(args: BundleArgs) -> anyhow::Result<ExitCode> {
    let outs = [("-o", args.output.as_path())];
    for capture in &args.captures {
        outputs::check_distinct(Some(capture), &outs)?;
    }
    let policy = gate::policy(&args.policy, args.fail_on)?;
    let opts = amqpeek::bundle::BundleOptions {
        show_secrets: args.show_secrets,
        max_body: args.max_body,
        inspect_memory: args.inspect_memory,
        policy,
        command_line: std::env::args().collect(),
    };
    run_bundle::write(&args.captures, &args.output, &opts)?;
    Ok(ExitCode::SUCCESS)
}

/// `amqpeek stats`: the capture through the pipeline into a [`Collector`], its report as text
/// or JSON.
fn stats(args: StatsArgs) -> anyhow::Result<ExitCode> {
    if let Some(out) = &args.output {
        outputs::check_distinct(Some(&args.input.capture), &[("-o", out)])?;
    }
    if reads_stdin(&args.input) {
        finish_on_first_interrupt();
    }
    // The diagnosis thresholds as `check` takes them (flags over the config file).
    let judged = gate::policy(
        &cli::PolicyArgs {
            diagnosis_threshold: args.diagnosis_threshold.clone(),
            config: args.config.clone(),
            no_diagnoses: args.no_diagnoses,
            ..Default::default()
        },
        None,
    )?;
    let source = match open_capture(&args.input, None, None) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let inspect = InspectOptions {
        emit_data: false,
        inspect_memory: args.inspect_memory,
        emit_state: false,
        diagnoses: judged.diagnoses,
        diagnosis: Some(Arc::new(judged.thresholds)),
        ..InspectOptions::DEFAULT
    };
    let jobs = args.jobs.unwrap_or_else(parallel::default_jobs);
    let pace = if reads_stdin(&args.input) {
        Pace::AsItComes
    } else {
        Pace::Batched
    };
    let mut collector = match args.filter {
        Some(f) => Collector::filtered(f).map_err(anyhow::Error::msg)?,
        None => Collector::new(),
    };
    let sinks: Vec<Box<dyn Sink + Send + '_>> = vec![Box::new(&mut collector)];
    let done = offline::run(source, inspect, sinks, jobs, pace);
    report_read_errors(&done.stats);
    if done.stats.nothing_readable() {
        return Ok(ExitCode::from(EXIT_BAD_INPUT));
    }
    if done.stats.connections == 0 {
        say!("no AMQP connection in {}", input_name(&args.input));
    }
    let report = collector.report();
    let text = match args.format {
        StatsFormat::Text => format!(
            "amqpeek stats: {}\n{}",
            amqpeek::base::escape::Escaped(&input_name(&args.input)),
            report.text()
        ),
        StatsFormat::Json => amqpeek::json::to_string_pretty(&report) + "\n",
    };
    match &args.output {
        Some(path) => amqpeek::files::write(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => io::stdout().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The proxy's configuration from the command line: the upstream resolved (on `rt`), the
/// limits, what the inspection emits (`tui`: the bytes too, for the UI), TLS; a warning on
/// stderr when the listener is exposed.
fn proxy_config(
    rt: &tokio::runtime::Runtime,
    net: &cli::NetArgs,
    output: &cli::OutputArgs,
    tls: &cli::TlsArgs,
    jobs: Option<std::num::NonZeroUsize>,
    tui: bool,
) -> anyhow::Result<ProxyConfig> {
    let spec = amqpeek::proxy::tls::UpstreamSpec::parse(&net.upstream);
    let upstream = rt
        .block_on(tokio::net::lookup_host(&spec.address))
        .with_context(|| format!("resolving upstream {}", net.upstream))?
        .next()
        .with_context(|| format!("upstream {} has no address", net.upstream))?;
    if !(net.connect_timeout.is_finite() && net.connect_timeout > 0.0) {
        bail!("--connect-timeout must be a positive number of seconds");
    }
    let mut config = ProxyConfig::new(net.listen, upstream);
    config.connect_timeout = Duration::from_secs_f64(net.connect_timeout);
    config.max_connections = net.max_connections.unwrap_or_else(default_max_connections);
    config.deadlines = amqpeek::proxy::limits::Deadlines {
        handshake: optional_seconds("--handshake-timeout", Some(net.handshake_timeout))?,
        idle: optional_seconds("--idle-timeout", net.idle_timeout)?,
    };
    config.inspect = InspectOptions {
        show_secrets: output.show_secrets,
        emit_data: tui || output.pcap.is_some(),
        inspect_memory: output.inspect_memory,
        max_body: output.max_body,
        // Live, the state pane shows the latest state (published per batch, throttled).
        state_each_frame: false,
        emit_state: tui,
        diagnosis: None,
        diagnoses: true,
        emit_frames: true,
    };
    config.tls = tls_config(&spec, tls)?;
    if let Some(jobs) = jobs {
        config.jobs = jobs;
    }
    if let Some(warning) = amqpeek::proxy::exposure_warning(&config) {
        say!("warning: {warning}");
    }
    Ok(config)
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
