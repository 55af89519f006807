//! How many tracked entries (links, deliveries, waiting detaches) the per-frame lookups of
//! the current thread examined: the tests hold every lookup to its key with it (a scan of all
//! links or deliveries shows as a count that grows with them, where a keyed lookup examines
//! the entries it finds). Counts only in the crate's own tests; elsewhere it compiles to
//! nothing.

#[cfg(test)]
thread_local! {
    static VISITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// `n` tracked entries were examined.
#[inline(always)]
pub(crate) fn visit(n: usize) {
    #[cfg(test)]
    VISITS.with(|v| v.set(v.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

/// The entries examined on this thread since the last call.
#[cfg(test)]
pub(crate) fn take() -> u64 {
    VISITS.with(|v| v.replace(0))
}
