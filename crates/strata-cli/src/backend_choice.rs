//! The one place that chooses a backend at run time; everything below is monomorphised.

use crate::options::{BackendArg, BackendArgs};
use crate::CliResult;
use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::backend::Backend;

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
        BackendArg::Auto | BackendArg::Cpu => {
            let b = CpuBackend::new(args.threads)?;
            task.run(&b)
        }
        BackendArg::Reference => task.run(&ReferenceBackend),
    }
}
