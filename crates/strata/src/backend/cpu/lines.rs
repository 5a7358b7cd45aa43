//! The kernels built on the line solve: M⁻¹, the fused CG Tridiag, Smooth, RestrictSmooth.

use super::*;
use crate::backend::LineKernels;

/// `$body` for each group of the row's columns, with `$i` the group's first column, `$cp` the
/// thread's scratch and the const `$l` the group's width: [`LANES`] for the full groups, 1 for
/// the columns left over ([`groups`]), compiled for the backend's instructions
/// ([`CpuBackend::with_scratch`]).
macro_rules! lane_groups {
    ($b:expr, $nx:expr, $nz:expr, |$i:ident, $cp:ident, $l:ident| $body:expr) => {
        $b.with_scratch(
            thomas::scratch_len($nz),
            #[inline(always)]
            |$cp| {
                groups(
                    $nx,
                    #[inline(always)]
                    |$i, full| {
                        if full {
                            const $l: usize = LANES;
                            $body
                        } else {
                            const $l: usize = 1;
                            $body
                        }
                    },
                )
            },
        )
    };
}

impl CpuBackend {
    // z = M^-1 r; traffic: read r, write z: 2.
    fn line_solve_t<S: Real>(&self, s: &LevelStencil, r: &HostField<S>, z: &mut HostField<S>) {
        if s.cells.is_some() {
            self.cells_line_solve(s, r, z);
            return;
        }
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(z)
                .zip(rows_ref(r))
                .enumerate()
                .for_each(|(j, (zr, rr))| {
                    lane_groups!(self, nx, nz, |i, cp, L| thomas::line_solve::<L, _>(
                        s,
                        (j, i),
                        rr,
                        zr,
                        cp
                    ))
                })
        });
    }

    // r -= alpha q; z = M^-1 r; sums r.r and r.z; traffic: read q, r; write r, z: 4
    // (paper's Mem^(C): 9, which counts the Thomas intermediates).
    fn cg_tridiag_t<S: Real>(
        &self,
        s: &LevelStencil,
        q: &HostField<S>,
        r: &mut HostField<S>,
        z: &mut HostField<S>,
        alpha: f64,
    ) -> [f64; 2] {
        if s.cells.is_some() {
            return self.cells_cg_tridiag(s, q, r, z, alpha);
        }
        let (nx, nz) = (s.nx(), s.nz);
        self.reduce_rows(s.ny(), |parts| {
            rows(r)
                .zip(rows(z))
                .zip(rows_ref(q))
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (((rrow, zrow), qrow), part))| {
                    let mut acc = [0.0; 2];
                    let mut add = |d: [f64; 2]| {
                        acc[0] += d[0];
                        acc[1] += d[1];
                    };
                    lane_groups!(self, nx, nz, |i, cp, L| add(thomas::cg_tridiag::<L, _>(
                        s,
                        (j, i),
                        qrow,
                        rrow,
                        zrow,
                        alpha,
                        cp
                    )));
                    *part = acc;
                })
        })
    }

    // u_out = u_in + rho M^-1 (f - A u_in); traffic: read f, u_in; write u_out: 3
    // (paper's two-kernel Smooth: 8).
    fn smooth_color_t<S: Real>(
        &self,
        s: &LevelStencil,
        f: &HostField<S>,
        u: &mut HostField<S>,
        color: usize,
        relax: f64,
    ) {
        use crate::backend::line_gs::{has_color, over_relax, solve_given_neighbours};
        let (nx, ny, nz) = (s.nx(), s.ny(), s.nz);
        let offset = |ih: usize, jh: usize| (jh * (nx + 2) + ih) * nz;
        if s.cells.is_none() {
            self.smooth_color_lanes(s, f, u, color, relax);
            return;
        }
        let data = ColumnWriter(u.data.as_mut_ptr());
        self.pool.install(|| {
            (0..ny).into_par_iter().for_each(|j| {
                with_scratch(2 * nz, |scratch| {
                    let (cp, z) = scratch.split_at_mut(nz);
                    for i in (0..nx).filter(|&i| has_color(s, i, j, color)) {
                        let (ih, jh) = (i + 1, j + 1);
                        // SAFETY: the four neighbours of a column of `color` have the other
                        // colour, which no thread writes in this call, and each thread writes
                        // only its own columns of `color`: the slices below are never written
                        // while they are read, and the one written is this thread's alone. All
                        // lie inside `u.data` (halo included), which outlives the loop.
                        let nbrs = unsafe {
                            [(ih + 1, jh), (ih - 1, jh), (ih, jh + 1), (ih, jh - 1)]
                                .map(|(a, b)| data.column(offset(a, b), nz))
                        };
                        // SAFETY: as above: on a level with diagonal couplings the colour is a
                        // quarter (`check_colour`), so the diagonal neighbours have other
                        // colours too and are not written in this call.
                        let diagonal = s.cross.is_some().then(|| unsafe {
                            [
                                (ih + 1, jh + 1),
                                (ih - 1, jh + 1),
                                (ih + 1, jh - 1),
                                (ih - 1, jh - 1),
                            ]
                            .map(|(a, b)| data.column(offset(a, b), nz))
                        });
                        // SAFETY: as above: column (i, j) is this thread's only, read here
                        // (its old values, for the slant couplings and the over-relaxation)
                        // and then written.
                        let own = unsafe { data.column_mut(offset(ih, jh), nz) };
                        solve_given_neighbours(s, i, j, f.column(i, j), nbrs, diagonal, own, cp, z);
                        over_relax(own, z, relax);
                        crate::field::store(own, z);
                    }
                })
            })
        });
    }

    /// [`Self::smooth_color_t`] of a level without cell coefficients: the row's columns of
    /// `color` (every other one; of a quarter colour, every other row's) in groups of [`LANES`]
    /// solved in lockstep ([`thomas::smooth_color`]), from the columns' stored coefficients and
    /// diagonal couplings, as the Jacobi sweep solves adjacent columns. u ← u + w T⁻¹ (f − A u)
    /// on each, in place.
    fn smooth_color_lanes<S: Real>(
        &self,
        s: &LevelStencil,
        f: &HostField<S>,
        u: &mut HostField<S>,
        color: usize,
        relax: f64,
    ) {
        let (nx, ny, nz) = (s.nx(), s.ny(), s.nz);
        let offset = |ih: usize, jh: usize| (jh * (nx + 2) + ih) * nz;
        let (f_row, row_len) = (|j: usize| f.offset(0, j + 1), f.row_len());
        let data = ColumnWriter(u.data.as_mut_ptr());
        self.pool.install(|| {
            (0..ny).into_par_iter().for_each(|j| {
                let frow = &f.data[f_row(j)..][..row_len];
                // SAFETY: the columns of `color` and their neighbours are distinct: a column of
                // the colour reads its four neighbours (the other colour, which no thread writes in
                // this call) and itself, which only this thread writes, after the reads
                // (`thomas::smooth_color` calls `update` after every read of u); all lie inside
                // `u.data` (halo included), which outlives the loop.
                let nbrs_of = |i: usize| unsafe {
                    let (ih, jh) = (i + 1, j + 1);
                    column::Nbrs {
                        c: data.column(offset(ih, jh), nz),
                        e: data.column(offset(ih + 1, jh), nz),
                        w: data.column(offset(ih - 1, jh), nz),
                        n: data.column(offset(ih, jh + 1), nz),
                        s: data.column(offset(ih, jh - 1), nz),
                    }
                };
                // SAFETY: as above: on a level with diagonal couplings the colour is a quarter
                // (`check_colour`), whose columns' diagonal neighbours have other colours too.
                let cross_of = |i: usize| {
                    s.cross.as_ref().map(|c| {
                        let (ih, jh) = (i + 1, j + 1);
                        let d = c[j * nx + i];
                        column::Cross::diagonal([d.ne, d.nw, d.se, d.sw], unsafe {
                            [
                                (ih + 1, jh + 1),
                                (ih - 1, jh + 1),
                                (ih + 1, jh - 1),
                                (ih - 1, jh - 1),
                            ]
                            .map(|(a, b)| data.column(offset(a, b), nz))
                        })
                    })
                };
                let update = |i: usize, z: &[f64]| {
                    // SAFETY: as above: this thread's own column i, written once, after the
                    // kernel's reads of it, and no other slice of it lives meanwhile.
                    let col = unsafe { data.column_mut(offset(i + 1, j + 1), nz) };
                    for (u, z) in col.iter_mut().zip(z) {
                        *u = S::from_f64(u.to_f64() + relax * z);
                    }
                };
                colour_groups!(self, s, j, color, |is, buf, L| {
                    thomas::smooth_color::<L, _>(
                        s,
                        j,
                        &is,
                        frow,
                        nbrs_of,
                        cross_of,
                        buf,
                        #[inline(always)]
                        |l, z| update(is[l], z),
                    )
                })
            })
        });
    }

    fn smooth_t<S: Real>(
        &self,
        s: &LevelStencil,
        f: &HostField<S>,
        u_in: &HostField<S>,
        u_out: &mut HostField<S>,
        rho: f64,
    ) {
        // Levels with cell coefficients or cross terms: one column at a time, the residual of
        // the whole operator.
        if s.cells.is_some() || s.cross.is_some() {
            self.cells_smooth(s, f, u_in, u_out, rho);
            return;
        }
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(u_out)
                .zip(rows_ref(f))
                .enumerate()
                .for_each(|(j, (orow, frow))| {
                    lane_groups!(self, nx, nz, |i, cp, L| thomas::smooth::<L, _>(
                        s,
                        (j, i),
                        frow,
                        u_in,
                        orow,
                        rho,
                        cp
                    ))
                })
        });
    }

    // f_c = scale * sum of 4 children of r_f; u_c = rho M^-1 f_c; traffic per coarse cell:
    // read 4, write 2: 6.
    #[allow(clippy::too_many_arguments)]
    fn restrict_smooth_t<S: Real>(
        &self,
        fine: &LevelStencil,
        coarse: &LevelStencil,
        r_fine: &HostField<S>,
        f_coarse: &mut HostField<S>,
        u_coarse: &mut HostField<S>,
        rho: f64,
        scale: f64,
    ) {
        if coarse.cells.is_some() {
            self.cells_restrict_smooth(coarse, r_fine, f_coarse, u_coarse, rho, scale);
            return;
        }
        debug_assert_eq!(fine.nx(), 2 * coarse.nx());
        let (nx, nz) = (coarse.nx(), coarse.nz);
        let frow_len = r_fine.row_len();
        self.pool.install(|| {
            rows(f_coarse)
                .zip(rows(u_coarse))
                .enumerate()
                .for_each(|(j, (frow, urow))| {
                    let r0 = &r_fine.data[r_fine.offset(0, 2 * j + 1)..][..frow_len];
                    let r1 = &r_fine.data[r_fine.offset(0, 2 * j + 2)..][..frow_len];
                    let w = (rho, scale);
                    lane_groups!(self, nx, nz, |i, cp, L| thomas::restrict_smooth::<L, _>(
                        coarse,
                        (j, i),
                        (r0, r1),
                        frow,
                        urow,
                        w,
                        cp
                    ))
                })
        });
    }
}

impl LineKernels for CpuBackend {
    fn line_solve(&self, s: &LevelStencil, r: &CpuField, z: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.line_solve_t(s, get::<S>(r)?, get_mut::<S>(z)?));
        Ok(())
    }

    fn cg_tridiag(
        &self,
        s: &LevelStencil,
        q: &CpuField,
        r: &mut CpuField,
        z: &mut CpuField,
        alpha: f64,
    ) -> Result<[f64; 2]> {
        Ok(
            by_precision!(s, S => self.cg_tridiag_t(s, get::<S>(q)?, get_mut::<S>(r)?, get_mut::<S>(z)?, alpha)),
        )
    }

    fn smooth_color(
        &self,
        s: &LevelStencil,
        f: &CpuField,
        u: &mut CpuField,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        s.check_colour(color)?;
        by_precision!(s, S => self.smooth_color_t(s, get::<S>(f)?, get_mut::<S>(u)?, color, relax));
        Ok(())
    }

    fn smooth(
        &self,
        s: &LevelStencil,
        f: &CpuField,
        u_in: &CpuField,
        u_out: &mut CpuField,
        rho: f64,
    ) -> Result<()> {
        by_precision!(s, S => self.smooth_t(s, get::<S>(f)?, get::<S>(u_in)?, get_mut::<S>(u_out)?, rho));
        Ok(())
    }

    /// The colour's columns only, on the model problem's levels without cross terms
    /// (`from_zero.rs`); the line solve on every column elsewhere.
    fn line_solve_color(
        &self,
        s: &LevelStencil,
        r: &CpuField,
        z: &mut CpuField,
        color: usize,
    ) -> Result<()> {
        s.check_colour(color)?;
        if !Self::colour_forms(s, color) {
            return self.line_solve(s, r, z);
        }
        by_precision!(s, S => self.colour_from_zero(s, get::<S>(r)?, get_mut::<S>(z)?, color, None));
        Ok(())
    }

    /// T⁻¹ (f − w H u) on the colour's columns where [`LineKernels::line_solve_color`] solved
    /// the other colour only; `smooth_color` elsewhere.
    fn smooth_color_after_solve(
        &self,
        s: &LevelStencil,
        f: &CpuField,
        u: &mut CpuField,
        color: usize,
        relax: f64,
    ) -> Result<()> {
        s.check_colour(color)?;
        if !Self::colour_forms(s, color) {
            return self.smooth_color(s, f, u, color, relax);
        }
        by_precision!(s, S => self.colour_from_zero(s, get::<S>(f)?, get_mut::<S>(u)?, color, Some(relax)));
        Ok(())
    }

    fn restrict_smooth(
        &self,
        fine: &LevelStencil,
        coarse: &LevelStencil,
        r_fine: &CpuField,
        f_coarse: &mut CpuField,
        u_coarse: &mut CpuField,
        rho: f64,
        scale: f64,
    ) -> Result<()> {
        by_precision!(coarse, S => self.restrict_smooth_t(
            fine,
            coarse,
            get::<S>(r_fine)?,
            get_mut::<S>(f_coarse)?,
            get_mut::<S>(u_coarse)?,
            rho,
            scale
        ));
        Ok(())
    }
}

/// The columns of a field shared by the threads of a red-black half-sweep, each column read or
/// written through its own slice (see `smooth_color` for why they never overlap).
pub(super) struct ColumnWriter<S>(pub(super) *mut S);

// SAFETY: the pointer is only turned into slices of columns that no two threads write, and that
// no thread writes while another reads (the colouring); the field outlives the parallel loop.
unsafe impl<S: Sync> Sync for ColumnWriter<S> {}

impl<S> ColumnWriter<S> {
    /// The column of `nz` values at `offset`.
    ///
    /// # Safety
    /// In bounds, and not written by anyone while the slice lives.
    pub(super) unsafe fn column(&self, offset: usize, nz: usize) -> &[S] {
        // SAFETY: promised by the caller.
        unsafe { std::slice::from_raw_parts(self.0.add(offset), nz) }
    }

    /// The column of `nz` values at `offset`, to write.
    ///
    /// # Safety
    /// In bounds, and neither read nor written by anyone else while the slice lives.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn column_mut(&self, offset: usize, nz: usize) -> &mut [S] {
        // SAFETY: promised by the caller.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(offset), nz) }
    }
}
