//! The shared library's SONAME: `libkubeboot.so.<ABI>`, the ABI version being the major version,
//! or `0.<minor>` before 1.0 (every 0.x minor may break the ABI, as Cargo's semver rules say).
//! This is the one place that decides it: `make -C ffi install` reads it from the built library
//! and installs `libkubeboot.so.<version>` with the `libkubeboot.so.<ABI>` and `libkubeboot.so`
//! links.

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_default();
    let abi = if major == "0" { format!("0.{minor}") } else { major };
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "freebsd" || os == "netbsd" || os == "openbsd" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libkubeboot.so.{abi}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
