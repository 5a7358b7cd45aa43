//! The manufactured solutions of docs/MODEL.md §12.3 and their right-hand sides.
//!
//! On the panel the right-hand side is built from the operator L̃ the scheme is consistent with
//! (docs/MODEL.md §3.6), not from the true Laplace–Beltrami operator.

use super::{cell_centre, Geometry, HorizontalGrid, ProblemParams, VerticalGrid};
use crate::grid::Boundary;
use std::f64::consts::PI;

/// The exact solution u*(x, y, r) at a point (computational coordinates, radius or height; on
/// the sphere the coordinates of panel 0, the others through [`sphere_solution`]).
///
/// Each horizontal factor meets its direction's lateral condition (docs/MODEL.md §20): on the
/// box sin(πx) for Dirichlet, cos(πx) for zero-flux sides, cos(2πx) for periodic ones; on the
/// panel sin(π(x + 1)/2) or cos(π(x + 1)/2). Every factor but the Dirichlet one has zero mean,
/// so the solution is the one of zero mean that a singular problem returns.
pub fn manufactured_solution(p: &ProblemParams, x: f64, y: f64, r: f64) -> f64 {
    let h = p.height;
    let b = p.boundaries;
    match p.geometry {
        Geometry::Box => mode(b.x, x).0 * mode(b.y, y).0 * (PI * r / h).cos(),
        Geometry::Panel => panel_mode(b.x, x).0 * panel_mode(b.y, y).0 * (PI * (r - 1.0) / h).cos(),
        // (x, y) of panel 0; the other panels through `sphere_solution`.
        Geometry::Sphere => sphere_solution(p, crate::grid::sphere::point(0, x, y), r),
    }
}

/// The pointwise right-hand side f = (−ω²(∇² + λ²∂²) + δ) u* (before volume integration).
pub fn manufactured_rhs(p: &ProblemParams, x: f64, y: f64, r: f64) -> f64 {
    let w2 = p.omega() * p.omega();
    let l2 = p.lambda * p.lambda;
    let h = p.height;
    let u = manufactured_solution(p, x, y, r);
    match p.geometry {
        Geometry::Box => {
            let (kx, ky) = (mode(p.boundaries.x, x).1, mode(p.boundaries.y, y).1);
            (w2 * (kx * kx + ky * ky + l2 * PI * PI / (h * h)) + p.delta) * u
        }
        Geometry::Panel => {
            let ((sx, dsx), (sy, dsy)) =
                (panel_mode(p.boundaries.x, x), panel_mode(p.boundaries.y, y));
            let rho = (1.0 + x * x + y * y).sqrt();
            let phx = ((1.0 + x * x) / (1.0 + y * y)).sqrt();
            let phy = 1.0 / phx;
            let sq = ((1.0 + x * x) * (1.0 + y * y)).sqrt();
            let c = (PI * (r - 1.0) / h).cos();
            let cp = -(PI / h) * (PI * (r - 1.0) / h).sin();
            let cpp = -(PI / h) * (PI / h) * c;
            let lt = rho.powi(3)
                * (-(PI * PI / 4.0) * (phx + phy) * u + (x * dsx * sy + y * sx * dsy) * c / sq);
            -w2 * (lt / (r * r) + l2 * sx * sy * (cpp + 2.0 / r * cp)) + p.delta * u
        }
        Geometry::Sphere => sphere_rhs(p, crate::grid::sphere::point(0, x, y), r),
    }
}

/// The spherical harmonic of degree 2 of the sphere's manufactured solution at the unit vector
/// `q`: `Y = 2q_z² − q_x² − q_y² + q_x q_y` (Δ_S² Y = −6 Y).
fn harmonic(q: [f64; 3]) -> f64 {
    2.0 * q[2] * q[2] - q[0] * q[0] - q[1] * q[1] + q[0] * q[1]
}

/// The sphere's manufactured solution u* = Y(q) cos(π (r − 1)/H) at the point `q` of the unit
/// sphere and radius `r` (docs/MODEL.md §16).
pub fn sphere_solution(p: &ProblemParams, q: [f64; 3], r: f64) -> f64 {
    harmonic(q) * (PI * (r - 1.0) / p.height).cos()
}

/// f = (−ω²(r⁻² Δ_S² + λ² r⁻² ∂_r r² ∂_r) + δ) u* for [`sphere_solution`], pointwise.
pub fn sphere_rhs(p: &ProblemParams, q: [f64; 3], r: f64) -> f64 {
    let (w2, l2, h) = (p.omega() * p.omega(), p.lambda * p.lambda, p.height);
    let y = harmonic(q);
    let c = (PI * (r - 1.0) / h).cos();
    let cp = -(PI / h) * (PI * (r - 1.0) / h).sin();
    let cpp = -(PI / h) * (PI / h) * c;
    -w2 * (-6.0 * y * c / (r * r) + l2 * y * (cpp + 2.0 / r * cp)) + p.delta * y * c
}

/// The box's horizontal factor for a direction with condition `b` at `t` ∈ [0, 1], and its
/// wavenumber k (the factor's second derivative is −k² times it).
fn mode(b: Boundary, t: f64) -> (f64, f64) {
    match b {
        Boundary::Dirichlet => ((PI * t).sin(), PI),
        Boundary::Neumann => ((PI * t).cos(), PI),
        Boundary::Periodic => ((2.0 * PI * t).cos(), 2.0 * PI),
    }
}

/// The panel's horizontal factor for a direction with condition `b` at `t` ∈ [−1, 1] and its
/// derivative (its second derivative is −π²/4 times it); the panel has no periodic side.
fn panel_mode(b: Boundary, t: f64) -> (f64, f64) {
    let a = PI * (t + 1.0) / 2.0;
    match b {
        Boundary::Neumann => (a.cos(), -(PI / 2.0) * a.sin()),
        _ => (a.sin(), (PI / 2.0) * a.cos()),
    }
}

/// Max and volume-weighted RMS error of a whole-grid solution `u` (z-contiguous; on the sphere
/// the six panels one after the other) against the manufactured solution, at the cell centres.
pub fn manufactured_error(p: &ProblemParams, u: &[f64]) -> (f64, f64) {
    let vert = VerticalGrid::new(p);
    let grid = HorizontalGrid {
        geometry: p.geometry,
        n: p.n,
    };
    let (mut emax, mut e2, mut vol) = (0.0f64, 0.0, 0.0);
    for (panel, j, i) in
        (0..p.panels()).flat_map(|q| (0..p.n).flat_map(move |j| (0..p.n).map(move |i| (q, j, i))))
    {
        {
            let (x, y) = cell_centre(p.geometry, p.n, i, j);
            let area = grid.area(i, j);
            for k in 0..p.nz {
                let r = vert.centres[k];
                let exact = match p.geometry {
                    Geometry::Sphere => {
                        sphere_solution(p, crate::grid::sphere::point(panel, x, y), r)
                    }
                    _ => manufactured_solution(p, x, y, r),
                };
                let e = (u[((panel * p.n + j) * p.n + i) * p.nz + k] - exact).abs();
                let w = area * vert.volume_factor(p.geometry, k);
                emax = emax.max(e);
                e2 += w * e * e;
                vol += w;
            }
        }
    }
    (emax, (e2 / vol).sqrt())
}
