//! The smoothers of the V-cycle, one file each, behind one interface ([`Smooth`]): the cycle
//! asks [`strategy`] for the configured smoother and calls only this interface. A new smoother
//! is its file here, its kernels on each backend, its [`Smoother`] variant (with its name in
//! the `Choice` table) and its line in [`strategy`].

mod jacobi;
mod red_black;

use super::sweep::{Halo, Sweep};
use super::{MgParams, Smoother};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;

/// A smoother: the steps the V-cycle takes on each level, with the halo exchanges they need.
/// `relax` is the cycle's over-relaxation weight (1 in the symmetric cycle); `halo` says what
/// the last exchange of a step fills.
pub(crate) trait Smooth<B: Backend, C: Comm<B>> {
    /// The damping of the step from zero that the restriction fuses (RestrictSmooth).
    fn restrict_rho(&self, p: &MgParams) -> f64;

    /// The colour whose columns alone the fused step from zero on coarse level `op` must
    /// line-solve ([`crate::backend::LineKernels::residual_restrict_solve_color`]), where
    /// [`Smooth::after_restrict`] reads none of the other colour's values; `None` (the
    /// default): every column, damped by [`Smooth::restrict_rho`].
    fn restrict_color(&self, _b: &B, _op: &B::LevelOp) -> Option<usize> {
        None
    }

    /// What follows the fused step from zero on coarse level `lev` to finish its
    /// pre-smoothing, with the halo.
    fn after_restrict(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        relax: f64,
        halo: Halo,
    ) -> Result<()>;

    /// The fine level's pre-smoothing from zero (`zero`: a fine field of zeros), with the halo
    /// (faces).
    fn start_from_zero(&self, s: &mut Sweep<'_, B, C>, zero: &B::Field, relax: f64) -> Result<()>;

    /// The fine level's pre-smoothing from its current iterate (mg as a solver, the cycle on
    /// u): the step [`Smooth::start_from_zero`] takes, applied to the current iterate, so that
    /// the cycle on u is u + V(f − A u) with V the cycle from zero (mixed precision's defect
    /// correction) in exact arithmetic. By default one [`Smooth::smooth`] step.
    fn smooth_current(&self, s: &mut Sweep<'_, B, C>, relax: f64, halo: Halo) -> Result<()> {
        self.smooth(s, 0, false, relax, halo)
    }

    /// One smoothing step on level `lev` from its current iterate; `reverse`: the symmetric
    /// cycle's post-smoothing (the adjoint order).
    fn smooth(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        reverse: bool,
        relax: f64,
        halo: Halo,
    ) -> Result<()>;

    /// The colour of the half-sweep that ends a forward smoothing step on level `op` where
    /// the smoother can leave it to the caller's
    /// [`crate::backend::LineKernels::smooth_color_correct`] (mixed precision's defect
    /// correction then adds the cycle's result into its outer iterate in that kernel):
    /// red-black's black half-sweep on a five-point level. `None` (the default): the step
    /// cannot be split so.
    fn held_colour(&self, _b: &B, _op: &B::LevelOp) -> Option<usize> {
        None
    }

    /// A forward smoothing step on level `lev` without the half-sweep of
    /// [`Smooth::held_colour`], the halo filled for it. Only called where that is `Some`; by
    /// default refused.
    fn smooth_but_last(&self, _s: &mut Sweep<'_, B, C>, _lev: usize, _relax: f64) -> Result<()> {
        crate::error::invalid(
            "smoother",
            "this smoother leaves no half-sweep to the caller",
        )
    }

    /// How many steps the coarsest level takes after its first, of `coarse_steps − 1` smoothing
    /// steps, in the symmetric cycle or not.
    fn coarse_count(&self, steps: usize, symmetric: bool) -> usize;

    /// Step `k` of those on the coarsest level `lev`.
    fn coarse_step(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        k: usize,
        relax: f64,
        halo: Halo,
    ) -> Result<()>;
}

/// The smoother `which`: the one registry of smoothers.
pub(crate) fn strategy<'a, B: Backend + 'a, C: Comm<B> + 'a>(
    which: Smoother,
) -> &'a dyn Smooth<B, C> {
    match which {
        Smoother::Jacobi => &jacobi::Jacobi,
        Smoother::RedBlack => &red_black::RedBlack,
    }
}
