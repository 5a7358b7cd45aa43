//! Mixed precision (docs/MODEL.md §17): the fp32 multigrid inside an fp64 outer iteration
//! reaches the fp64 stopping test — checked here on the true residual, computed apart from the
//! solver — in the iteration counts of fp64, on the CPU and reference backends, one panel and
//! the sphere.

use strata::backend::cpu::CpuBackend;
use strata::backend::prelude::*;
use strata::backend::reference::ReferenceBackend;
use strata::field::HostField;
use strata::grid::Block;
use strata::problem::{build_rhs, Geometry, ProblemParams, RhsKind};
use strata::solver::{ConvergedReason, Precision, SolveParams, SolverConfig, SolverKind};
use strata::stencil::build_levels;

/// ‖f − A u‖ / ‖f‖ on one panel, with the reference's operator.
fn true_residual(p: &ProblemParams, rhs: &[f64], u: &[f64]) -> f64 {
    let s = &build_levels(p, Block::whole(p.n), 1).unwrap()[0];
    let r = ReferenceBackend;
    let (mut uf, mut au) = (
        HostField::zeros(p.n, p.n, p.nz),
        HostField::zeros(p.n, p.n, p.nz),
    );
    uf.set_interior(u);
    r.apply(s, &uf, &mut au).unwrap();
    let mut a = vec![0.0; rhs.len()];
    au.get_interior(&mut a);
    let num: f64 = rhs.iter().zip(&a).map(|(f, a)| (f - a).powi(2)).sum();
    let den: f64 = rhs.iter().map(|f| f * f).sum();
    (num / den).sqrt()
}

fn config(kind: SolverKind, precision: Precision, rtol: f64) -> SolverConfig {
    SolverConfig::paper(kind)
        .with_precision(precision)
        .with_stopping(SolveParams {
            rtol,
            ..Default::default()
        })
}

#[test]
fn mixed_precision_reaches_the_fp64_tolerance_in_the_fp64_counts() {
    let b = CpuBackend::new(Some(2)).unwrap();
    for cfl in [8.4, 84.0] {
        let p = ProblemParams {
            n: 64,
            nz: 32,
            cfl,
            ..Default::default()
        };
        let rhs = build_rhs(&p, RhsKind::Random, 3, &Block::whole(p.n));
        let rtol = 1e-8;
        for kind in [
            SolverKind::Mg,
            SolverKind::MgCg,
            SolverKind::Gcr,
            SolverKind::BiCgStab,
        ] {
            let mut cfg = config(kind, Precision::F64, rtol);
            if cfl > 10.0 {
                cfg = cfg.with_coarse_steps(30);
            }
            let f64_run = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
            let mixed_cfg = cfg.clone().with_precision(Precision::Mixed);
            let mixed = strata::solve(&b, &p, &mixed_cfg, &rhs, &mut |_, _| {}).unwrap();
            let ctx = format!("{kind:?} cfl {cfl}");
            assert_eq!(mixed.info.reason, ConvergedReason::ConvergedRtol, "{ctx}");
            assert!(
                mixed.info.iterations <= f64_run.info.iterations + 1,
                "{ctx}: mixed {} iterations, fp64 {}",
                mixed.info.iterations,
                f64_run.info.iterations
            );
            let res = true_residual(&p, &rhs, &mixed.u);
            assert!(res <= 1.001 * rtol, "{ctx}: true residual {res:e}");
        }
    }
}

#[test]
fn the_reference_and_the_cpu_give_the_same_mixed_iterations() {
    let p = ProblemParams {
        n: 32,
        nz: 16,
        ..Default::default()
    };
    let rhs = build_rhs(&p, RhsKind::Random, 5, &Block::whole(p.n));
    let cfg = config(SolverKind::MgCg, Precision::Mixed, 1e-8).with_levels(4);
    let cpu = CpuBackend::new(Some(3)).unwrap();
    let a = strata::solve(&cpu, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
    let b = strata::solve(&ReferenceBackend, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
    assert_eq!(a.info.iterations, b.info.iterations);
    let d =
        a.u.iter()
            .zip(&b.u)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
    let m = b.u.iter().map(|x| x.abs()).fold(0.0, f64::max);
    assert!(d <= 1e-6 * m, "{d:e} of {m:e}");
}

#[test]
fn mixed_precision_on_the_sphere() {
    let p = ProblemParams {
        geometry: Geometry::Sphere,
        n: 16,
        nz: 8,
        ..Default::default()
    };
    let b = CpuBackend::new(Some(2)).unwrap();
    let rhs = build_rhs(&p, RhsKind::Random, 7, &Block::whole(p.n));
    let rhs: Vec<f64> = (0..6).flat_map(|_| rhs.iter().copied()).collect();
    let f64_run = strata::solve(
        &b,
        &p,
        &config(SolverKind::MgCg, Precision::F64, 1e-8).with_levels(3),
        &rhs,
        &mut |_, _| {},
    )
    .unwrap();
    let mixed = strata::solve(
        &b,
        &p,
        &config(SolverKind::MgCg, Precision::Mixed, 1e-8).with_levels(3),
        &rhs,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(mixed.info.reason, ConvergedReason::ConvergedRtol);
    assert!(mixed.info.iterations <= f64_run.info.iterations + 1);
    assert!(mixed.info.relative_residual() <= 1e-8);
}

#[test]
fn mixed_precision_needs_a_multigrid() {
    let cfg = SolverConfig::paper(SolverKind::Cg).with_precision(Precision::Mixed);
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("precision") && e.contains("cg"), "{e}");
    let cfg = SolverConfig::paper(SolverKind::Gcr)
        .with_preconditioner(strata::solver::Preconditioner::Line)
        .with_precision(Precision::Mixed);
    assert!(cfg.validate().is_err());
}
