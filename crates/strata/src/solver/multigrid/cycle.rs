//! The V-cycle of docs/MODEL.md §9.2 with the paper's fused kernels; level 0 is the finest.

use super::Hierarchy;
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::solver::profile::{Kernel, Timer};

impl<B: Backend> Hierarchy<B> {
    /// One V(1,1)-cycle on level `lev`. Level 0 pre-smooths its current u; a coarser level starts
    /// from zero with the fused RestrictSmooth of the finer level's residual.
    pub(crate) fn vcycle<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
    ) -> Result<()> {
        if lev == 0 {
            self.smooth(b, comm, timer, 0)?;
        } else {
            self.restrict_smooth(b, comm, timer, lev)?;
        }
        self.finish_cycle(b, comm, timer, lev)
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
        let rho = self.params.rho;
        std::mem::swap(r, &mut self.levels[0].f);
        let l = &mut self.levels[0];
        let first = timer
            .run(b, Kernel::Smooth, 0, || {
                b.smooth(&l.op, &l.f, zero, &mut l.u, rho)
            })
            .and_then(|_| timer.run(b, Kernel::Halo, 0, || comm.exchange(b, &l.op, &mut l.u)))
            .and_then(|_| self.finish_cycle(b, comm, timer, 0));
        std::mem::swap(r, &mut self.levels[0].f);
        std::mem::swap(z, &mut self.levels[0].u);
        first
    }

    /// The rest of a V-cycle after its first smoothing step on `lev`.
    fn finish_cycle<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
    ) -> Result<()> {
        if lev == self.levels.len() - 1 {
            for _ in 1..self.params.coarse_steps {
                self.smooth(b, comm, timer, lev)?;
            }
            return Ok(());
        }
        {
            let l = &mut self.levels[lev];
            timer.run(b, Kernel::Residual, lev, || {
                b.residual(&l.op, &l.f, &l.u, &mut l.r)
            })?;
        }
        self.vcycle(b, comm, timer, lev + 1)?;
        {
            let (this, coarser) = self.levels.split_at_mut(lev + 1);
            let (l, c) = (&mut this[lev], &coarser[0]);
            timer.run(b, Kernel::Prolongate, lev, || {
                b.prolongate(&c.op, &l.op, &c.u, &mut l.u)
            })?;
            timer.run(b, Kernel::Halo, lev, || comm.exchange(b, &l.op, &mut l.u))?;
        }
        self.smooth(b, comm, timer, lev)
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
