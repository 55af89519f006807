//! The AMQP 0-9-1 rules of the violation catalog. Each rule's doc comment quotes the spec sentence
//! (AMQP 0-9-1 specification, or the rule of the method in the spec's XML, or RabbitMQ's
//! documented behaviour for its extensions) it enforces; ids are stable, never rename one.
//!
//! Holds data only: no tracking logic.

use crate::base::Severity;
use crate::state::rules::Rule;

/// A connection method out of the handshake / connection-class order.
///
/// AMQP 0-9-1 §2.2.4 and the connection class grammar: "open-connection = C:protocol-header
/// S:START C:START-OK *challenge S:TUNE C:TUNE-OK C:OPEN S:OPEN-OK; challenge = S:SECURE
/// C:SECURE-OK".
pub static HANDSHAKE_ORDER: Rule = Rule {
    id: "amqp091.connection.handshake-order",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §2.2.4 (connection grammar)",
    text: "a connection method out of order: start, start-ok, [secure, secure-ok]*, tune, tune-ok, open, open-ok",
};

/// A non-connection method (or content) before the connection is open.
///
/// AMQP 0-9-1 §2.2.4, connection class grammar: "connection = open-connection *use-connection
/// close-connection" — channels are used only after open-ok.
pub static CONNECTION_NOT_OPEN: Rule = Rule {
    id: "amqp091.connection.not-open",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §2.2.4 (connection grammar)",
    text: "a channel frame before connection.open-ok",
};

/// The client uses channels after sending connection.open, before the server's open-ok.
///
/// AMQP 0-9-1 §2.2.4, connection class grammar: "connection = open-connection *use-connection
/// close-connection", "open-connection = C:protocol-header S:START C:START-OK *challenge S:TUNE
/// C:TUNE-OK C:OPEN S:OPEN-OK". The grammar orders the conversation but no MUST forbids a
/// client from pipelining behind its open (RabbitMQ accepts it); the server may still refuse
/// the open, and everything pipelined is then lost. A warning, never an error, and the
/// server's answers to the pipelined frames are judged as answers.
pub static CONNECTION_PIPELINED: Rule = Rule {
    id: "amqp091.connection.pipelined-before-open-ok",
    severity: Severity::Warning,
    spec: "AMQP 0-9-1 §2.2.4 (connection grammar)",
    text: "the client used a channel after connection.open, before the server's open-ok",
};

/// Connection methods on a channel other than 0, other classes on channel 0.
///
/// AMQP 0-9-1 §4.2.3: "The channel number is 0 for all frames which are global to the
/// connection and 1-65535 for frames that refer to specific channels." (connection class:
/// "The client and the server MUST use channel 0 for all connection methods" — reply 503/504.)
pub static CHANNEL_ZERO: Rule = Rule {
    id: "amqp091.connection.channel-zero",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.3",
    text: "connection methods belong on channel 0, everything else on channels 1-65535",
};

/// start-ok's mechanism is not one the server offered.
///
/// AMQP 0-9-1 connection.start-ok, field mechanism: "A single security mechanisms selected by
/// the client, which must be one of those specified by the server." (rule "security").
pub static MECHANISM_NOT_OFFERED: Rule = Rule {
    id: "amqp091.connection.mechanism-not-offered",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 connection.start-ok (mechanism)",
    text: "the client chose a SASL mechanism the server did not offer in connection.start",
};

/// start-ok's locale is not one the server offered.
///
/// AMQP 0-9-1 connection.start-ok, field locale: "A single message locale selected by the
/// client, which must be one of those specified by the server."
pub static LOCALE_NOT_OFFERED: Rule = Rule {
    id: "amqp091.connection.locale-not-offered",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 connection.start-ok (locale)",
    text: "the client chose a locale the server did not offer in connection.start",
};

/// tune-ok asks for more than tune proposed.
///
/// AMQP 0-9-1 connection.tune-ok, rule "upper-limit" (channel-max and frame-max): "If the
/// client specifies a channel max that is higher than the value provided by the server, the
/// server MUST close the connection without attempting a negotiated close." (frame-max alike;
/// 0 means "no limit", so 0 exceeds any non-zero proposal).
pub static TUNE_EXCEEDS_SERVER: Rule = Rule {
    id: "amqp091.connection.tune-exceeds-server",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 connection.tune-ok (rule upper-limit)",
    text: "tune-ok's channel-max or frame-max is higher than the server's tune proposal",
};

/// frame-max below frame-min-size.
///
/// AMQP 0-9-1 connection.tune-ok frame-max, rule "minimum": "Until the frame-max has been
/// negotiated, both peers MUST accept frames of up to frame-min-size octets large, and the
/// minimum negotiated value for frame-max is also frame-min-size." (frame-min-size = 4096)
pub static FRAME_MAX_TOO_SMALL: Rule = Rule {
    id: "amqp091.connection.frame-max-too-small",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 connection.tune-ok (rule minimum)",
    text: "frame-max is below frame-min-size (4096)",
};

/// A frame larger than the negotiated frame-max (or than frame-min-size before tune-ok).
///
/// AMQP 0-9-1 connection.tune frame-max: "The largest frame size that the server proposes for
/// the connection, including frame header and end-byte."; rule "minimum": "Until the
/// frame-max has been negotiated, both peers MUST accept frames of up to frame-min-size
/// octets large"; §4.2.3 (frame size).
pub static FRAME_TOO_LARGE: Rule = Rule {
    id: "amqp091.frame.too-large",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.3, connection.tune (frame-max)",
    text: "a frame is larger than the negotiated frame-max",
};

/// A channel number above the negotiated channel-max.
///
/// AMQP 0-9-1 connection.tune channel-max: "Specifies highest channel number that the server
/// permits. Usable channel numbers are in the range 1..channel-max. Zero indicates no
/// specified limit."
pub static ABOVE_CHANNEL_MAX: Rule = Rule {
    id: "amqp091.channel.above-channel-max",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 connection.tune (channel-max)",
    text: "a channel number above the negotiated channel-max",
};

/// A peer silent for more than two heartbeat intervals.
///
/// AMQP 0-9-1 §4.2.7: "The peer should make a best effort to send heartbeats at specified
/// intervals." ... "If a peer detects no incoming traffic (i.e. received octets) for two
/// heartbeat intervals or longer, it should close the connection".
pub static HEARTBEAT_MISSED: Rule = Rule {
    id: "amqp091.heartbeat.missed",
    severity: Severity::Warning,
    spec: "AMQP 0-9-1 §4.2.7",
    text: "a peer sent nothing for more than two negotiated heartbeat intervals",
};

/// A heartbeat frame on a channel other than 0.
///
/// AMQP 0-9-1 §4.2.7: "Heartbeat frames MUST have a channel number of zero. A peer that
/// receives an invalid heartbeat frame MUST raise a connection exception with reply code 501
/// (frame error)."
pub static HEARTBEAT_CHANNEL: Rule = Rule {
    id: "amqp091.heartbeat.nonzero-channel",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.7",
    text: "a heartbeat frame on a channel other than 0",
};

/// The client uses a channel after channel.open, before the server's open-ok.
///
/// AMQP 0-9-1 channel class grammar: "channel = open-channel *use-channel close-channel",
/// "open-channel = C:OPEN S:OPEN-OK". As for the connection, the grammar orders the
/// conversation without a MUST against pipelining (RabbitMQ accepts it): a warning, and the
/// server's answers to the pipelined methods are judged as answers.
pub static CHANNEL_PIPELINED: Rule = Rule {
    id: "amqp091.channel.pipelined-before-open-ok",
    severity: Severity::Warning,
    spec: "AMQP 0-9-1 §2.2.4 (channel grammar)",
    text: "the client used a channel after channel.open, before the server's open-ok",
};

/// A frame on a channel that is not open.
///
/// AMQP 0-9-1 constants, channel-error (504): "The client attempted to work with a channel
/// that had not been correctly opened."; §4.5: a channel is closed for the peer that has sent
/// or received close-ok.
pub static CHANNEL_NOT_OPEN: Rule = Rule {
    id: "amqp091.channel.not-open",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.5, reply code 504 channel-error",
    text: "a frame on a channel that was never opened, is still opening, or was closed",
};

/// channel.open on a channel that is already open.
///
/// AMQP 0-9-1 channel.open, rule "state": "The client MUST NOT use this method on an
/// already-opened channel." (error 504 channel-error).
pub static CHANNEL_ALREADY_OPEN: Rule = Rule {
    id: "amqp091.channel.already-open",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 channel.open (rule state)",
    text: "channel.open on a channel that is already open",
};

/// The sender of channel.close sends something else on that channel before close-ok.
///
/// AMQP 0-9-1 channel.close: "This method indicates that the sender wants to close the
/// channel." ... "After sending this method, any received methods except Close and Close-OK
/// MUST be discarded. The response to receiving a Close after sending Close must be to send
/// Close-Ok."; §4.5 channel closure.
pub static CHANNEL_AFTER_CLOSE: Rule = Rule {
    id: "amqp091.channel.frame-after-close",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.5, channel.close",
    text: "after sending channel.close a peer sends only close-ok on that channel",
};

/// The sender of connection.close sends anything but close-ok; frames after close-ok.
///
/// AMQP 0-9-1 connection.close: "After sending this method, any received methods except
/// Close and Close-OK MUST be discarded."; connection.close-ok: "This method confirms a
/// Connection.Close method and tells the recipient that it is safe to release resources for
/// the connection and close the socket."; §2.3.7 / §4.5.
pub static CONNECTION_AFTER_CLOSE: Rule = Rule {
    id: "amqp091.connection.frame-after-close",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.5, connection.close / close-ok",
    text: "a frame after connection.close (other than close-ok) or after close-ok",
};

/// A reply method with no request it answers.
///
/// AMQP 0-9-1 §2.2.1 and every synchronous method's `<response>`: a reply (`*-ok`,
/// get-empty) answers a synchronous request the other peer sent on that channel.
pub static UNEXPECTED_REPLY: Rule = Rule {
    id: "amqp091.channel.unexpected-reply",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §2.2.1 (synchronous request/response)",
    text: "a reply method that answers no pending request on its channel",
};

/// A method sent by the peer that must not send it.
///
/// AMQP 0-9-1 XML: each method's `<chassis name="client|server" implement="MUST"/>` says
/// which peer receives it (e.g. basic.deliver is received only by the client).
pub static WRONG_DIRECTION: Rule = Rule {
    id: "amqp091.method.wrong-direction",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 XML (method chassis)",
    text: "a method sent by the wrong peer (client-only method from the server or vice versa)",
};

/// A content-bearing method followed by something other than its content header.
///
/// AMQP 0-9-1 §4.2.6: "When a peer sends such a method frame, it always follows it with a
/// content header and zero or more content body frames."; §4.2.6.2: "A peer that receives an
/// incomplete or badly-formatted content MUST raise a connection exception with reply code
/// 505 (unexpected frame). This includes missing content headers".
pub static MISSING_HEADER: Rule = Rule {
    id: "amqp091.content.missing-header",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.6",
    text: "a content-bearing method is not followed by its content header",
};

/// Body frames do not add up to body-size before the next method/header on that channel.
///
/// AMQP 0-9-1 §4.2.6: "two content frames from the same channel may not be mixed or
/// overlapped, nor may content frames for a single content be mixed with method frames on the
/// same channel."; §4.2.6.2: "... missing content body frames".
pub static BODY_INCOMPLETE: Rule = Rule {
    id: "amqp091.content.body-incomplete",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.6",
    text: "a method or header interrupts a content whose body frames do not yet add up to body-size",
};

/// A content header with no content-bearing method before it.
///
/// AMQP 0-9-1 §4.2.6: content (header and body frames) follows a method "formally defined as
/// carrying content" (basic.publish, basic.deliver, basic.get-ok, basic.return).
pub static UNEXPECTED_HEADER: Rule = Rule {
    id: "amqp091.content.unexpected-header",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.6",
    text: "a content header that follows no content-bearing method",
};

/// A content body frame that belongs to no content.
///
/// AMQP 0-9-1 §4.2.6: body frames follow a content header, and only until body-size is
/// reached; §4.2.6.2: a badly-formatted content is a 505 unexpected-frame error.
pub static UNEXPECTED_BODY: Rule = Rule {
    id: "amqp091.content.unexpected-body",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.6.2",
    text: "a content body frame with no content header before it",
};

/// Body frames adding up to more than body-size.
///
/// AMQP 0-9-1 §4.2.6.1: "The body size is a 64-bit value that defines the total size of the
/// content body, that is, the sum of the body sizes for the following content body frames."
pub static BODY_SIZE_MISMATCH: Rule = Rule {
    id: "amqp091.content.body-size-mismatch",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.6.1",
    text: "content body frames add up to more than the header's body-size",
};

/// A content header whose class-id differs from the method's class.
///
/// AMQP 0-9-1 §4.2.6.1: "The class-id MUST match the method frame class id. The peer MUST
/// respond to an invalid class-id by raising a connection exception with reply code 501
/// (frame error)."
pub static CLASS_MISMATCH: Rule = Rule {
    id: "amqp091.content.class-mismatch",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 §4.2.6.1",
    text: "the content header's class-id differs from the content-bearing method's class",
};

/// Broker ack/nack of a publish sequence number not yet published, or already confirmed.
///
/// RabbitMQ publisher confirms (confirm.select): "the broker confirms messages as it handles
/// them by sending a basic.ack on the same channel. The delivery-tag field contains the
/// sequence number of the confirmed message." ... "the sequence number ... starts at 1" and
/// "a message will never be both acked and nacked".
pub static CONFIRM_UNKNOWN_SEQUENCE: Rule = Rule {
    id: "amqp091.confirm.unknown-sequence",
    severity: Severity::Error,
    spec: "RabbitMQ publisher confirms (AMQP 0-9-1 extension confirm.select)",
    text: "the broker confirmed a publish sequence number not yet published or already confirmed",
};

/// Broker ack/nack on a channel that is not in confirm mode.
///
/// RabbitMQ publisher confirms: "To enable confirms, a client sends the confirm.select
/// method." — a server sends basic.ack/basic.nack only on channels in confirm mode.
pub static CONFIRM_NOT_SELECTED: Rule = Rule {
    id: "amqp091.confirm.not-in-confirm-mode",
    severity: Severity::Error,
    spec: "RabbitMQ publisher confirms (AMQP 0-9-1 extension confirm.select)",
    text: "the broker sent basic.ack/basic.nack on a channel that is not in confirm mode",
};

/// confirm.select on a transactional channel, or tx.select on a confirm channel.
///
/// RabbitMQ publisher confirms: "a transactional channel cannot be put into confirm mode and
/// once a channel is in confirm mode, it cannot be made transactional" (406
/// PRECONDITION_FAILED).
pub static CONFIRM_TX_CONFLICT: Rule = Rule {
    id: "amqp091.confirm.tx-conflict",
    severity: Severity::Error,
    spec: "RabbitMQ publisher confirms (AMQP 0-9-1 extension confirm.select)",
    text: "confirm mode and transactions combined on one channel (RabbitMQ: 406)",
};

/// Server delivery tags that do not start at 1 and increase per channel.
///
/// AMQP 0-9-1 domain delivery-tag: "The server-assigned and channel-specific delivery tag";
/// rule "non-zero": "The server MUST NOT use a zero value for delivery tags." RabbitMQ:
/// "Delivery tags are monotonically growing positive integers".
pub static DELIVERY_TAG_ORDER: Rule = Rule {
    id: "amqp091.basic.delivery-tag-order",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 domain delivery-tag (rule non-zero)",
    text: "a server delivery tag that is zero or not greater than the previous one on its channel",
};

/// Client ack/nack/reject of a tag never delivered, already settled, or delivered no-ack.
///
/// AMQP 0-9-1 basic.ack delivery-tag: "The server MUST validate that a non-zero delivery-tag
/// refers to a delivered message, and raise a channel exception if this is not the case."
/// RabbitMQ closes the channel with 406 PRECONDITION_FAILED "unknown delivery tag".
pub static UNKNOWN_DELIVERY_TAG: Rule = Rule {
    id: "amqp091.basic.unknown-delivery-tag",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 basic.ack (rule acknowledgement), RabbitMQ 406",
    text: "the client settled a delivery tag that is not outstanding on the channel",
};

/// basic.consume with a consumer tag already in use on the channel.
///
/// AMQP 0-9-1 basic.consume consumer-tag: "The client MUST NOT specify a tag that refers to an
/// existing consumer." (error 530 not-allowed).
pub static CONSUMER_TAG_IN_USE: Rule = Rule {
    id: "amqp091.basic.consumer-tag-in-use",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 basic.consume (consumer-tag)",
    text: "basic.consume with a consumer tag already in use on the channel",
};

/// basic.deliver to a consumer tag that is not a consumer on the channel.
///
/// AMQP 0-9-1 basic.deliver: "This method delivers a message to the client, via a consumer."
/// — the consumer tag is one the server confirmed with basic.consume-ok (or a nowait consume)
/// and not yet cancelled.
pub static UNKNOWN_CONSUMER: Rule = Rule {
    id: "amqp091.basic.unknown-consumer",
    severity: Severity::Error,
    spec: "AMQP 0-9-1 basic.deliver (consumer-tag)",
    text: "basic.deliver names a consumer tag that is not a consumer on the channel",
};

/// Content sent after the sender acknowledged channel.flow active=false.
///
/// AMQP 0-9-1 channel.flow: "This method asks the peer to pause or restart the flow of content
/// data sent by a consumer."; channel.flow-ok active: "0 means it will not [send content
/// frames]"; rule "expected-behaviour": the requester "MAY disconnect and/or ban a peer that
/// does not respect the request."
pub static FLOW_STOPPED: Rule = Rule {
    id: "amqp091.channel.content-while-flow-stopped",
    severity: Severity::Warning,
    spec: "AMQP 0-9-1 channel.flow / flow-ok (rule expected-behaviour)",
    text: "content sent on a channel after its sender confirmed channel.flow active=false",
};

/// A publish while the broker has the connection blocked (RabbitMQ extension).
///
/// RabbitMQ connection.blocked: "the broker will send a connection.blocked method to the
/// client" ... blocked connections are simply not read from; publishing is not a protocol
/// error, but the message will wait.
pub static PUBLISH_WHILE_BLOCKED: Rule = Rule {
    id: "amqp091.connection.publish-while-blocked",
    severity: Severity::Info,
    spec: "RabbitMQ connection.blocked (AMQP 0-9-1 extension)",
    text: "the client publishes while the broker has the connection blocked (it will stall)",
};

/// A peer received connection.close and the connection ended without its close-ok.
///
/// AMQP 0-9-1 connection.close-ok: "This method confirms a Connection.Close method and tells
/// the recipient that it is safe to release resources for the connection and close the
/// socket." §2.2.4 / connection class: "A peer that detects a socket closure without having
/// received a Close-Ok handshake method SHOULD log the error." A SHOULD on the detecting peer:
/// a warning against the peer that never answered. Judged only when the TCP connection
/// demonstrably ended (FIN or RST), not when a capture merely stops.
pub static CLOSE_NOT_ANSWERED: Rule = Rule {
    id: "amqp091.connection.close-not-answered",
    severity: Severity::Warning,
    spec: "AMQP 0-9-1 connection.close / close-ok",
    text: "a peer received connection.close and the connection ended without its close-ok",
};

/// Every AMQP 0-9-1 rule, in the order docs/rules.md lists them.
pub const RULES: &[&Rule] = &[
    &HANDSHAKE_ORDER,
    &CONNECTION_NOT_OPEN,
    &CONNECTION_PIPELINED,
    &CHANNEL_ZERO,
    &MECHANISM_NOT_OFFERED,
    &LOCALE_NOT_OFFERED,
    &TUNE_EXCEEDS_SERVER,
    &FRAME_MAX_TOO_SMALL,
    &FRAME_TOO_LARGE,
    &ABOVE_CHANNEL_MAX,
    &HEARTBEAT_MISSED,
    &HEARTBEAT_CHANNEL,
    &CHANNEL_NOT_OPEN,
    &CHANNEL_PIPELINED,
    &CHANNEL_ALREADY_OPEN,
    &CHANNEL_AFTER_CLOSE,
    &CONNECTION_AFTER_CLOSE,
    &CLOSE_NOT_ANSWERED,
    &UNEXPECTED_REPLY,
    &WRONG_DIRECTION,
    &MISSING_HEADER,
    &BODY_INCOMPLETE,
    &UNEXPECTED_HEADER,
    &UNEXPECTED_BODY,
    &BODY_SIZE_MISMATCH,
    &CLASS_MISMATCH,
    &CONFIRM_UNKNOWN_SEQUENCE,
    &CONFIRM_NOT_SELECTED,
    &CONFIRM_TX_CONFLICT,
    &DELIVERY_TAG_ORDER,
    &UNKNOWN_DELIVERY_TAG,
    &CONSUMER_TAG_IN_USE,
    &UNKNOWN_CONSUMER,
    &FLOW_STOPPED,
    &PUBLISH_WHILE_BLOCKED,
];
