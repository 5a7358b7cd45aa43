//! The persistent solver: set up once, solved many times, coefficients and ω updated in place;
//! every solve equals a one-shot solve of the same problem, bit for bit on the CPU.

use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::grid::Block;
use strata::problem::{build_rhs, Coefficients, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata::PersistentSolver;

/// Every solver.
const KINDS: [SolverKind; 5] = [
    SolverKind::Cg,
    SolverKind::Mg,
    SolverKind::MgCg,
    SolverKind::Gcr,
    SolverKind::BiCgStab,
];

fn problem() -> ProblemParams {
    ProblemParams {
        n: 32,
        nz: 16,
        ..Default::default()
    }
}

fn coefficients(n: usize, nz: usize) -> Coefficients {
    let mut c = Coefficients::constant(n, nz, 1.0);
    for (i, v) in c.kx.iter_mut().enumerate() {
        *v = 1.0 + 0.5 * ((i / nz) as f64 * 0.3).sin();
    }
    for (i, v) in c.kz.iter_mut().enumerate() {
        *v = if i % nz >= nz / 2 { 50.0 } else { 1.0 };
    }
    c
}

#[test]
fn repeated_solves_equal_one_shot_solves() {
    let p = problem();
    let b = CpuBackend::new(Some(2)).unwrap();
    for kind in KINDS {
        let cfg = SolverConfig::paper(kind).with_levels(4);
        let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
        let mut u = vec![0.0; s.len()];
        for step in 0..3 {
            let rhs = build_rhs(&p, RhsKind::Random, step, &Block::whole(p.n));
            let info = s.solve(&b, &rhs, &mut u, false).unwrap();
            let once = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
            assert_eq!(
                info.iterations, once.info.iterations,
                "{kind:?} step {step}"
            );
            assert_eq!(u, once.u, "{kind:?} step {step}: not bit-identical");
        }
    }
}

#[test]
fn a_warm_start_begins_at_the_given_solution() {
    let p = problem();
    let b = CpuBackend::new(Some(2)).unwrap();
    let cfg = SolverConfig::paper(SolverKind::MgCg)
        .with_levels(4)
        .with_rtol(1e-10);
    let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
    let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(p.n));
    let mut u = vec![0.0; s.len()];
    let cold = s.solve(&b, &rhs, &mut u, false).unwrap();
    let warm = s.solve(&b, &rhs, &mut u, true).unwrap();
    assert!(
        warm.r0 < 1e-9 * cold.r0,
        "warm start residual {} vs cold {}",
        warm.r0,
        cold.r0
    );
}

#[test]
fn updated_coefficients_and_omega_solve_like_a_new_setup() {
    let p = problem();
    let b = CpuBackend::new(Some(2)).unwrap();
    let cfg = SolverConfig::paper(SolverKind::Gcr).with_levels(4);
    let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
    let rhs = build_rhs(&p, RhsKind::Random, 4, &Block::whole(p.n));
    let mut u = vec![0.0; s.len()];
    // New coefficient fields.
    let c = coefficients(p.n, p.nz);
    s.update_coefficients(&b, Some(c.clone())).unwrap();
    let info = s.solve(&b, &rhs, &mut u, false).unwrap();
    let with = ProblemParams {
        coefficients: Some(Arc::new(c)),
        ..p.clone()
    };
    let once = strata::solve(&b, &with, &cfg, &rhs, &mut |_, _| {}).unwrap();
    assert_eq!(info.iterations, once.info.iterations);
    assert_eq!(u, once.u);
    // A new ω, with the coefficients kept.
    s.update_omega(&b, 0.05).unwrap();
    s.solve(&b, &rhs, &mut u, false).unwrap();
    let omega = ProblemParams {
        omega: Some(0.05),
        ..with.clone()
    };
    let once = strata::solve(&b, &omega, &cfg, &rhs, &mut |_, _| {}).unwrap();
    assert_eq!(u, once.u);
    // Back to the model problem.
    s.update_coefficients(&b, None).unwrap();
    s.solve(&b, &rhs, &mut u, false).unwrap();
    let model = ProblemParams {
        omega: Some(0.05),
        ..p.clone()
    };
    assert_eq!(
        u,
        strata::solve(&b, &model, &cfg, &rhs, &mut |_, _| {})
            .unwrap()
            .u
    );
}

#[test]
fn bad_calls_are_errors() {
    let p = problem();
    let b = CpuBackend::new(Some(1)).unwrap();
    let cfg = SolverConfig::paper(SolverKind::Mg).with_levels(4);
    let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
    let mut u = vec![0.0; s.len()];
    let e = s
        .solve(&b, &[1.0; 7], &mut u, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rhs has 7 values"), "{e}");
    let e = s
        .update_coefficients(&b, Some(Coefficients::constant(16, 16, 1.0)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("coefficients are given on 16x16x16"), "{e}");
    let e = s.update_omega(&b, -1.0).unwrap_err().to_string();
    assert!(e.contains("omega must be finite and positive"), "{e}");
    // The solver still works after refused updates.
    let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(p.n));
    assert!(s.solve(&b, &rhs, &mut u, false).unwrap().reason.converged());
    // cg and mg-cg refuse a non-symmetric operator at set-up and at update.
    let mut adv = coefficients(p.n, p.nz);
    adv.xi = Some([0, 1, 2].map(|_| vec![0.3; p.n * p.n * p.nz]));
    let mut cg = PersistentSolver::new(&b, &p, &SolverConfig::paper(SolverKind::Cg)).unwrap();
    let e = cg
        .update_coefficients(&b, Some(adv))
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a symmetric operator"), "{e}");
}

/// rtol is relative to ‖f‖ (PETSc's default): a warm start far off the new solution (the
/// coefficients changed) still ends with ‖f − A u‖ < rtol ‖f‖, which the paper's rule (relative
/// to ‖r₀‖) does not promise; from zero the two rules are the same.
#[test]
fn rtol_is_relative_to_the_rhs_so_warm_starts_meet_it() {
    use strata::solver::{RelativeTo, SolveParams};
    let p = problem();
    let b = CpuBackend::new(Some(2)).unwrap();
    let rhs = build_rhs(&p, RhsKind::Random, 4, &Block::whole(p.n));
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut finals = vec![];
    for relative_to in [RelativeTo::Rhs, RelativeTo::InitialResidual] {
        let cfg = SolverConfig::paper(SolverKind::MgCg)
            .with_levels(4)
            .with_stopping(SolveParams {
                rtol: 1e-6,
                relative_to,
                ..Default::default()
            });
        let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
        let mut u = vec![0.0; s.len()];
        let cold = s.solve(&b, &rhs, &mut u, false).unwrap();
        assert_eq!(
            cold.reference, cold.r0,
            "{relative_to:?}: from zero r0 = |f|"
        );
        s.update_coefficients(&b, Some(coefficients(p.n, p.nz)))
            .unwrap();
        let warm = s.solve(&b, &rhs, &mut u, true).unwrap();
        let mut au = vec![0.0; s.len()];
        s.apply(&b, &u, &mut au).unwrap();
        let r: Vec<f64> = au.iter().zip(&rhs).map(|(a, f)| a - f).collect();
        let rel = norm(&r) / norm(&rhs);
        assert!(
            warm.r0 > norm(&rhs),
            "the warm start is far off: r0 {:e}",
            warm.r0
        );
        match relative_to {
            RelativeTo::Rhs => {
                assert!(rel < 1e-6, "|f - A u| / |f| = {rel:e}");
                assert!((warm.relative_residual() - rel).abs() <= 1e-3 * rel);
            }
            RelativeTo::InitialResidual => assert_eq!(warm.reference, warm.r0),
        }
        finals.push(rel);
    }
    assert!(finals[1] > finals[0], "{finals:?}");
}

/// Coefficient fields held in another backend's memory (a GPU's, `ResidentCells`) are refused by
/// the host backends with a message, never taken for the model problem; the solver keeps its
/// operator and still solves; a wrong number of levels is refused too, and a non-symmetric
/// operator for cg.
#[test]
fn host_backends_refuse_fields_in_device_memory() {
    use strata::backend::reference::ReferenceBackend;
    use strata::backend::Fields;
    use strata::stencil::ResidentCells;
    let p = problem();
    let cfg = SolverConfig::paper(SolverKind::Mg).with_levels(3);
    let b = CpuBackend::new(None).unwrap();
    let rhs = build_rhs(&p, RhsKind::Random, 2, &Block::whole(p.n));
    let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
    let mut before = vec![0.0; s.len()];
    s.solve(&b, &rhs, &mut before, false).unwrap();
    let cells = |n: usize| {
        (0..n)
            .map(|_| ResidentCells(Arc::new(())))
            .collect::<Vec<_>>()
    };
    let e = s
        .update_resident_coefficients(&b, cells(3), true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("held in a GPU's memory"), "{e}");
    let e = s
        .update_resident_coefficients(&b, cells(2), true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("given for 2 levels, the solver has 3"), "{e}");
    assert!(!s.coefficients_resident());
    let mut after = vec![0.0; s.len()];
    s.solve(&b, &rhs, &mut after, false).unwrap();
    assert_eq!(before, after);
    // cg and mg-cg refuse fields with an advection vector before anything else.
    let mut cg = PersistentSolver::new(&b, &p, &SolverConfig::paper(SolverKind::Cg)).unwrap();
    let levels = cg.config().num_levels();
    let e = cg
        .update_resident_coefficients(&b, cells(levels), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cg needs a symmetric operator"), "{e}");
    // The reference backend refuses such a stencil as well.
    let mut levels = strata::stencil::build_levels(&p, Block::whole(p.n), 1).unwrap();
    levels[0].resident = Some(ResidentCells(Arc::new(())));
    let e = ReferenceBackend.prepare_level(&levels[0]).unwrap_err();
    assert!(e.to_string().contains("held in a GPU's memory"), "{e}");
}

#[test]
fn a_ranks_block_is_estimated_by_its_own_shape() {
    // With field bytes proportional to the cells, a strip of n/2 × n columns needs half what
    // the n × n level needs (every level halves both sides), for every solver and precision,
    // with and without coefficient fields; a square block is the whole level's estimate.
    // (The distributed set-up counted a strip as the square of its longer side: twice.)
    use strata::solver::Precision;
    let nz = 16;
    let bytes = |nx: usize, ny: usize, _| (nx * ny * nz * 8) as u64;
    for with_fields in [false, true] {
        let n = 64;
        let p = ProblemParams {
            n,
            nz,
            coefficients: with_fields.then(|| Arc::new(coefficients(n, nz))),
            ..Default::default()
        };
        for kind in KINDS {
            for precision in [Precision::F64, Precision::Mixed] {
                let cfg = SolverConfig::paper(kind)
                    .with_levels(4)
                    .with_precision(precision);
                let square = strata::field_memory(&p, &cfg, |n, s| bytes(n, n, s));
                let strip = strata::block_field_memory(&p, &cfg, (n / 2, n), bytes);
                let whole = strata::block_field_memory(&p, &cfg, (n, n), bytes);
                assert_eq!(whole, square, "{kind:?} {precision:?}");
                assert_eq!(
                    2 * strip,
                    square,
                    "{kind:?} {precision:?} fields {with_fields}"
                );
            }
        }
    }
}

/// Input that is not finite is an error naming the array and the cell (no "did not converge"
/// after no iteration, which a caller checking only the status would take for an answer); the
/// solver solves again after it.
#[test]
fn input_that_is_not_finite_is_an_error_with_its_cell() {
    let p = problem();
    let b = CpuBackend::new(Some(2)).unwrap();
    let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(p.n));
    let at = |i: usize, j: usize, k: usize| (j * p.n + i) * p.nz + k;
    for kind in KINDS {
        let mut s = PersistentSolver::new(&b, &p, &SolverConfig::new(kind)).unwrap();
        let mut u = vec![0.0; rhs.len()];
        let mut bad = rhs.clone();
        bad[at(3, 5, 7)] = f64::NAN;
        let e = s.solve(&b, &bad, &mut u, false).unwrap_err().to_string();
        assert!(
            e.contains("rhs") && e.contains("NaN") && e.contains("(3, 5, 7)"),
            "{kind:?}: {e}"
        );
        // An initial guess with an infinity.
        let mut guess = vec![0.0; rhs.len()];
        guess[at(0, 31, 15)] = f64::INFINITY;
        let e = s.solve(&b, &rhs, &mut guess, true).unwrap_err().to_string();
        assert!(
            e.contains("u ") && e.contains("inf") && e.contains("(0, 31, 15)"),
            "{kind:?}: {e}"
        );
        // Finite values whose squared norm overflows.
        let huge: Vec<f64> = rhs.iter().map(|v| v * 1e300).collect();
        let e = s.solve(&b, &huge, &mut u, false).unwrap_err().to_string();
        assert!(e.contains("overflow"), "{kind:?}: {e}");
        // The solver is unharmed.
        let info = s.solve(&b, &rhs, &mut u, false).unwrap();
        assert!(info.reason.converged(), "{kind:?}");
    }
}

/// A solver set up on the model problem and then given horizontally anisotropic fields (how the
/// C, Fortran and Python front ends always set fields) takes the V(2,2) cycle that mg's default
/// takes for them when set up with them (`steps_for_operator`), with that solver's iterations
/// and answer bit for bit; V(1,1) again when the fields go; steps given in the configuration stay.
#[test]
fn new_fields_take_the_smoothing_steps_of_a_new_setup() {
    use strata::solver::{FIELD_STEPS_ANISOTROPY, FIELD_STEPS_MIN_N};
    let p = ProblemParams {
        n: FIELD_STEPS_MIN_N,
        nz: 8,
        ..Default::default()
    };
    let b = CpuBackend::new(Some(2)).unwrap();
    let cfg = SolverConfig::new(SolverKind::Mg);
    let steps = |s: &PersistentSolver<CpuBackend>| {
        let mg = &s.config().multigrid;
        (mg.pre_smooth, mg.post_smooth)
    };
    let rhs = build_rhs(&p, RhsKind::Random, 2, &Block::whole(p.n));
    let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
    assert_eq!(steps(&s), (1, 1));
    let c = Coefficients::smooth(p.n, p.nz, 10.0);
    assert!(c.horizontal_anisotropy() >= FIELD_STEPS_ANISOTROPY);
    s.update_coefficients(&b, Some(c.clone())).unwrap();
    assert_eq!(steps(&s), (2, 2));
    let with = ProblemParams {
        coefficients: Some(Arc::new(c.clone())),
        ..p.clone()
    };
    let mut fresh = PersistentSolver::new(&b, &with, &cfg).unwrap();
    assert_eq!(steps(&fresh), (2, 2));
    let (mut u, mut v) = (vec![0.0; s.len()], vec![0.0; s.len()]);
    let updated = s.solve(&b, &rhs, &mut u, false).unwrap();
    let set_up = fresh.solve(&b, &rhs, &mut v, false).unwrap();
    assert_eq!(updated.iterations, set_up.iterations);
    assert_eq!(u, v, "not bit-identical");
    // The model problem again: V(1,1), as a solver set up for it.
    s.update_coefficients(&b, None).unwrap();
    assert_eq!(steps(&s), (1, 1));
    s.solve(&b, &rhs, &mut u, false).unwrap();
    let once = strata::solve(&b, &p, &cfg, &rhs, &mut |_, _| {}).unwrap();
    assert_eq!(u, once.u);
    // Steps given are kept whatever the fields.
    let given = cfg.clone().with_smoothing_steps(1, 1);
    let mut kept = PersistentSolver::new(&b, &p, &given).unwrap();
    kept.update_coefficients(&b, Some(c)).unwrap();
    assert_eq!(steps(&kept), (1, 1));
}

/// A new time step that needs a deeper hierarchy (ν_CFL 84, where the coarsest of 5 levels is
/// too strongly coupled for its smoothing) takes the hierarchy a solver set up with it takes,
/// with its iterations and answer bit for bit; the old step's 5 levels come back with it.
#[test]
fn a_new_time_step_takes_the_hierarchy_of_a_new_setup() {
    let p = ProblemParams {
        n: 128,
        nz: 16,
        ..Default::default()
    };
    let b = CpuBackend::new(Some(2)).unwrap();
    let cfg = SolverConfig::new(SolverKind::Mg);
    let rhs = build_rhs(&p, RhsKind::Random, 3, &Block::whole(p.n));
    let mut s = PersistentSolver::new(&b, &p, &cfg).unwrap();
    assert_eq!(s.config().num_levels(), 5);
    let long = ProblemParams {
        cfl: 84.0,
        ..p.clone()
    }
    .omega();
    s.update_omega(&b, long).unwrap();
    let at = ProblemParams {
        omega: Some(long),
        ..p.clone()
    };
    let mut fresh = PersistentSolver::new(&b, &at, &cfg).unwrap();
    assert!(fresh.config().num_levels() > 5);
    assert_eq!(s.config(), fresh.config());
    let (mut u, mut v) = (vec![0.0; s.len()], vec![0.0; s.len()]);
    let updated = s.solve(&b, &rhs, &mut u, false).unwrap();
    let set_up = fresh.solve(&b, &rhs, &mut v, false).unwrap();
    eprintln!(
        "nu_CFL 84 after set-up at 8.4: {} cycles with {} levels",
        updated.iterations,
        s.config().num_levels()
    );
    assert_eq!(updated.iterations, set_up.iterations);
    assert_eq!(u, v, "not bit-identical");
    s.update_omega(&b, p.omega()).unwrap();
    assert_eq!(s.config().num_levels(), 5);
    s.solve(&b, &rhs, &mut u, false).unwrap();
    let back = ProblemParams {
        omega: Some(p.omega()),
        ..p.clone()
    };
    assert_eq!(
        u,
        strata::solve(&b, &back, &cfg, &rhs, &mut |_, _| {})
            .unwrap()
            .u
    );
}
