//! Iteration counts of the solvers for the general operator with coefficient fields of growing
//! contrast, and the two ways of averaging coefficients onto coarse levels (docs/MODEL.md §15,
//! the tables in docs/COEFFICIENTS.md); then mg, mg-cg, gcr(5) + mg and bicgstab + mg with
//! every smoother (the paper's block Jacobi, red-black line Gauss–Seidel in fp64, and red-black
//! in mixed precision). The last case adds an advection vector (a non-symmetric operator: cg and
//! mg-cg do not take it, "—"). `cargo run --release --example coefficient_robustness [n] [nz]` (default 64 64),
//! on the CPU.

use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::grid::Block;
use strata::problem::{build_rhs, Averaging, Coefficients, ProblemParams, RhsKind};
use strata::solver::{Precision, Preconditioner, Smoother, SolverConfig, SolverKind};

/// α jumps by `contrast` (kz) and its square root (kx, ky) across a layer at mid-height, as at a
/// tropopause.
fn layer(n: usize, nz: usize, contrast: f64) -> Coefficients {
    let mut c = Coefficients::constant(n, nz, 1.0);
    for col in 0..n * n {
        for k in nz / 2..nz {
            let at = col * nz + k;
            c.kz[at] = contrast;
            c.kx[at] = contrast.sqrt();
            c.ky[at] = contrast.sqrt();
        }
    }
    c
}

/// Horizontal coefficients that jump by `contrast` between neighbouring columns, a checkerboard
/// (a rough, unresolved horizontal field: what coarse averaging must summarise).
fn rough(n: usize, nz: usize, contrast: f64) -> Coefficients {
    let mut c = Coefficients::constant(n, nz, 1.0);
    for j in 0..n {
        for i in 0..n {
            if (i + j) % 2 == 1 {
                for k in 0..nz {
                    let at = (j * n + i) * nz + k;
                    c.kx[at] = contrast;
                    c.ky[at] = contrast;
                }
            }
        }
    }
    c
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (n, nz) = (
        args.first().copied().unwrap_or(64),
        args.get(1).copied().unwrap_or(64),
    );
    let backend = CpuBackend::new(None).expect("cpu backend");
    let cases: Vec<(&str, Option<Coefficients>)> = vec![
        ("constant (model problem)", None),
        (
            "smooth, contrast 10",
            Some(Coefficients::smooth(n, nz, 10.0)),
        ),
        (
            "smooth, contrast 1000",
            Some(Coefficients::smooth(n, nz, 1000.0)),
        ),
        ("layer jump 1000", Some(layer(n, nz, 1000.0))),
        ("checkerboard kx, ky 100", Some(rough(n, nz, 100.0))),
        (
            "smooth, contrast 10, advection 1",
            Some(
                Coefficients::smooth(n, nz, 10.0)
                    .with_smooth_advection(1.0)
                    .expect("the synthetic advection of one panel"),
            ),
        ),
    ];
    let solvers = [
        ("cg (line)", SolverKind::Cg, Preconditioner::Line),
        ("mg-cg", SolverKind::MgCg, Preconditioner::Multigrid),
        ("gcr(5) + mg", SolverKind::Gcr, Preconditioner::Multigrid),
        (
            "bicgstab + mg",
            SolverKind::BiCgStab,
            Preconditioner::Multigrid,
        ),
        ("gcr(5) + line", SolverKind::Gcr, Preconditioner::Line),
    ];
    println!("n = {n}, nz = {nz}, nu = 8.4, rtol 1e-5, random rhs, 5 levels where multigrid");
    println!(
        "| coefficients | coarse averaging | {} |",
        solvers.map(|s| s.0).join(" | ")
    );
    println!("|---|---|{}", "---|".repeat(solvers.len()));
    for (name, coeffs) in &cases {
        for averaging in [Averaging::Arithmetic, Averaging::Harmonic] {
            if coeffs.is_none() && averaging == Averaging::Harmonic {
                continue;
            }
            let p = ProblemParams {
                n,
                nz,
                coefficients: coeffs.clone().map(Arc::new),
                ..Default::default()
            };
            let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(n));
            let mut row = vec![];
            for (_, kind, pc) in solvers {
                let mut cfg = SolverConfig::paper(kind)
                    .with_levels(5)
                    .with_preconditioner(pc)
                    .with_max_it(3000);
                cfg.multigrid.averaging = averaging;
                row.push(count(&backend, &p, &cfg, &rhs));
            }
            let avg = if coeffs.is_none() {
                "—"
            } else if averaging == Averaging::Arithmetic {
                "arithmetic"
            } else {
                "harmonic"
            };
            println!("| {name} | {avg} | {} |", row.join(" | "));
        }
    }
    every_smoother(&backend, n, nz, &cases);
}

/// The iterations of one solve, or why it stopped without converging; "—" for a solver that
/// needs a symmetric operator on one that is not.
fn count(backend: &CpuBackend, p: &ProblemParams, cfg: &SolverConfig, rhs: &[f64]) -> String {
    let symmetric = p.coefficients.as_ref().is_none_or(|c| c.is_symmetric());
    if !symmetric && cfg.kind.needs_symmetric() {
        return "—".into();
    }
    let sol = strata::solve(backend, p, cfg, rhs, &mut |_, _| {}).expect("solve");
    if sol.info.reason.converged() {
        format!("{}", sol.info.iterations)
    } else {
        format!("{:?} ({})", sol.info.reason, sol.info.iterations)
    }
}

/// mg, mg-cg, gcr(5) + mg and bicgstab + mg with each smoother (harmonic averaging, the
/// default), the paper's counts beside red-black's in fp64 (V(1,1)) and in mixed precision with
/// the solver's default cycle (the default configuration: mg-cg's is V(2,2)).
fn every_smoother(
    backend: &CpuBackend,
    n: usize,
    nz: usize,
    cases: &[(&str, Option<Coefficients>)],
) {
    let configs = [
        (
            "jacobi, fp64 (the paper's)",
            Smoother::Jacobi,
            Precision::F64,
        ),
        ("red-black, fp64", Smoother::RedBlack, Precision::F64),
        ("red-black, mixed", Smoother::RedBlack, Precision::Mixed),
    ];
    println!();
    println!("every smoother: harmonic averaging, 5 levels, 2 coarse steps");
    let mut head = vec![];
    let kinds = [
        ("mg", SolverKind::Mg),
        ("mg-cg", SolverKind::MgCg),
        ("gcr(5) + mg", SolverKind::Gcr),
        ("bicgstab + mg", SolverKind::BiCgStab),
    ];
    for (kind, _) in kinds {
        for (c, _, _) in configs {
            head.push(format!("{kind}: {c}"));
        }
    }
    println!("| coefficients | {} |", head.join(" | "));
    println!("|---|{}", "---|".repeat(head.len()));
    for (name, coeffs) in cases {
        let p = ProblemParams {
            n,
            nz,
            coefficients: coeffs.clone().map(Arc::new),
            ..Default::default()
        };
        let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(n));
        let mut row = vec![];
        for (_, kind) in kinds {
            for (_, smoother, precision) in configs {
                let mut cfg = SolverConfig::paper(kind)
                    .with_levels(5)
                    .with_smoother(smoother)
                    .with_precision(precision)
                    .with_max_it(3000);
                // Red-black in mixed precision is the default: with the solver's default
                // cycle (mg-cg's V(2,2)).
                if precision == Precision::Mixed {
                    let d = SolverConfig::new(kind).multigrid;
                    cfg = cfg.with_smoothing_steps(d.pre_smooth, d.post_smooth);
                }
                row.push(count(backend, &p, &cfg, &rhs));
            }
        }
        println!("| {name} | {} |", row.join(" | "));
    }
}
