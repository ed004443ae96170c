//! The panic boundary and the pointer-checking helpers every exported function goes through.
//!
//! All raw-pointer dereferences of the crate happen here or in the handle constructors and
//! destructors, so the `unsafe` surface is small and reviewable.

use crate::error::kubeboot_result;

/// Evaluates `$body` behind `catch_unwind` (std builds); a panic becomes `$on_panic`.
///
/// The body runs inside a closure in every build, so a `return` in it means the same thing with
/// and without std. Without std there is no unwinding to catch: bare-metal builds use
/// `panic = "abort"`, and the core crate is written not to panic.
macro_rules! ffi_panic_boundary {
    ($on_panic:expr, $body:block) => {{
        #[cfg(feature = "std")]
        {
            match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)) {
                Ok(v) => v,
                Err(_) => $on_panic,
            }
        }
        #[cfg(not(feature = "std"))]
        {
            #[allow(clippy::redundant_closure_call)]
            (|| $body)()
        }
    }};
    ($body:block) => {
        ffi_panic_boundary!($crate::error::kubeboot_result::Panic, $body)
    };
}

/// `&T` from a `*const T`, or `return KUBEBOOT_RESULT_NULL_PARAMETER`.
macro_rules! try_ref {
    ($ptr:expr) => {{
        let p = $ptr;
        // SAFETY: every exported function documents that a non-NULL pointer argument must point
        // to a live, aligned, initialised value of its type for the duration of the call; NULL
        // is handled by `as_ref`.
        match unsafe { p.as_ref() } {
            Some(r) => r,
            None => return $crate::error::kubeboot_result::NullParameter,
        }
    }};
}

/// `&mut T` from a `*mut T`, or `return KUBEBOOT_RESULT_NULL_PARAMETER`.
macro_rules! try_mut {
    ($ptr:expr) => {{
        let p = $ptr;
        // SAFETY: as for `try_ref!`; the caller also guarantees the pointee is not accessed
        // through any other pointer during the call.
        match unsafe { p.as_mut() } {
            Some(r) => r,
            None => return $crate::error::kubeboot_result::NullParameter,
        }
    }};
}

/// `&[T]` from `(ptr, len)`; NULL with `len == 0` is the empty slice.
macro_rules! try_slice {
    ($ptr:expr, $len:expr) => {{
        // SAFETY: the caller guarantees that a non-NULL `ptr` points to `len` initialised,
        // aligned elements that stay valid and unmodified for the call.
        match unsafe { $crate::macros::slice_from($ptr, $len) } {
            Ok(s) => s,
            Err(e) => return e,
        }
    }};
}

/// `&str` from `(const char *, len)` (UTF-8, not NUL-terminated).
macro_rules! try_str {
    ($ptr:expr, $len:expr) => {{
        let bytes: &[u8] = try_slice!(($ptr).cast::<u8>(), $len);
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) => return $crate::error::kubeboot_result::InvalidUtf8,
        }
    }};
}

/// An optional `&str`: `None` for NULL with `len == 0`, else as [`try_str!`] (so NULL with a
/// non-zero length is `NULL_PARAMETER`, as for every other (pointer, length) pair of the ABI).
macro_rules! try_opt_str {
    ($ptr:expr, $len:expr) => {{ if ($ptr).is_null() && $len == 0 { None } else { Some(try_str!($ptr, $len)) } }};
}

/// An optional `&[u8]`: `None` for NULL with `len == 0` (an absent value), else as
/// [`try_slice!`] (an empty value is a non-NULL pointer with 0).
macro_rules! try_opt_slice {
    ($ptr:expr, $len:expr) => {{ if ($ptr).is_null() && $len == 0 { None } else { Some(try_slice!($ptr, $len)) } }};
}

/// `&mut [u8]` output buffer from `(ptr, len)`; NULL with `len == 0` is the empty buffer (a size
/// query).
macro_rules! try_out_buf {
    ($ptr:expr, $len:expr) => {{
        // SAFETY: the caller guarantees that a non-NULL `buf` points to `len` writable bytes
        // not aliased by any other argument during the call.
        match unsafe { $crate::macros::slice_from_mut(($ptr).cast::<u8>(), $len) } {
            Ok(s) => s,
            Err(e) => return e,
        }
    }};
}

/// `?` for core results inside a body returning `kubeboot_result`.
macro_rules! try_kb {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return $crate::error::kubeboot_result::from(e),
        }
    };
}

/// Borrow `(ptr, len)` as a slice.
///
/// # Safety
/// A non-NULL `ptr` must point to `len` initialised elements of `T`, valid for `'a`.
pub(crate) unsafe fn slice_from<'a, T>(
    ptr: *const T,
    len: usize,
) -> Result<&'a [T], kubeboot_result> {
    if ptr.is_null() {
        return if len == 0 { Ok(&[]) } else { Err(kubeboot_result::NullParameter) };
    }
    if len > isize::MAX as usize / core::mem::size_of::<T>().max(1) || !ptr.is_aligned() {
        return Err(kubeboot_result::InvalidParameter);
    }
    // SAFETY: non-NULL and aligned (checked), the size fits in `isize` (checked), and the caller
    // guarantees `len` initialised elements valid for `'a`.
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// Borrow `(ptr, len)` as a writable byte slice.
///
/// # Safety
/// A non-NULL `ptr` must point to `len` writable bytes, valid and unaliased for `'a`.
pub(crate) unsafe fn slice_from_mut<'a>(
    ptr: *mut u8,
    len: usize,
) -> Result<&'a mut [u8], kubeboot_result> {
    if ptr.is_null() {
        return if len == 0 { Ok(&mut []) } else { Err(kubeboot_result::NullParameter) };
    }
    if len > isize::MAX as usize {
        return Err(kubeboot_result::InvalidParameter);
    }
    // SAFETY: non-NULL, `u8` needs no alignment, the size fits in `isize` (checked), and the
    // caller guarantees `len` writable bytes that nothing else aliases for `'a`.
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

/// Run a core writer into `buf` and report its length through `out_len`.
///
/// A short buffer becomes `INSUFFICIENT_SIZE` with the needed size in `*out_len`; any other
/// error leaves `*out_len` untouched. Core writers measure before writing, so a failing writer
/// has not written to `buf`.
pub(crate) fn write_with(
    buf: &mut [u8],
    out_len: &mut usize,
    f: impl FnOnce(&mut [u8]) -> kb::Result<usize>,
) -> kubeboot_result {
    match f(buf) {
        Ok(n) => {
            *out_len = n;
            kubeboot_result::Ok
        }
        Err(kb::Error::BufferTooSmall { needed }) => {
            *out_len = needed;
            kubeboot_result::InsufficientSize
        }
        Err(e) => e.into(),
    }
}

/// Copy `bytes` into `buf` (or report the size needed).
pub(crate) fn copy_out(buf: &mut [u8], out_len: &mut usize, bytes: &[u8]) -> kubeboot_result {
    write_with(buf, out_len, |b| match b.get_mut(..bytes.len()) {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            Ok(bytes.len())
        }
        None => Err(kb::Error::BufferTooSmall { needed: bytes.len() }),
    })
}

/// An opaque handle type handed to C by pointer.
pub(crate) trait Handle: Sized + 'static {
    /// Where handles of this type live in builds without `std`.
    #[cfg(not(feature = "std"))]
    fn pool() -> &'static dyn pool::Slots<Self>;
}

/// Move `value` to the heap (std) or into a free slot of its static pool (no std) and hand its
/// pointer to C through `out`. Without std, a full pool is `KUBEBOOT_RESULT_POOL_EXHAUSTED`
/// ([`pool::SLOTS`] live handles per type).
pub(crate) fn box_out<T: Handle>(out: &mut *mut T, value: T) -> kubeboot_result {
    #[cfg(feature = "std")]
    {
        *out = alloc::boxed::Box::into_raw(alloc::boxed::Box::new(value));
        kubeboot_result::Ok
    }
    #[cfg(not(feature = "std"))]
    match T::pool().put(value) {
        Some(p) => {
            *out = p;
            kubeboot_result::Ok
        }
        None => kubeboot_result::PoolExhausted,
    }
}

/// Overwrites the `size_of::<T>()` bytes at `ptr` with zeros through volatile writes.
///
/// # Safety
/// `ptr` is valid for writes of `size_of::<T>()` bytes and holds no live `T` (it was dropped).
pub(crate) unsafe fn wipe_bytes<T>(ptr: *mut T) {
    use zeroize::Zeroize;
    // SAFETY: per the contract the bytes are writable and hold no value; `MaybeUninit<u8>` has
    // no validity requirements.
    unsafe {
        core::slice::from_raw_parts_mut(
            ptr.cast::<core::mem::MaybeUninit<u8>>(),
            core::mem::size_of::<T>(),
        )
    }
    .zeroize();
}

/// Drop a handle created by [`box_out`]; NULL is a no-op.
///
/// # Safety
/// `ptr` must be NULL or a pointer obtained from [`box_out`] for the same `T` that has not been
/// freed yet.
pub(crate) unsafe fn free_box<T: Handle>(ptr: *mut T) {
    if !ptr.is_null() {
        #[cfg(feature = "std")]
        // SAFETY: per the contract, `ptr` came from `Box::into_raw` of a `Box<T>` and is freed
        // exactly once. After `drop_in_place` the memory is plain bytes: it is wiped as a
        // `MaybeUninit` slice (volatile writes, so they are not elided before the free) and freed
        // as a `Box<MaybeUninit<T>>`, which has the layout of `Box<T>`. The wipe covers bytes no
        // field owns (padding, spare capacity of fixed buffers) that the move onto the heap may
        // have copied from a stack that held a private key.
        unsafe {
            ptr.drop_in_place();
            wipe_bytes(ptr);
            drop(alloc::boxed::Box::from_raw(ptr.cast::<core::mem::MaybeUninit<T>>()));
        }
        #[cfg(not(feature = "std"))]
        // SAFETY: per the contract, `ptr` came from `T::pool().put` and is freed exactly once.
        unsafe {
            T::pool().free(ptr)
        };
    }
}

/// Fixed handle storage for builds without `std` (and so without an allocator).
#[cfg(not(feature = "std"))]
pub(crate) mod pool {
    use core::cell::UnsafeCell;
    use core::mem::MaybeUninit;
    // portable-atomic's `AtomicBool` is core's where the target has compare-and-swap (the
    // Cortex-M3/M4/M7, the hosts: the same instructions); on targets without it (Cortex-M0+
    // `thumbv6m`, RISC-V without the A extension such as the ESP32-C3's `riscv32imc`) its
    // compare-exchange runs in a `critical-section` critical section, whose implementation the
    // final image chooses (see ffi/README.md: cortex-m's `critical-section-single-core`, riscv's
    // `critical-section-single-hart`, an RTOS's, or a C image's hooks through the feature
    // `critical-section-c`: src/critical.rs).
    use portable_atomic::{AtomicBool, Ordering};

    /// Live handles per type, by default.
    pub(crate) const SLOTS: usize = 4;

    /// `S` slots for values of `T`, each owned by whoever set its flag.
    pub(crate) struct Pool<T, const S: usize = SLOTS> {
        used: [AtomicBool; S],
        slots: [UnsafeCell<MaybeUninit<T>>; S],
    }

    // SAFETY: a slot is only written, read through the handed-out pointer, and dropped by the
    // owner of its `used` flag, which is taken with an atomic compare-exchange (or one in a
    // critical section, on targets without compare-and-swap) and released
    // after the value is dropped; `T: Send` lets the value be used from any thread.
    unsafe impl<T: Send, const S: usize> Sync for Pool<T, S> {}

    /// What a handle type needs of its pool, whatever its number of slots.
    pub(crate) trait Slots<T>: Sync {
        /// See [`Pool::put`].
        fn put(&self, value: T) -> Option<*mut T>;
        /// See [`Pool::free`].
        ///
        /// # Safety
        /// As [`Pool::free`].
        unsafe fn free(&self, ptr: *mut T);
    }

    impl<T: Send, const S: usize> Slots<T> for Pool<T, S> {
        fn put(&self, value: T) -> Option<*mut T> {
            Pool::put(self, value)
        }
        unsafe fn free(&self, ptr: *mut T) {
            // SAFETY: the caller upholds `Pool::free`'s contract.
            unsafe { Pool::free(self, ptr) }
        }
    }

    impl<T, const S: usize> Pool<T, S> {
        /// An empty pool.
        pub(crate) const fn new() -> Self {
            Pool {
                used: [const { AtomicBool::new(false) }; S],
                slots: [const { UnsafeCell::new(MaybeUninit::uninit()) }; S],
            }
        }

        /// Move `value` into a free slot; `None` when all are taken.
        pub(crate) fn put(&self, value: T) -> Option<*mut T> {
            let p = self.claim()?;
            // SAFETY: we own this free slot (flag taken); it is valid for writes of `T`.
            unsafe { p.write(value) };
            Some(p)
        }

        /// Take a free slot, uninitialised (the caller writes a `T` into it before anything
        /// else, and frees it with [`Pool::free`]); `None` when all are taken.
        pub(crate) fn claim(&self) -> Option<*mut T> {
            for (flag, slot) in self.used.iter().zip(self.slots.iter()) {
                if flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
                {
                    return Some(slot.get().cast::<T>());
                }
            }
            None
        }

        /// Drop the value at `ptr` and free its slot; a pointer not from this pool is ignored.
        ///
        /// # Safety
        /// `ptr` must come from [`Pool::put`] of this pool and not have been freed yet.
        pub(crate) unsafe fn free(&self, ptr: *mut T) {
            for (flag, slot) in self.used.iter().zip(self.slots.iter()) {
                if core::ptr::eq(slot.get().cast::<T>(), ptr) {
                    // SAFETY: per the contract the slot holds a live `T` owned by the caller.
                    unsafe {
                        ptr.drop_in_place();
                        super::wipe_bytes(ptr);
                    }
                    flag.store(false, Ordering::Release);
                    return;
                }
            }
        }
    }
}
