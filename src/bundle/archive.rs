//! Writing the archive: the capture folders are made in a staging folder beside the output,
//! then packed with the README and the environment file into a gzipped tar under one top
//! folder (named as the archive), written to a temporary name and renamed into place.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::BundleError;

/// The staging folder, removed when dropped (whether the bundle was written or not).
#[derive(Debug)]
pub(super) struct Staging {
    dir: PathBuf,
}

/// The output's folder and name.
fn split(out: &Path) -> (PathBuf, String) {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bundle".to_string());
    (parent, name)
}

fn output_error(path: &Path) -> impl FnOnce(std::io::Error) -> BundleError + '_ {
    move |source| BundleError::Output {
        path: path.to_path_buf(),
        source,
    }
}

impl Staging {
    /// A new staging folder in `out`'s folder.
    pub(super) fn beside(out: &Path) -> Result<Staging, BundleError> {
        let (parent, name) = split(out);
        let dir = parent.join(format!(".{name}.staging-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(output_error(&dir))?;
        Ok(Staging { dir })
    }

    /// A folder in it, created.
    pub(super) fn folder(&self, name: &str) -> Result<PathBuf, BundleError> {
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir).map_err(output_error(&dir))?;
        Ok(dir)
    }

    /// Pack `readme`, `environment` and the capture folders `parts` (name, path) into `out`;
    /// the archive's entries, in order.
    pub(super) fn finish(
        self,
        out: &Path,
        readme: &str,
        environment: &str,
        parts: &[(String, PathBuf)],
    ) -> Result<Vec<String>, BundleError> {
        let (parent, name) = split(out);
        let root = root_name(&name);
        let partial = parent.join(format!(".{name}.partial-{}", std::process::id()));
        let packed = pack(&partial, &root, readme, environment, parts);
        let entries = match packed {
            Ok(entries) => entries,
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                return Err(e);
            }
        };
        std::fs::rename(&partial, out).map_err(|source| {
            let _ = std::fs::remove_file(&partial);
            BundleError::Output {
                path: out.to_path_buf(),
                source,
            }
        })?;
        Ok(entries)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The archive's top folder: its file name without `.tar.gz` / `.tgz`.
fn root_name(file: &str) -> String {
    let stem = file
        .strip_suffix(".tar.gz")
        .or_else(|| file.strip_suffix(".tgz"))
        .unwrap_or(file);
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match clean.trim_matches('.') {
        "" => "bundle".to_string(),
        s => s.to_string(),
    }
}

fn pack(
    partial: &Path,
    root: &str,
    readme: &str,
    environment: &str,
    parts: &[(String, PathBuf)],
) -> Result<Vec<String>, BundleError> {
    let err = output_error(partial);
    let file = File::create(partial).map_err(output_error(partial))?;
    let gz = GzEncoder::new(BufWriter::new(file), Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut entries = Vec::new();
    let result = (|| -> std::io::Result<()> {
        for (name, text) in [("README.txt", readme), ("environment.txt", environment)] {
            let path = format!("{root}/{name}");
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(now_secs());
            header.set_cksum();
            tar.append_data(&mut header, &path, text.as_bytes())?;
            entries.push(path);
        }
        for (folder, dir) in parts {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()?;
            files.sort();
            for f in files {
                let name = f
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                let path = format!("{root}/{folder}/{name}");
                tar.append_path_with_name(&f, &path)?;
                entries.push(path);
            }
        }
        let gz = tar.into_inner()?;
        let mut out = gz.finish()?;
        out.flush()?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()
    })();
    result.map_err(err)?;
    Ok(entries)
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_folder_is_the_archive_name_without_its_extension() {
        assert_eq!(root_name("report.tar.gz"), "report");
        assert_eq!(root_name("x.tgz"), "x");
        assert_eq!(root_name("..tar.gz"), "bundle");
        assert_eq!(root_name("a b.tar.gz"), "a_b");
    }
}
