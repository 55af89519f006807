//! AMQP 1.0 state tracking, rule by rule: for every rule a conversation that breaks it and one
//! that does not, scripted frame by frame through `Inspector` in both directions.

mod state_amqp10_common;

use amqpeek::codec::amqp10::Value;
use amqpeek::event::Dir;
use state_amqp10_common::*;

// ---- connection -------------------------------------------------------------------------

#[test]
fn client_sends_begin_before_open() {
    let mut c = Convo::new();
    c.bytes(Dir::C2S, AMQP);
    c.c(0, begin(None, 0, 10, 10));
    c.expect(&["amqp10.connection.first-frame-not-open"]);
    assert_eq!(c.violations[0].offset, 8, "offset of the begin frame");
    assert_eq!(c.violations[0].dir, Dir::C2S);
}

#[test]
fn pipelined_open_and_begin_are_fine() {
    let mut c = Convo::new();
    c.bytes(Dir::C2S, AMQP);
    c.c(0, open(&[]));
    c.c(0, begin(None, 0, 10, 10));
    c.bytes(Dir::S2C, AMQP);
    c.s(0, open(&[]));
    c.s(0, begin(Some(0), 0, 10, 10));
    c.c(0, close());
    c.s(0, close());
    c.expect_clean();
    assert_eq!(c.snapshot()["connection"]["state"], "END");
}

#[test]
fn client_sends_begin_after_its_close() {
    let mut c = Convo::opened();
    c.c(0, close());
    c.c(0, begin(None, 0, 10, 10));
    c.expect(&["amqp10.connection.frame-after-close"]);
}

#[test]
fn server_answers_close_with_close_only() {
    let mut c = Convo::session();
    c.c(0, close());
    // The server may still send (CLOSE_RCVD), then closes.
    c.s(0, flow(Some(0), 10, 0, 10));
    c.s(0, close());
    c.expect_clean();
}

#[test]
fn client_sends_a_second_open() {
    let mut c = Convo::opened();
    c.c(0, open(&[]));
    c.expect(&["amqp10.connection.illegal-frame-for-state"]);
}

#[test]
fn server_answers_with_a_different_protocol_header_then_client_keeps_talking() {
    let mut c = Convo::new();
    c.bytes(Dir::C2S, AMQP);
    c.bytes(Dir::S2C, SASL);
    c.c(0, open(&[]));
    c.expect(&["amqp10.connection.frame-after-header-mismatch"]);
}

#[test]
fn client_sends_frame_larger_than_server_max_frame_size() {
    let mut c = Convo::opened_with(&[(2, u(512))]);
    c.c(0, begin(None, 0, 10, 10));
    c.s(0, begin(Some(0), 0, 10, 10));
    c.c(0, attach_sender("L", 0, &[]));
    c.s(0, attach_receiver("L", 0, &[]));
    c.s(0, link_flow(0, Some(0), Some(10), false));
    c.c_payload(
        0,
        transfer(0, Some(0), Some(b"t"), Some(true), false, &[]),
        // One data section of 592 bytes: 600 bytes of payload.
        &[&[0x00, 0x53, 0x75, 0xb0, 0, 0, 0x02, 0x50][..], &[0u8; 592]].concat(),
    );
    c.expect(&["amqp10.connection.frame-too-large"]);
    // 500 bytes fit.
    let mut ok = Convo::opened_with(&[(2, u(512))]);
    ok.c(0, begin(None, 0, 10, 10));
    ok.s(0, begin(Some(0), 0, 10, 10));
    ok.c(0, attach_sender("L", 0, &[]));
    ok.s(0, attach_receiver("L", 0, &[]));
    ok.s(0, link_flow(0, Some(0), Some(10), false));
    ok.c_payload(
        0,
        transfer(0, Some(0), Some(b"t"), Some(true), false, &[]),
        &message(None),
    );
    ok.expect_clean();
}

#[test]
fn client_pipelines_a_frame_above_512_before_the_servers_open() {
    let mut c = Convo::new();
    c.bytes(Dir::C2S, AMQP);
    c.c(
        0,
        open(&[(9, Value::Map(vec![(sym("big"), s(&"x".repeat(600)))]))]),
    );
    c.expect(&["amqp10.connection.frame-too-large"]);
}

#[test]
fn server_announces_max_frame_size_below_512() {
    let c = Convo::opened_with(&[(2, u(100))]);
    c.expect(&["amqp10.connection.max-frame-size-too-small"]);
    Convo::opened_with(&[(2, u(512))]).expect_clean();
}

#[test]
fn server_sends_channel_max_0_client_begins_on_channel_3() {
    let mut c = Convo::opened_with(&[(3, Value::Ushort(0))]);
    c.c(3, begin(None, 0, 10, 10));
    c.expect(&["amqp10.connection.channel-max-exceeded"]);
    let mut ok = Convo::opened_with(&[(3, Value::Ushort(3))]);
    ok.c(3, begin(None, 0, 10, 10));
    ok.expect_clean();
}

#[test]
fn empty_frame_on_channel_2_before_the_servers_open() {
    let mut c = Convo::new();
    c.bytes(Dir::C2S, AMQP);
    c.c(0, open(&[]));
    c.frame(Dir::C2S, 0, 2, None, &[]);
    c.expect(&["amqp10.connection.empty-frame-channel"]);
    let mut ok = Convo::new();
    ok.bytes(Dir::C2S, AMQP);
    ok.c(0, open(&[]));
    ok.frame(Dir::C2S, 0, 0, None, &[]);
    ok.expect_clean();
}

#[test]
fn client_silent_longer_than_the_servers_idle_timeout() {
    let mut c = Convo::opened_with(&[(4, u(1000))]);
    c.advance_ms(5000);
    c.frame(Dir::C2S, 0, 0, None, &[]);
    c.expect(&["amqp10.connection.idle-timeout-exceeded"]);
    assert!(
        c.violations[0].message.contains("1000 ms"),
        "{}",
        c.violations[0].message
    );
    // Heartbeats every 500 ms keep it.
    let mut ok = Convo::opened_with(&[(4, u(1000))]);
    for _ in 0..10 {
        ok.advance_ms(500);
        ok.frame(Dir::C2S, 0, 0, None, &[]);
    }
    ok.c(0, close());
    ok.s(0, close());
    ok.close_tcp();
    ok.expect_clean();
}

#[test]
fn client_silent_until_the_connection_drops() {
    let mut c = Convo::opened_with(&[(4, u(1000))]);
    c.advance_ms(3000);
    c.close_tcp();
    // Silent past the server's idle-time-out, then both closed the TCP connection without a
    // close frame. A capture's `FIN both ways` does not say who left first, and the one who
    // did not only answered the other's leaving: neither is blamed for the missing close.
    c.expect(&["amqp10.connection.idle-timeout-exceeded"]);
    // The proxy knows: the client left first without a close frame (§2.4.3: "Prior to
    // closing a connection, each peer MUST write a close frame"); the server closing after it
    // is the right answer, not a breach of its own.
    let mut proxied = Convo::opened_with(&[(4, u(1000))]);
    proxied.advance_ms(3000);
    proxied.end_with("client closed");
    proxied.expect(&[
        "amqp10.connection.idle-timeout-exceeded",
        "amqp10.connection.closed-without-close",
    ]);
    assert_eq!(proxied.violations[1].dir, Dir::C2S);
    // A capture that merely ends says nothing about either.
    let mut cut = Convo::opened_with(&[(4, u(1000))]);
    cut.advance_ms(3000);
    cut.capture_ends();
    cut.expect_clean();
}

/// §2.4.3: a peer that resets (or closes) the TCP connection after its open without a close
/// frame. Only the peer that closed its side is reported; with closes exchanged, clean.
#[test]
fn a_peer_that_resets_the_connection_without_a_close_frame() {
    let mut c = Convo::session();
    c.end_with("reset by server");
    c.expect(&["amqp10.connection.closed-without-close"]);
    assert_eq!(c.violations[0].dir, Dir::S2C);
    let mut proxied = Convo::session();
    proxied.c(0, close());
    proxied.end_with("client closed, then upstream reset: Connection reset by peer (os error 104)");
    proxied.expect(&["amqp10.connection.closed-without-close"]);
    assert!(
        proxied.violations[0]
            .message
            .contains("client had sent its close")
    );
    let mut ok = Convo::session();
    ok.c(0, close());
    ok.s(0, close());
    ok.close_tcp();
    ok.expect_clean();
}

// ---- SASL -------------------------------------------------------------------------------

fn sasl_start() -> Convo {
    let mut c = Convo::new();
    c.bytes(Dir::C2S, SASL);
    c.bytes(Dir::S2C, SASL);
    c
}

#[test]
fn sasl_plain_then_amqp_is_clean() {
    let mut c = sasl_start();
    c.s_sasl(sasl_mechanisms(&["PLAIN", "ANONYMOUS"]));
    c.c_sasl(sasl_init("PLAIN"));
    c.s_sasl(sasl_outcome(0));
    c.bytes(Dir::C2S, AMQP);
    c.bytes(Dir::S2C, AMQP);
    c.c(0, open(&[]));
    c.s(0, open(&[]));
    c.expect_clean();
    let snap = c.snapshot();
    assert_eq!(snap["connection"]["sasl"]["mechanism"], "PLAIN");
    assert_eq!(snap["connection"]["sasl"]["outcome"], "ok");
    assert_eq!(snap["connection"]["state"], "OPENED");
}

#[test]
fn client_sends_sasl_init_before_mechanisms() {
    let mut c = sasl_start();
    c.c_sasl(sasl_init("PLAIN"));
    c.expect(&["amqp10.sasl.unexpected-frame"]);
}

#[test]
fn client_chooses_a_mechanism_the_server_did_not_offer() {
    let mut c = sasl_start();
    c.s_sasl(sasl_mechanisms(&["PLAIN"]));
    c.c_sasl(sasl_init("EXTERNAL"));
    c.expect(&["amqp10.sasl.mechanism-not-offered"]);
}

#[test]
fn client_sends_amqp_header_after_a_failed_outcome() {
    let mut c = sasl_start();
    c.s_sasl(sasl_mechanisms(&["PLAIN"]));
    c.c_sasl(sasl_init("PLAIN"));
    c.s_sasl(sasl_outcome(1));
    c.bytes(Dir::C2S, AMQP);
    c.expect(&["amqp10.sasl.header-before-success"]);
}

// ---- sessions ---------------------------------------------------------------------------

#[test]
fn client_sets_remote_channel_on_its_own_begin() {
    let mut c = Convo::opened();
    c.c(0, begin(Some(5), 0, 10, 10));
    c.expect(&["amqp10.session.remote-channel-on-local-begin"]);
}

#[test]
fn server_begins_twice_on_channel_0() {
    let mut c = Convo::session();
    c.s(0, begin(None, 0, 10, 10));
    c.expect(&["amqp10.session.begin-on-channel-in-use"]);
}

#[test]
fn client_attaches_on_a_channel_it_never_began() {
    let mut c = Convo::session();
    c.c(1, attach_sender("L", 0, &[]));
    c.expect(&["amqp10.session.frame-on-unmapped-channel"]);
}

#[test]
fn client_keeps_sending_on_a_session_it_ended() {
    let mut c = Convo::session();
    c.c(0, end());
    c.c(0, flow(Some(0), 10, 0, 10));
    c.expect(&["amqp10.session.frame-on-unmapped-channel"]);
    // The server may still send until it ends (END_RCVD).
    let mut ok = Convo::session();
    ok.c(0, end());
    ok.s(0, flow(Some(0), 10, 0, 10));
    ok.s(0, end());
    ok.expect_clean();
    assert_eq!(ok.snapshot()["sessions"].as_array().unwrap().len(), 0);
}

/// A link flow granting 100 credits that keeps the session incoming-window at 2.
fn window2_credit100() -> Value {
    amqpeek::codec::amqp10::described_list(
        0x13,
        vec![u(0), u(2), u(0), u(1000), u(0), u(0), u(100)],
    )
}

#[test]
fn client_exceeds_the_servers_incoming_window() {
    let mut c = Convo::opened();
    c.c(0, begin(None, 0, 1000, 1000));
    c.s(0, begin(Some(0), 0, 2, 1000));
    c.c(0, attach_sender("L", 0, &[]));
    c.s(0, attach_receiver("L", 0, &[]));
    c.s(0, window2_credit100());
    for id in 0..3 {
        c.c(
            0,
            transfer(0, Some(id), Some(&[id as u8]), Some(true), false, &[]),
        );
    }
    c.expect(&["amqp10.session.incoming-window-exceeded"]);
    // A flow reopening the window (next-incoming-id 2, incoming-window 2) lets it go on.
    let mut ok = Convo::opened();
    ok.c(0, begin(None, 0, 1000, 1000));
    ok.s(0, begin(Some(0), 0, 2, 1000));
    ok.c(0, attach_sender("L", 0, &[]));
    ok.s(0, attach_receiver("L", 0, &[]));
    ok.s(0, window2_credit100());
    for id in 0..2 {
        ok.c(
            0,
            transfer(0, Some(id), Some(&[id as u8]), Some(true), false, &[]),
        );
    }
    ok.s(0, flow(Some(2), 2, 0, 1000));
    for id in 2..4 {
        ok.c(
            0,
            transfer(0, Some(id), Some(&[id as u8]), Some(true), false, &[]),
        );
    }
    ok.expect_clean();
}

#[test]
fn server_sets_handle_max_0_client_attaches_handle_1() {
    let mut c = Convo::opened();
    c.c(0, begin(None, 0, 10, 10));
    c.s(0, begin_with(Some(0), &[(4, u(0))]));
    c.c(0, attach_sender("L", 1, &[]));
    c.expect(&["amqp10.session.handle-max-exceeded"]);
}

// ---- links ------------------------------------------------------------------------------

#[test]
fn client_attaches_two_links_on_handle_0() {
    let mut c = Convo::session();
    c.c(0, attach_sender("A", 0, &[]));
    c.c(0, attach_sender("B", 0, &[]));
    c.expect(&["amqp10.link.handle-in-use"]);
    // After a detach the handle is free again.
    let mut ok = Convo::session();
    ok.c(0, attach_sender("A", 0, &[]));
    ok.c(0, detach(0, true));
    ok.c(0, attach_sender("B", 0, &[]));
    ok.expect_clean();
}

#[test]
fn client_transfers_on_a_handle_it_never_attached() {
    let mut c = Convo::session();
    c.c(0, transfer(7, Some(0), Some(b"t"), Some(true), false, &[]));
    c.expect(&["amqp10.link.unattached-handle"]);
}

#[test]
fn client_attaches_the_same_link_name_and_direction_twice() {
    let mut c = Convo::session();
    c.c(0, attach_sender("L", 0, &[]));
    c.c(0, attach_sender("L", 1, &[]));
    c.expect(&["amqp10.link.name-in-use"]);
    // Same name, other direction: a different link.
    let mut ok = Convo::session();
    ok.c(0, attach_sender("L", 0, &[]));
    ok.c(0, attach_receiver("L", 1, &[]));
    ok.expect_clean();
}

#[test]
fn client_sends_without_credit() {
    let mut c = Convo::session();
    c.c(0, attach_sender("L", 0, &[]));
    c.s(0, attach_receiver("L", 0, &[]));
    c.c(0, transfer(0, Some(0), Some(b"t"), Some(true), false, &[]));
    c.expect(&["amqp10.link.transfer-without-credit"]);
    let mut c = Convo::sending_link(1);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(true), false, &[]));
    c.c(0, transfer(0, Some(1), Some(b"b"), Some(true), false, &[]));
    c.expect(&["amqp10.link.transfer-without-credit"]);
    assert!(
        c.violations[0].message.contains("link-credit 0"),
        "{}",
        c.violations[0].message
    );
}

#[test]
fn credit_reduced_while_transfers_are_in_flight_is_not_the_senders_fault() {
    let mut c = Convo::sending_link(2);
    c.s(0, link_flow(0, Some(0), Some(0), false)); // stop
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(true), false, &[]));
    c.c(0, transfer(0, Some(1), Some(b"b"), Some(true), false, &[]));
    // In flight under the earlier grant: said to be not judged, once, as info.
    c.expect(&["amqp10.link.excess-not-judged"]);
    c.c(0, transfer(0, Some(2), Some(b"c"), Some(true), false, &[]));
    c.expect(&[
        "amqp10.link.excess-not-judged",
        "amqp10.link.transfer-without-credit",
    ]);
}

#[test]
fn multi_transfer_delivery_uses_one_credit() {
    let mut c = Convo::sending_link(1);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(true), true, &[]));
    c.c(0, transfer(0, None, None, None, true, &[]));
    c.c(0, transfer(0, None, None, None, false, &[]));
    c.expect_clean();
    let l = &c.snapshot()["links"][0];
    assert_eq!(l["delivery-count"], 1);
    assert_eq!(l["link-credit"], 0);
    assert_eq!(l["credit_history"].as_array().unwrap().last().unwrap(), 0);
}

#[test]
fn receiver_transfers_on_its_receiving_link() {
    let mut c = Convo::sending_link(10);
    c.s(0, transfer(0, Some(0), Some(b"t"), Some(true), false, &[]));
    c.expect(&["amqp10.link.transfer-from-receiver"]);
}

#[test]
fn sender_detaches_without_answering_a_drain() {
    let mut c = Convo::sending_link(0);
    c.s(0, link_flow(0, Some(0), Some(10), true));
    c.c(0, detach(0, true));
    c.expect(&["amqp10.link.drain-not-honoured"]);
    // Answered: the sender advances delivery-count to the limit.
    let mut ok = Convo::sending_link(0);
    ok.s(0, link_flow(0, Some(0), Some(10), true));
    ok.c(0, link_flow(0, Some(10), Some(0), false));
    ok.c(0, detach(0, true));
    ok.s(0, detach(0, true));
    ok.expect_clean();
}

#[test]
fn sender_sends_new_delivery_after_incomplete_unsettled() {
    let mut c = Convo::session();
    c.c(0, attach_sender("L", 0, &[]));
    c.s(0, attach_receiver("L", 0, &[(8, b(true))]));
    c.s(0, link_flow(0, Some(0), Some(10), false));
    c.c(0, transfer(0, Some(0), Some(b"t"), Some(true), false, &[]));
    c.expect(&["amqp10.link.new-delivery-after-incomplete-unsettled"]);
}

#[test]
fn closing_detach_answered_without_closed() {
    let mut c = Convo::sending_link(1);
    c.c(0, detach(0, true));
    let at = c.insp.bytes_seen(Dir::S2C);
    c.s(0, detach(0, false));
    // An answer or a crossing detach? Not known until the server moves on.
    c.expect_clean();
    c.s(0, end());
    c.expect(&["amqp10.link.detach-not-closed"]);
    assert_eq!(c.violations[0].dir, Dir::S2C);
    assert_eq!(
        c.violations[0].offset, at,
        "reported at the non-closing detach"
    );
    // The same when the server closes the connection, or the connection just ends.
    for finish in [
        (|c: &mut Convo| c.s(0, close())) as fn(&mut Convo),
        |c: &mut Convo| c.capture_ends(),
    ] {
        let mut c = Convo::sending_link(1);
        c.c(0, detach(0, true));
        c.s(0, detach(0, false));
        finish(&mut c);
        c.expect(&["amqp10.link.detach-not-closed"]);
    }
}

/// §2.6.6: "one peer MAY send a closing detach while its partner is sending a non-closing
/// detach. In this case, the partner MUST signal that it has closed the link by reattaching and
/// then sending a closing detach." Doing exactly that is not detach-not-closed.
#[test]
fn a_non_closing_detach_crossing_a_closing_one_then_reattach_and_close() {
    let mut c = Convo::sending_link(1);
    c.c(0, detach(0, true));
    c.s(0, detach(0, false));
    c.s(0, attach_receiver("L", 0, &[]));
    c.c(0, attach_sender("L", 0, &[]));
    c.s(0, detach(0, true));
    c.c(0, detach(0, true));
    c.s(0, end());
    c.c(0, end());
    c.c(0, close());
    c.s(0, close());
    c.close_tcp();
    c.expect_clean();
}

#[test]
fn flow_without_handle_carries_link_credit() {
    let mut c = Convo::session();
    c.c(
        0,
        amqpeek::codec::amqp10::described_list(
            0x13,
            vec![u(0), u(10), u(0), u(10), NULL, NULL, u(5)],
        ),
    );
    c.expect(&["amqp10.flow.link-fields-without-handle"]);
}

#[test]
fn sender_flow_without_delivery_count() {
    let mut c = Convo::sending_link(1);
    c.c(0, link_flow(0, None, Some(1), false));
    c.expect(&["amqp10.flow.sender-delivery-count-missing"]);
}

#[test]
fn sender_flow_with_a_delivery_count_behind_its_deliveries() {
    // Three deliveries (one of them over two transfers) from initial-delivery-count 0: the
    // sender's delivery-count is 3.
    let sent = |c: &mut Convo| {
        c.c(0, transfer(0, Some(0), Some(b"a"), Some(true), false, &[]));
        c.c(0, transfer(0, Some(1), Some(b"b"), Some(true), true, &[]));
        c.c(0, transfer(0, None, None, None, false, &[]));
        c.c(0, transfer(0, Some(2), Some(b"c"), Some(true), false, &[]));
    };
    let mut stale = Convo::sending_link(10);
    sent(&mut stale);
    stale.c(0, link_flow(0, Some(1), Some(7), false));
    stale.expect(&["amqp10.flow.sender-delivery-count-behind"]);
    assert!(
        stale.violations[0].message.contains("delivery-count is 3"),
        "{}",
        stale.violations[0].message
    );
    let mut current = Convo::sending_link(10);
    sent(&mut current);
    current.c(0, link_flow(0, Some(3), Some(7), false));
    current.expect_clean();
    // The receiver's flow states the last delivery-count it knows: stale is allowed there.
    let mut receiver = Convo::sending_link(10);
    sent(&mut receiver);
    receiver.s(0, link_flow(0, Some(1), Some(10), false));
    receiver.expect_clean();
    // The receiver answering a stale sender flow with the count it received is right: only
    // the sender is reported (seen with RabbitMQ under load, whose flow lagged its transfers).
    let mut answered = Convo::sending_link(10);
    sent(&mut answered);
    answered.c(0, link_flow(0, Some(1), Some(7), false));
    answered.s(0, link_flow(0, Some(3), Some(10), false));
    answered.expect(&["amqp10.flow.sender-delivery-count-behind"]);
}

// ---- deliveries -------------------------------------------------------------------------

#[test]
fn first_transfer_without_delivery_tag() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), None, Some(true), false, &[]));
    c.expect(&["amqp10.delivery.first-transfer-incomplete"]);
}

#[test]
fn continuation_changes_the_delivery_id() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), Some(b"a"), None, true, &[]));
    c.c(0, transfer(0, Some(1), Some(b"a"), None, false, &[]));
    c.expect(&["amqp10.delivery.continuation-mismatch"]);
    assert!(
        c.violations[0]
            .message
            .contains("delivery-id 1 (first transfer: 0)")
    );
}

#[test]
fn new_delivery_reuses_an_unsettled_delivery_id() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(false), false, &[]));
    c.c(0, transfer(0, Some(0), Some(b"b"), Some(false), false, &[]));
    c.expect(&["amqp10.delivery.id-reused"]);
}

#[test]
fn delivery_ids_go_backwards() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(5), Some(b"a"), Some(true), false, &[]));
    c.c(0, transfer(0, Some(3), Some(b"b"), Some(true), false, &[]));
    c.expect(&["amqp10.delivery.id-not-increasing"]);
}

#[test]
fn new_delivery_reuses_an_unsettled_tag() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(false), false, &[]));
    c.c(0, transfer(0, Some(1), Some(b"a"), Some(false), false, &[]));
    c.expect(&["amqp10.delivery.tag-reused"]);
    // Once the receiver settled it, the tag is free.
    let mut ok = Convo::sending_link(10);
    ok.c(0, transfer(0, Some(0), Some(b"a"), Some(false), false, &[]));
    ok.s(0, disposition(true, 0, None, true));
    ok.c(0, transfer(0, Some(1), Some(b"a"), Some(false), false, &[]));
    ok.expect_clean();
    assert_eq!(ok.snapshot()["links"][0]["unsettled"], 1);
}

#[test]
fn transfer_sets_more_and_aborted() {
    let mut c = Convo::sending_link(10);
    c.c(
        0,
        transfer(0, Some(0), Some(b"a"), None, true, &[(9, b(true))]),
    );
    c.expect(&["amqp10.delivery.more-with-aborted"]);
}

#[test]
fn resumed_transfer_not_in_the_senders_unsettled_map() {
    let mut c = Convo::session();
    c.c(
        0,
        attach_sender("L", 0, &[(7, Value::Map(vec![(bin(b"x"), NULL)]))]),
    );
    c.s(0, attach_receiver("L", 0, &[]));
    c.s(0, link_flow(0, Some(0), Some(10), false));
    c.c(
        0,
        transfer(0, Some(0), Some(b"x"), None, false, &[(8, b(true))]),
    );
    c.expect_clean();
    c.c(
        0,
        transfer(0, Some(1), Some(b"y"), None, false, &[(8, b(true))]),
    );
    c.expect(&["amqp10.delivery.resume-not-unsettled"]);
}

#[test]
fn transfer_asks_for_second_on_a_first_link() {
    let mut c = Convo::sending_link(10);
    c.c(
        0,
        transfer(0, Some(0), Some(b"a"), None, false, &[(6, Value::Ubyte(1))]),
    );
    c.expect(&["amqp10.delivery.rcv-settle-mode-illegal"]);
    // The receiver settles first, as the link negotiated: a correct answer to the sender's
    // violation, not a settle-mode-broken of its own.
    c.s(0, disposition(true, 0, None, true));
    c.expect(&["amqp10.delivery.rcv-settle-mode-illegal"]);
}

#[test]
fn transfer_asks_for_second_on_a_second_link_and_the_receiver_settles_first() {
    // The clean counterpart of the above: on a link negotiated as second, a transfer asking
    // for second is legal, and settling first is the receiver's own violation.
    let mut c = Convo::session();
    c.c(0, attach_sender("L", 0, &[(4, Value::Ubyte(1))]));
    c.s(0, attach_receiver("L", 0, &[(4, Value::Ubyte(1))]));
    c.s(0, link_flow(0, Some(0), Some(10), false));
    c.c(
        0,
        transfer(0, Some(0), Some(b"a"), None, false, &[(6, Value::Ubyte(1))]),
    );
    c.expect_clean();
    c.s(0, disposition(true, 0, None, true));
    c.expect(&["amqp10.delivery.settle-mode-broken"]);
}

#[test]
fn settled_sender_sends_unsettled() {
    let mut c = Convo::session();
    c.c(0, attach_sender("L", 0, &[(3, Value::Ubyte(1))]));
    c.s(0, attach_receiver("L", 0, &[(3, Value::Ubyte(1))]));
    c.s(0, link_flow(0, Some(0), Some(10), false));
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(true), false, &[]));
    c.expect_clean();
    c.c(0, transfer(0, Some(1), Some(b"b"), Some(false), false, &[]));
    c.expect(&["amqp10.delivery.settle-mode-broken"]);
}

#[test]
fn receiver_in_mode_second_settles_before_the_sender() {
    let link = |c: &mut Convo| {
        c.c(0, attach_sender("L", 0, &[(4, Value::Ubyte(1))]));
        c.s(0, attach_receiver("L", 0, &[(4, Value::Ubyte(1))]));
        c.s(0, link_flow(0, Some(0), Some(10), false));
        c.c(0, transfer(0, Some(0), Some(b"a"), Some(false), false, &[]));
    };
    let mut c = Convo::session();
    link(&mut c);
    c.s(0, disposition(true, 0, None, true));
    c.expect(&["amqp10.delivery.settle-mode-broken"]);
    // The right order: receiver's state, sender settles, receiver settles.
    let mut ok = Convo::session();
    link(&mut ok);
    ok.s(0, disposition(true, 0, None, false));
    ok.c(0, disposition(false, 0, None, true));
    ok.s(0, disposition(true, 0, None, true));
    ok.expect_clean();
}

#[test]
fn client_with_only_a_sending_link_sends_receiver_disposition() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(false), false, &[]));
    c.c(0, disposition(true, 0, None, true));
    c.expect(&["amqp10.disposition.role-mismatch"]);
}

#[test]
fn disposition_for_deliveries_of_a_detached_link_is_fine() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(false), false, &[]));
    c.c(0, detach(0, false));
    c.s(0, detach(0, false));
    c.s(0, disposition(true, 0, Some(40), true));
    c.s(0, disposition(true, 1000, Some(5), true)); // unknown, wrapping range
    c.expect_clean();
}

// ---- anonymous terminus -----------------------------------------------------------------

fn anonymous(server_offers: bool, client_desires: bool) -> Convo {
    let mut c = Convo::new();
    c.bytes(Dir::C2S, AMQP);
    c.bytes(Dir::S2C, AMQP);
    let relay = syms(&["ANONYMOUS-RELAY"]);
    c.c(
        0,
        open(&if client_desires {
            vec![(8, relay.clone())]
        } else {
            vec![]
        }),
    );
    c.s(
        0,
        open(&if server_offers {
            vec![(7, relay)]
        } else {
            vec![]
        }),
    );
    c.c(0, begin(None, 0, 1000, 1000));
    c.s(0, begin(Some(0), 0, 1000, 1000));
    c.c(0, attach_sender("anon", 0, &[(6, target(None))]));
    c.s(0, attach_receiver("anon", 0, &[(6, target(None))]));
    c.s(0, link_flow(0, Some(0), Some(10), false));
    c
}

#[test]
fn anonymous_message_without_to() {
    let mut c = anonymous(true, true);
    c.expect_clean();
    c.c_payload(
        0,
        transfer(0, Some(0), Some(b"a"), Some(true), false, &[]),
        &message(Some("/queues/q")),
    );
    c.expect_clean();
    c.c_payload(
        0,
        transfer(0, Some(1), Some(b"b"), Some(true), false, &[]),
        &message(None),
    );
    c.expect(&["amqp10.anonymous.message-without-to"]);
    assert_eq!(c.snapshot()["links"][0]["anonymous"], true);
}

#[test]
fn anonymous_link_to_a_server_that_did_not_offer_it() {
    anonymous(false, true).expect(&["amqp10.anonymous.relay-not-offered"]);
}

#[test]
fn anonymous_link_without_desiring_it() {
    anonymous(true, false).expect(&["amqp10.anonymous.relay-not-desired"]);
}

// ---- mid-stream -------------------------------------------------------------------------

#[test]
fn mid_stream_start_learns_instead_of_reporting() {
    use amqpeek::codec::ProtocolHeader;
    use amqpeek::event::Timestamp;
    let mut c = Convo::new();
    let mut out = Vec::new();
    for d in [Dir::C2S, Dir::S2C] {
        c.insp.gap(
            d,
            Timestamp(0),
            0,
            1000,
            "mid-stream".into(),
            Some(ProtocolHeader::Amqp10),
            &mut out,
        );
    }
    // Channel 4, handle 9: never seen begun or attached.
    c.c(
        4,
        transfer(9, Some(77), Some(b"a"), Some(false), false, &[]),
    );
    c.c(4, transfer(9, None, None, None, false, &[]));
    c.s(2, disposition(true, 77, None, true));
    c.s(2, link_flow(3, Some(5), Some(100), false));
    c.c(4, link_flow(9, Some(78), Some(0), false));
    c.expect_clean();
    // New state after the gap is tracked again: a new session and link.
    c.c(6, begin(None, 0, 10, 10));
    c.c(6, begin(None, 0, 10, 10));
    c.expect(&["amqp10.session.begin-on-channel-in-use"]);
}

/// A receiver-initiated link: the client attaches a receiver whose target has no address (as
/// Qpid Proton's receivers do) and the broker, echoing the terminus, answers with a sender
/// attach whose target has no address. Nobody created a sending link to the anonymous relay:
/// no relay-not-offered, relay-not-desired or message-without-to.
#[test]
fn a_broker_echoing_a_receivers_null_target_is_not_the_anonymous_relay() {
    let mut c = Convo::session();
    c.c(0, attach_receiver("in", 0, &[(6, target(None))]));
    c.s(0, attach_sender("in", 0, &[(6, target(None))]));
    c.c(0, link_flow(0, Some(0), Some(10), false));
    for i in 0..3 {
        c.frame(
            Dir::S2C,
            0,
            0,
            Some(&transfer(
                0,
                Some(i),
                Some(&[i as u8]),
                Some(true),
                false,
                &[],
            )),
            &message(None),
        );
    }
    c.expect_clean();
    assert_eq!(c.snapshot()["links"][0]["anonymous"], false);
    // The clean counterpart's opposite: the server *creating* a sending link to the client's
    // anonymous terminus, with no offer from the client, is still judged.
    let mut bad = Convo::session();
    bad.s(0, attach_sender("out", 0, &[(6, target(None))]));
    bad.expect(&[
        "amqp10.anonymous.relay-not-offered",
        "amqp10.anonymous.relay-not-desired",
    ]);
}

// ---- credit and windows lowered with transfers in flight ----------------------------------

/// §2.6.7: "If the link-credit is reduced by the receiver when transfers are in-flight, the
/// receiver MAY either handle the excess messages normally or detach the link". The receiver
/// grants 100, then stops the link (credit 0) twice while the sender, which has not read those
/// flows, sends 60 more: no transfer-without-credit, one finding that the excess was not judged.
#[test]
fn credit_lowered_twice_with_transfers_in_flight_is_not_a_violation() {
    let mut c = Convo::sending_link(100);
    for i in 0..10 {
        c.c(
            0,
            transfer(0, Some(i), Some(&[i as u8]), Some(true), false, &[]),
        );
    }
    c.s(0, link_flow(0, Some(10), Some(0), false));
    c.s(0, link_flow(0, Some(10), Some(0), false));
    for i in 10..70 {
        c.c(
            0,
            transfer(0, Some(i), Some(&[i as u8]), Some(true), false, &[]),
        );
    }
    c.expect(&["amqp10.link.excess-not-judged"]);
    assert_eq!(
        c.violations[0].severity,
        amqpeek::event::Severity::Info,
        "not a verdict on the sender"
    );
    // Beyond every grant the sender may act on (100): a violation.
    c.c(
        0,
        transfer(0, Some(100), Some(b"x"), Some(true), false, &[]),
    );
    for i in 71..100 {
        c.c(
            0,
            transfer(0, Some(i + 30), Some(&[i as u8]), Some(true), false, &[]),
        );
    }
    c.c(
        0,
        transfer(0, Some(200), Some(b"y"), Some(true), false, &[]),
    );
    assert_eq!(
        c.rules().last(),
        Some(&"amqp10.link.transfer-without-credit")
    );
}

/// The sender demonstrably saw the lowered credit (its own flow states it: delivery-count 10,
/// link-credit 0) and keeps sending: that is a violation, not an in-flight excess.
#[test]
fn a_sender_that_echoed_the_lowered_credit_and_keeps_sending_is_reported() {
    let mut c = Convo::sending_link(100);
    for i in 0..10 {
        c.c(
            0,
            transfer(0, Some(i), Some(&[i as u8]), Some(true), false, &[]),
        );
    }
    c.s(0, link_flow(0, Some(10), Some(0), false));
    c.c(0, link_flow(0, Some(10), Some(0), false));
    c.expect_clean();
    c.c(0, transfer(0, Some(10), Some(b"x"), Some(true), false, &[]));
    c.expect(&["amqp10.link.transfer-without-credit"]);
}

/// §2.5.6: a receiver lowers its session incoming-window (twice) while transfers are in
/// flight: the transfers within the earlier window are not incoming-window-exceeded.
#[test]
fn incoming_window_lowered_with_transfers_in_flight_is_not_a_violation() {
    // The session window so far is 1000 (the link flow's), then lowered to 50, then to 0.
    let mut c = Convo::sending_link(5000);
    c.s(0, flow(Some(0), 50, 0, 1000));
    for i in 0..5 {
        c.c(
            0,
            transfer(0, Some(i), Some(&[i as u8]), Some(true), false, &[]),
        );
    }
    c.s(0, flow(Some(5), 0, 0, 1000));
    c.s(0, flow(Some(5), 0, 0, 1000));
    for i in 5..40 {
        c.c(
            0,
            transfer(0, Some(i), Some(&[i as u8]), Some(true), false, &[]),
        );
    }
    c.expect(&["amqp10.session.excess-not-judged"]);
    // Beyond every earlier window too (transfer-id 1000): a violation.
    for i in 40..1001 {
        c.c(
            0,
            transfer(0, Some(i), Some(&[i as u8]), Some(true), false, &[]),
        );
    }
    c.expect(&[
        "amqp10.session.excess-not-judged",
        "amqp10.session.incoming-window-exceeded",
    ]);
}

// ---- what a flow says about what its sender has seen (§2.7.4) ---------------------------

/// "In the event that the receiving link endpoint has not yet seen the initial attach frame
/// from the sender this field MUST NOT be set." The client attaches a receiver and pipelines a
/// flow with a delivery-count before the server's (sender's) attach was even sent.
#[test]
fn a_receiver_flow_with_delivery_count_before_the_senders_attach() {
    let mut c = Convo::session();
    c.c(0, attach_receiver("in", 0, &[]));
    c.c(0, link_flow(0, Some(0), Some(10), false));
    c.expect(&["amqp10.flow.receiver-delivery-count-before-attach"]);
    // Without delivery-count, as the spec asks: clean.
    let mut ok = Convo::session();
    ok.c(0, attach_receiver("in", 0, &[]));
    ok.c(0, link_flow(0, None, Some(10), false));
    ok.s(0, attach_sender("in", 0, &[]));
    ok.expect_clean();
}

/// The receiver answered the sender's attach (so it saw it): its credit-granting flow "MUST be
/// set to the last known value of the corresponding sending endpoint" (RabbitMQ 3.10's are not).
#[test]
fn a_receiver_flow_without_delivery_count_after_answering_the_attach() {
    let mut c = Convo::session();
    c.c(0, attach_sender("L", 0, &[]));
    c.s(0, attach_receiver("L", 0, &[]));
    c.s(0, link_flow(0, None, Some(10), false));
    c.expect(&["amqp10.flow.receiver-delivery-count-missing"]);
    assert_eq!(c.violations[0].dir, Dir::S2C);
    // The clean counterpart is every sending_link conversation: Convo::sending_link(10).
    Convo::sending_link(10).expect_clean();
}

/// §2.6.7: only the sender modifies delivery-count; a receiver stating one ahead of the
/// sender's counts deliveries never sent. Behind (transfers in flight) is fine.
#[test]
fn a_receiver_delivery_count_ahead_of_the_senders() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(true), false, &[]));
    c.s(0, link_flow(0, Some(0), Some(10), false)); // behind: the transfer is in flight
    c.s(0, link_flow(0, Some(1), Some(10), false));
    c.expect_clean();
    c.s(0, link_flow(0, Some(5), Some(10), false));
    c.expect(&["amqp10.flow.receiver-delivery-count-ahead"]);
}

/// next-incoming-id: "This value MUST be set if the peer has received the begin frame for the
/// session, and MUST NOT be set if it has not."
#[test]
fn next_incoming_id_before_and_after_the_partners_begin() {
    let mut c = Convo::opened();
    c.c(0, begin(None, 0, 100, 100));
    c.c(0, flow(Some(0), 100, 0, 100));
    c.expect(&["amqp10.flow.next-incoming-id-before-begin"]);
    // The server answered the client's begin, then omits next-incoming-id.
    let mut m = Convo::session();
    m.s(0, flow(None, 100, 0, 100));
    m.expect(&["amqp10.flow.next-incoming-id-missing"]);
    // The client, whose begin came first, before it is known to have read the server's
    // begin: not judged. And each set where it must be: clean.
    let mut ok = Convo::opened();
    ok.c(0, begin(None, 0, 100, 100));
    ok.c(0, flow(None, 100, 0, 100));
    ok.s(0, begin(Some(0), 0, 100, 100));
    ok.c(0, flow(None, 100, 0, 100));
    ok.s(0, flow(Some(0), 100, 0, 100));
    ok.expect_clean();
}

/// A next-incoming-id ahead of the partner's transfers, or behind the peer's own earlier one.
#[test]
fn next_incoming_id_ahead_of_the_partner_or_going_back() {
    let mut c = Convo::sending_link(10);
    c.c(0, transfer(0, Some(0), Some(b"a"), Some(true), false, &[]));
    c.s(0, flow(Some(1), 100, 0, 100));
    c.expect_clean();
    c.s(0, flow(Some(7), 100, 0, 100));
    c.s(0, flow(Some(0), 100, 0, 100));
    c.expect(&[
        "amqp10.flow.next-incoming-id-inconsistent",
        "amqp10.flow.next-incoming-id-inconsistent",
    ]);
    assert!(c.violations[0].message.contains("ahead"));
    assert!(c.violations[1].message.contains("behind"));
}

/// §2.6.7 drain: "the sender will (after sending all available messages) advance the
/// delivery-count as much as possible, consuming all link-credit". A sender's flow in drain
/// mode with nothing available that leaves the credit unused is judged at that flow.
#[test]
fn a_drain_answered_without_using_up_the_credit_is_judged_at_the_answer() {
    let mut c = Convo::sending_link(0);
    c.s(0, link_flow(0, Some(0), Some(10), true));
    c.c(0, link_flow(0, Some(0), Some(10), true));
    c.expect(&["amqp10.link.drain-not-honoured"]);
    // Judged once: not again when the sender then detaches.
    c.c(0, detach(0, true));
    c.expect(&["amqp10.link.drain-not-honoured"]);
    // Answered by advancing delivery-count to the limit: clean.
    let mut ok = Convo::sending_link(0);
    ok.s(0, link_flow(0, Some(0), Some(10), true));
    ok.c(0, link_flow(0, Some(10), Some(0), true));
    ok.expect_clean();
}

// ---- stable verdicts whatever the hash maps' seeds ----------------------------------------

/// Bytes of `dir` are missed: what it sent before is no longer known.
fn gap(c: &mut Convo, dir: Dir) {
    let mut out = Vec::new();
    let at = c.insp.bytes_seen(dir);
    c.insp.gap(
        dir,
        amqpeek::event::Timestamp(c.now),
        at,
        10,
        "test".into(),
        Some(amqpeek::codec::ProtocolHeader::Amqp10),
        &mut out,
    );
}

/// A second attach of "L" while a stale "L" (attached before a gap, perhaps detached unseen)
/// and a known "L" (attached after it) are both on record: the known one makes it a violation,
/// whichever of the two a map happens to yield first.
#[test]
fn a_link_name_in_use_is_judged_by_the_link_known_attached() {
    for _ in 0..32 {
        let mut c = Convo::session();
        c.s(0, attach_receiver("L", 0, &[]));
        gap(&mut c, Dir::S2C);
        c.c(1, begin(None, 0, 1000, 1000));
        c.s(1, begin(Some(1), 0, 1000, 1000));
        c.s(1, attach_receiver("L", 0, &[]));
        c.expect_clean();
        c.s(1, attach_receiver("L", 1, &[]));
        c.expect(&["amqp10.link.name-in-use"]);
    }
}

/// A receiver settling several deliveries early in mode second: they are listed in the order
/// they were sent.
#[test]
fn deliveries_settled_early_are_listed_in_order() {
    for _ in 0..8 {
        let mut c = Convo::session();
        c.c(0, attach_sender("L", 0, &[(4, Value::Ubyte(1))]));
        c.s(0, attach_receiver("L", 0, &[(4, Value::Ubyte(1))]));
        c.s(0, link_flow(0, Some(0), Some(10), false));
        for id in 0..6u32 {
            let tag = [b'a' + id as u8];
            c.c(
                0,
                transfer(0, Some(id), Some(&tag), Some(false), false, &[]),
            );
        }
        c.s(0, disposition(true, 0, Some(5), true));
        c.expect(&["amqp10.delivery.settle-mode-broken"]);
        assert!(
            c.violations[0].message.contains("[0, 1, 2, 3, 4, 5]"),
            "{}",
            c.violations[0].message
        );
    }
}

/// A sender that closes the connection with drains unanswered on two links: reported link by
/// link, in the order the links were attached.
#[test]
fn drains_left_unanswered_at_close_are_reported_in_link_order() {
    for _ in 0..32 {
        let mut c = Convo::session();
        for (h, name) in [(0, "A"), (1, "B")] {
            c.c(0, attach_sender(name, h, &[]));
            c.s(0, attach_receiver(name, h, &[]));
            c.s(0, link_flow(h, Some(0), Some(10), true));
        }
        c.c(0, close());
        let drains: Vec<&str> = c
            .violations
            .iter()
            .filter(|v| v.rule == "amqp10.link.drain-not-honoured")
            .map(|v| v.message.as_str())
            .collect();
        assert_eq!(drains.len(), 2, "{:#?}", c.violations);
        assert!(
            drains[0].starts_with("link \"A\"") && drains[1].starts_with("link \"B\""),
            "{drains:#?}"
        );
    }
}
