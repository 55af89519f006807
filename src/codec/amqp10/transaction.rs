//! Transaction control messages as typed views: `declare` and `discharge`, the amqp-value
//! bodies a controller sends to a coordinator. (`declared` and `transactional-state` are
//! delivery states; `coordinator` is a target.)

use bytes::Bytes;

use super::composite::lookup_descriptor;
use super::fields::FieldList;
use super::value::{Described, Value};
use super::views::code;

/// A transaction control body.
#[derive(Clone, Debug, PartialEq)]
pub enum TxnControl {
    /// `declare` (0x31).
    Declare {
        /// Global transaction id (distributed transactions).
        global_id: Option<Value>,
    },
    /// `discharge` (0x32).
    Discharge {
        /// The transaction.
        txn_id: Bytes,
        /// True to roll back.
        fail: Option<bool>,
    },
}

impl TxnControl {
    /// The typed view of a described value, if it is `declare` or `discharge`.
    pub fn from_described(d: &Described) -> Option<Self> {
        let f = FieldList::of(d);
        match lookup_descriptor(&d.descriptor)?.code {
            code::DECLARE => Some(TxnControl::Declare {
                global_id: f.value(0),
            }),
            code::DISCHARGE => Some(TxnControl::Discharge {
                txn_id: f.binary(0).unwrap_or_default(),
                fail: f.bool(1),
            }),
            _ => None,
        }
    }
}
