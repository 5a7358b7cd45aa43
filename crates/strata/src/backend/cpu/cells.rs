//! The operator kernels for levels with per-cell coefficients (docs/MODEL.md §15): the same
//! kernels as the fast path, one column at a time, every entry from [`LevelStencil::row`]. The
//! fast path (coefficients per column and per level) never comes here.

use super::column::Nbrs;
use super::*;

/// Calls `emit(k, (A x)_k)` for column (i, j) of a level with cell coefficients.
#[inline(always)]
fn apply_col(s: &LevelStencil, i: usize, j: usize, x: &Nbrs, mut emit: impl FnMut(usize, f64)) {
    let nz = s.nz;
    for k in 0..nz {
        let r = s.row(i, j, k);
        let mut v = r.diag * x.c[k]
            + r.east * x.e[k]
            + r.west * x.w[k]
            + r.north * x.n[k]
            + r.south * x.s[k];
        if k + 1 < nz {
            v += r.up * x.c[k + 1];
        }
        if k > 0 {
            v += r.down * x.c[k - 1];
        }
        emit(k, v);
    }
}

/// z = M⁻¹ rhs for column (i, j) (Thomas); `cp` is scratch of nz values. `z` may hold `rhs`.
#[inline(always)]
fn solve_col(s: &LevelStencil, i: usize, j: usize, rhs: &[f64], cp: &mut [f64], z: &mut [f64]) {
    let nz = s.nz;
    let (mut cprev, mut zprev) = (0.0, 0.0);
    for k in 0..nz {
        let r = s.row(i, j, k);
        let inv = 1.0 / (r.diag - r.down * cprev);
        cprev = r.up * inv;
        zprev = (rhs[k] - r.down * zprev) * inv;
        cp[k] = cprev;
        z[k] = zprev;
    }
    for k in (0..nz - 1).rev() {
        z[k] -= cp[k] * z[k + 1];
    }
}

impl CpuBackend {
    /// y = A x.
    pub(super) fn cells_apply(&self, s: &LevelStencil, x: &HostField, y: &mut HostField) {
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(y).enumerate().for_each(|(j, yr)| {
                for i in 0..nx {
                    let yc = col_mut(yr, i, nz);
                    apply_col(s, i, j, &nbrs(x, i, j), |k, v| yc[k] = v);
                }
            })
        });
    }

    /// r = f − A u; returns Σ r².
    pub(super) fn cells_residual(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u: &HostField,
        r: &mut HostField,
    ) -> f64 {
        let (nx, nz) = (s.nx(), s.nz);
        let [rr, _] = self.reduce_rows(s.ny(), |parts| {
            rows(r)
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (rrow, part))| {
                    let frow = &f.data[f.offset(0, j + 1)..][..f.row_len()];
                    let mut sum = 0.0;
                    for i in 0..nx {
                        let (fc, rc) = (col(frow, i, nz), col_mut(rrow, i, nz));
                        apply_col(s, i, j, &nbrs(u, i, j), |k, au| rc[k] = fc[k] - au);
                        sum += dot(rc, rc);
                    }
                    *part = [sum, 0.0];
                })
        });
        rr
    }

    /// u += α p; p = z + β p; q = A z + β q; returns Σ p·q.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cells_cg_spmv(
        &self,
        s: &LevelStencil,
        z: &HostField,
        u: &mut HostField,
        p: &mut HostField,
        q: &mut HostField,
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
                        apply_col(s, i, j, &zc, |k, az| {
                            let pold = pc[k];
                            uc[k] += alpha * pold;
                            pc[k] = zc.c[k] + beta * pold;
                            qc[k] = az + beta * qc[k];
                            sum += pc[k] * qc[k];
                        });
                    }
                    *part = [sum, 0.0];
                })
        });
        pq
    }

    /// z = M⁻¹ r.
    pub(super) fn cells_line_solve(&self, s: &LevelStencil, r: &HostField, z: &mut HostField) {
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(z).enumerate().for_each(|(j, zr)| {
                let rrow = &r.data[r.offset(0, j + 1)..][..r.row_len()];
                with_scratch(nz, |cp| {
                    for i in 0..nx {
                        solve_col(s, i, j, col(rrow, i, nz), cp, col_mut(zr, i, nz));
                    }
                })
            })
        });
    }

    /// r −= α q; z = M⁻¹ r; returns [Σ r·r, Σ r·z].
    pub(super) fn cells_cg_tridiag(
        &self,
        s: &LevelStencil,
        q: &HostField,
        r: &mut HostField,
        z: &mut HostField,
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
                    with_scratch(nz, |cp| {
                        for i in 0..nx {
                            let (qc, rc) = (col(qrow, i, nz), col_mut(rrow, i, nz));
                            for k in 0..nz {
                                rc[k] -= alpha * qc[k];
                            }
                            let zc = col_mut(zrow, i, nz);
                            solve_col(s, i, j, rc, cp, zc);
                            sums[0] += dot(rc, rc);
                            sums[1] += dot(rc, zc);
                        }
                    });
                    *part = sums;
                })
        })
    }

    /// u_out = u_in + ρ M⁻¹ (f − A u_in).
    pub(super) fn cells_smooth(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u_in: &HostField,
        u_out: &mut HostField,
        rho: f64,
    ) {
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(u_out).enumerate().for_each(|(j, orow)| {
                let frow = &f.data[f.offset(0, j + 1)..][..f.row_len()];
                with_scratch(2 * nz, |scratch| {
                    let (cp, res) = scratch.split_at_mut(nz);
                    for i in 0..nx {
                        let (fc, un) = (col(frow, i, nz), nbrs(u_in, i, j));
                        apply_col(s, i, j, &un, |k, au| res[k] = fc[k] - au);
                        let oc = col_mut(orow, i, nz);
                        solve_col(s, i, j, res, cp, oc);
                        for (o, u) in oc.iter_mut().zip(un.c) {
                            *o = u + rho * *o;
                        }
                    }
                })
            })
        });
    }

    /// f_c = scale · Σ children of r_f; u_c = ρ M_c⁻¹ f_c.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cells_restrict_smooth(
        &self,
        coarse: &LevelStencil,
        r_fine: &HostField,
        f_coarse: &mut HostField,
        u_coarse: &mut HostField,
        rho: f64,
        scale: f64,
    ) {
        let (nx, nz) = (coarse.nx(), coarse.nz);
        self.pool.install(|| {
            rows(f_coarse)
                .zip(rows(u_coarse))
                .enumerate()
                .for_each(|(j, (frow, urow))| {
                    with_scratch(nz, |cp| {
                        for i in 0..nx {
                            let fc = col_mut(frow, i, nz);
                            for (k, fk) in fc.iter_mut().enumerate() {
                                let child = |di: usize, dj: usize| {
                                    r_fine.data[r_fine.offset(2 * i + 1 + di, 2 * j + 1 + dj) + k]
                                };
                                *fk =
                                    scale * (child(0, 0) + child(1, 0) + child(0, 1) + child(1, 1));
                            }
                            let uc = col_mut(urow, i, nz);
                            solve_col(coarse, i, j, fc, cp, uc);
                            for v in uc.iter_mut() {
                                *v *= rho;
                            }
                        }
                    })
                })
        });
    }
}
