//! The hash maps of the per-frame paths (state trackers, message assembly, connection tables).
//!
//! std's default SipHash costs more than the rest of a small frame's state tracking; foldhash is
//! several times faster and still seeded per process, so a peer cannot precompute colliding
//! delivery-ids or handles offline. Use `HashMap::default()` to construct.

/// A `HashMap` with a fast, per-process seeded hasher.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` with a fast, per-process seeded hasher.
pub type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
