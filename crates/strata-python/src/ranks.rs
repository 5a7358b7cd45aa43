//! A rank of a distributed solve from Python: the caller's mpi4py communicator becomes the one
//! strata talks on (a duplicate, apart from the model's own messages), as the C API's
//! `strata_solver_create_mpi` does with a Fortran handle. Only in a build with `--features mpi`;
//! MPI is the caller's to initialise (importing mpi4py does) and to finalise.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

#[cfg(feature = "mpi")]
use strata_mpi::mpi::topology::SimpleCommunicator;

/// strata's duplicate of `comm`, an mpi4py communicator (it is read through its Fortran handle,
/// `comm.py2f()`, which every MPI converts back).
#[cfg(feature = "mpi")]
pub fn duplicate(comm: &Bound<'_, PyAny>) -> PyResult<SimpleCommunicator> {
    use strata_mpi::mpi::raw::FromRaw;
    use strata_mpi::mpi::traits::Communicator;
    let handle: i32 = comm
        .call_method0("py2f")
        .and_then(|h| h.extract())
        .map_err(|_| {
            PyValueError::new_err("comm must be an mpi4py communicator (e.g. MPI.COMM_WORLD)")
        })?;
    use strata_mpi::mpi::environment::{self, Threading};
    if !environment::is_initialized() || environment::is_finalized() {
        return Err(PyValueError::new_err(
            "comm: MPI is not initialised (import mpi4py's MPI first) or already finalised",
        ));
    }
    if matches!(
        environment::threading_support(),
        Threading::Single | Threading::Funneled
    ) {
        return Err(PyValueError::new_err(
            "comm: MPI was initialised for one thread only; strata needs MPI_THREAD_SERIALIZED \
             or MULTIPLE (mpi4py's default: leave mpi4py.rc.thread_level as it is)",
        ));
    }
    // SAFETY: MPI is initialised (checked) and `handle` is the Fortran handle of a live
    // communicator of the caller's (mpi4py gave it); MPI converts it.
    let raw = unsafe { strata_mpi::mpi::ffi::RSMPI_Comm_f2c(handle) };
    // SAFETY: a live communicator of the caller's; the wrapper is forgotten below, so it is
    // never freed here.
    let theirs = unsafe { SimpleCommunicator::from_raw(raw) };
    let ours = theirs.duplicate();
    std::mem::forget(theirs);
    Ok(ours)
}

/// The error for `comm` given to a strata built without MPI.
#[cfg(not(feature = "mpi"))]
pub fn unavailable() -> PyErr {
    PyValueError::new_err(
        "comm: this strata was built without MPI (build the package with maturin's \
         --features mpi, against the MPI that mpi4py uses)",
    )
}

/// Whether MPI has been finalised: a solver of ranks dropped after that (at interpreter exit,
/// after `MPI.Finalize()`) must not free its communicator.
pub fn finalized() -> bool {
    #[cfg(feature = "mpi")]
    {
        strata_mpi::mpi::environment::is_finalized()
    }
    #[cfg(not(feature = "mpi"))]
    {
        false
    }
}
