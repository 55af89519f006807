//! A reset after a half-close. Once a peer's FIN has been passed on, nothing reads its socket
//! any more, and while the other direction is silent nothing writes to it either: a reset that
//! peer sends next (a client that shuts down its sending side, then aborts) would go unseen,
//! and the other peer would wait on a connection that is gone. [`reset_of`] waits for that
//! socket's error readiness instead, so the relay can pass the reset on at once.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// The error the socket `fd` reports next (a reset, typically), once it has one; pending
/// forever when its errors cannot be watched (the relay then works as without the watch).
///
/// The watch uses a duplicate of the descriptor, registered for error readiness only (the
/// socket's own registration stays with its stream), and closed when the future is dropped.
/// `fd` must stay open while the future runs: the pump that calls it holds the stream's halves.
pub(super) async fn reset_of(fd: RawFd) -> io::Error {
    let Ok(watched) = watch(fd) else {
        return std::future::pending().await;
    };
    loop {
        let Ok(mut ready) = watched.ready(Interest::ERROR).await else {
            return std::future::pending().await;
        };
        // The readiness may be stale or another's (a write that met the error took it).
        if let Ok(Some(e)) = socket2::SockRef::from(watched.get_ref()).take_error() {
            // A socket that has received its peer's FIN records a reset as EPIPE.
            if e.kind() == io::ErrorKind::BrokenPipe {
                return io::ErrorKind::ConnectionReset.into();
            }
            return e;
        }
        ready.clear_ready();
    }
}

/// A duplicate of `fd`, registered with the runtime for error readiness.
fn watch(fd: RawFd) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the caller keeps `fd` open while the returned future runs (see `reset_of`);
    // borrowing it only lasts for the duplication.
    let owned = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
    // SAFETY: the `AsyncFd` owns the duplicate, so it stays open and refers to the same
    // socket for as long as it is registered.
    unsafe { AsyncFd::register_with_interest(owned, Interest::ERROR) }.map_err(|e| e.into_parts().1)
}
