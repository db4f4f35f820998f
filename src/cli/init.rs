//! `degrade init`: writes the commented example `degrade.toml` and the example scenario it names.

use std::path::Path;

use anyhow::{Context, bail};

use super::Exit;
use crate::config::EXAMPLE_CONFIG;
use crate::scenario::EXAMPLE_SCENARIO;

pub(super) fn run(path: &Path, force: bool) -> anyhow::Result<Exit> {
    if path.exists() && !force {
        bail!("{} already exists; pass --force to overwrite it", path.display());
    }
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
    }
    let scenario = path.parent().unwrap_or(Path::new("")).join("scenarios/example.toml");
    let write_scenario = !scenario.exists() || force;
    if write_scenario {
        std::fs::create_dir_all(scenario.parent().expect("it has one"))
            .with_context(|| format!("cannot create the folder of {}", scenario.display()))?;
        write_atomically(&scenario, EXAMPLE_SCENARIO)?;
    }
    write_atomically(path, EXAMPLE_CONFIG)?;
    println!("Wrote {}.", path.display());
    if write_scenario {
        println!("Wrote {}: the flows and load of one night, commented.", scenario.display());
    } else {
        println!("Kept the existing {} (pass --force to overwrite it).", scenario.display());
    }
    println!("Next: point both at your service, then `degrade validate` and `degrade run example --duration 20s`.");
    Ok(Exit::Ok)
}

/// Writes through a temporary file and a rename, so an interrupted write never leaves half a config behind.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    std::fs::write(&temporary, text).with_context(|| format!("cannot write {}", Path::new(&temporary).display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("cannot write {}", path.display()))
}
