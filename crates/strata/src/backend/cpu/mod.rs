//! The CPU backend: rayon over rows of z-contiguous columns, the paper's fused kernels, no
//! allocation after setup, deterministic reductions (a partial per row, summed in row order, so
//! results are bit-identical run to run and independent of the thread count).

mod cells;
mod column;
mod from_zero;
mod isa;
mod lines;
mod stencil;
mod thomas;
mod transfer;
mod vector;

use self::column::{apply_column_cross, cross, dot, nbrs, ResidualSink};
pub use self::isa::Isa;
use self::thomas::{colour_groups, groups, LANES};
use super::Fields;
use crate::error::{Result, StrataError};
use crate::field::HostField;
use crate::perf::Probes;
use crate::precision::{Real, Storage};
use crate::stencil::LevelStencil;
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::Mutex;

/// The CPU backend. Owns its rayon thread pool.
pub struct CpuBackend {
    pool: rayon::ThreadPool,
    /// One reduction partial per row, sized at setup.
    partials: Mutex<Vec<[f64; 2]>>,
    /// The instructions the kernels run with ([`Isa::available`] on this CPU).
    isa: Isa,
}

/// Threads per core that [`CpuBackend::new`] accepts at most.
pub const MAX_THREADS_PER_CORE: usize = 4;

fn max_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get()) * MAX_THREADS_PER_CORE
}

impl std::fmt::Debug for CpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CpuBackend({} threads, {})",
            self.threads(),
            self.isa.name()
        )
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

/// A field of the CPU backend: `f64` values, or `f32` on a level prepared in single precision
/// ([`LevelStencil::storage`]).
#[derive(Debug, Clone, PartialEq)]
pub enum CpuField {
    /// An fp64 field.
    Double(HostField<f64>),
    /// An fp32 field.
    Single(HostField<f32>),
}

/// The value types of CPU fields, and how to find a field of each inside a [`CpuField`].
pub trait CpuReal: Real {
    /// The field if it stores `Self`.
    fn field(x: &CpuField) -> Option<&HostField<Self>>;
    /// The field if it stores `Self`, writable.
    fn field_mut(x: &mut CpuField) -> Option<&mut HostField<Self>>;
}

impl CpuReal for f64 {
    fn field(x: &CpuField) -> Option<&HostField<f64>> {
        match x {
            CpuField::Double(h) => Some(h),
            CpuField::Single(_) => None,
        }
    }
    fn field_mut(x: &mut CpuField) -> Option<&mut HostField<f64>> {
        match x {
            CpuField::Double(h) => Some(h),
            CpuField::Single(_) => None,
        }
    }
}

impl CpuReal for f32 {
    fn field(x: &CpuField) -> Option<&HostField<f32>> {
        match x {
            CpuField::Single(h) => Some(h),
            CpuField::Double(_) => None,
        }
    }
    fn field_mut(x: &mut CpuField) -> Option<&mut HostField<f32>> {
        match x {
            CpuField::Single(h) => Some(h),
            CpuField::Double(_) => None,
        }
    }
}

impl CpuField {
    /// The precision the field stores.
    pub fn precision(&self) -> Storage {
        match self {
            CpuField::Double(_) => Storage::F64,
            CpuField::Single(_) => Storage::F32,
        }
    }

    /// The fp64 field (as the CPU backend's levels are unless prepared in single precision).
    ///
    /// # Panics
    /// If the field stores fp32.
    pub fn as_double(&self) -> &HostField<f64> {
        f64::field(self).expect("an fp64 field")
    }

    /// [`CpuField::as_double`], writable.
    ///
    /// # Panics
    /// If the field stores fp32.
    pub fn as_double_mut(&mut self) -> &mut HostField<f64> {
        f64::field_mut(self).expect("an fp64 field")
    }
}

impl From<HostField<f64>> for CpuField {
    fn from(h: HostField<f64>) -> Self {
        CpuField::Double(h)
    }
}

/// The field `x` as storing `S`, or the error of a field passed with a level of another
/// precision (a caller's mistake, reported rather than a panic).
fn get<S: CpuReal>(x: &CpuField) -> Result<&HostField<S>> {
    S::field(x).ok_or_else(|| mismatch(x))
}

fn get_mut<S: CpuReal>(x: &mut CpuField) -> Result<&mut HostField<S>> {
    let p = x.precision();
    S::field_mut(x).ok_or_else(|| mismatch_of(p))
}

fn mismatch(x: &CpuField) -> StrataError {
    mismatch_of(x.precision())
}

fn mismatch_of(p: Storage) -> StrataError {
    StrataError::Backend {
        backend: "cpu".into(),
        msg: format!("a field stored in {p:?} precision was passed with a level of the other"),
    }
}

/// Runs `$body` with `$S` the value type of level `$s`'s fields.
macro_rules! by_precision {
    ($s:expr, $S:ident => $body:expr) => {
        match $s.storage {
            $crate::precision::Storage::F64 => {
                type $S = f64;
                $body
            }
            $crate::precision::Storage::F32 => {
                type $S = f32;
                $body
            }
        }
    };
}
use by_precision;

/// The interior rows of a field, each `(nx + 2) * nz` long (halo columns included).
fn rows<S: Real>(x: &mut HostField<S>) -> impl IndexedParallelIterator<Item = &mut [S]> {
    let (row, ny) = (x.row_len(), x.ny);
    x.data.par_chunks_mut(row).skip(1).take(ny)
}

/// Interior rows, read-only.
fn rows_ref<S: Real>(x: &HostField<S>) -> impl IndexedParallelIterator<Item = &[S]> {
    let (row, ny) = (x.row_len(), x.ny);
    x.data.par_chunks(row).skip(1).take(ny)
}

/// The interior part of a row (its halo columns cut off).
#[inline(always)]
fn inner<S>(row: &[S], nz: usize) -> &[S] {
    &row[nz..row.len() - nz]
}

#[inline(always)]
fn inner_mut<S>(row: &mut [S], nz: usize) -> &mut [S] {
    let len = row.len();
    &mut row[nz..len - nz]
}

/// Column `i` of a row.
#[inline(always)]
fn col_mut<S>(row: &mut [S], i: usize, nz: usize) -> &mut [S] {
    &mut row[(i + 1) * nz..(i + 2) * nz]
}

#[inline(always)]
fn col<S>(row: &[S], i: usize, nz: usize) -> &[S] {
    &row[(i + 1) * nz..(i + 2) * nz]
}

impl CpuBackend {
    /// A backend on `threads` threads (all cores if `None`), its kernels using the widest
    /// instructions this CPU has ([`Isa::detect`]), or those the environment variable
    /// `STRATA_CPU_ISA` names (`baseline` or `avx2`: [`Isa::from_env`]).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        Self::with_isa(threads, Isa::from_env()?.unwrap_or_else(Isa::detect))
    }

    /// A backend on `threads` threads whose kernels use the instructions `isa` (the same values
    /// bit for bit whichever: a choice for tests and measurements); an error if this CPU lacks
    /// them.
    pub fn with_isa(threads: Option<usize>, isa: Isa) -> Result<Self> {
        let isa = isa.checked()?;
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
            isa,
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

    /// The instructions the kernels run with.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Runs `body` compiled for this backend's instructions ([`isa::run`]): the kernels' per-row
    /// bodies go through here (or [`CpuBackend::with_scratch`]) as `#[inline(always)]` closures,
    /// and so must every closure they call in their loops, or that code keeps the baseline's.
    #[inline(always)]
    fn wide<R>(&self, body: impl FnOnce() -> R) -> R {
        isa::run(self.isa, body)
    }

    /// [`with_scratch`] with `f` compiled for this backend's instructions ([`CpuBackend::wide`]).
    #[inline(always)]
    fn with_scratch<R>(&self, len: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
        with_scratch(len, |s| {
            self.wide(
                #[inline(always)]
                || f(s),
            )
        })
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

    fn map2<S: Real, T: Real>(
        &self,
        x: &HostField<S>,
        y: &mut HostField<T>,
        f: impl Fn(f64, f64) -> f64 + Sync,
    ) {
        let nz = x.nz;
        self.pool.install(|| {
            rows(y).zip(rows_ref(x)).for_each(|(yr, xr)| {
                for (yv, xv) in inner_mut(yr, nz).iter_mut().zip(inner(xr, nz)) {
                    *yv = T::from_f64(f(xv.to_f64(), yv.to_f64()));
                }
            })
        });
    }
}

impl Fields for CpuBackend {
    type Field = CpuField;

    type LevelOp = LevelStencil;

    fn name(&self) -> String {
        format!("cpu ({} threads, {})", self.threads(), self.isa.name())
    }

    fn prepare_level(&self, stencil: &LevelStencil) -> Result<LevelStencil> {
        stencil.check_single()?;
        stencil.check_host_cells()?;
        let mut parts = self.partials.lock().unwrap_or_else(|e| e.into_inner());
        if parts.len() < stencil.ny() {
            parts.resize(stencil.ny(), [0.0; 2]);
        }
        // Warm every worker's Thomas scratch so that solves do not allocate.
        let nz = stencil.nz;
        self.pool
            .broadcast(|_| with_scratch(thomas::scratch_len(nz), |_| ()));
        Ok(stencil.clone())
    }

    fn stencil<'a>(&self, op: &'a LevelStencil) -> &'a LevelStencil {
        op
    }

    fn alloc(&self, s: &LevelStencil) -> Result<CpuField> {
        fn touched<S: Real>(b: &CpuBackend, s: &LevelStencil) -> HostField<S> {
            let mut f = HostField::<S>::zeros(s.nx(), s.ny(), s.nz);
            // Touch every page now (from the threads that will use it), not in the first kernel.
            let row = f.row_len();
            b.pool.install(|| {
                f.data
                    .par_chunks_mut(row)
                    .for_each(|r| r.fill(S::default()))
            });
            f
        }
        Ok(match s.storage {
            Storage::F64 => CpuField::Double(touched(self, s)),
            Storage::F32 => CpuField::Single(touched(self, s)),
        })
    }
}

impl Probes for CpuBackend {
    fn moved_values(&self, kernel: crate::perf::Kernel) -> Option<f64> {
        crate::perf::host_moved_values(kernel)
    }

    fn coefficient_values(&self, kernel: crate::perf::Kernel, symmetric: bool) -> Option<f64> {
        crate::perf::host_coefficient_values(kernel, symmetric)
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
