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

/// Forward Thomas sweep for `L` adjacent columns at once (their values at stride nz in `z`),
/// right-hand side `rhs(k)` per lane. Interleaving independent columns hides the latency of the
/// division chain, which bounds a one-column sweep. Leaves the modified super-diagonal in `cp`
/// and the intermediate solution in `z`.
#[inline(always)]
pub(super) fn thomas_forward<const L: usize>(
    cols: &[Column],
    v: &VerticalGrid,
    cp: &mut [[f64; L]],
    z: &mut [f64],
    mut rhs: impl FnMut(usize) -> [f64; L],
) {
    let nz = v.amb.len();
    let cols: &[Column; L] = cols.try_into().expect("L columns");
    let z = &mut z[..L * nz];
    let cp = &mut cp[..nz];
    let (mut cprev, mut zprev) = ([0.0; L], [0.0; L]);
    for k in 0..nz {
        let r = rhs(k);
        let (amb, b, c, d) = (v.amb[k], v.b[k], v.c[k], v.d[k]);
        for l in 0..L {
            let t = cols[l].area;
            let lower = t * c;
            let inv = 1.0 / (t * amb - cols[l].alpha_t * d - lower * cprev[l]);
            cprev[l] = t * b * inv;
            zprev[l] = (r[l] - lower * zprev[l]) * inv;
            z[l * nz + k] = zprev[l];
        }
        cp[k] = cprev;
    }
}

/// Backward Thomas sweep over the intermediate `z` left by [`thomas_forward`]. For each final
/// value z_k (top to bottom) of lane `l` it stores `store(l, k, z_k)` at its place in `z`, so a
/// caller can write `u + ρ z` (or `z` itself) into the same memory.
#[inline(always)]
pub(super) fn thomas_backward<const L: usize>(
    cp: &[[f64; L]],
    z: &mut [f64],
    mut store: impl FnMut(usize, usize, f64) -> f64,
) {
    let nz = z.len() / L;
    let cp = &cp[..nz];
    let mut next = [0.0; L];
    for l in 0..L {
        next[l] = z[l * nz + nz - 1];
        z[l * nz + nz - 1] = store(l, nz - 1, next[l]);
    }
    for k in (0..nz - 1).rev() {
        let c = cp[k];
        for l in 0..L {
            next[l] = z[l * nz + k] - c[l] * next[l];
            z[l * nz + k] = store(l, k, next[l]);
        }
    }
}
