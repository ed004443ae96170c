//! The grammar of what users type (the core's `kubeboot::grammar`): the values of the agent's
//! flags, parsed and judged once for the CLI, the C and the Go agents, and the one line every
//! front-end prints for a value it refuses ([`kubeboot_flag_refusal`]; exit status 2).

use core::ffi::c_char;

use crate::error::kubeboot_result;
use crate::macros::write_with;

/// The most bytes of one response (or one watch stream) a front-end reads.
pub const KUBEBOOT_MAX_RESPONSE: usize = 1_048_576;
const _: () = assert!(KUBEBOOT_MAX_RESPONSE == kb::grammar::MAX_RESPONSE);

/// A duration: `0`, or `<digits><unit>`s with units `h`, `m`, `s` (`90s`, `10m`, `1h30m`) →
/// `*secs`. `INVALID_DURATION` otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_parse_duration(
    text: *const c_char,
    len: usize,
    secs: *mut i64,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let text = try_str!(text, len);
        let secs = try_mut!(secs);
        *secs = try_kb!(kb::grammar::duration(text));
        kubeboot_result::Ok
    }}
}

/// The agent's `--key` (`pkcs11:<token URI>` or `tpm:`) → the device name for
/// `kubeboot_agent_config.key_device`, written to `buf` (`INSUFFICIENT_SIZE` with the size
/// needed when short). `INVALID_KEY_REFERENCE` for a file, `tpm:<file>` or a URI with an object,
/// a PIN or an unknown attribute.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_parse_key_device(
    text: *const c_char,
    len: usize,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let text = try_str!(text, len);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf.cast::<u8>(), buf_len);
        let device = try_kb!(kb::grammar::key_device(text));
        crate::macros::copy_out(buf, out_len, device.as_bytes())
    }}
}

/// OK when `text` is an IP address (a `--ip` value), else `INVALID_IP_ADDRESS`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_check_ip(text: *const c_char, len: usize) -> kubeboot_result {
    ffi_panic_boundary! {{
        let text = try_str!(text, len);
        try_kb!(kb::grammar::ip(text));
        kubeboot_result::Ok
    }}
}

/// OK when `text` is an address to listen on (`IPv4:port`, `[IPv6]:port`), else
/// `INVALID_ADDRESS`.
#[unsafe(no_mangle)]
pub extern "C" fn kubeboot_check_bind_address(text: *const c_char, len: usize) -> kubeboot_result {
    ffi_panic_boundary! {{
        let text = try_str!(text, len);
        try_kb!(kb::grammar::bind_address(text));
        kubeboot_result::Ok
    }}
}

/// The line to print for `value` of `flag` refused with `result` (what the parse and check
/// functions above returned): `<flag> "<value>": <reason>: <how to write it>`, into `buf` (not
/// NUL-terminated). `INVALID_PARAMETER` for a result that is no kubeboot result.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn kubeboot_flag_refusal(
    flag: *const c_char,
    flag_len: usize,
    value: *const c_char,
    value_len: usize,
    result: u32,
    buf: *mut c_char,
    buf_len: usize,
    out_len: *mut usize,
) -> kubeboot_result {
    ffi_panic_boundary! {{
        let flag = try_str!(flag, flag_len);
        let value = try_str!(value, value_len);
        let out_len = try_mut!(out_len);
        let buf = try_out_buf!(buf.cast::<u8>(), buf_len);
        let Some(e) = kb::error::Code::from_u32(result).and_then(error_of) else {
            return kubeboot_result::InvalidParameter;
        };
        let mut line = heapless::String::<512>::new();
        if kb::grammar::write_refusal(&mut line, flag, value, e).is_err() {
            return kubeboot_result::TooLarge;
        }
        write_with(buf, out_len, |b| match b.get_mut(..line.len()) {
            Some(dst) => {
                dst.copy_from_slice(line.as_bytes());
                Ok(line.len())
            }
            None => Err(kb::Error::BufferTooSmall { needed: line.len() }),
        })
    }}
}

/// The grammar's refusals, from their codes.
fn error_of(c: kb::error::Code) -> Option<kb::Error> {
    use kb::error::Code;
    Some(match c {
        Code::InvalidDuration => kb::Error::InvalidDuration,
        Code::InvalidAddress => kb::Error::InvalidAddress,
        Code::InvalidKeyReference => kb::Error::InvalidKeyReference,
        Code::InvalidIpAddress => kb::Error::InvalidIpAddress,
        _ => return None,
    })
}
