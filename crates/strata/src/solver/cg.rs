//! PCG with vertical line relaxation in the paper's fused two-kernel form (docs/MODEL.md §8.2).

use super::monitor::Monitor;
use super::profile::{Kernel, Timer};
use super::slots::*;
use super::{SolveInfo, SolveParams};
use crate::backend::{Backend, Coef, ScalarOp};
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
    /// κ, σ, α, β, ‖r‖², ⟨r, z⟩ (solver/slots.rs) in the backend's memory.
    sc: B::Scalars,
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
            sc: backend.alloc_scalars(CG_SLOTS)?,
            op,
        })
    }

    /// The prepared fine level.
    /// Prepares the operator again from `stencil` (new coefficients or ω on the same grid),
    /// keeping the workspace.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        crate::backend::replace_levels(b, vec![&mut self.op], &stencils[..1])
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
        let Self { op, r, z, p, q, sc } = self;
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
        // κ, and α = β = 0 for the first SpMV.
        b.write_scalars(sc, 0, &[s[1], 0.0, 0.0, 0.0])?;
        let mut mon = Monitor::new(params, s[0], s[2], monitor);
        let mut it = 0;
        let (alpha, beta) = (Coef::slot(1.0, ALPHA), Coef::slot(1.0, BETA));
        let reason = if let Some(reason) = mon.initial() {
            reason
        } else {
            // The scalars stay in the backend's memory; the host reads σ and ‖r‖² once per
            // iteration, for the stopping test.
            loop {
                it += 1;
                timer.run(b, Kernel::Spmv, 0, || {
                    b.cg_spmv_slots(op, z, u, p, q, sc, (alpha, beta), SIGMA)
                })?;
                comm.sum_slots(b, sc, SIGMA, 1)?;
                b.scalar_ops(sc, &[step_length()])?;
                timer.run(b, Kernel::Tridiag, 0, || {
                    b.cg_tridiag_slots(op, q, r, z, sc, alpha, RR)
                })?;
                comm.sum_slots(b, sc, RR, 2)?;
                timer.run(b, Kernel::Halo, 0, || comm.exchange(b, op, z))?;
                // β = ⟨r', z'⟩ / κ and κ = ⟨r', z'⟩ (unused if the iteration stops here).
                b.scalar_ops(
                    sc,
                    &[ScalarOp::ratio(BETA, RZ, KAPPA), ScalarOp::copy(KAPPA, RZ)],
                )?;
                let mut v = [0.0; CG_SLOTS];
                b.read_scalars(sc, &mut v)?;
                if let Some(reason) = Monitor::curvature(v[SIGMA]) {
                    break reason;
                }
                if let Some(reason) = mon.step(it, v[RR]) {
                    // The delayed update of u for the last step.
                    b.axpy_slots(op, alpha, p, u, sc)?;
                    break reason;
                }
            }
        };
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(mon.finish(reason, it, seconds, timer.into_profile()))
    }
}
