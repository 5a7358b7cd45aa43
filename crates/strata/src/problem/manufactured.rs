//! The manufactured solutions of docs/MODEL.md §12.3 and their right-hand sides.
//!
//! On the panel the right-hand side is built from the operator L̃ the scheme is consistent with
//! (docs/MODEL.md §3.6), not from the true Laplace–Beltrami operator.

use super::{cell_centre, Geometry, HorizontalGrid, ProblemParams, VerticalGrid};
use std::f64::consts::PI;

/// The exact solution u*(x, y, r) at a point (computational coordinates, radius or height).
pub fn manufactured_solution(p: &ProblemParams, x: f64, y: f64, r: f64) -> f64 {
    let h = p.height;
    match p.geometry {
        Geometry::Box => (PI * x).sin() * (PI * y).sin() * (PI * r / h).cos(),
        Geometry::Panel => s(x) * s(y) * (PI * (r - 1.0) / h).cos(),
    }
}

/// The pointwise right-hand side f = (−ω²(∇² + λ²∂²) + δ) u* (before volume integration).
pub fn manufactured_rhs(p: &ProblemParams, x: f64, y: f64, r: f64) -> f64 {
    let w2 = p.omega() * p.omega();
    let l2 = p.lambda * p.lambda;
    let h = p.height;
    let u = manufactured_solution(p, x, y, r);
    match p.geometry {
        Geometry::Box => (w2 * (2.0 * PI * PI + l2 * PI * PI / (h * h)) + p.delta) * u,
        Geometry::Panel => {
            let rho = (1.0 + x * x + y * y).sqrt();
            let phx = ((1.0 + x * x) / (1.0 + y * y)).sqrt();
            let phy = 1.0 / phx;
            let sq = ((1.0 + x * x) * (1.0 + y * y)).sqrt();
            let c = (PI * (r - 1.0) / h).cos();
            let cp = -(PI / h) * (PI * (r - 1.0) / h).sin();
            let cpp = -(PI / h) * (PI / h) * c;
            let lt = rho.powi(3)
                * (-(PI * PI / 4.0) * (phx + phy) * u
                    + (x * ds(x) * s(y) + y * s(x) * ds(y)) * c / sq);
            -w2 * (lt / (r * r) + l2 * s(x) * s(y) * (cpp + 2.0 / r * cp)) + p.delta * u
        }
    }
}

fn s(t: f64) -> f64 {
    (PI * (t + 1.0) / 2.0).sin()
}

fn ds(t: f64) -> f64 {
    (PI / 2.0) * (PI * (t + 1.0) / 2.0).cos()
}

/// Max and volume-weighted RMS error of a whole-grid solution `u` (z-contiguous) against the
/// manufactured solution, at the cell centres.
pub fn manufactured_error(p: &ProblemParams, u: &[f64]) -> (f64, f64) {
    let vert = VerticalGrid::new(p);
    let grid = HorizontalGrid {
        geometry: p.geometry,
        n: p.n,
    };
    let (mut emax, mut e2, mut vol) = (0.0f64, 0.0, 0.0);
    for j in 0..p.n {
        for i in 0..p.n {
            let (x, y) = cell_centre(p.geometry, p.n, i, j);
            let area = grid.column(i, j).area;
            for k in 0..p.nz {
                let exact = manufactured_solution(p, x, y, vert.centres[k]);
                let e = (u[(j * p.n + i) * p.nz + k] - exact).abs();
                let w = area * vert.volume_factor(p.geometry, k);
                emax = emax.max(e);
                e2 += w * e * e;
                vol += w;
            }
        }
    }
    (emax, (e2 / vol).sqrt())
}
