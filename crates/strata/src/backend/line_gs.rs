//! Red-black line relaxation on host fields (the reference and CPU backends): the exact solve of
//! one column's tridiagonal block given its neighbours, `T z = f − H u`, from the rows of
//! [`LevelStencil::row`] (the model problem's and per-cell coefficients alike).

use crate::precision::Real;
use crate::stencil::LevelStencil;

/// Whether column (i, j) of the level has colour `color` (global parity).
#[inline(always)]
pub(crate) fn has_color(s: &LevelStencil, i: usize, j: usize, color: usize) -> bool {
    (s.block.i0 + i + s.block.j0 + j) % 2 == color
}

/// z ← T⁻¹ (f − H u) for column (i, j): `f` the column's right-hand side, `e, w, n, s_` the
/// neighbouring columns' values, `cp` scratch of nz values; `z` may not alias the inputs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn solve_given_neighbours<S: Real>(
    s: &LevelStencil,
    i: usize,
    j: usize,
    f: &[S],
    [e, w, n, s_]: [&[S]; 4],
    cp: &mut [f64],
    z: &mut [f64],
) {
    let nz = s.nz;
    let (mut cprev, mut zprev) = (0.0, 0.0);
    for k in 0..nz {
        let r = s.row(i, j, k);
        let h = r.east * e[k].to_f64()
            + r.west * w[k].to_f64()
            + r.north * n[k].to_f64()
            + r.south * s_[k].to_f64();
        let rhs = f[k].to_f64() - h;
        let inv = 1.0 / (r.diag - r.down * cprev);
        cprev = r.up * inv;
        zprev = (rhs - r.down * zprev) * inv;
        cp[k] = cprev;
        z[k] = zprev;
    }
    for k in (0..nz - 1).rev() {
        z[k] -= cp[k] * z[k + 1];
    }
}

/// z ← (1 − w) u + w z, the over-relaxation by w = `relax` of a column's solve `z` from its old
/// values `u` (nothing where w = 1: the solve exactly, whatever `u` holds).
#[inline(always)]
pub(crate) fn over_relax<S: Real>(u: &[S], z: &mut [f64], relax: f64) {
    if relax != 1.0 {
        for (z, u) in z.iter_mut().zip(u) {
            *z = (1.0 - relax) * u.to_f64() + relax * *z;
        }
    }
}
