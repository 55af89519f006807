//! Output files, checked before anything is opened for writing, and named in their errors.
//!
//! Two outputs that are one file (`--jsonl X --pcap X`, also through a symlink or a hard link,
//! and through a symlink to a file not created yet) would interleave two writers in it; an
//! output that is the capture being read (`replay X --jsonl X`, `check X --write-baseline X`)
//! would truncate it before it is read. Both are refused up front. Every write error of a
//! capture names its flag and path, so "No space left on device" says where.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::bail;

/// What tells two paths apart: the file they name when it exists (device and inode, so links
/// are seen through), else where it would be created.
#[derive(Debug, PartialEq, Eq)]
enum FileKey {
    Inode(u64, u64),
    Path(PathBuf),
}

/// The key of `path`; `None` for paths two writers may share (stdout `-`, a character device
/// such as `/dev/null`).
fn key(path: &Path) -> Option<FileKey> {
    if path == Path::new("-") {
        return None;
    }
    if let Ok(meta) = std::fs::metadata(path) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::{FileTypeExt, MetadataExt};
            if meta.file_type().is_char_device() {
                return None;
            }
            return Some(FileKey::Inode(meta.dev(), meta.ino()));
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
        }
    }
    // Not there yet: where it would be, with the directory's links resolved and a dangling
    // symlink followed to the file it would create.
    let path = &dangling_target(path);
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
    Some(FileKey::Path(
        dir.join(path.file_name().unwrap_or_default()),
    ))
}

/// The most links followed from one path, as the kernel's `ELOOP` limit (40) does.
const MAX_LINKS: usize = 40;

/// Where `path` leads when it is a chain of symlinks ending at nothing: each link's target,
/// relative to the link's folder, until a name that is no link (or [`MAX_LINKS`] of them).
fn dangling_target(path: &Path) -> PathBuf {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let Ok(target) = std::fs::read_link(&at) else {
            break;
        };
        at = match at.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    at
}

/// Refuse outputs (flag, path) that are one file, or that are the `input` read.
pub fn check_distinct(input: Option<&Path>, outputs: &[(&str, &Path)]) -> anyhow::Result<()> {
    let input_key = input.and_then(key);
    let keys: Vec<Option<FileKey>> = outputs.iter().map(|(_, p)| key(p)).collect();
    for (i, (flag, path)) in outputs.iter().enumerate() {
        let Some(k) = &keys[i] else { continue };
        if input_key.as_ref() == Some(k) {
            bail!(
                "{flag} {} is the capture being read: writing it would destroy it",
                path.display()
            );
        }
        if let Some(j) = keys[..i].iter().position(|other| other.as_ref() == Some(k)) {
            bail!(
                "{} {} and {flag} {} are the same file: give each output its own",
                outputs[j].0,
                outputs[j].1.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// A writer whose errors say which output failed (`--jsonl /dev/full: No space left on device`),
/// keeping the error's kind.
pub struct Named<W> {
    what: String,
    inner: W,
}

impl<W> Named<W> {
    /// `inner`, named `what` (e.g. `--pcap cap.pcapng`) in its errors.
    pub fn new(what: String, inner: W) -> Self {
        Named { what, inner }
    }

    fn name(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.what))
    }
}

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.name(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.name(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_under_two_names_is_refused_and_distinct_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.cap");
        let b = dir.path().join("b.cap");
        assert!(check_distinct(None, &[("--jsonl", &a), ("--pcap", &b)]).is_ok());
        assert!(check_distinct(None, &[("--jsonl", &a), ("--pcap", &a)]).is_err());
        let dotted = dir.path().join(".").join("a.cap");
        assert!(check_distinct(None, &[("--jsonl", &a), ("--pcap", &dotted)]).is_err());
        std::fs::write(&a, b"x").unwrap();
        let hard = dir.path().join("hard");
        std::fs::hard_link(&a, &hard).unwrap();
        assert!(check_distinct(None, &[("--jsonl", &hard), ("--pcap", &a)]).is_err());
        #[cfg(unix)]
        {
            let soft = dir.path().join("soft");
            std::os::unix::fs::symlink(&a, &soft).unwrap();
            let e = check_distinct(Some(&a), &[("--pcap", &soft)]).unwrap_err();
            assert!(e.to_string().contains("capture being read"), "{e}");
            // A chain of relative links to a file not there yet is that file.
            let (x, l1, l2) = (
                dir.path().join("x"),
                dir.path().join("l1"),
                dir.path().join("l2"),
            );
            std::os::unix::fs::symlink("x", &l1).unwrap();
            std::os::unix::fs::symlink("l1", &l2).unwrap();
            let e = check_distinct(None, &[("--jsonl", &x), ("--pcap", &l2)]).unwrap_err();
            assert!(e.to_string().contains("same file"), "{e}");
            // A loop of links is some file of its own, never a hang.
            let (m, n) = (dir.path().join("m"), dir.path().join("n"));
            std::os::unix::fs::symlink("n", &m).unwrap();
            std::os::unix::fs::symlink("m", &n).unwrap();
            assert!(check_distinct(None, &[("--jsonl", &x), ("--pcap", &m)]).is_ok());
        }
        let null = Path::new("/dev/null");
        assert!(check_distinct(None, &[("--jsonl", null), ("--pcap", null)]).is_ok());
        let dash = Path::new("-");
        assert!(check_distinct(Some(dash), &[("--jsonl", dash)]).is_ok());
    }

    #[test]
    fn a_write_error_names_the_output_and_keeps_its_kind() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from_raw_os_error(28))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = Named::new("--jsonl /x".into(), Full);
        let e = w.write(b"a").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(e.to_string().starts_with("--jsonl /x: "), "{e}");
    }
}
