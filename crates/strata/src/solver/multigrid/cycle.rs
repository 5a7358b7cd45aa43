//! The V-cycle of docs/MODEL.md §9.2 with the paper's fused kernels; level 0 is the finest.

use super::Hierarchy;
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::solver::profile::{Kernel, Timer};

/// Where the fine level's first smoothing step starts.
pub(crate) enum Start<'a, B: Backend> {
    /// From the current iterate `u` (multigrid as a solver).
    Current,
    /// From zero, given as a field of zeros (multigrid as a preconditioner).
    Zero(&'a B::Field),
}

impl<B: Backend> Hierarchy<B> {
    /// One V(1,1)-cycle from level `lev` down: the paper's Algorithm 1 (docs/MODEL.md §9.2),
    /// with its fused kernels. Level 0 is the finest; every coarser level starts from zero.
    pub(crate) fn vcycle<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        start: Start<'_, B>,
    ) -> Result<()> {
        // Down: pre-smooth. A coarser level restricts the finer residual and smooths from zero
        // in one kernel (RestrictSmooth).
        match (lev, start) {
            (0, Start::Current) => self.smooth(b, comm, timer, 0)?,
            (0, Start::Zero(zero)) => self.smooth_from_zero(b, comm, timer, zero)?,
            _ => self.restrict_smooth(b, comm, timer, lev)?,
        }
        if lev == self.levels.len() - 1 {
            // Coarsest: the remaining smoothing steps are the coarse solve.
            for _ in 1..self.params.coarse_steps {
                self.smooth(b, comm, timer, lev)?;
            }
            return Ok(());
        }
        self.residual(b, timer, lev)?;
        // Recursion: the coarse-level correction.
        self.vcycle(b, comm, timer, lev + 1, Start::Current)?;
        // Up: add the interpolated correction, post-smooth.
        self.prolongate(b, comm, timer, lev)?;
        self.smooth(b, comm, timer, lev)
    }

    /// z ← V(r): one V-cycle on A z = r from z = 0 (the preconditioner of mg-cg). `zero` is a
    /// fine field of zeros (halo included), the smoother's input for the zero initial guess.
    pub(crate) fn precondition<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        r: &mut B::Field,
        z: &mut B::Field,
        zero: &B::Field,
    ) -> Result<()> {
        std::mem::swap(r, &mut self.levels[0].f);
        let cycle = self.vcycle(b, comm, timer, 0, Start::Zero(zero));
        std::mem::swap(r, &mut self.levels[0].f);
        std::mem::swap(z, &mut self.levels[0].u);
        cycle
    }

    /// u₀ ← ρ M⁻¹ f₀ (a smoothing step from zero on the finest level), and its halo.
    fn smooth_from_zero<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        zero: &B::Field,
    ) -> Result<()> {
        let rho = self.params.rho;
        let l = &mut self.levels[0];
        timer.run(b, Kernel::Smooth, 0, || {
            b.smooth(&l.op, &l.f, zero, &mut l.u, rho)
        })?;
        timer.run(b, Kernel::Halo, 0, || comm.exchange(b, &l.op, &mut l.u))
    }

    /// r_lev ← f_lev − A u_lev (no halo: the restriction reads the interior only).
    fn residual(&mut self, b: &B, timer: &mut Timer, lev: usize) -> Result<()> {
        let l = &mut self.levels[lev];
        timer.run(b, Kernel::Residual, lev, || {
            b.residual(&l.op, &l.f, &l.u, &mut l.r)
        })?;
        Ok(())
    }

    /// u_lev ← u_lev + P u_{lev+1}, and the halo of u_lev.
    fn prolongate<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
    ) -> Result<()> {
        let (this, coarser) = self.levels.split_at_mut(lev + 1);
        let (l, c) = (&mut this[lev], &coarser[0]);
        timer.run(b, Kernel::Prolongate, lev, || {
            b.prolongate(&c.op, &l.op, &c.u, &mut l.u)
        })?;
        timer.run(b, Kernel::Halo, lev, || comm.exchange(b, &l.op, &mut l.u))
    }

    /// f_lev ← R r_{lev−1}; u_lev ← ρ M⁻¹ f_lev, and the halo of u_lev.
    fn restrict_smooth<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
    ) -> Result<()> {
        let (rho, scale) = (self.params.rho, self.params.restriction.scale());
        let (finer, this) = self.levels.split_at_mut(lev);
        let (fine, l) = (&finer[lev - 1], &mut this[0]);
        timer.run(b, Kernel::RestrictSmooth, lev, || {
            b.restrict_smooth(&fine.op, &l.op, &fine.r, &mut l.f, &mut l.u, rho, scale)
        })?;
        timer.run(b, Kernel::Halo, lev, || comm.exchange(b, &l.op, &mut l.u))
    }

    /// u ← u + ρ M⁻¹ (f − A u) on level `lev` (out of place, then swapped), and its halo.
    fn smooth<C: Comm<B>>(&mut self, b: &B, comm: &C, timer: &mut Timer, lev: usize) -> Result<()> {
        let rho = self.params.rho;
        let l = &mut self.levels[lev];
        timer.run(b, Kernel::Smooth, lev, || {
            b.smooth(&l.op, &l.f, &l.u, &mut l.u_alt, rho)
        })?;
        std::mem::swap(&mut l.u, &mut l.u_alt);
        timer.run(b, Kernel::Halo, lev, || comm.exchange(b, &l.op, &mut l.u))
    }
}
