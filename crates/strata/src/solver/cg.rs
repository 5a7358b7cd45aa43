//! PCG with vertical line relaxation in the paper's fused two-kernel form (docs/MODEL.md §8.2).

use super::monitor::Monitor;
use super::profile::{Kernel, Timer};
use super::{SolveInfo, SolveParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::stencil::LevelStencil;
use std::time::Instant;

/// Fused PCG: per iteration one SpMV kernel (u, p, q updates and ⟨p, q⟩) and one Tridiag kernel
/// (r update, line solve, ⟨r, r⟩ and ⟨r, z⟩), one halo exchange (of z) and one allreduce of each.
pub struct Cg<B: Backend> {
    op: B::LevelOp,
    r: B::Field,
    z: B::Field,
    p: B::Field,
    q: B::Field,
}

impl<B: Backend> Cg<B> {
    /// Prepares the level and allocates the workspace r, z, p, q.
    pub fn new(backend: &B, stencil: &LevelStencil) -> Result<Self> {
        let op = backend.prepare_level(stencil)?;
        Ok(Self {
            r: backend.alloc(&op)?,
            z: backend.alloc(&op)?,
            p: backend.alloc(&op)?,
            q: backend.alloc(&op)?,
            op,
        })
    }

    /// The prepared fine level.
    /// Prepares the operator again from `stencil` (new coefficients or ω on the same grid),
    /// keeping the workspace.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        self.op = b.prepare_level(&stencils[0])?;
        Ok(())
    }

    /// The prepared level (see above for its documentation).
    pub fn level(&self) -> &B::LevelOp {
        &self.op
    }

    /// Exchanges the halo of the search direction's preconditioned field once (see
    /// [`super::Solver::prepare_comm`]).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        comm.prepare(b, &self.op)?;
        comm.exchange(b, &self.op, &mut self.z)
    }

    /// Solves A u = f from the initial guess in `u`.
    pub fn solve<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        f: &B::Field,
        u: &mut B::Field,
        params: &SolveParams,
        monitor: &mut dyn FnMut(usize, f64),
    ) -> Result<SolveInfo> {
        let start = Instant::now();
        let mut timer = Timer::new(params.profile, 1);
        let Self { op, r, z, p, q } = self;
        let op = &*op;

        // r = f − A u (with the guess's halo: a caller sets only the interior, and a halo left
        // from another use of the field, an earlier apply, must not enter); z = M⁻¹ r;
        // κ = ⟨r, z⟩; p = q = 0.
        comm.exchange(b, op, u)?;
        let mut s = [
            timer.run(b, Kernel::Residual, 0, || b.residual(op, f, u, r))?,
            0.0,
            b.dot(op, f, f)?,
        ];
        b.line_solve(op, r, z)?;
        s[1] = b.dot(op, r, z)?;
        comm.sum(&mut s)?;
        timer.run(b, Kernel::Halo, 0, || comm.exchange(b, op, z))?;
        b.fill(op, p, 0.0)?;
        b.fill(op, q, 0.0)?;
        let mut kappa = s[1];
        let mut mon = Monitor::new(params, s[0], s[2], monitor);
        let (mut alpha, mut beta) = (0.0, 0.0);
        let mut it = 0;
        let reason = if let Some(reason) = mon.initial() {
            reason
        } else {
            loop {
                it += 1;
                let mut sigma = [timer.run(b, Kernel::Spmv, 0, || {
                    b.cg_spmv(op, z, u, p, q, alpha, beta)
                })?];
                comm.sum(&mut sigma)?;
                if let Some(reason) = Monitor::curvature(sigma[0]) {
                    break reason;
                }
                alpha = kappa / sigma[0];
                let mut rr_rz =
                    timer.run(b, Kernel::Tridiag, 0, || b.cg_tridiag(op, q, r, z, alpha))?;
                comm.sum(&mut rr_rz)?;
                timer.run(b, Kernel::Halo, 0, || comm.exchange(b, op, z))?;
                if let Some(reason) = mon.step(it, rr_rz[0]) {
                    // The delayed update of u for the last step.
                    b.axpy(op, alpha, p, u)?;
                    break reason;
                }
                beta = rr_rz[1] / kappa;
                kappa = rr_rz[1];
            }
        };
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(mon.finish(reason, it, seconds, timer.into_profile()))
    }
}
