//! RFC 4514-style rendering of a distinguished name into a fixed string.

use super::*;

/// Writes into a fixed string; once full, stops and ends the text with `...`.
pub(super) struct Capped<'s, const N: usize> {
    pub(super) out: &'s mut heapless::String<N>,
    pub(super) full: bool,
}

impl<const N: usize> fmt::Write for Capped<'_, N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Whole when it fits (the usual case), else char by char up to the cap.
        if !self.full && self.out.len() + s.len() <= N.saturating_sub(3) {
            let _ = self.out.push_str(s);
            return Ok(());
        }
        for ch in s.chars() {
            if self.full || self.out.len() + ch.len_utf8() > N.saturating_sub(3) {
                if !self.full {
                    self.full = true;
                    let _ = self.out.push_str("...");
                }
                return Ok(());
            }
            let _ = self.out.push(ch);
        }
        Ok(())
    }
}

pub(super) const SHORT_NAMES: [(ObjectIdentifier, &str); 10] = [
    (oid::CN, "CN"),
    (oid::SERIAL_NUMBER, "SERIALNUMBER"),
    (oid::C, "C"),
    (oid::L, "L"),
    (oid::ST, "ST"),
    (oid::STREET, "STREET"),
    (oid::O, "O"),
    (oid::OU, "OU"),
    (oid::DC, "DC"),
    (oid::UID, "UID"),
];

/// `n` in decimal (the crate's decimal writer).
pub(super) fn write_decimal(w: &mut impl fmt::Write, n: u64) -> fmt::Result {
    w.write_str(crate::out::decimal(n, &mut [0; 20]))
}

/// Lowercase hex of one byte (two characters).
pub(super) fn write_hex(w: &mut impl fmt::Write, b: u8) -> fmt::Result {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for nibble in [b >> 4, b & 0x0f] {
        w.write_char(char::from(HEX.get(usize::from(nibble)).copied().unwrap_or(b'0')))?;
    }
    Ok(())
}

pub(super) fn write_oid(w: &mut impl fmt::Write, body: &[u8]) -> fmt::Result {
    let mut arc: u64 = 0;
    let mut first = true;
    for b in body {
        arc = arc.saturating_mul(128).saturating_add(u64::from(b & 0x7f));
        if b & 0x80 != 0 {
            continue;
        }
        if first {
            let (x, y) = if arc < 40 {
                (0, arc)
            } else if arc < 80 {
                (1, arc - 40)
            } else {
                (2, arc - 80)
            };
            write_decimal(w, x)?;
            w.write_char('.')?;
            write_decimal(w, y)?;
            first = false;
        } else {
            w.write_char('.')?;
            write_decimal(w, arc)?;
        }
        arc = 0;
    }
    Ok(())
}

/// `type=value` of one attribute, RFC 4514 style. `value_der` is the value's whole encoding
/// (`value` with its header), written as `#hex` when the value is not a string, as RFC 4514 §2.4
/// says and Go's `pkix.Name.String` and OpenSSL do.
pub(super) fn write_attribute(
    w: &mut impl fmt::Write,
    ty: &Tlv<'_>,
    value: &Tlv<'_>,
    value_der: &[u8],
) -> fmt::Result {
    let short = SHORT_NAMES.iter().find(|(o, _)| is_oid(ty, o));
    match short {
        Some((_, name)) => w.write_str(name)?,
        None => write_oid(w, ty.value())?,
    }
    w.write_char('=')?;
    let text = match value.tag() {
        tag::PRINTABLE_STRING | tag::UTF8_STRING | tag::IA5_STRING | tag::TELETEX_STRING => {
            core::str::from_utf8(value.value()).ok()
        }
        _ => None,
    };
    let Some(text) = text else {
        w.write_char('#')?;
        for &b in value_der {
            write_hex(w, b)?;
        }
        return Ok(());
    };
    let last = text.chars().count().saturating_sub(1);
    // Runs of characters that need no escape are written as one slice.
    let mut run = 0;
    for (i, (at, ch)) in text.char_indices().enumerate() {
        let escape = matches!(ch, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (ch == '#' || ch == ' '))
            || (i == last && ch == ' ');
        if !escape && !ch.is_control() {
            continue;
        }
        w.write_str(text.get(run..at).unwrap_or(""))?;
        run = at + ch.len_utf8();
        if escape {
            w.write_char('\\')?;
        }
        if ch.is_control() {
            // Control characters are C0 (< 0x20), DEL or C1 (0x80..=0x9f): one byte of hex.
            w.write_char('\\')?;
            write_hex(w, ch as u8)?;
        } else {
            w.write_char(ch)?;
        }
    }
    w.write_str(text.get(run..).unwrap_or(""))
}

/// Render a Name DER (already validated) RFC 4514 style: RDNs last-first, `,` between RDNs, `+`
/// inside multi-valued RDNs.
#[inline(never)] // keep its locals out of the caller's frame during the path search
pub(super) fn render_name<const N: usize>(name_der: &[u8], out: &mut heapless::String<N>) {
    // Most cluster CAs are named by one plain CN (`CN=kubernetes`): written directly, the same
    // text as below (the unit tests compare the two).
    if !plain_single_cn(name_der).is_some_and(|cn| push_plain_cn(cn, out)) {
        render_name_general(name_der, out)
    }
}

/// Write `CN=<cn>` for a [`plain_single_cn`] value if it fits without truncation (else `false`,
/// nothing written).
pub(super) fn push_plain_cn<const N: usize>(cn: &str, out: &mut heapless::String<N>) -> bool {
    3 + cn.len() <= N.saturating_sub(3) && out.push_str("CN=").is_ok() && out.push_str(cn).is_ok()
}

/// The value of a Name that is exactly one CN attribute, PrintableString or UTF8String, made of
/// characters RFC 4514 writes as they are (printable ASCII but `,+"\<>;`, no leading `#` or
/// space, no trailing space); `None` for anything else.
pub(super) fn plain_single_cn(name_der: &[u8]) -> Option<&str> {
    let name = single(name_der, tag::SEQUENCE).ok()?;
    let rdn = single(name.value(), tag::SET).ok()?;
    let atv = single(rdn.value(), tag::SEQUENCE).ok()?;
    let mut r = Der(atv.value());
    let (ty, _) = next(&mut r).ok()?;
    let (value, _) = next(&mut r).ok()?;
    if !r.is_finished()
        || !is_oid(&ty, &oid::CN)
        || !matches!(value.tag(), tag::PRINTABLE_STRING | tag::UTF8_STRING)
    {
        return None;
    }
    let v = value.value();
    let plain = v.iter().all(|&b| {
        (b.is_ascii_graphic() || b == b' ')
            && !matches!(b, b',' | b'+' | b'"' | b'\\' | b'<' | b'>' | b';')
    });
    let edges_ok = !matches!(v.first(), Some(b'#' | b' ')) && v.last() != Some(&b' ');
    if plain && edges_ok { core::str::from_utf8(v).ok() } else { None }
}

/// [`render_name`] for any Name.
pub(super) fn render_name_general<const N: usize>(name_der: &[u8], out: &mut heapless::String<N>) {
    let mut w = Capped { out, full: false };
    let Ok(name) = single(name_der, tag::SEQUENCE) else {
        return;
    };
    // Count RDNs, then emit them from the last to the first (RDN counts are small).
    let mut count = 0usize;
    let _ = for_each_rdn(name.value(), |_| {
        count += 1;
    });
    for wanted in (0..count).rev() {
        let mut index = 0usize;
        let _ = for_each_rdn(name.value(), |set| {
            if index == wanted {
                if wanted + 1 != count {
                    let _ = w.write_char(',');
                }
                let mut first = true;
                let _ = (|| -> Result<(), VerifyError> {
                    let mut atvs = reader(set)?;
                    while !atvs.is_finished() {
                        let (atv, _) = next(&mut atvs)?;
                        let mut a = reader(atv.value())?;
                        let (ty, _) = next(&mut a)?;
                        let (value, value_der) = next(&mut a)?;
                        if !first {
                            let _ = w.write_char('+');
                        }
                        first = false;
                        let _ = write_attribute(&mut w, &ty, &value, value_der);
                    }
                    Ok(())
                })();
            }
            index += 1;
        });
    }
}

pub(super) fn for_each_rdn<'a>(
    name_contents: &'a [u8],
    mut f: impl FnMut(&'a [u8]),
) -> Result<(), VerifyError> {
    let mut rdns = reader(name_contents)?;
    while !rdns.is_finished() {
        let (set, _) = next(&mut rdns)?;
        f(set.value());
    }
    Ok(())
}
