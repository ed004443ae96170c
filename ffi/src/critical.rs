//! The C image's critical section (feature `critical-section-c`): on targets without
//! compare-and-swap (thumbv6m, riscv32imc) the no-std handle pools take a `critical-section`
//! critical section, which the final image implements. A Rust image links one (cortex-m's,
//! riscv's, an RTOS's); a C image builds `libkubeboot.a` with this feature and defines
//!
//! ```c
//! uint32_t kubeboot_critical_section_enter(void); /* e.g. save PRIMASK, cpsid i; return it */
//! void kubeboot_critical_section_exit(uint32_t state); /* restore what enter returned */
//! ```
//!
//! Calls nest: `exit` gets the state its `enter` returned. On a single core masking interrupts
//! is enough; with two cores (RP2040) or an RTOS, its own lock.

unsafe extern "C" {
    fn kubeboot_critical_section_enter() -> u32;
    fn kubeboot_critical_section_exit(state: u32);
}

struct CHooks;
critical_section::set_impl!(CHooks);

// SAFETY: the C image's functions give mutual exclusion between `enter` and the `exit` given its
// state (the contract above, documented in ffi/README.md).
unsafe impl critical_section::Impl for CHooks {
    unsafe fn acquire() -> critical_section::RawRestoreState {
        // SAFETY: a C function without preconditions (the contract above).
        unsafe { kubeboot_critical_section_enter() }
    }

    unsafe fn release(state: critical_section::RawRestoreState) {
        // SAFETY: `state` is what the matching `enter` returned.
        unsafe { kubeboot_critical_section_exit(state) }
    }
}
