//! What a protocol is told of the stream an undecoded unit was found in, to say where the unit
//! may hold a credential ([`super::Protocol::undecoded_secret`]).

use crate::codec::ProtocolHeader;

/// One direction's stream, as far as the masking of its undecoded bytes goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UndecodedStream {
    /// The last protocol header of this direction (`None`: none seen).
    pub header: Option<ProtocolHeader>,
    /// It is the client's direction.
    pub client: bool,
    /// A `$cbs` link (AMQP 1.0 claims-based security) was attached on the connection: a
    /// transfer may carry a token.
    pub cbs: bool,
}
