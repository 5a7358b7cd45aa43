//! The CPU backend: rayon over rows of z-contiguous columns, the paper's fused kernels, no
//! allocation after setup, deterministic reductions (a partial per row, summed in row order, so
//! results are bit-identical run to run and independent of the thread count).

mod column;
mod lines;

use self::column::{apply_column, dot, nbrs};
use self::lines::{groups, LANES};
use super::{host_face_methods, Backend};
use crate::error::{Result, StrataError};
use crate::field::HostField;
use crate::perf::Probes;
use crate::stencil::LevelStencil;
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::Mutex;

/// The CPU backend. Owns its rayon thread pool.
pub struct CpuBackend {
    pool: rayon::ThreadPool,
    /// One reduction partial per row, sized at setup.
    partials: Mutex<Vec<[f64; 2]>>,
}

/// Threads per core that [`CpuBackend::new`] accepts at most.
pub const MAX_THREADS_PER_CORE: usize = 4;

fn max_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get()) * MAX_THREADS_PER_CORE
}

impl std::fmt::Debug for CpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuBackend({} threads)", self.threads())
    }
}

thread_local! {
    /// Per-thread Thomas scratch (the modified super-diagonal of one column); grows once.
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < len {
            s.resize(len, 0.0);
        }
        f(&mut s[..len])
    })
}

/// The interior rows of a field, each `(nx + 2) * nz` long (halo columns included).
fn rows(x: &mut HostField) -> impl IndexedParallelIterator<Item = &mut [f64]> {
    let (row, ny) = (x.row_len(), x.ny);
    x.data.par_chunks_mut(row).skip(1).take(ny)
}

/// Interior rows, read-only.
fn rows_ref(x: &HostField) -> impl IndexedParallelIterator<Item = &[f64]> {
    let (row, ny) = (x.row_len(), x.ny);
    x.data.par_chunks(row).skip(1).take(ny)
}

/// The interior part of a row (its halo columns cut off).
#[inline(always)]
fn inner(row: &[f64], nz: usize) -> &[f64] {
    &row[nz..row.len() - nz]
}

#[inline(always)]
fn inner_mut(row: &mut [f64], nz: usize) -> &mut [f64] {
    let len = row.len();
    &mut row[nz..len - nz]
}

/// Column `i` of a row.
#[inline(always)]
fn col_mut(row: &mut [f64], i: usize, nz: usize) -> &mut [f64] {
    &mut row[(i + 1) * nz..(i + 2) * nz]
}

#[inline(always)]
fn col(row: &[f64], i: usize, nz: usize) -> &[f64] {
    &row[(i + 1) * nz..(i + 2) * nz]
}

impl CpuBackend {
    /// A backend on `threads` threads (all cores if `None`).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(t) = threads {
            let most = max_threads();
            if t == 0 || t > most {
                return Err(StrataError::invalid(
                    "threads",
                    format!("must be between 1 and {most} ({MAX_THREADS_PER_CORE} per core of this machine) (got {t})"),
                ));
            }
            b = b.num_threads(t);
        }
        let pool = b.build().map_err(|e| StrataError::Backend {
            backend: "cpu".into(),
            msg: format!("cannot start the thread pool: {e}"),
        })?;
        Ok(Self {
            pool,
            partials: Mutex::new(Vec::new()),
        })
    }

    /// The most worker threads [`CpuBackend::new`] accepts: [`MAX_THREADS_PER_CORE`] per core.
    /// More only oversubscribes the cores; tens of thousands of threads exhaust the process's
    /// limits and can stall the thread pool's start.
    pub fn max_threads() -> usize {
        max_threads()
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Runs `body(j, part)` for each interior row with a zeroed partial, then sums the partials in
    /// row order.
    fn reduce_rows(&self, ny: usize, body: impl FnOnce(&mut [[f64; 2]]) + Send) -> [f64; 2] {
        let mut parts = self.partials.lock().unwrap_or_else(|e| e.into_inner());
        if parts.len() < ny {
            // Sized in prepare_level; only a level never prepared here grows it.
            parts.resize(ny, [0.0; 2]);
        }
        let parts = &mut parts[..ny];
        self.pool.install(|| body(parts));
        parts
            .iter()
            .fold([0.0, 0.0], |a, p| [a[0] + p[0], a[1] + p[1]])
    }

    /// Best time of `repeats` runs of `body(dst_chunk, src_chunk)` over two arrays of `len`
    /// values, first touched in parallel so that pages land near the threads that use them.
    fn stream_kernel(
        &self,
        len: usize,
        repeats: usize,
        body: impl Fn(&mut [f64], &[f64]) + Sync,
    ) -> f64 {
        let chunk = (len / (8 * self.threads())).max(4096);
        let (src, mut dst) = self.pool.install(|| {
            let mut src = vec![0.0f64; len];
            src.par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(c, s)| s.fill(c as f64));
            let mut dst = vec![0.0f64; len];
            dst.par_chunks_mut(chunk).for_each(|d| d.fill(1.0));
            (src, dst)
        });
        let mut best = f64::INFINITY;
        for _ in 0..repeats.max(1) {
            let t = std::time::Instant::now();
            self.pool.install(|| {
                dst.par_chunks_mut(chunk)
                    .zip(src.par_chunks(chunk))
                    .for_each(|(d, s)| body(d, s))
            });
            best = best.min(t.elapsed().as_secs_f64());
        }
        std::hint::black_box(&dst);
        best
    }

    fn map2(&self, x: &HostField, y: &mut HostField, f: impl Fn(f64, f64) -> f64 + Sync) {
        let nz = x.nz;
        self.pool.install(|| {
            rows(y).zip(rows_ref(x)).for_each(|(yr, xr)| {
                for (yv, xv) in inner_mut(yr, nz).iter_mut().zip(inner(xr, nz)) {
                    *yv = f(*xv, *yv);
                }
            })
        });
    }
}

impl Backend for CpuBackend {
    type Field = HostField;
    type LevelOp = LevelStencil;

    fn name(&self) -> String {
        format!("cpu ({} threads)", self.threads())
    }

    fn prepare_level(&self, stencil: &LevelStencil) -> Result<LevelStencil> {
        let mut parts = self.partials.lock().unwrap_or_else(|e| e.into_inner());
        if parts.len() < stencil.ny() {
            parts.resize(stencil.ny(), [0.0; 2]);
        }
        // Warm every worker's Thomas scratch so that solves do not allocate.
        let nz = stencil.nz;
        self.pool
            .broadcast(|_| with_scratch(lines::scratch_len(nz), |_| ()));
        Ok(stencil.clone())
    }

    fn stencil<'a>(&self, op: &'a LevelStencil) -> &'a LevelStencil {
        op
    }

    fn alloc(&self, s: &LevelStencil) -> Result<HostField> {
        let mut f = HostField::zeros(s.nx(), s.ny(), s.nz);
        // Touch every page now (from the threads that will use it), not in the first kernel.
        let row = f.row_len();
        self.pool
            .install(|| f.data.par_chunks_mut(row).for_each(|r| r.fill(0.0)));
        Ok(f)
    }

    fn upload(&self, _s: &LevelStencil, host: &[f64], x: &mut HostField) -> Result<()> {
        x.set_interior(host);
        Ok(())
    }

    fn download(&self, _s: &LevelStencil, x: &HostField, host: &mut [f64]) -> Result<()> {
        x.get_interior(host);
        Ok(())
    }

    fn fill(&self, _s: &LevelStencil, x: &mut HostField, v: f64) -> Result<()> {
        let nz = x.nz;
        self.pool
            .install(|| rows(x).for_each(|r| inner_mut(r, nz).fill(v)));
        Ok(())
    }

    fn copy(&self, _s: &LevelStencil, x: &HostField, y: &mut HostField) -> Result<()> {
        self.map2(x, y, |x, _| x);
        Ok(())
    }

    fn axpy(&self, _s: &LevelStencil, a: f64, x: &HostField, y: &mut HostField) -> Result<()> {
        self.map2(x, y, |x, y| y + a * x);
        Ok(())
    }

    fn xpby(&self, _s: &LevelStencil, x: &HostField, b: f64, y: &mut HostField) -> Result<()> {
        self.map2(x, y, |x, y| x + b * y);
        Ok(())
    }

    fn dot(&self, s: &LevelStencil, x: &HostField, y: &HostField) -> Result<f64> {
        let nz = s.nz;
        let [d, _] = self.reduce_rows(s.ny(), |parts| {
            parts
                .par_iter_mut()
                .zip(rows_ref(x).zip(rows_ref(y)))
                .for_each(|(part, (xr, yr))| {
                    let sum = inner(xr, nz)
                        .iter()
                        .zip(inner(yr, nz))
                        .fold(0.0, |a, (x, y)| a + x * y);
                    *part = [sum, 0.0];
                })
        });
        Ok(d)
    }

    // y = A x; traffic: read x (neighbours cached), write y: 2.
    fn apply(&self, s: &LevelStencil, x: &HostField, y: &mut HostField) -> Result<()> {
        let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
        self.pool.install(|| {
            rows(y).enumerate().for_each(|(j, yr)| {
                for i in 0..nx {
                    let c = &s.columns[j * nx + i];
                    let yc = col_mut(yr, i, nz);
                    apply_column(c, v, &nbrs(x, i, j), |k, au| yc[k] = au);
                }
            })
        });
        Ok(())
    }

    // r = f - A u, returns sum r^2; traffic: read f, u; write r: 3.
    fn residual(
        &self,
        s: &LevelStencil,
        f: &HostField,
        u: &HostField,
        r: &mut HostField,
    ) -> Result<f64> {
        let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
        let [rr, _] = self.reduce_rows(s.ny(), |parts| {
            rows(r)
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (rrow, part))| {
                    let mut sum = 0.0;
                    let frow = &f.data[f.offset(0, j + 1)..][..f.row_len()];
                    for i in 0..nx {
                        let c = &s.columns[j * nx + i];
                        let fc = col(frow, i, nz);
                        let rc = col_mut(rrow, i, nz);
                        apply_column(c, v, &nbrs(u, i, j), |k, au| rc[k] = fc[k] - au);
                        sum += dot(rc, rc);
                    }
                    *part = [sum, 0.0];
                })
        });
        Ok(rr)
    }

    // z = M^-1 r; traffic: read r, write z: 2.
    fn line_solve(&self, s: &LevelStencil, r: &HostField, z: &mut HostField) -> Result<()> {
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(z)
                .zip(rows_ref(r))
                .enumerate()
                .for_each(|(j, (zr, rr))| {
                    with_scratch(lines::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            if full {
                                lines::line_solve::<LANES>(s, (j, i), rr, zr, cp)
                            } else {
                                lines::line_solve::<1>(s, (j, i), rr, zr, cp)
                            }
                        })
                    })
                })
        });
        Ok(())
    }

    // u += alpha p; p = z + beta p; q = A z + beta q; sum p.q
    // traffic: read z (neighbours cached), u, p, q; write u, p, q: 7 (paper's Mem^(C): 6).
    fn cg_spmv(
        &self,
        s: &LevelStencil,
        z: &HostField,
        u: &mut HostField,
        p: &mut HostField,
        q: &mut HostField,
        alpha: f64,
        beta: f64,
    ) -> Result<f64> {
        let (nx, nz, v) = (s.nx(), s.nz, &*s.vertical);
        let [pq, _] = self.reduce_rows(s.ny(), |parts| {
            rows(u)
                .zip(rows(p))
                .zip(rows(q))
                .zip(parts.par_iter_mut())
                .enumerate()
                .for_each(|(j, (((ur, pr), qr), part))| {
                    let mut sum = 0.0;
                    for i in 0..nx {
                        let c = &s.columns[j * nx + i];
                        let zn = nbrs(z, i, j);
                        let uc = col_mut(ur, i, nz);
                        let pc = col_mut(pr, i, nz);
                        let qc = col_mut(qr, i, nz);
                        for k in 0..nz {
                            let pold = pc[k];
                            uc[k] += alpha * pold;
                            pc[k] = zn.c[k] + beta * pold;
                        }
                        apply_column(c, v, &zn, |k, az| qc[k] = az + beta * qc[k]);
                        sum += dot(pc, qc);
                    }
                    *part = [sum, 0.0];
                })
        });
        Ok(pq)
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
                    with_scratch(lines::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            add(if full {
                                lines::cg_tridiag::<LANES>(s, (j, i), qrow, rrow, zrow, alpha, cp)
                            } else {
                                lines::cg_tridiag::<1>(s, (j, i), qrow, rrow, zrow, alpha, cp)
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
        let (nx, nz) = (s.nx(), s.nz);
        self.pool.install(|| {
            rows(u_out)
                .zip(rows_ref(f))
                .enumerate()
                .for_each(|(j, (orow, frow))| {
                    with_scratch(lines::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            if full {
                                lines::smooth::<LANES>(s, (j, i), frow, u_in, orow, rho, cp)
                            } else {
                                lines::smooth::<1>(s, (j, i), frow, u_in, orow, rho, cp)
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
                    with_scratch(lines::scratch_len(nz), |cp| {
                        groups(nx, |i, full| {
                            if full {
                                lines::restrict_smooth::<LANES>(
                                    coarse,
                                    (j, i),
                                    (r0, r1),
                                    frow,
                                    urow,
                                    w,
                                    cp,
                                )
                            } else {
                                lines::restrict_smooth::<1>(
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

    // u_f += P u_c; traffic: read u_f, u_c (cached); write u_f: 3.
    fn prolongate(
        &self,
        coarse: &LevelStencil,
        fine: &LevelStencil,
        u_coarse: &HostField,
        u_fine: &mut HostField,
    ) -> Result<()> {
        let phys = coarse.block.physical();
        let (nx, ncx, ncy, nz) = (fine.nx(), coarse.nx(), coarse.ny(), fine.nz);
        let ccol = |ih: usize, jh: usize| &u_coarse.data[u_coarse.offset(ih, jh)..][..nz];
        self.pool.install(|| {
            rows(u_fine).enumerate().for_each(|(j, frow)| {
                // Halo-inclusive coarse indices of the parent and of its y neighbour.
                let jp = j / 2 + 1;
                let (jy, ghost_y) = if j % 2 == 0 {
                    (jp - 1, jp == 1 && phys.south)
                } else {
                    (jp + 1, jp == ncy && phys.north)
                };
                for i in 0..nx {
                    let ip = i / 2 + 1;
                    let (ix, ghost_x) = if i % 2 == 0 {
                        (ip - 1, ip == 1 && phys.west)
                    } else {
                        (ip + 1, ip == ncx && phys.east)
                    };
                    let up = ccol(ip, jp);
                    // A ghost parent outside the boundary is −u_P.
                    let (wx, ux) = if ghost_x {
                        (-0.25, up)
                    } else {
                        (0.25, ccol(ix, jp))
                    };
                    let (wy, uy) = if ghost_y {
                        (-0.25, up)
                    } else {
                        (0.25, ccol(ip, jy))
                    };
                    let fc = col_mut(frow, i, nz);
                    for k in 0..nz {
                        fc[k] += 0.5 * up[k] + wx * ux[k] + wy * uy[k];
                    }
                }
            })
        });
        Ok(())
    }

    host_face_methods!();
}

impl Probes for CpuBackend {
    fn moved_values(&self, kernel: crate::perf::Kernel) -> Option<f64> {
        crate::perf::host_moved_values(kernel)
    }

    fn copy_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64> {
        // An element loop with ordinary stores, as STREAM's copy and our kernels write (`+ 0.0`
        // keeps it from becoming a call to memcpy, whose streaming path differs by machine).
        let len = (bytes / 16).max(1);
        let t = self.stream_kernel(len, repeats, |d, s| {
            d.iter_mut().zip(s).for_each(|(d, s)| *d = *s + 0.0)
        });
        Ok((2 * len * 8) as f64 / t)
    }

    fn update_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64> {
        let len = (bytes / 8).max(1);
        let t = self.stream_kernel(len, repeats, |y, x| {
            y.iter_mut().zip(x).for_each(|(y, x)| *y += 1e-3 * x)
        });
        Ok((3 * len * 8) as f64 / t)
    }
}
