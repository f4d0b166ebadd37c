//! Which config file a run reads, and why: `--config`, `CRAWL_ENGINE_CONFIG`, `./config.toml` in the working
//! directory when neither is given, or none (the built-in defaults). The choice is logged at start, so a file
//! picked up from the working directory is never a silent one.

use std::path::{Path, PathBuf};

/// The file looked for in the working directory when neither `--config` nor `CRAWL_ENGINE_CONFIG` names one.
pub const FALLBACK: &str = "config.toml";

/// The config file of a run and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFile {
    /// Named by `--config`.
    Flag(PathBuf),
    /// Named by the `CRAWL_ENGINE_CONFIG` variable.
    Env(PathBuf),
    /// Not named: [`FALLBACK`] in the working directory, which exists.
    WorkingDir(PathBuf),
    /// Not named, and no [`FALLBACK`] in the working directory: the built-in defaults.
    Defaults,
}

impl ConfigFile {
    /// The file named on the command line (`given`; `from_env` when it came from `CRAWL_ENGINE_CONFIG`), else
    /// [`FALLBACK`] when it exists in `cwd`, else none.
    pub fn locate(given: Option<&Path>, from_env: bool, cwd: &Path) -> ConfigFile {
        match given {
            Some(p) if from_env => ConfigFile::Env(p.to_path_buf()),
            Some(p) => ConfigFile::Flag(p.to_path_buf()),
            None if cwd.join(FALLBACK).exists() => ConfigFile::WorkingDir(PathBuf::from(FALLBACK)),
            None => ConfigFile::Defaults,
        }
    }

    /// The path to read (relative ones against the working directory), or None for the defaults.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigFile::Flag(p) | ConfigFile::Env(p) | ConfigFile::WorkingDir(p) => Some(p),
            ConfigFile::Defaults => None,
        }
    }

    /// How the file was chosen, in words.
    pub fn origin(&self) -> &'static str {
        match self {
            ConfigFile::Flag(_) => "--config",
            ConfigFile::Env(_) => "CRAWL_ENGINE_CONFIG",
            ConfigFile::WorkingDir(_) => "the working directory's config.toml: no --config given",
            ConfigFile::Defaults => {
                "built-in defaults: no --config given and no config.toml in the working directory"
            }
        }
    }

    /// What `--check` names the config by: the path as given, with how it was found when no option named it.
    pub fn label(&self) -> String {
        match self {
            ConfigFile::Flag(p) | ConfigFile::Env(p) => p.display().to_string(),
            ConfigFile::WorkingDir(p) => format!("{} ({})", p.display(), self.origin()),
            ConfigFile::Defaults => {
                "defaults (no --config given and no config.toml in the working directory)"
                    .to_owned()
            }
        }
    }

    /// The start's log line naming the file (its absolute path) and how it was chosen.
    pub fn log(&self) {
        let origin = self.origin();
        match self.path() {
            Some(p) => {
                let path = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
                tracing::info!(path = %path.display(), origin, "config file");
            }
            None => tracing::info!(origin, "no config file"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_file_wins_and_the_working_directory_is_looked_at_only_without_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let named = Path::new("/etc/crawls/news.toml");
        assert_eq!(
            ConfigFile::locate(Some(named), false, dir.path()),
            ConfigFile::Flag(named.to_path_buf())
        );
        assert_eq!(
            ConfigFile::locate(Some(named), true, dir.path()),
            ConfigFile::Env(named.to_path_buf())
        );
        let none = ConfigFile::locate(None, false, dir.path());
        assert_eq!(none, ConfigFile::Defaults);
        assert_eq!(none.path(), None);
        assert_eq!(
            none.label(),
            "defaults (no --config given and no config.toml in the working directory)"
        );

        std::fs::write(dir.path().join(FALLBACK), "").expect("write");
        let found = ConfigFile::locate(None, false, dir.path());
        assert_eq!(found, ConfigFile::WorkingDir(PathBuf::from("config.toml")));
        assert_eq!(found.path(), Some(Path::new("config.toml")));
        assert_eq!(
            found.label(),
            "config.toml (the working directory's config.toml: no --config given)"
        );
        // Named, the file in the working directory is not looked at.
        assert_eq!(
            ConfigFile::locate(Some(named), false, dir.path()).label(),
            "/etc/crawls/news.toml"
        );
    }
}
