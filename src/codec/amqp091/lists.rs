//! The value lists a decoded frame holds: a method's arguments ([`Args`]) and a content
//! header's properties ([`Properties`]).
//!
//! Both keep the usual few values inline, so a method or content header is one allocation
//! (its `Arc`) rather than two, and both dereference to slices, so they read like the `Vec`s
//! they stand for. Dropping one runs no destructor for values that hold nothing on the heap
//! (bits and integers, most of every list).

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use smallvec::SmallVec;

use super::field_table::FieldTable;
use super::method::Value;
use super::table::ArgDef;

/// Arguments held inline: basic.publish, basic.deliver, basic.get-ok and basic.ack (the
/// methods most frames carry) have at most this many.
const INLINE_ARGS: usize = 5;

/// Properties held inline: a content type, a delivery mode, a message id and a timestamp.
const INLINE_PROPERTIES: usize = 4;

/// Releases what `v` holds on the heap, leaving it owning nothing (an empty string or
/// table in place of a full one). Every variant is named: one added that holds something on
/// the heap must be released here, or the lists (which forget their values) would leak it.
#[inline(always)]
fn release(v: &mut Value) {
    match v {
        Value::ShortStr(b) | Value::LongStr(b) => drop(std::mem::take(b)),
        Value::Table(t) => drop(std::mem::replace(t, FieldTable::new())),
        Value::Bit(_)
        | Value::Octet(_)
        | Value::Short(_)
        | Value::Long(_)
        | Value::LongLong(_)
        | Value::Timestamp(_) => {}
    }
}

/// Lets go of `list`'s values, running a destructor only for what some value holds on the
/// heap; `list` is left as it is, for its owner to forget. The values of an inline list, once
/// released, own nothing, so forgetting them leaks nothing; a list that spilled to the heap
/// is taken out and dropped as usual (leaving an empty one, which owns nothing either).
#[inline(always)]
fn release_all<A: smallvec::Array>(
    list: &mut SmallVec<A>,
    value: impl Fn(&mut A::Item) -> &mut Value,
) {
    if list.spilled() {
        drop(std::mem::take(list));
        return;
    }
    list.iter_mut().for_each(|x| release(value(x)));
}

/// A method's argument values, in wire order (one per argument of its definition).
#[derive(Clone, Default, PartialEq)]
pub struct Args(ManuallyDrop<SmallVec<[Value; INLINE_ARGS]>>);

impl Args {
    /// An empty list.
    pub fn new() -> Args {
        Args(ManuallyDrop::new(SmallVec::new()))
    }

    /// Appends `v`.
    #[inline]
    pub fn push(&mut self, v: Value) {
        self.0.push(v);
    }

    /// Sets the list to `values`: a list built whole, without a push per value. An empty
    /// inline list (a new one) takes them straight into its inline room.
    #[inline(always)]
    pub(super) fn set_inline<const N: usize>(&mut self, values: [Value; N]) {
        const { assert!(N <= INLINE_ARGS) };
        if !self.0.is_empty() || self.0.spilled() {
            *self = values.into_iter().collect();
            return;
        }
        // SAFETY: the list is inline and empty: its room holds `INLINE_ARGS` values, at least
        // `N`, none of them live (nothing is overwritten that would need dropping), and
        // `[Value; N]` has the alignment of `Value` and the layout of `N` of them in a row.
        // The first `N` values are written before the length says so.
        unsafe {
            self.0.as_mut_ptr().cast::<[Value; N]>().write(values);
            self.0.set_len(N);
        }
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        release_all(&mut self.0, |v| v);
        std::mem::forget(std::mem::take(&mut *self.0));
    }
}

impl Drop for Args {
    fn drop(&mut self) {
        // The list is never dropped itself: what remains of it owns nothing.
        release_all(&mut self.0, |v| v);
    }
}

impl Deref for Args {
    type Target = [Value];
    #[inline]
    fn deref(&self) -> &[Value] {
        &self.0
    }
}

impl DerefMut for Args {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Value] {
        &mut self.0
    }
}

impl fmt::Debug for Args {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<Value> for Args {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Args {
        Args(ManuallyDrop::new(iter.into_iter().collect()))
    }
}

impl From<Vec<Value>> for Args {
    fn from(v: Vec<Value>) -> Args {
        v.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a Args {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A content header's present properties with their definitions, in property-flag order.
#[derive(Clone, Default, PartialEq)]
pub struct Properties(ManuallyDrop<SmallVec<[(&'static ArgDef, Value); INLINE_PROPERTIES]>>);

impl Properties {
    /// An empty list.
    pub fn new() -> Properties {
        Properties(ManuallyDrop::new(SmallVec::new()))
    }

    /// Appends property `d` of value `v`.
    #[inline]
    pub fn push(&mut self, d: &'static ArgDef, v: Value) {
        self.0.push((d, v));
    }

    /// Sets the list to `props`: a list built whole, without a push per property. An empty
    /// inline list (a new one) takes them straight into its inline room.
    #[inline(always)]
    pub(super) fn set_inline<const N: usize>(&mut self, props: [(&'static ArgDef, Value); N]) {
        const { assert!(N <= INLINE_PROPERTIES) };
        if !self.0.is_empty() || self.0.spilled() {
            *self = props.into_iter().collect();
            return;
        }
        // SAFETY: as in `Args::set_inline`: an empty inline list has room for
        // `INLINE_PROPERTIES` properties, at least `N`, none live; the array has their layout.
        unsafe {
            self.0
                .as_mut_ptr()
                .cast::<[(&'static ArgDef, Value); N]>()
                .write(props);
            self.0.set_len(N);
        }
    }

    /// Inserts property `d` of value `v` at `at` (at most the length).
    pub fn insert(&mut self, at: usize, d: &'static ArgDef, v: Value) {
        let at = at.min(self.0.len());
        self.0.insert(at, (d, v));
    }

    /// Keeps only the properties `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&(&'static ArgDef, Value)) -> bool) {
        self.0.retain(|p| keep(p));
    }

    /// Removes every property.
    pub fn clear(&mut self) {
        release_all(&mut self.0, |(_, v)| v);
        std::mem::forget(std::mem::take(&mut *self.0));
    }
}

impl Drop for Properties {
    fn drop(&mut self) {
        // The list is never dropped itself: what remains of it owns nothing.
        release_all(&mut self.0, |(_, v)| v);
    }
}

impl Deref for Properties {
    type Target = [(&'static ArgDef, Value)];
    #[inline]
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Properties {
    #[inline]
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<(&'static ArgDef, Value)> for Properties {
    fn from_iter<I: IntoIterator<Item = (&'static ArgDef, Value)>>(iter: I) -> Properties {
        Properties(ManuallyDrop::new(iter.into_iter().collect()))
    }
}

impl<'a> IntoIterator for &'a Properties {
    type Item = &'a (&'static ArgDef, Value);
    type IntoIter = std::slice::Iter<'a, (&'static ArgDef, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::super::field_table::FieldValue;
    use super::*;

    #[test]
    fn lists_hold_values_inline_and_beyond() {
        let values = |n: usize| {
            (0..n).map(|i| match i % 4 {
                0 => Value::Bit(true),
                1 => Value::ShortStr(Bytes::from(vec![b'x'; i])),
                2 => Value::Table(FieldTable::new()),
                _ => Value::LongLong(i as u64),
            })
        };
        for n in [0, 1, INLINE_ARGS, INLINE_ARGS + 3] {
            let args: Args = values(n).collect();
            let vec: Vec<Value> = values(n).collect();
            assert_eq!(&args[..], &vec[..]);
            assert_eq!(format!("{args:?}"), format!("{vec:?}"));
            let mut copy = args.clone();
            assert_eq!(copy, args);
            copy.clear();
            assert!(copy.is_empty());
        }
    }

    #[test]
    fn dropping_or_clearing_a_list_lets_go_of_every_string_and_table() {
        let shared = Bytes::from(vec![b's'; 64]);
        let values = |n: usize| {
            (0..n).map(|i| match i % 3 {
                0 => Value::ShortStr(shared.clone()),
                1 => Value::Table(FieldTable(vec![(shared.clone(), FieldValue::Bool(true))])),
                _ => Value::LongStr(shared.clone()),
            })
        };
        let basic = super::super::generated::CLASSES
            .iter()
            .find(|c| c.name == "basic");
        let def = basic.expect("basic has properties").properties;
        for n in [1, INLINE_ARGS, INLINE_ARGS + 3] {
            drop(values(n).collect::<Args>());
            let mut cleared: Args = values(n).collect();
            cleared.clear();
            let props: Properties = values(n.min(def.len()))
                .enumerate()
                .map(|(i, v)| (&def[i], v))
                .collect();
            drop(props);
            assert!(shared.is_unique(), "{n} values: a string or table was kept");
        }
    }

    #[test]
    fn lists_set_whole_hold_those_values_whatever_they_held_before() {
        let shared = Bytes::from(vec![b's'; 64]);
        let basic = super::super::generated::CLASSES
            .iter()
            .find(|c| c.name == "basic");
        let def = basic.expect("basic has properties").properties;
        for before in [0, 2, INLINE_ARGS + 2] {
            let mut args: Args = (0..before)
                .map(|_| Value::ShortStr(shared.clone()))
                .collect();
            args.set_inline([Value::Short(7), Value::ShortStr(shared.clone())]);
            assert_eq!(
                &args[..],
                &[Value::Short(7), Value::ShortStr(shared.clone())][..]
            );
            args.set_inline([Value::Bit(true)]);
            assert_eq!(&args[..], &[Value::Bit(true)][..]);
            let mut props: Properties = (0..before)
                .map(|i| (&def[i % def.len()], Value::LongStr(shared.clone())))
                .collect();
            props.set_inline([(&def[0], Value::ShortStr(shared.clone()))]);
            assert_eq!(props.len(), 1);
            assert_eq!(props[0].1, Value::ShortStr(shared.clone()));
            drop((args, props));
            assert!(shared.is_unique(), "{before} before: a string was kept");
        }
    }
}
