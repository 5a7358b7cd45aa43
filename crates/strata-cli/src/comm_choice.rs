//! The one place that chooses how an MPI job's ranks talk (NCCL or MPI halos); everything below
//! is monomorphised over the communicator.

use crate::job::Job;
use crate::solve::HaloArg;
use crate::CliResult;
use strata::backend::Backend;
use strata::comm::Comm;
use strata::grid::RankGrid;
use strata::problem::{build_rhs, ProblemParams};
use strata::solve_block;
use strata::solver::SolverConfig;
use strata_mpi::mpi::traits::*;
use strata_mpi::MpiComm;

/// Work to run over the job's communicator, whichever halo path was chosen.
pub trait CommTask {
    /// What the work returns.
    type Output;
    /// Runs the work over `comm` on the rank grid `grid`; `halo` names the path for reports.
    fn run<C: Comm>(self, comm: &C, grid: RankGrid, halo: &str) -> CliResult<Self::Output>;
}

/// Builds the communicator of the job for `halo` (NCCL for CUDA ranks under `auto` when built
/// and found, else MPI, through host buffers for device fields) and runs `task` over it.
pub fn with_comm<B: Backend + 'static, T: CommTask>(
    halo: HaloArg,
    grid: RankGrid,
    backend: &B,
    job: &Job,
    task: T,
) -> CliResult<T::Output> {
    let world = job.world().ok_or("MPI is not initialised")?;
    let cuda = (backend as &dyn std::any::Any).downcast_ref::<strata_cuda::CudaBackend>();
    match (halo, cuda) {
        (HaloArg::Mpi, _) | (HaloArg::Auto, None) => {}
        (HaloArg::Nccl, None) => return Err("--halo nccl needs the CUDA backend".into()),
        #[cfg(feature = "nccl")]
        (HaloArg::Nccl, Some(c)) => {
            let comm = strata_mpi::NcclComm::new(world.duplicate(), grid, c)?;
            return task.run(&comm, grid, "nccl");
        }
        #[cfg(feature = "nccl")]
        (HaloArg::Auto, Some(c)) if strata_mpi::nccl_available() => {
            let comm = strata_mpi::NcclComm::new(world.duplicate(), grid, c)?;
            return task.run(&comm, grid, "nccl");
        }
        #[cfg(not(feature = "nccl"))]
        (HaloArg::Nccl, Some(_)) => {
            return Err("--halo nccl: this strata was built without the nccl feature".into())
        }
        (HaloArg::Auto, Some(_)) => {}
    }
    let comm = MpiComm::new(world.duplicate(), grid)?;
    let name = if cuda.is_some() {
        "mpi (host-staged)"
    } else {
        "mpi"
    };
    task.run(&comm, grid, name)
}

/// Solves of the whole problem `p` on the job's ranks over `comm`, one per configuration (the
/// right-hand side built once), for `strata reproduce scaling`; every rank gets the records.
pub fn timed_solves<B: Backend, C: Comm>(
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
