//! The statistics' pairing of deliveries with their settlements, on scripted conversations
//! where no real peer shows the case: publishes pipelined before `confirm.select-ok`, a gap
//! that hides a publish, a no-ack consumer whose tag the broker chose, `basic.ack` of tag 0
//! with `multiple`, two AMQP 1.0 sessions numbered differently each way, a disposition naming
//! every delivery-id, a delivery in several transfers, and the bound on waiting deliveries.
//! The TUI's timeline (`L`) pairs the same way: it is checked on the same events.

mod state_amqp091_conv;
mod state_amqp10_common;

use amqpeek::codec::amqp10::{decode_frame, encode_frame};
use amqpeek::event::{Awaits, FrameContext, FrameRef};
use amqpeek::event::{Dir, Event};
use amqpeek::state::context::{At, ContextTracker};
use amqpeek::stats::{Collector, MAX_OPEN, StatsReport};
use amqpeek::tui::timeline::{Follow, entries};
use amqpeek::tui::{App, AppEvent, TuiOptions};
use bytes::Bytes;
use state_amqp10_common as c10;
use state_amqp091_conv::{Conv, K, bit, ll, sstr};

fn report(events: &[Event]) -> StatsReport {
    let mut c = Collector::new();
    for e in events {
        c.add(e);
    }
    c.report()
}

fn kind<'a>(r: &'a StatsReport, kind: &str) -> &'a amqpeek::stats::SettleRow {
    r.settlement.iter().find(|s| s.kind == kind).unwrap()
}

fn timed(r: &StatsReport, k: &str) -> u64 {
    kind(r, k).latency.map_or(0, |l| l.count)
}

/// The timeline of `channel` on connection 1, from these events: (row name, settled by).
fn timeline(events: &[Event], channel: u16) -> Vec<(String, Option<&'static str>)> {
    let opts = TuiOptions {
        live: false,
        ..TuiOptions::default()
    };
    let mut app = App::new(opts, (120, 40));
    for e in events {
        app.handle(AppEvent::Pipeline(e.clone()));
    }
    let follow = Follow::Channel { conn: 1, channel };
    entries(&app, &follow)
        .iter()
        .map(|e| {
            let name = app.row(1, e.seq).unwrap().name.clone();
            (name, e.settled.map(|s| s.1).or(e.not_awaited))
        })
        .collect()
}

#[test]
fn publishes_pipelined_before_select_ok_are_numbered_from_the_select() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.at(1).c(1, K::ConfirmSelect, &[]);
    c.publish(1, 10).publish(1, 10);
    c.at(2).s(1, K::ConfirmSelectOk, &[]);
    c.at(3).s(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(2)), ("multiple", bit(true))],
    );
    c.end();
    let r = report(c.events());
    assert_eq!(timed(&r, "publish->confirm"), 2, "{r:#?}");
    let l = kind(&r, "publish->confirm").latency.unwrap();
    assert!((1_980_000..=2_020_000).contains(&l.p50_us), "{l:?}");
    let confirmed: Vec<_> = timeline(c.events(), 1)
        .into_iter()
        .filter(|(n, by)| n == "basic.publish" && *by == Some("confirm"))
        .collect();
    assert_eq!(confirmed.len(), 2, "the timeline pairs them too");
}

#[test]
fn a_gap_that_may_hide_a_publish_leaves_the_next_ones_untimed_not_mispaired() {
    // Publishes 1 and 2, then the broker confirms 2 alone; with and without a gap between them.
    let run = |lose: bool| {
        let mut c = Conv::new();
        c.handshake().open(1);
        c.c(1, K::ConfirmSelect, &[]).s(1, K::ConfirmSelectOk, &[]);
        c.at(1).publish(1, 10);
        if lose {
            // The capture lost a publish: the next one may be number 3.
            c.lost(Dir::C2S, 100);
        }
        c.at(2).publish(1, 10);
        c.at(3).s(1, K::BasicAck, &[("delivery-tag", ll(2))]);
        c.end();
        report(c.events())
    };
    let r = run(true);
    assert_eq!(timed(&r, "publish->confirm"), 0, "{r:#?}");
    assert_eq!(r.untimed, 1);
    assert_eq!(r.gaps, 1);
    // Without the gap, the same frames pair publish 2 with the ack.
    let clean = run(false);
    assert_eq!(timed(&clean, "publish->confirm"), 1);
}

#[test]
fn no_ack_deliveries_await_nothing_and_ack_zero_multiple_settles_all() {
    let mut c = Conv::new();
    c.handshake().open(1);
    // A no-ack consumer asking the broker for a tag.
    c.c(
        1,
        K::BasicConsume,
        &[
            ("queue", sstr("q")),
            ("consumer-tag", sstr("")),
            ("no-ack", bit(true)),
        ],
    );
    c.s(
        1,
        K::BasicConsumeOk,
        &[("consumer-tag", sstr("amq.ctag-1"))],
    );
    c.consume(1, "manual", false);
    c.at(1).deliver(1, "amq.ctag-1", 1);
    c.deliver(1, "manual", 2).deliver(1, "manual", 3);
    c.at(2).c(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(0)), ("multiple", bit(true))],
    );
    c.end();
    let r = report(c.events());
    let ack = kind(&r, "deliver->ack");
    assert_eq!(ack.not_awaited, 1, "{r:#?}");
    assert_eq!(ack.latency.map(|l| l.count), Some(2), "{r:#?}");
    assert_eq!(r.unsettled_at_close, 0);
    let by: Vec<_> = timeline(c.events(), 1)
        .into_iter()
        .filter(|(n, _)| n == "basic.deliver")
        .map(|(_, by)| by)
        .collect();
    assert_eq!(by, [Some("no-ack"), Some("ack"), Some("ack")]);
}

/// Two sessions, numbered differently each way: A (link "alpha") is the client's channel 0 and
/// the server's 5, B (link "beta") the client's 1 and the server's 0. Each has a sending link and two deliveries.
fn two_sessions() -> c10::Convo {
    let mut c = c10::Convo::opened();
    c.c(0, c10::begin(None, 0, 1000, 1000));
    c.s(5, c10::begin(Some(0), 0, 1000, 1000));
    c.c(1, c10::begin(None, 0, 1000, 1000));
    c.s(0, c10::begin(Some(1), 0, 1000, 1000));
    for (client, server, name) in [(0, 5, "alpha"), (1, 0, "beta")] {
        c.c(client, c10::attach_sender(name, 0, &[]));
        c.s(server, c10::attach_receiver(name, 0, &[]));
        c.s(server, c10::link_flow(0, Some(0), Some(10), false));
    }
    for id in 0..2 {
        for ch in [0, 1] {
            let t = c10::transfer(0, Some(id), Some(&[id as u8]), Some(false), false, &[]);
            c.c_payload(ch, t, &c10::message(None));
        }
    }
    c
}

#[test]
fn a_disposition_settles_the_deliveries_of_its_own_session() {
    let mut c = two_sessions();
    // The server settles B's deliveries (its channel 0) a second later, A's (5) two.
    c.advance_ms(1000);
    c.s(0, c10::disposition(true, 0, Some(1), true));
    c.advance_ms(1000);
    c.s(5, c10::disposition(true, 0, Some(1), true));
    c.close_tcp();
    assert!(c.violations.is_empty(), "{:#?}", c.violations);
    let r = report(&c.events);
    assert_eq!(timed(&r, "transfer->disposition"), 4, "{r:#?}");
    let flow = |name: &str| {
        r.flows
            .iter()
            .find(|f| f.flow == format!("link \"{name}\" c2s"))
            .unwrap_or_else(|| panic!("{r:#?}"))
    };
    let (a, b) = (flow("alpha"), flow("beta"));
    assert_eq!((a.settled, b.settled), (2, 2));
    assert_eq!(a.dirs[0].messages, 2);
    let (la, lb) = (a.latency.unwrap(), b.latency.unwrap());
    assert!(
        la.min_us > 1_900_000 && lb.max_us < 1_100_000,
        "{la:?} {lb:?}"
    );
}

#[test]
fn a_filter_counts_its_frames_and_times_the_deliveries_they_start() {
    let mut c = two_sessions();
    c.advance_ms(1000);
    c.s(0, c10::disposition(true, 0, Some(1), true));
    c.s(5, c10::disposition(true, 0, Some(1), true));
    c.close_tcp();
    let filter = amqpeek::filter::Filter::parse("link:alpha").unwrap();
    let mut only_a = Collector::filtered(filter).unwrap();
    for e in &c.events {
        only_a.add(e);
    }
    let r = only_a.report();
    // A's two deliveries, settled by dispositions the filter does not pass (they name no
    // link); B's are neither counted nor timed.
    assert_eq!(timed(&r, "transfer->disposition"), 2, "{r:#?}");
    let flows: Vec<_> = r.flows.iter().map(|f| f.flow.as_str()).collect();
    assert_eq!(flows, ["link \"alpha\" c2s"]);
    let names: Vec<_> = r.by_name.iter().map(|n| n.name).collect();
    assert!(
        !names.contains(&"disposition") && !names.contains(&"begin"),
        "{names:?}"
    );
    assert_eq!(r.filter.as_deref(), Some("link:alpha"));
    assert_eq!(r.unsettled_at_close, 0);
    let refused = amqpeek::filter::Filter::parse("violations").unwrap();
    assert!(Collector::filtered(refused).is_err());
}

#[test]
fn a_disposition_of_every_delivery_id_costs_only_what_waits() {
    let mut c = two_sessions();
    c.s(0, c10::disposition(true, 0, Some(u32::MAX), true));
    // Delivery-ids are serial numbers: 5..=4 wraps round, naming every id.
    c.s(5, c10::disposition(true, 5, Some(4), true));
    c.close_tcp();
    let r = report(&c.events);
    assert_eq!(timed(&r, "transfer->disposition"), 4, "{r:#?}");
}

#[test]
fn a_delivery_in_several_transfers_is_one_message_settled_by_its_last() {
    let mut c = c10::Convo::sending_link(10);
    let payload = c10::message(None);
    c.c_payload(
        0,
        c10::transfer(0, Some(7), Some(b"t"), None, true, &[]),
        &payload,
    );
    c.c_payload(
        0,
        c10::transfer(0, None, None, Some(true), false, &[]),
        &payload,
    );
    c.close_tcp();
    assert!(c.violations.is_empty(), "{:#?}", c.violations);
    let r = report(&c.events);
    let link = r.flows.iter().find(|f| f.flow == "link \"L\" c2s").unwrap();
    assert_eq!(link.dirs[0].messages, 1, "{r:#?}");
    assert_eq!(kind(&r, "transfer->disposition").not_awaited, 1);
    assert_eq!(r.unsettled_at_close, 0);
}

#[test]
fn deliveries_waiting_past_the_bound_are_counted_not_timed() {
    let mut t = amqpeek::state::amqp10::context::Amqp10Context::default();
    let mut untimed = 0;
    for id in 0..(MAX_OPEN as u32 + 5) {
        let body = c10::transfer(0, Some(id), Some(b"t"), Some(false), false, &[]);
        let raw = encode_frame(0, 0, Some(&body), b"").unwrap();
        let frame = decode_frame(Bytes::from(raw), 0).unwrap();
        let at = At {
            at: FrameRef {
                dir: Dir::C2S,
                offset: u64::from(id),
            },
            ts: i64::from(id),
        };
        let mut cx = FrameContext::default();
        t.frame(at, &frame, &mut cx);
        untimed += usize::from(cx.delivery.and_then(|d| d.awaits) == Some(Awaits::Untimed));
    }
    assert_eq!(t.open(), MAX_OPEN);
    assert_eq!(untimed, 5);
    t.gap(Dir::S2C);
    assert_eq!(t.open(), 0, "a gap forgets what waited");
}
