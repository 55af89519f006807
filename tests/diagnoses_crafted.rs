//! Every diagnosis produced by a crafted conversation through the real inspector, each with a
//! healthy control of the same shape that produces none. Thresholds are short (1 s) so the
//! clock the tests move stays small; the clock is the frames' and the ticks' times, never the
//! wall's.

mod diag_support;

use diag_support::a10::{self, FL, Fl};
use diag_support::a091::{self, K, ss, tag};
use diag_support::{Conv, T0, handshake_10, handshake_091};

use amqpeek::codec::amqp091::Value;
use amqpeek::event::{EndWhy, ScopeKind};

// ------------------------------------------------------------------ AMQP 1.0

/// Handshake and a link `orders` the client sends on (handle 0), attached by both ends.
fn sending_link(limits: &[(&str, f64)], window: u32) -> Conv {
    let mut c = Conv::new(limits);
    handshake_10(&mut c, None, window);
    c.c(&a10::attach(0, "orders", 0, false, "q"));
    c.s(&a10::attach(0, "orders", 0, true, "q"));
    c
}

#[test]
fn no_credit_is_diagnosed_and_a_grant_in_time_is_not() {
    let lim = [("amqp10.link.no-credit", 1.0)];
    let mut c = sending_link(&lim, 1000);
    c.wait(2000);
    let d = c.one("amqp10.link.no-credit");
    assert_eq!(d.scope, ScopeKind::Link);
    assert!(d.name.contains("orders"), "{}", d.name);
    // The grant ends it.
    c.s(&a10::flow(0, 0, Some(0), 10, 0));
    let end = c.ends_of("amqp10.link.no-credit");
    assert_eq!(end.len(), 1, "{}", c.dump());
    assert_eq!(end[0].ended.as_ref().unwrap().why, EndWhy::Cleared);

    let mut ok = sending_link(&lim, 1000);
    ok.wait(500);
    ok.s(&a10::flow(0, 0, Some(0), 10, 0));
    ok.c(&a10::transfer(0, 0, 0));
    ok.s(&a10::disposition(0, true, 0, 0, 0x24));
    ok.wait(3000);
    ok.close();
    ok.none();
}

#[test]
fn credit_exhausted_with_messages_available_is_diagnosed_and_renewed_credit_is_not() {
    let lim = [("amqp10.link.credit-exhausted", 1.0)];
    let run = |renew: bool| {
        let mut c = sending_link(&lim, 1000);
        c.s(&a10::flow(0, 0, Some(0), 2, 0));
        c.c(&a10::transfer(0, 0, 0));
        c.c(&a10::transfer(0, 0, 1));
        // The sender says it has 5 more (§2.6.7 available).
        c.c(&a10::flow_of(
            0,
            Fl {
                next_in: Some(0),
                next_out: 2,
                handle: Some(0),
                delivery_count: Some(2),
                credit: Some(0),
                available: Some(5),
                ..FL
            },
        ));
        c.s(&a10::disposition(0, true, 0, 1, 0x24));
        if renew {
            c.wait(300);
            c.s(&a10::flow(0, 0, Some(2), 10, 2));
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(false);
    let d = c.one("amqp10.link.credit-exhausted");
    assert!(d.detail.contains("link-credit used up"), "{}", d.detail);
    assert_eq!(
        c.started(),
        vec!["amqp10.link.credit-exhausted"],
        "{}",
        c.dump()
    );
    run(true).none();
}

#[test]
fn a_used_up_session_window_is_diagnosed_and_a_reopened_one_is_not() {
    let lim = [("amqp10.session.window-exhausted", 1.0)];
    let run = |reopen: bool| {
        let mut c = sending_link(&lim, 2);
        c.s(&a10::flow_of(
            0,
            Fl {
                next_in: Some(0),
                in_window: 2,
                out_window: 2,
                handle: Some(0),
                delivery_count: Some(0),
                credit: Some(10),
                ..FL
            },
        ));
        c.c(&a10::transfer(0, 0, 0));
        c.c(&a10::transfer(0, 0, 1));
        c.s(&a10::disposition(0, true, 0, 1, 0x24));
        if reopen {
            c.s(&a10::flow_of(
                0,
                Fl {
                    next_in: Some(2),
                    in_window: 2,
                    out_window: 2,
                    ..FL
                },
            ));
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(false);
    let d = c.one("amqp10.session.window-exhausted");
    assert_eq!(d.scope, ScopeKind::Session);
    assert!(d.name.contains("server"), "{}", d.name);
    assert_eq!(c.started().len(), 1, "{}", c.dump());
    run(true).none();
}

/// Link-credit of 2^31 or more (a `uint`: receivers grant the largest to mean "no limit") is
/// far from used up after a few deliveries: a sender that has more (`available`) and pauses
/// is not out of credit, with deliveries left unsettled or not.
#[test]
fn credit_of_two_to_the_31_or_more_is_not_used_up_by_a_few_deliveries() {
    let lim = [
        ("amqp10.link.credit-exhausted", 1.0),
        ("amqp10.link.no-credit", 1.0),
    ];
    for credit in [1 << 31, u32::MAX] {
        let mut c = sending_link(&lim, 1000);
        c.s(&a10::flow(0, 0, Some(0), credit, 0));
        c.c(&a10::transfer(0, 0, 0));
        c.c(&a10::transfer(0, 0, 1));
        c.c(&a10::flow_of(
            0,
            Fl {
                next_in: Some(0),
                next_out: 2,
                handle: Some(0),
                delivery_count: Some(2),
                credit: Some(credit - 2),
                available: Some(5),
                ..FL
            },
        ));
        c.wait(2000);
        c.close();
        c.none();
    }
}

/// An incoming-window of 2^31 or more (a `uint`, up to 4,294,967,295: clients grant the
/// largest to mean "no limit") is far from used up after a few transfers, whether the begins
/// or a flow grant it: serial arithmetic (RFC 1982, which §2.5.6's ids follow) cannot compare
/// ids that far apart, so no transfer count reaches it, and a sender that pauses with credit
/// left is not stuck on its session.
#[test]
fn a_window_of_two_to_the_31_or_more_is_not_used_up_by_a_few_transfers() {
    let lim = [("amqp10.session.window-exhausted", 1.0)];
    for window in [1 << 31, u32::MAX] {
        for by_flow in [false, true] {
            // The begins grant `window`, or a small one that the receiver's flow then raises
            // to `window` (a flow without next-incoming-id leaves the begins' grant).
            let mut c = sending_link(&lim, if by_flow { 2 } else { window });
            two_settled_after(
                &mut c,
                Fl {
                    next_in: by_flow.then_some(0),
                    in_window: window,
                    out_window: 2,
                    handle: Some(0),
                    delivery_count: Some(0),
                    credit: Some(10),
                    ..FL
                },
            );
            c.none();
        }
    }
}

/// A window used up by the same transfer that used up the link's credit holds nothing back:
/// the sender could not send more either way, and it says it has nothing more (no
/// `available`), so neither the session nor the link is stuck.
#[test]
fn a_session_window_used_up_with_the_links_credit_is_not_diagnosed() {
    let lim = [
        ("amqp10.session.window-exhausted", 1.0),
        ("amqp10.link.credit-exhausted", 1.0),
    ];
    let mut c = sending_link(&lim, 2);
    two_settled_after(
        &mut c,
        Fl {
            next_in: Some(0),
            in_window: 2,
            out_window: 2,
            handle: Some(0),
            delivery_count: Some(0),
            credit: Some(2),
            ..FL
        },
    );
    c.none();
}

/// The receiver's flow `flow` on the `orders` link, two transfers that the receiver then
/// settles, 2 s of silence, and the close.
fn two_settled_after(c: &mut Conv, flow: Fl) {
    c.s(&a10::flow_of(0, flow));
    c.c(&a10::transfer(0, 0, 0));
    c.c(&a10::transfer(0, 0, 1));
    c.s(&a10::disposition(0, true, 0, 1, 0x24));
    c.wait(2000);
    c.close();
}

/// `sent` settled transfers on the `orders` link (nothing to wait for), 2 s of silence, and the
/// close.
fn settled_then_silence(c: &mut Conv, sent: u32) {
    for id in 0..sent {
        c.c(&a10::transfer_with(0, 0, id, true, &a10::data(b"hello")));
    }
    c.wait(2000);
    c.close();
}

/// Settled transfers in a run use up the link's credit as the sender counts them (§2.6.7:
/// each advances its delivery-count): a sender that says it has more is diagnosed when the
/// run took the last credit, not when one is left.
#[test]
fn credit_used_up_by_a_run_of_settled_transfers_is_diagnosed_and_one_left_is_not() {
    let lim = [("amqp10.link.credit-exhausted", 1.0)];
    let run = |sent: u32| {
        let mut c = sending_link(&lim, 1000);
        c.s(&a10::flow(0, 0, Some(0), 6, 0));
        c.c(&a10::flow_of(
            0,
            Fl {
                handle: Some(0),
                credit: Some(0),
                available: Some(50),
                ..FL
            },
        ));
        settled_then_silence(&mut c, sent);
        c
    };
    let c = run(6);
    c.one("amqp10.link.credit-exhausted");
    assert_eq!(c.started().len(), 1, "{}", c.dump());
    run(5).none();
}

/// Settled transfers in a run use up the partner's session window (§2.5.6): diagnosed when
/// the run took the last of it, once however many transfers follow, and not when one is left.
#[test]
fn a_session_window_used_up_by_a_run_of_settled_transfers_is_diagnosed_and_one_left_is_not() {
    let lim = [("amqp10.session.window-exhausted", 1.0)];
    let run = |sent: u32| {
        let mut c = sending_link(&lim, 6);
        c.s(&a10::flow_of(
            0,
            Fl {
                in_window: 6,
                out_window: 6,
                handle: Some(0),
                delivery_count: Some(0),
                credit: Some(100),
                ..FL
            },
        ));
        settled_then_silence(&mut c, sent);
        c
    };
    for sent in [6, 9] {
        let c = run(sent);
        c.one("amqp10.session.window-exhausted");
        assert_eq!(c.started().len(), 1, "{sent}: {}", c.dump());
    }
    run(5).none();
}

#[test]
fn a_flow_without_delivery_count_after_deliveries_is_diagnosed_and_one_with_it_is_not() {
    let lim = [("amqp10.link.sender-idle-after-flow-without-count", 1.0)];
    let run = |count: Option<u32>| {
        let mut c = sending_link(&lim, 1000);
        c.s(&a10::flow(0, 0, Some(0), 2, 0));
        c.c(&a10::transfer(0, 0, 0));
        c.c(&a10::transfer(0, 0, 1));
        c.s(&a10::disposition(0, true, 0, 1, 0x24));
        c.s(&a10::flow(0, 0, count, 2, 2));
        if count.is_some() {
            c.c(&a10::transfer(0, 0, 2));
            c.s(&a10::disposition(0, true, 2, 2, 0x24));
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(None);
    c.one("amqp10.link.sender-idle-after-flow-without-count");
    assert_eq!(c.started().len(), 1, "{}", c.dump());
    run(Some(2)).none();
}

#[test]
fn a_first_flow_without_delivery_count_is_not_diagnosed() {
    // §2.7.4: a receiver that has not yet seen the sender's attach sends no delivery-count;
    // the sender then counts from its initial-delivery-count and has the credit.
    let lim = [("amqp10.link.sender-idle-after-flow-without-count", 1.0)];
    let mut c = sending_link(&lim, 1000);
    c.s(&a10::flow(0, 0, None, 2, 0));
    c.wait(2000);
    c.close();
    c.none();
}

#[test]
fn an_unanswered_drain_is_diagnosed_and_an_answered_one_is_not() {
    let lim = [("amqp10.link.drain-unanswered", 1.0)];
    let run = |answer: bool| {
        let mut c = sending_link(&lim, 1000);
        c.s(&a10::flow_of(
            0,
            Fl {
                handle: Some(0),
                delivery_count: Some(0),
                credit: Some(5),
                drain: true,
                ..FL
            },
        ));
        if answer {
            // The sender has nothing: it advances delivery-count by the credit (§2.6.7).
            c.c(&a10::flow_of(
                0,
                Fl {
                    handle: Some(0),
                    delivery_count: Some(5),
                    credit: Some(0),
                    available: Some(0),
                    drain: true,
                    ..FL
                },
            ));
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(false);
    c.one("amqp10.link.drain-unanswered");
    assert_eq!(c.started().len(), 1, "{}", c.dump());
    run(true).none();
}

#[test]
fn an_unsettled_delivery_is_diagnosed_and_a_settled_one_is_not() {
    let lim = [("amqp10.link.unsettled", 1.0)];
    let run = |settle: bool| {
        let mut c = sending_link(&lim, 1000);
        c.s(&a10::flow(0, 0, Some(0), 10, 0));
        let at = c.c(&a10::transfer(0, 0, 0));
        if settle {
            c.wait(500);
            c.s(&a10::disposition(0, true, 0, 0, 0x24));
        }
        c.wait(2000);
        c.close();
        (c, at)
    };
    let (c, at) = run(false);
    let d = c.one("amqp10.link.unsettled");
    assert_eq!(d.evidence[0].offset, at, "{}", c.dump());
    assert_eq!(d.at.0 - d.since.0, 1_000_000);
    let end = &c.ends_of("amqp10.link.unsettled")[0];
    assert_eq!(end.ended.as_ref().unwrap().why, EndWhy::CaptureEnded);
    run(true).0.none();
}

#[test]
fn a_peer_silent_past_the_idle_time_out_is_diagnosed_and_one_sending_empty_frames_is_not() {
    let run = |beat: bool| {
        let mut c = Conv::new(&[]);
        handshake_10(&mut c, Some(1000), 1000);
        for _ in 0..6 {
            c.wait(450);
            c.s(a10::EMPTY);
            if beat {
                c.c(a10::EMPTY);
            }
        }
        c.c(&a10::close());
        c.s(&a10::close());
        c.close();
        c
    };
    let c = run(false);
    let d = c.one("amqp10.connection.idle-timeout");
    assert_eq!(d.name, "client");
    assert_eq!(d.ended.as_ref(), None);
    let end = &c.ends_of("amqp10.connection.idle-timeout")[0];
    assert_eq!(
        end.ended.as_ref().unwrap().why,
        EndWhy::Cleared,
        "{}",
        c.dump()
    );
    run(true).none();
}

#[test]
fn a_link_detached_with_an_error_is_diagnosed_and_one_re_attached_is_not() {
    let lim = [("amqp10.link.detached-error", 1.0)];
    let run = |reattach: bool| {
        let mut c = sending_link(&lim, 1000);
        c.s(&a10::flow(0, 0, Some(0), 10, 0));
        c.s(&a10::detach(0, 0, Some("amqp:resource-deleted")));
        c.c(&a10::detach(0, 0, None));
        if reattach {
            c.wait(300);
            c.c(&a10::attach(0, "orders", 0, false, "q"));
            c.s(&a10::attach(0, "orders", 0, true, "q"));
            c.s(&a10::flow(0, 0, Some(0), 10, 0));
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(false);
    let d = c.one("amqp10.link.detached-error");
    assert!(d.detail.contains("amqp:resource-deleted"), "{}", d.detail);
    assert_eq!(c.started().len(), 1, "{}", c.dump());
    run(true).none();
}

#[test]
fn a_link_detached_without_error_is_not_diagnosed() {
    let lim = [("amqp10.link.detached-error", 1.0)];
    let mut c = sending_link(&lim, 1000);
    c.s(&a10::flow(0, 0, Some(0), 10, 0));
    c.c(&a10::detach(0, 0, None));
    c.s(&a10::detach(0, 0, None));
    c.wait(2000);
    c.close();
    c.none();
}

/// A `$cbs` link (client sending on handle 0) with credit.
fn cbs_link(limits: &[(&str, f64)]) -> Conv {
    let mut c = Conv::new(limits);
    handshake_10(&mut c, None, 1000);
    c.c(&a10::attach(0, "cbs-sender", 0, false, "$cbs"));
    c.s(&a10::attach(0, "cbs-sender", 0, true, "$cbs"));
    c.s(&a10::flow(0, 0, Some(0), 10, 0));
    c
}

#[test]
fn a_cbs_token_near_its_expiry_is_diagnosed_and_a_refreshed_one_is_not() {
    let lim = [("amqp10.cbs.token-expiring", 2.0)];
    let aud = "sb://ns.servicebus.windows.net/orders";
    let run = |refresh: bool| {
        let mut c = cbs_link(&lim);
        let exp = (c.now / 1000) + 5000;
        c.c(&a10::transfer_with(
            0,
            0,
            0,
            true,
            &a10::put_token(aud, exp),
        ));
        if refresh {
            c.wait(1000);
            let exp = (c.now / 1000) + 60_000;
            c.c(&a10::transfer_with(
                0,
                0,
                1,
                true,
                &a10::put_token(aud, exp),
            ));
        }
        c.wait(4000);
        c.close();
        (c, exp)
    };
    let (c, exp) = run(false);
    let d = c.one("amqp10.cbs.token-expiring");
    assert!(d.name.contains("orders"), "{}", d.name);
    assert_eq!(d.at.0, exp * 1000 - 2_000_000);
    run(true).0.none();
}

#[test]
fn a_cbs_token_far_from_expiry_is_not_diagnosed() {
    let mut c = cbs_link(&[]);
    let exp = (c.now / 1000) + 3_600_000;
    c.c(&a10::transfer_with(
        0,
        0,
        0,
        true,
        &a10::put_token("aud", exp),
    ));
    c.wait(5000);
    c.close();
    c.none();
}

/// A link `in` the client receives on (handle 1), with credit 10.
fn receiving_link(limits: &[(&str, f64)]) -> Conv {
    let mut c = Conv::new(limits);
    handshake_10(&mut c, None, 1000);
    c.c(&a10::attach(0, "in", 1, true, "q"));
    c.s(&a10::attach(0, "in", 1, false, "q"));
    c.c(&a10::flow(0, 1, Some(0), 10, 0));
    c
}

#[test]
fn a_message_redelivered_again_and_again_is_diagnosed_and_single_redeliveries_are_not() {
    let lim = [("amqp.delivery.redelivery-loop", 3.0)];
    let mut c = receiving_link(&lim);
    for (id, count) in (0..4).zip(0..4) {
        let msg = a10::message_redelivered(count, "poison-1");
        c.s(&a10::transfer_with(0, 1, id, false, &msg));
        c.c(&a10::disposition(0, true, id, id, 0x26));
    }
    c.close();
    let d = c.one("amqp.delivery.redelivery-loop");
    assert!(d.detail.contains("3 times"), "{}", d.detail);
    assert_eq!(c.started().len(), 1, "{}", c.dump());

    let mut ok = receiving_link(&lim);
    for id in 0..4 {
        let msg = a10::message_redelivered(1, &format!("m-{id}"));
        ok.s(&a10::transfer_with(0, 1, id, false, &msg));
        ok.c(&a10::disposition(0, true, id, id, 0x24));
    }
    ok.close();
    ok.none();
}

#[test]
fn a_pre_settled_message_redelivered_again_and_again_is_diagnosed_and_others_are_not() {
    // Pre-settled transfers that leave nothing waiting are counted in runs, not followed one
    // by one: a run must still read each message's header.
    let lim = [("amqp.delivery.redelivery-loop", 3.0)];
    let mut c = receiving_link(&lim);
    for id in 0..4 {
        c.s(&a10::transfer_with(
            0,
            1,
            id,
            true,
            &a10::message_redelivered(0, "warm"),
        ));
    }
    for (id, count) in (4..8).zip(0..4) {
        let msg = a10::message_redelivered(count, "poison-1");
        c.s(&a10::transfer_with(0, 1, id, true, &msg));
    }
    c.close();
    let d = c.one("amqp.delivery.redelivery-loop");
    assert!(d.detail.contains("3 times"), "{}", d.detail);

    let mut ok = receiving_link(&lim);
    for id in 0..8 {
        let msg = a10::message_redelivered(1, &format!("m-{id}"));
        ok.s(&a10::transfer_with(0, 1, id, true, &msg));
    }
    ok.close();
    ok.none();
}

// ------------------------------------------------------------------ AMQP 0-9-1

/// Handshake (no heartbeat), then a consumer `ctag` of queue `q` on channel 1 with
/// prefetch-count `prefetch`.
fn consumer(limits: &[(&str, f64)], prefetch: u16) -> Conv {
    let mut c = Conv::new(limits);
    handshake_091(&mut c, 0);
    c.c(&a091::m(
        1,
        K::BasicQos,
        &[("prefetch-count", Value::Short(prefetch))],
    ));
    c.s(&a091::m(1, K::BasicQosOk, &[]));
    c.c(&a091::m(
        1,
        K::BasicConsume,
        &[("queue", ss("q")), ("consumer-tag", ss("ctag"))],
    ));
    c.s(&a091::m(
        1,
        K::BasicConsumeOk,
        &[("consumer-tag", ss("ctag"))],
    ));
    c
}

#[test]
fn a_full_prefetch_never_acked_is_diagnosed_and_acked_deliveries_are_not() {
    let lim = [
        ("amqp091.consumer.prefetch-full", 1.0),
        ("amqp091.channel.unacked", 1.0),
    ];
    let run = |ack: bool| {
        let mut c = consumer(&lim, 1);
        for t in 1..=3 {
            c.s(&a091::deliver("ctag", t, false, None));
            if ack {
                c.wait(200);
                c.c(&a091::m(1, K::BasicAck, &[tag(t)]));
            } else {
                break;
            }
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(false);
    let full = c.one("amqp091.consumer.prefetch-full");
    assert_eq!(full.scope, ScopeKind::Consumer);
    assert!(full.name.contains("ctag"), "{}", full.name);
    let un = c.one("amqp091.channel.unacked");
    assert_eq!(un.name, "channel 1");
    assert_eq!(c.started().len(), 2, "{}", c.dump());
    run(true).none();
}

#[test]
fn an_unconfirmed_publish_is_diagnosed_and_a_confirmed_one_is_not() {
    let lim = [("amqp091.channel.unconfirmed", 1.0)];
    let run = |confirm: bool| {
        let mut c = Conv::new(&lim);
        handshake_091(&mut c, 0);
        c.c(&a091::m(1, K::ConfirmSelect, &[]));
        c.s(&a091::m(1, K::ConfirmSelectOk, &[]));
        let mut publish = a091::m(1, K::BasicPublish, &[("routing-key", ss("q"))]);
        publish.extend(a091::content(1, b"hello", None));
        c.c(&publish);
        if confirm {
            c.wait(300);
            c.s(&a091::m(1, K::BasicAck, &[tag(1)]));
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(false);
    let d = c.one("amqp091.channel.unconfirmed");
    assert!(d.detail.contains("1 publishes unconfirmed"), "{}", d.detail);
    assert_eq!(c.started().len(), 1, "{}", c.dump());
    run(true).none();
}

#[test]
fn a_blocked_connection_is_diagnosed_until_unblocked() {
    let mut c = Conv::new(&[]);
    handshake_091(&mut c, 0);
    let at = c.s(&a091::m(
        0,
        K::ConnectionBlocked,
        &[("reason", ss("low on memory"))],
    ));
    c.wait(500);
    c.s(&a091::m(0, K::ConnectionUnblocked, &[]));
    c.close();
    let d = c.one("amqp091.connection.blocked");
    assert_eq!(d.evidence[0].offset, at);
    assert!(d.detail.contains("low on memory"), "{}", d.detail);
    let end = &c.ends_of("amqp091.connection.blocked")[0];
    assert_eq!(end.ended.as_ref().unwrap().why, EndWhy::Cleared);
    assert_eq!(end.held_us(end.ended.as_ref().unwrap().ts), 500_000 + 1000);

    // The same publishing connection, never blocked.
    let mut ok = Conv::new(&[]);
    handshake_091(&mut ok, 0);
    let mut publish = a091::m(1, K::BasicPublish, &[("routing-key", ss("q"))]);
    publish.extend(a091::content(1, b"hello", None));
    ok.c(&publish);
    ok.wait(500);
    ok.close();
    ok.none();
}

#[test]
fn a_peer_silent_two_heartbeat_intervals_is_diagnosed_and_one_beating_each_interval_is_not() {
    // §4.2.7: a peer closes after no traffic for two intervals; a peer that sends a heartbeat
    // once an interval (jitter making a silence a little longer) is healthy.
    let run = |client_beats: bool| {
        let mut c = Conv::new(&[]);
        handshake_091(&mut c, 1);
        for _ in 0..8 {
            c.wait(500);
            c.s(&a091::heartbeat());
            if client_beats {
                c.wait(600);
                c.c(&a091::heartbeat());
            }
        }
        c.c(&a091::m(
            0,
            K::ConnectionClose,
            &[("reply-code", Value::Short(200)), ("reply-text", ss("OK"))],
        ));
        c.s(&a091::m(0, K::ConnectionCloseOk, &[]));
        c.close();
        c
    };
    let c = run(false);
    let d = c.one("amqp091.connection.heartbeat-missed");
    assert_eq!(d.name, "client");
    assert_eq!(d.at.0 - d.since.0, 2_000_000, "{}", c.dump());
    run(true).none();
}

#[test]
fn a_consumer_cancelled_by_the_broker_is_diagnosed_and_one_consumed_again_is_not() {
    let lim = [("amqp091.consumer.cancelled", 1.0)];
    let run = |reconsume: bool| {
        let mut c = consumer(&lim, 10);
        c.s(&a091::m(1, K::BasicCancel, &[("consumer-tag", ss("ctag"))]));
        if reconsume {
            c.wait(300);
            c.c(&a091::m(
                1,
                K::BasicConsume,
                &[("queue", ss("q")), ("consumer-tag", ss("ctag-2"))],
            ));
            c.s(&a091::m(
                1,
                K::BasicConsumeOk,
                &[("consumer-tag", ss("ctag-2"))],
            ));
        }
        c.wait(2000);
        c.close();
        c
    };
    let c = run(false);
    let d = c.one("amqp091.consumer.cancelled");
    assert!(d.name.contains("\"q\""), "{}", d.name);
    assert_eq!(c.started().len(), 1, "{}", c.dump());
    run(true).none();
}

#[test]
fn a_consumer_the_client_cancels_is_not_diagnosed() {
    let lim = [("amqp091.consumer.cancelled", 1.0)];
    let mut c = consumer(&lim, 10);
    c.c(&a091::m(1, K::BasicCancel, &[("consumer-tag", ss("ctag"))]));
    c.s(&a091::m(
        1,
        K::BasicCancelOk,
        &[("consumer-tag", ss("ctag"))],
    ));
    c.wait(2000);
    c.close();
    c.none();
}

#[test]
fn a_message_redelivered_again_and_again_on_0_9_1_is_diagnosed_and_acked_redeliveries_are_not() {
    let lim = [("amqp.delivery.redelivery-loop", 3.0)];
    let mut c = consumer(&lim, 10);
    for t in 1..=4 {
        c.s(&a091::deliver("ctag", t, t > 1, Some("poison")));
        c.c(&a091::m(
            1,
            K::BasicReject,
            &[tag(t), ("requeue", Value::Bit(true))],
        ));
    }
    c.close();
    let d = c.one("amqp.delivery.redelivery-loop");
    assert!(d.detail.contains("poison"), "{}", d.detail);
    assert_eq!(c.started().len(), 1, "{}", c.dump());

    let mut ok = consumer(&lim, 10);
    for t in 1..=6 {
        let id = format!("m-{}", t / 2);
        ok.s(&a091::deliver("ctag", t, t % 2 == 1, Some(&id)));
        ok.c(&a091::m(1, K::BasicAck, &[tag(t)]));
    }
    ok.close();
    ok.none();
}

#[test]
fn the_clock_starts_diagnoses_at_their_threshold_whichever_tick_notices() {
    // One tick long after the threshold: the diagnosis still starts when the condition had
    // held its threshold.
    let mut c = consumer(&[("amqp091.channel.unacked", 1.0)], 0);
    c.s(&a091::deliver("ctag", 1, false, None));
    let since = c.now;
    c.now += 10_000_000;
    c.close();
    let d = c.one("amqp091.channel.unacked");
    assert_eq!(d.since.0, since);
    assert_eq!(d.at.0, since + 1_000_000);
    assert!(d.at.0 > T0);
}

#[test]
fn a_redelivery_loop_ends_when_the_latest_attempt_is_accepted() {
    // The loop is diagnosed at the threshold's attempt; later attempts are released again,
    // and the acceptance of the last one (not of the attempt it was diagnosed at) ends it.
    let lim = [("amqp.delivery.redelivery-loop", 2.0)];
    let mut c = receiving_link(&lim);
    for id in 0..5u32 {
        let msg = a10::message_redelivered(id, "poison-1");
        c.s(&a10::transfer_with(0, 1, id, false, &msg));
        let outcome = if id == 4 { 0x24 } else { 0x26 };
        c.c(&a10::disposition(0, true, id, id, outcome));
    }
    let end = c.ends_of("amqp.delivery.redelivery-loop");
    assert_eq!(end.len(), 1, "{}", c.dump());
    assert_eq!(end[0].ended.as_ref().unwrap().why, EndWhy::Cleared);

    let mut c = consumer(&lim, 10);
    for t in 1..=5 {
        c.s(&a091::deliver("ctag", t, t > 1, Some("poison")));
        if t < 5 {
            c.c(&a091::m(
                1,
                K::BasicNack,
                &[tag(t), ("requeue", Value::Bit(true))],
            ));
        } else {
            c.c(&a091::m(1, K::BasicAck, &[tag(t)]));
        }
    }
    let end = c.ends_of("amqp.delivery.redelivery-loop");
    assert_eq!(end.len(), 1, "{}", c.dump());
    assert_eq!(end[0].ended.as_ref().unwrap().why, EndWhy::Cleared);
}

#[test]
fn a_drain_answered_by_transfers_consuming_all_credit_is_not_diagnosed() {
    // §2.6.7: the sender answers a drain by "consuming all link-credit"; here its transfers
    // do, so nothing is left to drain.
    let lim = [("amqp10.link.drain-unanswered", 1.0)];
    let mut c = sending_link(&lim, 1000);
    c.s(&a10::flow_of(
        0,
        Fl {
            handle: Some(0),
            delivery_count: Some(0),
            credit: Some(2),
            drain: true,
            ..FL
        },
    ));
    c.c(&a10::transfer(0, 0, 0));
    c.c(&a10::transfer(0, 0, 1));
    c.s(&a10::disposition(0, true, 0, 1, 0x24));
    c.wait(2000);
    c.close();
    c.none();
}

#[test]
fn a_receiver_granting_credit_before_the_senders_attach_is_not_diagnosed() {
    // A receiver may pipeline its flow after its own attach, before the sender's answers.
    let lim = [("amqp10.link.no-credit", 1.0)];
    let mut c = Conv::new(&lim);
    handshake_10(&mut c, None, 1000);
    c.c(&a10::attach(0, "in", 1, true, "q"));
    c.c(&a10::flow(0, 1, None, 10, 0));
    c.s(&a10::attach(0, "in", 1, false, "q"));
    c.wait(2000);
    c.close();
    c.none();
}

#[test]
fn a_consumer_cancelled_because_its_own_client_deleted_the_queue_is_not_diagnosed() {
    let lim = [("amqp091.consumer.cancelled", 1.0)];
    let mut c = consumer(&lim, 10);
    c.c(&a091::m(2, K::ChannelOpen, &[]));
    c.s(&a091::m(2, K::ChannelOpenOk, &[]));
    c.c(&a091::m(2, K::QueueDelete, &[("queue", ss("q"))]));
    c.s(&a091::m(1, K::BasicCancel, &[("consumer-tag", ss("ctag"))]));
    c.s(&a091::m(
        2,
        K::QueueDeleteOk,
        &[("message-count", Value::Long(0))],
    ));
    c.wait(2000);
    c.close();
    c.none();
}

#[test]
fn pre_settled_transfers_are_never_unsettled() {
    let lim = [("amqp10.link.unsettled", 1.0)];
    let mut c = sending_link(&lim, 1000);
    c.s(&a10::flow(0, 0, Some(0), 10, 0));
    for id in 0..3 {
        c.c(&a10::transfer_with(0, 0, id, true, &a10::data(b"x")));
    }
    c.wait(2000);
    c.close();
    c.none();
}

#[test]
fn publishes_confirmed_by_one_multiple_ack_or_a_nack_are_not_unconfirmed() {
    let lim = [("amqp091.channel.unconfirmed", 1.0)];
    let mut c = Conv::new(&lim);
    handshake_091(&mut c, 0);
    c.c(&a091::m(1, K::ConfirmSelect, &[]));
    c.s(&a091::m(1, K::ConfirmSelectOk, &[]));
    for _ in 0..4 {
        let mut publish = a091::m(1, K::BasicPublish, &[("routing-key", ss("q"))]);
        publish.extend(a091::content(1, b"hello", None));
        c.c(&publish);
    }
    c.s(&a091::m(
        1,
        K::BasicAck,
        &[tag(3), ("multiple", Value::Bit(true))],
    ));
    c.s(&a091::m(1, K::BasicNack, &[tag(4)]));
    c.wait(2000);
    c.close();
    c.none();
}

#[test]
fn a_no_ack_consumer_never_waits_for_acks() {
    let lim = [
        ("amqp091.channel.unacked", 1.0),
        ("amqp091.consumer.prefetch-full", 1.0),
    ];
    let mut c = Conv::new(&lim);
    handshake_091(&mut c, 0);
    c.c(&a091::m(
        1,
        K::BasicQos,
        &[("prefetch-count", Value::Short(1))],
    ));
    c.s(&a091::m(1, K::BasicQosOk, &[]));
    c.c(&a091::m(
        1,
        K::BasicConsume,
        &[
            ("queue", ss("q")),
            ("consumer-tag", ss("ctag")),
            ("no-ack", Value::Bit(true)),
        ],
    ));
    c.s(&a091::m(
        1,
        K::BasicConsumeOk,
        &[("consumer-tag", ss("ctag"))],
    ));
    for t in 1..=3 {
        c.s(&a091::deliver("ctag", t, false, None));
    }
    c.wait(2000);
    c.close();
    c.none();
}
