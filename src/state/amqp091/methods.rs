//! Static facts about AMQP 0-9-1 methods the tracker needs: which peer may send each one (the
//! spec XML's chassis, widened by RabbitMQ's extensions) and which replies answer which
//! synchronous request.
//!
//! Data and pure functions only; never looks at connection state.

use crate::base::Dir;
use crate::codec::amqp091::{Method, MethodKind};

/// Who may send a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sender {
    /// Only the client (the server's chassis implements it).
    Client,
    /// Only the server.
    Server,
    /// Either peer.
    Either,
}

impl Sender {
    /// Whether a frame travelling `dir` may carry the method.
    #[inline]
    pub fn allows(self, dir: Dir) -> bool {
        matches!(
            (self, dir),
            (Sender::Either, _) | (Sender::Client, Dir::C2S) | (Sender::Server, Dir::S2C)
        )
    }
}

/// Which peer may send `kind`.
#[inline]
pub fn sender(kind: MethodKind) -> Sender {
    use MethodKind::*;
    match kind {
        ConnectionStart
        | ConnectionSecure
        | ConnectionTune
        | ConnectionOpenOk
        | ConnectionBlocked
        | ConnectionUnblocked
        | ConnectionUpdateSecretOk => Sender::Server,
        ConnectionStartOk
        | ConnectionSecureOk
        | ConnectionTuneOk
        | ConnectionOpen
        | ConnectionUpdateSecret => Sender::Client,
        ConnectionClose | ConnectionCloseOk => Sender::Either,
        ChannelOpen => Sender::Client,
        ChannelOpenOk => Sender::Server,
        ChannelFlow | ChannelFlowOk | ChannelClose | ChannelCloseOk => Sender::Either,
        AccessRequest => Sender::Client,
        AccessRequestOk => Sender::Server,
        ExchangeDeclare | ExchangeDelete | ExchangeBind | ExchangeUnbind => Sender::Client,
        ExchangeDeclareOk | ExchangeDeleteOk | ExchangeBindOk | ExchangeUnbindOk => Sender::Server,
        QueueDeclare | QueueBind | QueuePurge | QueueDelete | QueueUnbind => Sender::Client,
        QueueDeclareOk | QueueBindOk | QueuePurgeOk | QueueDeleteOk | QueueUnbindOk => {
            Sender::Server
        }
        BasicQos | BasicConsume | BasicPublish | BasicGet | BasicReject | BasicRecoverAsync
        | BasicRecover => Sender::Client,
        BasicQosOk | BasicConsumeOk | BasicReturn | BasicDeliver | BasicGetOk | BasicGetEmpty
        | BasicRecoverOk => Sender::Server,
        // RabbitMQ: the server cancels consumers (consumer cancel notification) and acks/nacks
        // publishes (publisher confirms); the client answers a server cancel with cancel-ok.
        BasicCancel | BasicCancelOk | BasicAck | BasicNack => Sender::Either,
        TxSelect | TxCommit | TxRollback => Sender::Client,
        TxSelectOk | TxCommitOk | TxRollbackOk => Sender::Server,
        ConfirmSelect => Sender::Client,
        ConfirmSelectOk => Sender::Server,
    }
}

/// Whether `reply` answers the synchronous request `request`.
pub fn answers(request: MethodKind, reply: MethodKind) -> bool {
    use MethodKind::*;
    matches!(
        (request, reply),
        (ChannelFlow, ChannelFlowOk)
            | (AccessRequest, AccessRequestOk)
            | (ExchangeDeclare, ExchangeDeclareOk)
            | (ExchangeDelete, ExchangeDeleteOk)
            | (ExchangeBind, ExchangeBindOk)
            | (ExchangeUnbind, ExchangeUnbindOk)
            | (QueueDeclare, QueueDeclareOk)
            | (QueueBind, QueueBindOk)
            | (QueuePurge, QueuePurgeOk)
            | (QueueDelete, QueueDeleteOk)
            | (QueueUnbind, QueueUnbindOk)
            | (BasicQos, BasicQosOk)
            | (BasicConsume, BasicConsumeOk)
            | (BasicCancel, BasicCancelOk)
            | (BasicGet, BasicGetOk)
            | (BasicGet, BasicGetEmpty)
            | (BasicRecover, BasicRecoverOk)
            | (TxSelect, TxSelectOk)
            | (TxCommit, TxCommitOk)
            | (TxRollback, TxRollbackOk)
            | (ConfirmSelect, ConfirmSelectOk)
    )
}

/// Whether `kind` is a reply to a channel-level synchronous request (checked by [`answers`]).
/// Channel open/close and connection methods have their own state machines.
#[inline]
pub fn is_reply(kind: MethodKind) -> bool {
    use MethodKind::*;
    matches!(
        kind,
        ChannelFlowOk
            | AccessRequestOk
            | ExchangeDeclareOk
            | ExchangeDeleteOk
            | ExchangeBindOk
            | ExchangeUnbindOk
            | QueueDeclareOk
            | QueueBindOk
            | QueuePurgeOk
            | QueueDeleteOk
            | QueueUnbindOk
            | BasicQosOk
            | BasicConsumeOk
            | BasicCancelOk
            | BasicGetOk
            | BasicGetEmpty
            | BasicRecoverOk
            | TxSelectOk
            | TxCommitOk
            | TxRollbackOk
            | ConfirmSelectOk
    )
}

/// Whether `m` is a channel-level request that expects a reply (synchronous and not nowait).
#[inline]
pub fn expects_reply(m: &Method) -> bool {
    use MethodKind::*;
    let kind = m.kind();
    let sync = matches!(
        kind,
        ChannelFlow
            | AccessRequest
            | ExchangeDeclare
            | ExchangeDelete
            | ExchangeBind
            | ExchangeUnbind
            | QueueDeclare
            | QueueBind
            | QueuePurge
            | QueueDelete
            | QueueUnbind
            | BasicQos
            | BasicConsume
            | BasicCancel
            | BasicGet
            | BasicRecover
            | TxSelect
            | TxCommit
            | TxRollback
            | ConfirmSelect
    );
    sync && !m.nowait().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::amqp091::METHODS;

    #[test]
    fn every_reply_answers_some_request_and_every_request_has_a_reply() {
        for d in METHODS.iter() {
            let m = Method::with_defaults(d.kind);
            if is_reply(d.kind) {
                assert!(
                    METHODS.iter().any(|r| answers(r.kind, d.kind)),
                    "{} answers nothing",
                    d.name
                );
            }
            if expects_reply(&m) {
                assert!(
                    METHODS.iter().any(|r| answers(d.kind, r.kind)),
                    "{} has no reply",
                    d.name
                );
                assert!(d.synchronous, "{} is not synchronous in the spec", d.name);
            }
        }
    }

    #[test]
    fn the_client_sends_requests_the_server_sends_deliveries() {
        assert!(sender(MethodKind::BasicPublish).allows(Dir::C2S));
        assert!(!sender(MethodKind::BasicPublish).allows(Dir::S2C));
        assert!(!sender(MethodKind::BasicDeliver).allows(Dir::C2S));
        assert!(sender(MethodKind::BasicAck).allows(Dir::S2C));
    }
}
