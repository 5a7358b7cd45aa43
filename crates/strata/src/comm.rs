//! Communicators: halo exchange and global sums between the ranks of a decomposition.
//!
//! The solvers call [`Comm::exchange`] where the paper exchanges halos (after Tridiag in CG;
//! after every multigrid kernel but Residual) and [`Comm::sum`] for every global reduction.
//! [`SerialComm`] is the single-process communicator: the halo keeps its Dirichlet zeros and sums
//! are local.

use crate::backend::Backend;
use crate::error::Result;

/// Halo exchange and global reductions.
pub trait Comm {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Fills the halo of `x` with the neighbouring ranks' boundary values (the physical boundary
    /// keeps its zeros).
    fn exchange<B: Backend>(&self, backend: &B, lev: &B::Level, x: &mut B::Field) -> Result<()>;
    /// Replaces each value by its sum over all ranks.
    fn sum(&self, values: &mut [f64]) -> Result<()>;
    /// Returns once every rank has called it (a sum of nothing).
    fn barrier(&self) -> Result<()> {
        self.sum(&mut [0.0])
    }
}

/// The communicator of a single process.
#[derive(Debug, Default, Clone, Copy)]
pub struct SerialComm;

impl Comm for SerialComm {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn exchange<B: Backend>(&self, _b: &B, _lev: &B::Level, _x: &mut B::Field) -> Result<()> {
        Ok(())
    }

    fn sum(&self, _values: &mut [f64]) -> Result<()> {
        Ok(())
    }
}
