//! The solver handle held by a Python `strata.Solver`, made `Send` and `Sync` for PyO3.

use strata_session::Solver;

/// The one solver handle of a `strata.Solver` ([`strata_session::open`]).
///
/// PyO3 needs the object's contents to be `Send` and `Sync`; a `Box<dyn Solver>` says neither,
/// as a rank's communicator holds MPI handles (raw pointers in Open MPI) that Rust cannot know to
/// be movable between threads. The handles held here are:
/// - one process (no communicator, or the sphere's in-process one): the CPU, reference and
///   CUDA sessions are `Send` and `Sync` (checked at compile time by `sessions_are_send_sync`
///   below);
/// - one rank: strata refuses an MPI initialised below `MPI_THREAD_SERIALIZED`
///   (`ranks::duplicate`), so MPI may be called from any thread one at a time, and one at a
///   time is what the Python object grants: every call that communicates takes `&mut` through
///   PyO3's borrow of the object (a second concurrent call is refused), and releasing the GIL
///   runs the call on the calling thread. The `&self` methods of `Solver` read only the
///   solver's problem, configuration and blocks, never the communicator.
pub struct Held(pub Box<dyn Solver>);

// SAFETY: see the type's documentation: the sessions of one process are Send, and a rank's MPI
// is initialised at least serialized, every communicating call holding the exclusive borrow.
unsafe impl Send for Held {}
// SAFETY: shared references reach only plain data of the solver (problem, configuration,
// blocks, set-up times), never a communicator's handles or buffers.
unsafe impl Sync for Held {}

impl std::ops::Deref for Held {
    type Target = dyn Solver;
    fn deref(&self) -> &(dyn Solver + 'static) {
        self.0.as_ref()
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut (dyn Solver + 'static) {
        self.0.as_mut()
    }
}

/// The sessions of one process are `Send` and `Sync` without help (the claim `Held` relies on).
#[allow(dead_code)]
fn sessions_are_send_sync() {
    use strata::backend::cpu::CpuBackend;
    use strata::backend::reference::ReferenceBackend;
    use strata::backend::tiled::Tiled;
    use strata::comm::{SerialComm, SphereComm};
    use strata::session::Session;
    use strata_cuda::CudaBackend;
    fn is<T: Send + Sync>() {}
    is::<Session<CpuBackend, SerialComm>>();
    is::<Session<ReferenceBackend, SerialComm>>();
    is::<Session<CudaBackend, SerialComm>>();
    is::<Session<Tiled<Box<CpuBackend>>, SphereComm>>();
    is::<Session<Tiled<Box<ReferenceBackend>>, SphereComm>>();
    is::<Session<Tiled<Box<CudaBackend>>, SphereComm>>();
}

impl Held {
    /// Runs `f` with the solver's device-array calls; an error for a solver on the CPU (the
    /// callers check [`Solver::device`] first, to name the array).
    pub fn on_device<T>(
        &mut self,
        f: impl FnOnce(&mut dyn strata_cuda::DeviceHandle) -> strata::Result<T>,
    ) -> strata::Result<T> {
        match self.0.device() {
            Some(d) => f(d),
            None => Err(strata::StrataError::invalid(
                "solver",
                "runs on the CPU: device arrays need backend='cuda'",
            )),
        }
    }
}
