//! Lateral boundary conditions per direction (docs/MODEL.md §20): Dirichlet, zero-flux
//! (Neumann) and periodic sides on the box, Dirichlet and zero-flux on the panel. Checked
//! against the assembled matrix (whose periodic rows wrap by index, not through a halo), on the
//! reference and CPU backends, for every solver; the operator is symmetric and conserves
//! (A·1 = δ V, and with advection 1ᵀA = δ Vᵀ); manufactured solutions converge at second
//! order; with δ = 0 and no Dirichlet side the problem is singular and solved in the regular
//! problem's count; bad combinations are refused.

use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::grid::{Boundaries, Boundary, Side};
use strata::problem::{
    build_rhs, cell_volumes, manufactured_error, Coefficients, Geometry, ProblemParams, RhsKind,
};
use strata::solver::{SolverConfig, SolverKind};

const KINDS: [SolverKind; 5] = [
    SolverKind::Cg,
    SolverKind::Mg,
    SolverKind::MgCg,
    SolverKind::Gcr,
    SolverKind::BiCgStab,
];

fn problem(geometry: Geometry, bc: &str, n: usize, nz: usize) -> ProblemParams {
    ProblemParams {
        geometry,
        n,
        nz,
        boundaries: Boundaries::parse(bc).unwrap(),
        ..Default::default()
    }
}

/// Every condition of the box and the panel but the paper's.
fn conditions() -> Vec<(Geometry, &'static str)> {
    let mut out = vec![];
    for x in ["dirichlet", "neumann", "periodic"] {
        for y in ["dirichlet", "neumann", "periodic"] {
            if (x, y) != ("dirichlet", "dirichlet") {
                out.push((Geometry::Box, format!("x={x},y={y}").leak() as &str));
            }
        }
    }
    out.push((Geometry::Panel, "x=neumann,y=neumann"));
    out.push((Geometry::Panel, "x=dirichlet,y=neumann"));
    out
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn residual(a: &strata::matrix::SparseMatrix, u: &[f64], f: &[f64]) -> f64 {
    let au = a.apply(u);
    let r: Vec<f64> = f.iter().zip(&au).map(|(x, y)| x - y).collect();
    norm(&r) / norm(f)
}

/// Each solver on the reference and the CPU backend meets rtol on the residual of the assembled
/// matrix, in about the iterations the walled problem takes.
#[test]
fn every_solver_solves_every_condition_to_the_assembled_matrix() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let (n, nz) = (32, 16);
    for (g, bc) in conditions() {
        let p = problem(g, bc, n, nz);
        let walled = problem(g, "dirichlet", n, nz);
        let a = strata::matrix::assemble(&p).unwrap();
        let f = build_rhs(&p, RhsKind::Random, 5, &p.whole_block());
        for kind in KINDS {
            let cfg = SolverConfig::new(kind).with_levels(4);
            let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
            let base = strata::solve(&cpu, &walled, &cfg, &f, &mut |_, _| {}).unwrap();
            let (its, b) = (sol.info.iterations, base.info.iterations);
            eprintln!("{g:?} {bc} {kind:?}: {its} iterations (walled {b})");
            assert!(sol.info.reason.converged(), "{g:?} {bc} {kind:?}");
            let rel = residual(&a, &sol.u, &f);
            assert!(
                rel <= 1.01e-5,
                "{g:?} {bc} {kind:?}: ‖f − A u‖/‖f‖ = {rel:e}"
            );
            // Zero-flux walls weaken the zero-order term's hold on the smoothest modes less
            // than a Dirichlet wall fixes them: within a few iterations of the walled count
            // (one-level cg within 2×).
            let slack = if kind == SolverKind::Cg { b } else { 3 };
            assert!(its <= b + slack, "{g:?} {bc} {kind:?}: {its} against {b}");
        }
        // The reference backend, the default solver.
        let cfg = SolverConfig::new(SolverKind::MgCg).with_levels(4);
        let sol = strata::solve(&ReferenceBackend, &p, &cfg, &f, &mut |_, _| {}).unwrap();
        let rel = residual(&a, &sol.u, &f);
        assert!(rel <= 1.01e-5, "reference {g:?} {bc}: {rel:e}");
    }
}

/// A is symmetric bit for bit and conserves: A·1 = δ V (the row sums are the zero-order
/// term's, nothing leaves through a zero-flux or periodic side); with coefficient fields too,
/// and with advection the column sums are (the advective fluxes telescope).
#[test]
fn the_operator_is_symmetric_and_conserves() {
    for (g, bc) in conditions() {
        let mut p = problem(g, bc, 12, 6);
        let closed = !p.boundaries.any_dirichlet();
        for fields in [false, true, true] {
            let advect = fields && p.coefficients.is_some();
            if fields {
                let mut c = Coefficients::smooth_for(g, p.n, p.nz, 10.0);
                if advect {
                    let xi: Vec<f64> = (0..c.kx.len())
                        .map(|i| ((i * 7) % 13) as f64 - 6.0)
                        .collect();
                    c.xi = Some([xi.clone(), xi.iter().map(|v| -0.5 * v).collect(), xi]);
                }
                p.coefficients = Some(Arc::new(c));
            }
            let a = strata::matrix::assemble(&p).unwrap();
            let ctx = format!("{g:?} {bc} fields {fields} advection {advect}");
            let size = a.size;
            let mut dense = vec![0.0; size * size];
            for ((r, c), v) in a.rows.iter().zip(&a.cols).zip(&a.values) {
                dense[r * size + c] += v;
            }
            if !advect {
                for i in 0..size {
                    for j in 0..i {
                        assert_eq!(
                            dense[i * size + j].to_bits(),
                            dense[j * size + i].to_bits(),
                            "{ctx}: A[{i}][{j}]"
                        );
                    }
                }
            }
            if !closed {
                continue;
            }
            let volumes = cell_volumes(&p, &[p.whole_block()]);
            let beta: Vec<f64> = match &p.coefficients {
                Some(c) => c.beta.clone(),
                None => vec![p.delta; size],
            };
            let scale = dense.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for i in 0..size {
                let want = beta[i] * volumes[i];
                let row: f64 = (0..size).map(|j| dense[i * size + j]).sum();
                let col: f64 = (0..size).map(|j| dense[j * size + i]).sum();
                let sum = if advect { col } else { row };
                assert!(
                    (sum - want).abs() <= 1e-12 * scale,
                    "{ctx}: cell {i}: sum {sum:e}, β V {want:e}"
                );
            }
        }
    }
}

/// The manufactured solution of each condition converges at second order (error ratio ≥ 3.5
/// from n = 16 to 32, ω fixed).
#[test]
fn manufactured_solutions_converge_at_second_order() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for (g, bc) in conditions() {
        let errors: Vec<f64> = [16, 32]
            .iter()
            .map(|&n| {
                let mut p = problem(g, bc, n, n);
                p.omega = Some(if g == Geometry::Box { 0.05 } else { 0.02 });
                let f = build_rhs(&p, RhsKind::Manufactured, 0, &p.whole_block());
                let cfg = SolverConfig::new(SolverKind::MgCg)
                    .with_levels(3)
                    .with_rtol(1e-11)
                    .with_precision(strata::solver::Precision::F64);
                let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
                manufactured_error(&p, &sol.u).1
            })
            .collect();
        let ratio = errors[0] / errors[1];
        eprintln!("{g:?} {bc}: RMS errors {errors:?}, ratio {ratio:.2}");
        assert!(ratio >= 3.5, "{g:?} {bc}: ratio {ratio}");
    }
}

/// δ = 0 with no Dirichlet side: singular, solved on the projected right-hand side in the
/// regular problem's count ± 2 (one-level cg within 2×), the projected system's residual below
/// rtol, the answer of zero volume-weighted mean; refused without projection.
#[test]
fn a_box_with_no_dirichlet_side_is_singular_and_solved() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let (n, nz) = (32, 16);
    for bc in ["neumann", "periodic", "x=periodic,y=neumann"] {
        let mut p = problem(Geometry::Box, bc, n, nz);
        p.delta = 0.0;
        assert!(p.singular());
        let f = build_rhs(&p, RhsKind::Random, 3, &p.whole_block());
        let mean = f.iter().sum::<f64>() / f.len() as f64;
        let pf: Vec<f64> = f.iter().map(|v| v - mean).collect();
        let a = strata::matrix::assemble(&p).unwrap();
        let volumes = cell_volumes(&p, &[p.whole_block()]);
        let e = strata::solve(&cpu, &p, &SolverConfig::default(), &f, &mut |_, _| {})
            .expect_err("an incompatible right-hand side is refused")
            .to_string();
        assert!(e.contains("incompatible"), "{e}");
        for kind in KINDS {
            let cfg = SolverConfig::new(kind)
                .with_levels(3)
                .with_project_rhs(true);
            let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
            let deep = strata::solver::singular_levels(&cfg, &p, &[p.whole_block()]);
            let regular = ProblemParams {
                delta: 1.0,
                ..p.clone()
            };
            let base = strata::solve(&cpu, &regular, &deep, &f, &mut |_, _| {}).unwrap();
            let (its, b) = (sol.info.iterations, base.info.iterations);
            eprintln!("box {bc} {kind:?}: δ = 0 {its} iterations, δ = 1 {b}");
            assert!(sol.info.reason.converged(), "{bc} {kind:?}");
            if kind == SolverKind::Cg {
                assert!(its <= 2 * b, "{bc} cg: {its} against {b}");
            } else {
                assert!(its.abs_diff(b) <= 2, "{bc} {kind:?}: {its} against {b}");
            }
            let rel = residual(&a, &sol.u, &pf);
            assert!(rel <= 1.01e-5, "{bc} {kind:?}: {rel:e}");
            let m: f64 = sol.u.iter().zip(&volumes).map(|(u, v)| u * v).sum::<f64>();
            let scale = sol.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(m.abs() <= 1e-12 * scale, "{bc} {kind:?}: mean {m:e}");
        }
    }
}

/// The coarse levels keep the condition: a zero-flux face has α = 0 and a periodic face of the
/// box α = 1 on every level; the blocks say what lies beyond each side.
#[test]
fn every_level_keeps_the_condition() {
    let p = problem(Geometry::Box, "x=periodic,y=neumann", 32, 4);
    let levels = strata::stencil::build_levels(&p, p.whole_block(), 5).unwrap();
    for s in &levels {
        let n = s.block.n;
        for j in 0..n {
            let (w, e) = (s.columns[j * n], s.columns[j * n + n - 1]);
            assert_eq!((w.alpha_w, e.alpha_e), (1.0, 1.0), "n = {n}");
        }
        for i in 0..n {
            let (so, no) = (s.columns[i], s.columns[(n - 1) * n + i]);
            assert_eq!((so.alpha_s, no.alpha_n), (0.0, 0.0), "n = {n}");
        }
        assert!(s.block.periodic(Side::West) && s.block.periodic(Side::East));
        assert_eq!(s.block.ghost_sign(Side::South), Some(1.0));
        assert_eq!(s.block.bc.y, Boundary::Neumann);
    }
}

/// The persistent solver gives the one-shot answer bit for bit with periodic sides.
#[test]
fn the_persistent_solver_agrees_with_the_one_shot_solve() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let p = problem(Geometry::Box, "x=periodic,y=neumann", 32, 16);
    let cfg = SolverConfig::new(SolverKind::MgCg).with_levels(4);
    let f = build_rhs(&p, RhsKind::Random, 9, &p.whole_block());
    let once = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
    let mut s = strata::PersistentSolver::new(&cpu, &p, &cfg).unwrap();
    let mut u = vec![0.0; f.len()];
    let info = s.solve(&cpu, &f, &mut u, false).unwrap();
    assert_eq!(info.iterations, once.info.iterations);
    assert_eq!(u, once.u);
}

/// Periodic sides on the panel, any condition on the sphere, and nonsense are refused with the
/// setting named.
#[test]
fn impossible_conditions_are_refused() {
    let cpu = CpuBackend::new(Some(1)).unwrap();
    let f = vec![0.0; 8 * 8 * 4];
    let cases = [
        (Geometry::Panel, "x=periodic"),
        (Geometry::Sphere, "neumann"),
    ];
    for (g, bc) in cases {
        let p = problem(g, bc, 8, 4);
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("boundary"), "{g:?} {bc}: {e}");
        let cfg = SolverConfig::default().with_levels(2);
        assert!(strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).is_err());
    }
}

/// δ = 0 with coefficient fields (β zero everywhere) on a periodic box: singular with κ fields
/// (symmetric: the zero-mean answer) and with advection, whose flux form keeps 1ᵀA = 0 so the
/// same projection makes f compatible, while A's own null space is not the constants: gcr and
/// bicgstab meet rtol on the projected system, and the answer is left as the iteration
/// reached it (no mean removed, which would break A u = f).
#[test]
fn singular_problems_with_coefficient_fields_and_advection() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let (n, nz) = (32, 16);
    let mut p = problem(Geometry::Box, "periodic", n, nz);
    p.delta = 0.0;
    let mut c = Coefficients::smooth(n, nz, 10.0);
    c.beta = vec![0.0; c.kx.len()];
    p.coefficients = Some(Arc::new(c.clone()));
    assert!(p.singular() && !p.has_advection());
    let f = build_rhs(&p, RhsKind::Random, 6, &p.whole_block());
    let mean = f.iter().sum::<f64>() / f.len() as f64;
    let pf: Vec<f64> = f.iter().map(|v| v - mean).collect();
    let volumes = cell_volumes(&p, &[p.whole_block()]);
    let a = strata::matrix::assemble(&p).unwrap();
    for kind in [SolverKind::MgCg, SolverKind::Gcr] {
        let cfg = SolverConfig::new(kind).with_project_rhs(true);
        let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
        assert!(sol.info.reason.converged(), "{kind:?}");
        assert!(residual(&a, &sol.u, &pf) <= 1.01e-5, "{kind:?}");
        let m: f64 = sol.u.iter().zip(&volumes).map(|(u, v)| u * v).sum();
        let scale = sol.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(m.abs() <= 1e-12 * scale, "{kind:?}: mean {m:e}");
    }
    // Advection with a divergent ξ (A·1 ≠ 0, 1ᵀA = 0).
    let xi: Vec<f64> = (0..c.kx.len())
        .map(|i| 10.0 * (((i / nz) % n) as f64 * 0.4).sin())
        .collect();
    c.xi = Some([
        xi.clone(),
        xi.iter().map(|v| 0.5 * v).collect(),
        vec![0.0; xi.len()],
    ]);
    p.coefficients = Some(Arc::new(c));
    assert!(p.singular() && p.has_advection());
    let a = strata::matrix::assemble(&p).unwrap();
    let ones = a.apply(&vec![1.0; a.size]);
    let biggest = a.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let row_sum = ones.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(
        row_sum > 1e-6 * biggest,
        "A·1 = 0 ({row_sum:e} of {biggest:e}): the test's ξ is divergence-free"
    );
    let e = strata::solve(
        &cpu,
        &p,
        &SolverConfig::new(SolverKind::Gcr),
        &f,
        &mut |_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("incompatible"), "{e}");
    for kind in [SolverKind::Gcr, SolverKind::BiCgStab] {
        let cfg = SolverConfig::new(kind).with_project_rhs(true);
        let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
        eprintln!(
            "advection, δ = 0, {kind:?}: {} iterations",
            sol.info.iterations
        );
        assert!(
            sol.info.reason.converged(),
            "{kind:?}: {:?}",
            sol.info.reason
        );
        let rel = residual(&a, &sol.u, &pf);
        assert!(rel <= 1.01e-5, "{kind:?}: {rel:e}");
    }
}
