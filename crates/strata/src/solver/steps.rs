//! The smoothing steps of strata's default mg cycle for the operator it solves.
//!
//! Red-black smoothing by columns with full coarsening slows down where the coefficient fields
//! couple the two horizontal directions unequally (kx ≠ ky; performance log, 2026-11-29): with
//! the benchmark's smooth fields of contrast 10 (kx / ky up to 3.0) mg's V(1,1) takes a fifth
//! cycle from 512² × 128 on where the model problem takes 4, and V(2,2) takes 3; with contrast
//! 100 (up to 9.1) V(1,1) takes 9 cycles at 512² and V(2,2) 5; with contrast 3 (up to 1.7)
//! V(1,1) takes 4 and V(2,2) 3. A V(2,2) cycle costs about 1.5× a V(1,1) one, so it pays where
//! V(1,1) takes 5 or more:
//!
//! | fields, n² × 128 | V(1,1) | V(2,2) | |
//! |---|---|---|---|
//! | contrast 10, 2048², one H100 | 5 cycles, 0.208 s | 3, **0.186 s** | −11 % |
//! | contrast 10, 1024², CPU | 5 | 3 | −9 % |
//! | contrast 10, 512², CPU | 5 | 3 | ±0 |
//! | contrast 10, 256², CPU | 4 | 3 | +11 % |
//! | contrast 100, 512², CPU | 9 | 5 | −16 % |
//! | contrast 3, 2048², one H100 | 4 cycles, **0.169 s** | 3, 0.186 s | +10 % |
//! | contrast 3, 1024², CPU | 4 | 3 | +14 % |
//!
//! (docs/results/2026-12-07-h100-fields-steps.txt, 2026-12-07-cpu-fields-smoothing-steps.txt;
//! the CPU times are one or two threads of a loaded machine.) So mg takes V(2,2) where the
//! fields' horizontal anisotropy reaches [`FIELD_STEPS_ANISOTROPY`] (between the contrasts
//! 3 and 10 above) on grids of [`FIELD_STEPS_MIN_N`] columns per side or more.

use super::{SolverConfig, SolverKind};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::problem::ProblemParams;

/// The fewest columns per side (`n`) from which mg takes V(2,2) with anisotropic fields.
pub const FIELD_STEPS_MIN_N: usize = 512;

/// The horizontal anisotropy of the fields ([`crate::problem::Coefficients::horizontal_anisotropy`])
/// from which mg takes V(2,2): the geometric mean of the measured cases' 1.7 (V(1,1) best) and
/// 3.0 (V(2,2) best).
pub const FIELD_STEPS_ANISOTROPY: f64 = 2.25;

/// Whether `cfg` leaves its steps to the operator and `p` is of the kind whose steps are
/// decided by its fields: alike on every rank (from `cfg`, `n` and whether there are fields).
fn decided_by_fields(cfg: &SolverConfig, p: &ProblemParams) -> bool {
    cfg.kind == SolverKind::Mg
        && cfg.multigrid.steps_for_operator
        && p.coefficients.is_some()
        && p.n >= FIELD_STEPS_MIN_N
}

/// Whether the fields this process holds reach [`FIELD_STEPS_ANISOTROPY`].
fn anisotropic(p: &ProblemParams) -> bool {
    p.coefficients
        .as_ref()
        .is_some_and(|c| c.horizontal_anisotropy() >= FIELD_STEPS_ANISOTROPY)
}

/// `cfg` with the smoothing steps its operator measured best with, where `cfg` leaves them to
/// the operator ([`super::MgParams::steps_for_operator`], strata's default for mg): V(2,2) for
/// mg with coefficient fields whose horizontal anisotropy reaches [`FIELD_STEPS_ANISOTROPY`]
/// on grids of [`FIELD_STEPS_MIN_N`] columns per side or more; else `cfg`. For one process
/// (whole-level fields); ranks take [`steps_on_ranks`]. Decided when a solver is set up, and
/// by a [`crate::PersistentSolver`] again whenever its fields change (host fields, or fields in
/// device memory with host copies; fields in device memory alone are not scanned and leave its
/// steps as they were).
///
/// ```
/// use strata::problem::{Coefficients, ProblemParams};
/// use strata::solver::{hierarchy_for, steps_for_operator, SolverConfig, SolverKind};
/// use std::sync::Arc;
/// let mut p = ProblemParams { n: 512, nz: 1, ..Default::default() };
/// let mg = SolverConfig::new(SolverKind::Mg);
/// let steps = |c: &SolverConfig| (c.multigrid.pre_smooth, c.multigrid.post_smooth);
/// assert_eq!(steps(&steps_for_operator(&mg, &p)), (1, 1));
/// p.coefficients = Some(Arc::new(Coefficients::smooth(512, 1, 10.0)));
/// assert_eq!(steps(&steps_for_operator(&mg, &p)), (2, 2));
/// // The solvers take it through the hierarchy they build for the problem.
/// assert_eq!(steps(&hierarchy_for(&mg, &p, false, &[p.whole_block()])), (2, 2));
/// // Steps that are set are kept, and other solvers keep theirs.
/// assert_eq!(steps(&steps_for_operator(&mg.clone().with_smoothing_steps(1, 1), &p)), (1, 1));
/// assert_eq!(steps(&steps_for_operator(&SolverConfig::new(SolverKind::Gcr), &p)), (1, 1));
/// // Weakly anisotropic fields keep V(1,1), as do smaller grids.
/// p.coefficients = Some(Arc::new(Coefficients::smooth(512, 1, 3.0)));
/// assert_eq!(steps(&steps_for_operator(&mg, &p)), (1, 1));
/// p.n = 256;
/// p.coefficients = Some(Arc::new(Coefficients::smooth(256, 1, 10.0)));
/// assert_eq!(steps(&steps_for_operator(&mg, &p)), (1, 1));
/// ```
pub fn steps_for_operator(cfg: &SolverConfig, p: &ProblemParams) -> SolverConfig {
    if decided_by_fields(cfg, p) && anisotropic(p) {
        return cfg.clone().with_smoothing_steps(2, 2);
    }
    cfg.clone()
}

/// [`steps_for_operator`] alike on every rank of `comm` (collective): a rank's fields hold its
/// block, so the anisotropy is any rank's.
pub fn steps_on_ranks<B: Backend, C: Comm<B>>(
    comm: &C,
    cfg: &SolverConfig,
    p: &ProblemParams,
) -> Result<SolverConfig> {
    // decided_by_fields is alike on every rank, so every rank or none takes the sum.
    if decided_by_fields(cfg, p) && !super::all_ranks(comm, !anisotropic(p))? {
        return Ok(cfg.clone().with_smoothing_steps(2, 2));
    }
    Ok(cfg.clone())
}
