//! The V-cycle of docs/MODEL.md §9.2 with the paper's fused kernels; level 0 is the finest. The
//! cycle names no smoother: it calls the configured one through [`super::smoother::Smooth`].

use super::smoother::{strategy, Smooth};
use super::sweep::{exchange, parts, Halo, Sweep};
use super::Hierarchy;
use crate::backend::Backend;
use crate::comm::{Comm, SerialComm};
use crate::error::Result;
use crate::solver::profile::{Kernel, Timer};

/// Where the fine level's first smoothing step starts.
pub(crate) enum Start<'a, B: Backend> {
    /// From the current iterate `u` (multigrid as a solver).
    Current,
    /// From zero, given as a field of zeros (multigrid as a preconditioner).
    Zero(&'a B::Field),
    /// From the restriction's fused first smoothing step, already in the level's f and u (the
    /// first of the levels gathered whole onto every rank: [`Hierarchy::telescoped`]).
    Restricted,
}

impl<B: Backend> Hierarchy<B> {
    /// One V-cycle: the paper's Algorithm 1 (docs/MODEL.md §9.2), with its fused kernels; V(1,1)
    /// unless [`super::MgParams::pre_smooth`] or [`super::MgParams::post_smooth`] ask for more
    /// steps (the symmetric cycle sweeps its post-smoothing steps in the reverse order).
    /// Level 0 is the finest, with right-hand side `f0` (the caller's) and the caller's iterate
    /// swapped into its `u`; every coarser level starts from zero. From zero the cycle is
    /// symmetric (a preconditioner that needs it calls [`Hierarchy::precondition`], which
    /// chooses); from the current iterate (mg as a solver) it need not be, and the smoother
    /// may sweep in one order.
    pub(crate) fn vcycle<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        start: Start<'_, B>,
        f0: &B::Field,
    ) -> Result<()> {
        let symmetric = matches!(start, Start::Zero(_));
        self.cycle_from(b, comm, timer, 0, start, symmetric, false, f0)
    }

    /// The V-cycle of [`Hierarchy::vcycle`] from level `lev` down, symmetric or not; `hold`:
    /// without level `lev`'s last half-sweep ([`Hierarchy::held_colour`]).
    #[allow(clippy::too_many_arguments)]
    fn cycle_from<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        start: Start<'_, B>,
        symmetric: bool,
        hold: bool,
        f0: &B::Field,
    ) -> Result<()> {
        let sm: &dyn Smooth<B, C> = strategy(self.params.smoother);
        let relax = self.relaxation(symmetric);
        // The last exchange on a coarse level fills the corners that the prolongation into
        // the finer level's halo reads.
        let last = if lev > 0 && self.halo_sides(comm).is_some() {
            Halo::Corners
        } else {
            Halo::Faces
        };
        let coarsest = lev == self.levels.len() - 1;
        let coarse_cg = coarsest && self.coarse.is_some();
        // Coarsest: the smoothing steps after the first are the coarse solve (or CG is).
        let more = if coarsest && !coarse_cg {
            sm.coarse_count(self.params.coarse_steps.saturating_sub(1), symmetric)
        } else {
            0
        };
        let first = if coarsest && more == 0 && !coarse_cg {
            last
        } else {
            Halo::Faces
        };
        // Down: pre-smooth. A coarser level restricts the finer residual and smooths from zero
        // in one kernel (RestrictSmooth).
        match (lev, start) {
            (0, Start::Current) => {
                let mut s = self.sweep(b, comm, timer, f0);
                sm.smooth_current(&mut s, relax, first)?
            }
            (0, Start::Zero(zero)) => {
                let mut s = self.sweep(b, comm, timer, f0);
                sm.start_from_zero(&mut s, zero, relax)?
            }
            (_, Start::Restricted) => {
                let mut s = self.sweep(b, comm, timer, f0);
                sm.after_restrict(&mut s, lev, relax, first)?
            }
            _ => {
                let color = sm.restrict_color(b, &self.levels[lev].op);
                self.restrict_smooth(b, timer, lev, (sm.restrict_rho(&self.params), color), f0)?;
                let mut s = self.sweep(b, comm, timer, f0);
                sm.after_restrict(&mut s, lev, relax, first)?
            }
        }
        let (pre, post) = (self.params.pre_smooth, self.params.post_smooth);
        if !coarsest && pre > 1 {
            let mut s = self.sweep(b, comm, timer, f0);
            for _ in 1..pre {
                sm.smooth(&mut s, lev, false, relax, Halo::Faces)?;
            }
        }
        if coarse_cg {
            let rtol = self.params.coarse_rtol;
            let l = self.levels.last_mut().expect("the coarsest level");
            let c = self.coarse.as_mut().expect("the coarse workspace");
            c.solve(b, comm, timer, lev, &l.op, &l.f, &mut l.u, rtol)?;
            return super::sweep::exchange(b, comm, timer, lev, &l.op, &mut l.u, last);
        }
        if coarsest {
            let mut s = self.sweep(b, comm, timer, f0);
            for k in 0..more {
                let halo = if k + 1 == more { last } else { Halo::Faces };
                sm.coarse_step(&mut s, lev, k, relax, halo)?;
            }
            return Ok(());
        }
        if !self.params.fuse_restriction {
            self.residual(b, timer, lev, f0)?;
        }
        // Recursion: the coarse-level correction, on the ranks' blocks or gathered whole.
        if self.telescope.as_ref().is_some_and(|t| t.at == lev + 1) {
            self.telescoped(b, comm, timer, lev + 1, symmetric, f0)?;
        } else {
            self.cycle_from(
                b,
                comm,
                timer,
                lev + 1,
                Start::Current,
                symmetric,
                false,
                f0,
            )?;
        }
        // Up: add the interpolated correction, post-smooth: in the symmetric cycle in the
        // reversed order; otherwise in the forward order on every level — on the finest level
        // the reversed order would end each cycle with the half-sweep that the next cycle
        // begins with, and on the coarser ones the forward order contracts more (one cycle in
        // six fewer: docs/results/performance-log.md).
        self.prolongate(b, comm, timer, lev)?;
        let mut s = self.sweep(b, comm, timer, f0);
        for _ in 1..post {
            sm.smooth(&mut s, lev, symmetric, relax, Halo::Faces)?;
        }
        if hold {
            return sm.smooth_but_last(&mut s, lev, relax);
        }
        sm.smooth(&mut s, lev, symmetric, relax, last)
    }

    /// What a smoother acts on.
    fn sweep<'a, C: Comm<B>>(
        &'a mut self,
        b: &'a B,
        comm: &'a C,
        timer: &'a mut Timer,
        f0: &'a B::Field,
    ) -> Sweep<'a, B, C> {
        Sweep {
            h: self,
            b,
            comm,
            timer,
            f0,
        }
    }

    /// z ← V(r): one V-cycle on A z = r from z = 0 (a preconditioner), symmetric (for CG) or
    /// not (see [`Hierarchy::vcycle`]). `zero` is a fine field of zeros (halo included), the
    /// smoother's input for the zero initial guess. `hold`: without the finest level's last
    /// half-sweep, which the caller runs with its correction
    /// ([`crate::backend::LineKernels::smooth_color_correct`]); only where
    /// [`Hierarchy::held_colour`] names one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn precondition<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        r: &B::Field,
        z: &mut B::Field,
        zero: &B::Field,
        symmetric: bool,
        hold: bool,
    ) -> Result<()> {
        self.with_fine_u(z, |h| {
            h.cycle_from(b, comm, timer, 0, Start::Zero(zero), symmetric, hold, r)
        })
    }

    /// The over-relaxation weight of the cycle: the parameter's in the cycle that need not be
    /// symmetric, 1 in the symmetric one (mg-cg's: over-relaxing gained it no iteration, and 1
    /// keeps it symmetric).
    pub(crate) fn relaxation(&self, symmetric: bool) -> f64 {
        if symmetric {
            1.0
        } else {
            self.params.relaxation
        }
    }

    /// The colour of the half-sweep that ends the cycle from zero on the finest level where
    /// [`Hierarchy::precondition`] can leave it to the caller: a cycle of more than one level,
    /// not symmetric, whose smoother can split its step there
    /// ([`super::smoother::Smooth::held_colour`]).
    pub(crate) fn held_colour<C: Comm<B>>(&self, b: &B, symmetric: bool) -> Option<usize> {
        if symmetric || self.levels.len() < 2 {
            return None;
        }
        strategy::<B, C>(self.params.smoother).held_colour(b, &self.levels[0].op)
    }

    /// r_lev ← f_lev − A u_lev into the level's work field (no halo: the restriction reads the
    /// interior only).
    fn residual(&mut self, b: &B, timer: &mut Timer, lev: usize, f0: &B::Field) -> Result<()> {
        let (op, f, u, work) = parts(&mut self.levels[lev], lev, f0);
        timer.run(b, Kernel::Residual, lev, || b.residual_only(op, f, u, work))
    }

    /// u_lev ← u_lev + P u_{lev+1}, and the halo of u_lev: exchanged, or on a rank
    /// decomposition of one panel or box ([`Comm::prolongation_sides`]) prolongated into (the
    /// halo holds the neighbours' u_lev since the pre-smoothing's exchange, and u_{lev+1}'s halo
    /// and corners were exchanged after its post-smoothing, so the neighbours' new values can
    /// be computed here: one exchange per level and cycle fewer).
    fn prolongate<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
    ) -> Result<()> {
        let on = self.params.prolongate_halos;
        let (this, coarser) = self.levels.split_at_mut(lev + 1);
        let (l, c) = (&mut this[lev], &coarser[0]);
        // The nine-point operator reads the halo's corners, which no face holds.
        let sides = comm
            .prolongation_sides()
            .filter(|_| on)
            .filter(|_| b.stencil(&l.op).cross.is_none());
        timer.run(b, Kernel::Prolongate, lev, || {
            b.prolongate(&c.op, &l.op, &c.u, &mut l.u)?;
            match sides {
                Some(sides) => b.prolongate_faces(&c.op, &l.op, &c.u, &mut l.u, sides),
                None => Ok(()),
            }
        })?;
        if sides.is_some() {
            return Ok(());
        }
        exchange(b, comm, timer, lev, &l.op, &mut l.u, Halo::Faces)
    }

    /// f_lev ← R r_{lev−1}; u_lev ← ρ M⁻¹ f_lev (the smoother's step from zero, damped by
    /// `rho`; where `color` is given, ρ = 1 and the columns of that colour only, as the
    /// smoother's [`super::smoother::Smooth::restrict_color`] asks), without the halo. With
    /// [`super::MgParams::fuse_restriction`] the finer residual r_{lev−1} is computed in the
    /// same call; otherwise [`Hierarchy::residual`] stored it before (and every column is
    /// solved).
    fn restrict_smooth(
        &mut self,
        b: &B,
        timer: &mut Timer,
        lev: usize,
        (rho, color): (f64, Option<usize>),
        f0: &B::Field,
    ) -> Result<()> {
        let scale = self.params.restriction.scale();
        let (finer, this) = self.levels.split_at_mut(lev);
        let l = &mut this[0];
        if self.params.fuse_restriction {
            // The finer level's residual is computed here, not stored by `residual` before.
            let (fop, ff, fu, fwork) = parts(&mut finer[lev - 1], lev - 1, f0);
            match color {
                Some(c) => timer.run(b, Kernel::ResidualRestrictSolveColor, lev, || {
                    b.residual_restrict_solve_color(
                        fop, &l.op, ff, fu, fwork, &mut l.f, &mut l.u, scale, c,
                    )
                }),
                None => timer.run(b, Kernel::ResidualRestrictSmooth, lev, || {
                    b.residual_restrict_smooth(
                        fop, &l.op, ff, fu, fwork, &mut l.f, &mut l.u, rho, scale,
                    )
                }),
            }
        } else {
            let fine = &finer[lev - 1];
            timer.run(b, Kernel::RestrictSmooth, lev, || {
                b.restrict_smooth(&fine.op, &l.op, &fine.work, &mut l.f, &mut l.u, rho, scale)
            })
        }
    }

    /// Level `lev`, the finest of those gathered whole onto every rank, in the V-cycle
    /// (docs/MODEL.md §24): the finer residual restricted and smoothed from zero on this rank's
    /// block (as on every level), the blocks summed into the whole level on every rank, the
    /// cycle's rest there with no exchange, and this rank's block with its halo taken back out.
    fn telescoped<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        symmetric: bool,
        f0: &B::Field,
    ) -> Result<()> {
        let sm = strategy::<B, C>(self.params.smoother);
        let color = sm.restrict_color(b, &self.levels[lev].op);
        self.restrict_smooth(b, timer, lev, (sm.restrict_rho(&self.params), color), f0)?;
        let Some(t) = self.telescope.as_deref_mut() else {
            return crate::error::invalid("levels", "no level is gathered");
        };
        let l = &mut self.levels[lev];
        t.gather(b, comm, timer, lev, &l.op, &l.f, &l.u)?;
        let (whole, u, f) = t.nested();
        timer.shifted(lev, |timer| {
            whole.with_fine_u(u, |h| {
                h.cycle_from(
                    b,
                    &SerialComm,
                    timer,
                    0,
                    Start::Restricted,
                    symmetric,
                    false,
                    f,
                )
            })
        })?;
        t.scatter(b, timer, lev, &l.op, &mut l.u)
    }

    /// The sides whose halo the cycle fills by prolongation ([`Comm::prolongation_sides`], unless
    /// [`super::MgParams::prolongate_halos`] is off).
    fn halo_sides<C: Comm<B>>(&self, comm: &C) -> Option<[bool; 4]> {
        comm.prolongation_sides()
            .filter(|_| self.params.prolongate_halos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuBackend;
    use crate::backend::prelude::*;
    use crate::comm::SerialComm;
    use crate::grid::Block;
    use crate::problem::{Grading, ProblemParams};
    use crate::solver::{MgParams, Smoother};
    use crate::stencil::build_levels_with;

    /// The cycle on u (mg as a solver) is u + V(f − A u) with V the cycle from zero (mixed
    /// precision's defect correction), to rounding: with either smoother, with one or more
    /// smoothing steps before and after the coarse correction, over-relaxed, on
    /// rough coefficients (a checkerboard of contrast 100 in kx and ky). Before red-black's
    /// first step on u took the step from zero's form (`Smooth::smooth_current`), the two
    /// differed by (1 − w) of a black half-sweep's input and took 35 and 6 cycles on such a
    /// field.
    #[test]
    fn the_cycle_on_u_is_defect_correction() {
        let (n, nz) = (16, 8);
        let mut c = crate::problem::Coefficients::constant(n, nz, 1.0);
        for j in 0..n {
            for i in 0..n {
                if (i + j) % 2 == 1 {
                    for k in 0..nz {
                        c.kx[(j * n + i) * nz + k] = 100.0;
                        c.ky[(j * n + i) * nz + k] = 100.0;
                    }
                }
            }
        }
        let p = ProblemParams {
            n,
            nz,
            coefficients: Some(std::sync::Arc::new(c)),
            ..Default::default()
        };
        let b = CpuBackend::new(Some(2)).unwrap();
        let stencils = build_levels_with(&p, Block::whole(n), 3, Default::default()).unwrap();
        let shapes = [(1, 1), (2, 1), (1, 3)];
        for (smoother, (pre_smooth, post_smooth)) in [Smoother::Jacobi, Smoother::RedBlack]
            .into_iter()
            .flat_map(|s| shapes.map(|p| (s, p)))
        {
            let params = MgParams {
                n_levels: 3,
                smoother,
                relaxation: 1.15,
                pre_smooth,
                post_smooth,
                ..Default::default()
            };
            let mut h = Hierarchy::new(&b, &stencils, params).unwrap();
            let fine = &h.levels[0].op;
            let field = |seed: u64| {
                let mut x = b.alloc(fine).unwrap();
                let v: Vec<f64> = (0..n * n * nz)
                    .map(|i| ((i as u64 * 2654435761 + seed * 97) % 1000) as f64 / 500.0 - 1.0)
                    .collect();
                b.upload(fine, &v, &mut x).unwrap();
                x
            };
            let (f, u0) = (field(1), field(2));
            let (mut corrected, mut u) = (field(2), field(2));
            let zero = b.alloc(fine).unwrap();
            let mut timer = Timer::new(false, 3);
            // u0 + V(f − A u0).
            let mut r = b.alloc(fine).unwrap();
            b.residual(fine, &f, &u0, &mut r).unwrap();
            let mut z = b.alloc(fine).unwrap();
            h.precondition(&b, &SerialComm, &mut timer, &r, &mut z, &zero, false, false)
                .unwrap();
            let fine = &h.levels[0].op;
            b.axpy(fine, 1.0, &z, &mut corrected).unwrap();
            // The cycle on u0.
            h.with_fine_u(&mut u, |h| {
                h.vcycle(&b, &SerialComm, &mut timer, Start::Current, &f)
            })
            .unwrap();
            let fine = &h.levels[0].op;
            let (mut x, mut y) = (vec![0.0; n * n * nz], vec![0.0; n * n * nz]);
            b.download(fine, &u, &mut x).unwrap();
            b.download(fine, &corrected, &mut y).unwrap();
            let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let diff = x
                .iter()
                .zip(&y)
                .fold(0.0f64, |m, (a, c)| m.max((a - c).abs()));
            assert!(
                diff <= 1e-12 * scale,
                "{smoother:?} V({pre_smooth},{post_smooth}): the cycle on u differs from u + V(f - A u) by {diff:e} (max |u| {scale:e})"
            );
        }
    }

    /// The smoothing of the cycle is symmetric, ⟨S r₁, r₂⟩ = ⟨r₁, S r₂⟩, with either smoother:
    /// on one level (the cycle is then its coarsest level's smoothing steps, 2 or 4 of them),
    /// red-black runs red-black, black-red, … (a palindrome). (With coarse levels the cycle is
    /// not exactly symmetric with either smoother: the prolongation is not the restriction's
    /// transpose.)
    #[test]
    fn the_smoothing_is_symmetric() {
        let p = ProblemParams {
            n: 32,
            nz: 16,
            grading: Grading::Graded,
            ..Default::default()
        };
        let b = CpuBackend::new(Some(2)).unwrap();
        let stencils = build_levels_with(&p, Block::whole(32), 1, Default::default()).unwrap();
        for (smoother, steps) in [
            (Smoother::Jacobi, 2),
            (Smoother::RedBlack, 2),
            (Smoother::RedBlack, 4),
        ] {
            let params = MgParams {
                n_levels: 1,
                coarse_steps: steps,
                smoother,
                ..Default::default()
            };
            let mut h = Hierarchy::new(&b, &stencils, params).unwrap();
            let fine = &h.levels[0].op;
            let zero = b.alloc(fine).unwrap();
            let n = 32 * 32 * 16;
            let field = |seed: u64| {
                let mut x = b.alloc(fine).unwrap();
                let v: Vec<f64> = (0..n)
                    .map(|i| ((i as u64 * 2654435761 + seed * 97) % 1000) as f64 / 500.0 - 1.0)
                    .collect();
                b.upload(fine, &v, &mut x).unwrap();
                x
            };
            let mut timer = Timer::new(false, 1);
            let (r1, r2) = (field(1), field(2));
            let (mut z1, mut z2) = (field(3), field(4));
            h.precondition(
                &b,
                &SerialComm,
                &mut timer,
                &r1,
                &mut z1,
                &zero,
                true,
                false,
            )
            .unwrap();
            h.precondition(
                &b,
                &SerialComm,
                &mut timer,
                &r2,
                &mut z2,
                &zero,
                true,
                false,
            )
            .unwrap();
            let fine = &h.levels[0].op;
            let (a, c) = (
                b.dot(fine, &z1, &r2).unwrap(),
                b.dot(fine, &r1, &z2).unwrap(),
            );
            assert!(
                (a - c).abs() <= 1e-12 * a.abs().max(c.abs()),
                "{smoother:?} x {steps}: <S r1, r2> = {a:e}, <r1, S r2> = {c:e}"
            );
        }
    }
}
