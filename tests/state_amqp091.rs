//! AMQP 0-9-1 state tracking, rule by rule: for each rule a conversation that breaks it
//! (exactly that rule reported, at the offending frame, with concrete values) and one that
//! does not (nothing reported). Frames are encoded by the codec and fed through `Inspector`.

mod state_amqp091_conv;

use amqpeek::Dir;
use amqpeek::codec::amqp091::{ContentHeader, FrameKind};
use bytes::Bytes;
use state_amqp091_conv::*;

const HANDSHAKE_ORDER: &str = "amqp091.connection.handshake-order";

#[test]
fn a_full_clean_conversation_reports_nothing_and_snapshots_its_state() {
    let mut c = Conv::new();
    c.handshake().open(1).open(2);
    assert_eq!(c.state(), "OPEN");
    c.c(1, K::ConfirmSelect, &[])
        .s(1, K::ConfirmSelectOk, &[])
        .publish(1, 10)
        .publish(1, 0)
        .publish(1, 5)
        .s(
            1,
            K::BasicAck,
            &[("delivery-tag", ll(2)), ("multiple", bit(true))],
        );
    c.c(2, K::BasicQos, &[("prefetch-count", short(5))])
        .s(2, K::BasicQosOk, &[])
        .consume(2, "ctag", false)
        .deliver(2, "ctag", 1)
        .deliver(2, "ctag", 2)
        .deliver(2, "ctag", 3);
    c.c(2, K::BasicAck, &[("delivery-tag", ll(1))]);
    c.clean();
    let snap = c.snapshot();
    assert_eq!(snap["connection"]["state"], "OPEN");
    assert_eq!(snap["connection"]["frame-max"], 131072);
    assert_eq!(snap["connection"]["channel-max"], 2047);
    assert_eq!(snap["connection"]["heartbeat"], 60);
    assert_eq!(snap["connection"]["mechanism"], "PLAIN");
    let ch1 = &snap["channels"][0];
    assert_eq!(ch1["channel"], 1);
    assert_eq!(ch1["confirm-mode"], true);
    assert_eq!(ch1["next-publish-seq"], 4);
    assert_eq!(ch1["pending-confirms"], 1);
    let ch2 = &snap["channels"][1];
    assert_eq!(ch2["consumers"], serde_json::json!(["ctag"]));
    assert_eq!(ch2["unacked-deliveries"], 2);
    assert_eq!(ch2["prefetch"], 5);
    assert_eq!(ch2["flow-active"], true);
    assert_eq!(ch2["tx-mode"], false);
    assert_eq!(ch2["state"], "OPEN");
    // close channel 2, then the connection
    c.c(2, K::ChannelClose, &[("reply-code", short(200))])
        .s(2, K::ChannelCloseOk, &[])
        .c(0, K::ConnectionClose, &[("reply-code", short(200))]);
    assert_eq!(c.state(), "CLOSING");
    c.s(0, K::ConnectionCloseOk, &[]).end();
    assert_eq!(c.state(), "CLOSED");
    c.clean();
}

// ---- handshake -------------------------------------------------------------------------

#[test]
fn client_sending_open_before_tune_ok_breaks_the_handshake_order() {
    let mut c = Conv::new();
    c.s(0, K::ConnectionStart, &[])
        .c(0, K::ConnectionStartOk, &[])
        .s(
            0,
            K::ConnectionTune,
            &[("frame-max", long(131072)), ("channel-max", short(10))],
        )
        .c(0, K::ConnectionOpen, &[]);
    let v = c.expect(&[HANDSHAKE_ORDER]);
    assert_eq!(v[0].dir, Dir::C2S);
    assert!(
        v[0].message.contains("AWAITING_TUNE_OK"),
        "{}",
        v[0].message
    );
    assert_eq!(c.state(), "AWAITING_TUNE_OK");
}

#[test]
fn secure_round_trips_are_part_of_the_handshake() {
    let mut c = Conv::new();
    c.s(0, K::ConnectionStart, &[])
        .c(0, K::ConnectionStartOk, &[])
        .s(0, K::ConnectionSecure, &[])
        .c(0, K::ConnectionSecureOk, &[])
        .s(0, K::ConnectionSecure, &[])
        .c(0, K::ConnectionSecureOk, &[])
        .tune((0, 0, 0), (0, 0, 0))
        .c(0, K::ConnectionOpen, &[])
        .s(0, K::ConnectionOpenOk, &[]);
    c.clean();
    // a second open-ok is out of order
    c.s(0, K::ConnectionOpenOk, &[]);
    c.expect(&[HANDSHAKE_ORDER]);
}

#[test]
fn server_closing_during_the_handshake_is_fine() {
    let mut c = Conv::new();
    c.s(0, K::ConnectionStart, &[])
        .c(0, K::ConnectionStartOk, &[])
        .s(0, K::ConnectionClose, &[("reply-code", short(403))])
        .c(0, K::ConnectionCloseOk, &[])
        .end();
    c.clean();
}

#[test]
fn a_channel_before_open_ok_is_reported() {
    let mut c = Conv::new();
    c.s(0, K::ConnectionStart, &[])
        .c(0, K::ConnectionStartOk, &[])
        .tune((0, 131072, 0), (0, 131072, 0))
        .c(1, K::ChannelOpen, &[]);
    let v = c.expect(&["amqp091.connection.not-open"]);
    assert!(v[0].message.contains("AWAITING_OPEN"));
    // After connection.open it is pipelining: a warning (see pipelining_behind_an_open...).
    let mut p = Conv::new();
    p.s(0, K::ConnectionStart, &[])
        .c(0, K::ConnectionStartOk, &[])
        .tune((0, 131072, 0), (0, 131072, 0))
        .c(0, K::ConnectionOpen, &[])
        .c(1, K::ChannelOpen, &[]);
    p.expect(&["amqp091.connection.pipelined-before-open-ok"]);
}

#[test]
fn connection_methods_live_on_channel_zero_and_only_there() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.s(1, K::ConnectionBlocked, &[("reason", sstr("low memory"))]);
    c.c(0, K::BasicQos, &[]);
    c.frame(
        Dir::C2S,
        0,
        FrameKind::Header(ContentHeader::basic(1).into()),
    );
    c.expect(&[
        "amqp091.connection.channel-zero",
        "amqp091.connection.channel-zero",
        "amqp091.connection.channel-zero",
    ]);
}

#[test]
fn start_ok_must_pick_an_offered_mechanism_and_locale() {
    let mut c = Conv::new();
    c.s(
        0,
        K::ConnectionStart,
        &[
            ("mechanisms", lstr("PLAIN AMQPLAIN")),
            ("locales", lstr("en_US")),
        ],
    )
    .c(
        0,
        K::ConnectionStartOk,
        &[("mechanism", sstr("EXTERNAL")), ("locale", sstr("de_DE"))],
    );
    let v = c.expect(&[
        "amqp091.connection.mechanism-not-offered",
        "amqp091.connection.locale-not-offered",
    ]);
    assert!(v[0].message.contains("EXTERNAL"));
    let mut ok = Conv::new();
    ok.s(
        0,
        K::ConnectionStart,
        &[("mechanisms", lstr("PLAIN AMQPLAIN"))],
    )
    .c(0, K::ConnectionStartOk, &[("mechanism", sstr("AMQPLAIN"))]);
    ok.clean();
}

// ---- tuning ----------------------------------------------------------------------------

#[test]
fn server_sends_tune_channel_max_10_client_answers_20() {
    let mut c = Conv::new();
    c.handshake_with((10, 131072, 60), (20, 131072, 60));
    let v = c.expect(&["amqp091.connection.tune-exceeds-server"]);
    assert!(v[0].message.contains("20") && v[0].message.contains("10"));
    assert_eq!(v[0].dir, Dir::C2S);
}

#[test]
fn tune_ok_zero_means_no_limit_and_exceeds_a_limit() {
    let mut c = Conv::new();
    c.handshake_with((10, 131072, 60), (10, 0, 60));
    c.expect(&["amqp091.connection.tune-exceeds-server"]);
    // the server imposing no limit lets the client pick anything, a lower value is always fine
    let mut ok = Conv::new();
    ok.handshake_with((0, 0, 60), (65535, 1 << 20, 0));
    ok.clean();
    let mut lower = Conv::new();
    lower.handshake_with((2047, 131072, 60), (100, 4096, 10));
    lower.clean();
}

#[test]
fn frame_max_below_4096_is_too_small() {
    let mut c = Conv::new();
    c.handshake_with((0, 131072, 0), (0, 1024, 0));
    let v = c.expect(&["amqp091.connection.frame-max-too-small"]);
    assert!(v[0].message.contains("1024"));
}

#[test]
fn a_frame_bigger_than_the_negotiated_frame_max_is_reported_in_either_direction() {
    let mut c = Conv::new();
    c.handshake_with((0, 131072, 0), (0, 4096, 0)).open(1);
    // 4096-byte frame limit: 4088 bytes of body fit exactly, 4089 do not
    c.c(1, K::BasicPublish, &[])
        .content(Dir::C2S, 1, 4088 + 4089, &[4088, 4089]);
    let v = c.expect(&["amqp091.frame.too-large"]);
    assert!(v[0].message.contains("4097"), "{}", v[0].message);
    c.consume(1, "t", true)
        .s(
            1,
            K::BasicDeliver,
            &[("consumer-tag", sstr("t")), ("delivery-tag", ll(1))],
        )
        .content(Dir::S2C, 1, 5000, &[5000]);
    assert_eq!(c.violations().last().unwrap().dir, Dir::S2C);
    assert_eq!(c.rules().len(), 2);
}

#[test]
fn a_channel_above_channel_max_is_reported_once() {
    let mut c = Conv::new();
    c.handshake_with((10, 131072, 0), (10, 131072, 0))
        .open(10)
        .open(11);
    c.c(11, K::BasicQos, &[]);
    let v = c.expect(&["amqp091.channel.above-channel-max"]);
    assert!(v[0].message.contains("11"));
}

// ---- heartbeats ------------------------------------------------------------------------

#[test]
fn a_peer_silent_for_more_than_two_intervals_misses_heartbeats() {
    let mut c = Conv::new();
    c.handshake_with((0, 131072, 10), (0, 131072, 10));
    c.at(15)
        .frame(Dir::C2S, 0, FrameKind::Heartbeat)
        .frame(Dir::S2C, 0, FrameKind::Heartbeat);
    c.at(30)
        .frame(Dir::C2S, 0, FrameKind::Heartbeat)
        .frame(Dir::S2C, 0, FrameKind::Heartbeat);
    c.clean();
    // the server goes quiet for 25 s (> 2 x 10 s) and the client for 35 s until the end
    c.at(55).frame(Dir::S2C, 0, FrameKind::Heartbeat);
    c.at(65).end();
    let v = c.expect(&["amqp091.heartbeat.missed", "amqp091.heartbeat.missed"]);
    assert_eq!((v[0].dir, v[1].dir), (Dir::S2C, Dir::C2S));
    assert!(v[0].message.contains("25.0"), "{}", v[0].message);
}

#[test]
fn without_negotiated_heartbeats_silence_is_fine() {
    let mut c = Conv::new();
    c.handshake_with((0, 131072, 60), (0, 131072, 0));
    c.at(3600).open(1).end();
    c.clean();
}

#[test]
fn a_heartbeat_on_channel_1_is_an_error() {
    let mut c = Conv::new();
    c.handshake()
        .open(1)
        .frame(Dir::S2C, 1, FrameKind::Heartbeat);
    c.expect(&["amqp091.heartbeat.nonzero-channel"]);
}

// ---- channels --------------------------------------------------------------------------

#[test]
fn methods_on_a_channel_never_opened_still_opening_or_closed() {
    let mut c = Conv::new();
    c.handshake();
    c.c(3, K::BasicQos, &[]);
    c.c(4, K::ChannelOpen, &[]).c(4, K::BasicQos, &[]);
    c.s(4, K::ChannelOpenOk, &[])
        .c(4, K::ChannelClose, &[])
        .s(4, K::ChannelCloseOk, &[])
        .publish(4, 1);
    let v = c.expect(&[
        "amqp091.channel.not-open",
        // pipelined behind channel.open: a warning (see pipelining_behind_an_open)
        "amqp091.channel.pipelined-before-open-ok",
        // publish, its header and its body on the closed channel
        "amqp091.channel.not-open",
        "amqp091.channel.not-open",
        "amqp091.channel.not-open",
    ]);
    assert!(v[0].message.contains("never opened"));
    assert!(v[1].message.contains("before the server's open-ok"));
    assert!(v[2].message.contains("closed"));
}

#[test]
fn a_channel_may_be_reused_after_close_ok() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::ChannelClose, &[]).s(1, K::ChannelCloseOk, &[]);
    c.open(1).publish(1, 3);
    c.clean();
}

#[test]
fn opening_an_open_channel_is_reported() {
    let mut c = Conv::new();
    c.handshake().open(1).c(1, K::ChannelOpen, &[]);
    c.expect(&["amqp091.channel.already-open"]);
}

#[test]
fn after_sending_channel_close_a_peer_sends_only_close_ok() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::ChannelClose, &[]).publish(1, 1);
    c.expect(&[
        "amqp091.channel.frame-after-close",
        "amqp091.channel.frame-after-close",
        "amqp091.channel.frame-after-close",
    ]);
}

#[test]
fn frames_in_flight_from_the_receiver_of_close_and_crossing_closes_are_fine() {
    let mut c = Conv::new();
    c.handshake().open(1).consume(1, "t", false);
    // the server closes; the client's publish crossed it on the wire, then it answers
    c.s(1, K::ChannelClose, &[("reply-code", short(406))])
        .publish(1, 4)
        .c(1, K::BasicAck, &[("delivery-tag", ll(77))])
        .c(1, K::ChannelCloseOk, &[]);
    // both peers close at once: each answers the other's close
    c.open(2)
        .c(2, K::ChannelClose, &[])
        .s(2, K::ChannelClose, &[])
        .s(2, K::ChannelCloseOk, &[])
        .c(2, K::ChannelCloseOk, &[]);
    c.clean();
}

#[test]
fn after_connection_close_only_close_ok_then_nothing() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(0, K::ConnectionClose, &[]).c(1, K::BasicQos, &[]);
    c.s(1, K::BasicQosOk, &[]); // in flight from the receiver: fine
    c.s(0, K::ConnectionCloseOk, &[]).s(1, K::BasicQosOk, &[]);
    c.expect(&[
        "amqp091.connection.frame-after-close",
        "amqp091.connection.frame-after-close",
    ]);
}

#[test]
fn a_reply_nobody_asked_for_is_reported() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::QueueDeclare, &[("queue", sstr("q"))]).s(
        1,
        K::QueueDeclareOk,
        &[("queue", sstr("q"))],
    );
    c.clean();
    c.s(1, K::QueueDeclareOk, &[("queue", sstr("q"))]);
    c.c(1, K::QueueDeclare, &[("nowait", bit(true))])
        .s(1, K::QueueDeclareOk, &[]);
    c.expect(&[
        "amqp091.channel.unexpected-reply",
        "amqp091.channel.unexpected-reply",
    ]);
}

#[test]
fn a_server_only_method_from_the_client_is_the_wrong_direction() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::BasicDeliver, &[]);
    c.s(0, K::ConnectionStartOk, &[]);
    let v = c.expect(&[
        "amqp091.method.wrong-direction",
        "amqp091.method.wrong-direction",
    ]);
    assert_eq!((v[0].dir, v[1].dir), (Dir::C2S, Dir::S2C));
}

// ---- content framing -------------------------------------------------------------------

#[test]
fn a_publish_followed_by_a_method_misses_its_header() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::BasicPublish, &[]).c(1, K::BasicQos, &[]);
    c.expect(&["amqp091.content.missing-header"]);
}

#[test]
fn a_method_inside_the_body_frames_interrupts_the_content() {
    let mut c = Conv::new();
    c.handshake().open(1).open(2);
    // other channels may interleave
    c.c(1, K::BasicPublish, &[])
        .content(Dir::C2S, 1, 10, &[4])
        .publish(2, 3)
        .frame(Dir::C2S, 1, FrameKind::Body(Bytes::from_static(b"123456")));
    c.clean();
    c.c(1, K::BasicPublish, &[])
        .content(Dir::C2S, 1, 10, &[4])
        .c(1, K::BasicQos, &[]);
    let v = c.expect(&["amqp091.content.body-incomplete"]);
    assert!(
        v[0].message.contains("6 body bytes still missing"),
        "{}",
        v[0].message
    );
}

#[test]
fn a_header_or_body_with_no_content_method_is_unexpected() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.content(Dir::C2S, 1, 3, &[3]);
    c.frame(Dir::S2C, 1, FrameKind::Body(Bytes::from_static(b"zz")));
    c.expect(&[
        "amqp091.content.unexpected-header",
        "amqp091.content.unexpected-body",
    ]);
}

#[test]
fn body_frames_beyond_body_size_are_a_mismatch() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::BasicPublish, &[])
        .content(Dir::C2S, 1, 5, &[3, 3]);
    let v = c.expect(&["amqp091.content.body-size-mismatch"]);
    assert!(
        v[0].message.contains("1 bytes too many"),
        "{}",
        v[0].message
    );
    let mut ok = Conv::new();
    ok.handshake().open(1);
    ok.c(1, K::BasicPublish, &[])
        .content(Dir::C2S, 1, 6, &[3, 3]);
    ok.clean();
}

#[test]
fn a_header_of_another_class_is_a_class_mismatch() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::BasicPublish, &[]);
    let mut h = ContentHeader::basic(0);
    h.class_id = 50;
    // class 50 (queue) has no properties: the header still decodes
    c.frame(Dir::C2S, 1, FrameKind::Header(h.into()));
    c.expect(&["amqp091.content.class-mismatch"]);
}

// ---- publisher confirms ----------------------------------------------------------------

#[test]
fn the_broker_confirming_a_sequence_not_published_or_twice() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::ConfirmSelect, &[])
        .s(1, K::ConfirmSelectOk, &[])
        .publish(1, 1)
        .publish(1, 1)
        .s(1, K::BasicAck, &[("delivery-tag", ll(1))])
        .s(1, K::BasicNack, &[("delivery-tag", ll(2))]);
    c.clean();
    c.s(1, K::BasicAck, &[("delivery-tag", ll(3))]);
    c.s(1, K::BasicAck, &[("delivery-tag", ll(1))]);
    c.s(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(2)), ("multiple", bit(true))],
    );
    let v = c.expect(&[
        "amqp091.confirm.unknown-sequence",
        "amqp091.confirm.unknown-sequence",
        "amqp091.confirm.unknown-sequence",
    ]);
    assert!(v[0].message.contains("not yet published"));
    assert!(v[1].message.contains("already confirmed"));
}

#[test]
fn a_multiple_ack_may_span_an_already_nacked_sequence() {
    // RabbitMQ: nack 2, then ack 3 multiple=true confirms 1 and 3
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(1, K::ConfirmSelect, &[("nowait", bit(true))])
        .publish(1, 1)
        .publish(1, 1)
        .publish(1, 1)
        .s(1, K::BasicNack, &[("delivery-tag", ll(2))])
        .s(
            1,
            K::BasicAck,
            &[("delivery-tag", ll(3)), ("multiple", bit(true))],
        );
    c.clean();
    assert_eq!(c.snapshot()["channels"][0]["pending-confirms"], 0);
}

#[test]
fn broker_acks_outside_confirm_mode_are_reported() {
    let mut c = Conv::new();
    c.handshake().open(1).publish(1, 1);
    c.s(1, K::BasicAck, &[("delivery-tag", ll(1))]);
    c.expect(&["amqp091.confirm.not-in-confirm-mode"]);
}

#[test]
fn confirm_and_tx_do_not_mix() {
    let mut c = Conv::new();
    c.handshake().open(1).open(2);
    c.c(1, K::TxSelect, &[])
        .s(1, K::TxSelectOk, &[])
        .c(1, K::ConfirmSelect, &[]);
    c.c(2, K::ConfirmSelect, &[])
        .s(2, K::ConfirmSelectOk, &[])
        .c(2, K::TxSelect, &[]);
    let v = c.expect(&["amqp091.confirm.tx-conflict", "amqp091.confirm.tx-conflict"]);
    assert!(v[0].message.contains("transactional"));
    assert!(v[1].message.contains("confirm mode"));
}

// ---- deliveries and consumers ------------------------------------------------------------

#[test]
fn server_delivery_tags_start_at_1_and_increase() {
    let mut c = Conv::new();
    c.handshake().open(1).consume(1, "t", true);
    c.deliver(1, "t", 1).deliver(1, "t", 2);
    c.c(1, K::BasicGet, &[]);
    c.s(1, K::BasicGetOk, &[("delivery-tag", ll(3))])
        .content(Dir::S2C, 1, 0, &[]);
    c.clean();
    c.deliver(1, "t", 3);
    c.open(2).consume(2, "t", true).deliver(2, "t", 0);
    c.expect(&[
        "amqp091.basic.delivery-tag-order",
        "amqp091.basic.delivery-tag-order",
    ]);
}

#[test]
fn client_acking_an_unknown_or_settled_tag() {
    let mut c = Conv::new();
    c.handshake().open(1).consume(1, "t", false);
    c.deliver(1, "t", 1).deliver(1, "t", 2).deliver(1, "t", 3);
    c.c(1, K::BasicAck, &[("delivery-tag", ll(1))])
        .c(1, K::BasicReject, &[("delivery-tag", ll(2))])
        .c(1, K::BasicNack, &[("delivery-tag", ll(3))]);
    c.clean();
    c.c(1, K::BasicAck, &[("delivery-tag", ll(9))]);
    c.c(1, K::BasicAck, &[("delivery-tag", ll(1))]);
    let v = c.expect(&[
        "amqp091.basic.unknown-delivery-tag",
        "amqp091.basic.unknown-delivery-tag",
    ]);
    assert!(v[0].message.contains("never delivered"), "{}", v[0].message);
    assert!(v[1].message.contains("already"), "{}", v[1].message);
}

#[test]
fn acking_a_no_ack_delivery_is_unknown_and_multiple_zero_is_always_fine() {
    let mut c = Conv::new();
    c.handshake()
        .open(1)
        .consume(1, "auto", true)
        .deliver(1, "auto", 1);
    c.c(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(0)), ("multiple", bit(true))],
    );
    c.c(1, K::BasicGet, &[("no-ack", bit(true))])
        .s(1, K::BasicGetOk, &[("delivery-tag", ll(2))])
        .content(Dir::S2C, 1, 1, &[1]);
    c.clean();
    c.c(1, K::BasicAck, &[("delivery-tag", ll(1))]);
    c.c(1, K::BasicAck, &[("delivery-tag", ll(2))]);
    c.expect(&[
        "amqp091.basic.unknown-delivery-tag",
        "amqp091.basic.unknown-delivery-tag",
    ]);
}

#[test]
fn multiple_acks_settle_everything_up_to_the_tag_and_rollback_restores() {
    let mut c = Conv::new();
    c.handshake().open(1).consume(1, "t", false);
    for t in 1..=4 {
        c.deliver(1, "t", t);
    }
    c.c(1, K::TxSelect, &[]).s(1, K::TxSelectOk, &[]);
    c.c(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(3)), ("multiple", bit(true))],
    );
    c.c(1, K::TxRollback, &[]).s(1, K::TxRollbackOk, &[]);
    // rolled back: 1..3 are outstanding again
    c.c(1, K::BasicAck, &[("delivery-tag", ll(2))]);
    c.c(1, K::TxCommit, &[]).s(1, K::TxCommitOk, &[]);
    c.clean();
    assert_eq!(c.snapshot()["channels"][0]["unacked-deliveries"], 3);
    c.c(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(2)), ("multiple", bit(true))],
    );
    c.expect(&["amqp091.basic.unknown-delivery-tag"]);
}

#[test]
fn consuming_with_a_tag_in_use_is_reported() {
    let mut c = Conv::new();
    c.handshake().open(1).open(2).consume(1, "t", false);
    c.consume(2, "t", false); // another channel: fine
    c.c(1, K::BasicCancel, &[("consumer-tag", sstr("t"))])
        .s(1, K::BasicCancelOk, &[("consumer-tag", sstr("t"))])
        .consume(1, "t", false); // reuse after cancel-ok: fine
    c.clean();
    c.c(1, K::BasicConsume, &[("consumer-tag", sstr("t"))]);
    c.expect(&["amqp091.basic.consumer-tag-in-use"]);
}

#[test]
fn deliveries_to_unknown_or_cancelled_consumers() {
    let mut c = Conv::new();
    c.handshake().open(1).consume(1, "t", false);
    c.c(
        1,
        K::BasicConsume,
        &[("consumer-tag", sstr("fast")), ("nowait", bit(true))],
    );
    c.deliver(1, "fast", 1);
    // deliveries between cancel and cancel-ok were in flight: fine
    c.c(1, K::BasicCancel, &[("consumer-tag", sstr("t"))])
        .deliver(1, "t", 2)
        .s(1, K::BasicCancelOk, &[("consumer-tag", sstr("t"))]);
    c.clean();
    c.deliver(1, "t", 3).deliver(1, "nobody", 4);
    let v = c.expect(&[
        "amqp091.basic.unknown-consumer",
        "amqp091.basic.unknown-consumer",
    ]);
    assert!(v[1].message.contains("nobody"));
}

// ---- flow and blocked ----------------------------------------------------------------------

#[test]
fn publishing_after_flow_ok_active_false_is_reported_until_flow_resumes() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.s(1, K::ChannelFlow, &[("active", bit(false))])
        .publish(1, 1) // crossed the flow request: fine
        .c(1, K::ChannelFlowOk, &[("active", bit(false))]);
    c.clean();
    assert_eq!(c.snapshot()["channels"][0]["flow-active"], false);
    c.publish(1, 1);
    c.expect(&["amqp091.channel.content-while-flow-stopped"]);
    c.s(1, K::ChannelFlow, &[("active", bit(true))])
        .c(1, K::ChannelFlowOk, &[("active", bit(true))])
        .publish(1, 1);
    assert_eq!(c.rules().len(), 1);
}

#[test]
fn publishing_while_blocked_is_info_once_per_blocked_period() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.s(
        0,
        K::ConnectionBlocked,
        &[("reason", sstr("low on memory"))],
    );
    assert_eq!(c.snapshot()["connection"]["blocked"], true);
    c.publish(1, 1).publish(1, 1);
    let v = c.expect(&["amqp091.connection.publish-while-blocked"]);
    assert_eq!(v[0].severity, amqpeek::event::Severity::Info);
    c.s(0, K::ConnectionUnblocked, &[]).publish(1, 1);
    assert_eq!(c.rules().len(), 1);
    assert_eq!(c.snapshot()["connection"]["blocked"], false);
}

// ---- mid-stream ---------------------------------------------------------------------------

#[test]
fn a_capture_starting_mid_stream_learns_instead_of_reporting() {
    let mut c = Conv::mid_stream();
    c.frame(
        Dir::C2S,
        5,
        FrameKind::Body(Bytes::from_static(b"tail of a body")),
    )
    .deliver(5, "someone", 40)
    .c(5, K::BasicAck, &[("delivery-tag", ll(12))])
    .s(5, K::BasicAck, &[("delivery-tag", ll(7))])
    .s(5, K::BasicQosOk, &[]);
    c.clean();
    assert_eq!(c.state(), "UNKNOWN");
    // but what is seen afresh is judged: a new channel's lifecycle
    c.c(6, K::ChannelOpen, &[]).s(6, K::ChannelOpenOk, &[]);
    c.c(6, K::BasicAck, &[("delivery-tag", ll(1))]);
    c.expect(&["amqp091.basic.unknown-delivery-tag"]);
}

#[test]
fn violations_point_at_the_offending_frame() {
    let mut c = Conv::new();
    c.handshake().open(1);
    let before = c.insp.bytes_seen(Dir::C2S);
    c.c(1, K::BasicAck, &[("delivery-tag", ll(5))]);
    let v = c.expect(&["amqp091.basic.unknown-delivery-tag"]);
    assert_eq!(v[0].offset, before);
    assert_eq!(
        v[0].spec,
        "AMQP 0-9-1 basic.ack (rule acknowledgement), RabbitMQ 406"
    );
}

/// connection.close: "The response to receiving a Close after sending Close must be to send
/// Close-Ok." Both peers close at once, then each answers the other's close: clean. A frame
/// after a peer's own close-ok is still reported.
#[test]
fn crossing_connection_closes_are_each_answered_with_close_ok() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(0, K::ConnectionClose, &[("reply-code", short(200))]).s(
        0,
        K::ConnectionClose,
        &[("reply-code", short(320))],
    );
    c.s(0, K::ConnectionCloseOk, &[]);
    assert_eq!(
        c.state(),
        "CLOSING",
        "the server's close is not answered yet"
    );
    c.c(0, K::ConnectionCloseOk, &[]);
    assert_eq!(c.state(), "CLOSED");
    c.end();
    c.clean();
    // The server, having sent close-ok, sends another frame: that is after its close.
    let mut bad = Conv::new();
    bad.handshake().open(1);
    bad.c(0, K::ConnectionClose, &[])
        .s(0, K::ConnectionClose, &[])
        .s(0, K::ConnectionCloseOk, &[])
        .s(1, K::BasicQosOk, &[]);
    bad.expect(&["amqp091.connection.frame-after-close"]);
}

/// Pipelining: the client sends channel.open right behind connection.open, and basic.qos right
/// behind channel.open, without waiting for the open-oks (RabbitMQ accepts this). The grammar
/// orders the conversation ("open-channel = C:OPEN S:OPEN-OK") but no MUST forbids it: one
/// warning per premature frame, and the broker's correct answers (channel.open-ok,
/// basic.qos-ok) are not reported.
#[test]
fn pipelining_behind_an_open_is_a_warning_and_its_answers_are_fine() {
    let mut c = Conv::new();
    c.s(0, K::ConnectionStart, &[])
        .c(0, K::ConnectionStartOk, &[])
        .s(0, K::ConnectionTune, &[])
        .c(0, K::ConnectionTuneOk, &[])
        .c(0, K::ConnectionOpen, &[])
        .c(1, K::ChannelOpen, &[])
        .c(1, K::BasicQos, &[("prefetch-count", short(5))])
        .s(0, K::ConnectionOpenOk, &[])
        .s(1, K::ChannelOpenOk, &[])
        .s(1, K::BasicQosOk, &[]);
    let v = c.expect(&[
        "amqp091.connection.pipelined-before-open-ok",
        "amqp091.connection.pipelined-before-open-ok",
        "amqp091.channel.pipelined-before-open-ok",
    ]);
    assert!(
        v.iter()
            .all(|v| v.dir == Dir::C2S && v.severity == amqpeek::event::Severity::Warning)
    );
    // The same conversation waiting for each open-ok: clean.
    let mut ok = Conv::new();
    ok.handshake().open(1);
    ok.c(1, K::BasicQos, &[("prefetch-count", short(5))])
        .s(1, K::BasicQosOk, &[]);
    ok.clean();
    // A server that uses a channel before its own open-ok is not pipelining: still an error.
    let mut bad = Conv::new();
    bad.handshake();
    bad.c(1, K::ChannelOpen, &[])
        .s(1, K::ChannelFlow, &[("active", bit(true))]);
    bad.expect(&["amqp091.channel.not-open"]);
}

/// A peer that received connection.close and let the connection end without close-ok: the
/// spec says the other peer "SHOULD log the error" — a warning against the silent one. Not
/// when the capture merely ends.
#[test]
fn a_connection_close_never_answered_before_the_socket_closes() {
    let mut c = Conv::new();
    c.handshake().open(1);
    c.c(0, K::ConnectionClose, &[("reply-code", short(200))])
        .end();
    let v = c.expect(&["amqp091.connection.close-not-answered"]);
    assert_eq!(v[0].dir, Dir::S2C);
    assert_eq!(v[0].severity, amqpeek::event::Severity::Warning);
    let mut cut = Conv::new();
    cut.handshake().open(1);
    cut.c(0, K::ConnectionClose, &[])
        .end_with("capture ended with the connection open");
    cut.clean();
}

#[test]
fn acks_with_multiple_and_the_largest_tag_settle_without_overflow() {
    // Hostile or mistaken peers may name tag 2^64-1 with multiple=true: everything up to it
    // is covered, and nothing overflows finding what follows it.
    let mut c = Conv::new();
    c.handshake().open(1).open(2);
    c.c(1, K::ConfirmSelect, &[])
        .s(1, K::ConfirmSelectOk, &[])
        .publish(1, 1)
        .publish(1, 1);
    c.s(
        1,
        K::BasicAck,
        &[("delivery-tag", ll(u64::MAX)), ("multiple", bit(true))],
    );
    c.consume(2, "t", false)
        .deliver(2, "t", 1)
        .deliver(2, "t", u64::MAX);
    c.c(
        2,
        K::BasicAck,
        &[("delivery-tag", ll(u64::MAX)), ("multiple", bit(true))],
    );
    let v = c.expect(&["amqp091.confirm.unknown-sequence"]);
    assert!(
        v[0].message.contains("not yet published"),
        "{}",
        v[0].message
    );
    // Both deliveries were settled by that ack: acking either again is unknown.
    c.c(2, K::BasicAck, &[("delivery-tag", ll(1))]);
    c.expect(&[
        "amqp091.confirm.unknown-sequence",
        "amqp091.basic.unknown-delivery-tag",
    ]);
}
