//! Lexical path handling for the agent (Unix paths, as the kubelet's Go code handles them): the
//! paths a kubeconfig names are resolved against the kubeconfig's directory, relative inputs
//! against the caller's working directory, and every result is cleaned like Go's
//! `filepath.Clean` (no symlink resolution, no file system access).

use crate::error::{Error, Result};

/// Longest path the agent keeps (bytes).
pub const MAX_PATH: usize = 1024;

/// A path owned by the agent (at most `L` bytes, [`MAX_PATH`] by default).
pub type PathBuf<const L: usize = MAX_PATH> = heapless::String<L>;

/// Whether `p` is absolute.
pub fn is_absolute(p: &str) -> bool {
    p.starts_with('/')
}

/// `p` cleaned lexically into `out` (Go `filepath.Clean`): repeated slashes collapse, `.`
/// elements go, `..` removes the element before it (and stays at the root of an absolute
/// path), no trailing slash; an empty result is `.`. [`Error::TooLarge`] past `out`'s capacity.
pub fn clean_into<const L: usize>(p: &str, out: &mut PathBuf<L>) -> Result<()> {
    // Go's algorithm: `dotdot` is where `..` can no longer backtrack.
    out.clear();
    let rooted = is_absolute(p);
    let mut dotdot = 0usize;
    if rooted {
        out.push('/').map_err(|_| Error::TooLarge)?;
        dotdot = 1;
    }
    for elem in p.split('/') {
        match elem {
            "" | "." => {}
            ".." => {
                if out.len() > dotdot {
                    // Back to the separator before the last element (or to `dotdot`).
                    let b = out.as_bytes();
                    let mut w = out.len() - 1;
                    while w > dotdot && b.get(w) != Some(&b'/') {
                        w -= 1;
                    }
                    out.truncate(w);
                } else if !rooted {
                    if !out.is_empty() {
                        out.push('/').map_err(|_| Error::TooLarge)?;
                    }
                    out.push_str("..").map_err(|_| Error::TooLarge)?;
                    dotdot = out.len();
                }
            }
            e => {
                if (rooted && out.len() != 1) || (!rooted && !out.is_empty()) {
                    out.push('/').map_err(|_| Error::TooLarge)?;
                }
                out.push_str(e).map_err(|_| Error::TooLarge)?;
            }
        }
    }
    if out.is_empty() {
        out.push('.').map_err(|_| Error::TooLarge)?;
    }
    Ok(())
}

/// `p` made absolute against `base` (an absolute directory) and cleaned, into `out`.
pub fn resolve_into<const L: usize>(base: &str, p: &str, out: &mut PathBuf<L>) -> Result<()> {
    if is_absolute(p) {
        return clean_into(p, out);
    }
    let mut joined = PathBuf::<L>::new();
    joined.push_str(base).map_err(|_| Error::TooLarge)?;
    joined.push('/').map_err(|_| Error::TooLarge)?;
    joined.push_str(p).map_err(|_| Error::TooLarge)?;
    clean_into(&joined, out)
}

/// The directory of a cleaned absolute path (Go `filepath.Dir`): `/a/b` → `/a`, `/a` → `/`.
pub fn dir(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) => "/",
        Some(i) => p.get(..i).unwrap_or("/"),
        None => ".",
    }
}

/// `<dir>/<a><b><c>` into `out` (`dir` absolute and clean).
pub fn child_into<const L: usize>(dir: &str, parts: &[&str], out: &mut PathBuf<L>) -> Result<()> {
    out.clear();
    out.push_str(dir).map_err(|_| Error::TooLarge)?;
    if !dir.ends_with('/') {
        out.push('/').map_err(|_| Error::TooLarge)?;
    }
    for p in parts {
        out.push_str(p).map_err(|_| Error::TooLarge)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(p: &str) -> PathBuf {
        let mut out: PathBuf = PathBuf::new();
        clean_into(p, &mut out).unwrap();
        out
    }

    #[test]
    fn clean_like_go() {
        // Cases from Go's path/filepath Clean tests (cleantests).
        for (input, want) in [
            ("abc", "abc"),
            ("abc/def", "abc/def"),
            ("a/b/c", "a/b/c"),
            (".", "."),
            ("..", ".."),
            ("../..", "../.."),
            ("../../abc", "../../abc"),
            ("/abc", "/abc"),
            ("/", "/"),
            ("", "."),
            ("abc/", "abc"),
            ("abc/def/", "abc/def"),
            ("/abc/", "/abc"),
            ("//abc", "/abc"),
            ("///abc", "/abc"),
            ("//abc//", "/abc"),
            ("abc//", "abc"),
            ("abc//def//ghi", "abc/def/ghi"),
            ("//abc", "/abc"),
            ("abc/./def", "abc/def"),
            ("/./abc/def", "/abc/def"),
            ("abc/.", "abc"),
            ("abc/def/ghi/../jkl", "abc/def/jkl"),
            ("abc/def/../ghi/../jkl", "abc/jkl"),
            ("abc/def/..", "abc"),
            ("abc/def/../..", "."),
            ("/abc/def/../..", "/"),
            ("abc/def/../../..", ".."),
            ("/abc/def/../../..", "/"),
            ("abc/def/../../../ghi/jkl/../../../mno", "../../mno"),
            ("/../abc", "/abc"),
            ("abc/./../def", "def"),
            ("abc//./../def", "def"),
            ("abc/../../././../def", "../../def"),
        ] {
            assert_eq!(clean(input).as_str(), want, "{input:?}");
        }
    }

    #[test]
    fn resolve_and_dir() {
        let mut out: PathBuf = PathBuf::new();
        resolve_into("/etc/kubernetes", "pki/ca.crt", &mut out).unwrap();
        assert_eq!(out.as_str(), "/etc/kubernetes/pki/ca.crt");
        resolve_into("/etc/kubernetes", "../ca.crt", &mut out).unwrap();
        assert_eq!(out.as_str(), "/etc/ca.crt");
        resolve_into("/etc/kubernetes", "/abs//x/./y", &mut out).unwrap();
        assert_eq!(out.as_str(), "/abs/x/y");
        assert_eq!(dir("/etc/kubernetes/kubelet.conf"), "/etc/kubernetes");
        assert_eq!(dir("/kubelet.conf"), "/");
        assert_eq!(dir("/"), "/");
        child_into("/var/lib/kubelet/pki", &["kubelet-client", "-current.pem"], &mut out).unwrap();
        assert_eq!(out.as_str(), "/var/lib/kubelet/pki/kubelet-client-current.pem");
        child_into("/", &["x"], &mut out).unwrap();
        assert_eq!(out.as_str(), "/x");
        let long = "a/".repeat(MAX_PATH);
        assert_eq!(clean_into(&long, &mut out), Err(Error::TooLarge));
    }
}
