//! The high-level entry point: build, solve, read back, on any backend.

use crate::backend::tiled::{Handle, Tiled};
use crate::backend::Backend;
use crate::comm::{Comm, SerialComm, SphereComm};
use crate::error::{invalid, Result, StrataError};
use crate::grid::Block;
use crate::precision::Storage;
use crate::problem::ProblemParams;
use crate::solver::{NullSpace, SolveInfo, Solver, SolverConfig, SolverKind};
use crate::stencil::build_sphere_levels;
use std::time::Instant;

/// A solution and how it was obtained.
#[derive(Debug, Clone)]
pub struct Solution {
    /// The solution, z-contiguous: `u[(j * n + i) * nz + k]`.
    pub u: Vec<f64>,
    /// The solve's record.
    pub info: SolveInfo,
    /// Seconds spent building stencils and allocating.
    pub setup_seconds: f64,
    /// The set-up's stages: where `setup_seconds` went.
    pub setup_stages: SetupStages,
    /// Seconds spent moving the right-hand side in and the solution out (the paper's
    /// t_MemCpy+transpose on a GPU).
    pub transfer_seconds: f64,
    /// The first coarse level the multigrid cycle gathered whole onto every rank
    /// (docs/MODEL.md §24); `None` where every level stayed on the ranks' blocks.
    pub gathered_from: Option<usize>,
}

/// The stages of a solve's set-up, in seconds; they add up to [`Solution::setup_seconds`].
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SetupStages {
    /// The stencils of every level, on the host.
    pub levels: f64,
    /// The solver on the backend: kernels loaded (compiled, or from the cache), coefficients
    /// uploaded, the hierarchy's fields allocated.
    pub solver: f64,
    /// The halo exchanges' set-up and the caller's two fine fields (right-hand side, solution).
    pub fields: f64,
}

/// Bytes the fields and stencils of a solve of `p` need, given the bytes of one field of an
/// `n × n` level stored in a precision (fp64, or fp32 for the multigrid of a mixed-precision
/// solve).
pub fn field_memory(
    p: &ProblemParams,
    cfg: &SolverConfig,
    field_bytes: impl Fn(usize, Storage) -> u64,
) -> u64 {
    block_field_memory(p, cfg, (p.n, p.n), |nx, _, s| field_bytes(nx, s))
}

/// [`field_memory`] of one rank's block of `nx × ny` columns (`shape`), given the bytes of one
/// field of an `nx × ny` level.
pub fn block_field_memory(
    p: &ProblemParams,
    cfg: &SolverConfig,
    shape: (usize, usize),
    field_bytes: impl Fn(usize, usize, Storage) -> u64,
) -> u64 {
    let (nx, ny) = shape;
    let columns = |(x, y): (usize, usize)| (x * y * 48) as u64;
    // The sphere's nine-point operator: four diagonal couplings per column on every level
    // (the hierarchy relaxes it, docs/MODEL.md §16.1).
    let nine = p.nine_point_sphere();
    let diagonals = |(x, y): (usize, usize)| if nine { (x * y * 32) as u64 } else { 0 };
    let fine = field_bytes(nx, ny, Storage::F64);
    let low = cfg.precision.preconditioner_storage();
    let mut hierarchy = 0;
    let mut n = shape;
    for lev in 0..cfg.num_levels() {
        // u, f and the work field (residual and smoother buffer) of every level; the finest
        // level's u and f are the caller's, with two fields of the coarsest size to swap with.
        let own = if lev == 0 { 1 } else { 3 };
        hierarchy += own * field_bytes(n.0, n.1, low) + columns(n) + diagonals(n);
        n = (n.0 / 2, n.1 / 2);
    }
    let last = cfg.num_levels() - 1;
    hierarchy += 2 * field_bytes(nx >> last, ny >> last, low);
    // A V-cycle preconditioner: its hierarchy and a fine field of zeros; in mixed precision also
    // fp32 copies of r and z and the fp64 fine level's columns. Line relaxation: the fine
    // columns.
    // In mixed precision the outer fp64 fine level is its own (its columns, and its diagonal
    // couplings on the nine-point sphere).
    let v_cycle = match low {
        Storage::F64 => hierarchy + fine,
        Storage::F32 => {
            hierarchy + 3 * field_bytes(nx, ny, low) + columns(shape) + diagonals(shape)
        }
    };
    let preconditioner = if cfg.uses_multigrid() {
        v_cycle
    } else {
        columns(shape)
    };
    let cells = block_cell_memory(p, cfg, shape, &field_bytes);
    cells
        + match cfg.kind {
            SolverKind::Cg => 6 * fine + columns(shape),
            // f and u; defect correction (mixed precision) holds no fp64 r or z (its residual
            // goes straight into the cycle's fp32 r, the cycle's fp32 z straight into u).
            SolverKind::Mg => match low {
                Storage::F64 => 2 * fine + hierarchy,
                Storage::F32 => 2 * fine + v_cycle,
            },
            // f, u, r, z, p, q.
            SolverKind::MgCg => 6 * fine + v_cycle,
            // f, u, r and 2k directions.
            SolverKind::Gcr => (3 + 2 * cfg.restart as u64) * fine + preconditioner,
            // f, u and six more fields (r, r̂, p, v, y, t).
            SolverKind::BiCgStab => 8 * fine + preconditioner,
        }
}

/// Bytes of the per-cell coefficients of a solve of `p` on every level, given the bytes of one
/// field of an `n × n` level in a precision: four values per cell (the host backends' fx, fy,
/// fz, β; the CUDA backend's diagonal and east, north, up entries, stored as the level's fields
/// are), seven with advection; 0 without coefficient fields. A mixed-precision solve has the
/// fine level twice (fp64 for the outer iteration, fp32 for the V-cycle).
pub fn cell_memory(
    p: &ProblemParams,
    cfg: &SolverConfig,
    field_bytes: impl Fn(usize, Storage) -> u64,
) -> u64 {
    block_cell_memory(p, cfg, (p.n, p.n), |nx, _, s| field_bytes(nx, s))
}

/// [`cell_memory`] of one rank's block of `nx × ny` columns (`shape`), given the bytes of one
/// field of an `nx × ny` level.
pub fn block_cell_memory(
    p: &ProblemParams,
    cfg: &SolverConfig,
    shape: (usize, usize),
    field_bytes: impl Fn(usize, usize, Storage) -> u64,
) -> u64 {
    let Some(c) = &p.coefficients else {
        return 0;
    };
    let values = if c.is_symmetric() { 4 } else { 7 };
    let low = cfg.precision.preconditioner_storage();
    let (levels, storage) = if cfg.uses_multigrid() {
        (cfg.num_levels(), low)
    } else {
        (1, Storage::F64)
    };
    let mut n = shape;
    let mut bytes = 0;
    for _ in 0..levels {
        bytes += values * field_bytes(n.0, n.1, storage);
        n = (n.0 / 2, n.1 / 2);
    }
    // The outer fine level's entries: fp64 beside an fp32 hierarchy, or the nine-point sphere's
    // beside its 7-point hierarchy; the nine-point operator's four diagonal entries per cell.
    let nine = p.nine_point_sphere();
    if storage != Storage::F64 || (nine && cfg.uses_multigrid()) {
        bytes += values * field_bytes(shape.0, shape.1, Storage::F64);
    }
    if nine {
        bytes += 4 * field_bytes(shape.0, shape.1, Storage::F64);
    }
    bytes
}

/// Memory the operating system says is available, if it says.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Refuses a problem that would not fit: the fields in the backend's memory (the device's, or the
/// host's), the right-hand side and solution arrays in host memory.
/// On the sphere, six panels' worth.
pub fn check_memory<B: Backend>(backend: &B, p: &ProblemParams, cfg: &SolverConfig) -> Result<()> {
    check_memory_of(backend, p, cfg, (p.n, p.n), p.panels() as u64)
}

/// [`check_memory`] for one rank's block of a panel or box (its own shape, `nx × ny` columns).
pub fn check_block_memory<B: Backend>(
    backend: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    block: &Block,
) -> Result<()> {
    check_memory_of(backend, p, cfg, (block.nx, block.ny), 1)
}

/// [`check_memory`] for `copies` blocks of `nx × ny` columns (`shape`; the tiles of a sphere
/// rank, each `p.n × p.n`).
fn check_memory_of<B: Backend>(
    backend: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    shape: (usize, usize),
    copies: u64,
) -> Result<()> {
    let (nx, ny) = shape;
    let what = match () {
        _ if p.geometry.closed() => format!(
            "{} on {copies} sphere tiles of {nx}x{ny}x{}",
            cfg.kind.name(),
            p.nz
        ),
        _ if shape != (p.n, p.n) => format!(
            "{} on a block of {nx}x{ny}x{} (of {}x{})",
            cfg.kind.name(),
            p.nz,
            p.n,
            p.n
        ),
        _ => format!("{} on {nx}x{ny}x{}", cfg.kind.name(), p.nz),
    };
    let fields = copies
        * block_field_memory(p, cfg, shape, |x, y, s| {
            backend.field_bytes_in(x, y, p.nz, s)
        });
    let host_arrays = 2 * copies * (nx * ny * p.nz) as u64 * 8;
    // A device backend builds the per-cell coefficients on the host first: the input fields,
    // the face fields of every level and the fine level's entries (seven values per cell) while
    // they are copied.
    let host_cells = match &p.coefficients {
        Some(c) => {
            let input = if c.is_symmetric() { 4 } else { 7 };
            (input + 7) * copies * (nx * ny * p.nz) as u64 * 8
                + copies * block_cell_memory(p, cfg, shape, |x, y, _| (x * y * p.nz * 8) as u64)
        }
        None => 0,
    };
    let (device, host) = match backend.device_memory()? {
        Some(free) => (Some((fields, free)), host_arrays + host_cells),
        None => (None, host_arrays + fields),
    };
    if let Some((needed, available)) = device {
        if needed > available {
            return Err(StrataError::OutOfMemory {
                what: format!("{what} (device memory of {})", backend.name()),
                needed,
                available,
            });
        }
    }
    match available_memory() {
        Some(available) if host > available => Err(StrataError::OutOfMemory {
            what,
            needed: host,
            available,
        }),
        _ => Ok(()),
    }
}

/// Refuses a solver that cannot take the operator: cg and mg-cg need a symmetric one.
pub(crate) fn check_operator(p: &ProblemParams, cfg: &SolverConfig) -> Result<()> {
    check_symmetry(
        p.coefficients.as_ref().is_none_or(|c| c.is_symmetric()),
        cfg,
    )
}

/// Refuses a solver that needs a symmetric operator (cg, mg-cg) for one that is not.
pub(crate) fn check_symmetry(symmetric: bool, cfg: &SolverConfig) -> Result<()> {
    let coarse_cg =
        cfg.uses_multigrid() && cfg.multigrid.coarse_solve == crate::solver::CoarseSolve::Cg;
    if !symmetric && coarse_cg {
        return invalid(
            "coarse_solve",
            "cg needs a symmetric operator, but the coefficient fields have an advection vector \
             (xi): use coarse_solve smooth (the default solver takes cg where its grid cannot go \
             deep enough for the problem, docs/MODEL.md §9.4: give the levels explicitly too)",
        );
    }
    if !symmetric && cfg.kind.needs_symmetric() {
        return invalid(
            "solver",
            format!(
                "{} needs a symmetric operator, but the coefficient fields have an advection \
                 vector (xi): use gcr or bicgstab",
                cfg.kind.name()
            ),
        );
    }
    Ok(())
}

/// Solves problem `p` with right-hand side `rhs` (z-contiguous, n·n·nz) from u₀ = 0 on one
/// process with `backend`.
pub fn solve<B: Backend>(
    backend: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    rhs: &[f64],
    monitor: &mut dyn FnMut(usize, f64),
) -> Result<Solution> {
    if p.geometry.closed() {
        let tiles = crate::grid::sphere::tiles(p.n, 1);
        return solve_tiles(
            &Tiled::new(backend),
            &SphereComm,
            p,
            &tiles,
            cfg,
            rhs,
            monitor,
        );
    }
    solve_block(backend, &SerialComm, p, p.whole_block(), cfg, rhs, monitor)
}

/// Solves problem `p` on this rank's `block` of the fine level, with the communicator `comm`
/// joining the ranks: `rhs` and the returned solution are the block's (z-contiguous,
/// `block.nx · block.ny · nz`). With [`SerialComm`] and the whole level this is [`solve`].
pub fn solve_block<B: Backend, C: Comm<B>>(
    backend: &B,
    comm: &C,
    p: &ProblemParams,
    block: Block,
    cfg: &SolverConfig,
    rhs: &[f64],
    monitor: &mut dyn FnMut(usize, f64),
) -> Result<Solution> {
    crate::comm::validate_on_ranks(comm, p)?;
    cfg.validate()?;
    // A singular problem (δ = 0, no Dirichlet side) goes as deep as the block allows and is
    // solved with its null space; so does a regular one whose coarsest level its smoothing
    // cannot solve, where the configuration deepens (and where its levels are the solver's, they
    // fit the block).
    let singular = crate::solver::singular_on_ranks(comm, p)?;
    let cfg = &crate::solver::hierarchy_on_ranks(comm, cfg, p, singular, &[block])?;
    cfg.validate_block(&block)?;
    check_operator(p, cfg)?;
    let local = block.nx * block.ny * p.nz;
    if rhs.len() != local {
        return invalid(
            "rhs",
            format!(
                "has {} values, the block {}x{}x{} needs {local}",
                rhs.len(),
                block.nx,
                block.ny,
                p.nz,
            ),
        );
    }
    check_block_memory(backend, p, cfg, &block)?;
    let t = Instant::now();
    let volumes = singular.then(|| crate::problem::cell_volumes(p, &[block]));
    // Coefficient fields of the block ([`Coefficients::window`]) have their rings filled by
    // `comm` on every level.
    let levels = crate::stencil::build_block_levels(
        p,
        block,
        cfg.num_levels(),
        cfg.multigrid.averaging,
        &mut |c| crate::comm::fill_rings::<B, C>(comm, c),
    )?;
    let null = volumes.map(|v| (v, !p.has_advection()));
    solve_levels(backend, comm, &levels, cfg, rhs, null, t, monitor)
}

/// Solves the sphere problem `p` on this rank's `tiles` of the fine level
/// ([`crate::grid::sphere::rank_tiles`]; all six panels on one process, with [`SphereComm`]):
/// `rhs` and the returned solution are the tiles' host arrays one after the other.
pub fn solve_tiles<H: Handle, C: Comm<Tiled<H>>>(
    backend: &Tiled<H>,
    comm: &C,
    p: &ProblemParams,
    tiles: &[Block],
    cfg: &SolverConfig,
    rhs: &[f64],
    monitor: &mut dyn FnMut(usize, f64),
) -> Result<Solution> {
    check_tiles(backend.inner(), p, cfg, tiles)?;
    let cells: usize = tiles.iter().map(|b| b.nx * b.ny * p.nz).sum();
    if rhs.len() != cells {
        return invalid(
            "rhs",
            format!(
                "has {} values, the {} tiles need {cells}",
                rhs.len(),
                tiles.len()
            ),
        );
    }
    let t = Instant::now();
    let singular = crate::solver::singular_on_ranks(comm, p)?;
    let cfg = &crate::solver::hierarchy_on_ranks(comm, cfg, p, singular, tiles)?;
    let levels = build_sphere_levels(p, tiles, cfg.num_levels(), cfg.multigrid.averaging)?;
    let volumes = singular.then(|| crate::problem::cell_volumes(p, tiles));
    let null = volumes.map(|v| (v, !p.has_advection()));
    solve_levels(backend, comm, &levels, cfg, rhs, null, t, monitor)
}

/// The checks of a sphere solve on `tiles` before anything is built: the parameters, the
/// operator against the solver, and the memory of the tiles on `backend` (the inner one).
pub(crate) fn check_tiles<B: Backend>(
    backend: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    tiles: &[Block],
) -> Result<()> {
    p.validate()?;
    cfg.validate()?;
    check_operator(p, cfg)?;
    if let Some(t) = tiles.first() {
        let tile_p = ProblemParams {
            n: t.nx,
            ..p.clone()
        };
        check_memory_of(
            backend,
            &tile_p,
            cfg,
            (tile_p.n, tile_p.n),
            tiles.len() as u64,
        )?;
    }
    Ok(())
}

/// Set-up from the built `levels` (started at `t`), the solve, and the solution read back.
/// Refuses, before any solve, a right-hand side with a value that is not finite (naming its
/// index) or whose norm (the square root of a sum of squares) overflows.
fn check_rhs(rhs: &[f64]) -> Result<()> {
    use rayon::prelude::*;
    // One pass on all cores (it reads the whole right-hand side: 8 GB at 1e9 unknowns): the sum
    // of squares, in any order, only has to be finite, and a value that is not finite makes it
    // so (its first index is then looked for).
    let squares: f64 = rhs
        .par_chunks(1 << 16)
        .map(|c| c.iter().map(|v| v * v).sum::<f64>())
        .sum();
    if squares.is_finite() {
        return Ok(());
    }
    if let Some(at) = rhs.par_iter().position_first(|v| !v.is_finite()) {
        return invalid(
            "rhs",
            format!("holds {} at index {at}: nothing was solved", rhs[at]),
        );
    }
    let largest = rhs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    invalid(
        "rhs",
        format!(
            "has values up to {largest:e}, whose squares overflow its norm: scale the problem; nothing was solved"
        ),
    )
}

/// The solve of the levels' problem; `volumes`: the fine cells' volumes where the problem is
/// singular ([`crate::solver::NullSpace`]).
#[allow(clippy::too_many_arguments)]
fn solve_levels<B: Backend, C: Comm<B>>(
    backend: &B,
    comm: &C,
    levels: &[crate::stencil::LevelStencil],
    cfg: &SolverConfig,
    rhs: &[f64],
    null: Option<(Vec<f64>, bool)>,
    t: Instant,
    monitor: &mut dyn FnMut(usize, f64),
) -> Result<Solution> {
    check_rhs(rhs)?;
    let local = rhs.len();
    let built = t.elapsed().as_secs_f64();
    let mut solver = Solver::new(backend, cfg, levels)?;
    backend.synchronize()?;
    let prepared = t.elapsed().as_secs_f64();
    solver.prepare_comm(backend, comm)?;
    let fine = solver.fine();
    let mut f = backend.alloc(fine)?;
    let mut u = backend.alloc(fine)?;
    let null = match &null {
        Some((v, symmetric)) => Some(NullSpace::new(backend, comm, fine, v, *symmetric)?),
        None => None,
    };
    backend.synchronize()?;
    let setup_seconds = t.elapsed().as_secs_f64();
    let setup_stages = SetupStages {
        levels: built,
        solver: prepared - built,
        fields: setup_seconds - prepared,
    };
    let t = Instant::now();
    backend.upload(fine, rhs, &mut f)?;
    backend.synchronize()?;
    let mut transfer_seconds = t.elapsed().as_secs_f64();
    // The ranks start the solve together: the time a rank would wait in its first exchange for
    // a slower rank's set-up is not the solver's.
    comm.barrier()?;
    let incompatible = match &null {
        Some(null) => Some(null.prepare(backend, comm, solver.fine(), &mut f, &cfg.stopping)?),
        None => None,
    };
    let mut info = solver.solve(backend, comm, &f, &mut u, &cfg.stopping, monitor)?;
    info.incompatible = incompatible;
    if let Some(null) = &null {
        null.remove_mean(backend, comm, solver.fine(), &mut u)?;
    }
    let t = Instant::now();
    let mut out = vec![0.0; local];
    backend.download(solver.fine(), &u, &mut out)?;
    transfer_seconds += t.elapsed().as_secs_f64();
    Ok(Solution {
        u: out,
        info,
        setup_seconds,
        setup_stages,
        transfer_seconds,
        gathered_from: solver.gathered_from(),
    })
}
