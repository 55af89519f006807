//! The README inside a bundle: what each file is and how to open it.

use super::inspect::{
    CAPTURE_JSONL, CAPTURE_PCAPNG, CHECK_FILES, DIAGNOSES_TXT, STATS_JSON, STATS_TXT,
};

/// The README for a bundle of the capture folders `folders`.
pub(super) fn render(folders: &[&str]) -> String {
    let mut t = String::from(
        "amqpeek bundle\n\
         ==============\n\n\
         environment.txt      amqpeek's version, the command line, the OS, the peers' products\n\
         \x20                    and versions.\n\n\
         One folder per capture:\n",
    );
    for f in folders {
        t.push_str(&format!("  {f}/\n"));
    }
    let [(txt, _), (json, _), (junit, _)] = CHECK_FILES;
    t.push_str(&format!(
        "\nIn each folder:\n\
         \x20 {CAPTURE_PCAPNG:<20} the traffic; open it in Wireshark, or `tshark -r {CAPTURE_PCAPNG}`;\n\
         \x20 {:<20} violations are packet comments (`pkt_comment` in Wireshark).\n\
         \x20 {CAPTURE_JSONL:<20} the same traffic, one JSON object per line (docs/jsonl-format.md);\n\
         \x20 {:<20} `amqpeek replay {CAPTURE_JSONL}` browses it, `jq` reads it.\n\
         \x20 {txt:<20} `amqpeek check` of the capture: the findings by rule.\n\
         \x20 {json:<20} the same, as one JSON document.\n\
         \x20 {junit:<20} the same, as JUnit XML (one test case per rule).\n\
         \x20 {STATS_TXT:<20} `amqpeek stats`: frames, bytes, rates, settlement latencies.\n\
         \x20 {STATS_JSON:<20} the same, as JSON.\n\
         \x20 {DIAGNOSES_TXT:<20} why a flow was stuck: diagnoses still active when the capture\n\
         \x20 {:<20} ended, and those that ended.\n\n\
         Credentials are masked with '*' unless the bundle was made with --show-secrets.\n\
         Any file reads back: `amqpeek check FOLDER/{CAPTURE_PCAPNG}` gives the same findings.\n",
        "", "", ""
    ));
    t
}
