//! The preconditioner on its own (`PersistentSolver::precondition`), as an outer Krylov method of
//! another library (PETSc's KSP) uses it: a CG written here on host arrays with strata's
//! `apply` and `precondition` takes the iterations of strata's own mg-cg (±1) for the paper's
//! and the default configuration; each solver's preconditioner is linear (fp64) and reduces
//! the residual; a wrong length or a non-finite value is refused.

use strata::backend::cpu::CpuBackend;
use strata::grid::Block;
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata::PersistentSolver;

fn problem() -> ProblemParams {
    ProblemParams {
        n: 32,
        nz: 16,
        ..Default::default()
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Preconditioned CG on host arrays, stopped at ‖r‖ ≤ rtol ‖f‖ (u0 = 0); β in the
/// Polak–Ribière form when `flexible` (as strata's mg-cg and PETSc's KSPFCG), else
/// Fletcher–Reeves (PETSc's KSPCG). Returns the iterations.
fn pcg(
    s: &mut PersistentSolver<CpuBackend>,
    b: &CpuBackend,
    f: &[f64],
    rtol: f64,
    flexible: bool,
) -> usize {
    let n = f.len();
    let (mut u, mut r, mut z, mut q) = (vec![0.0; n], f.to_vec(), vec![0.0; n], vec![0.0; n]);
    let stop = rtol * dot(f, f).sqrt();
    s.precondition(b, &r, &mut z).unwrap();
    let mut p = z.clone();
    let mut rz = dot(&r, &z);
    for it in 1..=200 {
        s.apply(b, &p, &mut q).unwrap();
        let alpha = rz / dot(&p, &q);
        let r_old = r.clone();
        for i in 0..n {
            u[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        if dot(&r, &r).sqrt() <= stop {
            return it;
        }
        s.precondition(b, &r, &mut z).unwrap();
        let rz_new = dot(&r, &z);
        let beta = if flexible {
            let dr: Vec<f64> = r.iter().zip(&r_old).map(|(a, b)| a - b).collect();
            dot(&z, &dr) / rz
        } else {
            rz_new / rz
        };
        rz = rz_new;
        for i in 0..n {
            p[i] = z[i] + beta * p[i];
        }
    }
    panic!("no convergence in 200 iterations");
}

#[test]
fn cg_around_the_preconditioner_takes_mg_cgs_iterations() {
    let b = CpuBackend::new(Some(2)).unwrap();
    let p = problem();
    let f = build_rhs(&p, RhsKind::Random, 11, &Block::whole(p.n));
    for (name, cfg) in [
        ("default", SolverConfig::new(SolverKind::MgCg)),
        ("paper", SolverConfig::paper(SolverKind::MgCg)),
    ] {
        let cfg = cfg.with_levels(4);
        let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
        let mut u = vec![0.0; f.len()];
        let own = s.solve(&b, &f, &mut u, false).unwrap().iterations;
        for flexible in [true, false] {
            let outer = pcg(&mut s, &b, &f, 1e-5, flexible);
            assert!(
                outer.abs_diff(own) <= 1,
                "{name} (flexible {flexible}): CG around precondition took {outer}, mg-cg {own}"
            );
        }
    }
}

#[test]
fn every_solvers_preconditioner_is_linear_and_reduces_the_residual() {
    let b = CpuBackend::new(Some(2)).unwrap();
    let p = problem();
    let r1 = build_rhs(&p, RhsKind::Random, 1, &Block::whole(p.n));
    let r2 = build_rhs(&p, RhsKind::Random, 2, &Block::whole(p.n));
    let mix: Vec<f64> = r1.iter().zip(&r2).map(|(a, b)| 3.0 * a - b).collect();
    for kind in [
        SolverKind::Cg,
        SolverKind::Mg,
        SolverKind::MgCg,
        SolverKind::Gcr,
        SolverKind::BiCgStab,
    ] {
        // fp64 throughout (the paper's configuration), so linearity holds to rounding.
        let cfg = SolverConfig::paper(kind).with_levels(4);
        let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
        let n = r1.len();
        let (mut z1, mut z2, mut zm, mut az) =
            (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        s.precondition(&b, &r1, &mut z1).unwrap();
        s.precondition(&b, &r2, &mut z2).unwrap();
        s.precondition(&b, &mix, &mut zm).unwrap();
        let scale = zm.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = (0..n)
            .map(|i| (zm[i] - (3.0 * z1[i] - z2[i])).abs())
            .fold(0.0f64, f64::max);
        assert!(
            worst <= 1e-12 * scale,
            "{kind:?}: P not linear ({worst:e} of {scale:e})"
        );
        s.apply(&b, &z1, &mut az).unwrap();
        let res: Vec<f64> = r1.iter().zip(&az).map(|(r, a)| r - a).collect();
        let ratio = (dot(&res, &res) / dot(&r1, &r1)).sqrt();
        // A V-cycle contracts by far more than half; line relaxation alone (cg) much less.
        let bound = if kind == SolverKind::Cg { 1.0 } else { 0.5 };
        assert!(ratio < bound, "{kind:?}: ‖r − A P r‖ / ‖r‖ = {ratio}");
    }
}

#[test]
fn the_preconditioner_refuses_bad_arrays() {
    let b = CpuBackend::new(Some(1)).unwrap();
    let p = problem();
    let mut s = PersistentSolver::new(&b, &p, &SolverConfig::new(SolverKind::MgCg)).unwrap();
    let n = s.len();
    let mut z = vec![0.0; n];
    let e = s.precondition(&b, &vec![1.0; n - 1], &mut z).unwrap_err();
    assert!(e.to_string().contains("r has"), "{e}");
    let mut r = vec![1.0; n];
    r[(3 * p.n + 2) * p.nz + 5] = f64::NAN;
    let e = s.precondition(&b, &r, &mut z).unwrap_err().to_string();
    assert!(e.contains("r holds NaN at (i, j, k) = (2, 3, 5)"), "{e}");
}
