//! The kernels built on the line solve: M⁻¹, the fused CG Tridiag, Smooth, RestrictSmooth.

use super::*;
use crate::backend::LineKernels;

impl LineKernels for CpuBackend {
    // z = M^-1 r; traffic: read r, write z: 2.
    fn line_solve(&self, s: &LevelStencil, r: &HostField, z: &mut HostField) -> Result<()> {
        if s.cells.is_some() {
            self.cells_line_solve(s, r, z);
            return Ok(());
        }
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(z)
                .zip(rows_ref(r))
                .enumerate()
                .for_each(|(j, (zr, rr))| {
                    with_scratch(thomas::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            if full {
                                thomas::line_solve::<LANES>(s, (j, i), rr, zr, cp)
                            } else {
                                thomas::line_solve::<1>(s, (j, i), rr, zr, cp)
                            }
                        })
                    })
                })
        });
        Ok(())
    }

    // r -= alpha q; z = M^-1 r; sums r.r and r.z; traffic: read q, r; write r, z: 4
    // (paper's Mem^(C): 9, which counts the Thomas intermediates).
    fn cg_tridiag(
        &self,
        s: &LevelStencil,
        q: &HostField,
        r: &mut HostField,
        z: &mut HostField,
        alpha: f64,
    ) -> Result<[f64; 2]> {
        if s.cells.is_some() {
            return Ok(self.cells_cg_tridiag(s, q, r, z, alpha));
        }
        let (nx, nz) = (s.nx(), s.nz);
        Ok(self.reduce_rows(s.ny(), |parts| {
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
                    with_scratch(thomas::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            add(if full {
                                thomas::cg_tridiag::<LANES>(s, (j, i), qrow, rrow, zrow, alpha, cp)
                            } else {
                                thomas::cg_tridiag::<1>(s, (j, i), qrow, rrow, zrow, alpha, cp)
                            })
                        })
                    });
                    *part = acc;
                })
        }))
    }

    // u_out = u_in + rho M^-1 (f - A u_in); traffic: read f, u_in; write u_out: 3
    // (paper's two-kernel Smooth: 8).
    fn smooth(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u_in: &HostField,
        u_out: &mut HostField,
        rho: f64,
    ) -> Result<()> {
        if s.cells.is_some() {
            self.cells_smooth(s, f, u_in, u_out, rho);
            return Ok(());
        }
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(u_out)
                .zip(rows_ref(f))
                .enumerate()
                .for_each(|(j, (orow, frow))| {
                    with_scratch(thomas::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            if full {
                                thomas::smooth::<LANES>(s, (j, i), frow, u_in, orow, rho, cp)
                            } else {
                                thomas::smooth::<1>(s, (j, i), frow, u_in, orow, rho, cp)
                            }
                        })
                    })
                })
        });
        Ok(())
    }

    // f_c = scale * sum of 4 children of r_f; u_c = rho M^-1 f_c; traffic per coarse cell:
    // read 4, write 2: 6.
    fn restrict_smooth(
        &self,
        fine: &LevelStencil,
        coarse: &LevelStencil,
        r_fine: &HostField,
        f_coarse: &mut HostField,
        u_coarse: &mut HostField,
        rho: f64,
        scale: f64,
    ) -> Result<()> {
        if coarse.cells.is_some() {
            self.cells_restrict_smooth(coarse, r_fine, f_coarse, u_coarse, rho, scale);
            return Ok(());
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
                    with_scratch(thomas::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            if full {
                                thomas::restrict_smooth::<LANES>(
                                    coarse,
                                    (j, i),
                                    (r0, r1),
                                    frow,
                                    urow,
                                    w,
                                    cp,
                                )
                            } else {
                                thomas::restrict_smooth::<1>(
                                    coarse,
                                    (j, i),
                                    (r0, r1),
                                    frow,
                                    urow,
                                    w,
                                    cp,
                                )
                            }
                        })
                    })
                })
        });
        Ok(())
    }
}
