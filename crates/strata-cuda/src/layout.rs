//! The device layout of a field: x-contiguous, padded, halo of width one (docs/MODEL.md §10).

use cudarc::driver::DeviceRepr;
use strata::{Result, StrataError};

/// First interior x index in a row: rows start 256-byte aligned, and x = −1 is the halo.
pub const XOFF: usize = 32;

/// Sizes and strides of one block's field, passed to every kernel by value (the C `Layout`).
/// Element (i, j, k), i ∈ [−1, nx], j ∈ [−1, ny], lives at `(j + 1) * plane + k * sx + XOFF + i`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLayout {
    /// Values per (y) plane: nz · sx.
    pub plane: i64,
    /// Interior cells in x.
    pub nx: i32,
    /// Interior cells in y.
    pub ny: i32,
    /// Vertical cells.
    pub nz: i32,
    /// Row stride (a multiple of 32 covering the halo and the padding).
    pub sx: i32,
}

// SAFETY: a plain #[repr(C)] struct of integers, laid out as the C struct `Layout` in
// kernels/common.cuh (i64 first, then four i32: 24 bytes, no padding).
unsafe impl DeviceRepr for DeviceLayout {}

impl DeviceLayout {
    /// The layout of an `nx × ny × nz` block.
    pub fn new(nx: usize, ny: usize, nz: usize) -> Result<Self> {
        let sx = (XOFF + nx + 1).div_ceil(32) * 32;
        let plane = nz as u64 * sx as u64;
        let fits = |v: usize| i32::try_from(v).is_ok();
        if !(fits(nx) && fits(ny) && fits(nz) && fits(sx))
            || plane > i64::MAX as u64 / (ny as u64 + 2)
        {
            return Err(StrataError::invalid(
                "n",
                format!("is too large for the CUDA backend's indexing (a {nx}x{ny}x{nz} block)"),
            ));
        }
        Ok(Self {
            plane: plane as i64,
            nx: nx as i32,
            ny: ny as i32,
            nz: nz as i32,
            sx: sx as i32,
        })
    }

    /// Values of the whole allocation (halo rows, padding included).
    pub fn len(&self) -> usize {
        (self.ny as usize + 2) * self.plane as usize
    }

    /// Never empty (at least the halo rows); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of one field.
    pub fn bytes(&self) -> u64 {
        self.len() as u64 * 8
    }
}
