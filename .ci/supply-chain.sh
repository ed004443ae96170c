#!/usr/bin/env bash
# Supply chain an operator can check, on the packages packaging/build-deb made:
#   1. cargo deny (deny.toml): the licences, bans and sources of what ships — the checks that need
#      no network (the advisories check needs the RustSec database: `cargo deny check advisories`
#      or `cargo audit bin` where there is network);
#   2. the crates inside each packaged binary (cargo auditable's `.dep-v0` section), read twice:
#      by rust-audit-info (cargo-auditable's reader) and by an independent reader here (the ELF
#      section through binutils' objcopy, zlib and JSON from Python's standard library); both
#      must agree with each other and with Cargo.lock (every crate at its locked version).
#
#   .ci/supply-chain.sh DEB-DIR     e.g. target/deb/amd64 (its kubeboot_*.deb and libkubeboot0.*.deb)
#
# cargo-deny and rust-audit-info are on PATH (.ci/run installs them, cached by version).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DEBS=${1:?usage: .ci/supply-chain.sh DEB-DIR}

echo "== cargo deny --offline check licenses bans sources (deny.toml)"
# (the duplicate-version warnings are left out: multiple-versions = "warn")
deny=$(cargo deny --offline --locked check licenses bans sources 2>&1) || { echo "$deny"; echo "error: cargo deny failed" >&2; exit 1; }
tail -n 1 <<<"$deny"

READ_PY='
import json, subprocess, sys, tempfile, tomllib, zlib, os
objcopy, binary, lock, audit_info = sys.argv[1:5]
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "dep")
    subprocess.run([objcopy, "--dump-section", ".dep-v0=" + out, binary, os.path.join(d, "copy")], check=True)
    mine = json.loads(zlib.decompress(open(out, "rb").read()))
theirs = json.loads(audit_info)
assert mine == theirs, "rust-audit-info and the section read here differ"
locked = {(p["name"], p["version"]) for p in tomllib.load(open(lock, "rb"))["package"]}
inside = {(p["name"], p["version"]) for p in mine["packages"]}
missing = inside - locked
assert not missing, "not at their Cargo.lock versions: %s" % sorted(missing)
root = [p for p in mine["packages"] if p.get("root")]
print("%d crates, root %s, none outside Cargo.lock; e.g. %s" % (len(inside), [p["name"] + " " + p["version"] for p in root],
      ", ".join("%s %s" % p for p in sorted(inside) if p[0] in ("ring", "rustls", "kubeboot", "tss-esapi", "cryptoki"))))
'
status=0
for deb in "$DEBS"/kubeboot_*.deb "$DEBS"/libkubeboot0.*.deb; do
  x=$(mktemp -d)
  dpkg-deb -x "$deb" "$x"
  arch=$(dpkg-deb -f "$deb" Architecture)
  objcopy=objcopy
  [[ $arch == "$(dpkg --print-architecture)" ]] || objcopy="$(dpkg-architecture -a"$arch" -qDEB_HOST_GNU_TYPE 2>/dev/null)-objcopy"
  for bin in "$x"/usr/bin/kubeboot "$x"/usr/lib/*/libkubeboot.so.*.*.*; do
    [[ -f $bin && ! -L $bin ]] || continue
    echo "== $(basename "$deb"): ${bin#"$x"}"
    if ! info=$(rust-audit-info "$bin"); then
      echo "error: no cargo auditable data in ${bin#"$x"}" >&2; status=1; continue
    fi
    /usr/bin/python3 -c "$READ_PY" "$objcopy" "$bin" Cargo.lock "$info" || status=1
  done
  rm -rf "$x"
done
exit $status
