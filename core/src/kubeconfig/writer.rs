//! Kubeconfig writers: the kubelet's node kubeconfig (bootstrap.go
//! writeKubeconfigFromBootstrapping) and kubeadm's bootstrap kubeconfig (kubeadm
//! cmd/kubeadm/app/util/kubeconfig/kubeconfig.go `CreateWithToken`). Keys are written in Go's
//! (alphabetical) order.

use super::plain_is_not_string;
use crate::error::Result;
use crate::out::{Sink, put_base64, write_measured};

/// Cluster name in the node kubeconfig.
pub const NODE_CLUSTER: &str = "default-cluster";
/// User name in the node kubeconfig.
pub const NODE_USER: &str = "default-auth";
/// Context name in the node kubeconfig.
pub const NODE_CONTEXT: &str = "default-context";
/// The combined cert+key file the node kubeconfig points at (in the cert dir).
pub const CLIENT_PEM_FILE: &str = "kubelet-client-current.pem";
/// kubeadm's user name in the bootstrap kubeconfig (`TokenUser`).
pub const BOOTSTRAP_USER: &str = "tls-bootstrap-token-user";

/// Input of [`write_node_kubeconfig`]: what the kubelet copies from the bootstrap kubeconfig.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeKubeconfig<'a> {
    /// The API server URL (bootstrap kubeconfig's `server`).
    pub server: &'a str,
    /// The CA file path, already made absolute by the caller (relative paths resolve against
    /// the bootstrap kubeconfig's directory). Empty or `None` → no file.
    pub certificate_authority: Option<&'a str>,
    /// The CA PEM bytes; written as `certificate-authority-data` **only** when there is no CA
    /// file.
    pub certificate_authority_data: Option<&'a [u8]>,
    /// `insecure-skip-tls-verify` (written only when true).
    pub insecure_skip_tls_verify: bool,
    /// The cert dir (`--cert-dir`, default `/var/lib/kubelet/pki`); the cert and key path is
    /// `<cert_dir>/kubelet-client-current.pem` (trailing slashes trimmed, like Go's
    /// `filepath.Join`; a relative cert dir is written relative, as upstream does).
    pub cert_dir: &'a str,
}

/// Input of [`write_bootstrap_kubeconfig`] (kubeadm's `CreateWithToken`).
#[derive(Clone, Copy)]
pub struct BootstrapKubeconfig<'a> {
    /// The API server URL.
    pub server: &'a str,
    /// The cluster name (kubeadm uses the name from cluster-info, often `kubernetes` or `""`).
    pub cluster_name: &'a str,
    /// The CA PEM bytes (`certificate-authority-data`; omitted when empty).
    pub certificate_authority_data: &'a [u8],
    /// The bootstrap token `id.secret`.
    pub token: &'a str,
}

impl core::fmt::Debug for BootstrapKubeconfig<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BootstrapKubeconfig")
            .field("server", &self.server)
            .field("cluster_name", &self.cluster_name)
            .field("certificate_authority_data_len", &self.certificate_authority_data.len())
            .field("token", &"<redacted>")
            .finish()
    }
}

/// Whether `s` can be written as a YAML plain scalar and read back as the same string.
fn is_safe_plain(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&first) = b.first() else { return false };
    if !(first.is_ascii_alphanumeric() || first == b'/' || first == b'.') {
        return false;
    }
    if !b.iter().all(|&c| c.is_ascii_alphanumeric() || b"/._:@+=-".contains(&c)) {
        return false;
    }
    if b.last() == Some(&b':') {
        return false;
    }
    if first.is_ascii_digit() && !b.iter().any(u8::is_ascii_alphabetic) {
        return false;
    }
    // Timestamps (2001-12-14...): kubectl keeps them as strings, other YAML readers may not.
    if b.len() >= 5 && b.iter().take(4).all(u8::is_ascii_digit) && b.get(4) == Some(&b'-') {
        return false;
    }
    !plain_is_not_string(s)
}

/// Write a string scalar: plain when safe, else double-quoted with escapes.
fn put_str(sink: &mut dyn Sink, s: &str) {
    if is_safe_plain(s) {
        sink.put(s.as_bytes());
    } else {
        put_quoted(sink, &[s]);
    }
}

/// Write the concatenation of `parts` as one double-quoted scalar.
fn put_quoted(sink: &mut dyn Sink, parts: &[&str]) {
    sink.put(b"\"");
    for s in parts {
        let bytes = s.as_bytes();
        let mut run = 0;
        for (i, c) in s.char_indices() {
            let esc: Option<&[u8]> = match c {
                '"' => Some(b"\\\""),
                '\\' => Some(b"\\\\"),
                _ => None,
            };
            let needs_u = (c as u32) < 0x20
                || ('\u{7f}'..='\u{9f}').contains(&c)
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}');
            if esc.is_none() && !needs_u {
                continue;
            }
            sink.put(bytes.get(run..i).unwrap_or(&[]));
            run = i + c.len_utf8();
            match esc {
                Some(e) => sink.put(e),
                None => {
                    let v = c as u32;
                    let hex = b"0123456789abcdef";
                    let mut u = [b'\\', b'u', 0, 0, 0, 0];
                    for (k, d) in u.iter_mut().skip(2).enumerate() {
                        let nibble = (v >> (12 - 4 * k)) & 0xf;
                        *d = hex.get(nibble as usize).copied().unwrap_or(b'0');
                    }
                    sink.put(&u);
                }
            }
        }
        sink.put(bytes.get(run..).unwrap_or(&[]));
    }
    sink.put(b"\"");
}

fn kv(sink: &mut dyn Sink, indent: &str, key: &str, value: &str) {
    sink.put(indent.as_bytes());
    sink.put(key.as_bytes());
    sink.put(b": ");
    put_str(sink, value);
    sink.put(b"\n");
}

fn kv_base64(sink: &mut dyn Sink, indent: &str, key: &str, data: &[u8]) {
    sink.put(indent.as_bytes());
    sink.put(key.as_bytes());
    sink.put(b": ");
    put_base64(sink, data);
    sink.put(b"\n");
}

/// Write the node kubeconfig the kubelet writes after bootstrapping (bootstrap.go
/// writeKubeconfigFromBootstrapping) into `out`; returns the length. Only `server`,
/// `insecure-skip-tls-verify` and the CA are carried over; `tls-server-name`, tokens etc. are never
/// written.
///
/// ```yaml
/// apiVersion: v1
/// clusters:
/// - cluster:
///     certificate-authority: /etc/kubernetes/pki/ca.crt
///     server: https://10.0.0.1:6443
///   name: default-cluster
/// contexts:
/// - context:
///     cluster: default-cluster
///     namespace: default
///     user: default-auth
///   name: default-context
/// current-context: default-context
/// kind: Config
/// users:
/// - name: default-auth
///   user:
///     client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
///     client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
/// ```
pub fn write_node_kubeconfig(cfg: &NodeKubeconfig<'_>, out: &mut [u8]) -> Result<usize> {
    let ca_file = cfg.certificate_authority.filter(|f| !f.is_empty());
    let ca_data = if ca_file.is_none() {
        cfg.certificate_authority_data.filter(|d| !d.is_empty())
    } else {
        None
    };
    let dir = cfg.cert_dir.trim_end_matches('/');
    let dir = if dir.is_empty() && cfg.cert_dir.starts_with('/') { "/" } else { dir };
    write_measured(out, |s| {
        s.put(b"apiVersion: v1\nclusters:\n- cluster:\n");
        if let Some(f) = ca_file {
            kv(s, "    ", "certificate-authority", f);
        }
        if let Some(d) = ca_data {
            kv_base64(s, "    ", "certificate-authority-data", d);
        }
        if cfg.insecure_skip_tls_verify {
            s.put(b"    insecure-skip-tls-verify: true\n");
        }
        kv(s, "    ", "server", cfg.server);
        kv(s, "  ", "name", NODE_CLUSTER);
        s.put(b"contexts:\n- context:\n");
        kv(s, "    ", "cluster", NODE_CLUSTER);
        kv(s, "    ", "namespace", "default");
        kv(s, "    ", "user", NODE_USER);
        kv(s, "  ", "name", NODE_CONTEXT);
        kv(s, "", "current-context", NODE_CONTEXT);
        s.put(b"kind: Config\nusers:\n");
        kv(s, "- ", "name", NODE_USER);
        s.put(b"  user:\n");
        for key in ["client-certificate", "client-key"] {
            s.put(b"    ");
            s.put(key.as_bytes());
            s.put(b": ");
            put_path(s, dir);
            s.put(b"\n");
        }
        Ok(())
    })
}

/// Write `<dir>/kubelet-client-current.pem` as one scalar (plain when the directory is safe:
/// the file name part always is).
fn put_path(sink: &mut dyn Sink, dir: &str) {
    let sep = if dir.is_empty() || dir.ends_with('/') { "" } else { "/" };
    if dir.is_empty() || is_safe_plain(dir) {
        sink.put(dir.as_bytes());
        sink.put(sep.as_bytes());
        sink.put(CLIENT_PEM_FILE.as_bytes());
    } else {
        put_quoted(sink, &[dir, sep, CLIENT_PEM_FILE]);
    }
}

/// Write kubeadm's bootstrap kubeconfig (`CreateWithToken`): cluster `cluster_name` with
/// `server` and `certificate-authority-data`, user `tls-bootstrap-token-user` with the token,
/// context `tls-bootstrap-token-user@<cluster_name>` (current). Returns the length.
pub fn write_bootstrap_kubeconfig(cfg: &BootstrapKubeconfig<'_>, out: &mut [u8]) -> Result<usize> {
    write_measured(out, |s| {
        s.put(b"apiVersion: v1\nclusters:\n- cluster:\n");
        if !cfg.certificate_authority_data.is_empty() {
            kv_base64(s, "    ", "certificate-authority-data", cfg.certificate_authority_data);
        }
        kv(s, "    ", "server", cfg.server);
        kv(s, "  ", "name", cfg.cluster_name);
        s.put(b"contexts:\n- context:\n");
        kv(s, "    ", "cluster", cfg.cluster_name);
        kv(s, "    ", "user", BOOTSTRAP_USER);
        s.put(b"  name: ");
        put_context_name(s, cfg.cluster_name);
        s.put(b"\ncurrent-context: ");
        put_context_name(s, cfg.cluster_name);
        s.put(b"\nkind: Config\nusers:\n");
        kv(s, "- ", "name", BOOTSTRAP_USER);
        s.put(b"  user:\n");
        kv(s, "    ", "token", cfg.token);
        Ok(())
    })
}

/// `tls-bootstrap-token-user@<cluster>` as one scalar.
fn put_context_name(sink: &mut dyn Sink, cluster: &str) {
    if cluster.is_empty() || is_safe_plain(cluster) && !cluster.starts_with('.') {
        sink.put(BOOTSTRAP_USER.as_bytes());
        sink.put(b"@");
        sink.put(cluster.as_bytes());
    } else {
        put_quoted(sink, &[BOOTSTRAP_USER, "@", cluster]);
    }
}
