//! The one place that chooses how an MPI job's ranks talk (NCCL or MPI halos); everything below
//! is monomorphised over the communicator.

use crate::job::Job;
use crate::options::HaloArg;
use crate::CliResult;
use strata::backend::tiled::Tiled;
use strata::backend::Backend;
use strata::comm::Comm;
use strata::grid::Block;
use strata::grid::RankGrid;
use strata::problem::{build_rhs, ProblemParams};
use strata::solve_block;
use strata::solver::SolverConfig;
use strata_cuda::CudaBackend;
use strata_mpi::mpi::traits::*;
use strata_mpi::{MpiComm, SphereMpiComm};

/// Work to run over the job's communicator, whichever halo path was chosen.
pub trait CommTask<B: Backend> {
    /// What the work returns.
    type Output;
    /// Runs the work over `comm` on the rank grid `grid`; `halo` names the path for reports.
    fn run<C: Comm<B>>(self, comm: &C, grid: RankGrid, halo: &str) -> CliResult<Self::Output>;
}

/// Work to run over the sphere's communicator, whichever halo path was chosen.
pub trait SphereTask<B: Backend> {
    /// What the work returns.
    type Output;
    /// Runs the work over `comm`; `halo` names the path for reports.
    fn run<C>(self, comm: &C, halo: &str) -> CliResult<Self::Output>
    where
        C: for<'a> Comm<Tiled<&'a B>>;
}

/// The halo paths the ranks of a backend can take: MPI for every backend (through host buffers
/// for device fields), NCCL for the CUDA backend alone. The choice is made by the backend's type,
/// so no communicator ever meets fields it cannot move.
pub trait HaloPaths: Backend + Sized {
    /// Builds the communicator of the job for `halo` and runs `task` over it.
    fn with_comm<T: CommTask<Self>>(
        &self,
        halo: HaloArg,
        grid: RankGrid,
        job: &Job,
        task: T,
    ) -> CliResult<T::Output> {
        if halo == HaloArg::Nccl {
            return Err(
                "--halo nccl moves device memory: it needs GPU ranks (--backend cuda)".into(),
            );
        }
        let world = job.world().ok_or("MPI is not initialised")?;
        let comm = MpiComm::<Self>::new(world.duplicate(), grid)?;
        task.run(&comm, grid, "mpi")
    }

    /// Builds the sphere's communicator for this rank's fine `tiles` (`k × k` blocks per
    /// panel) and runs `task` over it: MPI for every backend, NCCL for the CUDA backend alone.
    fn with_sphere_comm<T: SphereTask<Self>>(
        &self,
        halo: HaloArg,
        job: &Job,
        k: usize,
        tiles: &[Block],
        task: T,
    ) -> CliResult<T::Output> {
        let _ = tiles;
        if halo == HaloArg::Nccl {
            return Err(
                "--halo nccl moves device memory: it needs GPU ranks (--backend cuda)".into(),
            );
        }
        let world = job.world().ok_or("MPI is not initialised")?;
        task.run(&SphereMpiComm::<Self>::new(world.duplicate(), k), "mpi")
    }
}

impl HaloPaths for strata::backend::cpu::CpuBackend {}

impl HaloPaths for strata::backend::reference::ReferenceBackend {}

impl HaloPaths for CudaBackend {
    /// NCCL between device buffers under `nccl`, and under `auto` where it is built and found;
    /// else MPI through host buffers.
    fn with_comm<T: CommTask<Self>>(
        &self,
        halo: HaloArg,
        grid: RankGrid,
        job: &Job,
        task: T,
    ) -> CliResult<T::Output> {
        let world = job.world().ok_or("MPI is not initialised")?;
        #[cfg(feature = "nccl")]
        if halo == HaloArg::Nccl || (halo == HaloArg::Auto && strata_mpi::nccl_available()) {
            let comm = strata_mpi::NcclComm::new(world.duplicate(), grid, self)?;
            return task.run(&comm, grid, "nccl");
        }
        #[cfg(not(feature = "nccl"))]
        if halo == HaloArg::Nccl {
            return Err("--halo nccl: this strata was built without the nccl feature".into());
        }
        let comm = MpiComm::<Self>::new(world.duplicate(), grid)?;
        task.run(&comm, grid, "mpi (host-staged)")
    }

    /// NCCL between device buffers under `nccl`, and under `auto` where it is built and found;
    /// else MPI through host buffers.
    fn with_sphere_comm<T: SphereTask<Self>>(
        &self,
        halo: HaloArg,
        job: &Job,
        k: usize,
        tiles: &[Block],
        task: T,
    ) -> CliResult<T::Output> {
        let world = job.world().ok_or("MPI is not initialised")?;
        #[cfg(feature = "nccl")]
        if halo == HaloArg::Nccl || (halo == HaloArg::Auto && strata_mpi::nccl_available()) {
            let comm = strata_mpi::SphereNcclComm::new(world.duplicate(), k, tiles, self)?;
            return task.run(&comm, "nccl");
        }
        #[cfg(not(feature = "nccl"))]
        let _ = tiles;
        #[cfg(not(feature = "nccl"))]
        if halo == HaloArg::Nccl {
            return Err("--halo nccl: this strata was built without the nccl feature".into());
        }
        task.run(
            &SphereMpiComm::<Self>::new(world.duplicate(), k),
            "mpi (host-staged)",
        )
    }
}

/// Solves of the whole problem `p` on the job's ranks over `comm`, one per configuration (the
/// right-hand side built once), for `strata reproduce scaling`; every rank gets the records.
pub fn timed_solves<B: Backend, C: Comm<B>>(
    backend: &B,
    comm: &C,
    grid: RankGrid,
    job: &Job,
    p: &ProblemParams,
    configs: &[SolverConfig],
) -> CliResult<Vec<strata::solver::SolveInfo>> {
    let Some(first) = configs.first() else {
        return Ok(vec![]);
    };
    let dec = first.validate_for(p.n, grid)?;
    let block = dec.fine_block(job.rank());
    let rhs = build_rhs(p, strata::problem::RhsKind::Random, 1, &block);
    let mut out = vec![];
    for cfg in configs {
        let sol = solve_block(backend, comm, p, block, cfg, &rhs, &mut |_, _| {})?;
        out.push(sol.info);
    }
    Ok(out)
}
