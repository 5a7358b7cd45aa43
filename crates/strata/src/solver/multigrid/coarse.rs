//! The coarsest level's solve (docs/MODEL.md §9.4): smoothing steps (the paper's), or
//! preconditioned CG with vertical line relaxation to a relative tolerance, so that the cycle's
//! contraction no longer depends on how coarse the coarsest level is (how many levels there are,
//! how many steps it takes).

use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::{invalid, Result};
use crate::solver::profile::{Kernel, Timer};
use serde::{Deserialize, Serialize};

/// How the coarsest level is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoarseSolve {
    /// `coarse_steps` smoothing steps (the paper's; the default).
    #[default]
    Smooth,
    /// Preconditioned CG (line relaxation) from the restriction's smoothed guess until the
    /// coarse residual falls below `coarse_rtol` of its start (at most
    /// [`COARSE_MAX_IT`] iterations): symmetric operators only.
    Cg,
}

impl crate::names::Choice for CoarseSolve {
    const SETTING: &'static str = "coarse_solve";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (CoarseSolve::Smooth, "smooth", 0),
        (CoarseSolve::Cg, "cg", 1),
    ];
}

/// The most CG iterations of one coarse solve.
pub const COARSE_MAX_IT: usize = 200;

/// Default relative tolerance of the coarse CG.
pub const DEFAULT_COARSE_RTOL: f64 = 1e-3;

/// Checks a coarse tolerance: in (0, 1).
pub(crate) fn check_rtol(rtol: f64) -> Result<()> {
    if !(rtol.is_finite() && rtol > 0.0 && rtol < 1.0) {
        return invalid("coarse_rtol", format!("must be in (0, 1) (got {rtol})"));
    }
    Ok(())
}

/// The coarse CG's workspace on the coarsest level: residual, preconditioned residual, search
/// direction and its image.
pub(crate) struct CoarseCg<B: Backend> {
    r: B::Field,
    z: B::Field,
    p: B::Field,
    q: B::Field,
}

impl<B: Backend> CoarseCg<B> {
    /// The workspace for the coarsest level `op`.
    pub(crate) fn new(b: &B, op: &B::LevelOp) -> Result<Self> {
        Ok(Self {
            r: b.alloc(op)?,
            z: b.alloc(op)?,
            p: b.alloc(op)?,
            q: b.alloc(op)?,
        })
    }

    /// Prepares the communicator's buffers for the level (once, at set-up).
    pub(crate) fn prepare_comm<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        op: &B::LevelOp,
    ) -> Result<()> {
        comm.exchange(b, op, &mut self.p)
    }

    /// Solves A u = f on the coarsest level `lev` (operator `op`) from the guess in `u` (its
    /// halo current) until ‖r‖ ≤ `rtol` ‖r₀‖ or [`COARSE_MAX_IT`] iterations: PCG with the
    /// line relaxation M (the `cg` solver's preconditioner), each dot product summed over the
    /// ranks. `u`'s halo is left stale (the caller exchanges it as the cycle needs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn solve<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        op: &B::LevelOp,
        f: &B::Field,
        u: &mut B::Field,
        rtol: f64,
    ) -> Result<()> {
        let Self { r, z, p, q } = self;
        timer.run(b, Kernel::Residual, lev, || b.residual(op, f, u, r))?;
        timer.run(b, Kernel::Smooth, lev, || b.line_solve(op, r, z))?;
        let mut s = [b.dot(op, r, z)?, b.dot(op, r, r)?];
        comm.sum(&mut s)?;
        let [mut rz, rr0] = s;
        if !(rr0 > 0.0 && rz.is_finite()) {
            return Ok(());
        }
        timer.run(b, Kernel::Vector, lev, || b.copy(op, z, p))?;
        for _ in 0..COARSE_MAX_IT {
            timer.run(b, Kernel::Halo, lev, || comm.exchange(b, op, p))?;
            timer.run(b, Kernel::Residual, lev, || b.apply(op, p, q))?;
            let mut pq = [b.dot(op, p, q)?];
            comm.sum(&mut pq)?;
            // A breakdown (a singular direction, or rounding at the solution): stop here.
            if !(pq[0] > 0.0 && pq[0].is_finite()) {
                break;
            }
            let alpha = rz / pq[0];
            timer.run(b, Kernel::Vector, lev, || b.axpy(op, alpha, p, u))?;
            timer.run(b, Kernel::Vector, lev, || b.axpy(op, -alpha, q, r))?;
            timer.run(b, Kernel::Smooth, lev, || b.line_solve(op, r, z))?;
            let mut s = [b.dot(op, r, z)?, b.dot(op, r, r)?];
            comm.sum(&mut s)?;
            if s[1] <= rtol * rtol * rr0 || s[0].is_nan() || s[0] <= 0.0 {
                break;
            }
            let beta = s[0] / rz;
            rz = s[0];
            timer.run(b, Kernel::Vector, lev, || b.xpby(op, z, beta, p))?;
        }
        Ok(())
    }
}
