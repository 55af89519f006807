//! Files named on the command line, opened so that no name can hang or swamp the tool.
//!
//! Settings (`--config`, `--baseline`, `--ca`, `--cert`, `--key`) are read only from regular
//! files and only up to [`MAX_SETTINGS_BYTES`]: a FIFO, a device such as `/dev/zero` or a
//! directory is refused with a message saying what it is, before anything waits on it.
//!
//! Outputs (`--jsonl`, `--pcap`, `-o`, `--write-baseline`, `--keylog`, `--cert-out`) may be
//! FIFOs, as a live capture into `wireshark -k -i FIFO` is, but a FIFO no program reads yet
//! is refused at once ("no reader") rather than blocking the start of the run until one
//! comes; once open, writes to it block as writes to a pipe on stdout do.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// The largest settings file read (16 MiB): configs, baselines and PEM files are far smaller.
pub const MAX_SETTINGS_BYTES: u64 = 16 << 20;

/// What a path that is not a regular file is, for messages (`a FIFO`, `a directory`).
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Refuses `meta` unless it is a regular file.
fn regular(meta: &std::fs::Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}, not a regular file", kind_of(meta)),
    ))
}

/// Opening flags that never wait: a FIFO opened for reading without a writer, or for writing
/// without a reader, returns at once.
fn nonblocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    opts
}

/// Back to blocking I/O on `file` (opened with [`nonblocking`]).
fn blocking(file: &File) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function borrows open; no memory is passed.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    Ok(())
}

/// The bytes of the regular file at `path`, at most `limit` of them: anything else (a FIFO, a
/// device, a directory, a larger file) is an error saying why; the caller names the path.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    // Checked before opening, so a FIFO is never opened at all.
    regular(&std::fs::metadata(path)?)?;
    let file = nonblocking(OpenOptions::new().read(true)).open(path)?;
    let meta = file.metadata()?;
    regular(&meta)?;
    let too_large = || {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            if limit.is_multiple_of(1 << 20) {
                format!("larger than {} MiB", limit >> 20)
            } else {
                format!("larger than {limit} bytes")
            },
        )
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte more than allowed tells a file that grew while read from one that fits.
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_regular`] of at most [`MAX_SETTINGS_BYTES`], as UTF-8 text.
pub fn read_settings(path: &Path) -> io::Result<String> {
    let bytes = read_regular(path, MAX_SETTINGS_BYTES)?;
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// `opts` (write, create, truncate or append as the caller sets) opened on `path` without
/// waiting for a FIFO's reader: a FIFO nobody reads is an error saying so.
pub fn open_output(opts: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = match nonblocking(opts).open(path) {
        Ok(f) => f,
        // ENXIO: "O_NONBLOCK | O_WRONLY is set, the named file is a FIFO, and no process has
        // the FIFO open for reading" (open(2)).
        #[cfg(target_os = "linux")]
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(io::Error::other(
                "a FIFO no program reads: start its reader first",
            ));
        }
        Err(e) => return Err(e),
    };
    blocking(&file)?;
    Ok(file)
}

/// `path` created (or truncated) for writing, as [`File::create`] does, through
/// [`open_output`].
pub fn create(path: &Path) -> io::Result<File> {
    open_output(
        OpenOptions::new().write(true).create(true).truncate(true),
        path,
    )
}

/// `bytes` written to `path` (created or truncated), as [`std::fs::write`] does, through
/// [`open_output`].
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    create(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_only_from_regular_files_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "fail-on = \"error\"\n").unwrap();
        assert_eq!(read_settings(&ok).unwrap(), "fail-on = \"error\"\n");
        let e = read_regular(dir.path(), 10).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_regular(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let big = dir.path().join("big");
        std::fs::write(&big, [b'x'; 11]).unwrap();
        assert_eq!(read_regular(&big, 11).unwrap().len(), 11);
        let e = read_regular(&big, 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
    }
}
