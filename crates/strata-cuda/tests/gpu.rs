//! The CUDA backend's solvers against the CPU backend's. These need an NVIDIA GPU, so they are
//! ignored by default; `scripts/gpu-check` runs them with `--ignored`. Every kernel is checked
//! against the reference by the shared conformance suite (tests/conformance.rs).

use strata::backend::cpu::CpuBackend;
use strata::grid::Block;
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata_cuda::CudaBackend;

fn gpu() -> CudaBackend {
    CudaBackend::new(0).expect("a CUDA device")
}

/// cg, mg and mg-cg on the GPU give the CPU's iteration counts (±1) and its solution to 1e-10.
fn solvers_agree(n: usize) {
    let p = ProblemParams {
        n,
        nz: 128,
        ..Default::default()
    };
    let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(n));
    let (g, c) = (gpu(), CpuBackend::new(None).unwrap());
    for kind in [SolverKind::Cg, SolverKind::Mg, SolverKind::MgCg] {
        let cfg = SolverConfig::new(kind);
        let a = strata::solve(&g, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
        let b = strata::solve(&c, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
        let scale = b.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff =
            a.u.iter()
                .zip(&b.u)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        println!(
            "n = {n} {}: gpu {} its, cpu {} its, max rel diff {:.2e}, gpu {:.4} s, cpu {:.4} s",
            kind.name(),
            a.info.iterations,
            b.info.iterations,
            diff / scale,
            a.info.seconds,
            b.info.seconds
        );
        assert!(a.info.reason.converged(), "{kind:?}: {:?}", a.info.reason);
        assert!(
            a.info.iterations.abs_diff(b.info.iterations) <= 1,
            "{kind:?}"
        );
        assert!(
            diff <= 1e-10 * scale,
            "{kind:?}: solutions differ by {:.2e} relative",
            diff / scale
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn solvers_agree_with_the_cpu_at_128() {
    solvers_agree(128);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn solvers_agree_with_the_cpu_at_512() {
    solvers_agree(512);
}

/// With per-cell coefficient fields (smooth, contrast 10, and with an advection vector), every
/// solver that takes the operator gives the CPU's iteration counts and its solution to 1e-9.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn coefficient_solves_agree_with_the_cpu() {
    use std::sync::Arc;
    use strata::problem::{Geometry, Grading};
    use strata::solver::Preconditioner;
    let (g, c) = (gpu(), CpuBackend::new(None).unwrap());
    for geometry in [Geometry::Panel, Geometry::Box] {
        let mut coeffs = strata_conformance::coefficient_fields(96, 64, 5);
        let advected = Arc::new(coeffs.clone());
        coeffs.xi = None;
        let symmetric = Arc::new(coeffs);
        let base = ProblemParams {
            n: 96,
            nz: 64,
            geometry,
            grading: Grading::Graded,
            ..Default::default()
        };
        let rhs = build_rhs(&base, RhsKind::Random, 1, &Block::whole(96));
        let runs = [
            (symmetric.clone(), SolverConfig::new(SolverKind::MgCg)),
            (symmetric.clone(), SolverConfig::new(SolverKind::Mg)),
            (symmetric, SolverConfig::new(SolverKind::Cg)),
            (advected.clone(), SolverConfig::new(SolverKind::Gcr)),
            (
                advected.clone(),
                SolverConfig::new(SolverKind::BiCgStab).with_preconditioner(Preconditioner::Line),
            ),
            (advected, SolverConfig::new(SolverKind::BiCgStab)),
        ];
        for (coeffs, cfg) in runs {
            let p = ProblemParams {
                coefficients: Some(coeffs),
                ..base.clone()
            };
            let a = strata::solve(&g, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
            let b = strata::solve(&c, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
            let scale = b.u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let diff =
                a.u.iter()
                    .zip(&b.u)
                    .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            let what = format!("{geometry:?} {} {:?}", cfg.kind.name(), cfg.preconditioner);
            println!(
                "coefficients, {what}: gpu {} its, cpu {} its, max rel diff {:.2e}",
                a.info.iterations,
                b.info.iterations,
                diff / scale
            );
            assert!(a.info.reason.converged(), "{what}: {:?}", a.info.reason);
            assert_eq!(a.info.iterations, b.info.iterations, "{what}");
            assert!(
                diff <= 1e-9 * scale,
                "{what}: differ by {:.2e}",
                diff / scale
            );
        }
    }
}
