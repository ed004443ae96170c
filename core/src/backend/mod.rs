//! Optional P-256 backends for particular targets.
//!
//! * `cortex_m4` (feature `p256-cortex-m4`, bare-metal Arm targets only: thumbv7em / thumbv8m.main):
//!   the assembly P-256 of the `p256-cortex-m4` crate for signing ([`cortex_m4::M4Key`], a
//!   [`P256Signer`](crate::key::P256Signer)) and for the P-256 signature checks of
//!   [`verify`](crate::verify). On other targets the feature has no effect.

#[cfg(all(feature = "p256-cortex-m4", target_arch = "arm", target_os = "none"))]
pub mod cortex_m4;
