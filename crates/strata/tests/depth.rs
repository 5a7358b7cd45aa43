//! The hierarchy's depth (docs/MODEL.md §9.4): where the coarsest of the default 5 levels is
//! too strongly coupled for its smoothing to solve it — a long time step (ν_CFL = 84) on the
//! sphere, δ = 0 between walls — strata's configuration goes as deep as the grid allows and
//! keeps the count of the paper's regime; 5 levels asked for explicitly are kept, and take many
//! more cycles; in the paper's regime the default stays at 5 levels.

use strata::backend::cpu::CpuBackend;
use strata::grid::sphere;
use strata::problem::{build_rhs_tiles, Geometry, ProblemParams, RhsKind};
use strata::solver::{needs_depth, singular_levels, CoarseSolve, SolverConfig, SolverKind};

/// Iterations and the levels the solve used.
fn solve(p: &ProblemParams, cfg: &SolverConfig) -> (usize, usize) {
    let b = CpuBackend::new(Some(2)).unwrap();
    let tiles = if p.geometry == Geometry::Sphere {
        sphere::tiles(p.n, 1)
    } else {
        vec![p.whole_block()]
    };
    let f = build_rhs_tiles(p, RhsKind::Random, 1, &tiles);
    let sol = strata::solve(&b, p, cfg, &f, &mut |_, _| {}).unwrap();
    assert!(sol.info.reason.converged(), "{p:?}");
    let used = singular_levels(cfg, p, &tiles).num_levels();
    (sol.info.iterations, used)
}

#[test]
fn a_strongly_coupled_coarsest_level_takes_the_hierarchy_deeper() {
    let cases = [
        ProblemParams {
            geometry: Geometry::Sphere,
            n: 64,
            nz: 16,
            cfl: 84.0,
            ..Default::default()
        },
        ProblemParams {
            geometry: Geometry::Box,
            n: 128,
            nz: 16,
            delta: 0.0,
            ..Default::default()
        },
    ];
    for p in cases {
        let cfg = SolverConfig::new(SolverKind::Mg);
        assert!(needs_depth(&cfg, &p), "{p:?}");
        let (deep, levels) = solve(&p, &cfg);
        let (five, five_levels) = solve(&p, &cfg.clone().with_levels(5));
        eprintln!(
            "{:?} n {} cfl {} delta {}: {deep} cycles with {levels} levels, {five} with 5",
            p.geometry, p.n, p.cfl, p.delta
        );
        assert_eq!(five_levels, 5, "explicit levels are kept");
        assert!(levels > 5, "{levels}");
        assert!(deep <= 6, "{deep} cycles with {levels} levels");
        assert!(
            five >= 2 * deep,
            "{five} cycles with 5 levels against {deep}"
        );
    }
}

#[test]
fn the_papers_regime_keeps_five_levels() {
    for geometry in [Geometry::Panel, Geometry::Sphere] {
        let p = ProblemParams {
            geometry,
            n: 128,
            nz: 16,
            ..Default::default()
        };
        for kind in [SolverKind::Mg, SolverKind::MgCg] {
            let cfg = SolverConfig::new(kind);
            assert!(!needs_depth(&cfg, &p), "{geometry:?} {kind:?}");
        }
        // The paper's configuration never deepens a regular problem.
        let long_step = ProblemParams { cfl: 84.0, ..p };
        assert!(!needs_depth(
            &SolverConfig::paper(SolverKind::Mg),
            &long_step
        ));
        assert!(needs_depth(&SolverConfig::new(SolverKind::Mg), &long_step));
    }
}

/// Where the grid cannot go deep enough (400 = 16 · 25 halves four times: a coarsest level of
/// 25² columns, which smoothing cannot solve at ν_CFL = 84), the default solves its coarsest
/// level by CG instead, and takes the few cycles of a deep hierarchy; 5 levels asked for are
/// kept as asked, smoothed.
#[test]
fn a_grid_that_cannot_go_deep_solves_its_coarsest_level() {
    let p = ProblemParams {
        n: 400,
        nz: 8,
        cfl: 84.0,
        ..Default::default()
    };
    let cfg = SolverConfig::new(SolverKind::Mg);
    let resolved = singular_levels(&cfg, &p, &[p.whole_block()]);
    assert_eq!(resolved.num_levels(), 5);
    assert_eq!(resolved.multigrid.coarse_solve, CoarseSolve::Cg);
    let (its, _) = solve(&p, &cfg);
    let asked = cfg.clone().with_levels(5);
    let kept = singular_levels(&asked, &p, &[p.whole_block()]);
    assert_eq!(kept.multigrid.coarse_solve, CoarseSolve::Smooth);
    let (smoothed, _) = solve(&p, &asked);
    eprintln!("n 400, cfl 84: {its} cycles with the coarse CG, {smoothed} smoothed");
    assert!(its <= 6, "{its}");
    assert!(smoothed >= 2 * its, "{smoothed} against {its}");
}

/// A grid that halves fewer times than the default 5 levels ask (n = 100 halves twice) takes
/// the levels it has (its coarsest level of 25² columns smoothed: the coarse CG would cost the
/// GPU more than the cycles it saves there, `COARSE_CG_LIMIT`), where 5 levels asked for
/// exactly are refused naming the most there are; the sphere alike.
#[test]
fn a_grid_that_halves_few_times_takes_the_levels_it_has() {
    for geometry in [Geometry::Panel, Geometry::Sphere] {
        let p = ProblemParams {
            geometry,
            n: 100,
            nz: 8,
            ..Default::default()
        };
        let cfg = SolverConfig::new(SolverKind::Mg);
        let (its, levels) = solve(&p, &cfg);
        eprintln!("{geometry:?} n 100: {its} cycles with {levels} levels");
        assert_eq!(levels, 3);
        let resolved = singular_levels(&cfg, &p, &p.whole_tiles());
        assert_eq!(resolved.multigrid.coarse_solve, CoarseSolve::Smooth);
        assert!(its <= 20, "{its}");
        let b = CpuBackend::new(Some(2)).unwrap();
        let f = build_rhs_tiles(&p, RhsKind::Random, 1, &p.whole_tiles());
        let e = strata::solve(&b, &p, &cfg.clone().with_levels(5), &f, &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 3 levels"), "{e}");
    }
}
