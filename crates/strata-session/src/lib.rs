//! # strata-session
//!
//! The one place that turns a problem, a solver configuration and a place to run (backend,
//! device, threads, and on ranks the communicator and halo path) into a solver: [`open`] returns
//! a `Box<dyn` [`Solver`]`>`, the handle every front end (the C API, the Fortran module through
//! it, Python, the command line's persistent paths) holds. It is the only code of the workspace
//! that matches backend × communicator × geometry; below it everything is monomorphised
//! ([`strata::session::Session`]), above it nothing names a backend.
//!
//! ```
//! use strata::names::BackendKind;
//! use strata::problem::{Coefficients, ProblemParams};
//! use strata::solver::{SolverConfig, SolverKind};
//! use strata_session::{open, Place};
//!
//! let p = ProblemParams { n: 16, nz: 8, ..Default::default() };
//! let cfg = SolverConfig::new(SolverKind::Mg).with_levels(3);
//! let mut s = open(&p, &cfg, Place::new(BackendKind::Cpu))?;
//! let rhs = vec![1.0; s.len()];
//! let mut u = vec![0.0; s.len()];
//! let info = s.solve(&rhs, &mut u, false)?;
//! assert!(info.reason.converged());
//! assert!(s.device().is_none()); // no device arrays on the CPU
//! # Ok::<(), strata::StrataError>(())
//! ```
#![warn(missing_docs)]

mod place;
mod visit;

pub use place::Place;
pub use strata::session::SolverHandle;
#[cfg(feature = "mpi")]
pub use visit::with_ranks;
pub use visit::{with_backend, BackendTask, BlockShare, OnBackend, RanksTask, TileShare};

use strata::backend::tiled::Tiled;
use strata::comm::Comm;
use strata::names::BackendKind;
use strata::problem::{Coefficients, ProblemParams};
use strata::session::Session;
use strata::solver::SolverConfig;
use strata::{PersistentSolver, Result};
use strata_cuda::DeviceHandle;

/// A solver handle: the host calls of [`SolverHandle`], and the device-array calls where the
/// solver runs on a GPU.
pub trait Solver: SolverHandle {
    /// The backend the solver runs on (never `Auto`).
    fn backend(&self) -> BackendKind;
    /// The device-array calls ([`DeviceHandle`]); `None` on the CPU and reference backends.
    fn device(&mut self) -> Option<&mut dyn DeviceHandle>;

    /// Replaces the coefficient fields from host arrays (`None`: the model problem's), the
    /// call of a model every time step: on one GPU made into the levels on the device from an
    /// uploaded copy where it has room ([`DeviceHandle::set_coefficients_host`]: the same
    /// operator in a small part of the time), otherwise
    /// [`SolverHandle::update_coefficients`].
    fn set_coefficients(&mut self, coefficients: Option<Coefficients>) -> Result<()> {
        match self.device() {
            Some(d) => d.set_coefficients_host(coefficients).map(|_| ()),
            None => self.update_coefficients(coefficients),
        }
    }

    /// Before a solve or an apply: on one GPU, levels that a new ω left to rebuild from host
    /// fields made on the device are made there again
    /// ([`DeviceHandle::rebuild_pending`]) instead of on the host by the solve.
    fn rebuild_pending(&mut self) -> Result<()> {
        if let Some(d) = self.device() {
            d.rebuild_pending()?;
        }
        Ok(())
    }
}

impl<B: OnBackend, C: Comm<B> + 'static> Solver for Session<B, C> {
    fn backend(&self) -> BackendKind {
        B::KIND
    }
    fn device(&mut self) -> Option<&mut dyn DeviceHandle> {
        B::device(self)
    }
}

impl<B: OnBackend, C: Comm<Tiled<Box<B>>> + 'static> Solver for Session<Tiled<Box<B>>, C> {
    fn backend(&self) -> BackendKind {
        B::KIND
    }
    fn device(&mut self) -> Option<&mut dyn DeviceHandle> {
        B::tiled_device(self)
    }
}

/// The backend `kind` resolves to: `Auto` is CUDA where a GPU is usable, else the CPU.
pub fn resolve(kind: BackendKind) -> BackendKind {
    match kind {
        BackendKind::Auto if strata_cuda::unavailable_reason().is_none() => BackendKind::Cuda,
        BackendKind::Auto => BackendKind::Cpu,
        k => k,
    }
}

/// Sets up `cfg`'s solver for problem `p` at `place`: on one process the whole panel, box or
/// sphere; on ranks (a [`Place`] with a communicator) this rank's block of a panel or box (the
/// place's rank grid or the most nearly square one, every multigrid level split alike) or its
/// tiles of the sphere (whole panels up to six ranks, blocks of every panel beyond). Collective
/// on ranks.
pub fn open(p: &ProblemParams, cfg: &SolverConfig, place: Place) -> Result<Box<dyn Solver>> {
    // NCCL asked of a backend without device memory is refused by `with_ranks`, before any
    // communicator is made.
    with_backend(&place.backend_only(), Open { p, cfg, place })
}

/// [`open`] on the chosen backend.
struct Open<'a> {
    p: &'a ProblemParams,
    cfg: &'a SolverConfig,
    place: Place,
}

impl BackendTask for Open<'_> {
    type Output = Box<dyn Solver>;

    fn run<B: OnBackend>(self, b: Box<B>) -> Result<Box<dyn Solver>> {
        let Open { p, cfg, place } = self;
        #[cfg(feature = "mpi")]
        if place.has_ranks() {
            return with_ranks(b, place, p, cfg, OpenRanks { p, cfg });
        }
        let _ = place;
        if p.geometry.closed() {
            let t = Box::new(Tiled::new(b));
            let s = PersistentSolver::sphere(&t, p, cfg)?;
            return Ok(Box::new(Session::new(t, s)));
        }
        let s = PersistentSolver::new(b.as_ref(), p, cfg)?;
        Ok(Box::new(Session::new(b, s)))
    }
}

/// [`open`] on ranks, over the communicator chosen.
#[cfg(feature = "mpi")]
struct OpenRanks<'a> {
    p: &'a ProblemParams,
    cfg: &'a SolverConfig,
}

#[cfg(feature = "mpi")]
impl<B: OnBackend> RanksTask<B> for OpenRanks<'_> {
    type Output = Box<dyn Solver>;

    fn block<C: Comm<B> + 'static>(
        self,
        b: Box<B>,
        comm: C,
        share: BlockShare,
        _: strata::names::HaloPath,
    ) -> Result<Box<dyn Solver>> {
        let s = PersistentSolver::with_comm(b.as_ref(), comm, self.p, share.block, self.cfg)?;
        Ok(Box::new(Session::on_ranks(b, s)))
    }

    fn tiles<C>(
        self,
        b: Box<B>,
        comm: C,
        share: TileShare,
        _: strata::names::HaloPath,
    ) -> Result<Box<dyn Solver>>
    where
        C: Comm<Tiled<Box<B>>> + for<'a> Comm<Tiled<&'a B>> + 'static,
    {
        let t = Box::new(Tiled::new(b));
        let s = PersistentSolver::with_tiles(&t, comm, self.p, &share.tiles, self.cfg)?;
        Ok(Box::new(Session::on_ranks(t, s)))
    }
}
