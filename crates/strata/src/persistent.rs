//! A solver a model can call every time step: set up once (stencils, prepared operators, compiled
//! kernels, fields, communicator buffers), then solved as often as needed, with the coefficients
//! or ω updated in place when the model's state changes.

use crate::backend::tiled::{Handle, Tiled};
use crate::backend::Backend;
use crate::comm::SphereComm;
use crate::comm::{fill_rings, Comm, SerialComm};
use crate::error::{invalid, Result};
use crate::grid::sphere;
use crate::grid::Block;
use crate::problem::{Coefficients, ProblemParams};
use crate::solver::{ConvergedReason, SolveInfo, Solver, SolverConfig};
use crate::stencil::{build_block_levels, build_sphere_levels, LevelStencil, ResidentCells};
use std::sync::Arc;

/// A solver set up once for a problem on one backend and communicator. Every call of
/// [`PersistentSolver::solve`] reuses the prepared levels and fields; nothing is allocated after
/// [`PersistentSolver::new`] (on the CPU backend: one host array in, one out, per call).
///
/// ```
/// use strata::backend::cpu::CpuBackend;
/// use strata::problem::{build_rhs, ProblemParams, RhsKind};
/// use strata::grid::Block;
/// use strata::solver::{SolverConfig, SolverKind};
/// use strata::PersistentSolver;
///
/// let p = ProblemParams { n: 32, nz: 16, ..Default::default() };
/// let backend = CpuBackend::new(None)?;
/// let cfg = SolverConfig::new(SolverKind::MgCg).with_levels(4);
/// let mut solver = PersistentSolver::new(&backend, &p, &cfg)?;
/// let mut u = vec![0.0; 32 * 32 * 16];
/// for step in 0..3 {
///     let rhs = build_rhs(&p, RhsKind::Random, step, &Block::whole(32));
///     // Warm start from the last step's solution.
///     let info = solver.solve(&backend, &rhs, &mut u, true)?;
///     assert!(info.reason.converged());
/// }
/// # Ok::<(), strata::StrataError>(())
/// ```
pub struct PersistentSolver<B: Backend, C: Comm<B> = SerialComm> {
    p: ProblemParams,
    /// This rank's fine block, or on the sphere its tiles.
    tiles: Vec<Block>,
    /// The configuration resolved for the problem ([`crate::solver::hierarchy_on_ranks`]).
    cfg: SolverConfig,
    /// The configuration as given at set-up, before the problem resolved it: what the
    /// smoothing steps are decided again from when the operator changes
    /// ([`PersistentSolver::update_coefficients`]).
    asked: SolverConfig,
    comm: C,
    solver: Solver<B>,
    f: B::Field,
    u: B::Field,
    setup: Vec<(&'static str, f64)>,
    /// Whether the operators were made from coefficient fields in the backend's memory
    /// ([`PersistentSolver::update_resident_coefficients`]), of which nothing is kept.
    resident: bool,
    /// Why the operators are not the problem's until coefficient fields are set again (ω
    /// changed after fields from the backend's memory were set, or setting them failed part way
    /// through), in which case solving is refused; `None`: they are.
    stale: Option<&'static str>,
    /// Whether ω changed after fields in the backend's memory were set with host copies kept
    /// ([`PersistentSolver::update_resident_coefficients_kept`]): the levels are rebuilt from
    /// those at the next solve unless fields are set first.
    pending: bool,
    /// The levels' stencils without coefficient fields for the current ω, kept from the last
    /// such update for the next (their columns are shared with the prepared levels'): a model
    /// that sets fields every step does not rebuild them.
    bare: Option<Vec<LevelStencil>>,
    /// The null space of a singular problem (δ = 0, or β zero everywhere, with no Dirichlet
    /// side), made at its first solve.
    null: Option<crate::solver::NullSpace<B>>,
    /// Whether the problem is singular, decided by all ranks together when the operator is made
    /// ([`crate::solver::singular_on_ranks`]). The hierarchy is taken deep for a problem
    /// singular at set-up or after new host fields or ω (`rebuild` sets the solver up again on
    /// the hierarchy a new solver would take); one that becomes singular from fields in device
    /// memory is solved with its null space on the hierarchy it has.
    singular: bool,
}

impl<B: Backend> PersistentSolver<B> {
    /// Sets up `cfg`'s solver for the whole problem `p` on one process (not the sphere: see
    /// [`PersistentSolver::sphere`]).
    pub fn new(backend: &B, p: &ProblemParams, cfg: &SolverConfig) -> Result<Self> {
        Self::with_comm(backend, SerialComm, p, p.whole_block(), cfg)
    }
}

impl<H: Handle> PersistentSolver<Tiled<H>, SphereComm> {
    /// Sets up `cfg`'s solver for the whole sphere `p` (six panels) on one process: fields are
    /// the six panels one after the other, `[panel][j][i][k]`.
    pub fn sphere(backend: &Tiled<H>, p: &ProblemParams, cfg: &SolverConfig) -> Result<Self> {
        Self::with_tiles(backend, SphereComm, p, &sphere::tiles(p.n, 1), cfg)
    }
}

impl<H: Handle, C: Comm<Tiled<H>>> PersistentSolver<Tiled<H>, C> {
    /// Sets up `cfg`'s solver for this rank's `tiles` of the sphere `p`
    /// ([`crate::grid::sphere::rank_tiles`]), joined by `comm`: fields are the tiles' host
    /// arrays one after the other.
    pub fn with_tiles(
        backend: &Tiled<H>,
        comm: C,
        p: &ProblemParams,
        tiles: &[Block],
        cfg: &SolverConfig,
    ) -> Result<Self> {
        Self::set_up(backend, comm, p, tiles.to_vec(), cfg, |backend, p, cfg| {
            crate::api::check_tiles(backend.inner(), p, cfg, tiles)
        })
    }
}

impl<B: Backend, C: Comm<B>> PersistentSolver<B, C> {
    /// Sets up `cfg`'s solver for this rank's `block` of problem `p`, the ranks joined by `comm`.
    pub fn with_comm(
        backend: &B,
        comm: C,
        p: &ProblemParams,
        block: Block,
        cfg: &SolverConfig,
    ) -> Result<Self> {
        // The problem's lateral conditions travel with the block (the caller's block says where
        // it lies, the problem what lies beyond the domain's edges).
        let block = block.with_bc(p.boundaries);
        Self::set_up(backend, comm, p, vec![block], cfg, |backend, p, cfg| {
            cfg.validate_block(&block)?;
            crate::api::check_operator(p, cfg)?;
            crate::api::check_block_memory(backend, p, cfg, &block)
        })
    }

    /// The set-up of a block or of tiles, after `check`.
    fn set_up(
        backend: &B,
        comm: C,
        p: &ProblemParams,
        tiles: Vec<Block>,
        cfg: &SolverConfig,
        check: impl FnOnce(&B, &ProblemParams, &SolverConfig) -> Result<()>,
    ) -> Result<Self> {
        let mut setup = Vec::new();
        let mut clock = std::time::Instant::now();
        let mut phase = |name: &'static str| {
            setup.push((name, clock.elapsed().as_secs_f64()));
            clock = std::time::Instant::now();
        };
        crate::comm::validate_on_ranks(&comm, p)?;
        let singular = crate::solver::singular_on_ranks(&comm, p)?;
        let asked = cfg.clone();
        let cfg = &crate::solver::hierarchy_on_ranks(&comm, cfg, p, singular, &tiles)?;
        check(backend, p, cfg)?;
        phase("checks");
        let levels = levels_of(p, &tiles, cfg, &comm)?;
        phase("stencils");
        let mut solver = Solver::new(backend, cfg, &levels)?;
        backend.synchronize()?;
        phase("operators and fields");
        solver.prepare_comm(backend, &comm)?;
        let f = backend.alloc(solver.fine())?;
        let u = backend.alloc(solver.fine())?;
        backend.synchronize()?;
        phase("communicator and fields");
        Ok(Self {
            p: p.clone(),
            tiles,
            cfg: cfg.clone(),
            asked,
            comm,
            solver,
            f,
            u,
            setup,
            resident: false,
            stale: None,
            pending: false,
            bare: None,
            null: None,
            singular,
        })
    }

    /// Seconds of each phase of the set-up ([`PersistentSolver::with_comm`]): the checks, the
    /// stencils of every level (host), the operators prepared and fields allocated on the
    /// backend (with a GPU's first kernel compile), the communicator's buffers.
    pub fn setup_phases(&self) -> &[(&'static str, f64)] {
        &self.setup
    }

    /// The problem (with its current coefficients and ω; after
    /// [`PersistentSolver::update_resident_coefficients`] without coefficients, which are then in
    /// the backend's memory only: [`PersistentSolver::coefficients_resident`]).
    pub fn problem(&self) -> &ProblemParams {
        &self.p
    }

    /// Whether the operators were made from coefficient fields in the backend's memory
    /// ([`PersistentSolver::update_resident_coefficients`]).
    pub fn coefficients_resident(&self) -> bool {
        self.resident
    }

    /// The kept host copies of the coefficient fields when the levels are to be rebuilt from
    /// them before the next solve (ω changed after
    /// [`PersistentSolver::update_resident_coefficients_kept`]): a backend that can make levels
    /// from host fields faster than the host path does it with these first; `None` otherwise.
    pub fn pending_coefficients(&self) -> Option<Arc<Coefficients>> {
        if self.pending {
            self.p.coefficients.clone()
        } else {
            None
        }
    }

    /// This rank's block of the fine level (on the sphere its first tile).
    pub fn block(&self) -> crate::grid::Block {
        self.tiles[0]
    }

    /// This rank's block, or on the sphere its tiles, in the order of a field's host array.
    pub fn tiles(&self) -> &[Block] {
        &self.tiles
    }

    /// The solver's settings.
    pub fn config(&self) -> &SolverConfig {
        &self.cfg
    }

    /// Values of a field of this rank's block (`nx · ny · nz`), or of its tiles together.
    pub fn len(&self) -> usize {
        self.tiles.iter().map(|b| b.nx * b.ny * self.p.nz).sum()
    }

    /// Whether the block is empty (never: blocks have at least one cell).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Solves A u = rhs (host arrays of the block, z-contiguous). With `initial_guess` the solve
    /// starts from the values in `u` (a model's last step), else from zero.
    pub fn solve(
        &mut self,
        backend: &B,
        rhs: &[f64],
        u: &mut [f64],
        initial_guess: bool,
    ) -> Result<SolveInfo> {
        self.check_current(backend)?;
        let len = self.len();
        for (name, n) in [("rhs", rhs.len()), ("u", u.len())] {
            if n != len {
                let what = match self.tiles.as_slice() {
                    [b] if b.panel.is_none() => {
                        format!("the block {}x{}x{}", b.nx, b.ny, self.p.nz)
                    }
                    t => format!("the {} sphere tiles", t.len()),
                };
                return invalid(name, format!("has {n} values, {what} needs {len}"));
            }
        }
        let fine = self.solver.fine();
        backend.upload(fine, rhs, &mut self.f)?;
        if initial_guess {
            backend.upload(fine, u, &mut self.u)?;
        } else {
            backend.fill(fine, &mut self.u, 0.0)?;
        }
        let info = self.solve_fields(backend)?;
        if stopped_on_input(&info) {
            let guess = initial_guess.then_some(&*u);
            return Err(self.non_finite_input(rhs, guess));
        }
        backend.download(self.solver.fine(), &self.u, u)?;
        self.cfg.stopping.outcome(info)
    }

    /// The error for a solve that stopped before its first iteration on a residual or a
    /// right-hand-side norm that is not finite: the first value of `rhs` (then of the initial
    /// guess `u`) that is not finite, with its cell; or, where all are finite, the largest value,
    /// whose square overflows.
    fn non_finite_input(&self, rhs: &[f64], u: Option<&[f64]>) -> crate::StrataError {
        let cell = |at: usize| self.cell(at);
        for (name, values) in [("rhs", Some(rhs)), ("u", u)] {
            let Some(values) = values else { continue };
            if let Some(at) = values.iter().position(|v| !v.is_finite()) {
                return crate::StrataError::invalid(
                    name,
                    format!("holds {} at {}: nothing was solved", values[at], cell(at)),
                );
            }
        }
        let largest = rhs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let elsewhere = if self.comm.size() > 1 {
            "another rank's right-hand side or initial guess is not finite, or "
        } else {
            ""
        };
        crate::StrataError::invalid(
            "rhs",
            format!(
                "is finite here, but {elsewhere}its values (up to {largest:e} on this rank) or the initial guess's residual overflow the norm: scale the problem; nothing was solved"
            ),
        )
    }

    /// The cell of position `at` of a host array: "(i, j, k) = (…)", with the panel on the sphere.
    fn cell(&self, at: usize) -> String {
        let nz = self.p.nz;
        let mut rest = at;
        for b in &self.tiles {
            let size = b.nx * b.ny * nz;
            if rest < size {
                let (col, k) = (rest / nz, rest % nz);
                let (i, j) = (b.i0 + col % b.nx, b.j0 + col / b.nx);
                return match b.panel {
                    Some(p) => format!("panel {p}, (i, j, k) = ({i}, {j}, {k})"),
                    None => format!("(i, j, k) = ({i}, {j}, {k})"),
                };
            }
            rest -= size;
        }
        format!("index {at}")
    }

    /// Solves with the right-hand side and the initial guess already in the solver's own fields
    /// ([`PersistentSolver::fields_mut`]): no transfer at all. Input that is not finite (a NaN
    /// or Inf in the right-hand side or the initial guess, or values whose norm overflows) is an
    /// error, not a solve that "did not converge" after no iteration. Non-convergence is reported
    /// in the record whatever [`crate::solver::SolveParams::error_if_not_converged`] says: the
    /// caller reads the solution out, then applies [`crate::solver::SolveParams::outcome`].
    pub fn solve_resident(&mut self, backend: &B) -> Result<SolveInfo> {
        let info = self.solve_fields(backend)?;
        if stopped_on_input(&info) {
            return invalid(
                "rhs",
                "or the initial guess holds values that are not finite (NaN or Inf), or whose norm overflows: nothing was solved",
            );
        }
        Ok(info)
    }

    /// The solve of [`PersistentSolver::solve_resident`], whatever its input.
    fn solve_fields(&mut self, backend: &B) -> Result<SolveInfo> {
        self.check_current(backend)?;
        let params = self.cfg.stopping.clone();
        if self.singular && self.null.is_none() {
            let volumes = crate::problem::cell_volumes(&self.p, &self.tiles);
            let null = crate::solver::NullSpace::new(
                backend,
                &self.comm,
                self.solver.fine(),
                &volumes,
                !self.p.has_advection(),
            )?;
            self.null = Some(null);
        }
        let incompatible = match (self.singular, &self.null) {
            (true, Some(null)) => Some(null.prepare(
                backend,
                &self.comm,
                self.solver.fine(),
                &mut self.f,
                &params,
            )?),
            _ => None,
        };
        let mut info = self.solver.solve(
            backend,
            &self.comm,
            &self.f,
            &mut self.u,
            &params,
            &mut |_, _| {},
        )?;
        info.incompatible = incompatible;
        if let (true, Some(null)) = (self.singular, &self.null) {
            null.remove_mean(backend, &self.comm, self.solver.fine(), &mut self.u)?;
        }
        Ok(info)
    }

    /// y = A x (host arrays of the block): the operator the solver solves with, for checking a
    /// residual. Uses the solver's resident fields as scratch (a later [`PersistentSolver::solve`]
    /// uploads its own data; [`PersistentSolver::solve_resident`] callers must reload theirs).
    pub fn apply(&mut self, backend: &B, x: &[f64], y: &mut [f64]) -> Result<()> {
        let len = self.len();
        for (name, n) in [("x", x.len()), ("y", y.len())] {
            if n != len {
                return invalid(name, format!("has {n} values, the block needs {len}"));
            }
        }
        self.apply_with(
            backend,
            |op, field| backend.upload(op, x, field),
            |op, field| backend.download(op, field, y),
        )
    }

    /// z = P r (host arrays of the block): the solver's preconditioner applied once
    /// ([`crate::solver::Solver::precondition`]: mg-cg's symmetric V-cycle, mg's cycle, cg's
    /// line relaxation, gcr's and bicgstab's configured one), for an outer iteration of another
    /// library (PETSc's `-pc_type strata`). Uses the solver's resident fields as scratch, as
    /// [`PersistentSolver::apply`]; a non-finite value in `r` is refused, naming its cell.
    pub fn precondition(&mut self, backend: &B, r: &[f64], z: &mut [f64]) -> Result<()> {
        let len = self.len();
        for (name, n) in [("r", r.len()), ("z", z.len())] {
            if n != len {
                return invalid(name, format!("has {n} values, the block needs {len}"));
            }
        }
        if let Some(at) = r.iter().position(|v| !v.is_finite()) {
            return invalid(
                "r",
                format!("holds {} at {}: nothing was applied", r[at], self.cell(at)),
            );
        }
        self.check_current(backend)?;
        let fine = self.solver.fine();
        backend.upload(fine, r, &mut self.f)?;
        self.solver
            .precondition(backend, &self.comm, &mut self.f, &mut self.u)?;
        backend.download(self.solver.fine(), &self.u, z)
    }

    /// y = A x, with x loaded into a solver field by `load` and y stored from one by `store`: for
    /// arrays other than host slices (a GPU backend's device arrays). Uses the solver's resident
    /// fields as scratch, as [`PersistentSolver::apply`].
    pub fn apply_with(
        &mut self,
        backend: &B,
        load: impl FnOnce(&B::LevelOp, &mut B::Field) -> Result<()>,
        store: impl FnOnce(&B::LevelOp, &B::Field) -> Result<()>,
    ) -> Result<()> {
        self.check_current(backend)?;
        let fine = self.solver.fine();
        load(fine, &mut self.u)?;
        self.comm.exchange(backend, fine, &mut self.u)?;
        backend.apply(fine, &self.u, &mut self.f)?;
        store(fine, &self.f)
    }

    /// The right-hand side and solution fields in the backend's memory (device memory on a GPU),
    /// for callers that keep their data there.
    pub fn fields_mut(&mut self) -> (&B::LevelOp, &mut B::Field, &mut B::Field) {
        (self.solver.fine(), &mut self.f, &mut self.u)
    }

    /// Replaces the coefficient fields (`None`: the model problem's): the stencils of every level
    /// are built again and the operators prepared again; the solver's fields and buffers stay.
    /// The smoothing steps and the hierarchy are those a solver set up for the new problem
    /// takes: mg's V(2,2) for horizontally anisotropic fields, and where the depth changes (ω,
    /// through [`PersistentSolver::update_omega`]) the solver is set up again, f and u kept.
    pub fn update_coefficients(
        &mut self,
        backend: &B,
        coefficients: Option<Coefficients>,
    ) -> Result<()> {
        let p = ProblemParams {
            coefficients: coefficients.map(Arc::new),
            ..self.p.clone()
        };
        self.rebuild(backend, p)
    }

    /// Replaces the coefficient fields by fields held in the backend's memory, one
    /// [`ResidentCells`] per level of the solver (`config().num_levels()`), finest first, made by
    /// that backend (the CUDA backend's from a model's device arrays), `symmetric` unless they
    /// have an advection vector (cg and mg-cg refuse that): the stencils of every
    /// level are built again without host fields and the backend makes each level's entries
    /// from its fields. One block of a panel or box (not the sphere's tiles). Nothing of the
    /// fields is kept, so after a later [`PersistentSolver::update_omega`] the fields must be set
    /// again before the next solve.
    pub fn update_resident_coefficients(
        &mut self,
        backend: &B,
        levels: Vec<ResidentCells>,
        symmetric: bool,
    ) -> Result<()> {
        self.update_resident_coefficients_kept(backend, levels, symmetric, None)
    }

    /// [`PersistentSolver::update_resident_coefficients`] from fields of which the caller also
    /// has host copies, `kept` (the same values: a caller that uploaded host arrays to make the
    /// levels on the device). The solver keeps them as [`PersistentSolver::update_coefficients`]
    /// keeps its fields, so that a later [`PersistentSolver::update_omega`] rebuilds the levels
    /// from them on the host instead of asking for the fields again.
    pub fn update_resident_coefficients_kept(
        &mut self,
        backend: &B,
        levels: Vec<ResidentCells>,
        symmetric: bool,
        kept: Option<Arc<Coefficients>>,
    ) -> Result<()> {
        crate::api::check_symmetry(symmetric, &self.cfg)?;
        if !matches!(self.tiles.as_slice(), [b] if b.panel.is_none()) {
            return invalid(
                "coefficients",
                "from the backend's memory are taken for one block of a panel, not for the sphere's tiles",
            );
        }
        if self.p.orography.is_some() {
            return invalid(
                "coefficients",
                "from the backend's memory over orography: give the fields as host arrays (the terrain's metric is folded into them on the host)",
            );
        }
        let p = ProblemParams {
            coefficients: None,
            ..self.p.clone()
        };
        p.validate()?;
        let bare = match self.bare.take() {
            Some(b) => b,
            None => levels_of(&p, &self.tiles, &self.cfg, &self.comm)?,
        };
        let mut stencils = bare.clone();
        self.bare = Some(bare);
        if levels.len() != stencils.len() {
            return invalid(
                "coefficients",
                format!(
                    "are given for {} levels, the solver has {}",
                    levels.len(),
                    stencils.len()
                ),
            );
        }
        for (s, r) in stencils.iter_mut().zip(levels) {
            s.resident = Some(r);
        }
        if let Err(e) = self.solver.replace_operators(backend, &stencils) {
            // Fields in the backend's memory are written into the prepared levels in place,
            // level after level: a failure there (a device error, memory) may leave some levels
            // new and others old, so solving is refused until the fields are set again. A
            // refusal of the call (an invalid parameter: the backend takes no such fields, a
            // level count) comes before any level is touched and leaves the solver as it was.
            if !matches!(e, crate::StrataError::InvalidParameter { .. }) {
                self.stale = Some(
                    "could not all be set from device memory (an error part way through): set them again",
                );
            }
            return Err(e);
        }
        // Singular only where the kept host copies say β is zero everywhere (fields in device
        // memory alone are not scanned).
        let local = kept.is_some() && {
            let q = ProblemParams {
                coefficients: kept.clone(),
                ..p.clone()
            };
            q.singular()
        };
        self.singular = crate::solver::all_ranks(&self.comm, local)?;
        self.null = None;
        let scanned = crate::solver::all_ranks(&self.comm, kept.is_some())?;
        self.p = ProblemParams {
            coefficients: kept,
            ..p
        };
        self.resident = true;
        self.stale = None;
        self.pending = false;
        // The smoothing steps follow fields that have host copies on every rank; fields in
        // device memory alone are not scanned, and leave the steps as they are.
        if scanned {
            self.steps_for_operator()?;
        }
        Ok(())
    }

    /// For a singular problem (δ = 0, or β = 0, with no Dirichlet side): whether the next solves project the
    /// right-hand side onto the operator's range ([`crate::solver::SolveParams::project_rhs`])
    /// instead of refusing one with a component along the null space above rtol.
    pub fn set_project_rhs(&mut self, project: bool) {
        self.cfg.stopping.project_rhs = project;
    }

    /// Sets ω (the time step changed): as [`PersistentSolver::update_coefficients`]. After
    /// [`PersistentSolver::update_resident_coefficients`] (whose fields are not kept) ω is
    /// recorded and the operators are left as they are: the coefficient fields must be set again
    /// (with the new ω) before the next solve, which is refused until then. After
    /// [`PersistentSolver::update_resident_coefficients_kept`] the levels are rebuilt from the
    /// kept host copies at the next solve, unless fields are set before it.
    pub fn update_omega(&mut self, backend: &B, omega: f64) -> Result<()> {
        let p = ProblemParams {
            omega: Some(omega),
            ..self.p.clone()
        };
        // Fields in the backend's memory that the solver has no host copy of: ω is recorded and
        // the fields must be given again. With host copies (update_resident_coefficients_kept)
        // the levels are rebuilt from those.
        if self.resident {
            p.validate()?;
            self.bare = None;
            if p.coefficients.is_some() {
                // Rebuilt from the kept copies at the next solve, unless fields come first.
                self.p = p;
                self.pending = true;
                return Ok(());
            }
            self.p = p;
            self.stale = Some(
                "were taken from device memory before omega changed: set them again (strata does not keep them)",
            );
            return Ok(());
        }
        self.rebuild(backend, p)
    }

    /// Refuses to use operators that are not the problem's (see [`PersistentSolver::update_omega`]),
    /// and rebuilds, from the kept host copies, levels whose ω changed after fields in the
    /// backend's memory were set with them (the rebuild waits until here: a model that sets its
    /// fields again after the new ω does not pay for it).
    fn check_current(&mut self, backend: &B) -> Result<()> {
        if let Some(why) = self.stale {
            return invalid("coefficients", why);
        }
        if self.pending {
            self.rebuild(backend, self.p.clone())?;
        }
        Ok(())
    }

    /// The operators of problem `p` (new fields or ω) on the solver's levels; where a solver set
    /// up for `p` would take another hierarchy ([`crate::solver::hierarchy_on_ranks`] on the
    /// configuration asked at set-up: a longer time step needing depth, or no longer needing
    /// it), the solver is set up again on that one, keeping f and u. Collective.
    fn rebuild(&mut self, backend: &B, p: ProblemParams) -> Result<()> {
        crate::comm::validate_on_ranks(&self.comm, &p)?;
        crate::api::check_operator(&p, &self.cfg)?;
        let singular = crate::solver::singular_on_ranks(&self.comm, &p)?;
        let resolved =
            crate::solver::hierarchy_on_ranks(&self.comm, &self.asked, &p, singular, &self.tiles)?;
        let (mg, now) = (&resolved.multigrid, &self.cfg.multigrid);
        // A solver for `p` takes another hierarchy: made beside the old one. Where any rank cannot
        // make it (device memory), every rank keeps its hierarchy and takes the new operators on
        // it, as before the depth was decided again (more cycles, the same answer to the
        // tolerance).
        let mut made = None;
        if resolved.num_levels() != self.cfg.num_levels() || mg.coarse_solve != now.coarse_solve {
            let cfg = SolverConfig {
                stopping: self.cfg.stopping.clone(),
                ..resolved
            };
            made = levels_of(&p, &self.tiles, &cfg, &self.comm)
                .and_then(|levels| Solver::new(backend, &cfg, &levels))
                .ok()
                .map(|solver| (solver, cfg));
            if !crate::solver::all_ranks(&self.comm, made.is_some())? {
                made = None;
            }
        }
        if let Some((mut solver, cfg)) = made {
            solver.prepare_comm(backend, &self.comm)?;
            self.solver = solver;
            self.cfg = cfg;
        } else {
            let levels = levels_of(&p, &self.tiles, &self.cfg, &self.comm)?;
            self.solver.replace_operators(backend, &levels)?;
            // The coarse levels gathered whole onto every rank are gathered again from the new
            // operators (collective, as this rebuild is).
            self.solver.prepare_comm(backend, &self.comm)?;
        }
        self.singular = singular;
        // Made again at the next singular solve (whether A's null space is the constants too
        // depends on the fields).
        self.null = None;
        self.p = p;
        self.resident = false;
        self.stale = None;
        self.pending = false;
        self.bare = None;
        self.steps_for_operator()
    }

    /// mg's smoothing steps decided again for the operator now held, as a solver set up for it
    /// would decide them ([`crate::solver::steps_on_ranks`] on the configuration asked at
    /// set-up; collective): a model that sets up its solver and then gives it horizontally
    /// anisotropic fields gets the V(2,2) cycle a solver set up with them takes, and V(1,1)
    /// again when the fields go. Steps given in the configuration are kept.
    fn steps_for_operator(&mut self) -> Result<()> {
        let decided = crate::solver::steps_on_ranks(&self.comm, &self.asked, &self.p)?;
        let (pre, post) = (decided.multigrid.pre_smooth, decided.multigrid.post_smooth);
        let mg = &mut self.cfg.multigrid;
        if (pre, post) != (mg.pre_smooth, mg.post_smooth) {
            self.solver.set_smoothing_steps(pre, post)?;
            mg.pre_smooth = pre;
            mg.post_smooth = post;
            mg.steps_for_operator = decided.multigrid.steps_for_operator;
        }
        Ok(())
    }
}

/// Whether a solve stopped before its first iteration because its initial residual or its
/// right-hand side's norm is not finite: its input was.
fn stopped_on_input(info: &SolveInfo) -> bool {
    info.reason == ConvergedReason::DivergedNanOrInf && info.iterations == 0
}

/// The levels of a block (`[block]`; coefficient fields of the block have their rings filled by
/// `comm`) or of the sphere's tiles.
fn levels_of<B: Backend, C: Comm<B>>(
    p: &ProblemParams,
    tiles: &[Block],
    cfg: &SolverConfig,
    comm: &C,
) -> Result<Vec<LevelStencil>> {
    let averaging = cfg.multigrid.averaging;
    match tiles {
        [b] if b.panel.is_none() => {
            build_block_levels(p, *b, cfg.num_levels(), averaging, &mut |c| {
                fill_rings::<B, C>(comm, c)
            })
        }
        _ => build_sphere_levels(p, tiles, cfg.num_levels(), averaging),
    }
}
