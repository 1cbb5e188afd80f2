//! Where a result came from: the build (package version, git commit and
//! whether the tree had uncommitted changes, model revision) and the run
//! (command line, UTC start time, host, CPU). summary.json carries it under
//! `provenance`; `lbsim --version` prints the build's part.

use serde_json::{json, Value};

/// The git commit the simulator was built from (40 hex digits), or
/// "unknown" (built outside a git checkout, e.g. from an sdist).
pub const GIT_COMMIT: &str = env!("LBSIM_GIT_COMMIT");
/// "true" if the tree had uncommitted changes to tracked files when built,
/// "false" if not, "unknown" without git.
pub const GIT_DIRTY: &str = env!("LBSIM_GIT_DIRTY");
/// The package version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The build in one line: `0.1.0 (commit 0123abcd..., dirty; model revision ...)`.
pub fn build_line() -> String {
    let dirty = match GIT_DIRTY {
        "true" => ", with uncommitted changes",
        _ => "",
    };
    format!("{VERSION} (commit {GIT_COMMIT}{dirty}; model revision {})", crate::MODEL_REVISION)
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    utc(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil calendar,
/// Howard Hinnant's days-from-civil inverse).
pub fn utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// The host's name (/proc/sys/kernel/hostname, $HOSTNAME), or "unknown".
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU model (/proc/cpuinfo "model name"), or "unknown".
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The provenance of a run started at `started_utc` by `command_line`
/// (null when the caller fills it in, as the Python API does).
pub fn provenance(scheme: &str, command_line: Option<&str>, started_utc: &str) -> Value {
    json!({
        "package_version": VERSION,
        "git_commit": GIT_COMMIT,
        "git_dirty": match GIT_DIRTY { "true" => json!(true), "false" => json!(false), _ => json!("unknown") },
        "model_revision": crate::model_revision(scheme),
        "command_line": command_line,
        "started_utc": started_utc,
        "host": host_name(),
        "cpu_model": cpu_model(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn the_commit_is_40_hex_digits_or_unknown() {
        let c = super::GIT_COMMIT;
        assert!(c == "unknown" || (c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit())), "{c}");
    }
}
