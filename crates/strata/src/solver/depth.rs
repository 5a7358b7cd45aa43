//! How deep the multigrid hierarchy goes (docs/MODEL.md §9.4). The coarsest level is smoothed,
//! not solved, and a few smoothing steps solve it only where the line relaxation nearly does by
//! itself: where every row's horizontal couplings are small beside its zero-order term, so that
//! the columns the line solves treat exactly are almost independent. Each coarsening divides
//! the horizontal couplings by four (h doubles) and leaves the zero-order term, so a deep
//! enough level always is such a level — unless that term is zero (δ = 0) or tiny beside
//! ω²/h² (a long time step: a large ν_CFL). With too few levels the cycle count then grows:
//! on the CPU at 128² × 64, red-black mixed mg takes 10 cycles with 5 levels at ν_CFL = 84
//! (5 with 6 or more), 13 at ν_CFL = 840 (5), and with δ = 0 13 (5), at 256² 31 (5).
//!
//! So strata's default hierarchy ([`super::MgParams::deepen`]) goes as deep as the blocks allow
//! (as a singular problem's does) where the coarsest of its levels is not such a level, and
//! where even that is not deep enough (an n with few factors of 2) solves its coarsest level by
//! CG; levels asked for explicitly, and the paper's configuration, are kept as they are.

use super::{CoarseSolve, SolverConfig, DEFAULT_COARSE_RTOL};
use crate::backend::Backend;
use crate::comm::Comm;
use crate::error::Result;
use crate::grid::{Block, Boundary};
use crate::problem::{ProblemParams, VerticalGrid};
use crate::stencil::LevelStencil;
use std::sync::Arc;

/// The largest contraction of the coarsest level's smoothest mode by its smoothing steps
/// ([`coarsest_contraction`] to the power of twice the coarse steps: a red-black step contracts
/// about as two line-Jacobi steps) that the V-cycle's count tolerates. Set between the
/// measured cases of red-black mixed mg (CPU, 64²–512² × 64 and × 128, 2 coarse steps,
/// contraction per line-Jacobi step in brackets): kept the count (4 or 5 cycles) at
/// ν_CFL = 8.4 with 4 levels at 128²–512² (0.87–0.88), with 5 (0.59), at ν_CFL = 2.1 with 3
/// (0.67), at ν_CFL = 84 and 840 and δ = 0 with 6 at 128² (0.79–0.81); took more cycles at
/// ν_CFL = 8.4 with 3 levels at 64²–128² (0.95–0.97: 6–9 cycles), at ν_CFL = 84 and 840 and
/// δ = 0 with 5 at 128² (0.93–0.94: 10–13 cycles). 0.9⁴.
pub const COARSEST_CONTRACTION_LIMIT: f64 = 0.6561;

/// How much one line-Jacobi step leaves of the smoothest mode of the coarsest level of
/// `levels` for problem `p`: the largest share, over the level's rows, of the lateral
/// couplings `H` in the row's magnitude `H + Z` (`Z` its zero-order term, the row sum), times
/// the mean over x and y of cos(π / (m + 1)) for a side of m columns between walls (u = 0 on
/// them: the smoothest mode vanishes there) and 1 for periodic or zero-flux sides and on the
/// sphere (the smoothest mode is the constant). 0: the line solves alone solve the level; 1:
/// its smoothing cannot reach the smoothest mode (δ = 0 between zero-flux sides). Of the
/// model problem's operator of `p` (its geometry, ω, δ and vertical grid), not of coefficient
/// fields or orography, whose factors it does not see: a measure of the problem's regime that
/// every rank computes alike from `p`.
pub fn coarsest_contraction(p: &ProblemParams, levels: usize) -> f64 {
    let model = ProblemParams {
        coefficients: None,
        orography: None,
        ..p.clone()
    };
    let mut block = if p.geometry.closed() {
        crate::grid::sphere::tiles(p.n, 1)[0]
    } else {
        p.whole_block()
    };
    for _ in 1..levels {
        if block.nx % 2 != 0 || block.ny % 2 != 0 {
            break;
        }
        block = block.coarsen();
    }
    let vertical = Arc::new(VerticalGrid::new(&model));
    let s = LevelStencil::with_coefficients(&model, block, vertical, None);
    let mut share: f64 = 0.0;
    for j in 0..s.ny() {
        for i in 0..s.nx() {
            for k in 0..s.nz {
                let r = s.row(i, j, k);
                let lateral = -(r.east + r.west + r.north + r.south);
                let zero_order = r.diag + r.east + r.west + r.north + r.south + r.up + r.down;
                let total = lateral + zero_order.max(0.0);
                if total > 0.0 {
                    share = share.max(lateral / total);
                }
            }
        }
    }
    let walls = |side: Boundary, m: usize| match side {
        Boundary::Dirichlet if !p.geometry.closed() => {
            (std::f64::consts::PI / (m as f64 + 1.0)).cos()
        }
        _ => 1.0,
    };
    share * (walls(p.boundaries.x, s.nx()) + walls(p.boundaries.y, s.ny())) / 2.0
}

/// Whether `cfg`'s hierarchy should go deeper for problem `p` than the levels it names: it
/// deepens ([`super::MgParams::deepen`]), smooths its coarsest level, and its coarse steps
/// leave more than [`COARSEST_CONTRACTION_LIMIT`] of that level's smoothest mode
/// ([`coarsest_contraction`]).
pub fn needs_depth(cfg: &SolverConfig, p: &ProblemParams) -> bool {
    cfg.uses_multigrid() && cfg.multigrid.deepen && coarsest_unsolved(cfg, p)
}

/// Whether `cfg` smooths its coarsest level and its coarse steps leave more than
/// [`COARSEST_CONTRACTION_LIMIT`] of that level's smoothest mode for problem `p`.
fn coarsest_unsolved(cfg: &SolverConfig, p: &ProblemParams) -> bool {
    coarsest_remainder(cfg, p) > COARSEST_CONTRACTION_LIMIT
}

/// What `cfg`'s coarse steps leave of its coarsest level's smoothest mode for problem `p`
/// ([`coarsest_contraction`] to the power of twice the coarse steps); 0 where the coarsest
/// level is not smoothed.
fn coarsest_remainder(cfg: &SolverConfig, p: &ProblemParams) -> f64 {
    let mg = &cfg.multigrid;
    if mg.coarse_solve != CoarseSolve::Smooth {
        return 0.0;
    }
    let q = coarsest_contraction(p, cfg.num_levels());
    q.powi(i32::try_from(2 * mg.coarse_steps).unwrap_or(i32::MAX))
}

/// The remainder ([`COARSEST_CONTRACTION_LIMIT`]'s measure) above which the coarsest level a
/// grid cannot take deeper is solved by CG rather than smoothed. The coarse CG runs its
/// iterations in the host's loop, which on the GPU costs 1.2–4 ms per cycle on a panel and
/// 13–28 ms on the sphere: measured on one H200 (2026-11-28, × 128 levels), it won where the
/// remainder was 0.95–0.97 (400² at ν_CFL = 84: 24 smoothed cycles, 28 ms, against 4, 16 ms;
/// the box 400² with δ = 0: 100 against 6; the sphere 6 × 400² at ν_CFL = 84: 40 against 5,
/// 0.385 against 0.189 s) and lost where it was 0.84–0.86 (100² at 3 levels: 8 smoothed
/// cycles, 2.1 ms, against 4, 5.9 ms; the sphere 6 × 180²: 12, 34 ms, against 5, 81 ms). On
/// the CPU, where the coarse CG is cheap, it won in the three cases timed (100², the sphere
/// 6 × 180² × 32, 400² at ν_CFL = 84 × 32). The box 400² at
/// ν_CFL = 84 (0.88: 23 smoothed cycles against 5 on the CPU) takes the CG; its GPU times were
/// not measured. Few cases: a limit between 0.86 and 0.95, not a tuned one.
pub const COARSE_CG_LIMIT: f64 = 0.87;

/// `out` (the hierarchy [`hierarchy_for`] made) with its coarsest level solved by CG
/// ([`CoarseSolve::Cg`] to [`DEFAULT_COARSE_RTOL`]) where the configuration asked needed depth
/// (`needed`: [`needs_depth`] of it), and
/// even the deepest hierarchy the grid allows leaves a coarsest level its smoothing is far from
/// solving (more than [`COARSE_CG_LIMIT`]): an n with few factors of 2 (400 = 16 · 25 halves four times, to 25² columns; at
/// ν_CFL = 84 on the CPU, 400² × 16, 23 cycles smoothed, 5 with the coarse CG). Not for a
/// singular problem (its own null space) or a non-symmetric operator (CG needs a symmetric one).
fn coarse_fallback(
    needed: bool,
    out: SolverConfig,
    p: &ProblemParams,
    singular: bool,
) -> SolverConfig {
    if !needed || singular || p.has_advection() || coarsest_remainder(&out, p) <= COARSE_CG_LIMIT {
        return out;
    }
    out.with_coarse_solve(CoarseSolve::Cg, DEFAULT_COARSE_RTOL)
}

/// `cfg` with no more levels than `most` where its levels are the solver's
/// ([`super::MgParams::deepen`]): a grid that halves fewer times than the default 5 (n = 100
/// halves twice) takes the levels it has; levels asked for exactly are left to the checks,
/// which name the most there are.
pub(crate) fn fit(cfg: &SolverConfig, most: usize) -> SolverConfig {
    if !cfg.uses_multigrid() || !cfg.multigrid.deepen || most >= cfg.num_levels() || most < 1 {
        return cfg.clone();
    }
    cfg.clone().with_levels(most).with_deepening(true)
}

/// The most levels every one of `tiles` takes ([`crate::grid::most_levels`]).
fn most_of(tiles: &[Block]) -> usize {
    tiles
        .iter()
        .map(crate::grid::most_levels)
        .min()
        .unwrap_or(1)
}

/// `cfg` for problem `p` on `tiles`: where its levels are the solver's, no more than the tiles
/// take; as deep as the tiles allow ([`super::deep_levels`]) for a singular problem
/// (`singular`) and where [`needs_depth`] says so; the coarsest level solved by CG where even
/// that leaves it unsolved by smoothing; else `cfg`; and the smoothing steps the operator takes
/// ([`super::steps_for_operator`]). For one process; ranks take [`hierarchy_on_ranks`].
pub fn hierarchy_for(
    cfg: &SolverConfig,
    p: &ProblemParams,
    singular: bool,
    tiles: &[Block],
) -> SolverConfig {
    let cfg = &fit(&super::steps_for_operator(cfg, p), most_of(tiles));
    let needed = needs_depth(cfg, p);
    let out = super::deep_levels(cfg, singular || needed, tiles);
    coarse_fallback(needed, out, p, singular)
}

/// [`hierarchy_for`] alike on every rank of `comm` (collective; `singular` the same on every
/// rank: [`super::singular_on_ranks`]): the levels every rank's tiles allow, the fewest over
/// the ranks. Uneven blocks halve different numbers of times (a 3 × 1 grid over n = 256 at 5
/// levels gives blocks 96, 80 and 80 wide: 6, 5 and 5 levels), and ranks of different depths
/// would wait on each other's exchanges forever.
pub fn hierarchy_on_ranks<B: Backend, C: Comm<B>>(
    comm: &C,
    cfg: &SolverConfig,
    p: &ProblemParams,
    singular: bool,
    tiles: &[Block],
) -> Result<SolverConfig> {
    if comm.size() == 1 {
        return Ok(hierarchy_for(cfg, p, singular, tiles));
    }
    // The levels every rank's tiles take, where they are the solver's (the condition is the
    // configuration's, alike on every rank, so every rank or none takes these sums).
    let mut cfg = super::steps_on_ranks(comm, cfg, p)?;
    if cfg.uses_multigrid() && cfg.multigrid.deepen {
        let most = most_of(tiles);
        let mut levels = cfg.num_levels();
        while levels > 1 && !super::all_ranks(comm, most >= levels)? {
            levels -= 1;
        }
        cfg = fit(&cfg, levels);
    }
    let needed = needs_depth(&cfg, p);
    if !(singular || needed) {
        // Without depth every rank keeps these levels (decided from `p`, `singular` and the
        // levels, alike on every rank, so every rank or none takes the sums below).
        return Ok(cfg);
    }
    let local = super::deep_levels(&cfg, true, tiles);
    let mine = local.num_levels();
    let mut levels = cfg.num_levels().min(mine);
    while super::all_ranks(comm, mine > levels)? {
        levels += 1;
    }
    let out = if levels == mine {
        local
    } else {
        local.with_levels(levels)
    };
    Ok(coarse_fallback(needed, out, p, singular))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(n: usize, nz: usize, cfl: f64, delta: f64) -> ProblemParams {
        ProblemParams {
            n,
            nz,
            cfl,
            delta,
            ..Default::default()
        }
    }

    #[test]
    fn contractions_fall_with_depth_and_rise_with_the_time_step() {
        for (cfl, delta) in [
            (2.1, 1.0),
            (8.4, 1.0),
            (84.0, 1.0),
            (840.0, 1.0),
            (8.4, 0.0),
        ] {
            let shares: Vec<f64> = (1..=7)
                .map(|l| coarsest_contraction(&panel(128, 64, cfl, delta), l))
                .collect();
            println!("cfl {cfl}, delta {delta}: {shares:.3?}");
            for w in shares.windows(2) {
                assert!(w[1] <= w[0] + 1e-12, "{shares:?}");
            }
            if delta == 0.0 {
                // Only the walls hold the smoothest mode: cos(π / (m + 1)) on m × m columns.
                let m = 128 >> 4;
                let walls = (std::f64::consts::PI / (m as f64 + 1.0)).cos();
                assert!((shares[4] - walls).abs() < 1e-3, "{shares:?}");
            }
        }
    }
}
