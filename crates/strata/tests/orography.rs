//! Terrain-following coordinates over orography (docs/MODEL.md §23), on the box and the panel:
//! the operator is symmetric
//! and conserves (A·1 = β J V), the backends and the assembled matrix agree, every solver
//! converges, a manufactured solution over a Schär mountain converges at second order, and bad
//! orography is refused with an error naming the column.

mod common;

use std::f64::consts::PI;
use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::backend::reference::ReferenceBackend;
use strata::grid::Boundaries;
use strata::matrix::{assemble, SparseMatrix};
use strata::problem::{
    build_rhs, cell_volumes, Coefficients, Geometry, Orography, ProblemParams, RhsKind, Schaer,
};
use strata::solver::{SolveParams, SolverConfig, SolverKind};

fn problem(n: usize, nz: usize, bc: &str, slope: f64) -> ProblemParams {
    on(Geometry::Box, n, nz, bc, slope)
}

fn on(geometry: Geometry, n: usize, nz: usize, bc: &str, slope: f64) -> ProblemParams {
    ProblemParams {
        geometry,
        n,
        nz,
        height: 0.1,
        boundaries: Boundaries::parse(bc).unwrap(),
        orography: Some(Arc::new(Orography::schaer(
            n,
            &Schaer {
                slope,
                ..Default::default()
            },
        ))),
        ..Default::default()
    }
}

fn entry_map(a: &SparseMatrix) -> std::collections::HashMap<(usize, usize), f64> {
    a.rows
        .iter()
        .zip(&a.cols)
        .zip(&a.values)
        .map(|((&r, &c), &v)| ((r, c), v))
        .collect()
}

/// Symmetric to rounding, A·1 = β J V |T| in every row, and 15 entries in an inner row.
#[test]
fn the_operator_is_symmetric_and_conserves() {
    for (g, bc, fields) in [
        (Geometry::Box, "periodic", false),
        (Geometry::Box, "x=periodic,y=neumann", true),
        (Geometry::Box, "dirichlet", false),
        (Geometry::Box, "x=neumann,y=periodic", true),
        (Geometry::Panel, "dirichlet", false),
        (Geometry::Panel, "x=neumann", true),
    ] {
        let mut p = on(g, 16, 8, bc, 0.5);
        // A mountain in both directions: the y slopes and the strips of the y faces too.
        let o = Orography::new(
            16,
            (0..256)
                .map(|c| {
                    let (x, y) = (
                        ((c % 16) as f64 + 0.5) / 16.0,
                        ((c / 16) as f64 + 0.5) / 16.0,
                    );
                    0.04 * (-((x - 0.5).powi(2) + (y - 0.4).powi(2)) / 0.04).exp()
                })
                .collect(),
        )
        .unwrap();
        p.orography = Some(Arc::new(o));
        if fields {
            let mut c = Coefficients::smooth(16, 8, 10.0);
            c.beta.iter_mut().for_each(|b| *b = 1.0 + 0.5 * b.sin());
            p.coefficients = Some(Arc::new(c));
        }
        let a = assemble(&p).unwrap();
        let m = entry_map(&a);
        let scale = a.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (&(r, c), &v) in &m {
            let t = m.get(&(c, r)).copied().unwrap_or(0.0);
            assert!(
                (v - t).abs() <= 1e-14 * scale,
                "{g:?} {bc}: A[{r},{c}] = {v}, A[{c},{r}] = {t}"
            );
        }
        let ones = a.apply(&vec![1.0; a.size]);
        let vol = cell_volumes(&p, &[p.whole_block()]);
        let beta = |r: usize| p.coefficients.as_ref().map_or(p.delta, |c| c.beta[r]);
        let dirichlet = p.boundaries.any_dirichlet();
        for (r, (&s, &v)) in ones.iter().zip(&vol).enumerate() {
            let (i, j) = ((r / 8) % 16, r / 8 / 16);
            if dirichlet && (i == 0 || j == 0 || i == 15 || j == 15) {
                // A Dirichlet wall's coupling sits on the diagonal.
                continue;
            }
            let want = beta(r) * v;
            assert!(
                (s - want).abs() <= 1e-12 * scale,
                "{g:?} {bc}: (A·1)[{r}] = {s}, β J V = {want}"
            );
        }
        // An inner cell (not at a wall, not the bottom or top) couples to 14 others.
        let row = (10 * 16 + 11) * 8 + 3;
        let count = m.keys().filter(|&&(r, _)| r == row).count();
        assert_eq!(count, 15, "{g:?} {bc}: entries of an inner row");
    }
}

/// The reference and the CPU backend apply the same operator as the assembled matrix, and every
/// solver meets rtol on the assembled matrix's residual.
#[test]
fn every_solver_solves_the_assembled_matrix() {
    let cpu = CpuBackend::new(Some(2)).unwrap();
    for (g, bc) in [
        (Geometry::Box, "periodic"),
        (Geometry::Box, "x=periodic,y=dirichlet"),
        (Geometry::Box, "neumann"),
        (Geometry::Panel, "dirichlet"),
        (Geometry::Panel, "neumann"),
    ] {
        let mut p = on(g, 32, 16, bc, 0.5);
        p.delta = 1.0;
        let a = assemble(&p).unwrap();
        let f = build_rhs(&p, RhsKind::Random, 3, &p.whole_block());
        let flat = {
            let mut q = p.clone();
            q.orography = None;
            q
        };
        for kind in [
            SolverKind::Cg,
            SolverKind::MgCg,
            SolverKind::Mg,
            SolverKind::Gcr,
            SolverKind::BiCgStab,
        ] {
            let cfg = SolverConfig::new(kind)
                .with_levels(4)
                .with_stopping(SolveParams {
                    rtol: 1e-8,
                    max_it: 400,
                    ..Default::default()
                });
            let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
            let reference = strata::solve(&ReferenceBackend, &p, &cfg, &f, &mut |_, _| {}).unwrap();
            let base = strata::solve(&cpu, &flat, &cfg, &f, &mut |_, _| {}).unwrap();
            let au = a.apply(&sol.u);
            let r: f64 = f
                .iter()
                .zip(&au)
                .map(|(x, y)| (x - y).powi(2))
                .sum::<f64>()
                .sqrt();
            let fnorm: f64 = f.iter().map(|x| x * x).sum::<f64>().sqrt();
            eprintln!(
                "{g:?} {bc} {kind:?}: {} iterations (flat {}), residual {:.2e}",
                sol.info.iterations,
                base.info.iterations,
                r / fnorm
            );
            assert!(sol.info.reason.converged(), "{g:?} {bc} {kind:?}");
            assert!(
                r <= 1.5e-8 * fnorm,
                "{g:?} {bc} {kind:?}: residual {}",
                r / fnorm
            );
            assert_eq!(
                sol.info.iterations, reference.info.iterations,
                "{g:?} {bc} {kind:?}"
            );
            let d = sol
                .u
                .iter()
                .zip(&reference.u)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            let un = sol.u.iter().fold(0.0f64, |m, a| m.max(a.abs()));
            assert!(
                d <= 1e-10 * un,
                "{g:?} {bc} {kind:?}: CPU and reference differ by {d}"
            );
        }
    }
}

/// The manufactured solution of docs/MODEL.md §23.5 over the mountain of slope `slope`:
/// (max error, RMS error) at n (nz = n / 2), periodic in x and y, ω fixed.
fn manufactured(n: usize, slope: f64) -> (f64, f64) {
    let mountain = Schaer {
        slope,
        ..Default::default()
    };
    let nz = n / 2;
    let mut p = problem(n, nz, "periodic", slope);
    p.omega = Some(0.5);
    let top = p.height;
    let h0 = mountain.peak();
    let w2 = 0.25;
    // h, h', h'' of the mountain along x.
    let hill = |x: f64| -> (f64, f64, f64) {
        let (a, l) = (mountain.a, mountain.l);
        let xi = x - 0.5;
        let g = (-(xi / a).powi(2)).exp();
        let g1 = -2.0 * xi / (a * a) * g;
        let g2 = (-2.0 / (a * a) + 4.0 * xi * xi / a.powi(4)) * g;
        let kk = PI / l;
        let (s, c) = (kk * xi).sin_cos();
        let v = g * c * c;
        let v1 = g1 * c * c - 2.0 * kk * g * c * s;
        let v2 = g2 * c * c - 4.0 * kk * g1 * c * s - 2.0 * kk * kk * g * (c * c - s * s);
        (h0 * v, h0 * v1, h0 * v2)
    };
    // u = cos(2πy) [S(x) cos(πζ/H) + ψ(x) φ(ζ)], ψ making the conormal flux vanish on the ground.
    let sx = |x: f64| {
        (
            (2.0 * PI * x).sin(),
            2.0 * PI * (2.0 * PI * x).cos(),
            -4.0 * PI * PI * (2.0 * PI * x).sin(),
        )
    };
    let psi = |x: f64| -> (f64, f64) {
        let (h, h1, h2) = hill(x);
        let (_, s1, s2) = sx(x);
        let (jac, j1) = (1.0 - h / top, -h1 / top);
        let q = 1.0 + h1 * h1;
        let num = h1 * s1 * jac;
        let dnum = h2 * s1 * jac + h1 * s2 * jac + h1 * s1 * j1;
        (num / q, dnum / q - num * 2.0 * h1 * h2 / (q * q))
    };
    let phi = |z: f64| (z - z * z / (2.0 * top), 1.0 - z / top);
    // (u, u_x, u_y, u_ζ).
    let u = |x: f64, y: f64, z: f64| -> [f64; 4] {
        let (s, s1, _) = sx(x);
        let (ps, ps1) = psi(x);
        let (ph, ph1) = phi(z);
        let (cz, sz) = ((PI * z / top).cos(), (PI * z / top).sin());
        let (cy, sy) = ((2.0 * PI * y).cos(), (2.0 * PI * y).sin());
        let core = s * cz + ps * ph;
        [
            cy * core,
            cy * (s1 * cz + ps1 * ph),
            -2.0 * PI * sy * core,
            cy * (-s * PI / top * sz + ps * ph1),
        ]
    };
    // The conormal flux F = G ∇u (kx = ky = kz = λ = 1, h = h(x)).
    let flux = |x: f64, y: f64, z: f64| -> [f64; 3] {
        let (h, h1, _) = hill(x);
        let jac = 1.0 - h / top;
        let zx = h1 * (1.0 - z / top);
        let [_, ux, uy, uz] = u(x, y, z);
        [
            jac * ux - zx * uz,
            jac * uy,
            -zx * ux + (1.0 + zx * zx) / jac * uz,
        ]
    };
    let (gauss, quad2) = (common::GAUSS3, common::quad2);
    let vert = strata::problem::VerticalGrid::new(&p);
    let dx = 1.0 / n as f64;
    let mut f = vec![0.0; n * n * nz];
    for j in 0..n {
        for i in 0..n {
            let (x0, x1, y0, y1) = (
                i as f64 * dx,
                (i + 1) as f64 * dx,
                j as f64 * dx,
                (j + 1) as f64 * dx,
            );
            for k in 0..nz {
                let (z0, z1) = (vert.faces[k], vert.faces[k + 1]);
                let east = quad2((y0, y1), (z0, z1), &|y, z| flux(x1, y, z)[0]);
                let west = quad2((y0, y1), (z0, z1), &|y, z| flux(x0, y, z)[0]);
                let north = quad2((x0, x1), (z0, z1), &|x, z| flux(x, y1, z)[1]);
                let south = quad2((x0, x1), (z0, z1), &|x, z| flux(x, y0, z)[1]);
                let up = quad2((x0, x1), (y0, y1), &|x, y| flux(x, y, z1)[2]);
                let down = quad2((x0, x1), (y0, y1), &|x, y| flux(x, y, z0)[2]);
                let div = east - west + north - south + up - down;
                // ∫ J u over the cell: Gauss in x and z (J, u smooth), y exactly by the rule too.
                let mut mass = 0.0;
                for (yy, wy) in gauss {
                    let y = 0.5 * (y0 + y1) + 0.5 * dx * yy;
                    mass += wy
                        * quad2((x0, x1), (z0, z1), &|x, z| {
                            (1.0 - hill(x).0 / top) * u(x, y, z)[0]
                        });
                }
                mass *= 0.5 * dx;
                f[(j * n + i) * nz + k] = -w2 * div + p.delta * mass;
            }
        }
    }
    let cpu = CpuBackend::new(None).unwrap();
    let cfg = SolverConfig::new(SolverKind::MgCg)
        .with_levels(3)
        .with_stopping(SolveParams {
            rtol: 1e-11,
            max_it: 300,
            ..Default::default()
        });
    let sol = strata::solve(&cpu, &p, &cfg, &f, &mut |_, _| {}).unwrap();
    assert!(sol.info.reason.converged());
    let (mut emax, mut e2) = (0.0f64, 0.0);
    for j in 0..n {
        for i in 0..n {
            for k in 0..nz {
                let (x, y) = ((i as f64 + 0.5) * dx, (j as f64 + 0.5) * dx);
                let e = sol.u[(j * n + i) * nz + k] - u(x, y, vert.centres[k])[0];
                emax = emax.max(e.abs());
                e2 += e * e;
            }
        }
    }
    (emax, (e2 / (n * n * nz) as f64).sqrt())
}

/// Second order over the mountain at slopes 0.1 and 0.5: the errors fall by about 4 per halving.
#[test]
fn a_manufactured_solution_converges_at_second_order() {
    for slope in [0.0, 0.1, 0.5] {
        let e: Vec<(f64, f64)> = [16, 32, 64]
            .iter()
            .map(|&n| manufactured(n, slope))
            .collect();
        common::assert_second_order(&format!("slope {slope}"), &e);
    }
}

/// Heights below the ground, at or above the top, not finite or of the wrong shape, and the
/// geometries without orography: one-line errors naming the column.
#[test]
fn bad_orography_is_refused() {
    let p = problem(8, 4, "periodic", 0.3);
    let with = |h: Vec<f64>| {
        let mut q = p.clone();
        q.orography = Some(Arc::new(Orography::new(8, h).unwrap()));
        q.validate().unwrap_err().to_string()
    };
    let mut h = vec![0.0; 64];
    h[8 * 2 + 3] = -0.01;
    let e = with(h.clone());
    assert!(e.contains("negative") && e.contains("i = 3, j = 2"), "{e}");
    h[8 * 2 + 3] = 0.1;
    let e = with(h.clone());
    assert!(e.contains("model top") && e.contains("i = 3, j = 2"), "{e}");
    h[8 * 2 + 3] = f64::NAN;
    let e = with(h.clone());
    assert!(e.contains("finite") && e.contains("i = 3, j = 2"), "{e}");
    let e = Orography::new(8, vec![0.0; 63]).unwrap_err().to_string();
    assert!(e.contains("63 values") && e.contains("64"), "{e}");
    let mut q = p.clone();
    q.orography = Some(Arc::new(Orography::schaer(16, &Schaer::default())));
    let e = q.validate().unwrap_err().to_string();
    assert!(e.contains("16x16") && e.contains("8x8"), "{e}");
    // The sphere takes six panels of heights, with the nine-point operator.
    let mut q = p.clone();
    q.geometry = Geometry::Sphere;
    q.boundaries = Boundaries::DIRICHLET;
    let e = q.validate().unwrap_err().to_string();
    assert!(
        e.contains("8x8") && e.contains("6x8x8 (panel, y, x)"),
        "{e}"
    );
    q.orography = Some(Arc::new(
        Orography::with_panels(6, 8, vec![0.01; 6 * 64]).unwrap(),
    ));
    q.validate().unwrap();
    q.sphere_stencil = strata::problem::SphereStencil::TwoPoint;
    let e = q.validate().unwrap_err().to_string();
    assert!(e.contains("nine-point"), "{e}");
    let mut h = vec![0.01; 6 * 64];
    h[(4 * 8 + 2) * 8 + 3] = 0.2;
    q.sphere_stencil = Default::default();
    q.orography = Some(Arc::new(Orography::with_panels(6, 8, h).unwrap()));
    let e = q.validate().unwrap_err().to_string();
    assert!(e.contains("panel = 4, i = 3, j = 2"), "{e}");
    let e = Orography::with_panels(6, 8, vec![0.0; 64])
        .unwrap_err()
        .to_string();
    assert!(e.contains("6x8x8") && e.contains("384"), "{e}");
}
