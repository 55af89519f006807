//! Reading a capture the user may stop at any moment: the TUI's `q` ends a replay at once,
//! even of a pipe that never closes (`dumpcap -w - | amqpeek replay -`).
//!
//! A [`Stop`] is a shared flag. [`stoppable`] wraps the capture's byte stream so that, once the
//! flag is set, the next read says "end of stream": the capture reader ends as at the end of a
//! file, the replay closes its connections and flushes its outputs, and the worker thread ends.
//! A pipe is read on a thread of its own (a blocking `read` cannot be interrupted), handing
//! its chunks over a small bounded channel; that thread stays blocked in `read` until the
//! process exits, which is all a pipe that never closes allows.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::Duration;

/// Chunks a pipe's reader thread may hold ready (each at most [`PIPE_CHUNK`] bytes).
const PIPE_QUEUE: usize = 4;
/// The most a pipe's reader thread reads at once.
const PIPE_CHUNK: usize = 64 * 1024;
/// How often a reader waiting on a silent pipe looks at the flag.
const POLL: Duration = Duration::from_millis(20);

/// The flag that stops a capture's reading (clone it: every clone is the same flag).
#[derive(Clone, Debug, Default)]
pub struct Stop {
    stop: Arc<AtomicBool>,
    cut: Arc<AtomicBool>,
}

impl Stop {
    /// A flag not set.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Stop: every later read of a stream wrapped with this flag ends the stream.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Whether [`Stop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Whether a stream was ended by the flag (not by its own end): the capture was not read
    /// to its end.
    pub fn cut_short(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }

    fn ended_early(&self) -> io::Result<usize> {
        self.cut.store(true, Ordering::SeqCst);
        Ok(0)
    }
}

/// `src`, ending as soon as `stop` is set. `pipe`: `src` may block for ever (stdin), so it is
/// read on a thread of its own; otherwise (a file) reads are short and the flag is looked at
/// before each.
pub fn stoppable(src: Box<dyn Read + Send>, stop: &Stop, pipe: bool) -> Box<dyn Read + Send> {
    if pipe {
        Box::new(PipeReader::spawn(src, stop.clone()))
    } else {
        Box::new(FileReader {
            src,
            stop: stop.clone(),
        })
    }
}

/// A file: the flag is looked at before each read.
struct FileReader {
    src: Box<dyn Read + Send>,
    stop: Stop,
}

impl Read for FileReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.is_stopped() {
            return self.stop.ended_early();
        }
        self.src.read(buf)
    }
}

/// A pipe read on its own thread; this side waits for its chunks, looking at the flag.
struct PipeReader {
    rx: Receiver<io::Result<Vec<u8>>>,
    /// The chunk being handed out, and how much of it is gone.
    chunk: Vec<u8>,
    at: usize,
    stop: Stop,
    ended: bool,
}

impl PipeReader {
    fn spawn(mut src: Box<dyn Read + Send>, stop: Stop) -> PipeReader {
        let (tx, rx) = sync_channel(PIPE_QUEUE);
        let spawned = std::thread::Builder::new()
            .name("capture-pipe".into())
            .spawn(move || {
                let mut buf = vec![0u8; PIPE_CHUNK];
                loop {
                    let got = match src.read(&mut buf) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Ok(0) => break,
                        Ok(n) => Ok(buf[..n].to_vec()),
                        Err(e) => Err(e),
                    };
                    let failed = got.is_err();
                    // The reading side is gone (stopped or done): nothing more to hand over.
                    if tx.send(got).is_err() || failed {
                        break;
                    }
                }
            });
        let ended = spawned.is_err();
        PipeReader {
            rx,
            chunk: Vec::new(),
            at: 0,
            stop,
            ended,
        }
    }
}

impl Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.stop.is_stopped() {
                return self.stop.ended_early();
            }
            if self.at < self.chunk.len() {
                let n = buf.len().min(self.chunk.len() - self.at);
                buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            if self.ended {
                return Ok(0);
            }
            match self.rx.recv_timeout(POLL) {
                Ok(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => self.ended = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that gives `first` and then blocks for ever, as a pipe whose writer never
    /// closes it.
    struct NeverCloses {
        first: Option<Vec<u8>>,
    }

    impl Read for NeverCloses {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if let Some(b) = self.first.take() {
                buf[..b.len()].copy_from_slice(&b);
                return Ok(b.len());
            }
            loop {
                std::thread::park();
            }
        }
    }

    #[test]
    fn a_pipe_that_never_closes_ends_once_stopped() {
        let stop = Stop::new();
        let src = NeverCloses {
            first: Some(b"abc".to_vec()),
        };
        let mut r = stoppable(Box::new(src), &stop, true);
        let mut buf = [0u8; 8];
        assert_eq!(r.read(&mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"abc");
        let s = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            s.stop();
        });
        // Blocks until the flag is set, then ends the stream.
        assert_eq!(r.read(&mut buf).unwrap(), 0);
        assert!(stop.cut_short());
        t.join().unwrap();
    }

    #[test]
    fn a_pipe_read_to_its_end_is_not_cut_short_and_a_file_stops_at_once() {
        let stop = Stop::new();
        let mut r = stoppable(Box::new(&b"hello"[..]), &stop, true);
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"hello");
        assert!(!stop.cut_short());

        let mut f = stoppable(Box::new(&b"world"[..]), &stop, false);
        stop.stop();
        assert_eq!(f.read(&mut [0u8; 4]).unwrap(), 0);
        assert!(stop.cut_short());
    }
}
