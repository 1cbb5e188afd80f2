//! Embeds the build's provenance: the git commit of the source tree and
//! whether it had uncommitted changes (`LBSIM_GIT_COMMIT`,
//! `LBSIM_GIT_DIRTY`). Outside a git checkout (an sdist, a vendored copy) or
//! without git both are "unknown". Cargo reruns this when HEAD, the branch
//! it points to or the index changes (a commit, a checkout, `git add`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim_end().to_string())
}

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LBSIM_GIT_COMMIT");
    let commit = git(&dir, &["rev-parse", "HEAD"]).filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()));
    let (commit, dirty) = match commit {
        Some(c) => {
            let dirty = match git(&dir, &["status", "--porcelain", "--untracked-files=no"]) {
                Some(s) => (if s.is_empty() { "false" } else { "true" }).to_string(),
                None => "unknown".to_string(),
            };
            // rerun when HEAD moves, its branch moves or the index changes
            let abs = |p: String| -> PathBuf {
                let p = PathBuf::from(p);
                if p.is_absolute() {
                    p
                } else {
                    dir.join(p)
                }
            };
            if let Some(g) = git(&dir, &["rev-parse", "--git-dir"]).map(abs) {
                for f in ["HEAD", "index"] {
                    println!("cargo:rerun-if-changed={}", g.join(f).display());
                }
            }
            if let (Some(common), Some(r)) = (git(&dir, &["rev-parse", "--git-common-dir"]).map(abs), git(&dir, &["symbolic-ref", "-q", "HEAD"])) {
                let f = common.join(&r);
                if f.exists() {
                    println!("cargo:rerun-if-changed={}", f.display());
                }
                println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
            }
            (c, dirty)
        }
        None => ("unknown".to_string(), "unknown".to_string()),
    };
    // an explicit value (a packager building from an sdist) wins
    let commit = std::env::var("LBSIM_GIT_COMMIT").ok().filter(|s| !s.is_empty()).unwrap_or(commit);
    println!("cargo:rustc-env=LBSIM_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=LBSIM_GIT_DIRTY={dirty}");
}
