//! What every perfmon file reader shares. A file that cannot be used is a [`PerfmonError`]
//! naming the file (reading is strict about syntax: a truncated or mistyped file is an error,
//! with serde_json's line and column), and numbers are written as Intel writes them: `0x1a`,
//! `0X1A` or decimal `26`.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A perfmon file that cannot be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum PerfmonError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid JSON / CSV of the expected shape.
    #[error("{}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with a line and column where the parser knows them.
        message: String,
    },
    /// `mapfile.csv` has no file of the wanted kind for this CPU.
    #[error("{}: no {what} file listed for {cpuid}", path.display())]
    NotListed {
        /// The mapfile.
        path: PathBuf,
        /// The CPU identification string that was looked up.
        cpuid: String,
        /// `metrics`, `core events`, ...
        what: &'static str,
    },
}

pub(super) fn malformed(path: &Path, message: impl Into<String>) -> PerfmonError {
    PerfmonError::Malformed {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

pub(super) fn read_text(path: &Path) -> Result<String, PerfmonError> {
    std::fs::read_to_string(path).map_err(|source| PerfmonError::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub(super) fn parse_json<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, PerfmonError> {
    // serde_json's messages are one line and end with "at line L column C".
    serde_json::from_str(text).map_err(|e| malformed(path, format!("invalid JSON: {e}")))
}

/// Parses `0x1a`, `0X1A` or decimal `26`.
pub(super) fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        s.parse().ok()
    }
}
