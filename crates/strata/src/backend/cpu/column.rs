//! Column kernels of the CPU backend: the operator on one column and its neighbours, and the
//! Thomas sweeps, written to be inlined into the fused row loops of [`super::CpuBackend`].

use crate::field::HostField;
use crate::problem::{Column, VerticalGrid};

/// A column and its four horizontal neighbours, each `nz` long.
pub(super) struct Nbrs<'a> {
    pub c: &'a [f64],
    pub e: &'a [f64],
    pub w: &'a [f64],
    pub n: &'a [f64],
    pub s: &'a [f64],
}

/// The neighbourhood of interior column `(i, j)` of `x`.
#[inline(always)]
pub(super) fn nbrs(x: &HostField, i: usize, j: usize) -> Nbrs<'_> {
    let nz = x.nz;
    let row = x.row_len();
    let o = x.offset(i + 1, j + 1);
    let d = &x.data;
    Nbrs {
        c: &d[o..o + nz],
        e: &d[o + nz..o + 2 * nz],
        w: &d[o - nz..o],
        n: &d[o + row..o + row + nz],
        s: &d[o - row..o - row + nz],
    }
}

/// (A x)_k for one column. The vertical neighbour indices are clamped: b_{nz−1} = c_0 = 0, so the
/// clamped terms vanish (Neumann) without a branch.
#[inline(always)]
pub(super) fn au(col: &Column, v: &VerticalGrid, x: &Nbrs, k: usize) -> f64 {
    let nz = x.c.len();
    let up = x.c[(k + 1).min(nz - 1)];
    let down = x.c[k.saturating_sub(1)];
    let diag = col.area * v.amb[k] - col.alpha_t * v.d[k];
    let horiz =
        col.alpha_e * x.e[k] + col.alpha_w * x.w[k] + col.alpha_n * x.n[k] + col.alpha_s * x.s[k];
    diag * x.c[k] + col.area * (v.b[k] * up + v.c[k] * down) + v.d[k] * horiz
}

/// Forward Thomas sweep for the column block A_T with right-hand side `rhs(k)`: fills `cp` with
/// the modified super-diagonal and `z` with the intermediate solution.
#[inline(always)]
pub(super) fn thomas_forward(
    col: &Column,
    v: &VerticalGrid,
    cp: &mut [f64],
    z: &mut [f64],
    mut rhs: impl FnMut(usize) -> f64,
) {
    let nz = z.len();
    let cp = &mut cp[..nz];
    let (t, at) = (col.area, col.alpha_t);
    let inv = 1.0 / (t * v.amb[0] - at * v.d[0]);
    cp[0] = t * v.b[0] * inv;
    z[0] = rhs(0) * inv;
    for k in 1..nz {
        let lower = t * v.c[k];
        let inv = 1.0 / (t * v.amb[k] - at * v.d[k] - lower * cp[k - 1]);
        cp[k] = t * v.b[k] * inv;
        z[k] = (rhs(k) - lower * z[k - 1]) * inv;
    }
}

/// Backward Thomas sweep over the intermediate `z` left by [`thomas_forward`]. For each final
/// value z_k (top to bottom) it stores `store(k, z_k)` at `z[k]`, so a caller can write
/// `u + ρ z` (or `z` itself) into the same memory.
#[inline(always)]
pub(super) fn thomas_backward(cp: &[f64], z: &mut [f64], mut store: impl FnMut(usize, f64) -> f64) {
    let nz = z.len();
    let cp = &cp[..nz];
    let mut next = z[nz - 1];
    z[nz - 1] = store(nz - 1, next);
    for k in (0..nz - 1).rev() {
        next = z[k] - cp[k] * next;
        z[k] = store(k, next);
    }
}
