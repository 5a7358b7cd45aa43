//! Tensor-product geometric multigrid (docs/MODEL.md §9): horizontal semi-coarsening with
//! rediscretised coarse operators, block-Jacobi vertical line smoothing, sum restriction, linear
//! prolongation, V(1,1) cycles with the paper's fused kernels.

mod cycle;
mod hierarchy;

pub use hierarchy::Hierarchy;

use self::cycle::Start;

use super::monitor::Monitor;
use super::profile::{Kernel, Timer};
use super::{SolveInfo, SolveParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::{invalid, Result};
use crate::stencil::LevelStencil;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// How fine residuals are restricted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Restriction {
    /// The sum over the four children: correct for volume-integrated rows (docs/MODEL.md §9.1).
    #[default]
    Sum,
    /// The plain mean of the four children. Wrong by a factor 4; kept only to demonstrate that
    /// it stalls (the regression test of docs/MODEL.md §12.2.5).
    Average,
}

impl Restriction {
    fn scale(self) -> f64 {
        match self {
            Restriction::Sum => 1.0,
            Restriction::Average => 0.25,
        }
    }
}

/// Multigrid parameters; `Default` is the paper's setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MgParams {
    /// Number of levels L (1 = smoothing only).
    #[serde(rename = "levels")]
    pub n_levels: usize,
    /// Smoother iterations on the coarsest level (the first is the fused RestrictSmooth).
    pub coarse_steps: usize,
    /// Relaxation factor ρ of the block-Jacobi smoother.
    pub rho: f64,
    /// Restriction of residuals.
    pub restriction: Restriction,
    /// How coarse levels average per-cell coefficient fields.
    #[serde(default)]
    pub averaging: crate::problem::Averaging,
    /// The smoother.
    #[serde(default)]
    pub smoother: Smoother,
}

/// The smoother of the V-cycle (docs/MODEL.md §9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Smoother {
    /// The paper's block-Jacobi vertical line relaxation, damped by ρ.
    #[default]
    Jacobi,
    /// Red-black line Gauss–Seidel: the columns of one checkerboard colour are solved exactly
    /// given the others, then the others (ρ is not used). Red then black before the coarse
    /// correction, black then red after it (and alternating on the coarsest level), so that
    /// the V-cycle stays symmetric for mg-cg when the coarsest level takes an even number of
    /// steps (the default 2).
    RedBlack,
}

impl Default for MgParams {
    fn default() -> Self {
        Self {
            n_levels: 5,
            coarse_steps: 2,
            rho: 2.0 / 3.0,
            restriction: Restriction::Sum,
            averaging: crate::problem::Averaging::Harmonic,
            smoother: Smoother::Jacobi,
        }
    }
}

impl MgParams {
    /// Checks the parameters that do not depend on the grid.
    pub fn validate(&self) -> Result<()> {
        if self.n_levels < 1 {
            return invalid("levels", "must be at least 1 (got 0)");
        }
        if self.coarse_steps < 1 {
            return invalid("coarse_steps", "must be at least 1 (got 0)");
        }
        if !(self.rho.is_finite() && self.rho > 0.0 && self.rho < 2.0) {
            return invalid("rho", format!("must be in (0, 2) (got {})", self.rho));
        }
        Ok(())
    }
}

/// Multigrid as a solver: V(1,1) cycles until ‖f − A u‖/‖f − A u₀‖ < rtol.
pub struct Multigrid<B: Backend> {
    h: Hierarchy<B>,
}

impl<B: Backend> Multigrid<B> {
    /// Prepares the levels (finest first) and allocates u, f and a work field on each.
    pub fn new(backend: &B, stencils: &[LevelStencil], params: MgParams) -> Result<Self> {
        Ok(Self {
            h: Hierarchy::new(backend, stencils, params)?,
        })
    }

    /// Prepares every level's operator again from `stencils`, keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        self.h.replace_operators(b, stencils)
    }

    /// The prepared fine level.
    pub fn fine(&self) -> &B::LevelOp {
        &self.h.levels[0].op
    }

    /// Exchanges the halo of every level once (see [`super::Solver::prepare_comm`]).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        self.h.prepare_comm(b, comm)
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
        let mut timer = Timer::new(params.profile, self.h.levels.len());
        // The hierarchy iterates on the caller's u (swapped into its finest level) and reads
        // the caller's f: no copy of either.
        let (mon, reason, it) = self.h.with_fine_u(u, |h| {
            let l = &mut h.levels[0];
            comm.exchange(b, &l.op, &mut l.u)?;
            let mut rr = [h.fine_residual(b, &mut timer, f)?, 0.0];
            rr[1] = b.dot(&h.levels[0].op, f, f)?;
            comm.sum(&mut rr)?;
            let mut mon = Monitor::new(params, rr[0], rr[1], monitor);
            let mut it = 0;
            let reason = if let Some(reason) = mon.initial() {
                reason
            } else {
                loop {
                    it += 1;
                    h.vcycle(b, comm, &mut timer, 0, Start::Current, f)?;
                    let mut rr = [h.fine_residual(b, &mut timer, f)?];
                    comm.sum(&mut rr)?;
                    if let Some(reason) = mon.step(it, rr[0]) {
                        break reason;
                    }
                }
            };
            Ok((mon, reason, it))
        })?;
        b.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(mon.finish(reason, it, seconds, timer.into_profile()))
    }
}

impl<B: Backend> Hierarchy<B> {
    /// r₀ = f₀ − A u₀ on the fine level, returning the local ‖r₀‖².
    pub(crate) fn fine_residual(&mut self, b: &B, timer: &mut Timer, f: &B::Field) -> Result<f64> {
        let l = &mut self.levels[0];
        timer.run(b, Kernel::Residual, 0, || {
            b.residual(&l.op, f, &l.u, &mut l.work)
        })
    }
}
