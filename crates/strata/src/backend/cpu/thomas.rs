//! The line-solve kernels of the CPU backend on groups of `L` adjacent columns of a row. Each runs
//! in three phases: the right-hand side of the group's column systems (a vectorised loop over k),
//! the interleaved forward Thomas sweeps, and the backward sweeps that write the result. Each
//! function takes the row slices of its fields (halo columns included) and works on columns
//! `i0 .. i0 + L` of row `j`.

use super::column::{
    apply_column, apply_column_cross, dot, nbrs, thomas_backward, thomas_forward, Cross, Nbrs,
};
use crate::field::HostField;
use crate::precision::Real;
use crate::problem::Column;
use crate::stencil::LevelStencil;

/// Columns per interleaved group.
pub(super) const LANES: usize = 8;

/// Per-thread scratch of a group: right-hand sides (lane-major, `rhs[l · nz + k]`; the sweeps'
/// solution after the backward sweep), modified super-diagonal, intermediate z (k-major).
pub(super) struct Scratch<'a, const L: usize> {
    rhs: &'a mut [f64],
    cp: &'a mut [[f64; L]],
    zs: &'a mut [[f64; L]],
}

/// Values of scratch a group of [`LANES`] columns of height nz needs.
pub(super) fn scratch_len(nz: usize) -> usize {
    3 * LANES * nz
}

impl<'a, const L: usize> Scratch<'a, L> {
    /// Carves the scratch of an `L`-group out of `buf` ([`scratch_len`] values).
    #[inline(always)]
    pub fn new(buf: &'a mut [f64], nz: usize) -> Self {
        let (rhs, rest) = buf.split_at_mut(L * nz);
        let (cp, zs) = rest.split_at_mut(L * nz);
        Self {
            rhs,
            cp: &mut cp.as_chunks_mut::<L>().0[..nz],
            zs: &mut zs.as_chunks_mut::<L>().0[..nz],
        }
    }
}

/// Calls `f(i0, true)` for each full group of [`LANES`] columns from `i0` and `f(i, false)` for
/// each remaining single column.
#[inline(always)]
pub(super) fn groups(nx: usize, mut f: impl FnMut(usize, bool)) {
    // Plain loops: an iterator adaptor's fold would be a function of its own, compiled without
    // the caller's instructions (`isa::run`).
    let full = nx / LANES * LANES;
    let mut i = 0;
    while i < full {
        f(i, true);
        i += LANES;
    }
    for i in full..nx {
        f(i, false);
    }
}

/// The first column of row `j` (0-based in the block) of `color`: of red or black (0, 1) every
/// row has one; of a quarter colour (2–5: the parities of i and j) every other row, the others
/// none (`s.nx()`).
#[inline(always)]
pub(super) fn first_of_colour(s: &LevelStencil, j: usize, color: usize) -> usize {
    let (gi0, gj) = (s.block.i0 % 2, (s.block.j0 + j) % 2);
    if color < 2 {
        (color + 2 - (gi0 + gj) % 2) % 2
    } else if gj == (color - 2) >> 1 {
        ((color - 2) % 2 + 2 - gi0) % 2
    } else {
        s.nx()
    }
}

/// `$body` for each group of row `$j`'s columns of `$color` (every other column;
/// [`first_of_colour`]), with `$is` the group's columns (`[usize; $l]`), `$buf` the thread's
/// scratch and the const `$l` the group's width: [`LANES`] for the full groups, 1 for the
/// columns left over, compiled for the backend's instructions (`CpuBackend::with_scratch`).
macro_rules! colour_groups {
    ($b:expr, $s:expr, $j:expr, $color:expr, |$is:ident, $buf:ident, $l:ident| $body:expr) => {{
        let (s, j, color): (&LevelStencil, usize, usize) = ($s, $j, $color);
        let nx = s.nx();
        $b.with_scratch(
            thomas::scratch_len(s.nz),
            #[inline(always)]
            |$buf| {
                let mut i = thomas::first_of_colour(s, j, color);
                while i + 2 * (LANES - 1) < nx {
                    const $l: usize = LANES;
                    let $is: [usize; $l] = std::array::from_fn(|l| i + 2 * l);
                    $body;
                    i += 2 * LANES;
                }
                while i < nx {
                    const $l: usize = 1;
                    let $is: [usize; $l] = [i];
                    $body;
                    i += 2;
                }
            },
        )
    }};
}
pub(super) use colour_groups;

/// The `L` columns from `i0` of a row, as one slice.
#[inline(always)]
fn cols<const L: usize, S>(row: &[S], i0: usize, nz: usize) -> &[S] {
    &row[(i0 + 1) * nz..(i0 + 1 + L) * nz]
}

#[inline(always)]
fn cols_mut<const L: usize, S>(row: &mut [S], i0: usize, nz: usize) -> &mut [S] {
    &mut row[(i0 + 1) * nz..(i0 + 1 + L) * nz]
}

/// z ← M⁻¹ r on columns `i0 .. i0 + L` of row `j`.
#[inline(always)]
pub(super) fn line_solve<const L: usize, S: Real>(
    s: &LevelStencil,
    (j, i0): (usize, usize),
    r: &[S],
    z: &mut [S],
    buf: &mut [f64],
) {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let sc = Scratch::<L>::new(buf, nz);
    let r = cols::<L, S>(r, i0, nz);
    for (x, rv) in sc.rhs.iter_mut().zip(r) {
        *x = rv.to_f64();
    }
    let z = cols_mut::<L, S>(z, i0, nz);
    thomas_forward::<L>(&s.columns[j * nx + i0..][..L], v, sc.rhs, sc.cp, sc.zs);
    thomas_backward::<L>(sc.cp, sc.zs, sc.rhs);
    for (zv, x) in z.iter_mut().zip(&*sc.rhs) {
        *zv = S::from_f64(*x);
    }
}

/// r ← r − α q; z ← M⁻¹ r; returns [Σ r·r, Σ r·z] over the group.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn cg_tridiag<const L: usize, S: Real>(
    s: &LevelStencil,
    (j, i0): (usize, usize),
    q: &[S],
    r: &mut [S],
    z: &mut [S],
    alpha: f64,
    buf: &mut [f64],
) -> [f64; 2] {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let sc = Scratch::<L>::new(buf, nz);
    let q = cols::<L, S>(q, i0, nz);
    let r = cols_mut::<L, S>(r, i0, nz);
    let z = cols_mut::<L, S>(z, i0, nz);
    for ((rv, qv), x) in r.iter_mut().zip(q).zip(sc.rhs.iter_mut()) {
        *rv = S::from_f64(rv.to_f64() - alpha * qv.to_f64());
        *x = rv.to_f64();
    }
    thomas_forward::<L>(&s.columns[j * nx + i0..][..L], v, sc.rhs, sc.cp, sc.zs);
    thomas_backward::<L>(sc.cp, sc.zs, sc.rhs);
    for (zv, x) in z.iter_mut().zip(&*sc.rhs) {
        *zv = S::from_f64(*x);
    }
    [dot(r, r), dot(r, z)]
}

/// u_out ← u_in + ρ M⁻¹ (f − A u_in) on columns `i0 .. i0 + L` of row `j`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn smooth<const L: usize, S: Real>(
    s: &LevelStencil,
    (j, i0): (usize, usize),
    f: &[S],
    u_in: &HostField<S>,
    out: &mut [S],
    rho: f64,
    buf: &mut [f64],
) {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let sc = Scratch::<L>::new(buf, nz);
    let c = &s.columns[j * nx + i0..][..L];
    let f = cols::<L, S>(f, i0, nz);
    for l in 0..L {
        let (fl, rhs) = (&f[l * nz..][..nz], &mut sc.rhs[l * nz..][..nz]);
        apply_column(
            &c[l],
            v,
            &nbrs(u_in, i0 + l, j),
            #[inline(always)]
            |k, au| rhs[k] = fl[k].to_f64() - au,
        );
    }
    thomas_forward::<L>(c, v, sc.rhs, sc.cp, sc.zs);
    let u = cols::<L, S>(
        &u_in.data[u_in.offset(0, j + 1)..][..u_in.row_len()],
        i0,
        nz,
    );
    let out = cols_mut::<L, S>(out, i0, nz);
    thomas_backward::<L>(sc.cp, sc.zs, sc.rhs);
    for ((o, uv), x) in out.iter_mut().zip(u).zip(&*sc.rhs) {
        *o = S::from_f64(uv.to_f64() + rho * x);
    }
}

/// f_c ← scale · Σ children of r_f; u_c ← ρ M⁻¹ f_c on coarse columns `i0 .. i0 + L` of coarse
/// row `j`; `r0`, `r1` are the fine rows 2j and 2j + 1.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn restrict_smooth<const L: usize, S: Real>(
    coarse: &LevelStencil,
    (j, i0): (usize, usize),
    (r0, r1): (&[S], &[S]),
    f: &mut [S],
    u: &mut [S],
    (rho, scale): (f64, f64),
    buf: &mut [f64],
) {
    let (nx, nz, v) = (coarse.nx(), coarse.nz, &*coarse.vertical);
    let sc = Scratch::<L>::new(buf, nz);
    let f = cols_mut::<L, S>(f, i0, nz);
    for l in 0..L {
        // The four fine children of coarse column i0 + l: two in each fine row.
        let o = (2 * (i0 + l) + 1) * nz;
        let (aw, ae) = (&r0[o..o + nz], &r0[o + nz..o + 2 * nz]);
        let (bw, be) = (&r1[o..o + nz], &r1[o + nz..o + 2 * nz]);
        let rhs = &mut sc.rhs[l * nz..][..nz];
        for (k, fv) in f[l * nz..][..nz].iter_mut().enumerate() {
            let sum = (aw[k].to_f64() + ae[k].to_f64()) + (bw[k].to_f64() + be[k].to_f64());
            *fv = S::from_f64(scale * sum);
            rhs[k] = fv.to_f64();
        }
    }
    thomas_forward::<L>(&coarse.columns[j * nx + i0..][..L], v, sc.rhs, sc.cp, sc.zs);
    let u = cols_mut::<L, S>(u, i0, nz);
    thomas_backward::<L>(sc.cp, sc.zs, sc.rhs);
    for (uv, x) in u.iter_mut().zip(&*sc.rhs) {
        *uv = S::from_f64(rho * x);
    }
}

/// z ← T⁻¹ (f − A u) on the `L` columns `is` of row `j`, one colour of the red-black ordering
/// (no two of them neighbours; on a level with the sphere's diagonal couplings one quarter
/// colour, so no two diagonal neighbours either): the correction of a half- or quarter sweep of a
/// group, which the caller applies in place, u ← u + w z, as `update(l, z)` receives lane l's
/// column of z (after every read of u here). `f` is the row of f (halo included), `nbrs_of(i)`
/// column i's neighbourhood in u, `cross_of(i)` its diagonal couplings (`None` without).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn smooth_color<'a, const L: usize, S: Real + 'a>(
    s: &LevelStencil,
    j: usize,
    is: &[usize; L],
    f: &[S],
    nbrs_of: impl Fn(usize) -> Nbrs<'a, S>,
    cross_of: impl Fn(usize) -> Option<Cross<'a, S>>,
    buf: &mut [f64],
    mut update: impl FnMut(usize, &[f64]),
) {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let sc = Scratch::<L>::new(buf, nz);
    let cols: [Column; L] = std::array::from_fn(|l| s.columns[j * nx + is[l]]);
    for (l, col) in cols.iter().enumerate() {
        let fl = &f[(is[l] + 1) * nz..][..nz];
        let rhs = &mut sc.rhs[l * nz..][..nz];
        let cross = cross_of(is[l]);
        apply_column_cross(
            col,
            v,
            &nbrs_of(is[l]),
            cross.as_ref(),
            #[inline(always)]
            |k, au| rhs[k] = fl[k].to_f64() - au,
        );
    }
    thomas_forward::<L>(&cols, v, sc.rhs, sc.cp, sc.zs);
    thomas_backward::<L>(sc.cp, sc.zs, sc.rhs);
    for l in 0..L {
        update(l, &sc.rhs[l * nz..][..nz]);
    }
}

/// u ← T⁻¹ (f − w H u) on the `L` columns `is` of row `j`, one colour of the red-black ordering
/// on a level without cross terms: red-black's step from zero, whose columns' old values are not
/// read. `nbrs_of(i)`: column i's neighbourhood in u with a column of zeros as its own (so that
/// the operator gives H u alone); `None`: the first half-sweep, the line solve of f (no
/// neighbour read). `write(l, z)` receives lane l's column of the result.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn solve_color<'a, const L: usize, S: Real + 'a, N: Fn(usize) -> Nbrs<'a, S>>(
    s: &LevelStencil,
    j: usize,
    is: &[usize; L],
    f: &[S],
    (nbrs_of, w): (Option<N>, f64),
    buf: &mut [f64],
    mut write: impl FnMut(usize, &[f64]),
) {
    let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
    let sc = Scratch::<L>::new(buf, nz);
    let cols: [Column; L] = std::array::from_fn(|l| s.columns[j * nx + is[l]]);
    for (l, col) in cols.iter().enumerate() {
        let fl = &f[(is[l] + 1) * nz..][..nz];
        let rhs = &mut sc.rhs[l * nz..][..nz];
        match &nbrs_of {
            None => {
                for (x, fv) in rhs.iter_mut().zip(fl) {
                    *x = fv.to_f64();
                }
            }
            Some(nb) => apply_column(
                col,
                v,
                &nb(is[l]),
                #[inline(always)]
                |k, hu| rhs[k] = fl[k].to_f64() - w * hu,
            ),
        }
    }
    thomas_forward::<L>(&cols, v, sc.rhs, sc.cp, sc.zs);
    thomas_backward::<L>(sc.cp, sc.zs, sc.rhs);
    for l in 0..L {
        write(l, &sc.rhs[l * nz..][..nz]);
    }
}
