//! Filesystem facts about the data folder: whether it sits on a network filesystem (a corruption
//! risk for the database), whether it is writable, and how full it is.

use std::path::Path;

/// Filesystem types that are network or FUSE mounts.
const NETWORK_TYPES: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb",
    "smb2",
    "smb3",
    "smbfs",
    "9p",
    "ceph",
    "glusterfs",
    "afs",
    "lustre",
    "davfs",
    "sshfs",
];

/// The filesystem type of the mount holding `path`, from a `/proc/self/mountinfo` text.
pub fn mount_type(mountinfo: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let mut halves = line.splitn(2, " - ");
        let (Some(left), Some(right)) = (halves.next(), halves.next()) else {
            continue;
        };
        let Some(mount_point) = left.split(' ').nth(4) else {
            continue;
        };
        let Some(fs_type) = right.split(' ').next() else {
            continue;
        };
        let mount_point = mount_point.replace("\\040", " ");
        if path.starts_with(&mount_point) && best.as_ref().is_none_or(|(len, _)| mount_point.len() >= *len) {
            best = Some((mount_point.len(), fs_type.to_string()));
        }
    }
    best.map(|(_, t)| t)
}

/// Whether `fs_type` is a network filesystem or a FUSE mount (sshfs and friends).
pub fn is_network(fs_type: &str) -> bool {
    fs_type.starts_with("fuse.") || NETWORK_TYPES.contains(&fs_type)
}

/// The network filesystem type under `dir`, if it is on one.
pub fn network_filesystem(dir: &Path) -> Option<String> {
    let dir = dir.canonicalize().ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_type(&mountinfo, &dir).filter(|t| is_network(t))
}

/// Creates and removes a probe file: the honest test of "this directory is usable".
pub fn probe_writable(dir: &Path) -> Result<(), String> {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    std::fs::write(&probe, b"ok").map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    std::fs::remove_file(&probe).map_err(|e| format!("cannot remove from {}: {e}", dir.display()))
}

/// Writes `bytes` as `dir/name` whole or not at all: into a hidden partial file, then renamed
/// into place. The file's bytes and its name are on disk before this returns, so a database
/// commit that names the file after it cannot outlive it in a power cut.
pub fn write_whole(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let partial = dir.join(format!(".{name}.partial"));
    let mut file = std::fs::File::create(&partial)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    drop(file);
    std::fs::rename(&partial, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Makes the names in `dir` (files created, renamed or removed there) durable.
/// The file a restore keeps in the data folder from before it moves the current data aside until
/// its end (done or rolled back): while it is there, a restore was cut short (a power cut, a kill)
/// and the database may be missing or partial, so nothing opens the folder as if it were whole.
pub const RESTORE_MARKER: &str = "RESTORE-IN-PROGRESS";

/// Why `data_dir` must not be opened, when a restore into it did not finish: the marker's path
/// and what it says to do.
pub fn unfinished_restore(data_dir: &Path) -> Option<String> {
    let marker = data_dir.join(RESTORE_MARKER);
    let text = std::fs::read_to_string(&marker).ok()?;
    Some(format!("a restore into {} did not finish ({}): {}", data_dir.display(), marker.display(), text.trim()))
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Free and total bytes of the filesystem holding `dir` (free: what an unprivileged user may use).
pub fn space(dir: &Path) -> Option<(u64, u64)> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    Some((stat.f_bavail.saturating_mul(stat.f_frsize), stat.f_blocks.saturating_mul(stat.f_frsize)))
}

/// Percent of the filesystem under `dir` in use (as `df` counts it).
pub fn usage_percent(dir: &Path) -> Option<f64> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    let used = stat.f_blocks.saturating_sub(stat.f_bfree) as f64;
    let usable = used + stat.f_bavail as f64;
    (usable > 0.0).then(|| used * 100.0 / usable)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /srv/data rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2
41 22 0:36 / /srv/data/local rw shared:21 - xfs /dev/sdb1 rw
42 22 0:37 / /mnt/remote\\040box rw shared:22 - fuse.sshfs me@host:/ rw
";

    #[test]
    fn the_longest_mount_point_wins() {
        assert_eq!(mount_type(MOUNTINFO, Path::new("/srv/data/db")).as_deref(), Some("nfs4"));
        assert_eq!(mount_type(MOUNTINFO, Path::new("/srv/data/local/db")).as_deref(), Some("xfs"));
        assert_eq!(mount_type(MOUNTINFO, Path::new("/home/me")).as_deref(), Some("ext4"));
        assert_eq!(mount_type(MOUNTINFO, Path::new("/mnt/remote box/x")).as_deref(), Some("fuse.sshfs"));
    }

    #[test]
    fn network_types_are_recognised() {
        for t in ["nfs", "nfs4", "cifs", "smb3", "9p", "fuse.sshfs"] {
            assert!(is_network(t), "{t}");
        }
        for t in ["ext4", "xfs", "btrfs", "tmpfs", "overlay"] {
            assert!(!is_network(t), "{t}");
        }
    }
}
