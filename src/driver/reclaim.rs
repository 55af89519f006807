//! Giving memory back when the proxy goes idle.
//!
//! The allocator (mimalloc) keeps the pages a thread freed, and the blocks *other* threads
//! freed into that thread's pages, until the owning thread allocates or collects again. The
//! relay reads chunks on the runtime's threads and the inspection workers free them, so after
//! a burst the freed chunks sit in pages of runtime threads that may never run again (idle
//! proxy: they stay parked). Three things give that memory back:
//!
//! - every runtime thread collects when it parks ([`on_idle`]), at most once a second, so a busy
//!   thread that parks between reads pays nothing;
//! - an inspection worker about to wait for a long time collects whatever the rate
//!   ([`before_long_wait`]): it has just freed the chunks of what it inspected last;
//! - it then asks for a sweep, and [`sweeper`], a task on the runtime, has every runtime thread
//!   collect once more, now that the chunks freed into their pages are in.
//!
//! And what the allocator gives back must stay given back: see
//! [`disable_transparent_huge_pages`].

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Least time between two collections on one thread when it parks.
const EVERY: Duration = Duration::from_secs(1);
/// How long a sweep waits after being asked, so that workers going idle together (and the
/// frees they make on the way) are met by one sweep.
const SETTLE: Duration = Duration::from_millis(100);
/// How long a sweep's task holds its runtime thread waiting for the others to take theirs: a
/// held thread cannot take a second one, so each thread collects. Only an idle proxy sweeps.
const HOLD: Duration = Duration::from_millis(10);

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Asks for a sweep; at most one is pending however often it is asked.
static SWEEP: Notify = Notify::const_new();

/// Keep the kernel from backing this process's memory with transparent huge pages (Linux's
/// `PR_SET_THP_DISABLE`, inherited by children). The allocator asks for them, and the kernel's
/// khugepaged folds any 2 MiB range with a page still in use back into one resident huge page
/// (by default it does so while up to 511 of its 512 pages are free), so memory given back after
/// a burst comes back resident, at a time that varies from run to run. Measured with
/// `cargo run --example memory_rss -- target/debug/amqpeek frames`: without this, 25 MiB
/// before and 32 to 56 MiB after close; with it, 16 MiB before and 18 MiB after. Call it first
/// thing in `main`.
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes no pointers and changes only how
    // the kernel backs this process's pages; an error (an old kernel) leaves it as it was.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Collect the calling thread's free pages and purge what the process no longer uses.
fn collect_now() {
    LAST.with(|last| last.set(Some(Instant::now())));
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time; it
    // frees only what the thread's heap no longer uses.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// The calling thread is about to park: collect its free pages if it has not done so lately.
pub fn on_idle() {
    let now = Instant::now();
    let due = LAST.with(|last| last.get().is_none_or(|t| now.duration_since(t) >= EVERY));
    if due {
        collect_now();
    }
}

/// An inspection worker is about to wait for its next message for a long time: collect now,
/// and have the runtime's threads collect too (see the module doc).
pub fn before_long_wait() {
    collect_now();
    SWEEP.notify_one();
}

/// Sweep the runtime's threads each time [`before_long_wait`] asks; runs until aborted.
pub async fn sweeper() {
    loop {
        SWEEP.notified().await;
        tokio::time::sleep(SETTLE).await;
        sweep_workers().await;
    }
}

/// Have every runtime thread collect: one task per thread, each held (briefly) until all have
/// started, so that no thread runs two of them while another runs none.
async fn sweep_workers() {
    let threads = tokio::runtime::Handle::current().metrics().num_workers();
    let started = Arc::new((Mutex::new(0usize), Condvar::new()));
    let tasks: Vec<_> = (0..threads)
        .map(|_| {
            let started = started.clone();
            tokio::spawn(async move {
                collect_now();
                let (count, all_in) = &*started;
                let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
                *n += 1;
                all_in.notify_all();
                let deadline = Instant::now() + HOLD;
                while *n < threads {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    n = all_in
                        .wait_timeout(n, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}
