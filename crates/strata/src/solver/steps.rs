//! The smoothing steps of strata's default mg cycle for the operator it solves.
//!
//! With coefficient fields (smooth 3D fields of contrast 10) red-black mg's V(1,1) takes a
//! fifth cycle from 512² × 128 on, where the model problem takes 4: the fields' horizontal
//! anisotropy (kx ≠ ky) slows red-black's later cycles. V(2,2) takes 3 (CPU counts at 256²,
//! 512² and 1024² × 128: V(1,1) 4, 5, 5; V(2,2) 3, 3, 3). A V(2,2) cycle costs about 1.5×
//! a V(1,1) one, so it pays where V(1,1) takes 5: one H100 at 2048² × 128, 0.186 s against
//! 0.208 s (−11 %); the CPU at 1024² × 128 −9 %, at 512² no change, at 256² +11 % (V(1,1)
//! takes 4 there). docs/results/2026-12-07-h100-fields-steps.txt, the performance log of
//! 2026-12-07.

use super::{SolverConfig, SolverKind};
use crate::problem::ProblemParams;

/// The fewest columns per side (`n`) from which mg takes V(2,2) with coefficient fields.
pub const FIELD_STEPS_MIN_N: usize = 1024;

/// `cfg` with the smoothing steps its operator measured best with, where `cfg` leaves them to
/// the operator ([`super::MgParams::steps_for_operator`], strata's default for mg): V(2,2) for
/// mg with coefficient fields on grids of [`FIELD_STEPS_MIN_N`] columns per side or more; else
/// `cfg`. Decided from `p` alone, alike on every rank.
///
/// ```
/// use strata::problem::{Coefficients, ProblemParams};
/// use strata::solver::{hierarchy_for, steps_for_operator, SolverConfig, SolverKind};
/// let mut p = ProblemParams { n: 1024, nz: 1, ..Default::default() };
/// let mg = SolverConfig::new(SolverKind::Mg);
/// let steps = |c: &SolverConfig| (c.multigrid.pre_smooth, c.multigrid.post_smooth);
/// assert_eq!(steps(&steps_for_operator(&mg, &p)), (1, 1));
/// p.coefficients = Some(std::sync::Arc::new(Coefficients::smooth(1024, 1, 10.0)));
/// assert_eq!(steps(&steps_for_operator(&mg, &p)), (2, 2));
/// // The solvers take it through the hierarchy they build for the problem.
/// assert_eq!(steps(&hierarchy_for(&mg, &p, false, &[p.whole_block()])), (2, 2));
/// // Steps that are set are kept, and other solvers keep theirs.
/// assert_eq!(steps(&steps_for_operator(&mg.clone().with_smoothing_steps(1, 1), &p)), (1, 1));
/// assert_eq!(steps(&steps_for_operator(&SolverConfig::new(SolverKind::Gcr), &p)), (1, 1));
/// // Smaller grids keep V(1,1).
/// p.n = 512;
/// p.coefficients = Some(std::sync::Arc::new(Coefficients::smooth(512, 1, 10.0)));
/// assert_eq!(steps(&steps_for_operator(&mg, &p)), (1, 1));
/// ```
pub fn steps_for_operator(cfg: &SolverConfig, p: &ProblemParams) -> SolverConfig {
    let fields = p.coefficients.is_some() && p.n >= FIELD_STEPS_MIN_N;
    if cfg.kind == SolverKind::Mg && cfg.multigrid.steps_for_operator && fields {
        return cfg.clone().with_smoothing_steps(2, 2);
    }
    cfg.clone()
}
