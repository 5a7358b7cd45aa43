//! The CPU backend's kernels compiled for AVX2 compute the values of the baseline build bit for
//! bit (no FMA contraction, no reordered sums: `backend::cpu::Isa`): every solver and operator
//! gives the same residual history and the same answer with either instruction set.

use std::sync::Arc;
use strata::backend::cpu::{CpuBackend, Isa};
use strata::grid::Block;
use strata::problem::{
    build_rhs, Coefficients, Geometry, Orography, ProblemParams, RhsKind, Schaer,
};
use strata::solver::{SolveParams, SolverConfig, SolverKind};

/// The residual history and the answer of `cfg` on `p`, `its` iterations exactly.
fn run(b: &CpuBackend, p: &ProblemParams, cfg: &SolverConfig) -> (Vec<f64>, Vec<f64>) {
    let panels = if p.geometry == Geometry::Sphere { 6 } else { 1 };
    let one = build_rhs(p, RhsKind::Random, 11, &Block::whole(p.n));
    let rhs: Vec<f64> = (0..panels)
        .flat_map(|q| one.iter().map(move |v| v * (1.0 + 0.1 * q as f64)))
        .collect();
    let mut history = Vec::new();
    let out = strata::solve(b, p, cfg, &rhs, &mut |_, r| history.push(r)).unwrap();
    (history, out.u)
}

fn fixed(kind: SolverKind, its: usize) -> SolverConfig {
    SolverConfig::new(kind).with_stopping(SolveParams {
        rtol: 1e-300,
        max_it: its,
        ..Default::default()
    })
}

#[test]
fn the_avx2_kernels_give_the_baseline_values_bit_for_bit() {
    if !Isa::Avx2.available() {
        eprintln!("this CPU has no AVX2: only the baseline kernels can run here");
        return;
    }
    let wide = CpuBackend::with_isa(Some(3), Isa::Avx2).unwrap();
    let base = CpuBackend::with_isa(Some(2), Isa::Baseline).unwrap();
    assert_eq!(wide.isa(), Isa::Avx2);
    let panel = ProblemParams {
        n: 32,
        nz: 24,
        ..Default::default()
    };
    let sphere = ProblemParams {
        geometry: Geometry::Sphere,
        n: 16,
        nz: 12,
        ..Default::default()
    };
    let fields = ProblemParams {
        coefficients: Some(Arc::new(Coefficients::smooth(32, 24, 10.0))),
        ..panel.clone()
    };
    let terrain = ProblemParams {
        geometry: Geometry::Box,
        height: 0.1,
        orography: Some(Arc::new(Orography::schaer(32, &Schaer::default()))),
        ..panel.clone()
    };
    let cases = [
        ("panel mg (default)", &panel, fixed(SolverKind::Mg, 4)),
        ("panel mg-cg (default)", &panel, fixed(SolverKind::MgCg, 4)),
        ("panel cg", &panel, fixed(SolverKind::Cg, 12)),
        (
            "panel mg (paper)",
            &panel,
            SolverConfig::paper(SolverKind::Mg).with_stopping(fixed(SolverKind::Mg, 4).stopping),
        ),
        ("panel gcr", &panel, fixed(SolverKind::Gcr, 4)),
        (
            "sphere mg-cg (default)",
            &sphere,
            fixed(SolverKind::MgCg, 3),
        ),
        ("coefficient fields mg", &fields, fixed(SolverKind::Mg, 3)),
        ("orography mg-cg", &terrain, fixed(SolverKind::MgCg, 3)),
    ];
    for (what, p, cfg) in cases {
        let (ha, ua) = run(&wide, p, &cfg);
        let (hb, ub) = run(&base, p, &cfg);
        assert!(ha.len() > 2, "{what}: {} residuals", ha.len());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&ha), bits(&hb), "{what}: residual histories");
        assert_eq!(ua.len(), ub.len(), "{what}");
        let differ = ua
            .iter()
            .zip(&ub)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differ, 0, "{what}: {differ} values of the answer differ");
    }
}

#[test]
fn the_environment_chooses_the_instructions_and_bad_names_are_refused() {
    assert_eq!("baseline".parse::<Isa>().unwrap(), Isa::Baseline);
    assert_eq!("avx2".parse::<Isa>().unwrap(), Isa::Avx2);
    let e = "sse9".parse::<Isa>().unwrap_err().to_string();
    assert!(e.contains("STRATA_CPU_ISA") && e.contains("sse9"), "{e}");
    assert!(Isa::Baseline.available());
    assert!(Isa::detect().available());
    let b = CpuBackend::with_isa(Some(1), Isa::Baseline).unwrap();
    use strata::backend::Fields;
    assert!(b.name().contains("baseline"), "{}", b.name());
}
