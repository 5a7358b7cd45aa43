//! The operator kernels: A x, the residual, the fused CG SpMV, the prolongation.

use super::*;
use crate::backend::StencilKernels;
use crate::grid::Side;

impl CpuBackend {
    // y = A x; traffic: read x (neighbours cached), write y: 2.
    fn apply_t<S: Real>(&self, s: &LevelStencil, x: &HostField<S>, y: &mut HostField<S>) {
        if s.cells.is_some() {
            self.cells_apply(s, x, y);
            return;
        }
        let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
        self.pool.install(|| {
            rows(y).enumerate().for_each(|(j, yr)| {
                self.wide(
                    #[inline(always)]
                    || {
                        for i in 0..nx {
                            let c = &s.columns[j * nx + i];
                            let yc = col_mut(yr, i, nz);
                            let cr = cross(s, x, i, j);
                            apply_column_cross(
                                c,
                                v,
                                &nbrs(x, i, j),
                                cr.as_ref(),
                                #[inline(always)]
                                |k, au| yc[k] = S::from_f64(au),
                            );
                        }
                    },
                )
            })
        });
    }

    // r = f - A u, returns sum r^2; traffic: read f, u; write r: 3.
    // r may be stored in another precision (`residual_to`): the norm is then of the values
    // before they are rounded.
    fn residual_t<S: Real, T: Real>(
        &self,
        s: &LevelStencil,
        f: &HostField<S>,
        u: &HostField<S>,
        r: &mut HostField<T>,
    ) -> f64 {
        if s.cells.is_some() {
            return self.cells_residual(s, f, u, r);
        }
        let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
        let [rr, _] = self.reduce_rows(s.ny(), |parts| {
            rows(r)
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (rrow, part))| {
                    *part = self.with_scratch(
                        nz,
                        #[inline(always)]
                        |scratch| {
                            let mut sum = 0.0;
                            let frow = &f.data[f.offset(0, j + 1)..][..f.row_len()];
                            for i in 0..nx {
                                let c = &s.columns[j * nx + i];
                                let fc = col(frow, i, nz);
                                let rc = col_mut(rrow, i, nz);
                                let (x, cr) = (nbrs(u, i, j), cross(s, u, i, j));
                                let mut res = ResidualSink::new(fc, rc, scratch);
                                apply_column_cross(
                                    c,
                                    v,
                                    &x,
                                    cr.as_ref(),
                                    #[inline(always)]
                                    |k, au| res.emit(k, au),
                                );
                                sum += res.finish();
                            }
                            [sum, 0.0]
                        },
                    )
                })
        });
        rr
    }

    // u += alpha p; p = z + beta p; q = A z + beta q; sum p.q
    // traffic: read z (neighbours cached), u, p, q; write u, p, q: 7 (paper's Mem^(C): 6).
    #[allow(clippy::too_many_arguments)]
    fn cg_spmv_t<S: Real>(
        &self,
        s: &LevelStencil,
        z: &HostField<S>,
        u: &mut HostField<S>,
        p: &mut HostField<S>,
        q: &mut HostField<S>,
        alpha: f64,
        beta: f64,
    ) -> f64 {
        if s.cells.is_some() {
            return self.cells_cg_spmv(s, z, u, p, q, alpha, beta);
        }
        let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
        let [pq, _] = self.reduce_rows(s.ny(), |parts| {
            rows(u)
                .zip(rows(p))
                .zip(rows(q))
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (((ur, pr), qr), part))| {
                    *part = self.wide(
                        #[inline(always)]
                        || {
                            let mut sum = 0.0;
                            for i in 0..nx {
                                let c = &s.columns[j * nx + i];
                                let zn = nbrs(z, i, j);
                                let uc = col_mut(ur, i, nz);
                                let pc = col_mut(pr, i, nz);
                                let qc = col_mut(qr, i, nz);
                                for k in 0..nz {
                                    let pold = pc[k].to_f64();
                                    uc[k] = S::from_f64(uc[k].to_f64() + alpha * pold);
                                    pc[k] = S::from_f64(zn.c[k].to_f64() + beta * pold);
                                }
                                let cr = cross(s, z, i, j);
                                apply_column_cross(
                                    c,
                                    v,
                                    &zn,
                                    cr.as_ref(),
                                    #[inline(always)]
                                    |k, az| qc[k] = S::from_f64(az + beta * qc[k].to_f64()),
                                );
                                sum += dot(pc, qc);
                            }
                            [sum, 0.0]
                        },
                    )
                })
        });
        pq
    }

    // u_f += P u_c; traffic: read u_f, u_c (cached); write u_f: 3.
    fn prolongate_t<S: Real>(
        &self,
        coarse: &LevelStencil,
        fine: &LevelStencil,
        u_coarse: &HostField<S>,
        u_fine: &mut HostField<S>,
    ) {
        let (nx, ncx, ncy, nz) = (fine.nx(), coarse.nx(), coarse.ny(), fine.nz);
        let ccol = |ih: usize, jh: usize| &u_coarse.data[u_coarse.offset(ih, jh)..][..nz];
        let ghost = crate::backend::prolong::ghost;
        self.pool.install(|| {
            rows(u_fine).enumerate().for_each(|(j, frow)| {
                self.wide(
                    #[inline(always)]
                    || {
                        // Halo-inclusive coarse indices of the parent and of its y neighbour.
                        let jp = j / 2 + 1;
                        let jy = if j % 2 == 0 { jp - 1 } else { jp + 1 };
                        let ghost_y = ghost(
                            coarse,
                            jy as isize - 1,
                            ncy as isize,
                            Side::South,
                            Side::North,
                        );
                        for i in 0..nx {
                            let ip = i / 2 + 1;
                            let ix = if i % 2 == 0 { ip - 1 } else { ip + 1 };
                            let ghost_x = ghost(
                                coarse,
                                ix as isize - 1,
                                ncx as isize,
                                Side::West,
                                Side::East,
                            );
                            let up = ccol(ip, jp);
                            // A ghost parent beyond a wall is ∓u_P (Dirichlet, zero-flux).
                            let (wx, ux) = match ghost_x {
                                Some(g) => (0.25 * g, up),
                                None => (0.25, ccol(ix, jp)),
                            };
                            let (wy, uy) = match ghost_y {
                                Some(g) => (0.25 * g, up),
                                None => (0.25, ccol(ip, jy)),
                            };
                            let fc = col_mut(frow, i, nz);
                            prolong_column(fc, up, (wx, ux), (wy, uy));
                        }
                    },
                )
            })
        });
    }

    /// [`StencilKernels::prolongate_faces`] in storage `S`: `prolongate_t`'s arithmetic on the
    /// halo cells of `sides` (few: one thread).
    fn prolongate_faces_t<S: Real>(
        &self,
        coarse: &LevelStencil,
        fine: &LevelStencil,
        u_coarse: &HostField<S>,
        u_fine: &mut HostField<S>,
        sides: [bool; 4],
    ) {
        let nz = fine.nz;
        let ccol = |ih: usize, jh: usize| &u_coarse.data[u_coarse.offset(ih, jh)..][..nz];
        for (i, j) in crate::backend::prolong::face_cells(fine.nx(), fine.ny(), sides) {
            let p = crate::backend::prolong::parents(coarse, i, j);
            let up = ccol(p.ip, p.jp);
            let x = match p.ghost_x {
                Some(g) => (0.25 * g, up),
                None => (0.25, ccol(p.ix, p.jp)),
            };
            let y = match p.ghost_y {
                Some(g) => (0.25 * g, up),
                None => (0.25, ccol(p.ip, p.jy)),
            };
            let o = u_fine.offset((i + 1) as usize, (j + 1) as usize);
            prolong_column(&mut u_fine.data[o..o + nz], up, x, y);
        }
    }
}

/// fc ← fc + ½ up + wx ux + wy uy, level by level (the prolongation of one fine column).
#[inline(always)]
fn prolong_column<S: Real>(fc: &mut [S], up: &[S], (wx, ux): (f64, &[S]), (wy, uy): (f64, &[S])) {
    for k in 0..fc.len() {
        let add = 0.5 * up[k].to_f64() + wx * ux[k].to_f64() + wy * uy[k].to_f64();
        fc[k] = S::from_f64(fc[k].to_f64() + add);
    }
}

impl StencilKernels for CpuBackend {
    fn apply(&self, s: &LevelStencil, x: &CpuField, y: &mut CpuField) -> Result<()> {
        by_precision!(s, S => self.apply_t(s, get::<S>(x)?, get_mut::<S>(y)?));
        Ok(())
    }

    fn residual(
        &self,
        s: &LevelStencil,
        f: &CpuField,
        u: &CpuField,
        r: &mut CpuField,
    ) -> Result<f64> {
        Ok(by_precision!(s, S => self.residual_t(s, get::<S>(f)?, get::<S>(u)?, get_mut::<S>(r)?)))
    }

    fn residual_to(
        &self,
        s: &LevelStencil,
        f: &CpuField,
        u: &CpuField,
        to: &LevelStencil,
        r: &mut CpuField,
    ) -> Result<f64> {
        crate::backend::check_convert(s, to)?;
        Ok(
            by_precision!(s, S => by_precision!(to, T => self.residual_t(
                s,
                get::<S>(f)?,
                get::<S>(u)?,
                get_mut::<T>(r)?
            ))),
        )
    }

    fn cg_spmv(
        &self,
        s: &LevelStencil,
        z: &CpuField,
        u: &mut CpuField,
        p: &mut CpuField,
        q: &mut CpuField,
        alpha: f64,
        beta: f64,
    ) -> Result<f64> {
        Ok(by_precision!(s, S => self.cg_spmv_t(
            s,
            get::<S>(z)?,
            get_mut::<S>(u)?,
            get_mut::<S>(p)?,
            get_mut::<S>(q)?,
            alpha,
            beta
        )))
    }

    fn prolongate(
        &self,
        coarse: &LevelStencil,
        fine: &LevelStencil,
        u_coarse: &CpuField,
        u_fine: &mut CpuField,
    ) -> Result<()> {
        by_precision!(fine, S => self.prolongate_t(coarse, fine, get::<S>(u_coarse)?, get_mut::<S>(u_fine)?));
        Ok(())
    }

    fn prolongate_faces(
        &self,
        coarse: &LevelStencil,
        fine: &LevelStencil,
        u_coarse: &CpuField,
        u_fine: &mut CpuField,
        sides: [bool; 4],
    ) -> Result<()> {
        by_precision!(fine, S => self.prolongate_faces_t(coarse, fine, get::<S>(u_coarse)?, get_mut::<S>(u_fine)?, sides));
        Ok(())
    }
}
