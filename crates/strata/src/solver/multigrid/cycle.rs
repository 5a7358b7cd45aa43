//! The V-cycle of docs/MODEL.md §9.2 with the paper's fused kernels; level 0 is the finest.

use super::hierarchy::MgLevel;
use super::{Hierarchy, Smoother};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::solver::profile::{Kernel, Timer};

/// A level's operator, right-hand side (`f0`, the caller's, on the finest level), iterate and
/// work field, borrowed apart.
type Parts<'a, B> = (
    &'a <B as crate::backend::Fields>::LevelOp,
    &'a <B as crate::backend::Fields>::Field,
    &'a mut <B as crate::backend::Fields>::Field,
    &'a mut <B as crate::backend::Fields>::Field,
);

fn parts<'a, B: Backend>(l: &'a mut MgLevel<B>, lev: usize, f0: &'a B::Field) -> Parts<'a, B> {
    let MgLevel { op, u, work, f } = l;
    (op, if lev == 0 { f0 } else { f }, u, work)
}

/// Which halo cells an exchange fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Halo {
    /// The faces.
    Faces,
    /// The faces, and the corners whose diagonal block is another rank's where the
    /// communicator prolongates into the halo ([`Comm::prolongation_sides`]): the last
    /// exchange of a coarse level, before the finer level's prolongation reads its halo.
    Corners,
}

/// Fills the halo of `u` (level `lev`, operator `op`) as `halo` says.
#[allow(clippy::too_many_arguments)]
fn exchange<B: Backend, C: Comm<B>>(
    b: &B,
    comm: &C,
    timer: &mut Timer,
    lev: usize,
    op: &B::LevelOp,
    u: &mut B::Field,
    halo: Halo,
) -> Result<()> {
    let corners = halo == Halo::Corners && comm.prolongation_sides().is_some();
    timer.run(b, Kernel::Halo, lev, || {
        if corners {
            comm.exchange_with_corners(b, op, u)
        } else {
            comm.exchange(b, op, u)
        }
    })
}

/// Where the fine level's first smoothing step starts.
pub(crate) enum Start<'a, B: Backend> {
    /// From the current iterate `u` (multigrid as a solver).
    Current,
    /// From zero, given as a field of zeros (multigrid as a preconditioner).
    Zero(&'a B::Field),
}

impl<B: Backend> Hierarchy<B> {
    /// One V(1,1)-cycle: the paper's Algorithm 1 (docs/MODEL.md §9.2), with its fused kernels.
    /// Level 0 is the finest, with right-hand side `f0` (the caller's) and the caller's iterate
    /// swapped into its `u`; every coarser level starts from zero. From zero the cycle is
    /// symmetric (a preconditioner that needs it calls [`Hierarchy::precondition`], which
    /// chooses); from the current iterate (mg as a solver) it need not be, and the red-black
    /// smoother sweeps in one order.
    pub(crate) fn vcycle<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        start: Start<'_, B>,
        f0: &B::Field,
    ) -> Result<()> {
        let symmetric = matches!(start, Start::Zero(_));
        self.cycle_from(b, comm, timer, 0, start, symmetric, f0)
    }

    /// The V-cycle of [`Hierarchy::vcycle`] from level `lev` down, symmetric or not.
    #[allow(clippy::too_many_arguments)]
    fn cycle_from<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        start: Start<'_, B>,
        symmetric: bool,
        f0: &B::Field,
    ) -> Result<()> {
        // The red-black smoother's over-relaxation weight: the parameter's in the cycle that need
        // not be symmetric, 1 in the symmetric one (mg-cg's: over-relaxing gained it no
        // iteration, and 1 keeps it symmetric).
        let relax = if symmetric {
            1.0
        } else {
            self.params.relaxation
        };
        // The last exchange on a coarse level fills the corners that the prolongation into
        // the finer level's halo reads.
        let last = if lev > 0 && self.halo_sides(comm).is_some() {
            Halo::Corners
        } else {
            Halo::Faces
        };
        let coarsest = lev == self.levels.len() - 1;
        // Coarsest: the smoothing steps after the first are the coarse solve. Red-black and
        // symmetric: the palindrome red-black, black-red, … of those steps, whose every second
        // half-sweep repeats the one before it (same colour, same neighbours: the same values,
        // bit for bit) and is skipped — one half-sweep per step, alternating. Otherwise red
        // then black every step.
        let steps = self.params.coarse_steps.saturating_sub(1);
        let red_black = self.params.smoother == Smoother::RedBlack;
        let more = match (coarsest, red_black, symmetric) {
            (false, ..) => 0,
            (true, true, true) => steps,
            (true, true, false) => 2 * steps,
            (true, false, _) => steps,
        };
        let first = if coarsest && more == 0 {
            last
        } else {
            Halo::Faces
        };
        // Down: pre-smooth. A coarser level restricts the finer residual and smooths from zero
        // in one kernel (RestrictSmooth). Every pre-smoothing ends with a black half-sweep.
        match (lev, start) {
            (0, Start::Current) => self.smooth(b, comm, timer, 0, false, relax, f0, first)?,
            (0, Start::Zero(zero)) => self.smooth_from_zero(b, comm, timer, zero, relax, f0)?,
            _ => self.restrict_smooth(b, comm, timer, lev, relax, f0, first)?,
        }
        if coarsest {
            for s in 0..more {
                let halo = if s + 1 == more { last } else { Halo::Faces };
                if red_black {
                    self.half_sweep(b, comm, timer, lev, s % 2, relax, f0, halo)?;
                } else {
                    self.smooth(b, comm, timer, lev, false, relax, f0, halo)?;
                }
            }
            return Ok(());
        }
        if !self.params.fuse_restriction {
            self.residual(b, timer, lev, f0)?;
        }
        // Recursion: the coarse-level correction.
        self.cycle_from(b, comm, timer, lev + 1, Start::Current, symmetric, f0)?;
        // Up: add the interpolated correction, post-smooth: in the symmetric cycle in the
        // reversed order (black then red); otherwise red then black on every level — on the
        // finest level the reversed order would end each cycle with the red half-sweep that
        // the next cycle begins with, which recomputes the same values, and on the coarser
        // ones the forward order contracts more (one cycle in six fewer: docs/PERFORMANCE.md).
        self.prolongate(b, comm, timer, lev)?;
        self.smooth(b, comm, timer, lev, symmetric, relax, f0, last)
    }

    /// z ← V(r): one V-cycle on A z = r from z = 0 (a preconditioner), symmetric (for CG) or
    /// not (see [`Hierarchy::vcycle`]). `zero` is a fine field of zeros (halo included), the
    /// smoother's input for the zero initial guess.
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
    ) -> Result<()> {
        self.with_fine_u(z, |h| {
            h.cycle_from(b, comm, timer, 0, Start::Zero(zero), symmetric, r)
        })
    }

    /// u₀ ← ρ M⁻¹ f₀ (a smoothing step from zero on the finest level), and its halo; with the
    /// red-black smoother the red half-sweep from zero (not over-relaxed), then the black one
    /// over-relaxed by `relax`.
    #[allow(clippy::too_many_arguments)]
    fn smooth_from_zero<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        zero: &B::Field,
        relax: f64,
        f0: &B::Field,
    ) -> Result<()> {
        // Red-black from zero: the red half-sweep is T⁻¹ f on the red columns, which the line
        // solve M⁻¹ f gives (the Jacobi step from zero with ρ = 1, without reading the zero
        // field's neighbours: 3 passes where the step moves 5); its black values the black
        // half-sweep replaces.
        let red_black = self.params.smoother == Smoother::RedBlack;
        let rho = self.params.rho;
        let (op, f, u, _) = parts(&mut self.levels[0], 0, f0);
        timer.run(b, Kernel::Smooth, 0, || {
            if red_black {
                b.line_solve(op, f, u)
            } else {
                b.smooth(op, f, zero, u, rho)
            }
        })?;
        exchange(b, comm, timer, 0, op, u, Halo::Faces)?;
        if red_black {
            self.half_sweep(b, comm, timer, 0, 1, relax, f0, Halo::Faces)?;
        }
        Ok(())
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
        let (this, coarser) = self.levels.split_at_mut(lev + 1);
        let (l, c) = (&mut this[lev], &coarser[0]);
        // The nine-point operator reads the halo's corners, which no face holds.
        let sides = comm
            .prolongation_sides()
            .filter(|_| self.params.prolongate_halos)
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

    /// f_lev ← R r_{lev−1}; u_lev ← ρ M⁻¹ f_lev, and the halo of u_lev, the last exchange as
    /// `halo` says (red-black: the red half-sweep from zero, then the black one over-relaxed
    /// by `relax`). With
    /// [`super::MgParams::fuse_restriction`] the finer residual r_{lev−1} is computed in the same
    /// call; otherwise [`Hierarchy::residual`] stored it before.
    #[allow(clippy::too_many_arguments)]
    fn restrict_smooth<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        relax: f64,
        f0: &B::Field,
        halo: Halo,
    ) -> Result<()> {
        // Red-black from zero, as in smooth_from_zero: ρ = 1, then the black half-sweep.
        let red_black = self.params.smoother == Smoother::RedBlack;
        let rho = if red_black { 1.0 } else { self.params.rho };
        let scale = self.params.restriction.scale();
        let (finer, this) = self.levels.split_at_mut(lev);
        let l = &mut this[0];
        if self.params.fuse_restriction {
            // The finer level's residual is computed here, not stored by `residual` before.
            let (fop, ff, fu, fwork) = parts(&mut finer[lev - 1], lev - 1, f0);
            timer.run(b, Kernel::ResidualRestrictSmooth, lev, || {
                b.residual_restrict_smooth(
                    fop, &l.op, ff, fu, fwork, &mut l.f, &mut l.u, rho, scale,
                )
            })?;
        } else {
            let fine = &finer[lev - 1];
            timer.run(b, Kernel::RestrictSmooth, lev, || {
                b.restrict_smooth(&fine.op, &l.op, &fine.work, &mut l.f, &mut l.u, rho, scale)
            })?;
        }
        if red_black {
            exchange(b, comm, timer, lev, &l.op, &mut l.u, Halo::Faces)?;
            self.half_sweep(b, comm, timer, lev, 1, relax, f0, halo)
        } else {
            exchange(b, comm, timer, lev, &l.op, &mut l.u, halo)
        }
    }

    /// The sides whose halo the cycle fills by prolongation ([`Comm::prolongation_sides`], unless
    /// [`super::MgParams::prolongate_halos`] is off).
    fn halo_sides<C: Comm<B>>(&self, comm: &C) -> Option<[bool; 4]> {
        comm.prolongation_sides()
            .filter(|_| self.params.prolongate_halos)
    }

    /// One red-black half-sweep of `color` on level `lev`, over-relaxed by `relax`, and the
    /// halo as `halo` says.
    #[allow(clippy::too_many_arguments)]
    fn half_sweep<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        color: usize,
        relax: f64,
        f0: &B::Field,
        halo: Halo,
    ) -> Result<()> {
        let (op, f, u, _) = parts(&mut self.levels[lev], lev, f0);
        timer.run(b, Kernel::SmoothColor, lev, || {
            b.smooth_color(op, f, u, color, relax)
        })?;
        exchange(b, comm, timer, lev, op, u, halo)
    }

    /// One smoothing step on level `lev`, and its halo (the last exchange as `halo` says): block Jacobi u ← u + ρ M⁻¹ (f − A u)
    /// (out of place, then swapped), or a red-black sweep over-relaxed by `relax` (red then
    /// black; black then red when `reverse`, as after the coarse correction in the
    /// preconditioner's cycle).
    #[allow(clippy::too_many_arguments)]
    fn smooth<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        timer: &mut Timer,
        lev: usize,
        reverse: bool,
        relax: f64,
        f0: &B::Field,
        halo: Halo,
    ) -> Result<()> {
        if self.params.smoother == Smoother::RedBlack {
            let order = if reverse { [1, 0] } else { [0, 1] };
            self.half_sweep(b, comm, timer, lev, order[0], relax, f0, Halo::Faces)?;
            return self.half_sweep(b, comm, timer, lev, order[1], relax, f0, halo);
        }
        let rho = self.params.rho;
        let (op, f, u, work) = parts(&mut self.levels[lev], lev, f0);
        timer.run(b, Kernel::Smooth, lev, || b.smooth(op, f, u, work, rho))?;
        std::mem::swap(u, work);
        exchange(b, comm, timer, lev, op, u, halo)
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
    use crate::solver::MgParams;
    use crate::stencil::build_levels_with;

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
            h.precondition(&b, &SerialComm, &mut timer, &r1, &mut z1, &zero, true)
                .unwrap();
            h.precondition(&b, &SerialComm, &mut timer, &r2, &mut z2, &zero, true)
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
