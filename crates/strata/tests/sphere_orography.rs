//! Terrain-following coordinates on the whole sphere (docs/MODEL.md §23.6): the operator over
//! orography across panel edges and cube corners is symmetric bit for bit and conserves
//! (A·1 = β J V), has the 19-point stencil inside a panel, is the operator the solvers apply
//! (assembled from the rows and edge links against the halo exchange), any tiling and both host
//! backends give the same solve, and every solver converges in about the flat counts.

mod common;

use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::backend::prelude::*;
use strata::backend::reference::ReferenceBackend;
use strata::backend::tiled::Tiled;
use strata::comm::{Comm, SphereComm};
use strata::grid::sphere;
use strata::problem::{
    build_rhs_tiles, cell_volumes, Coefficients, Geometry, Orography, ProblemParams, RhsKind,
    Schaer,
};
use strata::solver::{SolverConfig, SolverKind};
use strata::stencil::build_sphere_levels;

/// The sphere n × n × nz under a lid at H = 0.1 over `oro`.
fn over(n: usize, nz: usize, oro: Orography) -> ProblemParams {
    ProblemParams {
        geometry: Geometry::Sphere,
        n,
        nz,
        height: 0.1,
        orography: Some(Arc::new(oro)),
        ..Default::default()
    }
}

/// Random heights on [0, 0.05): slopes in every direction, across every edge and corner.
fn rough(n: usize) -> Orography {
    let mut rng = common::Rng::new(17);
    let h = (0..6 * n * n).map(|_| 0.025 * (1.0 + rng.next())).collect();
    Orography::with_panels(6, n, h).unwrap()
}

/// Schär's mountain on the sphere with steepest slope `slope` (a = 0.25, l = 0.2 Earth radii),
/// over the edges of panels 0, 1 and 4 near their common corner.
fn mountain(n: usize, slope: f64) -> Orography {
    let m = Schaer {
        slope,
        ..Default::default()
    };
    Orography::schaer_sphere(n, &m, Orography::sphere_mountain_centre())
}

/// y ← A x on the sphere (`k × k` tiles per panel): upload, exchange the halos, apply.
fn apply<B: Backend>(b: &B, p: &ProblemParams, k: usize, x: &[f64]) -> Vec<f64> {
    let t = Tiled::new(b);
    let levels = build_sphere_levels(p, &sphere::tiles(p.n, k), 1, Default::default()).unwrap();
    let op = t.prepare_level(&levels[0]).unwrap();
    SphereComm.prepare(&t, &op).unwrap();
    let (mut xf, mut yf) = (t.alloc(&op).unwrap(), t.alloc(&op).unwrap());
    t.upload(&op, x, &mut xf).unwrap();
    SphereComm.exchange(&t, &op, &mut xf).unwrap();
    t.apply(&op, &xf, &mut yf).unwrap();
    let mut y = vec![0.0; x.len()];
    t.download(&op, &yf, &mut y).unwrap();
    y
}

/// A host array of `k × k` tiles per panel reordered to whole panels ([panel][j][i][k]).
fn whole_panels(p: &ProblemParams, k: usize, u: &[f64]) -> Vec<f64> {
    let (n, nz) = (p.n, p.nz);
    let mut whole = vec![0.0; 6 * n * n * nz];
    let mut src = u.chunks(nz);
    for t in sphere::tiles(n, k) {
        for j in t.j0..t.j0 + t.ny {
            for i in t.i0..t.i0 + t.nx {
                let o = ((t.panel.unwrap() * n + j) * n + i) * nz;
                whole[o..o + nz].copy_from_slice(src.next().unwrap());
            }
        }
    }
    whole
}

#[test]
fn the_operator_is_symmetric_conserves_and_is_what_the_solvers_apply() {
    let (n, nz) = (12, 4);
    let mut fields = Coefficients::constant_panels(6, n, nz, 1.0);
    let mut rng = common::Rng::new(5);
    for v in [
        &mut fields.kx,
        &mut fields.ky,
        &mut fields.kz,
        &mut fields.beta,
    ] {
        v.iter_mut().for_each(|x| *x = 1.0 + 0.5 * rng.next());
    }
    let with_fields = ProblemParams {
        coefficients: Some(Arc::new(fields)),
        ..over(n, nz, rough(n))
    };
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for (name, p) in [("model", over(n, nz, rough(n))), ("fields", with_fields)] {
        let m = strata::matrix::assemble(&p).unwrap();
        assert!(common::symmetric_bits(&m), "{name}: A = Aᵀ bit for bit");
        let scale = m.values.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        // A·1 = β J V |T| in every row: no wall anywhere.
        let ones = m.apply(&vec![1.0; m.size]);
        let vol = cell_volumes(&p, &sphere::tiles(n, 1));
        for (r, (&s, &v)) in ones.iter().zip(&vol).enumerate() {
            let beta = p.coefficients.as_ref().map_or(p.delta, |c| c.beta[r]);
            assert!(
                (s - beta * v).abs() <= 1e-13 * scale,
                "{name}: (A·1)[{r}] = {s}, β J V = {}",
                beta * v
            );
        }
        // Inside a panel, off its axes, a row couples to 18 others: 4 lateral and 4 diagonal
        // neighbours at its level, 4 lateral ones above and below, the column above and below.
        let row = ((n + 3) * n + 2) * nz + 1;
        let entries = m.rows.iter().filter(|&&r| r == row).count();
        assert_eq!(entries, 19, "{name}: entries of an inner row");
        // The assembled matrix is what the backends apply through the halo exchange, on whole
        // panels and on 3 × 3 tiles (whose corners carry diagonal couplings).
        let x = build_rhs_tiles(&p, RhsKind::Random, 2, &sphere::tiles(n, 1));
        let a = m.apply(&x);
        let tiled_x = build_rhs_tiles(&p, RhsKind::Random, 2, &sphere::tiles(n, 3));
        for (what, y) in [
            ("cpu", apply(&cpu, &p, 1, &x)),
            ("reference", apply(&ReferenceBackend, &p, 1, &x)),
            (
                "cpu, 3 x 3 tiles",
                whole_panels(&p, 3, &apply(&cpu, &p, 3, &tiled_x)),
            ),
        ] {
            let s = y.iter().fold(0.0f64, |s, v| s.max(v.abs()));
            let diff = a
                .iter()
                .zip(&y)
                .fold(0.0f64, |d, (u, v)| d.max((u - v).abs()));
            assert!(diff < 1e-13 * s, "{name}, {what}: {:e}", diff / s);
        }
    }
}

/// Solves of `p` with `cfg` on `k × k` tiles per panel: the solution on whole panels and the
/// iteration count.
fn solve<B: Backend>(b: &B, p: &ProblemParams, cfg: &SolverConfig, k: usize) -> (Vec<f64>, usize) {
    let tiles = sphere::tiles(p.n, k);
    let rhs = build_rhs_tiles(p, RhsKind::Random, 3, &tiles);
    let sol = strata::solve_tiles(
        &Tiled::new(b),
        &SphereComm,
        p,
        &tiles,
        cfg,
        &rhs,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(sol.info.reason.converged(), "{:?}", sol.info.reason);
    (whole_panels(p, k, &sol.u), sol.info.iterations)
}

#[test]
fn any_tiling_and_both_host_backends_give_the_same_solve() {
    let p = over(24, 8, mountain(24, 0.3));
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for kind in [SolverKind::Mg, SolverKind::MgCg] {
        let cfg = SolverConfig::new(kind).with_levels(3).with_rtol(1e-9);
        let (u1, it1) = solve(&cpu, &p, &cfg, 1);
        let (u3, it3) = solve(&cpu, &p, &cfg, 3);
        let (ur, itr) = solve(&ReferenceBackend, &p, &cfg, 3);
        assert_eq!((it3, itr), (it1, it1), "{kind:?}");
        let scale = u1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in u1.iter().zip(&u3).chain(u1.iter().zip(&ur)) {
            assert!((a - b).abs() < 1e-9 * scale, "{kind:?}: {a} {b}");
        }
    }
}

#[test]
fn every_solver_meets_rtol_over_a_mountain_in_about_the_flat_counts() {
    let (n, nz) = (32, 16);
    let cpu = CpuBackend::new(Some(2)).unwrap();
    let flat = ProblemParams {
        orography: None,
        ..over(n, nz, rough(n))
    };
    let rtol = 1e-8;
    for slope in [0.1, 0.5] {
        let p = over(n, nz, mountain(n, slope));
        let m = strata::matrix::assemble(&p).unwrap();
        for kind in [
            SolverKind::Mg,
            SolverKind::MgCg,
            SolverKind::Cg,
            SolverKind::Gcr,
            SolverKind::BiCgStab,
        ] {
            let cfg = SolverConfig::new(kind).with_levels(4).with_rtol(rtol);
            let (u, its) = solve(&cpu, &p, &cfg, 1);
            let (_, flat_its) = solve(&cpu, &flat, &cfg, 1);
            // The true residual of the assembled matrix.
            let f = build_rhs_tiles(&p, RhsKind::Random, 3, &sphere::tiles(n, 1));
            let au = m.apply(&u);
            let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
            let r = norm(&mut f.iter().zip(&au).map(|(a, b)| a - b));
            let fnorm = norm(&mut f.iter().copied());
            assert!(
                r <= 2.0 * rtol * fnorm,
                "{kind:?}, slope {slope}: ‖f − A u‖/‖f‖ = {:e}",
                r / fnorm
            );
            eprintln!(
                "sphere 6x{n}^2x{nz}, slope {slope}: {kind:?} {its} iterations (flat {flat_its})"
            );
            assert!(
                its <= flat_its + 2 || its <= 2 * flat_its,
                "{kind:?}, slope {slope}: {its} iterations, flat {flat_its}"
            );
        }
    }
}
