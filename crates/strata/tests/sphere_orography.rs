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
use strata::grid::sphere;
use strata::problem::{
    build_rhs_tiles, cell_volumes, Coefficients, Geometry, Orography, ProblemParams, RhsKind,
    Schaer,
};
use strata::solver::{SolverConfig, SolverKind};

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

/// y ← A x on the sphere ([`common::sphere_apply`]).
fn apply<B: Backend>(b: &B, p: &ProblemParams, k: usize, x: &[f64]) -> Vec<f64> {
    common::sphere_apply(b, p, k, x)
}

/// A host array of `k × k` tiles per panel reordered to whole panels.
fn whole_panels(p: &ProblemParams, k: usize, u: &[f64]) -> Vec<f64> {
    common::whole_panels(p.n, p.nz, k, u)
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
    let (u, its, _) = common::solve_sphere_tiles(b, p, cfg, k);
    (u, its)
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

/// The manufactured solution of docs/MODEL.md §23.6 on the sphere over a Gaussian mountain of
/// steepest slope `slope` (half-width 0.25 Earth radii, across the edges of panels 0, 1 and 4):
/// (max error, RMS error) at n (nz = n / 2), H = 0.2, ω = 0.5. `u = Y(q) cos(π(ζ − 1)/H) +
/// ψ(q) φ(ζ)` with `φ = (ζ − 1) − (ζ − 1)²/(2H)` and `ψ = J ⟨∇h, ∇Y⟩ / (λ² (1 + h)² + |∇h|²)`
/// (gradients on the unit sphere), which makes the conormal flux vanish at the ground (and at
/// the lid, where the slopes vanish); the right-hand side is exact by the divergence theorem:
/// the flux `G ∇u` in each panel's gnomonic coordinates over every face of every cell (3 × 3
/// Gauss points), and `∫ δ J r² √g u` over the cell (3 × 3 × 3).
fn manufactured(n: usize, slope: f64) -> (f64, f64) {
    use rayon::prelude::*;
    use std::f64::consts::PI;
    let (nz, top, a) = (n / 2, 0.2, 0.25f64);
    let centre = Orography::sphere_mountain_centre();
    // h = h0 exp(−|q − c|²/a²) (the chordal distance), its steepest slope about 0.858 h0 / a.
    let h0 = slope * a / ((2.0f64).sqrt() * (-0.5f64).exp());
    let dot = |x: [f64; 3], y: [f64; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    let tangent = |q: [f64; 3], g: [f64; 3]| {
        let s = dot(q, g);
        [g[0] - s * q[0], g[1] - s * q[1], g[2] - s * q[2]]
    };
    let height = |q: [f64; 3]| h0 * (-2.0 * (1.0 - dot(q, centre)) / (a * a)).exp();
    let harmonic = |q: [f64; 3]| 2.0 * q[2] * q[2] - q[0] * q[0] - q[1] * q[1] + q[0] * q[1];
    let psi = |q: [f64; 3]| {
        let h = height(q);
        let gh = tangent(q, centre.map(|c| h * 2.0 / (a * a) * c));
        let gy = tangent(q, [-2.0 * q[0] + q[1], -2.0 * q[1] + q[0], 4.0 * q[2]]);
        (1.0 - h / top) * dot(gh, gy) / ((1.0 + h).powi(2) + dot(gh, gh))
    };
    let c = |z: f64| (PI * (z - 1.0) / top).cos();
    let c1 = |z: f64| -(PI / top) * (PI * (z - 1.0) / top).sin();
    let phi = |z: f64| (z - 1.0) - (z - 1.0).powi(2) / (2.0 * top);
    let phi1 = |z: f64| 1.0 - (z - 1.0) / top;
    // A function of the panel's point and its gnomonic gradient (central differences).
    let grad = |p: usize, x: f64, y: f64, g: &dyn Fn([f64; 3]) -> f64| -> (f64, [f64; 2]) {
        let e = 1e-6;
        let at = |x: f64, y: f64| g(sphere::point(p, x, y));
        (
            at(x, y),
            [
                (at(x + e, y) - at(x - e, y)) / (2.0 * e),
                (at(x, y + e) - at(x, y - e)) / (2.0 * e),
            ],
        )
    };
    let solution = |p: usize, x: f64, y: f64, z: f64| {
        let q = sphere::point(p, x, y);
        harmonic(q) * c(z) + psi(q) * phi(z)
    };
    let (w2, lam2, delta) = (0.25, 1.0, 1.0);
    // G ∇u at a point: the horizontal flux (x, y) and the vertical one.
    let flux = |p: usize, x: f64, y: f64, z: f64| -> [f64; 3] {
        let (uy, gy) = grad(p, x, y, &harmonic);
        let (up, gp) = grad(p, x, y, &psi);
        let (h, gh) = grad(p, x, y, &height);
        let tau = 1.0 - (z - 1.0) / top;
        let jac = 1.0 - h / top;
        let r = z + h * tau;
        let rho = (1.0 + x * x + y * y).sqrt();
        let sg = 1.0 / rho.powi(3);
        let k = [
            [(1.0 + x * x) / rho, x * y / rho],
            [x * y / rho, (1.0 + y * y) / rho],
        ];
        let gu = [0, 1].map(|d| c(z) * gy[d] + phi(z) * gp[d]);
        let uz = uy * c1(z) + up * phi1(z);
        let gr = [tau * gh[0], tau * gh[1]];
        let kgr = [0, 1].map(|d| k[d][0] * gr[0] + k[d][1] * gr[1]);
        let kgu = [0, 1].map(|d| k[d][0] * gu[0] + k[d][1] * gu[1]);
        let g33 = (lam2 * r * r * sg + kgr[0] * gr[0] + kgr[1] * gr[1]) / jac;
        [
            jac * kgu[0] - kgr[0] * uz,
            jac * kgu[1] - kgr[1] * uz,
            -(kgr[0] * gu[0] + kgr[1] * gu[1]) + g33 * uz,
        ]
    };
    let (gauss, quad2) = (common::GAUSS3, common::quad2);
    let oro = Orography::with_panels(
        6,
        n,
        (0..6 * n * n)
            .map(|m| height(sphere::cell_centre(m / (n * n), m % n, m % (n * n) / n, n)))
            .collect(),
    )
    .unwrap();
    let mut p = over(n, nz, oro);
    (p.height, p.omega, p.delta) = (top, Some(0.5), delta);
    let vert = strata::problem::VerticalGrid::new(&p);
    let d = 2.0 / n as f64;
    let f: Vec<f64> = (0..6 * n * n * nz)
        .into_par_iter()
        .map(|m| {
            let (col, k) = (m / nz, m % nz);
            let (pn, i, j) = (col / (n * n), col % n, col % (n * n) / n);
            let (x0, x1) = (-1.0 + i as f64 * d, -1.0 + (i + 1) as f64 * d);
            let (y0, y1) = (-1.0 + j as f64 * d, -1.0 + (j + 1) as f64 * d);
            let (z0, z1) = (vert.faces[k], vert.faces[k + 1]);
            let east = quad2((y0, y1), (z0, z1), &|y, z| flux(pn, x1, y, z)[0]);
            let west = quad2((y0, y1), (z0, z1), &|y, z| flux(pn, x0, y, z)[0]);
            let north = quad2((x0, x1), (z0, z1), &|x, z| flux(pn, x, y1, z)[1]);
            let south = quad2((x0, x1), (z0, z1), &|x, z| flux(pn, x, y0, z)[1]);
            let up = quad2((x0, x1), (y0, y1), &|x, y| flux(pn, x, y, z1)[2]);
            let down = quad2((x0, x1), (y0, y1), &|x, y| flux(pn, x, y, z0)[2]);
            let div = east - west + north - south + up - down;
            let mut mass = 0.0;
            for (zz, wz) in gauss {
                let z = 0.5 * (z0 + z1) + 0.5 * (z1 - z0) * zz;
                mass += wz
                    * quad2((x0, x1), (y0, y1), &|x, y| {
                        let h = height(sphere::point(pn, x, y));
                        let r = z + h * (1.0 - (z - 1.0) / top);
                        let rho = (1.0 + x * x + y * y).sqrt();
                        (1.0 - h / top) * r * r / rho.powi(3) * solution(pn, x, y, z)
                    });
            }
            mass *= 0.5 * (z1 - z0);
            -w2 * div + delta * mass
        })
        .collect();
    let cpu = CpuBackend::new(None).unwrap();
    let cfg = SolverConfig::new(SolverKind::MgCg)
        .with_levels(3)
        .with_precision(strata::solver::Precision::F64)
        .with_rtol(1e-11)
        .with_max_it(300);
    let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
    assert!(sol.info.reason.converged(), "{:?}", sol.info.reason);
    let (mut emax, mut e2) = (0.0f64, 0.0);
    for (m, v) in sol.u.iter().enumerate() {
        let (col, k) = (m / nz, m % nz);
        let (pn, i, j) = (col / (n * n), col % n, col % (n * n) / n);
        let (x, y) = (-1.0 + (i as f64 + 0.5) * d, -1.0 + (j as f64 + 0.5) * d);
        let e = v - solution(pn, x, y, vert.centres[k]);
        emax = emax.max(e.abs());
        e2 += e * e;
    }
    (emax, (e2 / sol.u.len() as f64).sqrt())
}

/// Second order on the sphere over a mountain across panel edges, flat and at slope 0.5: the
/// errors fall by about 4 per halving of the grid.
#[test]
fn a_manufactured_solution_converges_at_second_order_on_the_sphere() {
    for slope in [0.0, 0.5] {
        let e: Vec<(f64, f64)> = [16, 32, 64]
            .iter()
            .map(|&n| manufactured(n, slope))
            .collect();
        common::assert_second_order(&format!("sphere, slope {slope}"), &e);
    }
}
