//! `amqpeek decode`, run as the built binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_amqpeek"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_protocol_header_decodes_in_text_and_json() {
    let out = run(&["decode", "414d515000010000"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "@0 header AMQP 1.0 (0 1 0 0)\n");

    let out = run(&["decode", "--json", "41:4d:51:50", "00 00 09 01"], b"");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["event"], "header");
    assert_eq!(v["proto"], "amqp-0-9-1");
    assert_eq!(v["offset"], 0);
    assert_eq!(v["raw"], "QU1RUAAACQE=");
    assert!(v.get("ts").is_none() && v.get("conn").is_none());
}

#[test]
fn raw_bytes_on_stdin_are_decoded() {
    let out = run(&["decode", "-"], b"AMQP\x03\x01\x00\x00");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "@0 header AMQP 1.0 SASL (3 1 0 0)\n");
}

#[test]
fn bad_input_exits_2_and_says_where() {
    let out = run(&["decode", "41 4z"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("'z' at character 4 of argument 1"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&["decode", "414"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("odd number"));

    // A header, then a frame that claims 16 bytes but has 10.
    let out = run(&["decode", "414d515000010000 00000010 02000000 0000"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("ends inside a frame at offset 8"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "@0 header AMQP 1.0 (0 1 0 0)\n");

    // Not AMQP framing at all (1.0 frame size below 8).
    let out = run(&["decode", "00000004"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("offset 0"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bare_frames_default_to_amqp10_and_protocol_selects_091() {
    // An AMQP 1.0 empty frame (heartbeat) without a header.
    let out = run(&["decode", "--json", "0000000802000000"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(
        (&v["name"], &v["proto"]),
        (&"empty".into(), &"amqp-1.0".into())
    );

    // An AMQP 0-9-1 heartbeat on channel 0.
    let out = run(
        &[
            "decode",
            "--json",
            "--protocol",
            "amqp091",
            "08 0000 00000000 ce",
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["name"], "heartbeat");
    assert_eq!(v["proto"], "amqp-0-9-1");
    assert_eq!(v["channel"], 0);
    assert_eq!(v["raw"], "CAAAAAAAAM4=");
}

/// The README's example: an AMQP 1.0 flow performative, decoded field by field (the list of
/// 11 fields: uint0, uint 65535, uint0, uint 65535, uint0, null, uint 65536, null, false,
/// false, null).
#[test]
fn an_amqp10_performative_decodes_to_its_fields() {
    let hex = "0000002502000000005313c0180b43700000ffff43700000ffff4340700001000040424240";
    let out = run(&["decode", hex], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "@0 ch 0 @flow(19) [next-incoming-id=0, incoming-window=65535, next-outgoing-id=0, \
         outgoing-window=65535, handle=0, link-credit=65536, drain=false, echo=false]\n"
    );
    let out = run(&["decode", "--json", hex], b"");
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(
        (&v["name"], &v["proto"]),
        (&"flow".into(), &"amqp-1.0".into())
    );
    assert_eq!(
        v["fields"],
        serde_json::json!({
            "next-incoming-id": 0, "incoming-window": 65535, "next-outgoing-id": 0,
            "outgoing-window": 65535, "handle": 0, "link-credit": 65536,
            "drain": false, "echo": false
        })
    );
}

/// 0-9-1 method frames: connection.tune after a header (the header selects 0-9-1) and a
/// basic.publish on channel 1, with their arguments.
#[test]
fn amqp091_method_frames_decode_to_their_arguments() {
    // type 1, channel 0, size 12: class 10 method 30, channel-max 2047, frame-max 131072,
    // heartbeat 60, frame end.
    let tune = "01 0000 0000000c 000a001e 07ff 00020000 003c ce";
    let out = run(&["decode", "414d515000000901", tune], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "@0 header AMQP 0-9-1 (0 0 9 1)\n\
         @8 ch 0 connection.tune channel-max=2047 frame-max=131072 heartbeat=60\n"
    );
    // type 1, channel 1, size 10: class 60 method 40, ticket 0, exchange "", routing-key "q",
    // mandatory and immediate false.
    let publish = "01 0001 0000000a 003c0028 0000 00 0171 00 ce";
    let out = run(&["decode", "--json", "--protocol", "amqp091", publish], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["name"], "basic.publish");
    assert_eq!(v["channel"], 1);
    assert_eq!(
        v["fields"],
        serde_json::json!({
            "ticket": 0, "exchange": "", "routing-key": "q",
            "mandatory": false, "immediate": false
        })
    );
    assert_eq!(
        v["summary"],
        r#"basic.publish exchange="" routing-key="q" mandatory=false immediate=false"#
    );
}

/// Item 1: `0x` prefixes on arguments and tokens; hex text on stdin is decoded as hex (raw
/// bytes on stdin still decode as raw bytes, above).
#[test]
fn hex_accepts_0x_prefixes_and_hex_text_on_stdin() {
    let out = run(&["decode", "0x414d5150", "0x00 0X01 0x00:0x00"], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "@0 header AMQP 1.0 (0 1 0 0)\n");

    let out = run(&["decode", "-"], b"0x41 4d 51 50\n00:00:09:01\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "@0 header AMQP 0-9-1 (0 0 9 1)\n");

    // Hex text with a byte cut in half is an error, not raw bytes.
    let out = run(&["decode", "-"], b"414d515\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("odd number"),
        "{}",
        text(&out.stderr)
    );
}

/// Bare 0-9-1 frames (no protocol header, no `--protocol`) that are not AMQP 1.0 are decoded
/// as 0-9-1, and stderr says so before anything else; bytes that are neither still fail.
#[test]
fn bare_091_frames_are_decoded_as_091_and_said_so_first() {
    let out = run(&["decode", "08 0000 00000000 ce"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.lines()
            .next()
            .is_some_and(|l| l.contains("AMQP 0-9-1 frames")),
        "{err}"
    );
    assert!(!err.contains("input ends inside a frame"), "{err}");
    assert!(
        text(&out.stdout).contains("heartbeat"),
        "{}",
        text(&out.stdout)
    );
    // Undecodable as either: an error, and no claim of 0-9-1.
    let out = run(&["decode", "00000004"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !text(&out.stderr).contains("0-9-1"),
        "{}",
        text(&out.stderr)
    );
}

/// Hex text on stdin with a typo names the bad character, not a short frame.
#[test]
fn a_bad_hex_digit_on_stdin_is_named() {
    let out = run(&["decode", "-"], b"414d5150000009zz\n");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("invalid hex digit 'z' at character 14 of stdin"),
        "{err}"
    );
}

/// `--tree` lists a 0-9-1 method's arguments in the spec's order (basic.publish: ticket,
/// exchange, routing-key, mandatory, immediate), not alphabetically.
#[test]
fn the_091_tree_lists_arguments_in_spec_order() {
    let out = run(
        &[
            "decode",
            "--tree",
            "01 0001 0000000a 003c0028 0000 00 0171 00 ce",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = text(&out.stdout)
        .lines()
        .filter(|l| l.contains("no byte range"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    assert_eq!(
        names,
        [
            "ticket",
            "exchange",
            "routing-key",
            "mandatory",
            "immediate"
        ]
    );
}

/// Item 3: each frame's line gives its offset in the input and its channel.
#[test]
fn frame_lines_show_offset_and_channel() {
    let publish = "01 0001 0000000a 003c0028 0000 00 0171 00 ce";
    let heartbeat = "08 0000 00000000 ce";
    let out = run(
        &["decode", "--protocol", "amqp091", heartbeat, publish],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "@0 ch 0 heartbeat\n\
         @8 ch 1 basic.publish exchange=\"\" routing-key=\"q\" mandatory=false immediate=false\n"
    );
}

/// Item 4: `--tree` puts each field on its own line, indented by depth, with its byte range
/// in the input (here after an 8-byte header, so the ranges start at 8).
#[test]
fn tree_shows_each_field_with_its_byte_range() {
    let flow = "0000002502000000005313c0180b43700000ffff43700000ffff4340700001000040424240";
    let out = run(&["decode", "--tree", "414d515000010000", flow], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert_eq!(lines[0], "@0 header AMQP 1.0 (0 1 0 0)");
    assert!(lines[1].starts_with("@8 ch 0 @flow(19) ["), "{}", lines[1]);
    assert_eq!(lines[2], "  frame header [8..16)");
    assert_eq!(lines[3], "  flow [16..45)");
    assert_eq!(lines[4], "    next-incoming-id = 0 [22..23)");
    assert_eq!(lines[5], "    incoming-window = 65535 [23..28)");
    assert_eq!(lines[14], "    properties = null [44..45)");
    assert_eq!(lines.len(), 15);

    let tune = "01 0000 0000000c 000a001e 07ff 00020000 003c ce";
    let out = run(&["decode", "--tree", "--protocol", "amqp091", tune], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("\n    channel = 0 [1..3)\n"), "{t}");
    assert!(t.contains("\n  payload (12 bytes) [7..19)\n"), "{t}");
    assert!(t.contains("\n  frame-end = 0xce [19..20)\n"), "{t}");
}
