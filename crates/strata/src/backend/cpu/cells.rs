//! The operator kernels for levels with per-cell coefficients (docs/MODEL.md §15): the same
//! kernels as the fast path, one column at a time, every entry from [`LevelStencil::row`]. The
//! fast path (coefficients per column and per level) never comes here.

use super::column::{cross, Cross, Nbrs};
use super::*;

/// Calls `emit(k, (A x)_k)` for column (i, j) of a level with cell coefficients.
#[inline(always)]
fn apply_col<S: Real>(
    s: &LevelStencil,
    i: usize,
    j: usize,
    x: &Nbrs<S>,
    cross: Option<&Cross<S>>,
    mut emit: impl FnMut(usize, f64),
) {
    let nz = s.nz;
    for k in 0..nz {
        let r = s.row(i, j, k);
        let mut v = r.diag * x.c[k].to_f64()
            + r.east * x.e[k].to_f64()
            + r.west * x.w[k].to_f64()
            + r.north * x.n[k].to_f64()
            + r.south * x.s[k].to_f64();
        if k + 1 < nz {
            v += r.up * x.c[k + 1].to_f64();
        }
        if k > 0 {
            v += r.down * x.c[k - 1].to_f64();
        }
        if let Some(c) = cross {
            let centre = x.c[k].to_f64();
            v += c.with_entries(s.diagonal_row(i, j, k), centre, k) + c.slant_at(centre, k);
        }
        emit(k, v);
    }
}

/// z = M⁻¹ rhs for column (i, j) (Thomas), computed in `f64` in `work` (2 nz values of scratch)
/// and passed to `store(k, z_k)`.
#[inline(always)]
fn solve_col<R: Real>(
    s: &LevelStencil,
    (i, j): (usize, usize),
    rhs: &[R],
    work: &mut [f64],
    mut store: impl FnMut(usize, f64),
) {
    let nz = s.nz;
    let (cp, z) = work.split_at_mut(nz);
    let (mut cprev, mut zprev) = (0.0, 0.0);
    for k in 0..nz {
        let r = s.row(i, j, k);
        let inv = 1.0 / (r.diag - r.down * cprev);
        cprev = r.up * inv;
        zprev = (rhs[k].to_f64() - r.down * zprev) * inv;
        cp[k] = cprev;
        z[k] = zprev;
    }
    for k in (0..nz - 1).rev() {
        z[k] -= cp[k] * z[k + 1];
    }
    for (k, &v) in z.iter().enumerate() {
        store(k, v);
    }
}

impl CpuBackend {
    /// y = A x.
    pub(super) fn cells_apply<S: Real>(
        &self,
        s: &LevelStencil,
        x: &HostField<S>,
        y: &mut HostField<S>,
    ) {
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(y).enumerate().for_each(|(j, yr)| {
                for i in 0..nx {
                    let yc = col_mut(yr, i, nz);
                    apply_col(
                        s,
                        i,
                        j,
                        &nbrs(x, i, j),
                        cross(s, x, i, j).as_ref(),
                        |k, v| yc[k] = S::from_f64(v),
                    );
                }
            })
        });
    }

    /// r = f − A u; returns Σ r².
    pub(super) fn cells_residual<S: Real, T: Real>(
        &self,
        s: &LevelStencil,
        f: &HostField<S>,
        u: &HostField<S>,
        r: &mut HostField<T>,
    ) -> f64 {
        let (nx, nz) = (s.nx(), s.nz);
        let [rr, _] = self.reduce_rows(s.ny(), |parts| {
            rows(r)
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (rrow, part))| {
                    *part = with_scratch(nz, |scratch| {
                        let frow = &f.data[f.offset(0, j + 1)..][..f.row_len()];
                        let mut sum = 0.0;
                        for i in 0..nx {
                            let (fc, rc) = (col(frow, i, nz), col_mut(rrow, i, nz));
                            let (x, cr) = (nbrs(u, i, j), cross(s, u, i, j));
                            let mut res = ResidualSink::new(fc, rc, scratch);
                            apply_col(s, i, j, &x, cr.as_ref(), |k, au| res.emit(k, au));
                            sum += res.finish();
                        }
                        [sum, 0.0]
                    })
                })
        });
        rr
    }

    /// u += α p; p = z + β p; q = A z + β q; returns Σ p·q.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cells_cg_spmv<S: Real>(
        &self,
        s: &LevelStencil,
        z: &HostField<S>,
        u: &mut HostField<S>,
        p: &mut HostField<S>,
        q: &mut HostField<S>,
        alpha: f64,
        beta: f64,
    ) -> f64 {
        let (nx, nz) = (s.nx(), s.nz);
        let [pq, _] = self.reduce_rows(s.ny(), |parts| {
            rows(u)
                .zip(rows(p))
                .zip(rows(q))
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (((ur, pr), qr), part))| {
                    let mut sum = 0.0;
                    for i in 0..nx {
                        let (uc, pc, qc) =
                            (col_mut(ur, i, nz), col_mut(pr, i, nz), col_mut(qr, i, nz));
                        let zc = nbrs(z, i, j);
                        apply_col(s, i, j, &zc, cross(s, z, i, j).as_ref(), |k, az| {
                            let pold = pc[k].to_f64();
                            uc[k] = S::from_f64(uc[k].to_f64() + alpha * pold);
                            pc[k] = S::from_f64(zc.c[k].to_f64() + beta * pold);
                            qc[k] = S::from_f64(az + beta * qc[k].to_f64());
                            sum += pc[k].to_f64() * qc[k].to_f64();
                        });
                    }
                    *part = [sum, 0.0];
                })
        });
        pq
    }

    /// z = M⁻¹ r.
    pub(super) fn cells_line_solve<S: Real>(
        &self,
        s: &LevelStencil,
        r: &HostField<S>,
        z: &mut HostField<S>,
    ) {
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(z).enumerate().for_each(|(j, zr)| {
                let rrow = &r.data[r.offset(0, j + 1)..][..r.row_len()];
                with_scratch(2 * nz, |work| {
                    for i in 0..nx {
                        let zc = col_mut(zr, i, nz);
                        solve_col(s, (i, j), col(rrow, i, nz), work, |k, v| {
                            zc[k] = S::from_f64(v)
                        });
                    }
                })
            })
        });
    }

    /// r −= α q; z = M⁻¹ r; returns [Σ r·r, Σ r·z].
    pub(super) fn cells_cg_tridiag<S: Real>(
        &self,
        s: &LevelStencil,
        q: &HostField<S>,
        r: &mut HostField<S>,
        z: &mut HostField<S>,
        alpha: f64,
    ) -> [f64; 2] {
        let (nx, nz) = (s.nx(), s.nz);
        self.reduce_rows(s.ny(), |parts| {
            rows(r)
                .zip(rows(z))
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, ((rrow, zrow), part))| {
                    let qrow = &q.data[q.offset(0, j + 1)..][..q.row_len()];
                    let mut sums = [0.0; 2];
                    with_scratch(2 * nz, |work| {
                        for i in 0..nx {
                            let (qc, rc) = (col(qrow, i, nz), col_mut(rrow, i, nz));
                            for k in 0..nz {
                                rc[k] = S::from_f64(rc[k].to_f64() - alpha * qc[k].to_f64());
                            }
                            let zc = col_mut(zrow, i, nz);
                            solve_col(s, (i, j), rc, work, |k, v| zc[k] = S::from_f64(v));
                            sums[0] += dot(rc, rc);
                            sums[1] += dot(rc, zc);
                        }
                    });
                    *part = sums;
                })
        })
    }

    /// u_out = u_in + ρ M⁻¹ (f − A u_in).
    pub(super) fn cells_smooth<S: Real>(
        &self,
        s: &LevelStencil,
        f: &HostField<S>,
        u_in: &HostField<S>,
        u_out: &mut HostField<S>,
        rho: f64,
    ) {
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(u_out).enumerate().for_each(|(j, orow)| {
                let frow = &f.data[f.offset(0, j + 1)..][..f.row_len()];
                with_scratch(3 * nz, |scratch| {
                    let (res, work) = scratch.split_at_mut(nz);
                    for i in 0..nx {
                        let (fc, un) = (col(frow, i, nz), nbrs(u_in, i, j));
                        // The residual of the whole operator, its cross terms too (the sphere's
                        // diagonal couplings, orography's slant ones).
                        let cr = cross(s, u_in, i, j);
                        apply_col(s, i, j, &un, cr.as_ref(), |k, au| {
                            res[k] = fc[k].to_f64() - au
                        });
                        let oc = col_mut(orow, i, nz);
                        solve_col(s, (i, j), res, work, |k, z| {
                            oc[k] = S::from_f64(un.c[k].to_f64() + rho * z)
                        });
                    }
                })
            })
        });
    }

    /// f_c = scale · Σ children of r_f; u_c = ρ M_c⁻¹ f_c.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cells_restrict_smooth<S: Real>(
        &self,
        coarse: &LevelStencil,
        r_fine: &HostField<S>,
        f_coarse: &mut HostField<S>,
        u_coarse: &mut HostField<S>,
        rho: f64,
        scale: f64,
    ) {
        let (nx, nz) = (coarse.nx(), coarse.nz);
        self.pool.install(|| {
            rows(f_coarse)
                .zip(rows(u_coarse))
                .enumerate()
                .for_each(|(j, (frow, urow))| {
                    with_scratch(2 * nz, |work| {
                        for i in 0..nx {
                            let fc = col_mut(frow, i, nz);
                            for (k, fk) in fc.iter_mut().enumerate() {
                                let child = |di: usize, dj: usize| {
                                    r_fine.data[r_fine.offset(2 * i + 1 + di, 2 * j + 1 + dj) + k]
                                        .to_f64()
                                };
                                let sum = child(0, 0) + child(1, 0) + child(0, 1) + child(1, 1);
                                *fk = S::from_f64(scale * sum);
                            }
                            let uc = col_mut(urow, i, nz);
                            solve_col(coarse, (i, j), fc, work, |k, v| {
                                uc[k] = S::from_f64(rho * v)
                            });
                        }
                    })
                })
        });
    }
}
