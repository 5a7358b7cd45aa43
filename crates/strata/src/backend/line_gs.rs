//! Red-black line relaxation on host fields (the reference and CPU backends): the exact solve of
//! one column's tridiagonal block given its neighbours, `T z = f − H u`, from the rows of
//! [`LevelStencil::row`] (the model problem's and per-cell coefficients alike).

use crate::precision::Real;
use crate::stencil::LevelStencil;

/// Whether column (i, j) of the level has colour `color` (global parity): 0 and 1 the
/// checkerboard's halves, 2 + q the quarter of columns with i ≡ q & 1 and j ≡ q >> 1 (mod 2)
/// ([`LevelStencil::check_colour`]).
#[inline(always)]
pub(crate) fn has_color(s: &LevelStencil, i: usize, j: usize, color: usize) -> bool {
    let (gi, gj) = (s.block.i0 + i, s.block.j0 + j);
    if color < 2 {
        (gi + gj) % 2 == color
    } else {
        let q = color - 2;
        gi % 2 == q & 1 && gj % 2 == q >> 1
    }
}

/// z ← T⁻¹ (f − H u − C u) for column (i, j): `f` the column's right-hand side, `e, w, n, s_`
/// the neighbouring columns' values, `diagonal` the diagonal neighbours' (ne, nw, se, sw: where
/// the level has the sphere's diagonal couplings, §16.1), `own` the column's current values
/// (read by the cross terms C alone: their own part is lagged, docs/MODEL.md §23.3), `cp`
/// scratch of nz values; `z` may not alias the inputs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn solve_given_neighbours<S: Real>(
    s: &LevelStencil,
    i: usize,
    j: usize,
    f: &[S],
    [e, w, n, s_]: [&[S]; 4],
    diagonal: Option<[&[S]; 4]>,
    own: &[S],
    cp: &mut [f64],
    z: &mut [f64],
) {
    let nz = s.nz;
    let (mut cprev, mut zprev) = (0.0, 0.0);
    for k in 0..nz {
        let r = s.row(i, j, k);
        let mut h = r.east * e[k].to_f64()
            + r.west * w[k].to_f64()
            + r.north * n[k].to_f64()
            + r.south * s_[k].to_f64();
        if let Some(sl) = &s.slant {
            let (c, en) = (own[k].to_f64(), sl.row(i, j, k));
            for (d, x) in [e, w, n, s_].iter().enumerate() {
                if k + 1 < nz {
                    h += en[2 * d] * (x[k + 1].to_f64() - c);
                }
                if k > 0 {
                    h += en[2 * d + 1] * (x[k - 1].to_f64() - c);
                }
            }
        }
        if let Some(d) = diagonal {
            let c = own[k].to_f64();
            for (a, x) in s.diagonal_row(i, j, k).iter().zip(d) {
                h += a * (x[k].to_f64() - c);
            }
        }
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
