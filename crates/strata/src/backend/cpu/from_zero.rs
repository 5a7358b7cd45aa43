//! Red-black's step from zero on the CPU (docs/MODEL.md §9.3): the line solve on one colour's
//! columns ([`crate::backend::LineKernels::line_solve_color`]), then the other colour's
//! half-sweep from the first's values alone
//! ([`crate::backend::LineKernels::smooth_color_after_solve`]), each on the colour's columns in
//! groups of [`LANES`] solved in lockstep, as the half-sweeps are.

use super::lines::ColumnWriter;
use super::*;
use crate::backend::cpu::column::Nbrs;

impl CpuBackend {
    /// Whether level `s` takes the colour forms of the step from zero for `color`: the model
    /// problem's columns without cross terms, a red or black colour. Elsewhere both calls take
    /// the trait's defaults (the line solve on every column, then `smooth_color`), so that the
    /// pair is decided alike.
    pub(super) fn colour_forms(s: &LevelStencil, color: usize) -> bool {
        color < 2 && s.cells.is_none() && !s.has_cross()
    }

    /// u ← T⁻¹ (f − w H u) on the columns of `color` of a level without cell coefficients or
    /// cross terms, their old values not read: `w` `None`, the line solve of f from zero (no
    /// neighbour read; u may be the output of another field's solve); `Some(w)`, the half-sweep
    /// after the other colour's solve. The other colour's columns are neither written nor, with
    /// `None`, read.
    pub(super) fn colour_from_zero<S: Real>(
        &self,
        s: &LevelStencil,
        f: &HostField<S>,
        u: &mut HostField<S>,
        color: usize,
        w: Option<f64>,
    ) {
        let (nx, ny, nz) = (s.nx(), s.ny(), s.nz);
        let offset = |ih: usize, jh: usize| (jh * (nx + 2) + ih) * nz;
        let (f_row, row_len) = (|j: usize| f.offset(0, j + 1), f.row_len());
        // The own column the operator sees: zeros, so that it gives H u alone.
        let zero = vec![S::from_f64(0.0); nz];
        let data = ColumnWriter(u.data.as_mut_ptr());
        self.pool.install(|| {
            (0..ny).into_par_iter().for_each(|j| {
                let frow = &f.data[f_row(j)..][..row_len];
                // SAFETY: a column of `color` reads its four neighbours, of the other colour,
                // which no thread writes in this call, and writes only itself, which no other
                // thread reads or writes (its own old values are not read); all lie inside
                // `u.data` (halo included), which outlives the loop.
                let nbrs_of = |i: usize| unsafe {
                    let (ih, jh) = (i + 1, j + 1);
                    Nbrs {
                        c: &zero[..],
                        e: data.column(offset(ih + 1, jh), nz),
                        w: data.column(offset(ih - 1, jh), nz),
                        n: data.column(offset(ih, jh + 1), nz),
                        s: data.column(offset(ih, jh - 1), nz),
                    }
                };
                let nb = (w.map(|_| nbrs_of), w.unwrap_or(0.0));
                let write = |i: usize, z: &[f64]| {
                    // SAFETY: as above: this thread's own column i, written once, after the
                    // kernel's reads of its neighbours, and no other slice of it lives.
                    let col = unsafe { data.column_mut(offset(i + 1, j + 1), nz) };
                    crate::field::store(col, z);
                };
                colour_groups!(self, s, j, color, |is, buf, L| {
                    thomas::solve_color::<L, _, _>(
                        s,
                        j,
                        &is,
                        frow,
                        nb,
                        buf,
                        #[inline(always)]
                        |l, z| write(is[l], z),
                    )
                })
            })
        });
    }
}
