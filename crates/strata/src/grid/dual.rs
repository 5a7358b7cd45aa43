//! The sphere's conormal fluxes from its dual elements (docs/MODEL.md §16.1): around every grid
//! vertex the cell centres that share it form a small quadrilateral (a triangle at the cube's
//! eight corners), and the energy ∫ ∇u·∇u over it, with u bilinear between the centres, gives
//! the couplings of those centres. Inside a panel this adds to the two-point fluxes the cross
//! terms of the non-orthogonal gnomonic grid (couplings to the diagonal neighbours); across a
//! panel edge the element is the mirror image of itself and has none. The result is a
//! symmetric 9-point horizontal stencil consistent with the Laplace–Beltrami operator.
//!
//! Vertex `(a, b)` of a panel with `n` cells per direction is the grid point at gnomonic
//! `(−1 + a h, −1 + b h)`, `h = 2/n`, `0 ≤ a, b ≤ n`; its cells are `(a − 1, b − 1)` (south-west),
//! `(a, b − 1)`, `(a, b)` and `(a − 1, b)`.

use super::sphere::{cell_across, cell_centre, cross, dot, point};
use super::Side;

/// The conormal tensor of the dual element around one vertex, in the frame of the panel that
/// asks: `k11` couples the x neighbours, `k22` the y neighbours, `k12` the diagonal ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VertexTensor {
    /// Along x (the two x faces that meet at the vertex take half each).
    pub k11: f64,
    /// Along y.
    pub k22: f64,
    /// The cross term: `+k12/2` couples south-west with north-east, `−k12/2` south-east with
    /// north-west.
    pub k12: f64,
}

/// `q` projected gnomonically onto the tangent plane at `v` (a vector of that plane).
fn tangent(v: [f64; 3], q: [f64; 3]) -> [f64; 3] {
    let s = dot(q, v);
    std::array::from_fn(|d| q[d] / s - v[d])
}

/// The tensor `√det G · G⁻¹` of the bilinear element through the centres `q` (south-west,
/// south-east, north-east, north-west) around vertex `v`, `G` the metric of its logical
/// coordinates at the element's centre (one unit per cell).
fn element(v: [f64; 3], q: [[f64; 3]; 4]) -> VertexTensor {
    let [sw, se, ne, nw] = q.map(|p| tangent(v, p));
    let xi: [f64; 3] = std::array::from_fn(|d| 0.5 * (se[d] + ne[d] - sw[d] - nw[d]));
    let eta: [f64; 3] = std::array::from_fn(|d| 0.5 * (nw[d] + ne[d] - sw[d] - se[d]));
    let (g11, g22, g12) = (dot(xi, xi), dot(eta, eta), dot(xi, eta));
    let root = (g11 * g22 - g12 * g12).sqrt();
    VertexTensor {
        k11: g22 / root,
        k22: g11 / root,
        k12: -g12 / root,
    }
}

/// A vertex inside a panel (`0 < a, b < n`): its four cells are of one panel. All panels are
/// congruent in their own coordinates, so panel 0's evaluation serves every panel.
fn interior(n: usize, a: usize, b: usize) -> VertexTensor {
    let d = 2.0 / n as f64;
    let v = point(0, -1.0 + a as f64 * d, -1.0 + b as f64 * d);
    let c = |i, j| cell_centre(0, i, j, n);
    element(v, [c(a - 1, b - 1), c(a, b - 1), c(a, b), c(a - 1, b)])
}

/// A vertex at position `b` (`0 < b < n`) along a panel edge: `(across, along)`, the element's
/// tensor across the edge and along it. The element is two cells of each panel, mirror images
/// of each other in the edge, so it has no cross term (its `k12` is rounding and dropped). All
/// 24 edges are congruent and a vertex is at `b` or `n − b` from either side: one canonical
/// evaluation (panel 0's east edge at `min(b, n − b)`) gives both panels the same bits.
fn edge(n: usize, b: usize) -> (f64, f64) {
    let b = b.min(n - b);
    let d = 2.0 / n as f64;
    let v = point(0, 1.0, -1.0 + b as f64 * d);
    let across = |j| cell_centre(1, 0, j, n);
    let mine = |j| cell_centre(0, n - 1, j, n);
    let t = element(v, [mine(b - 1), across(b - 1), across(b), mine(b)]);
    (t.k11, t.k22)
}

/// The weight of each pair of the three cells round a corner of the cube (a P1 triangle:
/// `cot θ / 2`, θ the angle opposite the pair; the three are equal by the corner's symmetry,
/// and one evaluation serves all three).
fn corner(n: usize) -> f64 {
    let v = point(0, 1.0, 1.0);
    let a = tangent(v, cell_centre(0, n - 1, n - 1, n));
    let (l1, (i, j)) = cell_across(0, Side::East, n - 1, n);
    let b = tangent(v, cell_centre(l1.panel, i, j, n));
    let (l2, (i, j)) = cell_across(0, Side::North, n - 1, n);
    let c = tangent(v, cell_centre(l2.panel, i, j, n));
    let (e1, e2): ([f64; 3], [f64; 3]) = (
        std::array::from_fn(|d| a[d] - c[d]),
        std::array::from_fn(|d| b[d] - c[d]),
    );
    let cr = cross(e1, e2);
    0.5 * dot(e1, e2) / dot(cr, cr).sqrt()
}

/// The tensor of vertex `(a, b)` of a panel with `n` cells per direction, in that panel's
/// frame: the interior element, an edge element (no cross term; across and along mapped to
/// this panel's x and y), or a corner of the cube (the triangle's pair weight counted as half
/// of a `k11` and of a `k22`, so that the two faces of this panel that end there get it).
pub fn vertex_tensor(n: usize, a: usize, b: usize) -> VertexTensor {
    let on = |t: usize| t == 0 || t == n;
    match (on(a), on(b)) {
        (false, false) => interior(n, a, b),
        (true, false) => {
            let (across, along) = edge(n, b);
            VertexTensor {
                k11: across,
                k22: along,
                k12: 0.0,
            }
        }
        (false, true) => {
            let (across, along) = edge(n, a);
            VertexTensor {
                k11: along,
                k22: across,
                k12: 0.0,
            }
        }
        (true, true) => {
            let w = 2.0 * corner(n);
            VertexTensor {
                k11: w,
                k22: w,
                k12: 0.0,
            }
        }
    }
}

/// The vertex tensors of a whole panel with `n` cells per direction, `(n + 1)²` of them,
/// `[b * (n + 1) + a]`, computed in parallel (the same for every panel).
pub fn vertex_tensors(n: usize) -> Vec<VertexTensor> {
    use rayon::prelude::*;
    (0..(n + 1) * (n + 1))
        .into_par_iter()
        .map(|v| vertex_tensor(n, v % (n + 1), v / (n + 1)))
        .collect()
}
