//! Where a solver runs: backend, CPU threads, CUDA device, and on ranks the communicator and
//! the halo path.

use strata::grid::RankGrid;
use strata::names::{BackendKind, HaloPath};

/// Where a solver runs ([`crate::open`]). Built with [`Place::new`] and the `with_*` methods.
pub struct Place {
    /// The backend (`Auto`: the GPU where one is usable).
    pub backend: BackendKind,
    /// CPU threads (`None`: all cores).
    pub threads: Option<usize>,
    /// CUDA device ordinal.
    pub device: usize,
    /// How GPU ranks exchange halos (used on ranks only; `Auto`: NCCL where built and found).
    pub halo: HaloPath,
    /// The rank grid of a panel or box (`None`: the most nearly square one; used on ranks only).
    pub grid: Option<RankGrid>,
    /// The ranks' communicator (strata's own duplicate of the caller's).
    #[cfg(feature = "mpi")]
    comm: Option<strata_mpi::mpi::topology::SimpleCommunicator>,
}

impl Place {
    /// One process on `backend`, all cores, device 0 (on ranks: halos by NCCL for GPU ranks
    /// where built and found, the most nearly square rank grid).
    pub fn new(backend: BackendKind) -> Self {
        Self {
            backend,
            threads: None,
            device: 0,
            halo: HaloPath::Auto,
            grid: None,
            #[cfg(feature = "mpi")]
            comm: None,
        }
    }

    /// Sets the CPU threads (`None`: all cores).
    pub fn with_threads(mut self, threads: Option<usize>) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the CUDA device ordinal.
    pub fn with_device(mut self, device: usize) -> Self {
        self.device = device;
        self
    }

    /// Sets how GPU ranks exchange halos.
    pub fn with_halo(mut self, halo: HaloPath) -> Self {
        self.halo = halo;
        self
    }

    /// Sets the rank grid of a panel or box (`None`: the most nearly square one).
    pub fn with_grid(mut self, grid: Option<RankGrid>) -> Self {
        self.grid = grid;
        self
    }

    /// One rank of a distributed solve over `comm` (strata's own communicator: duplicate the
    /// caller's so that strata's messages stay apart from the model's).
    #[cfg(feature = "mpi")]
    pub fn with_comm(mut self, comm: strata_mpi::mpi::topology::SimpleCommunicator) -> Self {
        self.comm = Some(comm);
        self
    }

    /// The backend, threads and device of this place, without ranks.
    pub fn backend_only(&self) -> Place {
        Place::new(self.backend)
            .with_threads(self.threads)
            .with_device(self.device)
    }

    /// Whether the solve is spread over ranks.
    pub fn has_ranks(&self) -> bool {
        #[cfg(feature = "mpi")]
        {
            self.comm.is_some()
        }
        #[cfg(not(feature = "mpi"))]
        {
            false
        }
    }

    /// The communicator, taken.
    #[cfg(feature = "mpi")]
    pub(crate) fn into_comm(self) -> Option<strata_mpi::mpi::topology::SimpleCommunicator> {
        self.comm
    }
}
