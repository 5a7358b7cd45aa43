//! Singular problems: the whole sphere with δ = 0, whose null space is the constants. Every
//! solver converges on a projected right-hand side in the iterations of the regular problem
//! (δ = 1) ± 2, to a residual of the projected system below rtol (checked with the assembled
//! matrix), with an answer of zero volume-weighted mean; an incompatible right-hand side is
//! refused unless projection is asked for; a compatible one is solved without it; the
//! manufactured solution converges at second order; the persistent solver agrees with the
//! one-shot solve.

use strata::backend::cpu::CpuBackend;
use strata::grid::sphere;
use strata::problem::{
    build_rhs_tiles, cell_volumes, manufactured_error, Geometry, ProblemParams, RhsKind,
};
use strata::solver::{SolverConfig, SolverKind};
use strata::PersistentSolver;

fn sphere(n: usize, nz: usize, delta: f64) -> ProblemParams {
    ProblemParams {
        geometry: Geometry::Sphere,
        n,
        nz,
        delta,
        ..Default::default()
    }
}

/// Levels asked for in the count test: a singular problem's hierarchy is taken deeper, to the
/// coarsest level the grid allows (`singular_levels`), since smoothing on a coarsest level of
/// 4 × 4 columns per panel cannot reach the singular operator's smoothest modes (mg took 24
/// cycles where δ = 1 takes 13 before it did; 500 against 7 at 6 × 512² × 128 on an H100).
const LEVELS: usize = 3;

const KINDS: [SolverKind; 5] = [
    SolverKind::Cg,
    SolverKind::Mg,
    SolverKind::MgCg,
    SolverKind::Gcr,
    SolverKind::BiCgStab,
];

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// f minus its component along the constants.
fn projected(f: &[f64]) -> Vec<f64> {
    let mean = f.iter().sum::<f64>() / f.len() as f64;
    f.iter().map(|v| v - mean).collect()
}

#[test]
fn every_solver_converges_on_the_singular_sphere_in_the_regular_count() {
    let b = CpuBackend::new(Some(2)).unwrap();
    let (n, nz) = (32, 16);
    let singular = sphere(n, nz, 0.0);
    assert!(singular.singular() && !sphere(n, nz, 1.0).singular());
    let f = build_rhs_tiles(&singular, RhsKind::Random, 3, &sphere::tiles(n, 1));
    let a = strata::matrix::assemble(&singular).unwrap();
    let volumes = cell_volumes(&singular, &sphere::tiles(n, 1));
    let pf = projected(&f);
    for kind in KINDS {
        let cfg = SolverConfig::new(kind)
            .with_levels(LEVELS)
            .with_project_rhs(true);
        let sol = strata::solve(&b, &singular, &cfg, &f, &mut |_, _| {}).unwrap();
        let deep = strata::solver::singular_levels(&cfg, &singular, &sphere::tiles(n, 1));
        if kind != SolverKind::Cg {
            assert_eq!(
                deep.num_levels(),
                6,
                "{kind:?}: down to 1 x 1 columns per panel"
            );
        }
        // The regular problem with the hierarchy the singular one was given.
        let regular = strata::solve(&b, &sphere(n, nz, 1.0), &deep, &f, &mut |_, _| {}).unwrap();
        let (its, base) = (sol.info.iterations, regular.info.iterations);
        eprintln!("{kind:?}: δ = 0 {its} iterations, δ = 1 {base}");
        assert!(
            sol.info.reason.converged(),
            "{kind:?}: {:?}",
            sol.info.reason
        );
        // Multigrid (mg, mg-cg, and gcr and bicgstab preconditioned by it) takes the regular
        // count ± 2. One-level cg does not: its count follows the smallest non-zero eigenvalue,
        // which δ = 1 lifts far above the singular operator's (ω² l(l + 1) for the l = 1
        // harmonics): 145 against 81 here (docs/MODEL.md §19); it converges, within 2× here.
        if kind == SolverKind::Cg {
            assert!(its <= 2 * base, "cg: {its} iterations, δ = 1 takes {base}");
        } else {
            assert!(
                its.abs_diff(base) <= 2,
                "{kind:?}: {its} iterations, δ = 1 takes {base}"
            );
        }
        // The residual of the projected system, from the assembled matrix.
        let au = a.apply(&sol.u);
        let r: Vec<f64> = pf.iter().zip(&au).map(|(x, y)| x - y).collect();
        let rel = norm(&r) / norm(&pf);
        assert!(rel <= 1.01e-5, "{kind:?}: ‖Pf − A u‖ / ‖Pf‖ = {rel:e}");
        // Zero volume-weighted mean.
        let mean: f64 = sol.u.iter().zip(&volumes).map(|(u, v)| u * v).sum::<f64>()
            / volumes.iter().sum::<f64>();
        let scale = sol.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(
            mean.abs() <= 1e-12 * scale,
            "{kind:?}: mean {mean:e} of {scale:e}"
        );
        // The incompatible part measured: a random f has one far above rtol.
        let part = sol.info.incompatible.expect("measured");
        let expected = f.iter().sum::<f64>().abs() / (f.len() as f64).sqrt() / norm(&f);
        assert!(
            (part - expected).abs() <= 1e-9 * expected,
            "{part} {expected}"
        );
        assert!(part > 1e-4, "{part}");
        assert_eq!(regular.info.incompatible, None);
    }
}

#[test]
fn an_incompatible_right_hand_side_is_refused_unless_projected() {
    let b = CpuBackend::new(Some(2)).unwrap();
    let p = sphere(8, 4, 0.0);
    let cfg = SolverConfig::new(SolverKind::MgCg).with_levels(2);
    let f = build_rhs_tiles(&p, RhsKind::Random, 5, &sphere::tiles(8, 1));
    let e = strata::solve(&b, &p, &cfg, &f, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("incompatible")
            && e.contains("--project-rhs")
            && e.contains("nothing was solved"),
        "{e}"
    );
    // A compatible right-hand side needs no projection: its part is at rounding level.
    let sol = strata::solve(&b, &p, &cfg, &projected(&f), &mut |_, _| {}).unwrap();
    assert!(sol.info.reason.converged());
    assert!(sol.info.incompatible.unwrap() < 1e-14);
    // With coefficient fields β takes δ's place: β = 1 is regular, β = 0 everywhere singular
    // (and solved as δ = 0 is), a negative β refused with its cell.
    let mut q = p.clone();
    let fields = |beta| {
        Some(std::sync::Arc::new(
            strata::problem::Coefficients::constant_panels(6, 8, 4, beta),
        ))
    };
    q.coefficients = fields(1.0);
    assert!(q.validate().is_ok() && !q.singular());
    q.coefficients = fields(0.0);
    assert!(q.validate().is_ok() && q.singular());
    let with_fields = strata::solve(&b, &q, &cfg, &projected(&f), &mut |_, _| {}).unwrap();
    assert_eq!(with_fields.info.iterations, sol.info.iterations);
    let diff = with_fields
        .u
        .iter()
        .zip(&sol.u)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    let scale = sol.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    // The per-cell operator rounds differently from the per-column one.
    assert!(diff <= 1e-10 * scale, "{:e} relative", diff / scale);
    q.coefficients = fields(-1.0);
    let e = q.validate().unwrap_err().to_string();
    assert!(e.contains("beta") && e.contains("non-negative"), "{e}");
}

#[test]
fn the_manufactured_solution_converges_at_second_order_with_delta_zero() {
    let b = CpuBackend::new(Some(2)).unwrap();
    let mut errs = Vec::new();
    for n in [8, 16, 32] {
        // ω fixed and nz = n/2, so that the continuous problem stays the same (as the regular
        // sphere's manufactured test, tests/sphere.rs).
        let p = ProblemParams {
            height: 0.1,
            omega: Some(0.1f64.sqrt()),
            ..sphere(n, n / 2, 0.0)
        };
        let f = build_rhs_tiles(&p, RhsKind::Manufactured, 0, &sphere::tiles(n, 1));
        let cfg = SolverConfig::new(SolverKind::MgCg)
            .with_levels(2)
            .with_rtol(1e-10)
            .with_project_rhs(true);
        let sol = strata::solve(&b, &p, &cfg, &f, &mut |_, _| {}).unwrap();
        assert!(sol.info.reason.converged(), "n = {n}");
        errs.push(manufactured_error(&p, &sol.u).1);
    }
    for w in errs.windows(2) {
        let order = (w[0] / w[1]).log2();
        assert!(order > 1.7, "rms errors {errs:?}: order {order}");
    }
}

#[test]
fn the_persistent_solver_solves_the_singular_sphere_as_the_one_shot_does() {
    let b = CpuBackend::new(Some(2)).unwrap();
    let p = sphere(16, 8, 0.0);
    let cfg = SolverConfig::new(SolverKind::MgCg)
        .with_levels(3)
        .with_project_rhs(true);
    let f = build_rhs_tiles(&p, RhsKind::Random, 9, &sphere::tiles(16, 1));
    let one = strata::solve(&b, &p, &cfg, &f, &mut |_, _| {}).unwrap();
    let t = strata::backend::tiled::Tiled::new(&b);
    let mut s = PersistentSolver::sphere(&t, &p, &cfg).unwrap();
    let mut u = vec![0.0; f.len()];
    for _ in 0..2 {
        let info = s.solve(&t, &f, &mut u, false).unwrap();
        assert_eq!(info.iterations, one.info.iterations);
        assert_eq!(u, one.u);
    }
    // Without projection the persistent solver refuses it too.
    let mut s = PersistentSolver::sphere(&t, &p, &cfg.clone().with_project_rhs(false)).unwrap();
    let e = s.solve(&t, &f, &mut u, false).unwrap_err().to_string();
    assert!(e.contains("incompatible"), "{e}");
}
