//! The one place that chooses a backend at run time; everything below is monomorphised.

use crate::job::Job;
use crate::options::BackendArgs;
use crate::CliResult;
use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::backend::Backend;
use strata::names::BackendKind;
use strata::perf::Probes;
use strata_cuda::{unavailable_reason, CudaBackend};

/// What a backend must offer to run in an MPI job: its halo paths (nothing without MPI).
#[cfg(feature = "mpi")]
pub use crate::comm_choice::HaloPaths as Distributable;

/// What a backend must offer to run in an MPI job: nothing, in a build without MPI.
#[cfg(not(feature = "mpi"))]
pub trait Distributable {}

#[cfg(not(feature = "mpi"))]
impl<B> Distributable for B {}

/// Work to run on whichever backend is chosen.
pub trait BackendTask {
    /// What the work returns.
    type Output;
    /// Runs the work on `backend`.
    fn run<B: Backend + Probes + Distributable + 'static>(
        self,
        backend: &B,
    ) -> CliResult<Self::Output>;
}

/// The CUDA device of this rank: the one asked for, or the rank's local rank modulo the devices.
fn device(args: &BackendArgs, job: &Job) -> CliResult<usize> {
    Ok(match args.device {
        Some(d) => d,
        None => job.local_rank() % strata_cuda::device_count()?.max(1),
    })
}

/// Runs `task` on the backend `args` asks for.
pub fn with_backend<T: BackendTask>(
    args: &BackendArgs,
    job: &Job,
    task: T,
) -> CliResult<T::Output> {
    match args.backend {
        BackendKind::Auto => match unavailable_reason() {
            None => task.run(&CudaBackend::new(device(args, job)?)?),
            Some(why) => {
                if job.is_root() {
                    eprintln!("note: no usable GPU ({why}); running on the CPU");
                }
                task.run(&CpuBackend::new(args.threads)?)
            }
        },
        BackendKind::Cpu => task.run(&CpuBackend::new(args.threads)?),
        BackendKind::Cuda => {
            if let Some(why) = unavailable_reason() {
                return Err(format!("--backend cuda: {why}").into());
            }
            task.run(&CudaBackend::new(device(args, job)?)?)
        }
        BackendKind::Reference => task.run(&ReferenceBackend),
    }
}
