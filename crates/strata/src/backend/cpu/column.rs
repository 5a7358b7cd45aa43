//! Column kernels of the CPU backend: the operator on one column (a branch-free loop over k that
//! vectorises), and the Thomas sweeps over groups of `L` columns in lockstep.

use crate::field::HostField;
use crate::precision::Real;
use crate::problem::{Column, VerticalGrid};
use crate::stencil::LevelStencil;

/// A column and its four horizontal neighbours, each `nz` long.
pub(super) struct Nbrs<'a, S> {
    pub c: &'a [S],
    pub e: &'a [S],
    pub w: &'a [S],
    pub n: &'a [S],
    pub s: &'a [S],
}

/// The neighbourhood of interior column `(i, j)` of `x`.
#[inline(always)]
pub(super) fn nbrs<S: Real>(x: &HostField<S>, i: usize, j: usize) -> Nbrs<'_, S> {
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

/// The neighbours a column's cross terms read and its couplings to them: the four diagonal
/// neighbours (`ne, nw, se, sw`, each `nz` long) of the sphere's nine-point operator
/// (docs/MODEL.md §16.1), and over orography the four lateral neighbours, read one level
/// above and below (§23).
pub(super) struct Cross<'a, S> {
    alpha: [f64; 4],
    x: [&'a [S]; 4],
    /// Orography's slant couplings, when there are any.
    slant: Option<SlantNbrs<'a, S>>,
}

/// The slant couplings' weights, the column's lateral neighbours `e, w, n, s` and the column
/// `(i, j)`.
type SlantNbrs<'a, S> = (&'a crate::problem::Slant, [&'a [S]; 4], (usize, usize));

/// The cross-term neighbourhood of interior column `(i, j)` of `x` when the stencil has cross
/// terms.
#[inline(always)]
pub(super) fn cross<'a, S: Real>(
    s: &'a LevelStencil,
    x: &'a HostField<S>,
    i: usize,
    j: usize,
) -> Option<Cross<'a, S>> {
    if s.cross.is_none() && s.slant.is_none() {
        return None;
    }
    let dg = s.cross.as_ref().map(|c| c[j * s.nx() + i]);
    let (nz, row) = (x.nz, x.row_len());
    let o = x.offset(i + 1, j + 1);
    let d = &x.data;
    let slant = s.slant.as_deref().map(|w| {
        let nb = nbrs(x, i, j);
        (w, [nb.e, nb.w, nb.n, nb.s], (i, j))
    });
    Some(Cross {
        alpha: dg.map_or([0.0; 4], |dg| [dg.ne, dg.nw, dg.se, dg.sw]),
        x: [
            &d[o + row + nz..][..nz],
            &d[o + row - nz..][..nz],
            &d[o - row + nz..][..nz],
            &d[o - row - nz..][..nz],
        ],
        slant,
    })
}

impl<'a, S: Real> Cross<'a, S> {
    /// The sphere's diagonal couplings `alpha` (ne, nw, se, sw) of a column whose diagonal
    /// neighbours' values are `x` (the same order).
    #[inline(always)]
    pub(super) fn diagonal(alpha: [f64; 4], x: [&'a [S]; 4]) -> Self {
        Self {
            alpha,
            x,
            slant: None,
        }
    }

    /// (C x) at level k: `d_k Σ α_D (x_D − x_c)` (the sphere's diagonal couplings; a stencil
    /// with orography has cell coefficients and comes to [`Cross::slant_at`]).
    #[inline(always)]
    pub(super) fn at(&self, d: f64, centre: f64, k: usize) -> f64 {
        let mut h = 0.0;
        for (a, x) in self.alpha.iter().zip(&self.x) {
            h += a * (x[k].to_f64() - centre);
        }
        d * h
    }

    /// Orography's slant couplings at level k (docs/MODEL.md §23.3): 0 without orography.
    #[inline(always)]
    pub(super) fn slant_at(&self, centre: f64, k: usize) -> f64 {
        let Some((w, nb, (i, j))) = &self.slant else {
            return 0.0;
        };
        let e = w.row(*i, *j, k);
        let mut h = 0.0;
        for (d, x) in nb.iter().enumerate() {
            if k + 1 < w.nz {
                h += e[2 * d] * (x[k + 1].to_f64() - centre);
            }
            if k > 0 {
                h += e[2 * d + 1] * (x[k - 1].to_f64() - centre);
            }
        }
        h
    }

    /// (C x) at level k with per-cell diagonal entries `[ne, nw, se, sw]` (coefficient fields).
    #[inline(always)]
    pub(super) fn with_entries(&self, e: [f64; 4], centre: f64, k: usize) -> f64 {
        let mut h = 0.0;
        for (a, x) in e.iter().zip(&self.x) {
            h += a * (x[k].to_f64() - centre);
        }
        h
    }
}

/// Calls `emit(k, (A₇ x + C x)_k)`: [`apply_column`] plus the cross terms when there are any.
#[inline(always)]
pub(super) fn apply_column_cross<S: Real>(
    col: &Column,
    v: &VerticalGrid,
    x: &Nbrs<S>,
    cross: Option<&Cross<S>>,
    mut emit: impl FnMut(usize, f64),
) {
    match cross {
        None => apply_column(col, v, x, emit),
        Some(c) => apply_column(
            col,
            v,
            x,
            #[inline(always)]
            |k, au| emit(k, au + c.at(v.d[k], x.c[k].to_f64(), k)),
        ),
    }
}

/// Calls `emit(k, (A x)_k)` for k = 0, 1, …, nz − 1 (nz ≥ 2). The Neumann ends are peeled off so
/// that the interior loop has no branch.
#[inline(always)]
pub(super) fn apply_column<S: Real>(
    col: &Column,
    v: &VerticalGrid,
    x: &Nbrs<S>,
    mut emit: impl FnMut(usize, f64),
) {
    let nz = x.c.len();
    let (c, e, w, n, s) = (x.c, &x.e[..nz], &x.w[..nz], &x.n[..nz], &x.s[..nz]);
    let (amb, b, cc, d) = (&v.amb[..nz], &v.b[..nz], &v.c[..nz], &v.d[..nz]);
    let (t, at) = (col.area, col.alpha_t);
    let (ae, aw, an, as_) = (col.alpha_e, col.alpha_w, col.alpha_n, col.alpha_s);
    let horiz = |k: usize| {
        ae * e[k].to_f64() + aw * w[k].to_f64() + an * n[k].to_f64() + as_ * s[k].to_f64()
    };
    let diag = |k: usize| t * amb[k] - at * d[k];
    let c = |k: usize| c[k].to_f64();
    emit(0, diag(0) * c(0) + t * b[0] * c(1) + d[0] * horiz(0));
    for k in 1..nz - 1 {
        emit(
            k,
            diag(k) * c(k) + t * (b[k] * c(k + 1) + cc[k] * c(k - 1)) + d[k] * horiz(k),
        );
    }
    let k = nz - 1;
    emit(k, diag(k) * c(k) + t * cc[k] * c(k - 1) + d[k] * horiz(k));
}

/// Whether values computed from fields of `S` lose precision when stored as `T` (an fp64
/// residual stored in fp32): then its norm must be taken before the rounding ([`SumSq`]);
/// otherwise `dot` of the stored values is the same sum, and the faster one.
#[inline(always)]
pub(super) const fn narrows<S: Real, T: Real>() -> bool {
    std::mem::size_of::<T>() < std::mem::size_of::<S>()
}

/// One column's residual r = f − (A x)_k, stored level by level as the operator is applied
/// ([`ResidualSink::emit`]), and its Σ r² ([`ResidualSink::finish`]): of the values before they
/// are rounded where the store narrows them ([`narrows`]: they are kept in a column of fp64
/// scratch, and summed as [`dot`] sums, after the loop, so that the loop stays a vector loop),
/// else of the stored values.
pub(super) struct ResidualSink<'a, S, T> {
    f: &'a [S],
    r: &'a mut [T],
    unrounded: &'a mut [f64],
}

impl<'a, S: Real, T: Real> ResidualSink<'a, S, T> {
    /// The residual of right-hand side column `f` into column `r`; `scratch` holds at least a
    /// column (used only where the store narrows).
    #[inline(always)]
    pub(super) fn new(f: &'a [S], r: &'a mut [T], scratch: &'a mut [f64]) -> Self {
        let unrounded = &mut scratch[..f.len()];
        Self { f, r, unrounded }
    }

    /// Stores r_k = f_k − `au` ((A x)_k).
    #[inline(always)]
    pub(super) fn emit(&mut self, k: usize, au: f64) {
        let r = self.f[k].to_f64() - au;
        self.r[k] = T::from_f64(r);
        if narrows::<S, T>() {
            self.unrounded[k] = r;
        }
    }

    /// Σ r² of the column.
    #[inline(always)]
    pub(super) fn finish(self) -> f64 {
        if narrows::<S, T>() {
            dot(self.unrounded, self.unrounded)
        } else {
            dot(self.r, self.r)
        }
    }
}

/// Σ a·b with four independent partial sums (so it vectorises), in a fixed order.
#[inline(always)]
pub(super) fn dot<S: Real>(a: &[S], b: &[S]) -> f64 {
    let b = &b[..a.len()];
    let mut acc = [0.0; 4];
    let (ac, ar) = a.as_chunks::<4>();
    let (bc, br) = b.as_chunks::<4>();
    for (x, y) in ac.iter().zip(bc) {
        for l in 0..4 {
            acc[l] += x[l].to_f64() * y[l].to_f64();
        }
    }
    let tail: f64 = ar
        .iter()
        .zip(br)
        .map(|(x, y)| x.to_f64() * y.to_f64())
        .sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// The `L` lanes of a lane-major group buffer (`buf[l · nz + k]`: each column contiguous).
#[inline(always)]
fn lanes<const L: usize>(buf: &[f64], nz: usize) -> [&[f64]; L] {
    std::array::from_fn(|l| &buf[l * nz..][..nz])
}

/// Forward Thomas sweep for `L` columns in lockstep. `rhs` holds the right-hand sides
/// lane-major (`rhs[l · nz + k]`, so that the loops that fill it run along contiguous columns
/// and vectorise), and the modified super-diagonal and the intermediate solution are left
/// k-major in `cp` and `zs`, so the loop body is plain `[f64; L]` arithmetic that vectorises.
/// Interleaving independent columns hides the latency of the division chain that bounds a
/// one-column sweep (and the eight loads per level that gather the right-hand sides).
#[inline(always)]
pub(super) fn thomas_forward<const L: usize>(
    cols: &[Column],
    v: &VerticalGrid,
    rhs: &[f64],
    cp: &mut [[f64; L]],
    zs: &mut [[f64; L]],
) {
    let nz = v.amb.len();
    let cols: &[Column; L] = cols.try_into().expect("L columns");
    let rhs = lanes::<L>(rhs, nz);
    let (cp, zs) = (&mut cp[..nz], &mut zs[..nz]);
    let t: [f64; L] = std::array::from_fn(|l| cols[l].area);
    let at: [f64; L] = std::array::from_fn(|l| cols[l].alpha_t);
    let (mut cprev, mut zprev) = ([0.0; L], [0.0; L]);
    for k in 0..nz {
        let (amb, b, c, d) = (v.amb[k], v.b[k], v.c[k], v.d[k]);
        for l in 0..L {
            let lower = t[l] * c;
            let inv = 1.0 / (t[l] * amb - at[l] * d - lower * cprev[l]);
            cprev[l] = t[l] * b * inv;
            zprev[l] = (rhs[l][k] - lower * zprev[l]) * inv;
        }
        cp[k] = cprev;
        zs[k] = zprev;
    }
}

/// Backward Thomas sweep over the output of [`thomas_forward`]: the solution, lane-major, into
/// `out` (`out[l · nz + k]`; the right-hand sides' buffer may be reused), for the caller to
/// store along each contiguous column.
#[inline(always)]
pub(super) fn thomas_backward<const L: usize>(cp: &[[f64; L]], zs: &[[f64; L]], out: &mut [f64]) {
    let nz = zs.len();
    let cp = &cp[..nz];
    let mut rest = &mut out[..L * nz];
    let out: [&mut [f64]; L] = std::array::from_fn(|_| {
        let (lane, tail) = std::mem::take(&mut rest).split_at_mut(nz);
        rest = tail;
        lane
    });
    let mut next = zs[nz - 1];
    for l in 0..L {
        out[l][nz - 1] = next[l];
    }
    for k in (0..nz - 1).rev() {
        for l in 0..L {
            next[l] = zs[k][l] - cp[k][l] * next[l];
            out[l][k] = next[l];
        }
    }
}
