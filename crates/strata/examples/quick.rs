use strata::backend::cpu::CpuBackend;
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{MgParams, SolveParams, SolverKind};
use strata::stencil::Block;
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(128);
    let nz: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(128);
    let p = ProblemParams {
        n,
        nz,
        ..Default::default()
    };
    let b = CpuBackend::new(None).unwrap();
    for rhs in [RhsKind::Random, RhsKind::Bump] {
        let f = build_rhs(&p, rhs, 1, &Block::whole(n));
        for kind in [SolverKind::Cg, SolverKind::Mg, SolverKind::MgCg] {
            let s = strata::solve(
                &b,
                &p,
                kind,
                &MgParams::default(),
                &SolveParams::default(),
                &f,
                &mut |_, _| {},
            )
            .unwrap();
            println!(
                "{rhs:?} {:?} its {} reason {:?} rel {:.3e} t {:.3}s per-it {:.2}ms",
                kind,
                s.info.iterations,
                s.info.reason,
                s.info.relative_residual(),
                s.info.seconds,
                1e3 * s.info.seconds / s.info.iterations as f64
            );
        }
    }
}
