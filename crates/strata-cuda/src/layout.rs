//! The device layout of a field: padded rows, halo of width one (docs/MODEL.md §10), each row's
//! columns ordered by colour in groups of 64 (the default, [`colour_split`]) or x-contiguous
//! (`STRATA_CUDA_LAYOUT=x`).

use std::sync::OnceLock;

use cudarc::driver::DeviceRepr;
use strata::{Result, StrataError};

/// First interior x index in an x-contiguous row: rows start 256-byte aligned, and x = −1 is
/// the halo.
pub const XOFF: usize = 32;

pub use crate::compile::SPLIT_OPTION;

/// Whether every field of this process's CUDA backends is stored colour-split (the default;
/// `STRATA_CUDA_LAYOUT=x` for the x-contiguous row, `split` for this one): each row in groups
/// of 64 columns, the group's 32 columns with even `q = i + 64` first and then its 32 odd ones
/// ([`split_pos`]), so that a red-black half-sweep's warp reads 32 consecutive values of its
/// colour and every 32-byte sector holds one colour (mixed mg at 2816² × 128 on one H200 5.8 %
/// faster per cycle, mg-cg 9 %; docs/PERFORMANCE.md). Read once; an unknown value is an error.
pub fn colour_split() -> Result<bool> {
    static SPLIT: OnceLock<std::result::Result<bool, String>> = OnceLock::new();
    SPLIT
        .get_or_init(|| match std::env::var("STRATA_CUDA_LAYOUT") {
            Err(_) => Ok(true),
            Ok(v) => match v.trim() {
                "" | "split" => Ok(true),
                "x" => Ok(false),
                other => Err(other.to_string()),
            },
        })
        .clone()
        .map_err(|v| {
            StrataError::invalid(
                "STRATA_CUDA_LAYOUT",
                format!("is `{v}`; the CUDA field layouts are `split` (the default) and `x`"),
            )
        })
}

/// Where column `i` (−1 ≤ i ≤ nx) lies in a colour-split row (kernels/common.cuh `xpos`).
pub fn split_pos(i: isize) -> usize {
    let q = (i + 64) as usize;
    (q & !63) + ((q & 1) << 5) + ((q & 63) >> 1)
}

/// The row stride of a colour-split row of `nx` columns: whole groups of 64 up to column nx.
pub fn split_stride(nx: usize) -> usize {
    ((nx + 64) / 64 + 1) * 64
}

/// Sizes and strides of one block's field, passed to every kernel by value (the C `Layout`).
/// Element (i, j, k), i ∈ [−1, nx], j ∈ [−1, ny], lives at `(j + 1) * plane + k * sx + x_pos(i)`
/// ([`DeviceLayout::offset`]): `x_pos(i)` is [`split_pos`] in the colour-split rows, `XOFF + i`
/// in the x-contiguous ones.
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
    /// Row stride (a multiple of 32, of 64 in the colour-split rows, covering the halo and the
    /// padding).
    pub sx: i32,
}

// SAFETY: a plain #[repr(C)] struct of integers, laid out as the C struct `Layout` in
// kernels/common.cuh (i64 first, then four i32: 24 bytes, no padding).
unsafe impl DeviceRepr for DeviceLayout {}

impl DeviceLayout {
    /// The layout of an `nx × ny × nz` block.
    pub fn new(nx: usize, ny: usize, nz: usize) -> Result<Self> {
        let sx = if colour_split()? {
            split_stride(nx)
        } else {
            (XOFF + nx + 1).div_ceil(32) * 32
        };
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

    /// Where column `i` (−1 ≤ i ≤ nx) lies in a row (kernels/common.cuh `at_`).
    pub fn x_pos(&self, i: isize) -> usize {
        // A layout exists only where colour_split() succeeded.
        if colour_split().unwrap_or(false) {
            split_pos(i)
        } else {
            (XOFF as isize + i) as usize
        }
    }

    /// Where each column of a row lies, columns −1 ..= nx in order ([`DeviceLayout::x_pos`]
    /// of each; entry i + 1 is column i's): for loops over every cell.
    pub fn x_positions(&self) -> Vec<usize> {
        (-1..=self.nx as isize).map(|i| self.x_pos(i)).collect()
    }

    /// The offset of element (i, j, k), −1 ≤ i ≤ nx, −1 ≤ j ≤ ny (kernels/common.cuh `at_`).
    pub fn offset(&self, i: isize, j: isize, k: usize) -> usize {
        (j + 1) as usize * self.plane as usize + k * self.sx as usize + self.x_pos(i)
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

#[cfg(test)]
mod tests {
    use super::{split_pos, split_stride};

    /// The kernels' east and west offsets (kernels/common.cuh `x_east`, `x_west`), from an
    /// element's slot in its group.
    fn east(o: usize) -> isize {
        let m = o & 63;
        if m < 32 {
            32
        } else if m == 63 {
            1
        } else {
            -31
        }
    }
    fn west(o: usize) -> isize {
        let m = o & 63;
        if m < 32 {
            if m == 0 {
                -1
            } else {
                31
            }
        } else {
            -32
        }
    }

    #[test]
    fn split_rows_hold_every_column_once_with_their_neighbours_where_the_kernels_look() {
        for nx in [1usize, 2, 31, 32, 63, 64, 65, 127, 128, 200, 2816] {
            let sx = split_stride(nx);
            assert_eq!(sx % 64, 0);
            let mut seen = vec![false; sx];
            for i in -1..=nx as isize {
                let p = split_pos(i);
                assert!(p < sx, "nx {nx}: column {i} at {p} beyond the row's {sx}");
                assert!(!seen[p], "nx {nx}: column {i} shares slot {p}");
                seen[p] = true;
                // A row starts at a multiple of 64: the neighbours from the offset alone, in
                // any row.
                let o = 3 * sx + p;
                if i < nx as isize {
                    assert_eq!(
                        o as isize + east(o),
                        (3 * sx + split_pos(i + 1)) as isize,
                        "east of {i}"
                    );
                }
                if i > -1 {
                    assert_eq!(
                        o as isize + west(o),
                        (3 * sx + split_pos(i - 1)) as isize,
                        "west of {i}"
                    );
                }
            }
        }
        // One colour of a row is consecutive: the columns of even i from 0 are slots 64, 65, ...
        assert_eq!(
            (0..32).map(|x| split_pos(2 * x)).collect::<Vec<_>>(),
            (64..96).collect::<Vec<_>>()
        );
        assert_eq!(
            (0..32).map(|x| split_pos(2 * x + 1)).collect::<Vec<_>>(),
            (96..128).collect::<Vec<_>>()
        );
    }
}
