//! The agent's clock: unix seconds in, tokio instants out, and the local UTC offset the cert
//! dir's file names are written in.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// How long until the wall clock reads `unix` (zero when it has).
pub(crate) fn until(unix: i64) -> Duration {
    let at = UNIX_EPOCH + Duration::from_secs(unix.max(0) as u64);
    at.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO)
}

/// The tokio instant at which the wall clock reads `unix`.
pub(crate) fn instant_at(unix: i64) -> tokio::time::Instant {
    tokio::time::Instant::now() + until(unix)
}

/// The local UTC offset in seconds at `unix` (data files are named by local time, as the
/// kubelet's).
pub(crate) fn utc_offset(unix: i64) -> i32 {
    // (the C library's time_t, inferred from localtime_r: naming libc's alias warns on musl,
    // whose time_t libc is changing)
    let t = unix as _;
    // SAFETY: `tm` is a plain C struct, fully written by localtime_r on success; both pointers
    // are valid for the call.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff as i32
    }
}
