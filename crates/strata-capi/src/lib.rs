//! # libstrata: the C API
//!
//! An opaque solver handle over [`strata_core::PersistentSolver`]: create it once for a problem
//! and solver settings, solve every time step, update coefficient fields or ω in place, destroy
//! it. Every function returns a [`StrataStatus`]; on an error, [`strata_last_error`] gives a
//! readable message (per thread). No panic crosses the boundary: one is caught and reported as
//! [`StrataStatus::InternalError`]. Arrays are the caller's, z-contiguous (k fastest):
//! `v[(j * n + i) * nz + k]`, host memory. The header `include/strata.h` is generated from this
//! file by cbindgen (a test keeps it in sync).

#![warn(missing_docs)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};
use strata_core::grid::{Block, Boundaries, Boundary};
use strata_core::names::{BackendKind, Choice, HaloPath};
use strata_core::problem::{
    Coefficients, Geometry, Grading, Orography, ProblemParams, SphereStencil,
};
use strata_core::solver::{
    CoarseSolve, Precision, Preconditioner, SolveInfo, SolverConfig, SolverKind,
};
use strata_core::StrataError;
use strata_cuda::DeviceHandle;
use strata_session::{Place, Solver};

mod sized;

/// Status of a call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrataStatus {
    /// Success.
    Ok = 0,
    /// An argument is invalid (a null pointer, a value out of range); see strata_last_error.
    InvalidArgument = 1,
    /// The problem does not fit in memory.
    OutOfMemory = 2,
    /// The backend failed (no GPU, a CUDA error, a kernel compile error).
    Backend = 3,
    /// A file could not be read or written.
    File = 4,
    /// Communication between ranks failed.
    Communication = 5,
    /// A bug in strata (a caught panic).
    InternalError = 6,
    /// The solve did not converge and `StrataOptions::error_if_not_converged` asks for an
    /// error: `info` is filled and `u` holds the last iterate.
    NotConverged = 7,
}

/// The problem: the model problem's parameters (see `strata solve --help` for their meaning).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StrataProblem {
    /// `sizeof(StrataProblem)` as the caller's header lays it out, set by
    /// strata_problem_default: the library reads the fields that layout has and takes the
    /// defaults for fields added since (docs/USING.md, "A stable ABI").
    pub size: usize,
    /// 0: a cubed-sphere panel, 1: the flat box, 2: the whole sphere (six panels of n × n
    /// columns; a field is the six panels one after the other, `[panel][j][i][k]`).
    pub geometry: i32,
    /// Horizontal cells per direction (per panel on the sphere).
    pub n: i32,
    /// Vertical cells.
    pub nz: i32,
    /// Vertical Courant number ν (sets ω = ν h / 2 unless `omega` > 0).
    pub cfl: f64,
    /// Vertical anisotropy λ.
    pub lambda: f64,
    /// Atmosphere height H.
    pub height: f64,
    /// Zero-order coefficient δ.
    pub delta: f64,
    /// ω itself, if > 0.
    pub omega: f64,
    /// 1: graded vertical grid, 0: uniform.
    pub graded: i32,
    /// The sphere's horizontal stencil: 0 nine-point (consistent, second order; docs/MODEL.md
    /// §16.1), 1 two-point (the paper's fluxes, not consistent on the sphere). Not used
    /// elsewhere.
    pub sphere_stencil: i32,
    /// The lateral condition of the west and east sides: 0 Dirichlet (u = 0, the paper's),
    /// 1 Neumann (zero flux), 2 periodic (the box only) (`STRATA_BOUNDARY_*`; docs/MODEL.md
    /// §20). Dirichlet on the sphere, which has no lateral boundary. (Added after 0.2.0.)
    pub boundary_x: i32,
    /// The lateral condition of the south and north sides, as `boundary_x`.
    pub boundary_y: i32,
    /// The ground height under every column, `n · n` values `h[j * n + i]` on [0, height),
    /// or on the sphere `6 · n · n` values `h[(panel * n + j) * n + i]`, for terrain-following
    /// coordinates over orography (docs/MODEL.md §23); read while the solver is created. Null:
    /// flat ground. (Added after 0.2.0.)
    pub orography: *const f64,
}

/// Solver settings.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StrataOptions {
    /// `sizeof(StrataOptions)` as the caller's header lays it out, set by
    /// strata_options_default and strata_options_paper: the library reads the fields that
    /// layout has and takes the defaults for fields added since (docs/USING.md, "A stable ABI").
    pub size: usize,
    /// 0 cg, 1 mg, 2 mg-cg, 3 gcr, 4 bicgstab (`STRATA_SOLVER_*`).
    pub solver: i32,
    /// Multigrid levels, exactly (deeper only for a singular problem); STRATA_DEFAULT (-1, the
    /// default) 5, as many as the grid allows where the coarsest of 5 is too strongly coupled
    /// for its smoothing to solve it (δ = 0 or small, long time steps), the levels the grid has
    /// where it halves fewer times, and the coarsest level solved by CG where smoothing is far from solving it.
    pub levels: i32,
    /// Smoother steps on the coarsest level.
    pub coarse_steps: i32,
    /// Relative tolerance: stop when ‖r‖ < rtol ‖f‖ (PETSc's default; ‖r‖/‖r₀‖ from zero).
    pub rtol: f64,
    /// Most iterations.
    pub max_it: i32,
    /// Preconditioner of gcr and bicgstab: 0 line relaxation, 1 multigrid
    /// (`STRATA_PRECONDITIONER_*`).
    pub preconditioner: i32,
    /// k of GCR(k).
    pub restart: i32,
    /// 0 auto (the GPU when usable), 1 cpu, 2 cuda, 3 reference (`STRATA_BACKEND_*`).
    pub backend: i32,
    /// CPU threads (0: all cores).
    pub threads: i32,
    /// CUDA device ordinal.
    pub device: i32,
    /// Multigrid smoother: 0 the paper's block-Jacobi line relaxation, 1 red-black line
    /// Gauss–Seidel, STRATA_DEFAULT (-1) the solver's default (red-black; the paper's block
    /// Jacobi is measured slower for every solver).
    pub smoother: i32,
    /// Damping ρ of the block-Jacobi smoother, in (0, 2) (2/3 by default; 0.8 takes fewer
    /// cycles, docs/PERFORMANCE.md).
    pub rho: f64,
    /// 0 fp64; 1 mixed: the outer iteration and its stopping test in fp64, the multigrid
    /// preconditioner's fields in fp32 (mg, mg-cg, and gcr/bicgstab with the multigrid
    /// preconditioner); STRATA_DEFAULT (-1) the solver's default (mixed wherever there is a
    /// multigrid cycle, fp64 for cg and the line preconditioner).
    pub precision: i32,
    /// Over-relaxation weight w of the red-black smoother's half-sweeps, in (0, 2) (1 is line
    /// Gauss–Seidel; 1.15 by default, which takes red-black mg from 5 cycles to 4). The
    /// symmetric cycle of mg-cg uses 1 whatever this is.
    pub relaxation: f64,
    /// How the GPU ranks of a distributed solve (strata_solver_create_mpi) exchange halos:
    /// `STRATA_HALO_AUTO` (the default) NCCL for GPU ranks where libstrata has it and
    /// libnccl.so is found, else MPI; `STRATA_HALO_MPI` through host memory by MPI;
    /// `STRATA_HALO_NCCL` by NCCL between device buffers (one GPU per rank; libstrata built
    /// with the `nccl` feature). Ignored by strata_solver_create.
    pub halo: i32,
    /// 1 (the default): on ranks, the multigrid cycle fills a prolongated level's halo by
    /// prolongating the neighbours' coarse values into it; 0: it exchanges after every
    /// prolongation, as the paper's cycle does (the same iterates bit for bit, more messages).
    pub prolongate_halos: i32,
    /// 1: a solve that did not converge returns `STRATA_STATUS_NOT_CONVERGED` (with `info`
    /// filled and the last iterate in `u`), as PETSc's `-ksp_error_if_not_converged`; 0 (the
    /// default): it returns `STRATA_STATUS_OK` and `info.converged = 0` says so.
    pub error_if_not_converged: i32,
    /// The coarse CG's relative tolerance (its residual's reduction), in (0, 1); used with
    /// `coarse_solve` 1. (Added after 0.2.0, as `coarse_solve`.)
    pub coarse_rtol: f64,
    /// How the coarsest multigrid level is solved: 0 `coarse_steps` smoothing steps (the
    /// paper's, the default), 1 CG to `coarse_rtol` (the cycle count then no longer depends on
    /// the levels; symmetric operators only) (`STRATA_COARSE_SOLVE_*`; docs/MODEL.md §9.4).
    pub coarse_solve: i32,
    /// Smoothing steps before the coarse correction on every multigrid level but the coarsest,
    /// 1 to 16; STRATA_DEFAULT (-1, the default) the solver's (mg-cg 2; mg 2 with
    /// horizontally anisotropic coefficient fields from 512² columns; the others 1:
    /// docs/PERFORMANCE.md). mg-cg's symmetric cycle needs as many after it, and takes one count
    /// given for both. (Added after 0.2.0, with `post_smooth`.)
    pub pre_smooth: i32,
    /// Smoothing steps after the coarse correction, as `pre_smooth`.
    pub post_smooth: i32,
}

/// What a solve did.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct StrataInfo {
    /// 1 if it converged (rtol reached, or the fixed iterations run).
    pub converged: i32,
    /// Iterations run.
    pub iterations: i32,
    /// ‖f − A u₀‖₂.
    pub initial_residual: f64,
    /// Final ‖r‖ / ‖f‖.
    pub relative_residual: f64,
    /// Seconds in the solver.
    pub seconds: f64,
}

/// An opaque solver handle.
pub struct StrataSolver {
    inner: Box<dyn Solver>,
    /// The options it was created with (where it runs: threads, device, halo path).
    options: StrataOptions,
}

impl StrataSolver {
    /// Values of one field of the solver's block.
    fn len(&self) -> usize {
        self.inner.len()
    }

    /// The problem the solver was set up for (with its current coefficients and ω).
    fn problem(&self) -> &ProblemParams {
        self.inner.problem()
    }

    /// The device-array calls, or the error for a solver on the CPU.
    fn device(&mut self) -> Result<&mut dyn DeviceHandle, StrataError> {
        self.inner.device().ok_or_else(|| {
            StrataError::invalid(
                "solver",
                "is on the CPU: device arrays need a solver created on the CUDA backend \
                 (options.backend = 2, or 0 where a GPU is usable)",
            )
        })
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

fn status_of(e: &StrataError) -> StrataStatus {
    match e {
        StrataError::InvalidParameter { .. } => StrataStatus::InvalidArgument,
        StrataError::OutOfMemory { .. } => StrataStatus::OutOfMemory,
        StrataError::NetCdf { .. } => StrataStatus::File,
        StrataError::Backend { .. } => StrataStatus::Backend,
        StrataError::Comm(_) => StrataStatus::Communication,
        StrataError::NotConverged { .. } => StrataStatus::NotConverged,
    }
}

/// Runs `f`, turning errors and panics into a status and the last-error message.
fn guard(f: impl FnOnce() -> Result<(), StrataError>) -> StrataStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_error("");
            StrataStatus::Ok
        }
        Ok(Err(e)) => {
            set_error(&e.to_string());
            status_of(&e)
        }
        Err(_) => {
            set_error("internal error in strata (a panic was caught); please report it");
            StrataStatus::InternalError
        }
    }
}

fn invalid(msg: &str) -> StrataError {
    StrataError::invalid("argument", msg)
}

fn count(name: &str, v: i32) -> Result<usize, StrataError> {
    usize::try_from(v)
        .map_err(|_| StrataError::invalid(name, format!("must not be negative (got {v})")))
}

/// A count that may be left to the solver: [`STRATA_DEFAULT`] is `None`.
fn given(v: i32, name: &str) -> Result<Option<usize>, StrataError> {
    if v == STRATA_DEFAULT {
        return Ok(None);
    }
    count(name, v).map(Some)
}

/// The message of the last failed call on this thread ("" after a successful one). The string
/// stays valid until the next strata call on this thread.
#[no_mangle]
pub extern "C" fn strata_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The version of libstrata, "MAJOR.MINOR.PATCH" (the header's `STRATA_VERSION` is the one a
/// program was built against). The string is static.
#[no_mangle]
pub extern "C" fn strata_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Fills the `size` bytes of `problem` with the paper's model problem at n = 128 (panel,
/// nz 128, ν 8.4, λ 1, H 0.01, δ 1, uniform grid) and sets `problem->size`. Call it through
/// the header's `strata_problem_default(problem)`, which passes `sizeof *problem`.
///
/// # Safety
/// `problem` must be null or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn strata_problem_init(
    problem: *mut StrataProblem,
    size: usize,
) -> StrataStatus {
    // SAFETY: the caller promises `size` writable bytes or null (checked).
    guard(|| unsafe { sized::write(problem, size, default_problem()) })
}

/// The model problem's defaults as the C struct of this version.
fn default_problem() -> StrataProblem {
    let d = ProblemParams::default();
    StrataProblem {
        size: std::mem::size_of::<StrataProblem>(),
        geometry: 0,
        n: d.n as i32,
        nz: d.nz as i32,
        cfl: d.cfl,
        lambda: d.lambda,
        height: d.height,
        delta: d.delta,
        omega: 0.0,
        graded: 0,
        sphere_stencil: 0,
        boundary_x: d.boundaries.x.code(),
        boundary_y: d.boundaries.y.code(),
        orography: std::ptr::null(),
    }
}

/// The value of `StrataOptions::smoother` and `StrataOptions::precision` that takes the
/// chosen solver's default: red-black smoothing, and mixed precision wherever there is a
/// multigrid cycle (mg, mg-cg, gcr/bicgstab with the multigrid preconditioner; the measured
/// best, the same fp64 answer), fp64 for cg and the line preconditioner.
pub const STRATA_DEFAULT: i32 = -1;

/// Fills the `size` bytes of `options` with the defaults: mg, the solver's levels
/// ([`STRATA_DEFAULT`]: 5, deeper where the coarsest of 5 is too strongly coupled), 2 coarse steps, rtol
/// 1e-5, 500 iterations, the solver's default smoother and precision ([`STRATA_DEFAULT`]:
/// red-black, and mixed where there is a multigrid cycle), gcr/bicgstab preconditioned by
/// multigrid, GCR(5),
/// backend auto, all cores, device 0, halos auto, non-convergence reported in the info (not an
/// error); sets `options->size`. Call it through the header's `strata_options_default(options)`,
/// which passes `sizeof *options`.
///
/// # Safety
/// `options` must be null or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn strata_options_init(
    options: *mut StrataOptions,
    size: usize,
) -> StrataStatus {
    // SAFETY: the caller promises `size` writable bytes or null (checked).
    guard(|| unsafe { sized::write(options, size, default_options()) })
}

/// Fills the `size` bytes of `options` with the paper's configuration (Müller, Scheichl &
/// Vainikko 2014): as strata_options_init, with the block-Jacobi smoother (damped by 2/3) and
/// fp64. Call it through the header's `strata_options_paper(options)`.
///
/// # Safety
/// `options` must be null or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn strata_options_init_paper(
    options: *mut StrataOptions,
    size: usize,
) -> StrataStatus {
    let paper = options_of(&SolverConfig::paper(SolverKind::Mg));
    // SAFETY: the caller promises `size` writable bytes or null (checked).
    guard(|| unsafe { sized::write(options, size, paper) })
}

/// The defaults as the C struct of this version.
fn default_options() -> StrataOptions {
    StrataOptions {
        levels: STRATA_DEFAULT,
        smoother: STRATA_DEFAULT,
        precision: STRATA_DEFAULT,
        pre_smooth: STRATA_DEFAULT,
        post_smooth: STRATA_DEFAULT,
        ..options_of(&SolverConfig::default())
    }
}

/// The C options of `c`, on one process, the backend chosen at run time.
fn options_of(c: &SolverConfig) -> StrataOptions {
    StrataOptions {
        size: std::mem::size_of::<StrataOptions>(),
        solver: c.kind.code(),
        levels: c.multigrid.n_levels as i32,
        coarse_steps: c.multigrid.coarse_steps as i32,
        rtol: c.stopping.rtol,
        max_it: c.stopping.max_it as i32,
        preconditioner: c.preconditioner.code(),
        restart: c.restart as i32,
        backend: BackendKind::Auto.code(),
        threads: 0,
        device: 0,
        smoother: c.multigrid.smoother.code(),
        rho: c.multigrid.rho,
        precision: c.precision.code(),
        relaxation: c.multigrid.relaxation,
        halo: HaloPath::Auto.code(),
        prolongate_halos: i32::from(c.multigrid.prolongate_halos),
        error_if_not_converged: i32::from(c.stopping.error_if_not_converged),
        coarse_rtol: c.multigrid.coarse_rtol,
        coarse_solve: c.multigrid.coarse_solve.code(),
        pre_smooth: c.multigrid.pre_smooth as i32,
        post_smooth: c.multigrid.post_smooth as i32,
    }
}

/// The library's problem of the C struct `p`.
///
/// # Safety
/// `p.orography` must be null or point to `p.n²` readable values (`6 p.n²` on the sphere).
unsafe fn problem_params(p: &StrataProblem) -> Result<ProblemParams, StrataError> {
    let orography = if p.orography.is_null() {
        None
    } else {
        let n = count("n", p.n)?;
        let panels = Geometry::from_code(p.geometry)?.panels();
        // SAFETY: the caller promises n² values (6 n² on the sphere) at a non-null
        // `orography` (checked for null).
        let h = unsafe { std::slice::from_raw_parts(p.orography, panels * n * n) }.to_vec();
        Some(std::sync::Arc::new(Orography::with_panels(panels, n, h)?))
    };
    Ok(ProblemParams {
        geometry: Geometry::from_code(p.geometry)?,
        n: count("n", p.n)?,
        nz: count("nz", p.nz)?,
        cfl: p.cfl,
        lambda: p.lambda,
        height: p.height,
        delta: p.delta,
        grading: if p.graded != 0 {
            Grading::Graded
        } else {
            Grading::Uniform
        },
        omega: (p.omega > 0.0).then_some(p.omega),
        coefficients: None,
        sphere_stencil: SphereStencil::from_code(p.sphere_stencil)?,
        boundaries: Boundaries {
            x: Boundary::from_code(p.boundary_x)?,
            y: Boundary::from_code(p.boundary_y)?,
        },
        orography,
    })
}

fn solver_config(o: &StrataOptions) -> Result<SolverConfig, StrataError> {
    // The preconditioner first: without a multigrid cycle the default precision is fp64, and
    // a mixed one asked for is then refused by validate rather than dropped.
    let mut cfg = SolverConfig::new(SolverKind::from_code(o.solver)?)
        .with_preconditioner(Preconditioner::from_code(o.preconditioner)?);
    if o.precision != STRATA_DEFAULT {
        cfg = cfg.with_precision(Precision::from_code(o.precision)?);
    }
    if o.smoother != STRATA_DEFAULT {
        cfg = cfg.with_smoother(strata_core::solver::Smoother::from_code(o.smoother)?);
    }
    if let Some(levels) = given(o.levels, "levels")? {
        cfg = cfg.with_levels(levels);
    }
    let cfg = cfg
        .with_coarse_steps(count("coarse_steps", o.coarse_steps)?)
        .with_rtol(o.rtol)
        .with_max_it(count("max_it", o.max_it)?)
        .with_restart(count("restart", o.restart)?)
        .with_rho(o.rho)
        .with_relaxation(o.relaxation)
        .with_prolongated_halos(o.prolongate_halos != 0)
        .with_error_if_not_converged(o.error_if_not_converged != 0)
        .with_coarse_solve(CoarseSolve::from_code(o.coarse_solve)?, o.coarse_rtol)
        .with_given_smoothing_steps(
            given(o.pre_smooth, "pre_smooth")?,
            given(o.post_smooth, "post_smooth")?,
        );
    cfg.validate()?;
    Ok(cfg)
}

/// Where `o` says the solver runs (backend, threads, device, halo path), on one process.
fn place(o: &StrataOptions) -> Result<Place, StrataError> {
    let threads = match count("threads", o.threads)? {
        0 => None,
        t => Some(t),
    };
    Ok(Place::new(BackendKind::from_code(o.backend)?)
        .with_threads(threads)
        .with_device(count("device", o.device)?)
        .with_halo(HaloPath::from_code(o.halo)?))
}

/// Creates a solver for `problem` with `options` (both required); `*out` receives the handle, to
/// be released with strata_solver_destroy.
///
/// # Safety
/// `problem` and `options` must be null or valid; `out` must be null or writable.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_create(
    problem: *const StrataProblem,
    options: *const StrataOptions,
    out: *mut *mut StrataSolver,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a writable handle or null (checked).
        let out = unsafe { out.as_mut() }.ok_or_else(|| invalid("out is null"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller promises structs of their stated sizes, or null (checked).
        let (p, o) = unsafe { (sized::read(problem)?, sized::read(options)?) };
        let (p, o) = (&p, &o);
        // SAFETY: the caller promises `problem->orography` null or of n² values (6 n² on the
        // sphere; documented).
        let params = unsafe { problem_params(p)? };
        let inner = strata_session::open(&params, &solver_config(o)?, place(o)?)?;
        *out = Box::into_raw(Box::new(StrataSolver { inner, options: *o }));
        Ok(())
    })
}

/// Values of one field (n · n · nz): the length of every array this solver takes.
///
/// # Safety
/// `solver` must be null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_size(
    solver: *const StrataSolver,
    size: *mut usize,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null, and a writable size or null.
        let (s, size) = unsafe { (solver.as_ref(), size.as_mut()) };
        let (s, size) = (
            s.ok_or_else(|| invalid("solver is null"))?,
            size.ok_or_else(|| invalid("size is null"))?,
        );
        *size = s.len();
        Ok(())
    })
}

/// Fills the `size` bytes of `options` with the options `solver` runs with: those it was
/// created with, every choice left to the library resolved — the solver's smoother, precision
/// and smoothing steps where `STRATA_DEFAULT` was given, the backend `auto` chose, the levels
/// of the hierarchy (deeper than asked for a singular problem, and than the default where its
/// coarsest level is too strongly coupled) — and `threads`, `device` and `halo` as given; sets
/// `options->size`. Call it with `sizeof *options` (PETSc's `-ksp_view` of the strata
/// preconditioner prints these).
///
/// # Safety
/// `solver` must be null or a live handle; `options` null or `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_options(
    solver: *const StrataSolver,
    options: *mut StrataOptions,
    size: usize,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_ref() }.ok_or_else(|| invalid("solver is null"))?;
        let given = &s.options;
        let resolved = StrataOptions {
            backend: s.inner.backend().code(),
            threads: given.threads,
            device: given.device,
            halo: given.halo,
            ..options_of(s.inner.config())
        };
        // SAFETY: the caller promises `size` writable bytes or null (checked).
        unsafe { sized::write(options, size, resolved) }
    })
}

/// An array of the solver's size from a pointer (null: an error naming `name`).
///
/// # Safety
/// `ptr` must be null or point to `len` readable values.
unsafe fn slice<'a>(ptr: *const f64, len: usize, name: &str) -> Result<&'a [f64], StrataError> {
    if ptr.is_null() {
        return Err(StrataError::invalid(name, "is null"));
    }
    // SAFETY: non-null, and the caller promises `len` values.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Solves A u = rhs. `rhs` and `u` hold strata_solver_size values; with `initial_guess` != 0 the
/// solve starts from `u`, else from zero. `info` (may be null) receives the record; a solve that
/// does not converge is not an error (see info.converged) unless `options.error_if_not_converged`
/// asked for `STRATA_STATUS_NOT_CONVERGED` (info filled, the last iterate in `u`). A right-hand
/// side or initial guess that is not finite is refused, naming the first bad cell.
///
/// # Safety
/// `solver` must be a live handle; `rhs` and `u` must hold the solver's size of values (`u`
/// writable); `info` must be null or writable.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_solve(
    solver: *mut StrataSolver,
    rhs: *const f64,
    u: *mut f64,
    initial_guess: i32,
    info: *mut StrataInfo,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        let len = s.len();
        // SAFETY: the caller promises `len` values behind each pointer.
        let rhs = unsafe { slice(rhs, len, "rhs") }?;
        if u.is_null() {
            return Err(StrataError::invalid("u", "is null"));
        }
        // SAFETY: non-null, `len` writable values promised by the caller, distinct from rhs.
        let u = unsafe { std::slice::from_raw_parts_mut(u, len) };
        let warm = initial_guess != 0;
        s.inner.rebuild_pending()?;
        let record = s.inner.solve(rhs, u, warm);
        // SAFETY: `info` is null or writable, as the caller promises.
        unsafe { report(info, record) }
    })
}

/// The handle and the two host arrays of an `x → y` call (apply, precondition): the handle
/// non-null, `x` readable and `y` writable for the solver's size, each named in the error.
///
/// # Safety
/// `solver` null or a live handle; `x` null or `len` readable values, `y` null or `len` writable
/// values not overlapping `x`, for the solver's `len`; none used elsewhere while the results live.
unsafe fn host_pair<'a>(
    solver: *mut StrataSolver,
    (x, x_name): (*const f64, &str),
    (y, y_name): (*mut f64, &str),
) -> Result<(&'a mut StrataSolver, &'a [f64], &'a mut [f64]), StrataError> {
    // SAFETY: the caller promises a live handle or null (checked).
    let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
    let len = s.len();
    // SAFETY: `len` values promised by the caller.
    let x = unsafe { slice(x, len, x_name) }?;
    if y.is_null() {
        return Err(StrataError::invalid(y_name, "is null"));
    }
    // SAFETY: non-null, `len` writable values promised by the caller.
    let y = unsafe { std::slice::from_raw_parts_mut(y, len) };
    Ok((s, x, y))
}

/// y = A x with the solver's operator (to check a residual).
///
/// # Safety
/// `solver` must be a live handle; `x` and `y` must hold the solver's size of values (`y`
/// writable).
#[no_mangle]
pub unsafe extern "C" fn strata_solver_apply(
    solver: *mut StrataSolver,
    x: *const f64,
    y: *mut f64,
) -> StrataStatus {
    guard(|| {
        // SAFETY: as the caller promises (this function's contract).
        let (s, x, y) = unsafe { host_pair(solver, (x, "x"), (y, "y")) }?;
        s.inner.rebuild_pending()?;
        s.inner.apply(x, y)
    })
}

/// Every name of a setting with its C integer.
type Names = &'static [(&'static str, i32)];

/// The settings with named values ([`strata_choice`], [`strata_choice_name`]): every name of
/// `setting` with its C integer, or an error listing the settings.
fn choices(setting: &str) -> Result<Names, StrataError> {
    /// Every name of `T` with its C integer, made once per process.
    fn all<T: Choice>() -> Names {
        static TABLES: OnceLock<Mutex<HashMap<&'static str, Names>>> = OnceLock::new();
        let mut tables = TABLES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        tables
            .entry(T::SETTING)
            .or_insert_with(|| T::ALL.iter().map(|e| (e.1, e.2)).collect::<Vec<_>>().leak())
    }
    use strata_core::solver::Smoother;
    Ok(match setting {
        "geometry" => all::<Geometry>(),
        "sphere_stencil" => all::<SphereStencil>(),
        "solver" => all::<SolverKind>(),
        "preconditioner" => all::<Preconditioner>(),
        "backend" => all::<BackendKind>(),
        "smoother" => all::<Smoother>(),
        "precision" => all::<Precision>(),
        "halo" => all::<HaloPath>(),
        "boundary" => all::<Boundary>(),
        "coarse_solve" => all::<CoarseSolve>(),
        other => {
            return Err(StrataError::invalid(
                "setting",
                format!(
                    "{other:?} is not a setting with named values (geometry, sphere_stencil, \
                     solver, preconditioner, backend, smoother, precision, halo, boundary, \
                     coarse_solve)"
                ),
            ))
        }
    })
}

/// A C string argument as text, or an error naming it.
///
/// # Safety
/// `p` must be null or NUL-terminated.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, StrataError> {
    if p.is_null() {
        return Err(StrataError::invalid(what, "is null"));
    }
    // SAFETY: non-null, NUL-terminated as the caller promises.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| StrataError::invalid(what, "is not UTF-8"))
}

/// The C integer of a setting's value given by name, as the command line and Python spell it:
/// `strata_choice("solver", "mg-cg", &options.solver)`. Settings: every integer field of
/// `StrataProblem` and `StrataOptions` that names a choice — `geometry`, `sphere_stencil`,
/// `solver`, `preconditioner`, `backend`, `smoother`, `precision`, `halo`, `boundary`,
/// `coarse_solve`. For front ends that read names (PETSc's options database, a model's
/// namelist) without a table of their own. An unknown setting or name is
/// `STRATA_STATUS_INVALID_ARGUMENT`, the last error listing the names.
///
/// # Safety
/// `setting` and `name` must be null or NUL-terminated strings; `value` null or writable.
#[no_mangle]
pub unsafe extern "C" fn strata_choice(
    setting: *const c_char,
    name: *const c_char,
    value: *mut i32,
) -> StrataStatus {
    guard(|| {
        // SAFETY: null or NUL-terminated, as the caller promises.
        let (setting, name) = unsafe { (text(setting, "setting")?, text(name, "name")?) };
        if value.is_null() {
            return Err(StrataError::invalid("value", "is null"));
        }
        let table = choices(setting)?;
        let Some(&(_, c)) = table.iter().find(|e| e.0 == name) else {
            let names: Vec<String> = table.iter().map(|e| format!("'{}'", e.0)).collect();
            return Err(StrataError::invalid(
                setting,
                format!("must be one of {} (got {name:?})", names.join(", ")),
            ));
        };
        // SAFETY: non-null (checked), writable as the caller promises.
        unsafe { *value = c };
        Ok(())
    })
}

/// The name of a setting's value given by its C integer, as the command line and Python spell
/// it — the inverse of `strata_choice`: `strata_choice_name("solver", options.solver)` is
/// `"mg-cg"` for `STRATA_SOLVER_MG_CG`. For printing the options a solver runs with
/// (`strata_solver_options`; PETSc's `-ksp_view`). The string is static. Null for an unknown
/// setting, or a value the setting does not have (`STRATA_DEFAULT` among them: the solver's
/// choice, known once a solver is made), the last error saying which.
///
/// # Safety
/// `setting` must be null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn strata_choice_name(setting: *const c_char, value: i32) -> *const c_char {
    let mut name: *const c_char = std::ptr::null();
    let _ = guard(|| {
        // SAFETY: null or NUL-terminated, as the caller promises.
        let setting = unsafe { text(setting, "setting")? };
        let table = choices(setting)?;
        let Some(&(n, _)) = table.iter().find(|e| e.1 == value) else {
            let codes: Vec<String> = table.iter().map(|e| format!("{} ({})", e.1, e.0)).collect();
            return Err(StrataError::invalid(
                setting,
                format!("has no value {value}: its values are {}", codes.join(", ")),
            ));
        };
        name = static_c_str(n);
        Ok(())
    });
    name
}

/// `s` as a NUL-terminated string that lives as long as the process (one copy per name).
fn static_c_str(s: &'static str) -> *const c_char {
    static NAMES: OnceLock<Mutex<HashMap<&'static str, &'static CStr>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    names
        .entry(s)
        .or_insert_with(|| {
            let c = CString::new(s.replace('\0', " ")).unwrap_or_default();
            Box::leak(c.into_boxed_c_str())
        })
        .as_ptr()
}

/// z = P r: the solver's preconditioner applied once, as its own iteration applies it (mg-cg's
/// symmetric V-cycle, mg's cycle from zero, cg's line relaxation, gcr's and bicgstab's
/// configured preconditioner): for an outer Krylov method of another library (PETSc's
/// `-pc_type strata`, petsc/strata_petsc.h). A non-finite value in `r` is refused, naming its
/// cell.
///
/// # Safety
/// `solver` must be a live handle; `r` and `z` must hold the solver's size of values (`z`
/// writable).
#[no_mangle]
pub unsafe extern "C" fn strata_solver_precondition(
    solver: *mut StrataSolver,
    r: *const f64,
    z: *mut f64,
) -> StrataStatus {
    guard(|| {
        // SAFETY: as the caller promises (this function's contract).
        let (s, r, z) = unsafe { host_pair(solver, (r, "r"), (z, "z")) }?;
        s.inner.rebuild_pending()?;
        s.inner.precondition(r, z)
    })
}

/// The solver's operator (with its coefficient fields and ω) assembled in compressed sparse
/// rows, 0-based, rows and columns numbered as the solver's arrays (z fastest): for another
/// library's matrix (PETSc's `MatCreateSeqAIJ`, SciPy's `csr_matrix`). Call it with `row_ptr`,
/// `cols` and `values` null to get `*size` (rows) and `*nnz`; then with arrays of `*size + 1`,
/// `*nnz` and `*nnz` values. One process only (refused on ranks: assemble each rank's rows from
/// its block instead).
///
/// # Safety
/// `solver` must be a live handle; `size` and `nnz` writable; the arrays null or as long as
/// said above.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_matrix(
    solver: *mut StrataSolver,
    size: *mut usize,
    nnz: *mut usize,
    row_ptr: *mut i64,
    cols: *mut i64,
    values: *mut f64,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        if s.inner.on_ranks() {
            return Err(StrataError::invalid(
                "solver",
                "runs on ranks: the matrix is assembled by a solver of one process",
            ));
        }
        if size.is_null() || nnz.is_null() {
            return Err(StrataError::invalid("size", "and nnz must not be null"));
        }
        let m = strata_core::matrix::assemble(s.inner.problem())?;
        // SAFETY: non-null (checked), writable as the caller promises.
        unsafe {
            *size = m.size;
            *nnz = m.values.len();
        }
        if row_ptr.is_null() && cols.is_null() && values.is_null() {
            return Ok(());
        }
        if row_ptr.is_null() || cols.is_null() || values.is_null() {
            return Err(StrataError::invalid(
                "row_ptr",
                "cols and values must be all null (to ask the sizes) or all given",
            ));
        }
        // SAFETY: non-null (checked), of the lengths just reported, as the caller promises.
        let (rp, cs, vs) = unsafe {
            (
                std::slice::from_raw_parts_mut(row_ptr, m.size + 1),
                std::slice::from_raw_parts_mut(cols, m.values.len()),
                std::slice::from_raw_parts_mut(values, m.values.len()),
            )
        };
        rp.fill(0);
        for &r in &m.rows {
            rp[r + 1] += 1;
        }
        for i in 0..m.size {
            rp[i + 1] += rp[i];
        }
        for (k, (&c, &v)) in m.cols.iter().zip(&m.values).enumerate() {
            cs[k] = c as i64;
            vs[k] = v;
        }
        Ok(())
    })
}

/// The names of the seven coefficient arrays, in the order of the set_coefficients calls.
const COEFFICIENT_NAMES: [&str; 7] = Coefficients::FIELD_NAMES;

/// Coefficient fields from the seven arrays of the set_coefficients calls (in
/// [`COEFFICIENT_NAMES`] order; null: the model problem's value, 1 or δ for β, 0 for a ξ
/// component), each non-null one read by `read(pointer, name)`: of the whole `n × n × nz`
/// problem, or with `block` that rank block's own ([`Coefficients::for_block`]). `None` when all
/// are null (the model problem).
fn coefficients_from<R: AsRef<[f64]>>(
    p: &ProblemParams,
    block: Option<Block>,
    pointers: [*const f64; 7],
    mut read: impl FnMut(*const f64, &str) -> Result<R, StrataError>,
) -> Result<Option<Coefficients>, StrataError> {
    if pointers.iter().all(|x| x.is_null()) {
        return Ok(None);
    }
    let mut read_in: [Option<R>; 7] = [None, None, None, None, None, None, None];
    for ((g, ptr), name) in read_in.iter_mut().zip(pointers).zip(COEFFICIENT_NAMES) {
        if !ptr.is_null() {
            *g = Some(read(ptr, name)?);
        }
    }
    let given = read_in.each_ref().map(|g| g.as_ref().map(AsRef::as_ref));
    // Copied (and the fields not given filled) by the host's threads.
    match block {
        Some(b) => Coefficients::for_block(b, p.nz, p.delta, given).map(Some),
        None => Coefficients::from_given(p.panels(), p.n, p.nz, p.delta, given).map(Some),
    }
}

/// Replaces the coefficient fields of the general operator (`kx`, `ky`, `kz`, `beta`; each null
/// for the model problem's value: 1, or δ for beta) and the advection vector (`xi_x`, `xi_y`,
/// `xi_z`: all null for none, a null component is 0). All null: back to the model problem.
/// Each array is the solver's size of values ([`strata_solver_size`]), k fastest: on one
/// process the whole problem's field, `n · n · nz` values (six panels of them on the sphere,
/// `[panel][j][i][k]`); on a rank of a distributed panel or box solve its block's own
/// ([`strata_solver_block`]; the ranks exchange the cells their faces need, and no rank holds
/// the whole field); on a rank of a distributed sphere the whole sphere's fields, on every rank
/// alike. Collective on a distributed solver: every rank calls it, giving fields or none alike
/// (a rank whose fields are refused makes every rank's call fail). A solver on one GPU
/// (one process, a panel or box) uploads them and makes the levels on the device (the same
/// operator as on the host, bit for bit, in a small part of the time) where the device has room
/// for the copy; the solver keeps the host values either way (`strata_solver_set_omega` rebuilds
/// from them).
///
/// # Safety
/// `solver` must be a live handle; each non-null array must hold the whole problem's values.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_solver_set_coefficients(
    solver: *mut StrataSolver,
    kx: *const f64,
    ky: *const f64,
    kz: *const f64,
    beta: *const f64,
    xi_x: *const f64,
    xi_y: *const f64,
    xi_z: *const f64,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        let p = s.problem().clone();
        let block = s.inner.block_fields();
        let len = match block {
            Some(_) => s.len(),
            None => p.unknowns() as usize,
        };
        let coefficients = coefficients_from(
            &p,
            block,
            [kx, ky, kz, beta, xi_x, xi_y, xi_z],
            |ptr, name| {
                // SAFETY: a non-null pointer to `len` values, promised by the caller, read
                // (copied) before this call returns.
                unsafe { slice(ptr, len, name) }
            },
        )?;
        s.inner.set_coefficients(coefficients)
    })
}

/// Sets ω (a new time step), keeping everything else.
///
/// # Safety
/// `solver` must be a live handle or null.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_set_omega(
    solver: *mut StrataSolver,
    omega: f64,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        s.inner.update_omega(omega)
    })
}

/// For a singular problem (delta = 0, or beta = 0 everywhere, with no Dirichlet side: the
/// whole sphere, or a box or panel of zero-flux and periodic sides, where the constants are the
/// null space): `project` 1 makes the next solves remove the right-hand side's component along the constants
/// (Σ f / N from every value) before solving; 0 (the default) refuses a right-hand side whose
/// component is above rtol of its norm with `STRATA_STATUS_INVALID_ARGUMENT`, the last error
/// giving its size. Either way the answer has zero volume-weighted mean (with advection it is
/// the solution the iteration reached: docs/MODEL.md §19). A setter, not a field
/// of `StrataOptions`, so that the struct's layout stays that of 0.2.0. No effect on a regular
/// problem.
///
/// # Safety
/// `solver` must be a live handle (or null, refused).
#[no_mangle]
pub unsafe extern "C" fn strata_solver_set_project_rhs(
    solver: *mut StrataSolver,
    project: i32,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        s.inner.set_project_rhs(project != 0);
        Ok(())
    })
}

/// Memory orders of device arrays (strata_solver_solve_device): which index is fastest.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrataOrder {
    /// `v[(j * nx + i) * nz + k]`: a column's levels adjacent (C `v[y][x][z]`, Fortran
    /// `v(k, i, j)`); the order of the host-array calls.
    KFastest = 0,
    /// `v[(k * ny + j) * nx + i]`: rows of x adjacent (C `v[z][y][x]`, Fortran `v(i, j, k)`).
    XFastest = 1,
}

/// The device array at `ptr` of the solver's block in `order` (an error for other values).
///
/// # Safety
/// As strata_cuda::DeviceArray::new: the caller promises a device array of the block's size.
unsafe fn device_array(
    ptr: *const f64,
    order: i32,
    block: strata_core::grid::Block,
    nz: usize,
    name: &str,
) -> Result<strata_cuda::DeviceArray, StrataError> {
    use strata_cuda::{DeviceArray, Order};
    let order = match order {
        0 => Order::KFastest,
        1 => Order::XFastest,
        o => {
            return Err(StrataError::invalid(
                "order",
                format!("must be 0 (k fastest) or 1 (x fastest) (got {o})"),
            ))
        }
    };
    if ptr.is_null() {
        return Err(StrataError::invalid(name, "is null"));
    }
    // SAFETY: promised by the caller; the backend checks the address range before use.
    Ok(unsafe { DeviceArray::with_order(ptr as u64, order, block.nx, block.ny, nz) })
}

/// The two device arrays `a` and `b` of the solver's block in `order`.
///
/// # Safety
/// As device_array, for both.
unsafe fn device_pair(
    s: &StrataSolver,
    (a, a_name): (*const f64, &str),
    (b, b_name): (*const f64, &str),
    order: i32,
) -> Result<(strata_cuda::DeviceArray, strata_cuda::DeviceArray), StrataError> {
    let (block, nz) = (s.inner.block(), s.problem().nz);
    // SAFETY: promised by the caller (ranges checked on use).
    unsafe {
        Ok((
            device_array(a, order, block, nz, a_name)?,
            device_array(b, order, block, nz, b_name)?,
        ))
    }
}

/// The device array at `ptr` with `strides` (3 values: of i, j, k, in values).
///
/// # Safety
/// `strides` must be null or point to 3 values; `ptr` as for device_array.
unsafe fn strided_array(
    ptr: *const f64,
    strides: *const i64,
    name: &str,
) -> Result<strata_cuda::DeviceArray, StrataError> {
    if ptr.is_null() {
        return Err(StrataError::invalid(name, "is null"));
    }
    if strides.is_null() {
        return Err(StrataError::invalid("strides", "is null"));
    }
    // SAFETY: non-null, 3 values promised by the caller.
    let st = unsafe { std::slice::from_raw_parts(strides, 3) };
    // SAFETY: promised by the caller; the backend checks the address range before use.
    Ok(unsafe { strata_cuda::DeviceArray::new(ptr as u64, [st[0], st[1], st[2]]) })
}

/// Writes the record of a solve to `info` unless it is null.
///
/// # Safety
/// `info` must be null or writable.
unsafe fn write_info(info: *mut StrataInfo, record: &SolveInfo) {
    // SAFETY: null or writable, as promised.
    if let Some(out) = unsafe { info.as_mut() } {
        *out = StrataInfo {
            converged: i32::from(record.reason.converged()),
            iterations: record.iterations as i32,
            initial_residual: record.r0,
            relative_residual: record.relative_residual(),
            seconds: record.seconds,
        };
    }
}

/// Writes a solve's record to `info` (null: nowhere), also for a solve that did not converge
/// where that is an error (`error_if_not_converged`), whose error is then returned.
///
/// # Safety
/// `info` must be null or writable.
unsafe fn report(
    info: *mut StrataInfo,
    record: Result<SolveInfo, StrataError>,
) -> Result<(), StrataError> {
    match record {
        Ok(record) => {
            // SAFETY: null or writable, as promised.
            unsafe { write_info(info, &record) };
            Ok(())
        }
        Err(e) => {
            if let StrataError::NotConverged {
                iterations,
                r0,
                relative_residual,
                seconds,
                ..
            } = &e
            {
                // SAFETY: null or writable, as promised.
                if let Some(out) = unsafe { info.as_mut() } {
                    *out = StrataInfo {
                        converged: 0,
                        iterations: *iterations as i32,
                        initial_residual: *r0,
                        relative_residual: *relative_residual,
                        seconds: *seconds,
                    };
                }
            }
            Err(e)
        }
    }
}

/// Solves with the device arrays `r` (the right-hand side) and `x` (the solution, and the
/// initial guess when `initial_guess` != 0) and writes the record to `info`.
///
/// # Safety
/// `info` must be null or writable.
unsafe fn solve_device_arrays(
    s: &mut StrataSolver,
    r: &strata_cuda::DeviceArray,
    x: &strata_cuda::DeviceArray,
    initial_guess: i32,
    info: *mut StrataInfo,
) -> Result<(), StrataError> {
    let x0 = (initial_guess != 0).then_some(x);
    s.inner.rebuild_pending()?;
    let record = s.device()?.solve_device(r, x0, x);
    // SAFETY: null or writable, as promised.
    unsafe { report(info, record) }
}

/// Solves A u = rhs with `rhs` and `u` in device memory of the solver's GPU (a solver on the
/// CUDA backend), in `order` (a StrataOrder value; on the sphere the six panels one after the
/// other, each in `order`): no host round trip, no allocation; the call
/// returns when `u` holds the solution. As strata_solver_solve otherwise. The arrays are read
/// and written on the solver's stream, the legacy default stream (ordered with the caller's
/// work on blocking streams; synchronise a non-blocking stream first).
///
/// # Safety
/// `solver` must be a live handle; `rhs` and `u` device arrays of the solver's size (`u`
/// writable) in the given order; `info` null or writable.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_solve_device(
    solver: *mut StrataSolver,
    rhs: *const f64,
    u: *mut f64,
    order: i32,
    initial_guess: i32,
    info: *mut StrataInfo,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        // SAFETY: device arrays of the block promised by the caller (ranges checked on use).
        let (r, x) = unsafe { device_pair(s, (rhs, "rhs"), (u, "u"), order)? };
        // SAFETY: `info` is null or writable, as the caller promises.
        unsafe { solve_device_arrays(s, &r, &x, initial_guess, info) }
    })
}

/// As strata_solver_solve_device with any order and padding: `strides` holds the distances (in
/// values, positive) between neighbours in i, j and k. The k-fastest and x-fastest orders run at
/// full bandwidth; any other is gathered element by element on the device.
///
/// # Safety
/// As strata_solver_solve_device; `strides` must point to 3 values.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_solve_device_strided(
    solver: *mut StrataSolver,
    rhs: *const f64,
    u: *mut f64,
    strides: *const i64,
    initial_guess: i32,
    info: *mut StrataInfo,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        // SAFETY: as promised by the caller (ranges checked on use).
        let (r, x) = unsafe {
            (
                strided_array(rhs, strides, "rhs")?,
                strided_array(u, strides, "u")?,
            )
        };
        // SAFETY: `info` is null or writable, as the caller promises.
        unsafe { solve_device_arrays(s, &r, &x, initial_guess, info) }
    })
}

/// y = A x with `x` and `y` in device memory, in `order` (as strata_solver_solve_device).
///
/// # Safety
/// `solver` must be a live handle; `x` and `y` device arrays of the solver's size (`y` writable).
#[no_mangle]
pub unsafe extern "C" fn strata_solver_apply_device(
    solver: *mut StrataSolver,
    x: *const f64,
    y: *mut f64,
    order: i32,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        // SAFETY: device arrays of the block promised by the caller (ranges checked on use).
        let (xa, ya) = unsafe { device_pair(s, (x, "x"), (y, "y"), order)? };
        s.inner.rebuild_pending()?;
        s.device()?.apply_device(&xa, &ya)
    })
}

/// As strata_solver_set_coefficients with the fields in device memory of the solver's GPU, in
/// `order` (a StrataOrder value; each null for the model problem's value, all null: back to the
/// model problem). On one panel or box the fields stay on the GPU: checked, averaged onto the
/// coarse levels and made into every level's operator there, with the same operator as host
/// arrays give and nothing copied to the host (fast enough for every time step). Omega changed
/// after such a call needs the fields again before the next solve (strata keeps no copy of
/// them). On the sphere, and on a rank of a distributed solve (whose arrays are its block's
/// own, as strata_solver_set_coefficients says; collective), the fields are copied to the host
/// once and prepared there (set-up speed). The arrays are read during the call only.
///
/// # Safety
/// `solver` must be a live handle on the CUDA backend; each non-null pointer a device array of
/// the solver's size in `order`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_solver_set_coefficients_device(
    solver: *mut StrataSolver,
    kx: *const f64,
    ky: *const f64,
    kz: *const f64,
    beta: *const f64,
    xi_x: *const f64,
    xi_y: *const f64,
    xi_z: *const f64,
    order: i32,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle or null (checked).
        let s = unsafe { solver.as_mut() }.ok_or_else(|| invalid("solver is null"))?;
        // Device arrays need a solver on the GPU.
        s.device()?;
        let p = s.problem().clone();
        let block = s.inner.block();
        let ranks = s.inner.block_fields();
        if ranks.is_none() && s.len() as u64 != p.unknowns() {
            return Err(StrataError::invalid(
                "solver",
                "is one rank of a distributed sphere: its coefficient fields are not taken from \
                 device arrays yet (give host arrays of the whole sphere)",
            ));
        }
        let pointers = [kx, ky, kz, beta, xi_x, xi_y, xi_z];
        // Made on the device: one process, a panel or box.
        let on_device =
            pointers.iter().any(|x| !x.is_null()) && ranks.is_none() && !p.geometry.closed();
        if on_device {
            let mut arrays = [None; 7];
            for ((slot, ptr), name) in arrays.iter_mut().zip(pointers).zip(COEFFICIENT_NAMES) {
                if !ptr.is_null() {
                    // SAFETY: a device array of the block promised by the caller (its range is
                    // checked before use).
                    *slot = Some(unsafe { device_array(ptr, order, block, p.nz, name) }?);
                }
            }
            let fields = arrays.each_ref().map(Option::as_ref);
            return s.device()?.set_coefficients_device(fields);
        }
        let coefficients = coefficients_from(
            &p,
            ranks,
            [kx, ky, kz, beta, xi_x, xi_y, xi_z],
            |ptr, name| {
                // SAFETY: a device array of the block promised by the caller (its range is checked
                // before use).
                let a = unsafe { device_array(ptr, order, block, p.nz, name) }?;
                s.device()?.read_device(&a)
            },
        )?;
        s.inner.update_coefficients(coefficients)
    })
}

/// Creates a solver for one rank of a distributed solve over the caller's MPI communicator,
/// given by its Fortran handle (`MPI_Comm_c2f(comm)` from C; the integer from Fortran): the
/// horizontal grid is split over the ranks (the most nearly square rank grid), every array this
/// solver takes is the rank's block ([`strata_solver_block`]), and every call is collective.
/// The backend as `options.backend` says (0: the GPU where one is usable, 1: the CPU, 2: CUDA),
/// on CUDA device `options.device` (pick it per rank, e.g. the node-local rank modulo the GPUs
/// of the node); halos of GPU ranks go by NCCL between device buffers where libstrata has it and
/// finds libnccl.so (`options.halo`, `STRATA_HALO_AUTO` by default; one GPU per rank; NCCL is
/// set up over this communicator, which takes about a second), else through host memory by MPI. MPI must be initialised by the caller, and the solver destroyed before
/// MPI_Finalize. Needs libstrata built with the `mpi` feature (`nccl` for NCCL).
///
/// # Safety
/// As [`strata_solver_create`]; `fortran_comm` must be a valid communicator handle.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_create_mpi(
    problem: *const StrataProblem,
    options: *const StrataOptions,
    fortran_comm: i32,
    out: *mut *mut StrataSolver,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a writable handle or null (checked).
        let out = unsafe { out.as_mut() }.ok_or_else(|| invalid("out is null"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller promises structs of their stated sizes, or null (checked).
        let (p, o) = unsafe { (sized::read(problem)?, sized::read(options)?) };
        let (p, o) = (&p, &o);
        #[cfg(feature = "mpi")]
        {
            use strata_mpi::mpi::raw::FromRaw;
            use strata_mpi::mpi::topology::SimpleCommunicator;
            use strata_mpi::mpi::traits::Communicator;
            // SAFETY: the caller promises `problem->orography` null or of n² values (6 n² on the
            // sphere; documented).
            let params = unsafe { problem_params(p)? };
            let cfg = solver_config(o)?;
            let place = place(o)?;
            // SAFETY: the caller promises a valid Fortran communicator handle; MPI converts it.
            let raw = unsafe { strata_mpi::mpi::ffi::RSMPI_Comm_f2c(fortran_comm) };
            // SAFETY: a live communicator of the caller's.
            let theirs = unsafe { SimpleCommunicator::from_raw(raw) };
            // strata's messages travel on a duplicate, apart from the model's own (freed with the
            // solver); the caller's communicator stays the caller's: the wrapper must not free it.
            let world = theirs.duplicate();
            std::mem::forget(theirs);
            let inner = strata_session::open(&params, &cfg, place.with_comm(world))?;
            *out = Box::into_raw(Box::new(StrataSolver { inner, options: *o }));
            Ok(())
        }
        #[cfg(not(feature = "mpi"))]
        {
            let _ = (p, o, fortran_comm);
            Err(StrataError::Backend {
                backend: "mpi".into(),
                msg: "this libstrata was built without MPI (cargo build -p strata-capi --features mpi)"
                    .into(),
            })
        }
    })
}

/// One tile of the sphere held by a solver: a block of one panel (docs/MODEL.md §16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct StrataTile {
    /// The panel (0 … 5); -1 for the block of a panel or box problem.
    pub panel: i32,
    /// First column of the panel in the tile.
    pub i0: i32,
    /// First row of the panel in the tile.
    pub j0: i32,
    /// Columns.
    pub nx: i32,
    /// Rows.
    pub ny: i32,
}

/// The tiles of this solver, in the order of its arrays (each array is the tiles' blocks one
/// after the other, each `v[(j * nx + i) * nz + k]` in tile-local indices): on one process the
/// six whole panels of the sphere, on ranks this rank's panels or blocks of panels. A solver
/// of a panel or box problem has one tile, its block, with panel -1. Writes up to `capacity`
/// tiles to `tiles` (may be null when `capacity` is 0) and their number to `count`.
///
/// # Safety
/// `solver` must be a live handle; `count` writable; `tiles` writable for `capacity` values.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_tiles(
    solver: *const StrataSolver,
    tiles: *mut StrataTile,
    capacity: i32,
    count: *mut i32,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle and a writable count, or null (checked).
        let (s, count) = unsafe { (solver.as_ref(), count.as_mut()) };
        let s = s.ok_or_else(|| invalid("solver is null"))?;
        let count = count.ok_or_else(|| invalid("count is null"))?;
        let mine: Vec<StrataTile> = s
            .inner
            .tiles()
            .iter()
            .map(|b| StrataTile {
                panel: b.panel.map_or(-1, |p| p as i32),
                i0: b.i0 as i32,
                j0: b.j0 as i32,
                nx: b.nx as i32,
                ny: b.ny as i32,
            })
            .collect();
        *count = mine.len() as i32;
        let capacity = usize::try_from(capacity)
            .map_err(|_| StrataError::invalid("capacity", "must not be negative"))?;
        if capacity > 0 {
            if tiles.is_null() {
                return Err(invalid("tiles is null"));
            }
            // SAFETY: `capacity` writable values promised by the caller.
            let out = unsafe { std::slice::from_raw_parts_mut(tiles, capacity) };
            for (o, t) in out.iter_mut().zip(&mine) {
                *o = *t;
            }
        }
        Ok(())
    })
}

/// This rank's block of the horizontal grid: columns `i0 .. i0 + nx`, rows `j0 .. j0 + ny`
/// (0-based); every array of the solver has `nx · ny · nz` values, `v[(j * nx + i) * nz + k]`
/// in block-local indices. On one process the block is the whole grid. On the sphere the first
/// of the solver's tiles ([`strata_solver_tiles`] gives them all).
///
/// # Safety
/// `solver` must be a live handle; the four outputs must be writable.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_block(
    solver: *const StrataSolver,
    i0: *mut i32,
    j0: *mut i32,
    nx: *mut i32,
    ny: *mut i32,
) -> StrataStatus {
    guard(|| {
        // SAFETY: the caller promises a live handle and writable outputs, or null (checked).
        let (s, i0, j0, nx, ny) = unsafe {
            (
                solver.as_ref(),
                i0.as_mut(),
                j0.as_mut(),
                nx.as_mut(),
                ny.as_mut(),
            )
        };
        let s = s.ok_or_else(|| invalid("solver is null"))?;
        let b = s.inner.block();
        for (out, v, name) in [
            (i0, b.i0, "i0"),
            (j0, b.j0, "j0"),
            (nx, b.nx, "nx"),
            (ny, b.ny, "ny"),
        ] {
            *out.ok_or_else(|| StrataError::invalid(name, "is null"))? = v as i32;
        }
        Ok(())
    })
}

/// Releases a solver (null is ignored).
///
/// # Safety
/// `solver` must be null or a handle from strata_solver_create not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn strata_solver_destroy(solver: *mut StrataSolver) {
    if solver.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a live handle from Box::into_raw in strata_solver_create.
        drop(unsafe { Box::from_raw(solver) });
    }));
}

#[cfg(test)]
mod tests;
