//! Solvers, written once over [`Backend`] and [`Comm`]:
//!
//! * [`Cg`]: PCG with vertical line relaxation in the paper's fused two-kernel form;
//! * [`Multigrid`]: tensor-product geometric multigrid, V(1,1) cycles;
//! * [`MgCg`]: flexible CG preconditioned by one V-cycle (beyond the paper);
//! * [`textbook_pcg`]: unfused PCG, the verification reference for [`Cg`].
//!
//! Each has a `Params`/`Info` pair: [`SolveParams`] (stopping rule) and [`MgParams`] in,
//! [`SolveInfo`] out. Non-convergence is a [`ConvergedReason`], never an error.

mod cg;
mod config;
mod depth;
mod krylov;
mod mgcg;
mod monitor;
mod multigrid;
mod null_space;
mod profile;
mod slots;
mod steps;
mod textbook;

pub use cg::Cg;
pub use config::{Precision, SolverConfig};
pub use depth::{
    coarsest_contraction, hierarchy_for, hierarchy_on_ranks, needs_depth,
    COARSEST_CONTRACTION_LIMIT, COARSE_CG_LIMIT,
};
pub use krylov::{BiCgStab, Gcr, Preconditioner};
pub use mgcg::MgCg;
pub use monitor::{ConvergedReason, RelativeTo, SolveInfo, SolveParams};
pub use multigrid::{
    CoarseSolve, MgParams, Multigrid, Restriction, Smoother, COARSE_MAX_IT, DEFAULT_COARSE_RTOL,
    DEFAULT_RELAXATION, MAX_SMOOTHING_STEPS,
};
pub use null_space::{all_ranks, deep_levels, singular_levels, singular_on_ranks, NullSpace};
pub use profile::{Kernel, KernelStat, Profile};
pub use steps::{steps_for_operator, steps_on_ranks, FIELD_STEPS_ANISOTROPY, FIELD_STEPS_MIN_N};
pub use textbook::textbook_pcg;

use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::perf::Cost;
use crate::stencil::LevelStencil;
use serde::{Deserialize, Serialize};

/// Which solver to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// CG preconditioned by vertical line relaxation (fused, docs/MODEL.md §8.2).
    Cg,
    /// Tensor-product multigrid V(1,1) cycles (docs/MODEL.md §9).
    #[default]
    Mg,
    /// Flexible CG preconditioned by one multigrid V-cycle.
    MgCg,
    /// Restarted flexible GCR(k) for non-symmetric operators (LFRic, IFS-FVM), preconditioned
    /// by line relaxation or a V-cycle ([`SolverConfig::preconditioner`]).
    Gcr,
    /// BiCGStab for non-symmetric operators (ENDGame), preconditioned likewise.
    BiCgStab,
}

impl SolverKind {
    /// Whether the method needs a symmetric operator (cg and mg-cg, which build on the energy
    /// inner product); mg, gcr and bicgstab take a non-symmetric one (advection).
    ///
    /// ```
    /// use strata::solver::SolverKind;
    /// assert!(SolverKind::MgCg.needs_symmetric());
    /// assert!(!SolverKind::Gcr.needs_symmetric());
    /// ```
    pub fn needs_symmetric(self) -> bool {
        matches!(self, SolverKind::Cg | SolverKind::MgCg)
    }

    /// Per fine-grid cell cost of one iteration, as the paper counts it: CG 54/24/15;
    /// MG with `n_levels` levels (the paper's 5 give 149.4/67.2/29.6). For mg-cg the MG cost plus one
    /// SpMV and the CG vector updates (our count, not the paper's).
    pub fn iteration_cost(self, n_levels: usize) -> Cost {
        match self {
            SolverKind::Cg => Cost {
                flops: 54.0,
                mem: 24.0,
                mem_cached: 15.0,
            },
            SolverKind::Mg => mg_cost(n_levels),
            // One preconditioner, one SpMV (32, 12, 6) and on average (k + 3)/2 dot products and
            // axpy pairs per iteration; counted for k = 5: our model, not the paper's.
            SolverKind::Gcr => {
                let m = if n_levels == 0 {
                    line_cost()
                } else {
                    mg_cost(n_levels)
                };
                Cost {
                    flops: m.flops + 32.0 + 4.0 * 6.0,
                    mem: m.mem + 12.0 + 5.0 * 6.0,
                    mem_cached: m.mem_cached + 6.0 + 5.0 * 6.0,
                }
            }
            // Two preconditioners, two SpMVs, five dot products and six vector updates.
            SolverKind::BiCgStab => {
                let m = if n_levels == 0 {
                    line_cost()
                } else {
                    mg_cost(n_levels)
                };
                Cost {
                    flops: 2.0 * (m.flops + 32.0) + 10.0 + 12.0,
                    mem: 2.0 * (m.mem + 12.0) + 10.0 + 18.0,
                    mem_cached: 2.0 * (m.mem_cached + 6.0) + 10.0 + 18.0,
                }
            }
            SolverKind::MgCg => {
                let m = mg_cost(n_levels);
                // SpMV (32, 12, 6) + axpy (2, 3, 3) + three dots (6, 6, 4).
                Cost {
                    flops: m.flops + 40.0,
                    mem: m.mem + 21.0,
                    mem_cached: m.mem_cached + 13.0,
                }
            }
        }
    }

    /// The name used on the command line and in reports ([`crate::names::Choice`]).
    pub fn name(self) -> &'static str {
        crate::names::Choice::name(self)
    }
}

/// Any of the three solvers, set up for one problem on one backend.
pub enum Solver<B: Backend> {
    /// Fused PCG.
    Cg(Cg<B>),
    /// Multigrid.
    Mg(Multigrid<B>),
    /// Multigrid-preconditioned flexible CG.
    MgCg(MgCg<B>),
    /// Restarted GCR.
    Gcr(Gcr<B>),
    /// BiCGStab.
    BiCgStab(BiCgStab<B>),
}

impl<B: Backend> Solver<B> {
    /// Sets up a solver on the level stencils `levels` (finest first; CG uses the first only).
    pub fn new(backend: &B, cfg: &SolverConfig, levels: &[LevelStencil]) -> Result<Self> {
        cfg.validate()?;
        let mg = &cfg.multigrid;
        let storage = cfg.precision.preconditioner_storage();
        Ok(match cfg.kind {
            SolverKind::Cg => Solver::Cg(Cg::new(backend, &levels[0])?),
            SolverKind::Mg => Solver::Mg(Multigrid::new(backend, levels, mg.clone(), storage)?),
            SolverKind::MgCg => Solver::MgCg(MgCg::new(backend, levels, mg.clone(), storage)?),
            SolverKind::Gcr => Solver::Gcr(Gcr::new(
                backend,
                levels,
                mg.clone(),
                cfg.preconditioner,
                cfg.restart,
                storage,
            )?),
            SolverKind::BiCgStab => Solver::BiCgStab(BiCgStab::new(
                backend,
                levels,
                mg.clone(),
                cfg.preconditioner,
                storage,
            )?),
        })
    }

    /// Lets the communicator allocate every level's face buffers ([`Comm::prepare`]) and
    /// exchanges the halo of one field of every level once, so that what a communicator sets up
    /// at a first exchange (NCCL's buffer registration) is set-up, not solve time.
    /// The fields are the solver's own zeros; nothing a solve reads changes.
    pub fn prepare_comm<C: Comm<B>>(&mut self, backend: &B, comm: &C) -> Result<()> {
        match self {
            Solver::Cg(s) => s.prepare_comm(backend, comm),
            Solver::Mg(s) => s.prepare_comm(backend, comm),
            Solver::MgCg(s) => s.prepare_comm(backend, comm),
            Solver::Gcr(s) => s.prepare_comm(backend, comm),
            Solver::BiCgStab(s) => s.prepare_comm(backend, comm),
        }
    }

    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), if any.
    pub fn gathered_from(&self) -> Option<usize> {
        match self {
            Solver::Cg(_) => None,
            Solver::Mg(s) => s.gathered_from(),
            Solver::MgCg(s) => s.gathered_from(),
            Solver::Gcr(s) => s.gathered_from(),
            Solver::BiCgStab(s) => s.gathered_from(),
        }
    }

    /// Prepares every level's operator again from `stencils` (new coefficient fields or ω on the
    /// same grids, from [`crate::stencil::build_levels`]), keeping every field and buffer.
    pub fn replace_operators(&mut self, backend: &B, stencils: &[LevelStencil]) -> Result<()> {
        match self {
            Solver::Cg(s) => s.replace_operators(backend, stencils),
            Solver::Mg(s) => s.replace_operators(backend, stencils),
            Solver::MgCg(s) => s.replace_operators(backend, stencils),
            Solver::Gcr(s) => s.replace_operators(backend, stencils),
            Solver::BiCgStab(s) => s.replace_operators(backend, stencils),
        }
    }

    /// Sets mg's smoothing steps per level ([`MgParams::pre_smooth`], [`MgParams::post_smooth`])
    /// on the prepared solver, keeping every level, field and buffer (what
    /// [`steps_for_operator`] decides when the operator changes); the other solvers refuse it.
    pub fn set_smoothing_steps(&mut self, pre: usize, post: usize) -> Result<()> {
        match self {
            Solver::Mg(s) => s.set_smoothing_steps(pre, post),
            _ => crate::error::invalid(
                "smoothing steps",
                "are set after set-up for mg only (the others take them from their configuration)",
            ),
        }
    }

    /// The fine level's prepared stencil, to allocate and upload fields with.
    pub fn fine(&self) -> &B::LevelOp {
        match self {
            Solver::Cg(s) => s.level(),
            Solver::Mg(s) => s.fine(),
            Solver::MgCg(s) => s.fine(),
            Solver::Gcr(s) => s.fine(),
            Solver::BiCgStab(s) => s.fine(),
        }
    }

    /// z ← P r: the solver's preconditioner applied once, as its iteration applies it — cg's
    /// vertical line relaxation; mg's V-cycle from zero (the defect-correction cycle); mg-cg's
    /// symmetric V-cycle; gcr's and bicgstab's configured preconditioner. A linear operator
    /// (up to fp32 rounding in mixed precision) for an outer Krylov method of another library
    /// (PETSc's `-pc_type strata`). `r` keeps its values; its halo is exchanged here.
    pub fn precondition<C: Comm<B>>(
        &mut self,
        backend: &B,
        comm: &C,
        r: &mut B::Field,
        z: &mut B::Field,
    ) -> Result<()> {
        match self {
            Solver::Cg(s) => {
                let op = s.level();
                comm.exchange(backend, op, r)?;
                backend.line_solve(op, r, z)?;
                comm.exchange(backend, op, z)
            }
            Solver::Mg(s) => s.precondition(backend, comm, r, z),
            Solver::MgCg(s) => s.precondition(backend, comm, r, z),
            Solver::Gcr(s) => s.precondition(backend, comm, r, z),
            Solver::BiCgStab(s) => s.precondition(backend, comm, r, z),
        }
    }

    /// Solves A u = f from the initial guess in `u`; `monitor(it, ‖r‖ / reference)` sees every iteration
    /// (the reference of [`SolveParams::relative_to`]). Every solver exchanges the guess's halo
    /// before its first residual: a caller sets only the interior.
    pub fn solve<C: Comm<B>>(
        &mut self,
        backend: &B,
        comm: &C,
        f: &B::Field,
        u: &mut B::Field,
        params: &SolveParams,
        monitor: &mut dyn FnMut(usize, f64),
    ) -> Result<SolveInfo> {
        match self {
            Solver::Cg(s) => s.solve(backend, comm, f, u, params, monitor),
            Solver::Mg(s) => s.solve(backend, comm, f, u, params, monitor),
            Solver::MgCg(s) => s.solve(backend, comm, f, u, params, monitor),
            Solver::Gcr(s) => s.solve(backend, comm, f, u, params, monitor),
            Solver::BiCgStab(s) => s.solve(backend, comm, f, u, params, monitor),
        }
    }
}

fn mg_cost(n_levels: usize) -> Cost {
    // Fine level: 2 Smooth + Residual + Prolongate + Residual norm (docs/MODEL.md §11.1).
    let (mut flops, mut mem, mut memc) = (122.0, 53.0, 23.0);
    if n_levels == 1 {
        return Cost {
            flops,
            mem,
            mem_cached: memc,
        };
    }
    let mut w = 1.0;
    for lev in 1..n_levels {
        w *= 0.25;
        let (f, m, mc) = if lev + 1 == n_levels {
            (54.0, 29.0, 14.0) // coarsest: RestrictSmooth + Smooth
        } else {
            (83.0, 43.0, 20.0) // Smooth + RestrictSmooth + Residual + Prolongate
        };
        flops += w * f;
        mem += w * m;
        memc += w * mc;
    }
    Cost {
        flops,
        mem,
        mem_cached: memc,
    }
}

/// One vertical line relaxation (a Tridiag without the r update): read r, write z, per cell.
fn line_cost() -> Cost {
    Cost {
        flops: 20.0,
        mem: 10.0,
        mem_cached: 2.0,
    }
}

impl crate::names::Choice for SolverKind {
    const SETTING: &'static str = "solver";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (SolverKind::Cg, "cg", 0),
        (SolverKind::Mg, "mg", 1),
        (SolverKind::MgCg, "mg-cg", 2),
        (SolverKind::Gcr, "gcr", 3),
        (SolverKind::BiCgStab, "bicgstab", 4),
    ];
}
