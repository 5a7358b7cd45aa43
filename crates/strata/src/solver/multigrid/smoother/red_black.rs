//! Red-black line Gauss–Seidel (docs/MODEL.md §9.3): the columns of one checkerboard colour are
//! solved exactly given the others, then the others, each half-sweep over-relaxed by the cycle's
//! weight. Red then black before the coarse correction; after it black then red in the
//! symmetric cycle, red then black otherwise.

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

impl RedBlack {
    /// One half-sweep of `color` on level `lev`, over-relaxed by `relax`, and the halo.
    fn half_sweep<B: Backend, C: Comm<B>>(
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        color: usize,
        relax: f64,
        halo: Halo,
    ) -> Result<()> {
        s.step(Kernel::SmoothColor, lev, Some(halo), |b, (op, f, u, _)| {
            b.smooth_color(op, f, u, color, relax)
        })
    }
}

impl<B: Backend, C: Comm<B>> Smooth<B, C> for RedBlack {
    /// The red half-sweep from zero is T⁻¹ f on the red columns: the fused step with ρ = 1.
    fn restrict_rho(&self, _: &MgParams) -> f64 {
        1.0
    }

    fn after_restrict(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        relax: f64,
        halo: Halo,
    ) -> Result<()> {
        s.exchange(lev, Halo::Faces)?;
        Self::half_sweep(s, lev, BLACK, relax, halo)
    }

    /// The red half-sweep from zero is T⁻¹ f on the red columns, which the line solve M⁻¹ f
    /// gives (without reading the zero field's neighbours: 3 passes where a step moves 5); its
    /// black values the black half-sweep replaces.
    fn start_from_zero(&self, s: &mut Sweep<'_, B, C>, _: &B::Field, relax: f64) -> Result<()> {
        s.step(Kernel::Smooth, 0, Some(Halo::Faces), |b, (op, f, u, _)| {
            b.line_solve(op, f, u)
        })?;
        Self::half_sweep(s, 0, BLACK, relax, Halo::Faces)
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
        Self::half_sweep(s, lev, order[0], relax, Halo::Faces)?;
        Self::half_sweep(s, lev, order[1], relax, halo)
    }

    /// Symmetric: the palindrome red-black, black-red, … of the steps, whose every second
    /// half-sweep repeats the one before it (same colour, same neighbours: the same values, bit
    /// for bit) and is skipped — one half-sweep per step. Otherwise red then black every step.
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
        Self::half_sweep(s, lev, k % 2, relax, halo)
    }
}
