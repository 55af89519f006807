//! The terminal while the UI owns it: raw mode, the alternate screen and mouse capture on
//! entry, and all three given back on every way out.
//!
//! - a normal return or an error: [`TerminalGuard`] is dropped (also while unwinding);
//! - a panic on the UI thread or the main thread: the panic hook restores the terminal before
//!   the default hook prints, so the message lands on the normal screen;
//! - SIGINT, SIGTERM, SIGHUP: a flag the event loop reads ([`quit_signalled`]): the UI quits as
//!   on `q`, so captures are flushed and closed as usual; a second such signal exits at once;
//! - an abort (SIGABRT: `abort()`, a stack overflow, `kill -ABRT`): a signal handler that only
//!   makes async-signal-safe calls (`tcsetattr`, `write`) puts back the terminal settings saved
//!   on entry and writes the escape sequences that leave the alternate screen and mouse
//!   capture, then the abort goes on (Linux).

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

static TUI_ACTIVE: AtomicBool = AtomicBool::new(false);
static TUI_THREAD: Mutex<Option<std::thread::ThreadId>> = Mutex::new(None);
static HOOKS_INSTALLED: AtomicBool = AtomicBool::new(false);
/// Set by SIGINT, SIGTERM or SIGHUP while the UI runs.
static QUIT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Whether a signal asked the UI to quit.
pub(super) fn quit_signalled() -> bool {
    QUIT.get().is_some_and(|q| q.load(Ordering::Relaxed))
}

/// The terminal the UI reads keys from, the descriptor crossterm sets raw: stdin when it is a
/// terminal, else `/dev/tty` (opened once, kept open for the rest of the run); `None` when
/// there is neither.
pub(super) fn tty_fd() -> Option<std::os::fd::RawFd> {
    static FD: OnceLock<Option<std::os::fd::RawFd>> = OnceLock::new();
    *FD.get_or_init(|| {
        // SAFETY: isatty and open are given a valid descriptor and a NUL-terminated path.
        let fd = unsafe {
            if libc::isatty(libc::STDIN_FILENO) == 1 {
                libc::STDIN_FILENO
            } else {
                libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC)
            }
        };
        (fd >= 0).then_some(fd)
    })
}

/// Put the terminal back: leave raw mode, the alternate screen and mouse capture.
fn restore_terminal() {
    if TUI_ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let _ = crossterm::execute!(
            io::stdout(),
            DisableMouseCapture,
            LeaveAlternateScreen,
            crossterm::cursor::Show
        );
    }
}

/// The panic hook: a panic on the UI thread or the main thread ends the program, so the
/// terminal is given back before the previous hook prints. (A panicking relay task is caught by
/// tokio; the UI carries on.)
fn install_panic_hook() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let me = std::thread::current();
        let ui = TUI_THREAD.lock().ok().and_then(|t| *t);
        if ui == Some(me.id()) || me.name() == Some("main") {
            restore_terminal();
        }
        prev(info);
    }));
}

/// SIGINT, SIGTERM and SIGHUP set [`QUIT`]; a second one while it is set exits at once
/// (status 128 + the signal), as a stuck program should.
fn install_quit_signals() {
    let quit = QUIT.get_or_init(|| Arc::new(AtomicBool::new(false)));
    #[cfg(unix)]
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // Registered first, so it sees the flag as it was before this signal set it.
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, quit.clone());
        let _ = signal_hook::flag::register(sig, quit.clone());
    }
    watch_quit();
}

/// How long the UI has to quit after a quit signal before the process ends without it.
const QUIT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// A UI that does not quit within [`QUIT_GRACE`] of a quit signal (stuck in a read of a
/// terminal that hung up, say) is ended with the terminal given back, status 128 + SIGHUP,
/// rather than left running.
fn watch_quit() {
    let _ = std::thread::Builder::new()
        .name("tui-quit-watch".into())
        .spawn(|| {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(200));
                if quit_signalled() && TUI_ACTIVE.load(Ordering::SeqCst) {
                    std::thread::sleep(QUIT_GRACE);
                    if quit_signalled() && TUI_ACTIVE.load(Ordering::SeqCst) {
                        restore_terminal();
                        eprintln!("amqpeek: the UI did not quit after a signal; exiting");
                        std::process::exit(128 + libc::SIGHUP);
                    }
                }
            }
        });
}

/// Owns the terminal while the UI runs; restores it when dropped (also while unwinding).
pub(super) struct TerminalGuard {
    pub(super) terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    /// Take the terminal: raw mode, alternate screen, mouse capture.
    pub(super) fn enter() -> io::Result<Self> {
        if !HOOKS_INSTALLED.swap(true, Ordering::SeqCst) {
            install_panic_hook();
            install_quit_signals();
            #[cfg(target_os = "linux")]
            on_abort::install();
        }
        if let Ok(mut t) = TUI_THREAD.lock() {
            *t = Some(std::thread::current().id());
        }
        #[cfg(target_os = "linux")]
        on_abort::save_settings();
        enable_raw_mode()?;
        TUI_ACTIVE.store(true, Ordering::SeqCst);
        let mut out = io::stdout();
        if let Err(e) = crossterm::execute!(out, EnterAlternateScreen, EnableMouseCapture) {
            restore_terminal();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                restore_terminal();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// The terminal given back from a SIGABRT handler, with async-signal-safe calls only.
#[cfg(target_os = "linux")]
mod on_abort {
    use std::sync::OnceLock;
    use std::sync::atomic::Ordering;

    use crossterm::Command;

    /// The terminal (the descriptor crossterm sets raw: stdin when it is a terminal, else
    /// `/dev/tty`) and its settings before raw mode.
    static SAVED: OnceLock<(libc::c_int, libc::termios)> = OnceLock::new();
    /// What leaves mouse capture and the alternate screen and shows the cursor, in bytes.
    static LEAVE: OnceLock<Vec<u8>> = OnceLock::new();

    /// Remember the terminal's settings before raw mode (once: the first entry's are the
    /// user's).
    pub(super) fn save_settings() {
        if SAVED.get().is_some() {
            return;
        }
        let Some(fd) = super::tty_fd() else {
            return;
        };
        // SAFETY: termios is plain data, filled by tcgetattr.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::tcgetattr(fd, &mut termios) } == 0 {
            let _ = SAVED.set((fd, termios));
        }
    }

    /// The escape sequences crossterm's own restore writes, prepared before any signal.
    fn leave_sequence() -> Vec<u8> {
        let mut s = String::new();
        let _ = crossterm::event::DisableMouseCapture.write_ansi(&mut s);
        let _ = crossterm::terminal::LeaveAlternateScreen.write_ansi(&mut s);
        let _ = crossterm::cursor::Show.write_ansi(&mut s);
        s.into_bytes()
    }

    extern "C" fn on_sigabrt(_sig: libc::c_int) {
        if super::TUI_ACTIVE.swap(false, Ordering::SeqCst) {
            if let Some(bytes) = LEAVE.get() {
                // SAFETY: write(2) of a buffer that lives for the whole program.
                unsafe { libc::write(libc::STDOUT_FILENO, bytes.as_ptr().cast(), bytes.len()) };
            }
            if let Some((fd, termios)) = SAVED.get() {
                // SAFETY: tcsetattr(3) is async-signal-safe; the termios was filled on entry.
                unsafe { libc::tcsetattr(*fd, libc::TCSANOW, termios) };
            }
        }
        // SA_RESETHAND put the default action back: raised again (delivered once this
        // returns), the abort ends the program as it would have.
        // SAFETY: raise(3) is async-signal-safe.
        unsafe { libc::raise(libc::SIGABRT) };
    }

    /// Install the SIGABRT handler (on the alternate signal stack when there is one: a stack
    /// overflow aborts from there).
    pub(super) fn install() {
        let _ = LEAVE.set(leave_sequence());
        // SAFETY: a zeroed sigaction with a handler of the right signature and an empty mask.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigabrt as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESETHAND | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_on_the_ui_thread_gives_the_terminal_back_before_the_message_is_printed() {
        // The hook in place before (the default one, in a program) records whether the
        // terminal was still taken when it ran.
        let still_taken = Arc::new(AtomicBool::new(true));
        let seen = still_taken.clone();
        std::panic::set_hook(Box::new(move |_| {
            seen.store(TUI_ACTIVE.load(Ordering::SeqCst), Ordering::SeqCst);
        }));
        install_panic_hook();
        if let Ok(mut t) = TUI_THREAD.lock() {
            *t = Some(std::thread::current().id());
        }
        TUI_ACTIVE.store(true, Ordering::SeqCst);
        let panicked = std::panic::catch_unwind(|| panic!("a bug in the UI"));
        drop(std::panic::take_hook());
        assert!(panicked.is_err());
        assert!(
            !TUI_ACTIVE.load(Ordering::SeqCst),
            "the terminal is given back"
        );
        assert!(
            !still_taken.load(Ordering::SeqCst),
            "the previous hook ran after the terminal was given back"
        );
    }
}
