//! What an issued certificate must be ([`kubeboot_expected`]), shared by the verify functions
//! and the engine's configuration, and the SAN lists (`kubeboot_str` arrays) read from C.

use core::ffi::c_char;
use core::net::IpAddr;

use kb::csr::{self, Profile};

use crate::csr::{KUBEBOOT_PROFILE_CLIENT, KUBEBOOT_PROFILE_SERVING, kubeboot_str};
use crate::error::kubeboot_result;
use crate::macros::slice_from;

/// What an issued certificate must be: the node it names and the profile it was requested for
/// (for serving, with exactly these SANs). `kubeboot_verify_issued` and
/// `kubeboot_verify_issued_scratch` check a certificate against it. Our public key is not part
/// of it: the verify functions take it as a separate `spki` argument. Strings are UTF-8, not
/// NUL-terminated. Only read during the call it is passed to.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct kubeboot_expected {
    /// The node name (`CN=system:node:<node_name>`).
    pub node_name: *const c_char,
    /// Its length.
    pub node_name_len: usize,
    /// `KUBEBOOT_PROFILE_CLIENT` (EKU clientAuth, no SANs) or `KUBEBOOT_PROFILE_SERVING` (EKU
    /// serverAuth and exactly `dns_names` + `ip_addresses` as SANs).
    pub profile: u32,
    /// Serving only: the DNS names (not read for client).
    pub dns_names: *const kubeboot_str,
    /// Number of `dns_names`.
    pub dns_count: usize,
    /// Serving only: the IP addresses as text, `"10.0.0.1"` / `"fd00::1"` (not read for client).
    pub ip_addresses: *const kubeboot_str,
    /// Number of `ip_addresses`.
    pub ip_count: usize,
}

/// A [`kubeboot_expected`] after the NULL / UTF-8 / profile / SAN checks; it owns the parsed SAN
/// lists [`Expectation::profile`] borrows.
pub(crate) struct Expectation<'a> {
    /// The node name.
    pub(crate) node_name: &'a str,
    /// The SANs of the serving profile; `None` for client.
    serving: Option<Sans<'a>>,
}

impl Expectation<'_> {
    /// The profile as the core takes it.
    pub(crate) fn profile(&self) -> Profile<'_> {
        match &self.serving {
            Some(s) => Profile::Serving { dns: &s.dns, ips: &s.ips },
            None => Profile::Client,
        }
    }
}

impl kubeboot_expected {
    /// Check and borrow the fields: `NULL_PARAMETER` / `INVALID_UTF8` for the node name, then
    /// `INVALID_PARAMETER` for an unknown profile, then (serving only; the lists are not read
    /// for client) the errors of [`Sans::read`].
    pub(crate) fn read(&self) -> Result<Expectation<'_>, kubeboot_result> {
        // SAFETY: the caller guarantees a non-NULL `node_name` points to `node_name_len`
        // initialised bytes valid for the call.
        let node = unsafe { slice_from(self.node_name.cast::<u8>(), self.node_name_len) }?;
        let node_name = core::str::from_utf8(node).map_err(|_| kubeboot_result::InvalidUtf8)?;
        let serving = match self.profile {
            KUBEBOOT_PROFILE_CLIENT => None,
            KUBEBOOT_PROFILE_SERVING => {
                Some(Sans::read(self.dns_names, self.dns_count, self.ip_addresses, self.ip_count)?)
            }
            _ => return Err(kubeboot_result::InvalidParameter),
        };
        Ok(Expectation { node_name, serving })
    }
}

/// Serving SANs read from C: DNS names and parsed IP addresses, in the order given.
pub(crate) struct Sans<'a> {
    /// The DNS names.
    pub(crate) dns: heapless::Vec<&'a str, { csr::MAX_SANS }>,
    /// The IP addresses.
    pub(crate) ips: heapless::Vec<IpAddr, { csr::MAX_SANS }>,
}

impl<'a> Sans<'a> {
    /// Read `dns_count` names at `dns_names`, then `ip_count` addresses at `ip_addresses` (each
    /// list: `NULL_PARAMETER` for NULL with a count, `TOO_MANY_SANS` over [`csr::MAX_SANS`],
    /// then `NULL_PARAMETER` / `INVALID_UTF8` for an entry, `INVALID_IP_ADDRESS` for an address).
    ///
    /// The caller guarantees both arrays and their strings are valid for `'a` (the ABI's
    /// contract for the call).
    pub(crate) fn read(
        dns_names: *const kubeboot_str,
        dns_count: usize,
        ip_addresses: *const kubeboot_str,
        ip_count: usize,
    ) -> Result<Sans<'a>, kubeboot_result> {
        let mut sans = Sans { dns: heapless::Vec::new(), ips: heapless::Vec::new() };
        // SAFETY: the caller guarantees a non-NULL array points to `count` initialised
        // `kubeboot_str`s valid for `'a`.
        strs(unsafe { slice_from(dns_names, dns_count) }?, &mut sans.dns)?;
        // SAFETY: as above.
        let ip_items = unsafe { slice_from(ip_addresses, ip_count) }?;
        let mut text = heapless::Vec::<&str, { csr::MAX_SANS }>::new();
        strs(ip_items, &mut text)?;
        for s in text {
            let ip = csr::parse_ip(s).map_err(kubeboot_result::from)?;
            sans.ips.push(ip).map_err(|_| kubeboot_result::TooManySans)?;
        }
        Ok(sans)
    }
}

/// The strings of `items` (at most [`csr::MAX_SANS`], else `TOO_MANY_SANS` before any is read).
pub(crate) fn strs<'a>(
    items: &'a [kubeboot_str],
    out: &mut heapless::Vec<&'a str, { csr::MAX_SANS }>,
) -> Result<(), kubeboot_result> {
    if items.len() > csr::MAX_SANS {
        return Err(kubeboot_result::TooManySans);
    }
    for item in items {
        // SAFETY: the caller guarantees each non-NULL `data` points to `len` initialised bytes
        // valid for `'a`.
        let bytes = unsafe { slice_from(item.data.cast::<u8>(), item.len) }?;
        let s = core::str::from_utf8(bytes).map_err(|_| kubeboot_result::InvalidUtf8)?;
        out.push(s).map_err(|_| kubeboot_result::TooManySans)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use core::ptr::null;

    use super::*;

    fn s(text: &str) -> kubeboot_str {
        kubeboot_str { data: text.as_ptr().cast(), len: text.len() }
    }

    fn expected(profile: u32, dns: &[kubeboot_str], ips: &[kubeboot_str]) -> kubeboot_expected {
        kubeboot_expected {
            node_name: "node-1".as_ptr().cast(),
            node_name_len: 6,
            profile,
            dns_names: dns.as_ptr(),
            dns_count: dns.len(),
            ip_addresses: ips.as_ptr(),
            ip_count: ips.len(),
        }
    }

    fn err(x: &kubeboot_expected) -> kubeboot_result {
        x.read().err().unwrap_or(kubeboot_result::Ok)
    }

    #[test]
    fn serving_reads_the_sans_in_order() {
        let dns = [s("node-1.example"), s("node-1")];
        let ips = [s("10.0.0.1"), s("fd00::1")];
        let x = expected(KUBEBOOT_PROFILE_SERVING, &dns, &ips);
        let e = x.read().unwrap();
        assert_eq!(e.node_name, "node-1");
        let Profile::Serving { dns, ips } = e.profile() else { panic!("not serving") };
        assert_eq!(dns, ["node-1.example", "node-1"]);
        let want: [IpAddr; 2] = ["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()];
        assert_eq!(ips, want);
    }

    #[test]
    fn client_does_not_read_the_san_lists() {
        let none: [kubeboot_str; 0] = [];
        let mut x = expected(KUBEBOOT_PROFILE_CLIENT, &none, &none);
        (x.dns_names, x.dns_count, x.ip_addresses, x.ip_count) = (null(), 3, null(), 4);
        assert!(matches!(x.read().unwrap().profile(), Profile::Client));
        // An unknown profile does not read them either.
        x.profile = 2;
        assert_eq!(err(&x), kubeboot_result::InvalidParameter);
        // The serving profile does.
        x.profile = KUBEBOOT_PROFILE_SERVING;
        assert_eq!(err(&x), kubeboot_result::NullParameter);
    }

    #[test]
    fn refusals() {
        let none: [kubeboot_str; 0] = [];
        let mut x = expected(KUBEBOOT_PROFILE_CLIENT, &none, &none);
        x.node_name = "\u{ff}".as_ptr().cast();
        x.node_name_len = 1; // half of a two-byte sequence
        assert_eq!(err(&x), kubeboot_result::InvalidUtf8);
        x.node_name = null();
        assert_eq!(err(&x), kubeboot_result::NullParameter);
        // Every array the struct points to is a local that outlives the read (a temporary
        // would be gone by then: Miri reports the dangling pointer).
        let none: [kubeboot_str; 0] = [];
        let many = [s("a"); csr::MAX_SANS + 1];
        let x = expected(KUBEBOOT_PROFILE_SERVING, &many, &none);
        assert_eq!(err(&x), kubeboot_result::TooManySans);
        let x = expected(KUBEBOOT_PROFILE_SERVING, &none, &many);
        assert_eq!(err(&x), kubeboot_result::TooManySans);
        let bad_ip = [s("10.0.0.256")];
        let x = expected(KUBEBOOT_PROFILE_SERVING, &none, &bad_ip);
        assert_eq!(err(&x), kubeboot_result::InvalidIpAddress);
        let bad = [kubeboot_str { data: b"\xff".as_ptr().cast(), len: 1 }];
        let x = expected(KUBEBOOT_PROFILE_SERVING, &bad, &none);
        assert_eq!(err(&x), kubeboot_result::InvalidUtf8);
    }
}
