//! The paper's smoother: block-Jacobi vertical line relaxation damped by ρ,
//! u ← u + ρ M⁻¹ (f − A u), out of place (docs/MODEL.md §9).

use super::Smooth;
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::solver::multigrid::sweep::{Halo, Sweep};
use crate::solver::multigrid::MgParams;
use crate::solver::profile::Kernel;

/// Block-Jacobi line relaxation.
pub(crate) struct Jacobi;

impl Jacobi {
    /// One damped step on level `lev` from the iterate (or from `zero` on the fine level), out
    /// of place into the work field, then swapped, and the halo.
    fn step<B: Backend, C: Comm<B>>(
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        from: Option<&B::Field>,
        halo: Halo,
    ) -> Result<()> {
        let rho = s.h.params.rho;
        match from {
            Some(zero) => s.step(Kernel::Smooth, lev, Some(halo), |b, (op, f, u, _)| {
                b.smooth(op, f, zero, u, rho)
            }),
            None => Self::on_iterate(s, lev, rho, halo),
        }
    }

    /// One step damped by `rho` on level `lev`'s iterate, out of place into the work field,
    /// then swapped, and the halo (red-black's first step on u takes it with ρ = 1).
    pub(super) fn on_iterate<B: Backend, C: Comm<B>>(
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        rho: f64,
        halo: Halo,
    ) -> Result<()> {
        s.step(Kernel::Smooth, lev, None, |b, (op, f, u, work)| {
            b.smooth(op, f, u, work, rho)
        })?;
        s.swap(lev);
        s.exchange(lev, halo)
    }
}

impl<B: Backend, C: Comm<B>> Smooth<B, C> for Jacobi {
    fn restrict_rho(&self, p: &MgParams) -> f64 {
        p.rho
    }

    fn after_restrict(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        _: f64,
        halo: Halo,
    ) -> Result<()> {
        s.exchange(lev, halo)
    }

    fn start_from_zero(&self, s: &mut Sweep<'_, B, C>, zero: &B::Field, _: f64) -> Result<()> {
        Self::step(s, 0, Some(zero), Halo::Faces)
    }

    fn smooth(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        _: bool,
        _: f64,
        halo: Halo,
    ) -> Result<()> {
        Self::step(s, lev, None, halo)
    }

    fn coarse_count(&self, steps: usize, _: bool) -> usize {
        steps
    }

    fn coarse_step(
        &self,
        s: &mut Sweep<'_, B, C>,
        lev: usize,
        _: usize,
        _: f64,
        halo: Halo,
    ) -> Result<()> {
        Self::step(s, lev, None, halo)
    }
}
