//! Giving memory back when a thread goes idle. The allocator (mimalloc) keeps the pages a
//! thread freed, and the blocks other threads freed into them, until that thread allocates
//! again; a relay or inspection thread that goes idle after a burst would hold them for good.
//! Each thread, when it parks, asks the allocator to collect them, at most once a second, so a
//! busy thread that parks between reads pays nothing.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Least time between two collections on one thread.
const EVERY: Duration = Duration::from_secs(1);

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The calling thread is about to park: collect its free pages if it has not done so lately.
pub fn on_idle() {
    let now = Instant::now();
    let due = LAST.with(|last| {
        let due = last.get().is_none_or(|t| now.duration_since(t) >= EVERY);
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any
        // time; with `force = false` it only frees what the thread's heap no longer uses.
        unsafe { libmimalloc_sys::mi_collect(true) };
    }
}
