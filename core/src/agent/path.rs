//! Lexical path handling for the agent (Unix paths, as the kubelet's Go code handles them): the
//! paths a kubeconfig names are resolved against the kubeconfig's directory, relative inputs
//! against the caller's working directory, and every result is cleaned like Go's
//! `filepath.Clean` (no symlink resolution, no file system access).

use crate::buf::Text;
use crate::error::Result;

/// Whether `p` is absolute.
pub(crate) fn is_absolute(p: &str) -> bool {
    p.starts_with('/')
}

/// Go's `filepath.Clean` over a sequence of elements: `dotdot` is where `..` can no longer
/// backtrack.
struct Clean {
    rooted: bool,
    dotdot: usize,
}

impl Clean {
    fn start(out: &mut Text<'_>, rooted: bool) -> Result<Self> {
        out.clear();
        if rooted {
            out.push('/')?;
        }
        Ok(Clean { rooted, dotdot: usize::from(rooted) })
    }

    fn elem(&mut self, out: &mut Text<'_>, elem: &str) -> Result<()> {
        match elem {
            "" | "." => {}
            ".." => {
                if out.len() > self.dotdot {
                    // Back to the separator before the last element (or to `dotdot`).
                    let b = out.as_bytes();
                    let mut w = out.len() - 1;
                    while w > self.dotdot && b.get(w) != Some(&b'/') {
                        w -= 1;
                    }
                    out.truncate(w);
                } else if !self.rooted {
                    if !out.is_empty() {
                        out.push('/')?;
                    }
                    out.push_str("..")?;
                    self.dotdot = out.len();
                }
            }
            e => {
                if (self.rooted && out.len() != 1) || (!self.rooted && !out.is_empty()) {
                    out.push('/')?;
                }
                out.push_str(e)?;
            }
        }
        Ok(())
    }

    fn finish(out: &mut Text<'_>) -> Result<()> {
        if out.is_empty() {
            out.push('.')?;
        }
        Ok(())
    }
}

/// `p` cleaned lexically into `out` (Go `filepath.Clean`): repeated slashes collapse, `.`
/// elements go, `..` removes the element before it (and stays at the root of an absolute
/// path), no trailing slash; an empty result is `.`. [`Error::TooLarge`] past `out`'s capacity.
pub(crate) fn clean_into(p: &str, out: &mut Text<'_>) -> Result<()> {
    let mut c = Clean::start(out, is_absolute(p))?;
    for e in p.split('/') {
        c.elem(out, e)?;
    }
    Clean::finish(out)
}

/// `p` made absolute against `base` (an absolute directory) and cleaned, into `out`: Go's
/// `filepath.Clean(base + "/" + p)`, element by element.
pub(crate) fn resolve_into(base: &str, p: &str, out: &mut Text<'_>) -> Result<()> {
    if is_absolute(p) {
        return clean_into(p, out);
    }
    let mut c = Clean::start(out, is_absolute(base))?;
    for e in base.split('/').chain(p.split('/')) {
        c.elem(out, e)?;
    }
    Clean::finish(out)
}

/// The directory of a cleaned absolute path (Go `filepath.Dir`): `/a/b` → `/a`, `/a` → `/`.
pub(crate) fn dir(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) => "/",
        Some(i) => p.get(..i).unwrap_or("/"),
        None => ".",
    }
}

/// `<dir>/<a><b><c>` into `out` (`dir` absolute and clean).
pub(crate) fn child_into(dir: &str, parts: &[&str], out: &mut Text<'_>) -> Result<()> {
    out.clear();
    out.push_str(dir)?;
    if !dir.ends_with('/') {
        out.push('/')?;
    }
    for p in parts {
        out.push_str(p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn clean(p: &str) -> heapless::String<256> {
        let mut mem = [0u8; 256];
        let mut out = Text::new(&mut mem);
        clean_into(p, &mut out).unwrap();
        heapless::String::try_from(out.as_str()).unwrap()
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
        let mut mem = [0u8; 256];
        let mut out = Text::new(&mut mem);
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
        let long = "a/".repeat(256);
        assert_eq!(clean_into(&long, &mut out), Err(Error::TooLarge));
        // Joined element by element: a relative path that climbs out of the base.
        resolve_into("/var//lib/./kubelet", "../../etc/x/..", &mut out).unwrap();
        assert_eq!(out.as_str(), "/var/etc");
        resolve_into("/", "..", &mut out).unwrap();
        assert_eq!(out.as_str(), "/");
    }
}
