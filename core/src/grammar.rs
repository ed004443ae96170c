//! The grammar of what users type: the values of the node agent's flags, parsed and judged once
//! for every front-end (the `kubeboot` CLI, the C and Go agents, a firmware's provisioning). A
//! value the grammar refuses is a typed [`Error`], and [`write_refusal`] writes the one line every
//! front-end prints for it (they exit with status 2, a usage error):
//!
//! ```text
//! --wait "5x": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)
//! ```
//!
//! | value | grammar | refused as |
//! |---|---|---|
//! | a duration (`--wait`, `--rotation-wait`, `--ca-refresh-interval`, `--timeout`; the approver's `--node-wait`, `--leader-elect-lease-duration`, `--leader-elect-renew-grace`) | `0`, or one or more `<digits><unit>` with units `h`, `m`, `s` (`90s`, `10m`, `1h30m`), whole seconds | [`Error::InvalidDuration`] |
//! | the approver's `--max-expiration` | a duration of at least 600 s (the API's minimum `expirationSeconds`) and at most `u32::MAX` seconds | [`Error::InvalidDuration`], [`Error::InvalidExpirationSeconds`] |
//! | the approver's `--dns-pattern` | a DNS name with `{node}` exactly once, after an optional leading `*.` label ([`DnsPattern`]) | [`Error::InvalidDnsPattern`] |
//! | the approver's `--allowed-key-types` | `ecdsa-p256`, `ecdsa-p384`, `rsa-<min bits>` (1024–4096), comma-separated, each at most once ([`KeyPolicy`]) | [`Error::InvalidKeyPolicy`] |
//! | `--key` of the agent | `pkcs11:<RFC 7512 URI of a token>` (no object, no PIN in it) or `tpm:` | [`Error::InvalidKeyReference`] |
//! | `--ip` | an IPv4 or IPv6 literal ([`crate::csr::parse_ip`]) | [`Error::InvalidIpAddress`] |
//! | `--metrics-bind-address` (the agents' and the approver's) | `IPv4:port` or `[IPv6]:port` | [`Error::InvalidAddress`] |
//!
//! Responses are read up to [`MAX_RESPONSE`] bytes by every front-end; a longer one is a
//! transport error of that name ([`RESPONSE_TOO_LARGE`]), never a truncated body.

use core::fmt;
use core::net::{IpAddr, SocketAddr};

use crate::error::{Error, Result};
use crate::keyref::Device;
use crate::policy::MIN_EXPIRATION_SECONDS;
use crate::policy::serving::{DnsPattern, KeyPolicy};

/// The most bytes of one response (or one watch stream) a front-end reads.
pub const MAX_RESPONSE: usize = 1024 * 1024;
/// What a front-end tells the agent ([`crate::agent::Agent::on_transport_error`]) when a
/// response is longer than [`MAX_RESPONSE`].
pub const RESPONSE_TOO_LARGE: &str = "the response is larger than 1 MiB";

/// A duration in whole seconds: `0`, or one or more `<digits><unit>` (`h`, `m`, `s`), as the
/// kubelet's flags write them (`90s`, `10m`, `1h30m`). Fractions, other units, signs and spaces
/// are [`Error::InvalidDuration`], and so is a total past `i64::MAX` seconds.
pub fn duration(text: &str) -> Result<i64> {
    if text == "0" {
        return Ok(0);
    }
    let (mut total, mut n, mut digits, mut parts) = (0i64, 0i64, 0usize, 0usize);
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(i64::from(d)))
                .ok_or(Error::InvalidDuration)?;
            digits += 1;
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(Error::InvalidDuration),
        };
        if digits == 0 {
            return Err(Error::InvalidDuration);
        }
        total =
            n.checked_mul(unit).and_then(|v| total.checked_add(v)).ok_or(Error::InvalidDuration)?;
        (n, digits, parts) = (0, 0, parts + 1);
    }
    if digits > 0 || parts == 0 {
        return Err(Error::InvalidDuration);
    }
    Ok(total)
}

/// The agent's `--key`: where its new keys are made. `pkcs11:<URI>` names a token (its
/// `module-path`, its `pin-source`; no `object=`, no PIN in the URI) and `tpm:` the TPM; the
/// result is the device name for [`crate::agent::Config::key_device`]. A file (the agent makes
/// its own keys) or `tpm:<file>` (the agent keeps its TPM keys in the cert dir) is refused:
/// [`Error::InvalidKeyReference`], as is any URI [`Device::parse`] refuses.
pub fn key_device(text: &str) -> Result<&str> {
    let device = match text.strip_prefix("tpm:") {
        Some("") => "tpm",
        Some(_) => return Err(Error::InvalidKeyReference),
        None if text.starts_with("pkcs11:") => text,
        None => return Err(Error::InvalidKeyReference),
    };
    Device::parse(device)?;
    Ok(device)
}

/// A `--ip` value.
pub fn ip(text: &str) -> Result<IpAddr> {
    crate::csr::parse_ip(text)
}

/// A listening address: `IPv4:port` or `[IPv6]:port` (no host name: the agent resolves nothing).
pub fn bind_address(text: &str) -> Result<SocketAddr> {
    text.parse().map_err(|_| Error::InvalidAddress)
}

/// The serving approver's `--max-expiration`: a [`duration`] of at least
/// [`MIN_EXPIRATION_SECONDS`] (below it no CSR could be approved:
/// [`Error::InvalidExpirationSeconds`]), in seconds as `expirationSeconds` counts them (past
/// `u32::MAX`: [`Error::InvalidDuration`]).
pub fn max_expiration(text: &str) -> Result<u32> {
    let secs = u32::try_from(duration(text)?).map_err(|_| Error::InvalidDuration)?;
    if secs < MIN_EXPIRATION_SECONDS {
        return Err(Error::InvalidExpirationSeconds);
    }
    Ok(secs)
}

/// The serving approver's `--dns-pattern` ([`DnsPattern::parse`]).
pub fn dns_pattern(text: &str) -> Result<DnsPattern<'_>> {
    DnsPattern::parse(text)
}

/// The serving approver's `--allowed-key-types` ([`KeyPolicy::parse`]).
pub fn key_policy(text: &str) -> Result<KeyPolicy> {
    KeyPolicy::parse(text)
}

/// What the grammar says of a refused value, after its reason's name: how to write it.
fn how(e: Error) -> &'static str {
    match e {
        Error::InvalidDuration => "not a duration (like 90s, 10m, 1h30m, 0)",
        Error::InvalidKeyReference => {
            "not a device for the agent's keys (pkcs11:<token URI with module-path, no object, \
             no PIN> or tpm:; the agent makes its own keys)"
        }
        Error::InvalidIpAddress => "not an IP address (like 10.0.0.7 or fd00::7)",
        Error::InvalidAddress => "not an address to listen on (like 127.0.0.1:9101 or [::1]:9101)",
        Error::InvalidExpirationSeconds => "below the API's minimum expirationSeconds (10m)",
        Error::InvalidDnsPattern => {
            "not a DNS name with {node} in it exactly once (like {node}.nodes.example.com or \
             *.{node}.example.com)"
        }
        Error::InvalidKeyPolicy => {
            "not a list of ecdsa-p256, ecdsa-p384, rsa-<min bits 1024..4096> (like \
             ecdsa-p256,rsa-2048)"
        }
        other => other.message(),
    }
}

/// Write the line every front-end prints for `value` of `flag` refused with `e`:
/// `<flag> "<value>": <reason name>: <how to write it>`.
pub fn write_refusal(out: &mut dyn fmt::Write, flag: &str, value: &str, e: Error) -> fmt::Result {
    write!(out, "{flag} {value:?}: {}: {}", e.name(), how(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        for (text, secs) in
            [("0", 0), ("90s", 90), ("10m", 600), ("1h30m", 5400), ("24h", 86_400), ("1m1s", 61)]
        {
            assert_eq!(duration(text), Ok(secs), "{text}");
        }
        for text in ["", "5", "5x", "1.5h", "-1m", "h", "1h30", " 1m", "300ms", "1 m"] {
            assert_eq!(duration(text), Err(Error::InvalidDuration), "{text}");
        }
        assert_eq!(duration("99999999999999999999s"), Err(Error::InvalidDuration));
        assert_eq!(duration("9223372036854775807h"), Err(Error::InvalidDuration));
    }

    #[test]
    fn key_devices_and_addresses() {
        let uri = "pkcs11:token=node?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=/p";
        assert_eq!(key_device(uri), Ok(uri));
        assert_eq!(key_device("tpm:"), Ok("tpm"));
        for bad in ["key.pem", "tpm:/var/node.pem", "pkcs11:token=a;object=k?module-path=/m.so"] {
            assert_eq!(key_device(bad), Err(Error::InvalidKeyReference), "{bad}");
        }
        assert!(ip("fd00::7").is_ok());
        assert_eq!(ip("300.1.1.1"), Err(Error::InvalidIpAddress));
        assert_eq!(bind_address("127.0.0.1:9101").map(|a| a.port()), Ok(9101));
        assert!(bind_address("[::1]:9101").is_ok());
        assert_eq!(bind_address("localhost:9101"), Err(Error::InvalidAddress));
    }

    #[test]
    fn the_approvers_values() {
        assert_eq!(max_expiration("8760h"), Ok(31_536_000));
        assert_eq!(max_expiration("10m"), Ok(600));
        assert_eq!(max_expiration("599s"), Err(Error::InvalidExpirationSeconds));
        assert_eq!(max_expiration("0"), Err(Error::InvalidExpirationSeconds));
        assert_eq!(max_expiration("1193047h"), Err(Error::InvalidDuration));
        assert_eq!(max_expiration("600"), Err(Error::InvalidDuration));
        assert!(dns_pattern("*.{node}.example.com").unwrap().matches("n1", "a.n1.example.com"));
        assert_eq!(dns_pattern("example.com").err(), Some(Error::InvalidDnsPattern));
        let keys = KeyPolicy { p256: true, p384: false, rsa_min_bits: Some(3072) };
        assert_eq!(key_policy("ecdsa-p256,rsa-3072"), Ok(keys));
        assert_eq!(key_policy("ed25519"), Err(Error::InvalidKeyPolicy));
        let mut s = heapless::String::<200>::new();
        write_refusal(&mut s, "--dns-pattern", "example.com", Error::InvalidDnsPattern).unwrap();
        assert!(
            s.starts_with("--dns-pattern \"example.com\": invalid-dns-pattern: not a DNS name")
        );
    }

    #[test]
    fn one_line_per_refusal() {
        let mut s = heapless::String::<160>::new();
        write_refusal(&mut s, "--wait", "5x", Error::InvalidDuration).unwrap();
        assert_eq!(
            s.as_str(),
            "--wait \"5x\": invalid-duration: not a duration (like 90s, 10m, 1h30m, 0)"
        );
    }
}
