//! The constant null space of a singular problem: δ = 0 on the whole sphere (a Poisson
//! problem — stream function, velocity potential) or on a box or panel with no Dirichlet side
//! (zero-flux or periodic sides, docs/MODEL.md §20), where the closed domain and the zero-flux
//! top and bottom leave the constants as the operator's null space, A·1 = 0 (docs/MODEL.md
//! §19). A is symmetric, so A u = f has a solution exactly when f is orthogonal to the
//! constants: Σ f = 0 for the volume-integrated f.
//!
//! Before a solve the right-hand side's incompatible part, its component along the constants
//! (|Σ f| / √N of ‖f‖), is measured; above rtol of ‖f‖ it is an error unless the caller asked
//! for projection ([`super::SolveParams::project_rhs`]), which removes it (f ← f − (Σ f / N) 1).
//! The iteration then solves a consistent system: its residuals stay orthogonal to the
//! constants (restriction by sums keeps Σ r on every level, so the coarse systems are
//! consistent too; each column's tridiagonal block stays regular), and the stopping test is the
//! projected system's. After the solve the volume-weighted mean is removed from u: the answer
//! is the solution with Σ V u = 0.

use super::{SolveParams, SolverConfig};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::{Result, StrataError};
use crate::grid::Block;
use crate::problem::ProblemParams;

/// The constants and the cell volumes of this process's part of the fine level.
pub struct NullSpace<B: Backend> {
    ones: B::Field,
    volumes: B::Field,
    /// Cells of the whole problem (all ranks).
    cells: f64,
    /// Volume of the whole problem.
    volume: f64,
    /// Whether the constants are A's null space too (no advection), so that the answer is made
    /// the solution of zero mean ([`NullSpace::remove_mean`]).
    normalise: bool,
}

impl<B: Backend> NullSpace<B> {
    /// The null space of a fine level `fine` whose cells have the host-layout `volumes` (of
    /// this process; [`crate::problem::cell_volumes`]). `symmetric`: whether the operator has
    /// no advection term, so that the constants are the null space of A as well as of Aᵀ
    /// (docs/MODEL.md §20: with advection only Aᵀ's).
    pub fn new<C: Comm<B>>(
        b: &B,
        comm: &C,
        fine: &B::LevelOp,
        volumes: &[f64],
        symmetric: bool,
    ) -> Result<Self> {
        let mut ones = b.alloc(fine)?;
        b.fill(fine, &mut ones, 1.0)?;
        let mut v = b.alloc(fine)?;
        b.upload(fine, volumes, &mut v)?;
        let mut totals = [volumes.len() as f64, volumes.iter().sum()];
        comm.sum(&mut totals)?;
        Ok(Self {
            ones,
            volumes: v,
            cells: totals[0],
            volume: totals[1],
            normalise: symmetric,
        })
    }

    /// Measures f's component along the constants, |Σ f| / √N, relative to ‖f‖ (0 for f = 0);
    /// removes it from f where `params` asks for projection, else refuses an f whose part is
    /// above `params.rtol`. Returns the relative incompatible part as measured.
    pub fn prepare<C: Comm<B>>(
        &self,
        b: &B,
        comm: &C,
        fine: &B::LevelOp,
        f: &mut B::Field,
        params: &SolveParams,
    ) -> Result<f64> {
        let mut s = [b.dot(fine, f, &self.ones)?, b.dot(fine, f, f)?];
        comm.sum(&mut s)?;
        let (sum, norm) = (s[0], s[1].sqrt());
        let part = if norm > 0.0 {
            sum.abs() / self.cells.sqrt() / norm
        } else {
            0.0
        };
        if params.project_rhs {
            b.axpy(fine, -sum / self.cells, &self.ones, f)?;
        } else if part > params.rtol && !params.fixed_iterations {
            return Err(StrataError::invalid(
                "rhs",
                format!(
                    "is incompatible with the singular operator (delta = 0 with no Dirichlet \
                     boundary: the constants are its null space, A·1 = 0): its component along them, \
                     |Σ f|/√N, is {part:.3e} of ‖f‖, above rtol {:e}. Make Σ f = 0, or ask \
                     for the projection of f (--project-rhs, project_rhs); nothing was solved",
                    params.rtol
                ),
            ));
        }
        Ok(part)
    }

    /// Removes the volume-weighted mean from u: afterwards Σ V u = 0. Nothing with advection,
    /// where adding a constant to u would change A u (A's null space is another vector, which
    /// strata does not compute: the answer is the solution the iteration reached).
    pub fn remove_mean<C: Comm<B>>(
        &self,
        b: &B,
        comm: &C,
        fine: &B::LevelOp,
        u: &mut B::Field,
    ) -> Result<()> {
        if !self.normalise {
            return Ok(());
        }
        let mut s = [b.dot(fine, u, &self.volumes)?];
        comm.sum(&mut s)?;
        b.axpy(fine, -s[0] / self.volume, &self.ones, u)
    }
}

/// `cfg` for problem `p` on `tiles`: for a singular problem, a multigrid hierarchy that goes down
/// to the coarsest level the tiles allow (as many levels as halving keeps whole columns: 1 × 1 or
/// 2 × 2 … per panel), more than `cfg` asks where it asks fewer. Smoothing on the coarsest level
/// cannot reach the singular operator's smoothest modes (the l = 1 harmonics, whose eigenvalue
/// ω² l(l + 1) is far below the δ that lifts them in a regular problem): with 5 levels at
/// 6 × 512² × 128 (a coarsest level of 32² columns per panel) mg took 500 cycles where δ = 1
/// takes 7; down to 1 × 1 the regular count (docs/MODEL.md §19). On a box or panel the coarsest
/// level keeps 2 × 2 columns (docs/MODEL.md §20). A regular problem whose coarsest level its
/// smoothing cannot solve goes as deep too where `cfg` deepens ([`super::needs_depth`]); other
/// regular problems, and solvers without multigrid, keep `cfg`.
pub fn singular_levels(cfg: &SolverConfig, p: &ProblemParams, tiles: &[Block]) -> SolverConfig {
    super::hierarchy_for(cfg, p, p.singular(), tiles)
}

/// [`singular_levels`] for a problem whose singularity is known (`singular`, from
/// [`singular_on_ranks`]: every rank of a job must take the same hierarchy).
pub fn deep_levels(cfg: &SolverConfig, singular: bool, tiles: &[Block]) -> SolverConfig {
    if !singular || !cfg.uses_multigrid() {
        return cfg.clone();
    }
    let deepest = tiles
        .iter()
        .map(|b| {
            let local = 1 + (b.nx.trailing_zeros().min(b.ny.trailing_zeros())) as usize;
            if b.panel.is_some() {
                return local;
            }
            local.min(box_levels(b.n))
        })
        .min()
        .unwrap_or(1);
    if deepest <= cfg.multigrid.n_levels {
        return cfg.clone();
    }
    cfg.clone().with_levels(deepest)
}

/// The most levels of a deep hierarchy on a box or panel of `n × n` columns: its coarsest level
/// keeps two columns per direction, since one column alone has no horizontal coupling on a
/// zero-flux domain, and its vertical block (zero-flux ground and lid, δ = 0) is singular.
pub(crate) fn box_levels(n: usize) -> usize {
    (n.trailing_zeros() as usize).max(1)
}

/// Whether problem `p` is singular ([`ProblemParams::singular`]) on every rank of `comm` together
/// (collective): with a rank's own block of coefficient fields each rank sees only its β, and the
/// problem is singular only where β is zero on every rank's block.
pub fn singular_on_ranks<B: Backend, C: Comm<B>>(comm: &C, p: &ProblemParams) -> Result<bool> {
    all_ranks(comm, p.singular())
}

/// Whether `local` holds on every rank of `comm` (collective; `local` itself on one rank).
pub fn all_ranks<B: Backend, C: Comm<B>>(comm: &C, local: bool) -> Result<bool> {
    if comm.size() == 1 {
        return Ok(local);
    }
    let mut count = [f64::from(u8::from(local))];
    comm.sum(&mut count)?;
    Ok(count[0] == comm.size() as f64)
}
