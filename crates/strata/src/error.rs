//! Typed errors of the library.

use std::path::PathBuf;

/// Everything that can go wrong outside the numerics. Non-convergence is not an error unless
/// asked for ([`crate::solver::SolveParams::error_if_not_converged`]): it is a
/// [`crate::solver::ConvergedReason`] in the solve's [`crate::solver::SolveInfo`].
#[derive(Debug, thiserror::Error)]
pub enum StrataError {
    /// A parameter is out of its valid range: `name` is the library's name of it (the field of
    /// [`crate::problem::ProblemParams`], [`crate::solver::SolverConfig`], ...), `msg` says
    /// why, written to follow the name ("must be at least 1 (got 0)"). Front ends map `name` to
    /// their own spelling of it (the command line to its flag).
    #[error("invalid parameter: {name} {msg}")]
    InvalidParameter {
        /// The parameter.
        name: String,
        /// Why it is invalid, to be read after the name.
        msg: String,
    },
    /// The problem would not fit in the memory that is available.
    #[error(
        "{what} needs about {:.2} GiB ({needed} bytes) but only {:.2} GiB ({available} bytes) are available",
        *needed as f64 / GIB,
        *available as f64 / GIB
    )]
    OutOfMemory {
        /// What was to be allocated (e.g. "cg on 4096x4096x128").
        what: String,
        /// Bytes that would be needed.
        needed: u64,
        /// Bytes that are available.
        available: u64,
    },
    /// A NetCDF file could not be read or written, or does not hold what is expected.
    #[error("NetCDF file {}: {msg}", path.display())]
    NetCdf {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    /// A backend failed (a device error, a kernel compile error, ...).
    #[error("backend {backend}: {msg}")]
    Backend {
        /// The backend's name.
        backend: String,
        /// The cause, with any log the backend provides.
        msg: String,
    },
    /// A communication failure between ranks.
    #[error("communication: {0}")]
    Comm(String),
    /// A solve did not converge and the configuration makes that an error
    /// ([`crate::solver::SolveParams::error_if_not_converged`], PETSc's
    /// `-ksp_error_if_not_converged`); the solution array holds the last iterate.
    #[error(
        "the solve did not converge ({reason}) in {iterations} iterations: relative residual {relative_residual:.3e}, rtol {rtol:e}"
    )]
    NotConverged {
        /// Why it stopped ([`crate::solver::ConvergedReason`]'s name).
        reason: String,
        /// Iterations run.
        iterations: usize,
        /// ‖f − A u₀‖₂.
        r0: f64,
        /// The final relative residual.
        relative_residual: f64,
        /// Seconds in the solver.
        seconds: f64,
        /// The tolerance asked for.
        rtol: f64,
    },
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The library's result type.
pub type Result<T> = std::result::Result<T, StrataError>;

impl StrataError {
    /// An [`StrataError::InvalidParameter`] error.
    pub fn invalid(name: impl Into<String>, msg: impl Into<String>) -> Self {
        StrataError::InvalidParameter {
            name: name.into(),
            msg: msg.into(),
        }
    }
}

/// Shorthand for an [`StrataError::InvalidParameter`] result.
pub(crate) fn invalid<T>(name: &str, msg: impl Into<String>) -> Result<T> {
    Err(StrataError::invalid(name, msg))
}
