//! Work on whichever backend, and over whichever communicator, a [`Place`] names: the one
//! match of the workspace over backend × communicator × geometry. [`crate::open`] is one such
//! work (it builds the solver handle); the command line's measurements (`strata bench`,
//! `strata reproduce`, which read the backends' kernel models through [`Probes`]) are others.

use crate::place::Place;
use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::backend::tiled::Tiled;
use strata::backend::Backend;
use strata::comm::Comm;
use strata::names::BackendKind;
use strata::perf::Probes;
use strata::session::Session;
use strata::{Result, StrataError};
use strata_cuda::{CudaBackend, DeviceHandle};

/// A backend work can run on: the reference, CPU and CUDA backends (sealed).
pub trait OnBackend: Backend + Probes + Sync + Sized + 'static + sealed::Sealed {
    /// Which backend this is (never `Auto`).
    const KIND: BackendKind;
    /// The session's device-array calls, if this backend has them.
    #[doc(hidden)]
    fn device<C: Comm<Self> + 'static>(s: &mut Session<Self, C>) -> Option<&mut dyn DeviceHandle>;
    /// The device-array calls of a session of this backend's tiles (the sphere).
    #[doc(hidden)]
    fn tiled_device<C: Comm<Tiled<Box<Self>>> + 'static>(
        s: &mut Session<Tiled<Box<Self>>, C>,
    ) -> Option<&mut dyn DeviceHandle>;
    /// The communicator of a panel or box's ranks when their halos go by NCCL (the CUDA
    /// backend alone).
    #[cfg(feature = "mpi")]
    #[doc(hidden)]
    fn nccl_block<T: RanksTask<Self>>(
        self: Box<Self>,
        world: strata_mpi::mpi::topology::SimpleCommunicator,
        grid: strata::grid::RankGrid,
        share: BlockShare,
        task: T,
    ) -> Result<T::Output> {
        let _ = (world, grid, share, task);
        Err(no_nccl::<Self>())
    }
    /// The communicator of the sphere's ranks when their halos go by NCCL (the CUDA backend
    /// alone).
    #[cfg(feature = "mpi")]
    #[doc(hidden)]
    fn nccl_tiles<T: RanksTask<Self>>(
        self: Box<Self>,
        world: strata_mpi::mpi::topology::SimpleCommunicator,
        share: TileShare,
        task: T,
    ) -> Result<T::Output> {
        let _ = (world, share, task);
        Err(no_nccl::<Self>())
    }
}

mod sealed {
    /// Only this crate's backends run sessions.
    pub trait Sealed {}
    impl Sealed for strata::backend::cpu::CpuBackend {}
    impl Sealed for strata::backend::reference::ReferenceBackend {}
    impl Sealed for strata_cuda::CudaBackend {}
}

/// The error of NCCL halos asked of a backend without device memory, or of a build without NCCL.
#[cfg(feature = "mpi")]
fn no_nccl<B: OnBackend>() -> StrataError {
    use strata::names::Choice;
    if B::KIND == BackendKind::Cuda {
        return StrataError::invalid(
            "halo",
            "nccl: this build has no NCCL (build with the `nccl` feature)",
        );
    }
    StrataError::invalid(
        "halo",
        format!(
            "nccl moves device memory: it needs GPU ranks (backend cuda, or auto where a GPU is usable), not {}",
            B::KIND.name()
        ),
    )
}

/// Backends without device arrays.
macro_rules! host_only {
    ($($t:ty => $kind:ident),*) => {$(
        impl OnBackend for $t {
            const KIND: BackendKind = BackendKind::$kind;
            fn device<C: Comm<Self> + 'static>(
                _: &mut Session<Self, C>,
            ) -> Option<&mut dyn DeviceHandle> {
                None
            }
            fn tiled_device<C: Comm<Tiled<Box<Self>>> + 'static>(
                _: &mut Session<Tiled<Box<Self>>, C>,
            ) -> Option<&mut dyn DeviceHandle> {
                None
            }
        }
    )*};
}
host_only!(CpuBackend => Cpu, ReferenceBackend => Reference);

impl OnBackend for CudaBackend {
    const KIND: BackendKind = BackendKind::Cuda;
    fn device<C: Comm<Self> + 'static>(s: &mut Session<Self, C>) -> Option<&mut dyn DeviceHandle> {
        Some(s)
    }
    fn tiled_device<C: Comm<Tiled<Box<Self>>> + 'static>(
        s: &mut Session<Tiled<Box<Self>>, C>,
    ) -> Option<&mut dyn DeviceHandle> {
        Some(s)
    }
    #[cfg(feature = "nccl")]
    fn nccl_block<T: RanksTask<Self>>(
        self: Box<Self>,
        world: strata_mpi::mpi::topology::SimpleCommunicator,
        grid: strata::grid::RankGrid,
        share: BlockShare,
        task: T,
    ) -> Result<T::Output> {
        let comm = strata_mpi::NcclComm::new(world, grid, &self)?;
        task.block(self, comm, share, strata::names::HaloPath::Nccl)
    }
    #[cfg(feature = "nccl")]
    fn nccl_tiles<T: RanksTask<Self>>(
        self: Box<Self>,
        world: strata_mpi::mpi::topology::SimpleCommunicator,
        share: TileShare,
        task: T,
    ) -> Result<T::Output> {
        let comm = strata_mpi::SphereNcclComm::new(world, share.k, &share.tiles, &self)?;
        task.tiles(self, comm, share, strata::names::HaloPath::Nccl)
    }
}

/// Work to run on whichever backend a [`Place`] names.
pub trait BackendTask {
    /// What the work returns.
    type Output;
    /// Runs the work on `backend`.
    fn run<B: OnBackend>(self, backend: Box<B>) -> Result<Self::Output>;
}

/// Runs `task` on the backend of `place` (`Auto`: the GPU where one is usable, else the CPU):
/// CPU threads and the CUDA device as `place` says.
pub fn with_backend<T: BackendTask>(place: &Place, task: T) -> Result<T::Output> {
    match place.backend {
        BackendKind::Cuda => {
            if let Some(why) = strata_cuda::unavailable_reason() {
                return Err(StrataError::invalid("backend", format!("cuda: {why}")));
            }
            task.run(Box::new(CudaBackend::new(place.device)?))
        }
        BackendKind::Auto if strata_cuda::unavailable_reason().is_none() => {
            task.run(Box::new(CudaBackend::new(place.device)?))
        }
        BackendKind::Reference => task.run(Box::new(ReferenceBackend)),
        BackendKind::Auto | BackendKind::Cpu => task.run(Box::new(CpuBackend::new(place.threads)?)),
    }
}

/// This rank's block of a panel or box split over a rank grid.
#[derive(Debug, Clone, Copy)]
pub struct BlockShare {
    /// The rank grid.
    pub grid: strata::grid::RankGrid,
    /// This rank's block of the finest level.
    pub block: strata::grid::Block,
}

/// This rank's tiles of the sphere: whole panels up to six ranks, blocks of every panel beyond
/// (docs/MODEL.md §16).
#[derive(Debug, Clone)]
pub struct TileShare {
    /// This rank's tiles of the finest level.
    pub tiles: Vec<strata::grid::Block>,
    /// Each panel is cut `k × k`.
    pub k: usize,
}

/// Work to run over the ranks' communicator, whichever halo path and geometry: a panel or box
/// takes [`RanksTask::block`], the sphere [`RanksTask::tiles`].
pub trait RanksTask<B: Backend> {
    /// What the work returns.
    type Output;
    /// Runs the work on `backend` for this rank's block, halos over `comm` by `halo` (`Mpi` or
    /// `Nccl`).
    fn block<C: Comm<B> + 'static>(
        self,
        backend: Box<B>,
        comm: C,
        share: BlockShare,
        halo: strata::names::HaloPath,
    ) -> Result<Self::Output>;
    /// Runs the work on `backend` for this rank's tiles of the sphere, halos over `comm` by
    /// `halo`.
    fn tiles<C>(
        self,
        backend: Box<B>,
        comm: C,
        share: TileShare,
        halo: strata::names::HaloPath,
    ) -> Result<Self::Output>
    where
        C: Comm<Tiled<Box<B>>> + for<'a> Comm<Tiled<&'a B>> + 'static;
}

#[cfg(feature = "mpi")]
pub use ranks::with_ranks;

/// The ranks' communicators.
#[cfg(feature = "mpi")]
mod ranks {
    use super::*;
    use strata::grid::RankGrid;
    use strata::names::HaloPath;
    use strata::problem::ProblemParams;
    use strata::solver::SolverConfig;
    use strata_mpi::mpi::traits::Communicator;
    use strata_mpi::{MpiComm, SphereMpiComm};

    /// Runs `task` over the communicator of `place` (which must have one) for problem `p`
    /// solved by `cfg` on `backend`: this rank's share (the grid of `place`, else the most
    /// nearly square one; the sphere's tiles), halos by the path of `place` (`Auto`: NCCL for
    /// GPU ranks where built and found, else MPI). Collective.
    pub fn with_ranks<B: OnBackend, T: RanksTask<B>>(
        backend: Box<B>,
        place: Place,
        p: &ProblemParams,
        cfg: &SolverConfig,
        task: T,
    ) -> Result<T::Output> {
        let (halo, grid) = (place.halo, place.grid);
        let world = place
            .into_comm()
            .ok_or_else(|| StrataError::invalid("ranks", "no communicator was given"))?;
        let nccl = match halo {
            HaloPath::Nccl => true,
            HaloPath::Mpi => false,
            HaloPath::Auto => B::KIND == BackendKind::Cuda && nccl_found(),
        };
        let (size, rank) = (world.size() as usize, world.rank() as usize);
        if p.geometry.closed() {
            if grid.is_some() {
                return Err(StrataError::invalid(
                    "ranks",
                    "the sphere's ranks take whole panels or equal blocks of every panel; give no rank grid",
                ));
            }
            p.validate()?;
            cfg.validate()?;
            // The ranks' tiles are made for the hierarchy the problem takes (deeper where it is
            // singular or its coarsest level too strongly coupled, fewer levels where the grid
            // halves fewer times: docs/MODEL.md §9.4).
            let levels =
                strata::solver::singular_levels(cfg, p, &strata::grid::sphere::tiles(p.n, 1))
                    .num_levels();
            let tiles = strata::grid::sphere::rank_tiles(p.n, levels, size, rank)?;
            let share = TileShare {
                k: p.n / tiles[0].nx,
                tiles,
            };
            if nccl {
                return backend.nccl_tiles(world, share, task);
            }
            let comm = SphereMpiComm::<B>::new(world, share.k);
            return task.tiles(backend, comm, share, HaloPath::Mpi);
        }
        let grid = grid.unwrap_or_else(|| RankGrid::choose(size));
        let block = cfg.decompose(p, grid)?.fine_block(rank);
        let share = BlockShare { grid, block };
        if nccl {
            return backend.nccl_block(world, grid, share, task);
        }
        task.block(backend, MpiComm::new(world, grid)?, share, HaloPath::Mpi)
    }

    /// Whether NCCL is built in and its library found.
    fn nccl_found() -> bool {
        #[cfg(feature = "nccl")]
        {
            strata_mpi::nccl_available()
        }
        #[cfg(not(feature = "nccl"))]
        {
            false
        }
    }
}
