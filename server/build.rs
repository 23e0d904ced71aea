//! Stamps the build with its commit and date for `GET /health` and `--version`.

use std::process::Command;

fn main() {
    let commit = std::env::var("MYCORRHIZAL_COMMIT").ok().or_else(|| {
        let out = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    let date = std::env::var("MYCORRHIZAL_BUILD_DATE").ok().or_else(|| {
        let out = Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    println!("cargo:rustc-env=MYCORRHIZAL_COMMIT={}", commit.unwrap_or_else(|| "unknown".into()));
    println!("cargo:rustc-env=MYCORRHIZAL_BUILD_DATE={}", date.unwrap_or_else(|| "unknown".into()));
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/refs/heads");
    println!("cargo:rerun-if-env-changed=MYCORRHIZAL_COMMIT");
    println!("cargo:rerun-if-env-changed=MYCORRHIZAL_BUILD_DATE");
}
