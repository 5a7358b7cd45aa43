//! The process's place in a parallel job: one process, or one rank of an MPI job (feature `mpi`).

/// Rank, size and local rank of this process, and the MPI universe when there is one.
pub struct Job {
    rank: usize,
    size: usize,
    local_rank: usize,
    #[cfg(feature = "mpi")]
    universe: Option<strata_mpi::mpi::environment::Universe>,
}

impl Job {
    /// Initialises MPI when built with it (a process started without mpirun is a job of one).
    pub fn init() -> Self {
        let local_rank = [
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "MPI_LOCALRANKID",
            "SLURM_LOCALID",
        ]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(0);
        #[cfg(feature = "mpi")]
        {
            use strata_mpi::mpi::traits::Communicator;
            let universe = strata_mpi::mpi::initialize();
            let (rank, size) = universe
                .as_ref()
                .map(|u| (u.world().rank() as usize, u.world().size() as usize))
                .unwrap_or((0, 1));
            Self {
                rank,
                size,
                local_rank,
                universe,
            }
        }
        #[cfg(not(feature = "mpi"))]
        Self {
            rank: 0,
            size: 1,
            local_rank,
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Rank among the ranks on this host (chooses the GPU).
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Whether this rank prints the reports.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// The world communicator.
    #[cfg(feature = "mpi")]
    pub fn world(&self) -> Option<strata_mpi::mpi::topology::SimpleCommunicator> {
        self.universe.as_ref().map(|u| u.world())
    }

    /// Ends the whole job after an error on this rank, so that no other rank waits forever.
    pub fn abort(&self, code: i32) -> ! {
        #[cfg(feature = "mpi")]
        if self.size > 1 {
            use strata_mpi::mpi::traits::Communicator;
            if let Some(w) = self.world() {
                w.abort(code);
            }
        }
        std::process::exit(code)
    }
}
