//! The line-solve kernels of the CPU backend on groups of `L` adjacent columns of a row: the
//! Thomas sweeps of independent columns run interleaved (see [`super::column::thomas_forward`]).
//! Each function takes the row slices of its fields (halo columns included) and works on columns
//! `i0 .. i0 + L` of row `j`.

use super::column::{au, nbrs, thomas_backward, thomas_forward};
use crate::field::HostField;
use crate::stencil::LevelStencil;
use std::array::from_fn;

/// Columns per interleaved group.
pub(super) const LANES: usize = 4;

/// Calls `f(i0, true)` for each full group of [`LANES`] columns from `i0` and `f(i, false)` for
/// each remaining single column.
#[inline(always)]
pub(super) fn groups(nx: usize, mut f: impl FnMut(usize, bool)) {
    let full = nx / LANES * LANES;
    (0..full).step_by(LANES).for_each(|i| f(i, true));
    (full..nx).for_each(|i| f(i, false));
}

/// The `L` columns from `i0` of a row, as one slice.
#[inline(always)]
fn cols<const L: usize>(row: &[f64], i0: usize, nz: usize) -> &[f64] {
    &row[(i0 + 1) * nz..(i0 + 1 + L) * nz]
}

#[inline(always)]
fn cols_mut<const L: usize>(row: &mut [f64], i0: usize, nz: usize) -> &mut [f64] {
    &mut row[(i0 + 1) * nz..(i0 + 1 + L) * nz]
}

/// z ← M⁻¹ r on columns `i0 .. i0 + L` of row `j`.
#[inline(always)]
pub(super) fn line_solve<const L: usize>(
    s: &LevelStencil,
    (j, i0): (usize, usize),
    r: &[f64],
    z: &mut [f64],
    scratch: &mut [f64],
) {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let cp = scratch.as_chunks_mut::<L>().0;
    let r = cols::<L>(r, i0, nz);
    let z = cols_mut::<L>(z, i0, nz);
    thomas_forward::<L>(&s.columns[j * nx + i0..][..L], v, cp, z, |k| {
        from_fn(|l| r[l * nz + k])
    });
    thomas_backward::<L>(cp, z, |_, _, zk| zk);
}

/// r ← r − α q; z ← M⁻¹ r; returns [Σ r·r, Σ r·z] over the group.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn cg_tridiag<const L: usize>(
    s: &LevelStencil,
    (j, i0): (usize, usize),
    q: &[f64],
    r: &mut [f64],
    z: &mut [f64],
    alpha: f64,
    scratch: &mut [f64],
) -> [f64; 2] {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let cp = scratch.as_chunks_mut::<L>().0;
    let q = cols::<L>(q, i0, nz);
    let r = cols_mut::<L>(r, i0, nz);
    let z = cols_mut::<L>(z, i0, nz);
    let (mut rr, mut rz) = ([0.0; L], [0.0; L]);
    thomas_forward::<L>(&s.columns[j * nx + i0..][..L], v, cp, z, |k| {
        from_fn(|l| {
            let rk = r[l * nz + k] - alpha * q[l * nz + k];
            r[l * nz + k] = rk;
            rr[l] += rk * rk;
            rk
        })
    });
    thomas_backward::<L>(cp, z, |l, k, zk| {
        rz[l] += r[l * nz + k] * zk;
        zk
    });
    [rr.iter().sum(), rz.iter().sum()]
}

/// u_out ← u_in + ρ M⁻¹ (f − A u_in) on columns `i0 .. i0 + L` of row `j`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn smooth<const L: usize>(
    s: &LevelStencil,
    (j, i0): (usize, usize),
    f: &[f64],
    u_in: &HostField,
    out: &mut [f64],
    rho: f64,
    scratch: &mut [f64],
) {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let cp = scratch.as_chunks_mut::<L>().0;
    let c = &s.columns[j * nx + i0..][..L];
    let un: [_; L] = from_fn(|l| nbrs(u_in, i0 + l, j));
    let f = cols::<L>(f, i0, nz);
    let out = cols_mut::<L>(out, i0, nz);
    thomas_forward::<L>(c, v, cp, out, |k| {
        from_fn(|l| f[l * nz + k] - au(&c[l], v, &un[l], k))
    });
    thomas_backward::<L>(cp, out, |l, k, zk| un[l].c[k] + rho * zk);
}

/// f_c ← scale · Σ children of r_f; u_c ← ρ M⁻¹ f_c on coarse columns `i0 .. i0 + L` of coarse
/// row `j`; `r0`, `r1` are the fine rows 2j and 2j + 1.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn restrict_smooth<const L: usize>(
    coarse: &LevelStencil,
    (j, i0): (usize, usize),
    (r0, r1): (&[f64], &[f64]),
    f: &mut [f64],
    u: &mut [f64],
    (rho, scale): (f64, f64),
    scratch: &mut [f64],
) {
    let (nx, nz, v) = (coarse.nx(), coarse.nz, &*coarse.vertical);
    let cp = scratch.as_chunks_mut::<L>().0;
    // The 2L fine columns under the group, in each of the two fine rows.
    let a = &r0[(2 * i0 + 1) * nz..(2 * i0 + 1 + 2 * L) * nz];
    let b = &r1[(2 * i0 + 1) * nz..(2 * i0 + 1 + 2 * L) * nz];
    let f = cols_mut::<L>(f, i0, nz);
    let u = cols_mut::<L>(u, i0, nz);
    thomas_forward::<L>(&coarse.columns[j * nx + i0..][..L], v, cp, u, |k| {
        from_fn(|l| {
            let (w, e) = (2 * l * nz + k, (2 * l + 1) * nz + k);
            let fk = scale * ((a[w] + a[e]) + (b[w] + b[e]));
            f[l * nz + k] = fk;
            fk
        })
    });
    thomas_backward::<L>(cp, u, |_, _, zk| rho * zk);
}
