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
}

impl<B: Backend> NullSpace<B> {
    /// The null space of a fine level `fine` whose cells have the host-layout `volumes` (of
    /// this process; [`crate::problem::cell_volumes`]).
    pub fn new<C: Comm<B>>(b: &B, comm: &C, fine: &B::LevelOp, volumes: &[f64]) -> Result<Self> {
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

    /// Removes the volume-weighted mean from u: afterwards Σ V u = 0.
    pub fn remove_mean<C: Comm<B>>(
        &self,
        b: &B,
        comm: &C,
        fine: &B::LevelOp,
        u: &mut B::Field,
    ) -> Result<()> {
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
/// level keeps 2 × 2 columns (docs/MODEL.md §20). Regular problems, and solvers
/// without multigrid, keep `cfg`.
pub fn singular_levels(cfg: &SolverConfig, p: &ProblemParams, tiles: &[Block]) -> SolverConfig {
    if !p.singular() || !cfg.uses_multigrid() {
        return cfg.clone();
    }
    let deepest = tiles
        .iter()
        .map(|b| {
            let local = 1 + (b.nx.trailing_zeros().min(b.ny.trailing_zeros())) as usize;
            if b.panel.is_some() {
                return local;
            }
            // A box or panel keeps two columns per direction on its coarsest level: one column
            // alone has no horizontal coupling on a zero-flux domain, and its vertical block
            // (zero-flux ground and lid, δ = 0) is singular.
            local.min((b.n.trailing_zeros() as usize).max(1))
        })
        .min()
        .unwrap_or(1);
    if deepest <= cfg.multigrid.n_levels {
        return cfg.clone();
    }
    cfg.clone().with_levels(deepest)
}
