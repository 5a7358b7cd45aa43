//! The command line's flags made into a [`Place`]; the backend and the ranks' communicator are
//! chosen by `strata-session` (the one match of the workspace), everything below is
//! monomorphised.

use crate::job::Job;
use crate::options::BackendArgs;
use crate::CliResult;
use strata::names::BackendKind;
use strata_session::{OnBackend, Place};

/// Work to run on whichever backend is chosen.
pub trait BackendTask {
    /// What the work returns.
    type Output;
    /// Runs the work on `backend`.
    fn run<B: OnBackend>(self, backend: Box<B>) -> CliResult<Self::Output>;
}

/// Where `args` and the job place this rank: backend, threads, and the CUDA device (the one
/// asked for, or the rank's local rank modulo the devices).
pub fn place(args: &BackendArgs, job: &Job) -> Place {
    let device = args.device.unwrap_or_else(|| {
        let devices = match args.backend {
            BackendKind::Cuda | BackendKind::Auto => strata_cuda::device_count().unwrap_or(1),
            _ => 1,
        };
        job.local_rank() % devices.max(1)
    });
    Place::new(args.backend)
        .with_threads(args.threads)
        .with_device(device)
}

/// Runs `task` on the backend `args` asks for (`auto` without a usable GPU says why on the
/// root's stderr, then runs on the CPU).
pub fn with_backend<T: BackendTask>(
    args: &BackendArgs,
    job: &Job,
    task: T,
) -> CliResult<T::Output> {
    if args.backend == BackendKind::Auto && job.is_root() {
        if let Some(why) = strata_cuda::unavailable_reason() {
            eprintln!("note: no usable GPU ({why}); running on the CPU");
        }
    }
    strata_session::with_backend(&place(args, job), Adapt(task))?
}

/// A command's task as `strata-session`'s: the command's errors travel inside the output.
struct Adapt<T>(T);

impl<T: BackendTask> strata_session::BackendTask for Adapt<T> {
    type Output = CliResult<T::Output>;

    fn run<B: OnBackend>(self, backend: Box<B>) -> strata::Result<Self::Output> {
        Ok(self.0.run(backend))
    }
}

/// This rank's place in the job's communicator (a duplicate of the world), halos by `halo`,
/// a panel or box split over `grid` (`None`: the most nearly square grid).
#[cfg(feature = "mpi")]
pub fn ranks(
    job: &Job,
    halo: strata::names::HaloPath,
    grid: Option<strata::grid::RankGrid>,
) -> CliResult<Place> {
    use strata_mpi::mpi::traits::Communicator;
    let world = job.world().ok_or("MPI is not initialised")?;
    Ok(Place::new(BackendKind::Auto)
        .with_halo(halo)
        .with_grid(grid)
        .with_comm(world.duplicate()))
}

/// How a report names the halo path `halo` of backend `B`'s ranks.
#[cfg(feature = "mpi")]
pub fn halo_label<B: OnBackend>(halo: strata::names::HaloPath) -> String {
    use strata::names::Choice;
    if B::KIND == BackendKind::Cuda && halo == strata::names::HaloPath::Mpi {
        return "mpi (host-staged)".into();
    }
    halo.name().into()
}
