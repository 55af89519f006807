//! A kernel capture of the loopback (dumpcap) beside a run through the proxy, and `check`'s
//! findings of a capture, for the tests that compare what each source says of one run.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// dumpcap writing what passes `port` and the probe's port on the loopback to `file`, once
/// packets flow; `None` (with a note) when it cannot capture here and CI is not set.
pub fn start_dumpcap(port: u16, probe: &crate::wait::Probe, file: &Path) -> Option<Child> {
    let filter = format!("tcp port {port} or tcp port {}", probe.addr().port());
    let spawned = Command::new("dumpcap")
        .args(["-q", "-i", "lo", "-f", &filter, "-w"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let ci = std::env::var_os("CI").is_some();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            assert!(!ci, "dumpcap: {e} (CI is set)");
            eprintln!("note: dumpcap does not run here ({e}); no kernel capture");
            return None;
        }
    };
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            assert!(!ci, "dumpcap cannot capture (CI is set): {said}");
            eprintln!("note: dumpcap cannot capture here: {said}; no kernel capture");
            return None;
        }
        said.push_str(&line);
        if line.contains("Capturing on") {
            break;
        }
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    probe.mark_file(file, Duration::from_secs(20));
    Some(child)
}

/// `check`'s findings of `file` as (rule, direction).
pub fn findings(file: &Path) -> BTreeSet<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(["check", "--format", "json", "--fail-on", "info"])
        .arg(file)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {:?}", file.display(), out));
    assert_eq!(v["connections"], 1, "{}: {v}", file.display());
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["dir"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
