//! The solver's settings as one value, validated once.

use super::{MgParams, Preconditioner, SolveParams, SolverKind};
use crate::error::Result;
use crate::grid::{Block, Decomposition, RankGrid};
use crate::perf::Cost;
use crate::problem::ProblemParams;
use serde::{Deserialize, Serialize};

/// Floating-point precision of a solve (docs/MODEL.md §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Precision {
    /// Every field, coefficient and reduction in fp64.
    #[default]
    F64,
    /// The outer Krylov iteration (its vectors, the operator it applies, its residual and
    /// stopping test) in fp64; the multigrid preconditioner's fields stored in fp32 (computed
    /// in fp64 registers on the CPU, in fp32 on the GPU). For mg-cg, gcr and bicgstab with the multigrid
    /// preconditioner; mg alone runs as fp64 defect correction around fp32 V-cycles.
    Mixed,
}

impl Precision {
    /// How the multigrid preconditioner's fields are stored.
    pub fn preconditioner_storage(self) -> crate::precision::Storage {
        match self {
            Precision::F64 => crate::precision::Storage::F64,
            Precision::Mixed => crate::precision::Storage::F32,
        }
    }

    /// The name the command line and reports use ([`crate::names::Choice`]).
    pub fn name(self) -> &'static str {
        crate::names::Choice::name(self)
    }
}

/// Everything that says how to solve: the method, its multigrid settings, the stopping rule and
/// the precision. Built with [`SolverConfig::new`] and the `with_*` methods (the struct is
/// `#[non_exhaustive]`, so a new setting breaks no caller), validated by
/// [`SolverConfig::validate`] and [`SolverConfig::validate_for`].
///
/// ```
/// use strata::solver::{SolverConfig, SolverKind};
/// let cfg = SolverConfig::new(SolverKind::MgCg).with_levels(4).with_rtol(1e-8);
/// assert_eq!(cfg.num_levels(), 4);
/// assert!(cfg.validate().is_ok());
/// assert!(SolverConfig::new(SolverKind::Mg).with_max_it(0).validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SolverConfig {
    /// The method.
    pub kind: SolverKind,
    /// Multigrid settings (used by mg and mg-cg; their level count is ignored by cg).
    pub multigrid: MgParams,
    /// When to stop.
    pub stopping: SolveParams,
    /// Floating-point precision.
    pub precision: Precision,
    /// Preconditioner of gcr and bicgstab.
    pub preconditioner: Preconditioner,
    /// Directions kept by gcr before it restarts (the k of GCR(k)).
    pub restart: usize,
}

impl Default for SolverConfig {
    fn default() -> Self {
        Self::new(SolverKind::default())
    }
}

impl SolverConfig {
    /// The best measured settings for `kind`, strata's default: the paper's
    /// ([`SolverConfig::paper`]) with red-black line Gauss–Seidel smoothing and mixed precision
    /// wherever there is a multigrid cycle — mg, mg-cg, and gcr and bicgstab with the multigrid
    /// preconditioner (the same fp64 answer to the same rtol in fewer cycles: 4 V-cycles for mg
    /// at the paper's 512² × 128 against 11; for 1.0e9 unknowns on one H200 0.175 s against
    /// 0.621 s for the paper's mg-cg; gcr and bicgstab on 3D coefficient fields with advection
    /// at 1536² × 128 1.85× and 2.42× faster than with the paper's block Jacobi in fp64, and
    /// fewer iterations in every case of docs/COEFFICIENTS.md's robustness tables;
    /// docs/PERFORMANCE.md). mg-cg's cycle is V(2,2) (3 iterations where V(1,1) takes 5: 18–22 %
    /// faster on one H200 at 256²–2816² × 128); the other cycles are V(1,1) (mg's V(2,1) saves
    /// a cycle up to 1024² × 128 but not at 2048² and above, where it costs 22 % more:
    /// [`SolverConfig::with_smoothing_steps`]), but mg takes V(2,2) with horizontally
    /// anisotropic coefficient fields from 512² columns ([`super::steps_for_operator`]). cg,
    /// and gcr and bicgstab with the line preconditioner, have no cycle: fp64
    /// ([`SolverConfig::with_preconditioner`]).
    ///
    /// ```
    /// use strata::solver::{Precision, Preconditioner, Smoother, SolverConfig, SolverKind};
    /// let cfg = SolverConfig::new(SolverKind::Mg);
    /// assert_eq!(cfg.multigrid.smoother, Smoother::RedBlack);
    /// assert_eq!((cfg.multigrid.pre_smooth, cfg.multigrid.post_smooth), (1, 1));
    /// let mgcg = SolverConfig::new(SolverKind::MgCg).multigrid;
    /// assert_eq!((mgcg.pre_smooth, mgcg.post_smooth), (2, 2));
    /// assert_eq!(cfg.precision, Precision::Mixed);
    /// assert_eq!(SolverConfig::new(SolverKind::Gcr).precision, Precision::Mixed);
    /// assert_eq!(SolverConfig::new(SolverKind::Cg).precision, Precision::F64);
    /// let line = SolverConfig::new(SolverKind::BiCgStab).with_preconditioner(Preconditioner::Line);
    /// assert_eq!(line.precision, Precision::F64);
    /// assert!(line.validate().is_ok());
    /// ```
    pub fn new(kind: SolverKind) -> Self {
        let mut cfg = Self::paper(kind);
        cfg.multigrid.smoother = super::Smoother::RedBlack;
        cfg.multigrid.deepen = true;
        if kind == SolverKind::MgCg {
            cfg = cfg.with_smoothing_steps(2, 2);
        }
        cfg.multigrid.steps_for_operator = kind == SolverKind::Mg;
        if cfg.uses_multigrid() {
            cfg.precision = Precision::Mixed;
        }
        cfg
    }

    /// The paper's settings for `kind` (Müller, Scheichl & Vainikko 2014): 5 levels, 2 coarse
    /// steps, block-Jacobi line relaxation damped by ρ = 2/3, rtol 1e-5, 500 iterations at
    /// most, fp64. `strata reproduce` and `--paper` use them.
    pub fn paper(kind: SolverKind) -> Self {
        Self {
            kind,
            multigrid: MgParams::default(),
            stopping: SolveParams::default(),
            precision: Precision::default(),
            preconditioner: Preconditioner::default(),
            restart: 5,
        }
    }

    /// Sets the preconditioner of gcr and bicgstab. Without a multigrid cycle (the line
    /// preconditioner) there is nothing to store in fp32, so a mixed precision set before
    /// (the default of [`SolverConfig::new`]) becomes fp64; mixed set after it is refused by
    /// [`SolverConfig::validate`], as for cg.
    pub fn with_preconditioner(mut self, pc: Preconditioner) -> Self {
        self.preconditioner = pc;
        if !self.uses_multigrid() {
            self.precision = Precision::F64;
        }
        self
    }

    /// Sets k of GCR(k).
    pub fn with_restart(mut self, k: usize) -> Self {
        self.restart = k;
        self
    }

    /// Whether the method runs multigrid cycles (mg, mg-cg, and gcr/bicgstab with the
    /// multigrid preconditioner).
    pub fn uses_multigrid(&self) -> bool {
        match self.kind {
            SolverKind::Cg => false,
            SolverKind::Mg | SolverKind::MgCg => true,
            SolverKind::Gcr | SolverKind::BiCgStab => {
                self.preconditioner == Preconditioner::Multigrid
            }
        }
    }

    /// Replaces the multigrid settings.
    pub fn with_multigrid(mut self, mg: MgParams) -> Self {
        self.multigrid = mg;
        self
    }

    /// Sets the number of multigrid levels L, exactly: the hierarchy no longer deepens where
    /// its coarsest level is too strongly coupled ([`crate::solver::MgParams::deepen`]; a
    /// singular problem's still goes as deep as the blocks allow).
    pub fn with_levels(mut self, n_levels: usize) -> Self {
        self.multigrid.n_levels = n_levels;
        self.multigrid.deepen = false;
        self
    }

    /// Sets whether the hierarchy goes deeper than its levels where its coarsest level is too
    /// strongly coupled ([`crate::solver::MgParams::deepen`]).
    pub fn with_deepening(mut self, deepen: bool) -> Self {
        self.multigrid.deepen = deepen;
        self
    }

    /// Sets the multigrid smoother.
    pub fn with_smoother(mut self, smoother: super::Smoother) -> Self {
        self.multigrid.smoother = smoother;
        self
    }

    /// Sets the damping ρ of the block-Jacobi smoother.
    pub fn with_rho(mut self, rho: f64) -> Self {
        self.multigrid.rho = rho;
        self
    }

    /// Sets the over-relaxation weight of the red-black smoother ([`super::MgParams::relaxation`]).
    pub fn with_relaxation(mut self, relax: f64) -> Self {
        self.multigrid.relaxation = relax;
        self
    }

    /// Sets the smoothing steps before and after the coarse correction on every level but the
    /// coarsest ([`super::MgParams::pre_smooth`], [`super::MgParams::post_smooth`]); mg-cg's
    /// symmetric cycle needs them equal. Set, they are kept whatever the operator
    /// ([`super::MgParams::steps_for_operator`]).
    pub fn with_smoothing_steps(mut self, pre: usize, post: usize) -> Self {
        self.multigrid.pre_smooth = pre;
        self.multigrid.post_smooth = post;
        self.multigrid.steps_for_operator = false;
        self
    }

    /// Sets the smoothing steps that are given and keeps this configuration's for the others
    /// (`None`), for front ends whose options may leave either out: mg-cg's symmetric cycle
    /// takes one given count for both (its steps must be equal), the other cycles keep the
    /// count not given.
    ///
    /// ```
    /// use strata::solver::{SolverConfig, SolverKind};
    /// let mg = SolverConfig::new(SolverKind::Mg).with_given_smoothing_steps(Some(2), None);
    /// assert_eq!((mg.multigrid.pre_smooth, mg.multigrid.post_smooth), (2, 1));
    /// let mgcg = SolverConfig::new(SolverKind::MgCg).with_given_smoothing_steps(None, Some(1));
    /// assert_eq!((mgcg.multigrid.pre_smooth, mgcg.multigrid.post_smooth), (1, 1));
    /// let same = SolverConfig::new(SolverKind::MgCg).with_given_smoothing_steps(None, None);
    /// assert_eq!((same.multigrid.pre_smooth, same.multigrid.post_smooth), (2, 2));
    /// // Neither given: mg keeps the steps its operator takes (strata::solver::steps_for_operator).
    /// let mg = SolverConfig::new(SolverKind::Mg).with_given_smoothing_steps(None, None);
    /// assert!(mg.multigrid.steps_for_operator);
    /// ```
    pub fn with_given_smoothing_steps(self, pre: Option<usize>, post: Option<usize>) -> Self {
        let symmetric = self.kind == SolverKind::MgCg;
        let (pre, post) = match (pre, post) {
            (None, None) => return self,
            (Some(k), None) | (None, Some(k)) if symmetric => (k, k),
            (pre, post) => (
                pre.unwrap_or(self.multigrid.pre_smooth),
                post.unwrap_or(self.multigrid.post_smooth),
            ),
        };
        self.with_smoothing_steps(pre, post)
    }

    /// Computes the V-cycle's residual inside the next level's restriction, or stores it first
    /// ([`super::MgParams::fuse_restriction`]; on by default).
    pub fn with_fused_restriction(mut self, fuse: bool) -> Self {
        self.multigrid.fuse_restriction = fuse;
        self
    }

    /// Fills a prolongated level's halo by prolongation on rank grids, or exchanges it
    /// ([`super::MgParams::prolongate_halos`]; on by default).
    pub fn with_prolongated_halos(mut self, on: bool) -> Self {
        self.multigrid.prolongate_halos = on;
        self
    }

    /// Sets the smoother steps on the coarsest level.
    pub fn with_coarse_steps(mut self, steps: usize) -> Self {
        self.multigrid.coarse_steps = steps;
        self
    }

    /// Solves the coarsest level as `how` says ([`super::MgParams::coarse_solve`]); with
    /// [`super::CoarseSolve::Cg`] to the relative tolerance `rtol`.
    pub fn with_coarse_solve(mut self, how: super::CoarseSolve, rtol: f64) -> Self {
        self.multigrid.coarse_solve = how;
        self.multigrid.coarse_rtol = rtol;
        self
    }

    /// Replaces the stopping rule.
    pub fn with_stopping(mut self, stopping: SolveParams) -> Self {
        self.stopping = stopping;
        self
    }

    /// Sets the relative tolerance.
    pub fn with_rtol(mut self, rtol: f64) -> Self {
        self.stopping.rtol = rtol;
        self
    }

    /// Sets the most iterations.
    pub fn with_max_it(mut self, max_it: usize) -> Self {
        self.stopping.max_it = max_it;
        self
    }

    /// Makes a solve of the persistent solver that did not converge an error
    /// ([`SolveParams::error_if_not_converged`]; off by default).
    pub fn with_error_if_not_converged(mut self, error: bool) -> Self {
        self.stopping.error_if_not_converged = error;
        self
    }

    /// Removes a singular problem's right-hand side's component along the null space before
    /// solving ([`SolveParams::project_rhs`]; off by default: such a right-hand side is refused).
    pub fn with_project_rhs(mut self, project: bool) -> Self {
        self.stopping.project_rhs = project;
        self
    }

    /// Runs exactly `max_it` iterations, ignoring rtol (for timing).
    pub fn with_fixed_iterations(mut self, fixed: bool) -> Self {
        self.stopping.fixed_iterations = fixed;
        self
    }

    /// Times every kernel on every level.
    pub fn with_profile(mut self, profile: bool) -> Self {
        self.stopping.profile = profile;
        self
    }

    /// Sets the precision.
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Levels the method uses: 1 for cg, the multigrid's L otherwise.
    pub fn num_levels(&self) -> usize {
        if self.uses_multigrid() {
            self.multigrid.n_levels
        } else {
            1
        }
    }

    /// Checks every setting that does not depend on the grid.
    pub fn validate(&self) -> Result<()> {
        if self.uses_multigrid() {
            self.multigrid.validate()?;
        }
        if self.precision == Precision::Mixed && !self.uses_multigrid() {
            return crate::error::invalid(
                "precision",
                format!(
                    "mixed stores the multigrid preconditioner in fp32, and {} has none (use mg, mg-cg, or gcr/bicgstab with the multigrid preconditioner)",
                    self.kind.name()
                ),
            );
        }
        let mg = &self.multigrid;
        if self.kind == SolverKind::MgCg && mg.pre_smooth != mg.post_smooth {
            return crate::error::invalid(
                "pre_smooth",
                format!(
                    "must equal the post-smoothing steps for mg-cg, whose preconditioner must be symmetric (got {} and {})",
                    mg.pre_smooth, mg.post_smooth
                ),
            );
        }
        if self.kind == SolverKind::Gcr && self.restart < 1 {
            return crate::error::invalid("restart", "must be at least 1 (got 0)");
        }
        self.stopping.validate()
    }

    /// [`SolverConfig::validate`], and that the levels fit an `n × n` fine level split over
    /// `grid`; returns the decomposition.
    pub fn validate_for(&self, n: usize, grid: RankGrid) -> Result<Decomposition> {
        self.validate()?;
        Decomposition::new(n, self.num_levels(), grid)
    }

    /// [`SolverConfig::validate_for`] for the hierarchy problem `p` takes on `grid`: where it
    /// goes deep (a singular problem, or [`crate::solver::needs_depth`]) the fine level is split
    /// for the deepest hierarchy the grid allows (a panel's or box's coarsest level keeping
    /// 2 × 2 columns), so that every rank's block halves as many times and the ranks agree on
    /// the depth ([`crate::solver::hierarchy_on_ranks`]); where the levels are the solver's and
    /// the grid halves fewer times than they ask, for the levels it has; otherwise for the
    /// levels asked.
    pub fn decompose(&self, p: &ProblemParams, grid: RankGrid) -> Result<Decomposition> {
        // Levels that are the solver's fit the grid (n = 100 halves twice: 3 levels).
        let most = crate::grid::max_levels(p.n, grid);
        let cfg = &super::depth::fit(self, most);
        let dec = cfg.validate_for(p.n, grid)?;
        if !cfg.uses_multigrid() || !(p.singular() || crate::solver::needs_depth(cfg, p)) {
            return Ok(dec);
        }
        let deepest = if p.geometry.closed() {
            most
        } else {
            most.min(super::null_space::box_levels(p.n))
        };
        if deepest <= cfg.num_levels() {
            return Ok(dec);
        }
        Decomposition::new(p.n, deepest, grid)
    }

    /// [`SolverConfig::validate`], and that the levels fit the fine block `block`.
    pub fn validate_block(&self, block: &Block) -> Result<()> {
        self.validate()?;
        crate::grid::check_levels(block, self.num_levels())
    }

    /// Per fine-grid cell cost of one iteration, as the paper counts it: cg 54/24/15; mg with
    /// L levels (the paper's 5 give 149.4/67.2/29.6); mg-cg the mg cost plus one SpMV and the CG
    /// vector updates (our count, not the paper's).
    pub fn iteration_cost(&self) -> Cost {
        let levels = if self.uses_multigrid() {
            self.num_levels()
        } else {
            0
        };
        let cost = self.kind.iteration_cost(levels);
        if self.precision == Precision::F64 || !self.uses_multigrid() {
            return cost;
        }
        // Mixed precision, counted in 8-byte values: each V-cycle moves half its bytes, and its
        // hand-over converts r (8 + 4 bytes) and z (4 + 8): 3 values; mg's defect correction
        // adds the fp64 residual (3) and u += z (3).
        let m = super::mg_cost(levels);
        let cycles = if self.kind == SolverKind::BiCgStab {
            2.0
        } else {
            1.0
        };
        let extra = if self.kind == SolverKind::Mg {
            9.0
        } else {
            3.0
        };
        Cost {
            flops: cost.flops,
            mem: cost.mem - cycles * (m.mem / 2.0 - extra),
            mem_cached: cost.mem_cached - cycles * (m.mem_cached / 2.0 - extra),
        }
    }
}

impl crate::names::Choice for Precision {
    const SETTING: &'static str = "precision";
    const ALL: &'static [(Self, &'static str, i32)] =
        &[(Precision::F64, "f64", 0), (Precision::Mixed, "mixed", 1)];
}
