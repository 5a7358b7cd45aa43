//! Structs that grow at their end without breaking callers built against an older header: each
//! starts with its own `size` (`sizeof` as the caller's header lays it out), the library accepts
//! every layout a released header had, reads the fields that layout holds and takes the defaults
//! for fields added since (the rule of Linux's `clone3`/`openat2` and Windows' `cbSize`).

use crate::{StrataOptions, StrataProblem};
use std::mem::size_of;
use strata_core::StrataError;

/// A C struct that starts with its size and grows at its end.
pub(crate) trait Grows: Copy {
    /// The struct's name in the C API.
    const NAME: &'static str;
    /// The function that fills it (and sets its size).
    const INIT: &'static str;
    /// The sizes of every layout a released header had, oldest first (the last: this one).
    fn layouts() -> Vec<usize>;
    /// The struct filled with the defaults, its size this library's.
    fn defaults() -> Self;
}

impl Grows for StrataProblem {
    const NAME: &'static str = "problem";
    const INIT: &'static str = "strata_problem_default";
    fn layouts() -> Vec<usize> {
        // 0.2.0, the first layout with a size (up to sphere_stencil); then boundary_x
        // and boundary_y; then orography.
        vec![
            std::mem::offset_of!(StrataProblem, boundary_x),
            std::mem::offset_of!(StrataProblem, orography),
            size_of::<StrataProblem>(),
        ]
    }
    fn defaults() -> Self {
        crate::default_problem()
    }
}

impl Grows for StrataOptions {
    const NAME: &'static str = "options";
    const INIT: &'static str = "strata_options_default";
    fn layouts() -> Vec<usize> {
        // 0.2.0, the first layout with a size (up to error_if_not_converged, padded: coarse_rtol,
        // the first field added since, starts where it ended); then coarse_rtol, coarse_solve.
        vec![
            std::mem::offset_of!(StrataOptions, coarse_rtol),
            size_of::<StrataOptions>(),
        ]
    }
    fn defaults() -> Self {
        crate::default_options()
    }
}

/// Whether `size` is the size of a layout of `T` this library knows; the error says why not.
fn check_size<T: Grows>(size: usize) -> Result<(), StrataError> {
    let layouts = T::layouts();
    if layouts.contains(&size) {
        return Ok(());
    }
    Err(StrataError::invalid(
        format!("{}.size", T::NAME),
        format!(
            "is {size}, not the size of a layout this libstrata {} knows ({layouts:?} bytes): \
             fill the struct with {} (which sets its size) before setting its fields, and \
             build against a strata.h no newer than the library",
            env!("CARGO_PKG_VERSION"),
            T::INIT
        ),
    ))
}

/// Reads the caller's struct at `ptr`: the fields its layout holds, the defaults for the rest.
///
/// # Safety
/// `ptr` must be null or point to a readable struct that starts with its size and holds at
/// least that many bytes.
pub(crate) unsafe fn read<T: Grows>(ptr: *const T) -> Result<T, StrataError> {
    if ptr.is_null() {
        return Err(StrataError::invalid(T::NAME, "is null"));
    }
    // SAFETY: every layout starts with its size (a size_t), and `ptr` is valid (caller).
    let size = unsafe { std::ptr::read_unaligned(ptr.cast::<usize>()) };
    check_size::<T>(size)?;
    let mut out = T::defaults();
    // SAFETY: `size` bytes are readable at `ptr` (the caller's layout says so) and `size` is at
    // most `size_of::<T>()` (a known layout), so the copy stays inside `out`; T is plain data.
    unsafe {
        std::ptr::copy_nonoverlapping(
            ptr.cast::<u8>(),
            std::ptr::addr_of_mut!(out).cast::<u8>(),
            size,
        )
    };
    Ok(out)
}

/// Fills the caller's struct at `ptr` of `size` bytes with `value`'s fields that its layout
/// holds, its size set to `size`.
///
/// # Safety
/// `ptr` must be null or point to `size` writable bytes.
pub(crate) unsafe fn write<T: Grows>(
    ptr: *mut T,
    size: usize,
    value: T,
) -> Result<(), StrataError> {
    if ptr.is_null() {
        return Err(StrataError::invalid(T::NAME, "is null"));
    }
    check_size::<T>(size)?;
    // SAFETY: `size` bytes are writable at `ptr` (caller) and at most `size_of::<T>()` are
    // read from `value`; the size (a size_t at offset 0) is written after.
    unsafe {
        std::ptr::copy_nonoverlapping(
            std::ptr::addr_of!(value).cast::<u8>(),
            ptr.cast::<u8>(),
            size,
        );
        std::ptr::write_unaligned(ptr.cast::<usize>(), size);
    }
    Ok(())
}
