//! Tensor-product geometric multigrid (docs/MODEL.md §9): horizontal semi-coarsening with
//! rediscretised coarse operators, block-Jacobi vertical line smoothing, sum restriction, linear
//! prolongation, V(1,1) cycles with the paper's fused kernels.

mod coarse;
mod cycle;
mod hierarchy;
mod on_device;
mod precond;
mod smoother;
mod sweep;
mod telescope;
mod whole;

pub use coarse::{CoarseSolve, COARSE_MAX_IT, DEFAULT_COARSE_RTOL};
pub use hierarchy::Hierarchy;
pub use precond::MgPreconditioner;

use self::cycle::Start;

use super::monitor::Monitor;
use super::profile::{Kernel, Timer};
use super::{SolveInfo, SolveParams};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::{invalid, Result};
use crate::precision::Storage;
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
    /// Over-relaxation weight w of the red-black smoother in the cycles that need not be
    /// symmetric (mg, and the preconditioner of mixed mg, GCR and BiCGStab): each half-sweep
    /// sets its columns to (1 − w) u + w T⁻¹ (f − H u) (w is not the problem's ω). 1 is line
    /// Gauss–Seidel; the default [`DEFAULT_RELAXATION`] takes red-black mg from 5 cycles to 4 at
    /// ν = 2.1 … 840 (docs/PERFORMANCE.md). The symmetric cycle of mg-cg, and the steps from
    /// zero, use 1.
    #[serde(default = "default_relaxation")]
    pub relaxation: f64,
    /// Smoothing steps before the coarse correction on every level but the coarsest; the first
    /// is the step the cycle fuses with the restriction (or takes from zero), the others are
    /// full steps on the iterate. mg-cg's symmetric cycle needs as many after the correction
    /// (it sweeps them in the reverse order), which [`crate::solver::SolverConfig::validate`]
    /// checks.
    #[serde(default = "default_smoothing_steps")]
    pub pre_smooth: usize,
    /// Smoothing steps after the coarse correction on every level but the coarsest.
    #[serde(default = "default_smoothing_steps")]
    pub post_smooth: usize,
    /// Computes the residual on the way down inside the next level's restriction
    /// ([`crate::backend::LineKernels::residual_restrict_smooth`], timed as
    /// `ResidualRestrictSmooth`) rather than storing it first (`Residual`, then
    /// `RestrictSmooth`: the paper's kernels, which `strata reproduce breakdown` times). The
    /// same values up to rounding; a backend that fuses them moves fewer bytes. With it mg's
    /// stopping test also takes the fine residual's norm without storing the residual
    /// (`ResidualNorm`, [`crate::backend::StencilKernels::residual_norm`]).
    #[serde(default = "default_fuse_restriction")]
    pub fuse_restriction: bool,
    /// On a rank grid over one panel or box, fills the halo of a prolongated level by
    /// prolongating the neighbours' coarse values into it ([`crate::comm::Comm::prolongation_sides`])
    /// instead of exchanging after every prolongation as the paper's cycle does: the same
    /// iterates bit for bit, a third fewer exchanges per level. On by default; off, the paper's
    /// exchange.
    #[serde(default = "default_fuse_restriction")]
    pub prolongate_halos: bool,
    /// How the coarsest level is solved: `coarse_steps` smoothing steps (the paper's), or CG to
    /// `coarse_rtol` (docs/MODEL.md §9.4).
    #[serde(default)]
    pub coarse_solve: CoarseSolve,
    /// The coarse CG's relative tolerance (its residual's reduction), in (0, 1).
    #[serde(default = "default_coarse_rtol")]
    pub coarse_rtol: f64,
    /// Goes deeper than `n_levels` where the coarsest of them is too strongly coupled
    /// horizontally for its smoothing steps to solve it (δ = 0 or small, long time steps:
    /// [`crate::solver::needs_depth`]): then as deep as the blocks allow, and where that is not
    /// deep enough either, the coarsest level solved by CG ([`CoarseSolve::Cg`]); where the
    /// blocks halve fewer times than `n_levels` ask, the levels they have. On in
    /// [`crate::solver::SolverConfig::new`] (strata's defaults), off in the paper's
    /// configuration and wherever the levels are set ([`crate::solver::SolverConfig::with_levels`]).
    #[serde(default)]
    pub deepen: bool,
    /// Takes the smoothing steps the operator measured best with where they differ from
    /// `pre_smooth` and `post_smooth` ([`crate::solver::steps_for_operator`]: mg's V(2,2) with
    /// horizontally anisotropic coefficient fields, whose V(1,1) takes a fifth cycle). On for
    /// mg in [`crate::solver::SolverConfig::new`] (strata's defaults), off in the paper's
    /// configuration and wherever the steps are set
    /// ([`crate::solver::SolverConfig::with_smoothing_steps`]).
    #[serde(default)]
    pub steps_for_operator: bool,
}

fn default_coarse_rtol() -> f64 {
    DEFAULT_COARSE_RTOL
}

/// Default of [`MgParams::relaxation`].
pub const DEFAULT_RELAXATION: f64 = 1.15;

fn default_relaxation() -> f64 {
    DEFAULT_RELAXATION
}

/// The most smoothing steps [`MgParams::pre_smooth`] and [`MgParams::post_smooth`] accept.
pub const MAX_SMOOTHING_STEPS: usize = 16;

fn default_smoothing_steps() -> usize {
    1
}

/// Default of the switches that are on unless asked off.
fn default_fuse_restriction() -> bool {
    true
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
    /// correction (on the current iterate of mg as a solver: one line-Jacobi step, then
    /// black, docs/MODEL.md §9.3), black then red after it (and alternating on the coarsest level), so that
    /// the V-cycle stays symmetric for mg-cg when the coarsest level takes an even number of
    /// steps (the default 2); mg as a solver (and the preconditioner of mixed mg, GCR and
    /// BiCGStab) post-smooths red then black on every level, so that no cycle ends with the
    /// red half-sweep the next one begins with, and the coarse corrections contract more.
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
            relaxation: DEFAULT_RELAXATION,
            pre_smooth: 1,
            post_smooth: 1,
            fuse_restriction: true,
            prolongate_halos: true,
            coarse_solve: CoarseSolve::Smooth,
            coarse_rtol: DEFAULT_COARSE_RTOL,
            deepen: false,
            steps_for_operator: false,
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
        if !(self.relaxation.is_finite() && self.relaxation > 0.0 && self.relaxation < 2.0) {
            return invalid(
                "relaxation",
                format!("must be in (0, 2) (got {})", self.relaxation),
            );
        }
        for (name, steps) in [
            ("pre_smooth", self.pre_smooth),
            ("post_smooth", self.post_smooth),
        ] {
            if !(1..=MAX_SMOOTHING_STEPS).contains(&steps) {
                return invalid(
                    name,
                    format!("must be in 1..={MAX_SMOOTHING_STEPS} (got {steps})"),
                );
            }
        }
        coarse::check_rtol(self.coarse_rtol)
    }
}

/// Multigrid as a solver: V(1,1) cycles until ‖f − A u‖/‖f − A u₀‖ < rtol.
pub struct Multigrid<B: Backend> {
    cycles: Cycles<B>,
    /// Defect correction's iterations on the device, where the backend runs them there.
    on_device: on_device::OnDevice<B>,
}

/// How the cycles run.
enum Cycles<B: Backend> {
    /// In fp64 on the caller's iterate.
    F64(Hierarchy<B>),
    /// Defect correction u ← u + V(f − A u), the V-cycle from zero on a hierarchy stored in
    /// fp32 (mixed precision): the
    /// fp64 residual goes straight into the cycle's fp32 right-hand side and the cycle's fp32
    /// result straight into the fp64 u, so no fp64 r or z is held.
    DefectCorrection(MgPreconditioner<B>),
}

impl<B: Backend> Multigrid<B> {
    /// Prepares the levels (finest first) and allocates u, f and a work field on each, stored
    /// in `storage` (fp32: mixed precision).
    pub fn new(
        backend: &B,
        stencils: &[LevelStencil],
        params: MgParams,
        storage: Storage,
    ) -> Result<Self> {
        let cycles = match storage {
            Storage::F64 => Cycles::F64(Hierarchy::new(backend, stencils, params)?),
            Storage::F32 => Cycles::DefectCorrection(MgPreconditioner::new(
                backend, stencils, params, storage, false,
            )?),
        };
        Ok(Self {
            cycles,
            on_device: on_device::OnDevice::new(),
        })
    }

    /// Prepares every level's operator again from `stencils`, keeping the fields.
    pub fn replace_operators(&mut self, b: &B, stencils: &[LevelStencil]) -> Result<()> {
        self.on_device.forget();
        match &mut self.cycles {
            Cycles::F64(h) => h.replace_operators(b, stencils),
            Cycles::DefectCorrection(pc) => pc.replace_operators(b, stencils),
        }
    }

    /// Sets the smoothing steps of the cycle ([`MgParams::pre_smooth`], [`MgParams::post_smooth`]),
    /// keeping every level, field and buffer; what was recorded of the cycle is recorded again.
    pub fn set_smoothing_steps(&mut self, pre: usize, post: usize) -> Result<()> {
        self.on_device.forget();
        match &mut self.cycles {
            Cycles::F64(h) => h.set_smoothing_steps(pre, post),
            Cycles::DefectCorrection(pc) => pc.set_smoothing_steps(pre, post),
        }
    }

    /// The prepared fine level (fp64).
    pub fn fine(&self) -> &B::LevelOp {
        match &self.cycles {
            Cycles::F64(h) => &h.levels[0].op,
            Cycles::DefectCorrection(pc) => pc.fine(),
        }
    }

    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), if any.
    pub fn gathered_from(&self) -> Option<usize> {
        match &self.cycles {
            Cycles::F64(h) => h.gathered_from(),
            Cycles::DefectCorrection(pc) => pc.gathered_from(),
        }
    }

    /// Exchanges the halo of every level once (see [`super::Solver::prepare_comm`]).
    pub fn prepare_comm<C: Comm<B>>(&mut self, b: &B, comm: &C) -> Result<()> {
        self.on_device.forget();
        match &mut self.cycles {
            Cycles::F64(h) => h.prepare_comm(b, comm),
            Cycles::DefectCorrection(pc) => pc.prepare_comm(b, comm),
        }
    }

    /// z ← one V-cycle from zero on A z = r: the cycle of defect correction as a preconditioner
    /// ([`super::Solver::precondition`]).
    pub fn precondition<C: Comm<B>>(
        &mut self,
        b: &B,
        comm: &C,
        r: &mut B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        comm.exchange(b, self.fine(), r)?;
        b.fill(self.fine(), z, 0.0)?;
        let once = SolveParams {
            max_it: 1,
            fixed_iterations: true,
            ..SolveParams::default()
        };
        self.solve(b, comm, r, z, &once, &mut |_, _| {}).map(|_| ())
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
        if let Cycles::DefectCorrection(pc) = &mut self.cycles {
            if let Some(info) = self.on_device.solve(pc, b, comm, f, u, params, monitor)? {
                return Ok(info);
            }
        }
        let ctx = (b, comm, params, monitor);
        match &mut self.cycles {
            // The hierarchy iterates on the caller's u (swapped into its finest level) and
            // reads the caller's f: no copy of either.
            Cycles::F64(h) => {
                let levels = h.levels.len();
                h.with_fine_u(u, |h| {
                    iterate(
                        ctx,
                        h,
                        levels,
                        &mut |h: &mut Hierarchy<B>, timer: &mut Timer| {
                            let l = &mut h.levels[0];
                            comm.exchange(b, &l.op, &mut l.u)?;
                            let r = h.fine_residual(b, timer, f)?;
                            Ok([r, b.dot(&h.levels[0].op, f, f)?])
                        },
                        &mut |h: &mut Hierarchy<B>, timer: &mut Timer| {
                            h.vcycle(b, comm, timer, Start::Current, f)?;
                            h.fine_residual(b, timer, f)
                        },
                    )
                })
            }
            // u ← u + P (f − A u), P one V-cycle from zero: the multigrid solver of mixed
            // precision (the cycle in fp32, everything else fp64; in exact arithmetic the same
            // iterates as fp64 cycles on u, whose first step takes the step from zero's form:
            // `Smooth::smooth_current`, docs/MODEL.md §17). Per cycle two fine passes besides the
            // cycle's: the residual into its fp32 right-hand side, and u += z from its fp32 z.
            Cycles::DefectCorrection(pc) => {
                let levels = pc.n_levels();
                let mut state = (pc, u);
                type State<'a, B> = (
                    &'a mut MgPreconditioner<B>,
                    &'a mut <B as crate::backend::Fields>::Field,
                );
                iterate(
                    ctx,
                    &mut state,
                    levels,
                    &mut |(pc, u): &mut State<'_, B>, timer: &mut Timer| {
                        comm.exchange(b, pc.fine(), u)?;
                        let rr = pc.residual_in(b, timer, f, u)?;
                        Ok([rr, b.dot(pc.fine(), f, f)?])
                    },
                    &mut |(pc, u): &mut State<'_, B>, timer: &mut Timer| {
                        pc.correct(b, comm, timer, u)?;
                        pc.residual_in(b, timer, f, u)
                    },
                )
            }
        }
    }
}

/// What every form of mg's iteration takes: the backend, the communicator, the parameters and
/// the monitor callback.
type Ctx<'a, 'm, B, C> = (
    &'a B,
    &'a C,
    &'a SolveParams,
    &'a mut (dyn FnMut(usize, f64) + 'm),
);

/// mg's iteration on `state` (with a timer of `levels` levels): `open` gives the local
/// [‖r₀‖², ‖f‖²], then each `cycle` runs one cycle and gives the new local ‖r‖², each summed
/// over the ranks, until the monitor stops it.
fn iterate<B: Backend, C: Comm<B>, S>(
    (b, comm, params, monitor): Ctx<'_, '_, B, C>,
    state: &mut S,
    levels: usize,
    open: &mut dyn FnMut(&mut S, &mut Timer) -> Result<[f64; 2]>,
    cycle: &mut dyn FnMut(&mut S, &mut Timer) -> Result<f64>,
) -> Result<SolveInfo> {
    let start = Instant::now();
    let mut timer = Timer::new(params.profile, levels);
    let mut rr = open(state, &mut timer)?;
    comm.sum(&mut rr)?;
    let mut mon = Monitor::new(params, rr[0], rr[1], monitor);
    let mut it = 0;
    let reason = if let Some(reason) = mon.initial() {
        reason
    } else {
        loop {
            it += 1;
            let mut rr = [cycle(state, &mut timer)?];
            comm.sum(&mut rr)?;
            if let Some(reason) = mon.step(it, rr[0]) {
                break reason;
            }
        }
    };
    b.synchronize()?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(mon.finish(reason, it, seconds, timer.into_profile()))
}

impl<B: Backend> Hierarchy<B> {
    /// The local ‖f₀ − A u₀‖² on the fine level (the stopping test). No cycle reads the fine
    /// level's residual from here (each computes its own after pre-smoothing), so with
    /// [`MgParams::fuse_restriction`] it is not stored (`ResidualNorm`); without, the paper's
    /// Residual stores it in the level's work field.
    pub(crate) fn fine_residual(&mut self, b: &B, timer: &mut Timer, f: &B::Field) -> Result<f64> {
        let l = &mut self.levels[0];
        if self.params.fuse_restriction {
            timer.run(b, Kernel::ResidualNorm, 0, || {
                b.residual_norm(&l.op, f, &l.u, &mut l.work)
            })
        } else {
            timer.run(b, Kernel::Residual, 0, || {
                b.residual(&l.op, f, &l.u, &mut l.work)
            })
        }
    }
}

impl crate::names::Choice for Smoother {
    const SETTING: &'static str = "smoother";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (Smoother::Jacobi, "jacobi", 0),
        (Smoother::RedBlack, "red-black", 1),
    ];
}
