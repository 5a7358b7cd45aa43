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
