//! One solver handle: a [`PersistentSolver`] and the backend it runs on, behind the object-safe
//! [`SolverHandle`], so that a front end (the C API, Python, the command line) holds one type
//! whatever the backend, communicator and geometry. What is chosen where: the one function that
//! opens a handle for a backend, a communicator and a geometry is `strata_session::open`; this
//! module only erases the types.

use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::grid::Block;
use crate::problem::{Coefficients, ProblemParams};
use crate::solver::{SolveInfo, SolverConfig};
use crate::PersistentSolver;

/// A solver set up once for a problem, ready to solve every time step: the calls a front end
/// makes, with host arrays in strata's order (z-contiguous; on the sphere or on a rank of it the
/// tiles' arrays one after the other, [`SolverHandle::tiles`]). Object-safe.
pub trait SolverHandle {
    /// The problem (with its current coefficient fields and ω).
    fn problem(&self) -> &ProblemParams;
    /// The solver's settings.
    fn config(&self) -> &SolverConfig;
    /// This process's block of the fine level (on the sphere its first tile).
    fn block(&self) -> Block;
    /// This process's block, or on the sphere its tiles, in the order of a field's host array.
    fn tiles(&self) -> &[Block];
    /// Values of one field of this process: the length of every array the handle takes.
    fn len(&self) -> usize;
    /// Whether the field is empty (never: blocks have at least one cell).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether this is one rank of a distributed solve (its arrays are its block's or tiles').
    fn on_ranks(&self) -> bool;
    /// The block whose coefficient fields [`SolverHandle::update_coefficients`] takes: on a rank
    /// of a panel or box its own block ([`Coefficients::for_block`]); `None`: the whole
    /// problem's fields (one process, or every rank of the sphere).
    fn block_fields(&self) -> Option<Block> {
        (self.on_ranks() && !self.problem().geometry.closed()).then(|| self.block())
    }
    /// The backend's name ([`crate::backend::Fields::name`]).
    fn backend_name(&self) -> String;
    /// Seconds of each phase of the set-up ([`PersistentSolver::setup_phases`]).
    fn setup_phases(&self) -> &[(&'static str, f64)];
    /// Solves A u = rhs; with `initial_guess` from the values in `u`, else from zero
    /// ([`PersistentSolver::solve`]).
    fn solve(&mut self, rhs: &[f64], u: &mut [f64], initial_guess: bool) -> Result<SolveInfo>;
    /// y = A x with the solver's operator ([`PersistentSolver::apply`]).
    fn apply(&mut self, x: &[f64], y: &mut [f64]) -> Result<()>;
    /// z = P r with the solver's preconditioner ([`PersistentSolver::precondition`]).
    fn precondition(&mut self, r: &[f64], z: &mut [f64]) -> Result<()>;
    /// Replaces the coefficient fields (`None`: the model problem's)
    /// ([`PersistentSolver::update_coefficients`]).
    fn update_coefficients(&mut self, coefficients: Option<Coefficients>) -> Result<()>;
    /// Sets ω ([`PersistentSolver::update_omega`]).
    fn update_omega(&mut self, omega: f64) -> Result<()>;
    /// Whether solves of a singular problem project the right-hand side
    /// ([`PersistentSolver::set_project_rhs`]).
    fn set_project_rhs(&mut self, project: bool);
}

/// A persistent solver with the backend it runs on: the one implementation of
/// [`SolverHandle`]. Backends that offer more (device arrays) give their extensions for
/// `Session<TheirBackend, C>` through [`Session::parts_mut`].
pub struct Session<B: Backend, C: Comm<B>> {
    // Boxed: a backend's address stays put for the solver's life (communicators made over it
    // may keep it).
    backend: Box<B>,
    solver: PersistentSolver<B, C>,
    on_ranks: bool,
}

impl<B: Backend, C: Comm<B>> Session<B, C> {
    /// A handle over `solver` of one process, set up on `backend`.
    pub fn new(backend: Box<B>, solver: PersistentSolver<B, C>) -> Self {
        Self {
            backend,
            solver,
            on_ranks: false,
        }
    }

    /// A handle over `solver` of one rank of a distributed solve, set up on `backend`.
    pub fn on_ranks(backend: Box<B>, solver: PersistentSolver<B, C>) -> Self {
        Self {
            on_ranks: true,
            ..Self::new(backend, solver)
        }
    }

    /// The backend and the persistent solver, for a backend's own extensions.
    pub fn parts_mut(&mut self) -> (&B, &mut PersistentSolver<B, C>) {
        (&self.backend, &mut self.solver)
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}

impl<B: Backend, C: Comm<B>> SolverHandle for Session<B, C> {
    fn problem(&self) -> &ProblemParams {
        self.solver.problem()
    }
    fn config(&self) -> &SolverConfig {
        self.solver.config()
    }
    fn block(&self) -> Block {
        self.solver.block()
    }
    fn tiles(&self) -> &[Block] {
        self.solver.tiles()
    }
    fn len(&self) -> usize {
        self.solver.len()
    }
    fn on_ranks(&self) -> bool {
        self.on_ranks
    }
    fn backend_name(&self) -> String {
        self.backend.name()
    }
    fn setup_phases(&self) -> &[(&'static str, f64)] {
        self.solver.setup_phases()
    }
    fn solve(&mut self, rhs: &[f64], u: &mut [f64], initial_guess: bool) -> Result<SolveInfo> {
        self.solver.solve(&self.backend, rhs, u, initial_guess)
    }
    fn apply(&mut self, x: &[f64], y: &mut [f64]) -> Result<()> {
        self.solver.apply(&self.backend, x, y)
    }
    fn precondition(&mut self, r: &[f64], z: &mut [f64]) -> Result<()> {
        self.solver.precondition(&self.backend, r, z)
    }
    fn update_coefficients(&mut self, coefficients: Option<Coefficients>) -> Result<()> {
        self.solver.update_coefficients(&self.backend, coefficients)
    }
    fn update_omega(&mut self, omega: f64) -> Result<()> {
        self.solver.update_omega(&self.backend, omega)
    }
    fn set_project_rhs(&mut self, project: bool) {
        self.solver.set_project_rhs(project)
    }
}
