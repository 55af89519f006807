//! The diagnosis catalog: every kind of diagnosis amqpeek can make, with a stable id, its
//! scope, what the frames show, the spec section or broker document it rests on (quoted), the
//! likely cause, what to do, and its default threshold (`--diagnosis-threshold ID=N` and the
//! `[diagnosis-threshold]` table of `amqpeek.toml` change it).
//!
//! Ids are a public interface (`--fail-on-diagnosis` names them): never rename one.

pub use crate::base::Check;
use crate::base::{Limit, ScopeKind};

/// Seconds as a [`Limit::After`].
const fn secs(s: i64) -> Limit {
    Limit::After(s * 1_000_000)
}

/// A receiver attached and never granted credit.
pub static NO_CREDIT: Check = Check {
    id: "amqp10.link.no-credit",
    scope: ScopeKind::Link,
    summary: "the link is attached, and its receiver never granted link-credit",
    basis: "AMQP 1.0 §2.6.7: \"If the link-credit is less than or equal to zero, i.e., the \
            delivery-count is the same as or greater than the delivery-limit, a sender MUST NOT \
            send more messages.\"",
    cause: "the receiving application attached but never asked for messages (no receive, \
            prefetch 0, a paused consumer), or it waits for something else first",
    todo: "grant credit: start receiving, or set the client's prefetch / credit above 0",
    default: secs(30),
};

/// Credit used up and not renewed while the sender has messages.
pub static CREDIT_EXHAUSTED: Check = Check {
    id: "amqp10.link.credit-exhausted",
    scope: ScopeKind::Link,
    summary: "the sender used up its link-credit while it has messages, and the receiver did not renew it",
    basis: "AMQP 1.0 §2.6.7: \"If the link-credit is less than or equal to zero, i.e., the \
            delivery-count is the same as or greater than the delivery-limit, a sender MUST NOT \
            send more messages.\" \"The available variable is controlled by the sender, and \
            indicates to the receiver, that the sender could make use of the indicated amount of \
            link-credit.\"",
    cause: "the receiver stopped granting credit: it is slow, blocked, or renews credit only \
            after settling deliveries it still holds",
    todo: "make the receiver settle what it holds and renew credit (a larger prefetch, a \
           credit top-up policy)",
    default: secs(30),
};

/// A session's incoming window used up and not reopened.
pub static SESSION_WINDOW: Check = Check {
    id: "amqp10.session.window-exhausted",
    scope: ScopeKind::Session,
    summary: "a session's incoming-window is used up while a link of the session could still \
              send (credit left, or messages available), and the receiving end did not reopen it",
    basis: "AMQP 1.0 §2.5.6: \"The remote-incoming-window reflects the maximum number of \
            outgoing transfers that can be sent without exceeding the remote endpoint's \
            incoming-window.\"",
    cause: "the receiving end does not send session flow frames as it processes transfers (a \
            fixed window, such as 65,535 transfers, that is never advanced)",
    todo: "make the receiving end advance its incoming-window (a client or broker upgrade; a \
           larger window only postpones it)",
    default: secs(30),
};

/// The sender stays idle after a receiver flow without delivery-count.
pub static SENDER_IDLE_NO_COUNT: Check = Check {
    id: "amqp10.link.sender-idle-after-flow-without-count",
    scope: ScopeKind::Link,
    summary: "the receiver granted credit in a flow without delivery-count, and the sender, \
              waiting for credit, sent nothing since",
    basis: "AMQP 1.0 §2.6.7: \"link-creditsnd := delivery-countrcv + link-creditrcv - \
            delivery-countsnd.\" \"In the event that the receiver does not yet know the \
            delivery-count, i.e., delivery-countrcv is unspecified, the sender MUST assume \
            that\" it is the sender's initial-delivery-count: a sender that already sent \
            deliveries computes no credit from such a flow",
    cause: "the receiver's link flow carries no delivery-count (RabbitMQ 3.10 does this), so \
            the sender computes its credit against its initial-delivery-count and finds none",
    todo: "upgrade the receiving peer so its flow frames carry delivery-count, or re-attach \
           the link",
    default: secs(30),
};

/// A drain request the sender never answered.
pub static DRAIN_UNANSWERED: Check = Check {
    id: "amqp10.link.drain-unanswered",
    scope: ScopeKind::Link,
    summary: "the receiver asked the sender to drain, and the sender never answered with its flow state",
    basis: "AMQP 1.0 §2.6.7: \"The drain flag indicates how the sender SHOULD behave when \
            insufficient messages are available to consume the current link-credit. If set, the \
            sender will (after sending all available messages) advance the delivery-count as \
            much as possible, consuming all link-credit, and send the flow state to the \
            receiver.\"",
    cause: "the sender does not implement drain, so the receiver's drain (a receive with a \
            time-out, a pause) waits forever",
    todo: "avoid drain with this sender (plain credit instead), or upgrade the sending peer",
    default: secs(30),
};

/// Deliveries unsettled too long (AMQP 1.0).
pub static UNSETTLED: Check = Check {
    id: "amqp10.link.unsettled",
    scope: ScopeKind::Link,
    summary: "a delivery on the link waits for its settlement longer than the threshold",
    basis: "AMQP 1.0 §2.6.12: a delivery stays unsettled at the sender until a disposition \
            settles it; the link's unsettled map holds it meanwhile",
    cause: "the receiving application holds messages without accepting, rejecting or \
            releasing them (a slow or stuck handler, a forgotten complete/accept)",
    todo: "settle each message when done with it; look at the receiving handler for the \
           delivery named as evidence",
    default: secs(60),
};

/// Deliveries unacked too long (AMQP 0-9-1).
pub static UNACKED: Check = Check {
    id: "amqp091.channel.unacked",
    scope: ScopeKind::Channel,
    summary: "a delivery on the channel waits for its ack longer than the threshold",
    basis: "RabbitMQ, Consumer Acknowledgements: a delivery not acknowledged within the \
            consumer timeout (30 minutes by default) closes the channel with \"PRECONDITION_FAILED \
            - delivery acknowledgement on channel 1 timed out\"",
    cause: "the consumer holds a delivery without basic.ack, basic.nack or basic.reject (a \
            slow or stuck handler, a forgotten ack)",
    todo: "ack each delivery when done with it; the broker closes the channel at its \
           consumer timeout",
    default: secs(60),
};

/// A full prefetch window never acked.
pub static PREFETCH_FULL: Check = Check {
    id: "amqp091.consumer.prefetch-full",
    scope: ScopeKind::Consumer,
    summary: "the consumer holds as many unacked deliveries as its basic.qos prefetch-count \
              allows, so the broker sends it nothing more",
    basis: "RabbitMQ, Consumer Prefetch: with global false, prefetch_count is \"applied \
            separately to each new consumer on the channel\"; with global true it is \"shared \
            across all consumers on the channel\". AMQP 0-9-1 basic.qos: \"Specifies a prefetch \
            window in terms of whole messages.\"",
    cause: "the consumer does not ack (manual ack mode and a missing ack, or a stuck handler)",
    todo: "ack deliveries as they are done; raise the prefetch only if handling is slow, not stuck",
    default: secs(30),
};

/// Publishes awaiting confirms too long.
pub static UNCONFIRMED: Check = Check {
    id: "amqp091.channel.unconfirmed",
    scope: ScopeKind::Channel,
    summary: "a publish on a channel in confirm mode waits for its confirm longer than the threshold",
    basis: "RabbitMQ, Publisher Confirms: after confirm.select the broker acknowledges each \
            publish with basic.ack (or basic.nack), counting from 1 on the first basic.publish",
    cause: "the broker cannot take the message yet (a blocked connection, a queue at its \
            length limit with reject-publish, a quorum queue without quorum)",
    todo: "look at the broker's alarms and the target queue; publishes are not safe until confirmed",
    default: secs(30),
};

/// The broker blocked the connection.
pub static BLOCKED: Check = Check {
    id: "amqp091.connection.blocked",
    scope: ScopeKind::Connection,
    summary: "the broker blocked the connection (connection.blocked): publishes are not read",
    basis: "RabbitMQ, Blocked Connection Notifications: \"A connection.blocked notification is \
            sent to publishing connections the first time RabbitMQ is low on a resource.\" \"A \
            connection.unblocked is sent when all resource alarms have cleared and the \
            connection is fully unblocked.\"",
    cause: "a memory or disk alarm on the broker (the reason in the frame says which)",
    todo: "free memory or disk on the broker, or consume faster; publishing resumes at connection.unblocked",
    default: Limit::After(0),
};

/// A 0-9-1 peer silent for two heartbeat intervals.
pub static HEARTBEAT_MISSED: Check = Check {
    id: "amqp091.connection.heartbeat-missed",
    scope: ScopeKind::Connection,
    summary: "a peer sent nothing for two negotiated heartbeat intervals",
    basis: "AMQP 0-9-1 §4.2.7: \"If a peer detects no incoming traffic (i.e. received octets) \
            for two heartbeat intervals or longer, it should close the connection\"",
    cause: "the peer's heartbeat thread is blocked or the peer stalled (a long GC pause, a \
            blocked event loop), or the network drops packets",
    todo: "unblock the peer's I/O thread; the other peer closes the connection at two intervals",
    default: Limit::Negotiated,
};

/// A 1.0 peer silent past its partner's idle-time-out.
pub static IDLE_TIMEOUT: Check = Check {
    id: "amqp10.connection.idle-timeout",
    scope: ScopeKind::Connection,
    summary: "a peer sent nothing for longer than the idle-time-out its partner asked for",
    basis: "AMQP 1.0 §2.4.5: \"Each peer has its own (independent) idle timeout. At connection \
            open each peer communicates the maximum period between activity (frames) on the \
            connection that it desires from its partner.\"",
    cause: "the peer stopped sending empty frames (a blocked I/O thread, a stalled process), \
            or the network drops packets",
    todo: "unblock the silent peer; its partner may close the connection with \
           amqp:resource-limit-exceeded",
    default: Limit::Negotiated,
};

/// A link detached with an error and not re-attached.
pub static DETACHED: Check = Check {
    id: "amqp10.link.detached-error",
    scope: ScopeKind::Link,
    summary: "a link was detached with an error and not re-attached",
    basis: "AMQP 1.0 §2.6.5: \"When an error occurs at a link endpoint, the endpoint MUST be \
            detached with appropriate error information supplied in the error field of the\" \
            detach",
    cause: "the peer dropped the link (an idle link detached by the broker, a deleted node, \
            an authorization failure); the error in the detach says which",
    todo: "re-attach the link (a client with link recovery does it), after fixing what the error names",
    default: secs(30),
};

/// A consumer cancelled by the broker and not re-consumed.
pub static CANCELLED: Check = Check {
    id: "amqp091.consumer.cancelled",
    scope: ScopeKind::Consumer,
    summary: "the broker cancelled a consumer (basic.cancel, or a channel.close with an error) \
              and nothing consumes from its queue again",
    basis: "RabbitMQ, Consumer Cancel Notification: \"the broker will send basic.cancel to the \
            client when a queue is deleted\"; AMQP 0-9-1 channel.close: the server closes a \
            channel on an error, and its consumers with it",
    cause: "the queue was deleted or its node failed over, or the channel was closed on an \
            error (a delivery acknowledgement timeout, a bad ack)",
    todo: "consume again (a client with consumer recovery does it), after fixing the error",
    default: secs(30),
};

/// A CBS token about to expire, not refreshed.
pub static TOKEN_EXPIRING: Check = Check {
    id: "amqp10.cbs.token-expiring",
    scope: ScopeKind::Connection,
    summary: "a CBS put-token's expiration is near, and no put-token refreshed it",
    basis: "AMQP Claims-based Security 1.0 (draft), put-token: the request carries the \
            token's \"expiration\" as an application-property; Azure Service Bus, AMQP \
            claims-based authorization: a client must refresh the token before it expires, or \
            the links it authorizes are detached",
    cause: "the client's token refresh did not run (a stopped timer, a credential that cannot \
            be renewed)",
    todo: "refresh the token before it expires (put-token again for the same name)",
    default: Limit::Before(60_000_000),
};

/// A message redelivered over and over.
pub static REDELIVERED: Check = Check {
    id: "amqp.delivery.redelivery-loop",
    scope: ScopeKind::Link,
    summary: "one message is delivered again and again (AMQP 1.0 header delivery-count, AMQP \
              0-9-1 redelivered of the same message-id)",
    basis: "AMQP 1.0 §3.2.1 header, delivery-count: \"the number of unsuccessful previous \
            delivery attempts\"; AMQP 0-9-1 basic.deliver redelivered: \"This indicates that \
            the message has been previously delivered to this or another client.\"",
    cause: "a poison message: the consumer fails on it and rejects or releases it (or dies \
            holding it), and the broker requeues it",
    todo: "dead-letter it after a few attempts (a delivery limit on the queue), and fix the \
           handler for that message",
    default: Limit::Count(5),
};

/// Every check, in report order.
pub static CHECKS: &[&Check] = &[
    &NO_CREDIT,
    &CREDIT_EXHAUSTED,
    &SESSION_WINDOW,
    &SENDER_IDLE_NO_COUNT,
    &DRAIN_UNANSWERED,
    &UNSETTLED,
    &UNACKED,
    &PREFETCH_FULL,
    &UNCONFIRMED,
    &BLOCKED,
    &HEARTBEAT_MISSED,
    &IDLE_TIMEOUT,
    &DETACHED,
    &CANCELLED,
    &TOKEN_EXPIRING,
    &REDELIVERED,
];

/// The check with id `id`.
pub fn check(id: &str) -> Option<&'static Check> {
    CHECKS.iter().copied().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::CHECKS;

    /// docs/diagnoses.md has a row and a section for every check, with its scope and summary.
    #[test]
    fn docs_list_every_diagnosis() {
        let page = include_str!("../../../docs/diagnoses.md");
        for c in CHECKS {
            let row = format!("| `{}` | {} |", c.id, c.scope.as_str());
            assert!(
                page.contains(&row),
                "docs/diagnoses.md lacks a row starting {row:?}"
            );
            assert!(
                page.contains(&format!("### `{}`", c.id)),
                "docs/diagnoses.md lacks a section for {}",
                c.id
            );
            assert!(
                page.contains(c.summary),
                "docs/diagnoses.md: {}'s summary",
                c.id
            );
        }
    }
}
