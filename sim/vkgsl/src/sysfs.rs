//! The sysfs files a KFD client reads before its first ioctl: the KFD topology
//! (`/sys/devices/virtual/kfd/kfd/topology/...`: `nodes/N/gpu_id`, `nodes/N/properties`) and the
//! AMD GPU's IP discovery (`/sys/class/drm/renderD129/device/ip_discovery/die/0/<hwid>/0/...`),
//! the text [`SimKfd::sysfs_for`] gives.
//!
//! At the first use of such a path the tree is written to a private directory
//! (`$TMPDIR/hcq-vkgsl-sysfs.<pid>.<n>`, mode 0700, files read-only), and paths under those two
//! prefixes are redirected there by the library's `open` family, `opendir`, the `stat` family and
//! `access`/`faccessat` ([`crate::interpose`]); every other path is untouched (one comparison of
//! its first five bytes). The directory is removed when the process exits through `exit`
//! (`atexit`), and directories left by processes that no longer exist are removed when the next
//! one is made. A tree that cannot be written is said once on stderr, and the paths are then the
//! system's own.

use hcq_sim_amd::SimKfd;
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The KFD's sysfs directory.
pub const KFD_PREFIX: &[u8] = b"/sys/devices/virtual/kfd";
/// The AMD render node's sysfs directory.
fn render_prefix() -> &'static [u8] {
    static P: OnceLock<Vec<u8>> = OnceLock::new();
    P.get_or_init(|| format!("/sys/class/drm/renderD{}", crate::amd::RENDER_MINOR).into_bytes())
}

const DIR_NAME: &str = "hcq-vkgsl-sysfs";

/// Whether `path` is `prefix` or below it.
fn under(path: &[u8], prefix: &[u8]) -> bool {
    path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// Where `path` is read from instead, if it is one of the virtual files or directories (or below
/// their prefixes).
pub fn redirect(path: &CStr) -> Option<CString> {
    let p = path.to_bytes();
    if !p.starts_with(b"/sys/") || !(under(p, KFD_PREFIX) || under(p, render_prefix())) {
        return None;
    }
    let root = root()?;
    let mut out = root.as_os_str().as_bytes().to_vec();
    out.extend_from_slice(p);
    CString::new(out).ok()
}

/// The private tree, written at the first call (`None`: it could not be).
fn root() -> Option<&'static Path> {
    static ROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    ROOT.get_or_init(|| match materialize() {
        Ok(p) => {
            crate::interpose::trace(format_args!("virtual sysfs at {}", p.display()));
            Some(p)
        }
        Err(e) => {
            eprintln!("hcq-vkgsl: cannot write the virtual AMD sysfs tree ({e}): /sys paths are the system's");
            None
        }
    })
    .as_deref()
}

static CREATOR: OnceLock<(u32, PathBuf)> = OnceLock::new();

extern "C" fn remove_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Some((pid, dir)) = CREATOR.get()
            && *pid == std::process::id()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
}

/// Remove the trees of processes that no longer exist.
fn remove_stale(tmp: &Path) {
    let Ok(rd) = std::fs::read_dir(tmp) else { return };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_NAME)).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let gone =
            unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn materialize() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let tmp = std::env::temp_dir();
    remove_stale(&tmp);
    let pid = std::process::id();
    let mut n = 0u32;
    let dir = loop {
        let d = tmp.join(format!("{DIR_NAME}.{pid}.{n}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => break d,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    };
    let _ = CREATOR.set((pid, dir.clone()));
    // SAFETY: registers an `extern "C" fn()` that never unwinds; no preconditions.
    unsafe { libc::atexit(remove_at_exit) };
    for (path, text) in SimKfd::sysfs_for(crate::amd::RENDER_MINOR) {
        let rel = path.trim_start_matches('/');
        let file = dir.join(OsStr::new(rel));
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&file, text)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_prefixes_are_redirected() {
        assert!(redirect(c"/sys/devices/virtual/kfd/kfd/topology/nodes").is_some());
        assert!(redirect(c"/sys/devices/virtual/kfd").is_some());
        assert!(redirect(c"/sys/class/drm/renderD129/device/ip_discovery/die/0").is_some());
        assert!(redirect(c"/sys/class/drm/renderD1290").is_none());
        assert!(redirect(c"/sys/class/drm/renderD128/device").is_none());
        assert!(redirect(c"/sys/devices/virtual/kfdx").is_none());
        assert!(redirect(c"/tmp/x").is_none());
        let nodes = redirect(c"/sys/devices/virtual/kfd/kfd/topology/nodes").unwrap();
        let mut names: Vec<String> = std::fs::read_dir(Path::new(OsStr::from_bytes(nodes.to_bytes())))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["0", "1"]);
        let props = redirect(c"/sys/devices/virtual/kfd/kfd/topology/nodes/1/properties").unwrap();
        let text = std::fs::read_to_string(OsStr::from_bytes(props.to_bytes())).unwrap();
        assert!(text.contains("drm_render_minor 129\n") && text.contains("gfx_target_version 110000\n"), "{text}");
    }
}
