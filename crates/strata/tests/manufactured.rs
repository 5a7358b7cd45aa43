//! Second-order convergence to manufactured solutions (docs/MODEL.md §12.3): fixed ω and λ, nz = n/2,
//! solved to 1e-12, max and volume-weighted RMS errors at the cell centres.

use strata::backend::cpu::CpuBackend;
use strata::grid::{max_levels, Block, RankGrid};
use strata::problem::{build_rhs, manufactured_error, Geometry, Grading, ProblemParams, RhsKind};
use strata::solver::{MgParams, SolveParams, SolverConfig, SolverKind};

/// (max error, weighted RMS error) at size n.
fn errors(geometry: Geometry, grading: Grading, n: usize) -> (f64, f64) {
    let p = ProblemParams {
        geometry,
        grading,
        n,
        nz: n / 2,
        height: 0.1,
        lambda: 1.0,
        delta: 1.0,
        omega: Some(0.1f64.sqrt()),
        ..Default::default()
    };
    let rhs = build_rhs(&p, RhsKind::Manufactured, 0, &Block::whole(n));
    let backend = CpuBackend::new(None).unwrap();
    let mg = MgParams {
        n_levels: max_levels(n, RankGrid::single()),
        ..Default::default()
    };
    let params = SolveParams {
        rtol: 1e-12,
        max_it: 200,
        ..Default::default()
    };
    let sol = strata::solve(
        &backend,
        &p,
        &SolverConfig::paper(SolverKind::MgCg)
            .with_multigrid(mg.clone())
            .with_stopping(params.clone()),
        &rhs,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(sol.info.reason.converged(), "{:?}", sol.info.reason);
    manufactured_error(&p, &sol.u)
}

fn assert_second_order(geometry: Geometry, grading: Grading, reference_max: &[f64]) {
    let sizes = [16, 32, 64, 128];
    let errs: Vec<(f64, f64)> = sizes
        .iter()
        .map(|&n| errors(geometry, grading, n))
        .collect();
    for (w, (n, e)) in sizes.iter().zip(&errs).enumerate() {
        eprintln!(
            "{geometry:?} {grading:?} n = {n}: max {:.3e}, rms {:.3e}",
            e.0, e.1
        );
        // Within 5 % of the independent prototype's numbers (docs/MODEL.md §12.3).
        let rel = (e.0 - reference_max[w]).abs() / reference_max[w];
        assert!(
            rel < 0.05,
            "n = {n}: max error {:.4e} vs prototype {:.4e}",
            e.0,
            reference_max[w]
        );
    }
    for w in errs.windows(2) {
        let (order_max, order_rms) = ((w[0].0 / w[1].0).log2(), (w[0].1 / w[1].1).log2());
        assert!(
            order_max >= 1.9,
            "{geometry:?} {grading:?}: max-norm order {order_max:.3}"
        );
        assert!(
            order_rms >= 1.9,
            "{geometry:?} {grading:?}: rms order {order_rms:.3}"
        );
    }
}

#[test]
fn flat_box_converges_at_second_order() {
    assert_second_order(
        Geometry::Box,
        Grading::Uniform,
        &[1.227e-2, 3.118e-3, 7.825e-4, 1.958e-4],
    );
}

#[test]
fn panel_converges_at_second_order() {
    assert_second_order(
        Geometry::Panel,
        Grading::Uniform,
        &[4.350e-2, 1.094e-2, 2.739e-3, 6.849e-4],
    );
}

#[test]
fn graded_panel_converges_at_second_order() {
    assert_second_order(
        Geometry::Panel,
        Grading::Graded,
        &[2.858e-1, 7.453e-2, 1.890e-2, 4.751e-3],
    );
}
