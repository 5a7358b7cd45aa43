//! The multigrid hierarchy: per level the prepared operator and the fields u, f and one work
//! field (the residual, and the out-of-place smoother's second buffer).

use super::MgParams;
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::{invalid, Result};
use crate::stencil::LevelStencil;

/// One level's operator and fields. The block-Jacobi smoother is out of place: it writes `work`
/// and the two are swapped, which needs no second kernel to avoid the race on u. The residual
/// lives in `work` too: in a V-cycle it is written after the pre-smoothing (whose swap left the
/// old iterate there, dead) and read by the next level's restriction before the post-smoothing
/// writes `work` again (three fields per level, not four: docs/PERFORMANCE.md, memory).
pub struct MgLevel<B: Backend> {
    /// The level's prepared stencil.
    pub op: B::LevelOp,
    /// Current iterate (the correction on coarse levels).
    pub u: B::Field,
    /// The residual, and the second buffer of the out-of-place smoother.
    pub work: B::Field,
    /// Right-hand side (the restricted residual on coarse levels).
    pub f: B::Field,
}

/// The levels, finest first, and the multigrid parameters.
pub struct Hierarchy<B: Backend> {
    /// Levels, 0 = finest.
    pub levels: Vec<MgLevel<B>>,
    /// Parameters.
    pub params: MgParams,
}

impl<B: Backend> Hierarchy<B> {
    /// Prepares `params.n_levels` levels from `stencils` (finest first).
    pub fn new(b: &B, stencils: &[LevelStencil], params: MgParams) -> Result<Self> {
        params.validate()?;
        if stencils.len() < params.n_levels {
            return invalid(
                "levels",
                format!(
                    "= {}: multigrid needs as many level stencils, {} were built",
                    params.n_levels,
                    stencils.len()
                ),
            );
        }
        let levels = stencils[..params.n_levels]
            .iter()
            .map(|s| {
                let op = b.prepare_level(s)?;
                Ok(MgLevel {
                    u: b.alloc(&op)?,
                    work: b.alloc(&op)?,
                    f: b.alloc(&op)?,
                    op,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { levels, params })
    }

    /// Prepares every level's operator again from `stencils` (new coefficients or ω on the same
    /// grids), keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        // Every new operator first, so that a failure leaves the old ones in place.
        let ops = stencils[..self.levels.len()]
            .iter()
            .map(|s| b.prepare_level(s))
            .collect::<Result<Vec<_>>>()?;
        for (l, op) in self.levels.iter_mut().zip(ops) {
            l.op = op;
        }
        Ok(())
    }

    /// Exchanges the halo of every level's `u` once (see [`crate::solver::Solver::prepare_comm`]).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        for l in &mut self.levels {
            comm.prepare(b, &l.op)?;
            comm.exchange(b, &l.op, &mut l.u)?;
        }
        Ok(())
    }
}
