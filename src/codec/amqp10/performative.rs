//! The nine performatives as one enum, for the state trackers. The views themselves (spec-named
//! fields, the spec's defaults applied) are generated into `views.rs` from the spec.
//!
//! Built from a composite already checked against its table, so construction cannot fail.

use bytes::Bytes;

use super::composite::{Composite, CompositeDef};
use super::fields::FieldList;
pub use super::views::{
    Attach, Begin, Close, Detach, Disposition, End, Flow, Open, ReceiverSettleMode, Role,
    SenderSettleMode, Transfer,
};

/// One of the nine performatives.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Performative {
    Open(Box<Open>),
    Begin(Box<Begin>),
    Attach(Box<Attach>),
    Flow(Box<Flow>),
    Transfer(Box<Transfer>),
    Disposition(Box<Disposition>),
    Detach(Box<Detach>),
    End(Box<End>),
    Close(Box<Close>),
}

impl Performative {
    /// The typed view of a checked composite; `None` when it is not a performative.
    /// `raw` is the frame `c` was decoded from.
    pub fn from_composite(c: &Composite, raw: &Bytes) -> Option<Self> {
        c.with_field_list(raw, |f| Self::from_fields(c.def, f))
    }

    /// The typed view of the checked fields `f` of a composite of `def`; `None` when it is not
    /// a performative.
    #[inline]
    pub fn from_fields(def: &CompositeDef, f: &FieldList<'_>) -> Option<Self> {
        let is = |d| std::ptr::eq(def, d);
        // The most frequent first (a transfer, then what settles and credits it).
        Some(if is(Transfer::DEF) {
            Performative::Transfer(boxed(|| Transfer::from_fields(f)))
        } else if is(Disposition::DEF) {
            Performative::Disposition(boxed(|| Disposition::from_fields(f)))
        } else if is(Flow::DEF) {
            Performative::Flow(boxed(|| Flow::from_fields(f)))
        } else if is(Open::DEF) {
            Performative::Open(boxed(|| Open::from_fields(f)))
        } else if is(Begin::DEF) {
            Performative::Begin(boxed(|| Begin::from_fields(f)))
        } else if is(Attach::DEF) {
            Performative::Attach(boxed(|| Attach::from_fields(f)))
        } else if is(Detach::DEF) {
            Performative::Detach(boxed(|| Detach::from_fields(f)))
        } else if is(End::DEF) {
            Performative::End(boxed(|| End::from_fields(f)))
        } else if is(Close::DEF) {
            Performative::Close(boxed(|| Close::from_fields(f)))
        } else {
            return None;
        })
    }

    /// Every performative's spec name, in the spec's order.
    pub const NAMES: [&'static str; 9] = [
        Open::DEF.name,
        Begin::DEF.name,
        Attach::DEF.name,
        Flow::DEF.name,
        Transfer::DEF.name,
        Disposition::DEF.name,
        Detach::DEF.name,
        End::DEF.name,
        Close::DEF.name,
    ];

    /// The spec name (`open` ... `close`).
    pub fn name(&self) -> &'static str {
        match self {
            Performative::Open(_) => Open::DEF.name,
            Performative::Begin(_) => Begin::DEF.name,
            Performative::Attach(_) => Attach::DEF.name,
            Performative::Flow(_) => Flow::DEF.name,
            Performative::Transfer(_) => Transfer::DEF.name,
            Performative::Disposition(_) => Disposition::DEF.name,
            Performative::Detach(_) => Detach::DEF.name,
            Performative::End(_) => End::DEF.name,
            Performative::Close(_) => Close::DEF.name,
        }
    }
}

/// The view `make` makes, in a box allocated before it is made: a view is up to a few hundred
/// bytes, which `Box::new` of a view made first keeps across the allocation and copies more.
#[inline(always)]
fn boxed<T>(make: impl FnOnce() -> T) -> Box<T> {
    Box::write(Box::new_uninit(), make())
}
