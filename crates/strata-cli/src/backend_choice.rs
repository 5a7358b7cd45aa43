//! The one place that chooses a backend at run time; everything below is monomorphised.

use crate::options::{BackendArg, BackendArgs};
use crate::CliResult;
use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::backend::Backend;
use strata_cuda::{unavailable_reason, CudaBackend};

/// Work to run on whichever backend is chosen.
pub trait BackendTask {
    /// What the work returns.
    type Output;
    /// Runs the work on `backend`.
    fn run<B: Backend>(self, backend: &B) -> CliResult<Self::Output>;
}

/// Runs `task` on the backend `args` asks for.
pub fn with_backend<T: BackendTask>(args: &BackendArgs, task: T) -> CliResult<T::Output> {
    match args.backend {
        BackendArg::Auto => match unavailable_reason() {
            None => task.run(&CudaBackend::new(args.device)?),
            Some(why) => {
                eprintln!("note: no usable GPU ({why}); running on the CPU");
                task.run(&CpuBackend::new(args.threads)?)
            }
        },
        BackendArg::Cpu => task.run(&CpuBackend::new(args.threads)?),
        BackendArg::Cuda => task.run(&CudaBackend::new(args.device)?),
        BackendArg::Reference => task.run(&ReferenceBackend),
    }
}
