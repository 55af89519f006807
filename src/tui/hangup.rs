//! A terminal that hung up: its window closed, its tmux server killed, its SSH session
//! dropped. crossterm's reader never returns from such a terminal: its read gets end-of-file
//! or `EIO`, which it neither reports nor waits on, so a UI inside `crossterm::event::poll`
//! would spin there at full CPU and never see the SIGHUP that came with the hangup. The event
//! loop therefore waits for input with [`wait_input`] on the same terminal, which says when it
//! has hung up, and asks crossterm only for what is ready.

use std::time::Duration;

/// What waiting for input on the terminal found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Input {
    /// Input may be there (or the wait could not be made): ask crossterm.
    Ready,
    /// Nothing came within the wait.
    None,
    /// The terminal hung up: nothing will come, and reading it would never return.
    HungUp,
}

/// Wait up to `wait` for input on the terminal crossterm reads ([`super::terminal::tty_fd`]).
pub(super) fn wait_input(wait: Duration) -> Input {
    let Some(fd) = super::terminal::tty_fd() else {
        return Input::Ready;
    };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, and its count.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    match n {
        0 => Input::None,
        n if n < 0 => Input::Ready,
        _ if pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 => Input::HungUp,
        _ => Input::Ready,
    }
}
