//! The AMQP 1.0 rules of the violation catalog. Each rule's doc comment quotes the spec sentence
//! it enforces (AMQP 1.0 transport, part 2; security, part 5; the Anonymous Terminus
//! specification); ids are stable and never renamed.
//!
//! Only what the spec makes a MUST / MUST NOT is an `error`; a SHOULD / SHOULD NOT (or a
//! declarative "will") is a `warning`.

use crate::base::Severity;
use crate::state::rules::Rule;

const fn rule(
    id: &'static str,
    severity: Severity,
    spec: &'static str,
    text: &'static str,
) -> Rule {
    Rule {
        id,
        severity,
        spec,
        text,
    }
}

use Severity::{Error, Info, Warning};

// ---- connection -------------------------------------------------------------------------

/// AMQP 1.0 §2.7.1 (open): "The first frame sent on a connection in either direction MUST
/// contain an open performative. Note that the connection header which is sent first on the
/// connection is not a frame." (§2.4.5: "Empty frames can only be sent after the open frame is
/// sent.")
pub static CONNECTION_FIRST_FRAME_NOT_OPEN: Rule = rule(
    "amqp10.connection.first-frame-not-open",
    Error,
    "AMQP 1.0 §2.7.1",
    "the first frame a peer sends after its protocol header is not an open",
);

/// AMQP 1.0 §2.4.3: "Prior to closing a connection, each peer MUST write a close frame with a
/// code indicating the reason for closing. This frame MUST be the last thing ever written onto
/// a connection." §2.7.9 (close): "Sending a close signals that the sender will not be sending
/// any more frames (or bytes of any other kind) on the connection."
pub static CONNECTION_FRAME_AFTER_CLOSE: Rule = rule(
    "amqp10.connection.frame-after-close",
    Error,
    "AMQP 1.0 §2.4.3, §2.7.9",
    "a peer sent a frame after its own close",
);

/// AMQP 1.0 §2.4.3: "Prior to closing a connection, each peer MUST write a close frame with a
/// code indicating the reason for closing." Judged when the peer demonstrably closed or reset
/// its side of the TCP connection (a FIN, an end of stream or a reset from it) after its open
/// and without its close; a capture that merely ends is not this.
pub static CONNECTION_CLOSED_WITHOUT_CLOSE: Rule = rule(
    "amqp10.connection.closed-without-close",
    Error,
    "AMQP 1.0 §2.4.3",
    "a peer closed or reset the TCP connection after its open without sending a close frame",
);

/// AMQP 1.0 §2.4.6 / §2.4.7 (connection states): each endpoint follows the state diagram; e.g.
/// an open is sent once, in HDR_SENT, HDR_EXCH or OPEN_RCVD. A frame the diagram does not allow
/// in the sender's state is a violation (this is the state machine's fallback arm).
pub static CONNECTION_ILLEGAL_FRAME_FOR_STATE: Rule = rule(
    "amqp10.connection.illegal-frame-for-state",
    Error,
    "AMQP 1.0 §2.4.6",
    "a frame the connection state diagram does not allow in the sender's state (e.g. a second open)",
);

/// AMQP 1.0 §2.2: "Any data appearing beyond the protocol header MUST match the version
/// indicated by the protocol header. If the incoming and outgoing protocol headers do not
/// match, both peers MUST close their outgoing stream".
pub static CONNECTION_FRAME_AFTER_HEADER_MISMATCH: Rule = rule(
    "amqp10.connection.frame-after-header-mismatch",
    Error,
    "AMQP 1.0 §2.2",
    "a peer sent frames although the two protocol headers differ",
);

/// AMQP 1.0 §2.7.1 (open, max-frame-size): "A peer MUST NOT send frames larger than its partner
/// can handle." §2.4.1: "Prior to any explicit negotiation, the maximum frame size is 512
/// (MIN-MAX-FRAME-SIZE)".
pub static CONNECTION_FRAME_TOO_LARGE: Rule = rule(
    "amqp10.connection.frame-too-large",
    Error,
    "AMQP 1.0 §2.7.1",
    "a frame larger than the partner's max-frame-size (512 before the partner's open)",
);

/// AMQP 1.0 §2.7.1 (open, max-frame-size): "Both peers MUST accept frames of up to 512
/// (MIN-MAX-FRAME-SIZE) octets."
pub static CONNECTION_MAX_FRAME_SIZE_TOO_SMALL: Rule = rule(
    "amqp10.connection.max-frame-size-too-small",
    Error,
    "AMQP 1.0 §2.7.1",
    "an open announces a max-frame-size below 512",
);

/// AMQP 1.0 §2.7.1 (open, channel-max): "A peer MUST not use channel numbers outside the range
/// that its partner can handle." §2.4.1: before negotiation "the maximum channel number is 0".
pub static CONNECTION_CHANNEL_MAX_EXCEEDED: Rule = rule(
    "amqp10.connection.channel-max-exceeded",
    Error,
    "AMQP 1.0 §2.7.1",
    "a frame on a channel above the partner's channel-max (0 before the partner's open)",
);

/// AMQP 1.0 §2.4.5: "implementations SHOULD use channel 0 when sending empty frames, and MUST
/// use channel 0 if a maximum channel number has not yet been negotiated (i.e., before an open
/// frame has been received)".
pub static CONNECTION_EMPTY_FRAME_CHANNEL: Rule = rule(
    "amqp10.connection.empty-frame-channel",
    Error,
    "AMQP 1.0 §2.4.5",
    "an empty frame on a nonzero channel before the partner's open was received",
);

/// AMQP 1.0 §2.4.5: "Each peer has its own (independent) idle timeout. At connection open each
/// peer communicates the maximum period between activity (frames) on the connection that it
/// desires from its partner." "If during operation a peer exceeds the remote peer's idle
/// timeout's threshold, e.g., because it is heavily loaded, it SHOULD gracefully close the
/// connection".
pub static CONNECTION_IDLE_TIMEOUT_EXCEEDED: Rule = rule(
    "amqp10.connection.idle-timeout-exceeded",
    Warning,
    "AMQP 1.0 §2.4.5",
    "a peer stayed silent for longer than the idle-time-out its partner asked for",
);

// ---- SASL -------------------------------------------------------------------------------

/// AMQP 1.0 §5.3.2 (SASL negotiation): "The peer acting as the SASL server MUST announce
/// supported authentication mechanisms using the sasl-mechanisms frame. The partner MUST then
/// choose one of the supported mechanisms and initiate a sasl exchange." The exchange is
/// mechanisms (server), init (client), challenge/response, outcome (server), in that order,
/// and only inside the SASL layer.
pub static SASL_UNEXPECTED_FRAME: Rule = rule(
    "amqp10.sasl.unexpected-frame",
    Error,
    "AMQP 1.0 §5.3.2",
    "a SASL frame out of the mechanisms/init/challenge/response/outcome order, or from the wrong peer",
);

/// AMQP 1.0 §5.3.2: "The partner MUST then choose one of the supported mechanisms". §5.3.3.2
/// (sasl-init, mechanism): "The name of the SASL mechanism used for the SASL exchange."
pub static SASL_MECHANISM_NOT_OFFERED: Rule = rule(
    "amqp10.sasl.mechanism-not-offered",
    Error,
    "AMQP 1.0 §5.3.2",
    "sasl-init names a mechanism the server did not offer in sasl-mechanisms",
);

/// AMQP 1.0 §5.3.2 / §5.1: the SASL layer ends with a sasl-outcome; only after an outcome with
/// code ok does the next layer (the AMQP protocol header) start. "Any data appearing beyond the
/// protocol header MUST match the version indicated by the protocol header" (§2.2).
pub static SASL_HEADER_BEFORE_SUCCESS: Rule = rule(
    "amqp10.sasl.header-before-success",
    Error,
    "AMQP 1.0 §5.3.2",
    "an AMQP protocol header (or AMQP frame) inside the SASL layer before a successful sasl-outcome",
);

// ---- sessions ---------------------------------------------------------------------------

/// AMQP 1.0 §2.7.2 (begin, remote-channel): "If a session is locally initiated, the
/// remote-channel MUST NOT be set. When an endpoint responds to a remotely initiated session,
/// the remote-channel MUST be set to the channel on which the remote session sent the begin."
pub static SESSION_REMOTE_CHANNEL_ON_LOCAL_BEGIN: Rule = rule(
    "amqp10.session.remote-channel-on-local-begin",
    Error,
    "AMQP 1.0 §2.7.2",
    "a begin's remote-channel names no partner begin awaiting an answer",
);

/// AMQP 1.0 §2.5.1: "Sessions are established by creating a session endpoint, assigning it to
/// an unused channel number, and sending a begin".
pub static SESSION_BEGIN_ON_CHANNEL_IN_USE: Rule = rule(
    "amqp10.session.begin-on-channel-in-use",
    Error,
    "AMQP 1.0 §2.5.1",
    "a begin on a channel the sender already uses for a session it has not ended",
);

/// AMQP 1.0 §2.5.5 (session states): "In the UNMAPPED state, the session endpoint is not mapped
/// to any incoming or outgoing channels on the connection endpoint. In this state an endpoint
/// cannot send or receive frames." (and in BEGIN_RCVD / END_SENT it "cannot send them").
pub static SESSION_FRAME_ON_UNMAPPED_CHANNEL: Rule = rule(
    "amqp10.session.frame-on-unmapped-channel",
    Error,
    "AMQP 1.0 §2.5.5",
    "a session frame on a channel the sender has not begun (or has already ended)",
);

/// AMQP 1.0 §2.5.6: "The remote-incoming-window reflects the maximum number of outgoing
/// transfers that can be sent without exceeding the remote endpoint's incoming-window."
/// (session-error `amqp:session:window-violation`, §2.8.17: "The peer violated incoming window
/// for the session.")
pub static SESSION_INCOMING_WINDOW_EXCEEDED: Rule = rule(
    "amqp10.session.incoming-window-exceeded",
    Error,
    "AMQP 1.0 §2.5.6",
    "a transfer beyond the partner's session incoming-window",
);

/// AMQP 1.0 §2.7.2 (begin, handle-max): "A peer MUST NOT attempt to attach a link using a
/// handle value outside the range that its partner can handle."
pub static SESSION_HANDLE_MAX_EXCEEDED: Rule = rule(
    "amqp10.session.handle-max-exceeded",
    Error,
    "AMQP 1.0 §2.7.2",
    "an attach with a handle above the partner's handle-max",
);

// ---- links ------------------------------------------------------------------------------

/// AMQP 1.0 §2.7.3 (attach, handle): "The handle MUST NOT be used for other open links. An
/// attempt to attach using a handle which is already associated with a link MUST be responded
/// to with an immediate close carrying a handle-in-use session-error."
pub static LINK_HANDLE_IN_USE: Rule = rule(
    "amqp10.link.handle-in-use",
    Error,
    "AMQP 1.0 §2.7.3",
    "an attach on a handle the sender still uses for another link",
);

/// AMQP 1.0 §2.8.17 (session-error `amqp:session:unattached-handle`): "A frame (other than
/// attach) was received referencing a handle which is not currently in use of an attached
/// link." §2.7.4 (flow, handle): "If set to a handle that is not currently associated with an
/// attached link, the recipient MUST respond by ending the session with an unattached-handle
/// session error." §2.6.2: each link endpoint is assigned a numeric handle "used by the peer as
/// a shorthand to refer to the link in all frames that reference the link".
pub static LINK_UNATTACHED_HANDLE: Rule = rule(
    "amqp10.link.unattached-handle",
    Error,
    "AMQP 1.0 §2.6.2, §2.8.17",
    "a transfer, flow or detach on a handle the sender has not attached",
);

/// AMQP 1.0 §2.6.1: "Link names MUST uniquely identify the link amongst all links of the same
/// direction between the two participating containers." §2.6.1: a second attach of an active
/// link "succeeds and the first attach MUST then be closed with a link error of stolen".
pub static LINK_NAME_IN_USE: Rule = rule(
    "amqp10.link.name-in-use",
    Error,
    "AMQP 1.0 §2.6.1",
    "an attach reuses the name and direction of a link the sender still has attached",
);

/// AMQP 1.0 §2.6.7: "If the link-credit is reduced by the receiver when transfers are
/// in-flight, the receiver MAY either handle the excess messages normally or detach the link
/// with a transfer-limit-exceeded error code." A transfer beyond the latest credit but within an
/// earlier, larger grant the sender has not demonstrably seen replaced (by a flow of its own
/// echoing the new credit) may be such an in-flight transfer: the capture cannot tell, so the
/// finding says it was not judged (once per lowering), rather than guessing either way.
pub static LINK_EXCESS_NOT_JUDGED: Rule = rule(
    "amqp10.link.excess-not-judged",
    Info,
    "AMQP 1.0 §2.6.7",
    "transfers beyond a lowered link-credit that the sender may not have seen yet: not judged",
);

/// AMQP 1.0 §2.5.6: the incoming-window "defines the maximum number of incoming transfer
/// frames that the endpoint can currently receive"; a peer may lower it at any time, and the
/// transfers its partner sent before reading that flow are in flight. A transfer beyond the
/// latest window but within an earlier, larger one is not judged (once per lowering).
pub static SESSION_EXCESS_NOT_JUDGED: Rule = rule(
    "amqp10.session.excess-not-judged",
    Info,
    "AMQP 1.0 §2.5.6",
    "transfers beyond a lowered incoming-window that the sender may not have seen yet: not judged",
);

/// AMQP 1.0 §2.6.7: "If the link-credit is less than or equal to zero, i.e., the
/// delivery-count is the same as or greater than the delivery-limit, a sender MUST NOT send
/// more messages."
pub static LINK_TRANSFER_WITHOUT_CREDIT: Rule = rule(
    "amqp10.link.transfer-without-credit",
    Error,
    "AMQP 1.0 §2.6.7",
    "a sender started a delivery with link-credit <= 0",
);

/// AMQP 1.0 §2.6 (links): "A link provides a unidirectional transport for messages between a
/// source and a target." §2.7.3 (attach, role): "The role being played by the peer, i.e.,
/// whether the peer is the sender or the receiver of messages on the link." Only the end that
/// attached as sender transfers.
pub static LINK_TRANSFER_FROM_RECEIVER: Rule = rule(
    "amqp10.link.transfer-from-receiver",
    Error,
    "AMQP 1.0 §2.6, §2.7.3",
    "a transfer from the endpoint that attached the link as receiver",
);

/// AMQP 1.0 §2.6.7: "The drain flag indicates how the sender SHOULD behave when insufficient
/// messages are available to consume the current link-credit. If set, the sender will (after
/// sending all available messages) advance the delivery-count as much as possible, consuming
/// all link-credit, and send the flow state to the receiver."
pub static LINK_DRAIN_NOT_HONOURED: Rule = rule(
    "amqp10.link.drain-not-honoured",
    Warning,
    "AMQP 1.0 §2.6.7",
    "after a drain request the sender detached/ended/closed without consuming the credit",
);

/// AMQP 1.0 §2.6.6: "A peer closes a link by sending the detach frame with the handle for the
/// specified link, and the closed flag set to true. The partner will destroy the corresponding
/// link endpoint, and reply with its own detach frame with the closed flag set to true." "Note
/// that one peer MAY send a closing detach while its partner is sending a non-closing detach.
/// In this case, the partner MUST signal that it has closed the link by reattaching and then
/// sending a closing detach."
pub static LINK_DETACH_NOT_CLOSED: Rule = rule(
    "amqp10.link.detach-not-closed",
    Warning,
    "AMQP 1.0 §2.6.6",
    "a closing detach was answered with a non-closing detach",
);

/// AMQP 1.0 §2.7.3 (attach, incomplete-unsettled): "On receipt of an incomplete unsettled map
/// a sending endpoint MUST NOT send any new deliveries (i.e. deliveries where resume is not set
/// to true) to its partner".
pub static LINK_NEW_DELIVERY_AFTER_INCOMPLETE_UNSETTLED: Rule = rule(
    "amqp10.link.new-delivery-after-incomplete-unsettled",
    Error,
    "AMQP 1.0 §2.7.3",
    "a new (non-resume) delivery on a link whose receiver sent an incomplete unsettled map",
);

/// AMQP 1.0 §2.7.4 (flow, delivery-count / link-credit / available / drain): "When the handle
/// field is not set, this field MUST NOT be set."
pub static FLOW_LINK_FIELDS_WITHOUT_HANDLE: Rule = rule(
    "amqp10.flow.link-fields-without-handle",
    Error,
    "AMQP 1.0 §2.7.4",
    "a flow without handle sets delivery-count, link-credit, available or drain",
);

/// AMQP 1.0 §2.7.4 (flow, delivery-count): "When the flow state is being sent from the
/// receiver endpoint to the sender endpoint this field MUST be set to the last known value of
/// the corresponding sending endpoint. In the event that the receiving link endpoint has not
/// yet seen the initial attach frame from the sender this field MUST NOT be set." Judged when
/// the sender's attach had not even been sent when the receiver's flow passed.
pub static FLOW_RECEIVER_DELIVERY_COUNT_BEFORE_ATTACH: Rule = rule(
    "amqp10.flow.receiver-delivery-count-before-attach",
    Error,
    "AMQP 1.0 §2.7.4",
    "a receiver's link flow sets delivery-count before the sender's attach was sent",
);

/// AMQP 1.0 §2.7.4 (flow, delivery-count), the same sentence: once the receiver has seen the
/// sender's attach, its flows "MUST be set to the last known value of the corresponding sending
/// endpoint". Judged when the receiver's attach answered the sender's (so it saw it).
pub static FLOW_RECEIVER_DELIVERY_COUNT_MISSING: Rule = rule(
    "amqp10.flow.receiver-delivery-count-missing",
    Error,
    "AMQP 1.0 §2.7.4",
    "a receiver's link flow granting credit without delivery-count after it answered the sender's attach",
);

/// AMQP 1.0 §2.6.7: "Only the sender MAY independently modify this field [delivery-count]. The
/// receiver's value is calculated based on the last known value from the sender and any
/// subsequent messages received on the link." A receiver's delivery-count ahead of the
/// sender's counts deliveries never sent.
pub static FLOW_RECEIVER_DELIVERY_COUNT_AHEAD: Rule = rule(
    "amqp10.flow.receiver-delivery-count-ahead",
    Error,
    "AMQP 1.0 §2.6.7, §2.7.4",
    "a receiver's link flow states a delivery-count ahead of the sender's",
);

/// AMQP 1.0 §2.7.4 (flow, delivery-count): "When the flow state is being sent from the
/// receiver endpoint to the sender endpoint this field MUST be set to the last known value of
/// the corresponding sending endpoint." §2.6.7: "The receiver's value is calculated based on the
/// last known value from the sender and any subsequent messages received on the link." What the
/// receiving link endpoint has received is proven by its own dispositions (§2.7.6: "The
/// disposition frame is used to inform the remote peer of local changes in the state of
/// deliveries."): a link's deliveries arrive in order, so having named a delivery, the receiver has every
/// delivery and every attach or flow its sender sent before it. A delivery-count behind the
/// count the sender's attach or flow stated plus the complete deliveries after it, up to the
/// newest the receiver named, leaves out messages the receiver has, and makes the sender
/// compute more link-credit than the receiver granted. Neither transfers and flows still on the
/// wire (crossing) nor transfers only the receiver's session has counted in its
/// next-incoming-id (not yet handed to the link) are judged, nor anything of a session or link
/// with missed bytes.
pub static FLOW_RECEIVER_DELIVERY_COUNT_BEHIND: Rule = rule(
    "amqp10.flow.receiver-delivery-count-behind",
    Error,
    "AMQP 1.0 §2.7.4, §2.6.7",
    "a receiver's link flow states a delivery-count behind the deliveries its dispositions show it received",
);

/// AMQP 1.0 §2.7.4 (flow, next-incoming-id): "This value MUST be set if the peer has received
/// the begin frame for the session, and MUST NOT be set if it has not." Judged when the
/// partner's begin had not been sent when the flow passed.
pub static FLOW_NEXT_INCOMING_ID_BEFORE_BEGIN: Rule = rule(
    "amqp10.flow.next-incoming-id-before-begin",
    Error,
    "AMQP 1.0 §2.7.4",
    "a flow sets next-incoming-id before the partner's begin was sent",
);

/// AMQP 1.0 §2.7.4 (flow, next-incoming-id), the same sentence: judged when the flow's sender
/// answered the partner's begin (so it has received it).
pub static FLOW_NEXT_INCOMING_ID_MISSING: Rule = rule(
    "amqp10.flow.next-incoming-id-missing",
    Error,
    "AMQP 1.0 §2.7.4",
    "a flow without next-incoming-id from a peer that answered the partner's begin",
);

/// AMQP 1.0 §2.5.6: "Upon receiving a transfer, the receiving endpoint will increment the
/// next-incoming-id to match the implicit transfer-id of the incoming transfer plus one". A
/// next-incoming-id ahead of the partner's next-outgoing-id counts transfers never sent; one
/// behind what the peer's earlier flow said un-receives transfers. A declarative "will": a
/// warning.
pub static FLOW_NEXT_INCOMING_ID_INCONSISTENT: Rule = rule(
    "amqp10.flow.next-incoming-id-inconsistent",
    Warning,
    "AMQP 1.0 §2.5.6, §2.7.4",
    "a flow's next-incoming-id is ahead of the partner's transfers or behind the peer's own earlier flow",
);

/// AMQP 1.0 §2.7.4 (flow, delivery-count): "When the handle identifies that the flow state is
/// being sent from the sender link endpoint to receiver link endpoint this field MUST be set
/// to the current delivery-count of the link endpoint."
pub static FLOW_SENDER_DELIVERY_COUNT_MISSING: Rule = rule(
    "amqp10.flow.sender-delivery-count-missing",
    Error,
    "AMQP 1.0 §2.7.4",
    "a sender's link flow without delivery-count",
);

/// AMQP 1.0 §2.7.4 (flow, delivery-count): "When the handle identifies that the flow state is
/// being sent from the sender link endpoint to receiver link endpoint this field MUST be set
/// to the current delivery-count of the link endpoint." A sender's own flow cannot be stale by
/// frames crossing: its delivery-count behind the deliveries it already sent on the link
/// (initial-delivery-count + one per delivery, §2.6.7) is a wrong count, and makes the receiver
/// compute the wrong link-credit. Only judged while nothing of the link was missed.
pub static FLOW_SENDER_DELIVERY_COUNT_BEHIND: Rule = rule(
    "amqp10.flow.sender-delivery-count-behind",
    Error,
    "AMQP 1.0 §2.7.4",
    "a sender's link flow states a delivery-count behind the deliveries it has sent",
);

// ---- deliveries -------------------------------------------------------------------------

/// AMQP 1.0 §2.7.5 (transfer): delivery-id "MUST be supplied on the first transfer of a
/// multi-transfer delivery"; delivery-tag "MUST be specified for the first transfer of a
/// multi-transfer message and can only be omitted for continuation transfers"; message-format
/// likewise.
pub static DELIVERY_FIRST_TRANSFER_INCOMPLETE: Rule = rule(
    "amqp10.delivery.first-transfer-incomplete",
    Error,
    "AMQP 1.0 §2.7.5",
    "the first transfer of a delivery lacks delivery-id, delivery-tag or message-format",
);

/// AMQP 1.0 §2.7.5 (transfer): "It is an error if the delivery-id on a continuation transfer
/// differs from the delivery-id on the first transfer of a delivery." (and the same for
/// delivery-tag and message-format).
pub static DELIVERY_CONTINUATION_MISMATCH: Rule = rule(
    "amqp10.delivery.continuation-mismatch",
    Error,
    "AMQP 1.0 §2.7.5",
    "a continuation transfer's delivery-id, delivery-tag or message-format differs from the first",
);

/// AMQP 1.0 §2.6.12: "the delivery-tag is also associated with a delivery-id assigned by the
/// session. The delivery-id is then used to refer to the delivery-tag in all subsequent
/// interactions on that session." A delivery-id still naming an unsettled delivery cannot name
/// a second one.
pub static DELIVERY_ID_REUSED: Rule = rule(
    "amqp10.delivery.id-reused",
    Error,
    "AMQP 1.0 §2.6.12",
    "a new delivery reuses the delivery-id of a delivery still unsettled on the session",
);

/// AMQP 1.0 §2.8.8 / §2.8.10: delivery-ids are delivery-numbers, RFC-1982 sequence numbers
/// assigned by the session; each new delivery's id follows the previous one (implementations
/// use consecutive ids or the session's next-outgoing-id, both increasing).
pub static DELIVERY_ID_NOT_INCREASING: Rule = rule(
    "amqp10.delivery.id-not-increasing",
    Warning,
    "AMQP 1.0 §2.6.12, §2.8.8",
    "a new delivery's id does not follow the previous delivery-id of the session (RFC-1982)",
);

/// AMQP 1.0 §2.6.12: "Each delivery MUST be identified by a delivery-tag chosen by the sending
/// application. The delivery-tag MUST be unique amongst all deliveries that could be considered
/// unsettled by either end of the link."
pub static DELIVERY_TAG_REUSED: Rule = rule(
    "amqp10.delivery.tag-reused",
    Error,
    "AMQP 1.0 §2.6.12",
    "a new delivery reuses the tag of a delivery on the link that neither end has settled",
);

/// AMQP 1.0 §2.7.5 (transfer, aborted): "A sender SHOULD NOT set the more flag to true if it
/// also sets the aborted flag to true."
pub static DELIVERY_MORE_WITH_ABORTED: Rule = rule(
    "amqp10.delivery.more-with-aborted",
    Warning,
    "AMQP 1.0 §2.7.5",
    "a transfer sets both more and aborted",
);

/// AMQP 1.0 §2.7.5 (transfer, resume): "The sender MUST NOT send resumed transfers for
/// deliveries not in its local unsettled map."
pub static DELIVERY_RESUME_NOT_UNSETTLED: Rule = rule(
    "amqp10.delivery.resume-not-unsettled",
    Error,
    "AMQP 1.0 §2.7.5",
    "a resumed transfer whose tag is not in the sender's (complete) attach unsettled map",
);

/// AMQP 1.0 §2.7.5 (transfer, rcv-settle-mode): "If the negotiated link value is first, then it
/// is illegal to set this field to second."
pub static DELIVERY_RCV_SETTLE_MODE_ILLEGAL: Rule = rule(
    "amqp10.delivery.rcv-settle-mode-illegal",
    Error,
    "AMQP 1.0 §2.7.5",
    "a transfer asks for rcv-settle-mode second on a link negotiated as first",
);

/// AMQP 1.0 §2.8.2 / §2.8.3: sender-settle-mode unsettled: "The sender will send all deliveries
/// initially unsettled to the receiver."; settled: "The sender will send all deliveries settled
/// to the receiver."; receiver-settle-mode second: "The receiver will only settle after sending
/// the disposition to the sender and receiving a disposition indicating settlement of the
/// delivery from the sender."
pub static DELIVERY_SETTLE_MODE_BROKEN: Rule = rule(
    "amqp10.delivery.settle-mode-broken",
    Warning,
    "AMQP 1.0 §2.8.2, §2.8.3",
    "a delivery settled against the link's settle mode (snd-settle-mode, or receiver settling first in mode second)",
);

/// AMQP 1.0 §2.7.6 (disposition): "The disposition frame MAY reference deliveries from many
/// different links associated with a session, although all links MUST have the directionality
/// indicated by the specified role." (Referencing deliveries that are unknown, or on links no
/// longer attached, is allowed: "The disposition performative MAY refer to deliveries on links
/// that are no longer attached.")
pub static DISPOSITION_ROLE_MISMATCH: Rule = rule(
    "amqp10.disposition.role-mismatch",
    Error,
    "AMQP 1.0 §2.7.6",
    "a disposition's role does not match the direction of any link its sender has on the session",
);

// ---- messages ---------------------------------------------------------------------------

/// AMQP 1.0 messaging §3.2: "The body consists of one of the following three choices: one or
/// more data sections, one or more amqp-sequence sections, or a single amqp-value section."
/// §3.2.6 (data): "A data section contains opaque binary data." Each section is a described
/// value of its restricted type (messaging.xml: `data` restricts `binary`, `amqp-sequence` a
/// list, `properties` a list of typed fields ...); as for a frame, a value that does not follow
/// its type's encoding is malformed. Judged once per delivery in the AMQP message format
/// (message-format 0), on the bytes of it that were seen and kept, never on a delivery begun
/// before missed bytes or resumed from an earlier attachment.
pub static MESSAGE_MALFORMED: Rule = rule(
    "amqp10.message.malformed",
    Error,
    "AMQP 1.0 messaging §3.2",
    "a delivery's bare message does not decode as the sections of the AMQP message format",
);

// ---- anonymous terminus -----------------------------------------------------------------

/// AMQP Anonymous Terminus for Message Routing v1.0 §2: with a null target address, "Messages
/// sent over links into a routing node will be forwarded to the node referenced in the to
/// field of properties"; a message without `to` cannot be routed.
pub static ANONYMOUS_MESSAGE_WITHOUT_TO: Rule = rule(
    "amqp10.anonymous.message-without-to",
    Error,
    "AMQP Anonymous Terminus v1.0 §2",
    "a message on an anonymous (null target address) link has no properties.to",
);

/// AMQP Anonymous Terminus v1.0 §3: "A container acting as a provider of the anonymous terminus
/// MUST indicate this by supplying the relevant capability [ANONYMOUS-RELAY] in offered-capabilities".
/// A peer that attaches an anonymous link to a partner that did not offer it relies on a
/// capability the partner does not claim.
pub static ANONYMOUS_RELAY_NOT_OFFERED: Rule = rule(
    "amqp10.anonymous.relay-not-offered",
    Warning,
    "AMQP Anonymous Terminus v1.0 §3",
    "an anonymous sending link to a partner whose open did not offer ANONYMOUS-RELAY",
);

/// AMQP Anonymous Terminus v1.0 §3: "A container acting as a user of the anonymous terminus
/// MUST indicate this by supplying the relevant capability [ANONYMOUS-RELAY] in
/// desired-capabilities". AMQP 1.0 §2.7.1: "The sender MUST NOT attempt to use any capabilities
/// it did not declare in the desired-capabilities field."
pub static ANONYMOUS_RELAY_NOT_DESIRED: Rule = rule(
    "amqp10.anonymous.relay-not-desired",
    Error,
    "AMQP Anonymous Terminus v1.0 §3",
    "a peer attached an anonymous sending link without ANONYMOUS-RELAY in its open's desired-capabilities",
);

/// Every AMQP 1.0 rule, in the order docs/rules.md lists them.
pub const RULES: &[&Rule] = &[
    &CONNECTION_FIRST_FRAME_NOT_OPEN,
    &CONNECTION_FRAME_AFTER_CLOSE,
    &CONNECTION_CLOSED_WITHOUT_CLOSE,
    &CONNECTION_ILLEGAL_FRAME_FOR_STATE,
    &CONNECTION_FRAME_AFTER_HEADER_MISMATCH,
    &CONNECTION_FRAME_TOO_LARGE,
    &CONNECTION_MAX_FRAME_SIZE_TOO_SMALL,
    &CONNECTION_CHANNEL_MAX_EXCEEDED,
    &CONNECTION_EMPTY_FRAME_CHANNEL,
    &CONNECTION_IDLE_TIMEOUT_EXCEEDED,
    &SASL_UNEXPECTED_FRAME,
    &SASL_MECHANISM_NOT_OFFERED,
    &SASL_HEADER_BEFORE_SUCCESS,
    &SESSION_REMOTE_CHANNEL_ON_LOCAL_BEGIN,
    &SESSION_BEGIN_ON_CHANNEL_IN_USE,
    &SESSION_FRAME_ON_UNMAPPED_CHANNEL,
    &SESSION_INCOMING_WINDOW_EXCEEDED,
    &SESSION_EXCESS_NOT_JUDGED,
    &SESSION_HANDLE_MAX_EXCEEDED,
    &LINK_HANDLE_IN_USE,
    &LINK_UNATTACHED_HANDLE,
    &LINK_NAME_IN_USE,
    &LINK_TRANSFER_WITHOUT_CREDIT,
    &LINK_EXCESS_NOT_JUDGED,
    &LINK_TRANSFER_FROM_RECEIVER,
    &LINK_DRAIN_NOT_HONOURED,
    &LINK_DETACH_NOT_CLOSED,
    &LINK_NEW_DELIVERY_AFTER_INCOMPLETE_UNSETTLED,
    &FLOW_LINK_FIELDS_WITHOUT_HANDLE,
    &FLOW_SENDER_DELIVERY_COUNT_MISSING,
    &FLOW_SENDER_DELIVERY_COUNT_BEHIND,
    &FLOW_RECEIVER_DELIVERY_COUNT_BEFORE_ATTACH,
    &FLOW_RECEIVER_DELIVERY_COUNT_MISSING,
    &FLOW_RECEIVER_DELIVERY_COUNT_AHEAD,
    &FLOW_RECEIVER_DELIVERY_COUNT_BEHIND,
    &FLOW_NEXT_INCOMING_ID_BEFORE_BEGIN,
    &FLOW_NEXT_INCOMING_ID_MISSING,
    &FLOW_NEXT_INCOMING_ID_INCONSISTENT,
    &DELIVERY_FIRST_TRANSFER_INCOMPLETE,
    &DELIVERY_CONTINUATION_MISMATCH,
    &DELIVERY_ID_REUSED,
    &DELIVERY_ID_NOT_INCREASING,
    &DELIVERY_TAG_REUSED,
    &DELIVERY_MORE_WITH_ABORTED,
    &DELIVERY_RESUME_NOT_UNSETTLED,
    &DELIVERY_RCV_SETTLE_MODE_ILLEGAL,
    &DELIVERY_SETTLE_MODE_BROKEN,
    &DISPOSITION_ROLE_MISMATCH,
    &MESSAGE_MALFORMED,
    &ANONYMOUS_MESSAGE_WITHOUT_TO,
    &ANONYMOUS_RELAY_NOT_OFFERED,
    &ANONYMOUS_RELAY_NOT_DESIRED,
];
