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

pub use place::Place;
pub use strata::session::SolverHandle;

use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::backend::tiled::Tiled;
use strata::comm::Comm;
use strata::names::{BackendKind, HaloPath};
use strata::problem::{Coefficients, ProblemParams};
use strata::session::Session;
use strata::solver::SolverConfig;
use strata::{PersistentSolver, Result, StrataError};
use strata_cuda::{CudaBackend, DeviceHandle};

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

/// A backend a session may run on, and whether it offers device arrays.
trait OnDevice: strata::backend::Backend + Sync + Sized + 'static {
    /// Which backend this is.
    const KIND: BackendKind;
    /// The session's device-array calls, if this backend has them.
    fn device<C: Comm<Self> + 'static>(s: &mut Session<Self, C>) -> Option<&mut dyn DeviceHandle>;
}

impl<B: OnDevice, C: Comm<B> + 'static> Solver for Session<B, C> {
    fn backend(&self) -> BackendKind {
        B::KIND
    }
    fn device(&mut self) -> Option<&mut dyn DeviceHandle> {
        B::device(self)
    }
}

/// Backends without device arrays.
macro_rules! host_only {
    ($($t:ty => $kind:ident),*) => {$(
        impl OnDevice for $t {
            const KIND: BackendKind = BackendKind::$kind;
            fn device<C: Comm<Self> + 'static>(
                _: &mut Session<Self, C>,
            ) -> Option<&mut dyn DeviceHandle> {
                None
            }
        }
    )*};
}
host_only!(
    CpuBackend => Cpu,
    ReferenceBackend => Reference,
    Tiled<Box<CpuBackend>> => Cpu,
    Tiled<Box<ReferenceBackend>> => Reference
);

impl OnDevice for CudaBackend {
    const KIND: BackendKind = BackendKind::Cuda;
    fn device<C: Comm<Self> + 'static>(s: &mut Session<Self, C>) -> Option<&mut dyn DeviceHandle> {
        Some(s)
    }
}

impl OnDevice for Tiled<Box<CudaBackend>> {
    const KIND: BackendKind = BackendKind::Cuda;
    fn device<C: Comm<Self> + 'static>(s: &mut Session<Self, C>) -> Option<&mut dyn DeviceHandle> {
        Some(s)
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
/// most nearly square rank grid, every multigrid level split alike) or its tiles of the sphere
/// (whole panels up to six ranks, blocks of every panel beyond). Collective on ranks.
pub fn open(p: &ProblemParams, cfg: &SolverConfig, place: Place) -> Result<Box<dyn Solver>> {
    let backend = resolve(place.backend);
    if place.halo == HaloPath::Nccl && place.has_ranks() && backend != BackendKind::Cuda {
        return Err(StrataError::invalid(
            "halo",
            "nccl moves device memory: it needs GPU ranks (backend cuda, or auto where a GPU is usable)",
        ));
    }
    match backend {
        BackendKind::Cuda => open_cuda(p, cfg, place),
        BackendKind::Reference => open_on(Box::new(ReferenceBackend), p, cfg, place),
        _ => open_on(Box::new(CpuBackend::new(place.threads)?), p, cfg, place),
    }
}

/// The CUDA backend: NCCL ranks, or the paths every backend has.
fn open_cuda(p: &ProblemParams, cfg: &SolverConfig, place: Place) -> Result<Box<dyn Solver>> {
    let b = Box::new(CudaBackend::new(place.device)?);
    if place.halo == HaloPath::Nccl && place.has_ranks() {
        return nccl::open(b, p, cfg, place);
    }
    open_on(b, p, cfg, place)
}

/// A solver on backend `b`: ranks over MPI, the sphere, or one block.
fn open_on<B>(
    b: Box<B>,
    p: &ProblemParams,
    cfg: &SolverConfig,
    place: Place,
) -> Result<Box<dyn Solver>>
where
    B: OnDevice,
    Tiled<Box<B>>: OnDevice,
{
    #[cfg(feature = "mpi")]
    if let Some(world) = place.into_comm() {
        return ranks::open(b, world, p, cfg);
    }
    #[cfg(not(feature = "mpi"))]
    let _ = place;
    if p.geometry.closed() {
        let t = Box::new(Tiled::new(b));
        let s = PersistentSolver::sphere(&t, p, cfg)?;
        return Ok(Box::new(Session::new(t, s)));
    }
    let s = PersistentSolver::new(b.as_ref(), p, cfg)?;
    Ok(Box::new(Session::new(b, s)))
}

/// Ranks whose halos travel by MPI.
#[cfg(feature = "mpi")]
mod ranks {
    use super::*;
    use strata::grid::{Block, RankGrid};
    use strata_mpi::mpi::topology::SimpleCommunicator;
    use strata_mpi::mpi::traits::Communicator;
    use strata_mpi::{MpiComm, SphereMpiComm};

    /// This rank's solver of `p` on backend `b`, the ranks of `world` joined by MPI.
    pub(super) fn open<B>(
        b: Box<B>,
        world: SimpleCommunicator,
        p: &ProblemParams,
        cfg: &SolverConfig,
    ) -> Result<Box<dyn Solver>>
    where
        B: OnDevice,
        Tiled<Box<B>>: OnDevice,
    {
        match share(&world, p, cfg)? {
            Share::Tiles { tiles, k } => {
                let t = Box::new(Tiled::new(b));
                let comm = SphereMpiComm::<B>::new(world, k);
                let s = PersistentSolver::with_tiles(&t, comm, p, &tiles, cfg)?;
                Ok(Box::new(Session::on_ranks(t, s)))
            }
            Share::Block { grid, block } => {
                let comm = MpiComm::new(world, grid)?;
                let s = PersistentSolver::with_comm(b.as_ref(), comm, p, block, cfg)?;
                Ok(Box::new(Session::on_ranks(b, s)))
            }
        }
    }

    /// What one rank holds.
    pub(super) enum Share {
        /// Its tiles of the sphere (whole panels up to six ranks, blocks of every panel
        /// beyond), each panel cut k × k.
        Tiles { tiles: Vec<Block>, k: usize },
        /// Its block of a panel or box split over the most nearly square rank grid.
        Block { grid: RankGrid, block: Block },
    }

    /// This rank's share of `p` among the ranks of `world`.
    pub(super) fn share(
        world: &SimpleCommunicator,
        p: &ProblemParams,
        cfg: &SolverConfig,
    ) -> Result<Share> {
        let (size, rank) = (world.size() as usize, world.rank() as usize);
        if p.geometry.closed() {
            p.validate()?;
            let tiles = strata::grid::sphere::rank_tiles(p.n, cfg.num_levels(), size, rank)?;
            let k = p.n / tiles[0].nx;
            return Ok(Share::Tiles { tiles, k });
        }
        let grid = RankGrid::choose(size);
        let block = cfg.validate_for(p.n, grid)?.fine_block(rank);
        Ok(Share::Block { grid, block })
    }
}

/// GPU ranks whose halos travel by NCCL between device buffers.
mod nccl {
    use super::*;

    /// This rank's solver of `p` on the GPU of `b`, halos by NCCL (set up over the place's
    /// communicator).
    #[cfg(feature = "nccl")]
    pub(super) fn open(
        b: Box<CudaBackend>,
        p: &ProblemParams,
        cfg: &SolverConfig,
        place: Place,
    ) -> Result<Box<dyn Solver>> {
        use super::ranks::{share, Share};
        use strata_mpi::{NcclComm, SphereNcclComm};
        let world = place
            .into_comm()
            .ok_or_else(|| StrataError::invalid("halo", "nccl needs ranks"))?;
        match share(&world, p, cfg)? {
            Share::Tiles { tiles, k } => {
                let t = Box::new(Tiled::new(b));
                let comm = SphereNcclComm::new(world, k, &tiles, t.inner())?;
                let s = PersistentSolver::with_tiles(&t, comm, p, &tiles, cfg)?;
                Ok(Box::new(Session::on_ranks(t, s)))
            }
            Share::Block { grid, block } => {
                let comm = NcclComm::new(world, grid, &b)?;
                let s = PersistentSolver::with_comm(b.as_ref(), comm, p, block, cfg)?;
                Ok(Box::new(Session::on_ranks(b, s)))
            }
        }
    }

    /// Without NCCL built in: the error that says how to build it.
    #[cfg(not(feature = "nccl"))]
    pub(super) fn open(
        _: Box<CudaBackend>,
        _: &ProblemParams,
        _: &SolverConfig,
        _: Place,
    ) -> Result<Box<dyn Solver>> {
        Err(StrataError::invalid(
            "halo",
            "nccl: this build has no NCCL (build with the `nccl` feature)",
        ))
    }
}
