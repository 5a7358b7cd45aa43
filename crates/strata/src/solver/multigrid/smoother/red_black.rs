//! Red-black line Gauss–Seidel (docs/MODEL.md §9.3): the columns of one checkerboard colour are
//! solved exactly given the others, then the others, each half-sweep over-relaxed by the cycle's
//! weight. Before the coarse correction: the red half-sweep from zero (with the black columns'
//! T⁻¹ f beside it), or on the current iterate one line-Jacobi step, then black; after it black
//! then red in the symmetric cycle, red then black otherwise. On the sphere's nine-point levels each half-sweep
//! is two quarter sweeps (four colours: §16.1).

use super::Smooth;
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::solver::multigrid::sweep::{Halo, Sweep};
use crate::solver::multigrid::MgParams;
use crate::solver::profile::Kernel;

/// Red-black line Gauss–Seidel.
pub(crate) struct RedBlack;

/// Colours: red 0, black 1.
const RED: usize = 0;
const BLACK: usize = 1;

/// The quarter colours of each half on a level with the sphere's diagonal couplings
/// ([`crate::stencil::LevelStencil::check_colour`]): red is the quarters (i, j) ≡ (0, 0) and
/// (1, 1), black (1, 0) and (0, 1) (mod 2).
const QUARTERS: [[usize; 2]; 2] = [[2, 5], [3, 4]];

impl RedBlack {
    /// One half-sweep of `color` on level `lev`, over-relaxed by `relax`, and the halo. On a
    /// level with the sphere's diagonal couplings (a column's diagonal neighbours have its
    /// colour) the half-sweep is two quarter sweeps, each exact given all the others' values
    /// (docs/MODEL.md §16.1), in the reverse order where `reverse` (the symmetric cycle's
    /// post-smoothing).
    fn half_sweep<B: Backend, C: Comm<B>>(
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        color: usize,
        relax: f64,
        halo: Halo,
        reverse: bool,
    ) -> Result<()> {
        if !s.b.stencil(&s.h.levels[lev].op).has_diagonals() {
            return s.step(Kernel::SmoothColor, lev, Some(halo), |b, (op, f, u, _)| {
                b.smooth_color(op, f, u, color, relax)
            });
        }
        let [first, second] = QUARTERS[color];
        let order = if reverse {
            [second, first]
        } else {
            [first, second]
        };
        s.step(
            Kernel::SmoothColor,
            lev,
            Some(Halo::Faces),
            |b, (op, f, u, _)| b.smooth_color(op, f, u, order[0], relax),
        )?;
        s.step(Kernel::SmoothColor, lev, Some(halo), |b, (op, f, u, _)| {
            b.smooth_color(op, f, u, order[1], relax)
        })
    }

    /// The black half-sweep of a step from zero on level `lev`, after its red one, with the
    /// halo: on a level without cross terms in the form that reads only the red columns
    /// ([`crate::backend::LineKernels::smooth_color_after_solve`]), valid whether the red
    /// half-sweep solved the red columns only or every column; with cross terms the half-sweep
    /// from the black columns' T⁻¹ f that the line solve on every column left.
    fn black_after_red<B: Backend, C: Comm<B>>(
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        relax: f64,
        halo: Halo,
    ) -> Result<()> {
        if s.b.stencil(&s.h.levels[lev].op).has_cross() {
            return Self::half_sweep(s, lev, BLACK, relax, halo, false);
        }
        s.step(Kernel::SmoothColor, lev, Some(halo), |b, (op, f, u, _)| {
            b.smooth_color_after_solve(op, f, u, BLACK, relax)
        })
    }
}

impl<B: Backend, C: Comm<B>> Smooth<B, C> for RedBlack {
    /// The red half-sweep from zero is T⁻¹ f on the red columns: the fused step with ρ = 1.
    fn restrict_rho(&self, _: &MgParams) -> f64 {
        1.0
    }

    /// The red columns, on levels without cross terms (as [`Smooth::start_from_zero`]).
    fn restrict_color(&self, b: &B, op: &B::LevelOp) -> Option<usize> {
        (!b.stencil(op).has_cross()).then_some(RED)
    }

    /// The black half-sweep (`black_after_red`).
    fn after_restrict(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        relax: f64,
        halo: Halo,
    ) -> Result<()> {
        s.exchange(lev, Halo::Faces)?;
        Self::black_after_red(s, lev, relax, halo)
    }

    /// The red half-sweep from zero is T⁻¹ f on the red columns, which the line solve M⁻¹ f
    /// gives (without reading the zero field's neighbours: 3 passes where a step moves 5). The
    /// black half-sweep after it is over-relaxed from the black columns' T⁻¹ f, the form the
    /// steps from zero have on every level (see `smooth_current`): on a level without cross
    /// terms as T⁻¹ (f − w H u), so that a backend may solve the red columns only
    /// ([`crate::backend::LineKernels::line_solve_color`],
    /// [`crate::backend::LineKernels::smooth_color_after_solve`]: the same iteration); with
    /// cross terms the line solve on every column and the black half-sweep from its values.
    fn start_from_zero(&self, s: &mut Sweep<'_, B, C>, _: &B::Field, relax: f64) -> Result<()> {
        if s.b.stencil(&s.h.levels[0].op).has_cross() {
            s.step(
                Kernel::LineSolve,
                0,
                Some(Halo::Faces),
                |b, (op, f, u, _)| b.line_solve(op, f, u),
            )?;
        } else {
            s.step(
                Kernel::LineSolveColor,
                0,
                Some(Halo::Faces),
                |b, (op, f, u, _)| b.line_solve_color(op, f, u, RED),
            )?;
        }
        Self::black_after_red(s, 0, relax, Halo::Faces)
    }

    /// The step from zero's form on the current iterate: one line-Jacobi step (ρ = 1) on every
    /// column, out of place, then the over-relaxed black half-sweep. Its red values are the
    /// plain red half-sweep's; its black half-sweep blends (1 − w) of the Jacobi step's black
    /// values where an over-relaxed red-black sweep would blend (1 − w) of the iterate's — the
    /// form the steps from zero have on every level (the line solve, RestrictSmooth), so that
    /// fp64 mg and mixed precision's defect correction are the same iteration. The red-black
    /// sweep here instead took 35 cycles on a rough checkerboard (kx, ky 100) where this takes 6
    /// (docs/COEFFICIENTS.md); the model problem takes 4 either way.
    fn smooth_current(&self, s: &mut Sweep<'_, B, C>, relax: f64, halo: Halo) -> Result<()> {
        super::jacobi::Jacobi::on_iterate(s, 0, 1.0, Halo::Faces)?;
        Self::half_sweep(s, 0, BLACK, relax, halo, false)
    }

    fn smooth(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        reverse: bool,
        relax: f64,
        halo: Halo,
    ) -> Result<()> {
        let order = if reverse { [BLACK, RED] } else { [RED, BLACK] };
        Self::half_sweep(s, lev, order[0], relax, Halo::Faces, reverse)?;
        Self::half_sweep(s, lev, order[1], relax, halo, reverse)
    }

    /// The forward step ends with the black half-sweep; on a nine-point level that is two
    /// quarter sweeps, which no one kernel with the correction does.
    fn held_colour(&self, b: &B, op: &B::LevelOp) -> Option<usize> {
        (!b.stencil(op).has_diagonals()).then_some(BLACK)
    }

    /// The forward step's red half-sweep, its halo exchanged for the black one.
    fn smooth_but_last(&self, s: &mut Sweep<'_, B, C>, lev: usize, relax: f64) -> Result<()> {
        Self::half_sweep(s, lev, RED, relax, Halo::Faces, false)
    }

    /// Symmetric: the palindrome red-black, black-red, … of the steps, whose every second
    /// half-sweep repeats the one before it (same colour, same neighbours: the same values, bit
    /// for bit) and is skipped — one half-sweep per step. (On a nine-point level a half-sweep is
    /// two quarter sweeps in a fixed order, so the skipped half-sweep would not quite repeat
    /// the one before it: there the coarse steps are a palindrome of half-sweeps only, not of
    /// quarter sweeps.) Otherwise red then black every step.
    fn coarse_count(&self, steps: usize, symmetric: bool) -> usize {
        if symmetric {
            steps
        } else {
            2 * steps
        }
    }

    /// Half-sweeps alternate in colour, red first.
    fn coarse_step(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        k: usize,
        relax: f64,
        halo: Halo,
    ) -> Result<()> {
        Self::half_sweep(s, lev, k % 2, relax, halo, false)
    }
}
