//! `degrade init`: writes the commented example `degrade.toml`.

use std::path::Path;

use anyhow::{Context, bail};

use super::Exit;
use crate::config::EXAMPLE_CONFIG;

pub(super) fn run(path: &Path, force: bool) -> anyhow::Result<Exit> {
    if path.exists() && !force {
        bail!("{} already exists; pass --force to overwrite it", path.display());
    }
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
    }
    write_atomically(path, EXAMPLE_CONFIG)?;
    println!("Wrote {}.", path.display());
    println!("Next: add a [[scenario]] to it, then `degrade validate` and `degrade migrate`.");
    Ok(Exit::Ok)
}

/// Writes through a temporary file and a rename, so an interrupted write never leaves half a config behind.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    std::fs::write(&temporary, text).with_context(|| format!("cannot write {}", Path::new(&temporary).display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("cannot write {}", path.display()))
}
