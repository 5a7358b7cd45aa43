//! Structs that grow at their end without breaking callers built against an older header: each
//! starts with its own `size` (`sizeof` as the caller's header lays it out), the library accepts
//! every layout a released header had, reads the fields that layout holds and takes the defaults
//! for fields added since (the rule of Linux's `clone3`/`openat2` and Windows' `cbSize`).

use crate::{StrataOptions, StrataProblem};
use std::mem::size_of;
use strata_core::StrataError;

/// One released layout of a struct: its size (`sizeof`, padding included) and the bytes its
/// fields fill. They differ where a field added since sits in the old layout's tail padding
/// (an `int32_t` after an `int32_t` that followed a `double`): those bytes of an old caller's
/// struct are not its fields, and are not read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Layout {
    size: usize,
    fields: usize,
}

impl Layout {
    /// The layout of `T`'s fields up to (not including) the one at offset `end`.
    pub(crate) fn ending_at<T>(end: usize) -> Self {
        let align = std::mem::align_of::<T>();
        Self {
            size: end.div_ceil(align) * align,
            fields: end,
        }
    }

    /// The layout of every field of `T`.
    pub(crate) fn whole<T>() -> Self {
        Self::ending_at::<T>(size_of::<T>())
    }

    /// `sizeof` of the layout.
    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

/// A C struct that starts with its size and grows at its end.
pub(crate) trait Grows: Copy {
    /// The struct's name in the C API.
    const NAME: &'static str;
    /// The function that fills it (and sets its size).
    const INIT: &'static str;
    /// Every layout a released header had, oldest first (the last: this one).
    fn layouts() -> Vec<Layout>;
    /// The struct filled with the defaults, its size this library's.
    fn defaults() -> Self;
}

impl Grows for StrataProblem {
    const NAME: &'static str = "problem";
    const INIT: &'static str = "strata_problem_default";
    fn layouts() -> Vec<Layout> {
        // 0.2.0, the first layout with a size (up to sphere_stencil); then boundary_x
        // and boundary_y; then orography.
        vec![
            Layout::ending_at::<Self>(std::mem::offset_of!(StrataProblem, boundary_x)),
            Layout::ending_at::<Self>(std::mem::offset_of!(StrataProblem, orography)),
            Layout::whole::<Self>(),
        ]
    }
    fn defaults() -> Self {
        crate::default_problem()
    }
}

impl Grows for StrataOptions {
    const NAME: &'static str = "options";
    const INIT: &'static str = "strata_options_default";
    fn layouts() -> Vec<Layout> {
        // 0.2.0, the first layout with a size (up to error_if_not_converged, padded: coarse_rtol,
        // the first field added since, starts where it ended); then coarse_rtol and
        // coarse_solve (pre_smooth sits in that layout's tail padding); then pre_smooth and
        // post_smooth.
        vec![
            Layout::ending_at::<Self>(std::mem::offset_of!(StrataOptions, coarse_rtol)),
            Layout::ending_at::<Self>(std::mem::offset_of!(StrataOptions, pre_smooth)),
            Layout::whole::<Self>(),
        ]
    }
    fn defaults() -> Self {
        crate::default_options()
    }
}

/// The layout of `T` whose size is `size`, if this library knows one; the error says why not.
fn layout_of<T: Grows>(size: usize) -> Result<Layout, StrataError> {
    let layouts = T::layouts();
    if let Some(l) = layouts.iter().find(|l| l.size == size) {
        return Ok(*l);
    }
    let layouts: Vec<usize> = layouts.iter().map(|l| l.size).collect();
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
    let layout = layout_of::<T>(size)?;
    let mut out = T::defaults();
    // SAFETY: `size` bytes are readable at `ptr` (the caller's layout says so) and the layout's
    // fields end within them and within `size_of::<T>()` (a known layout), so the copy stays
    // inside `out`; T is plain data.
    unsafe {
        std::ptr::copy_nonoverlapping(
            ptr.cast::<u8>(),
            std::ptr::addr_of_mut!(out).cast::<u8>(),
            layout.fields,
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
    let layout = layout_of::<T>(size)?;
    // SAFETY: `size` bytes are writable at `ptr` (caller), the layout's fields end within
    // them, and at most `size_of::<T>()` are read from `value`; the size (a size_t at offset
    // 0) is written after.
    unsafe {
        std::ptr::copy_nonoverlapping(
            std::ptr::addr_of!(value).cast::<u8>(),
            ptr.cast::<u8>(),
            layout.fields,
        );
        std::ptr::write_unaligned(ptr.cast::<usize>(), size);
    }
    Ok(())
}
