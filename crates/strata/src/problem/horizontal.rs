//! Horizontal geometry: cell areas |T| and flux coefficients α of docs/MODEL.md §3.3 (panel) and §4.2
//! (box), for any level size and any rectangular block of it (a subdomain of a decomposition).

use super::{Geometry, SphereStencil};
use crate::grid::dual::VertexTensor;
use crate::grid::{Boundaries, Boundary};

/// The per-column coefficients of one horizontal cell T: its area and its four face coefficients.
/// At a Dirichlet boundary face the coefficient carries the factor 2 of the half distance.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[repr(C)]
pub struct Column {
    /// Cell area |T| (on the unit sphere for the panel, h² on the box).
    pub area: f64,
    /// α^E, the coefficient of the face towards i + 1.
    pub alpha_e: f64,
    /// α^W, towards i − 1.
    pub alpha_w: f64,
    /// α^N, towards j + 1.
    pub alpha_n: f64,
    /// α^S, towards j − 1.
    pub alpha_s: f64,
    /// α_T = α^E + α^W + α^N + α^S.
    pub alpha_t: f64,
}

/// The couplings of a sphere column to its four diagonal neighbours (docs/MODEL.md §16.1), in
/// the row's form `d_k Σ α (u_D − u)` like the faces' α; `ne` couples to `(i + 1, j + 1)`.
/// Zero across a panel edge and at the cube's corners.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[repr(C)]
pub struct Diagonals {
    /// Towards (i + 1, j + 1).
    pub ne: f64,
    /// Towards (i − 1, j + 1).
    pub nw: f64,
    /// Towards (i + 1, j − 1).
    pub se: f64,
    /// Towards (i − 1, j − 1).
    pub sw: f64,
}

/// The horizontal grid of one level: `n × n` cells of a geometry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HorizontalGrid {
    /// Geometry.
    pub geometry: Geometry,
    /// Cells per direction on this level.
    pub n: usize,
}

/// Gnomonic φ(ξ, η) = sqrt((1 + ξ²) / (1 + η²)).
fn phi(xi: f64, eta: f64) -> f64 {
    ((1.0 + xi * xi) / (1.0 + eta * eta)).sqrt()
}

/// Exact spherical area of the gnomonic cell `[x0, x1] × [y0, y1]` (docs/MODEL.md §3.3).
pub fn panel_cell_area(x0: f64, x1: f64, y0: f64, y1: f64) -> f64 {
    let f = |x: f64, y: f64| (x * y / (1.0 + x * x + y * y).sqrt()).atan();
    f(x1, y1) - f(x0, y1) - f(x1, y0) + f(x0, y0)
}

/// Length of the x face at index `f` (between cells f − 1 and f, 0 ≤ f ≤ n) of row `j` of a level
/// with `n` cells per direction: on the unit sphere (a great-circle arc) on the panel, h on the
/// box. The y face at `f` of column `i` is `face_length(geometry, n, f, i)` by symmetry.
pub fn face_length(geometry: Geometry, n: usize, f: usize, j: usize) -> f64 {
    match geometry {
        Geometry::Panel | Geometry::Sphere => {
            let d = 2.0 / n as f64;
            let xf = -1.0 + f as f64 * d;
            let (y0, y1) = (-1.0 + j as f64 * d, -1.0 + (j + 1) as f64 * d);
            let c = (1.0 + xf * xf).sqrt();
            (y1 / c).atan() - (y0 / c).atan()
        }
        Geometry::Box => 1.0 / n as f64,
    }
}

/// Centre of cell `(i, j)` (0-based) of a level with `n` cells per direction.
pub fn cell_centre(geometry: Geometry, n: usize, i: usize, j: usize) -> (f64, f64) {
    match geometry {
        Geometry::Panel | Geometry::Sphere => {
            let d = 2.0 / n as f64;
            (-1.0 + (i as f64 + 0.5) * d, -1.0 + (j as f64 + 0.5) * d)
        }
        Geometry::Box => {
            let d = 1.0 / n as f64;
            ((i as f64 + 0.5) * d, (j as f64 + 0.5) * d)
        }
    }
}

impl HorizontalGrid {
    /// Spacing of the computational coordinates (2/n on the panel, 1/n on the box).
    pub fn spacing(&self) -> f64 {
        match self.geometry {
            Geometry::Panel | Geometry::Sphere => 2.0 / self.n as f64,
            Geometry::Box => 1.0 / self.n as f64,
        }
    }

    /// The area |T| of the global cell `(i, j)` (what [`HorizontalGrid::column`] holds, without
    /// the face coefficients, which on the sphere cost four vertex tensors).
    pub fn area(&self, i: usize, j: usize) -> f64 {
        let d = self.spacing();
        match self.geometry {
            Geometry::Panel | Geometry::Sphere => {
                let (x, y) = cell_centre(self.geometry, self.n, i, j);
                panel_cell_area(x - 0.5 * d, x + 0.5 * d, y - 0.5 * d, y + 0.5 * d)
            }
            Geometry::Box => d * d,
        }
    }

    /// Coefficients of the global cell `(i, j)` (0-based); on the sphere, of the 9-point
    /// operator (its diagonal couplings: [`HorizontalGrid::sphere_diagonals`]).
    pub fn column(&self, i: usize, j: usize) -> Column {
        self.column_with(i, j, SphereStencil::NinePoint)
    }

    /// [`HorizontalGrid::column_with`] on a box or panel with the lateral conditions `bc`: a
    /// face on a Neumann side carries no flux (α = 0), a face on a periodic side of the box
    /// is an interior face (α = 1, its neighbour the far side's cell); Dirichlet faces keep
    /// the factor 2 of the half distance (docs/MODEL.md §20).
    pub fn column_bounded(
        &self,
        i: usize,
        j: usize,
        stencil: SphereStencil,
        bc: Boundaries,
    ) -> Column {
        let mut c = self.column_with(i, j, stencil);
        if self.geometry.closed() || bc.is_dirichlet() {
            return c;
        }
        let n = self.n;
        // The face's coefficient for the condition: an interior face of the box is 1.
        let edge = |b: Boundary, dirichlet: f64| match b {
            Boundary::Dirichlet => dirichlet,
            Boundary::Neumann => 0.0,
            Boundary::Periodic => 1.0,
        };
        if i + 1 == n {
            c.alpha_e = edge(bc.x, c.alpha_e);
        }
        if i == 0 {
            c.alpha_w = edge(bc.x, c.alpha_w);
        }
        if j + 1 == n {
            c.alpha_n = edge(bc.y, c.alpha_n);
        }
        if j == 0 {
            c.alpha_s = edge(bc.y, c.alpha_s);
        }
        c.alpha_t = c.alpha_e + c.alpha_w + c.alpha_n + c.alpha_s;
        c
    }

    /// [`HorizontalGrid::column`] with the sphere's stencil `stencil`.
    pub fn column_with(&self, i: usize, j: usize, stencil: SphereStencil) -> Column {
        let n = self.n;
        let d = self.spacing();
        let (x, y) = cell_centre(self.geometry, n, i, j);
        // The gnomonic coordinate of face f (between cells f − 1 and f).
        let face = |f: usize| -1.0 + f as f64 * d;
        let (ae, aw, an, as_, area) = match self.geometry {
            Geometry::Panel => {
                // Interior faces at the midpoint; boundary faces 2φ at the quarter point. The
                // midpoint is the face's own coordinate, computed from its index, so that both
                // cells beside a face get the same bits (A symmetric bit for bit).
                let ae = if i + 1 < n {
                    phi(face(i + 1), y)
                } else {
                    2.0 * phi(x + 0.25 * d, y)
                };
                let aw = if i > 0 {
                    phi(face(i), y)
                } else {
                    2.0 * phi(x - 0.25 * d, y)
                };
                let an = if j + 1 < n {
                    phi(face(j + 1), x)
                } else {
                    2.0 * phi(y + 0.25 * d, x)
                };
                let as_ = if j > 0 {
                    phi(face(j), x)
                } else {
                    2.0 * phi(y - 0.25 * d, x)
                };
                let area = panel_cell_area(x - 0.5 * d, x + 0.5 * d, y - 0.5 * d, y + 0.5 * d);
                (ae, aw, an, as_, area)
            }
            Geometry::Sphere if stencil == SphereStencil::NinePoint => {
                let t = |a, b| crate::grid::dual::vertex_tensor(n, a, b);
                return self.sphere_column(&t, i, j);
            }
            Geometry::Sphere => {
                // The paper's panel on each panel, two-point fluxes from the exact geometry
                // across the panel edges (docs/MODEL.md §16.2).
                let edge = crate::grid::sphere::edge_coefficient;
                let interior = |inside: bool, v: f64, along: usize| {
                    if inside {
                        v
                    } else {
                        edge(n, along)
                    }
                };
                let ae = interior(i + 1 < n, phi(face(i + 1), y), j);
                let aw = interior(i > 0, phi(face(i), y), j);
                let an = interior(j + 1 < n, phi(face(j + 1), x), i);
                let as_ = interior(j > 0, phi(face(j), x), i);
                let area = panel_cell_area(x - 0.5 * d, x + 0.5 * d, y - 0.5 * d, y + 0.5 * d);
                (ae, aw, an, as_, area)
            }
            Geometry::Box => {
                let face = |interior: bool| if interior { 1.0 } else { 2.0 };
                (
                    face(i + 1 < n),
                    face(i > 0),
                    face(j + 1 < n),
                    face(j > 0),
                    d * d,
                )
            }
        };
        Column {
            area,
            alpha_e: ae,
            alpha_w: aw,
            alpha_n: an,
            alpha_s: as_,
            alpha_t: ae + aw + an + as_,
        }
    }
}

impl HorizontalGrid {
    /// The column `(i, j)` of a sphere panel from the dual elements' tensors `t(a, b)` of its
    /// four corners (docs/MODEL.md §16.1): each face takes half the tensor of each of its two
    /// end vertices. Both cells beside a face evaluate the same sum of the same two values (in
    /// either order across a reversed panel edge): the operator is symmetric bit for bit.
    pub fn sphere_column(
        &self,
        t: &dyn Fn(usize, usize) -> VertexTensor,
        i: usize,
        j: usize,
    ) -> Column {
        let [ae, aw, an, as_] = Self::sphere_faces(t, i, j);
        Column {
            area: self.area(i, j),
            alpha_e: ae,
            alpha_w: aw,
            alpha_n: an,
            alpha_s: as_,
            alpha_t: ae + aw + an + as_,
        }
    }

    /// The face coefficients `[east, west, north, south]` of column `(i, j)` of a sphere panel
    /// ([`HorizontalGrid::sphere_column`]'s, without its area).
    pub fn sphere_faces(t: &dyn Fn(usize, usize) -> VertexTensor, i: usize, j: usize) -> [f64; 4] {
        let (sw, se, ne, nw) = (t(i, j), t(i + 1, j), t(i + 1, j + 1), t(i, j + 1));
        [
            0.5 * se.k11 + 0.5 * ne.k11,
            0.5 * sw.k11 + 0.5 * nw.k11,
            0.5 * nw.k22 + 0.5 * ne.k22,
            0.5 * sw.k22 + 0.5 * se.k22,
        ]
    }

    /// The diagonal couplings of column `(i, j)` of a sphere panel: each diagonal pair takes
    /// half the cross term of the vertex between them (the same value for both cells).
    pub fn sphere_diagonals(
        &self,
        t: &dyn Fn(usize, usize) -> VertexTensor,
        i: usize,
        j: usize,
    ) -> Diagonals {
        Diagonals {
            ne: 0.5 * t(i + 1, j + 1).k12,
            sw: 0.5 * t(i, j).k12,
            nw: -0.5 * t(i, j + 1).k12,
            se: -0.5 * t(i + 1, j).k12,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_area_alone_is_the_columns_area() {
        for geometry in [Geometry::Panel, Geometry::Box, Geometry::Sphere] {
            let g = HorizontalGrid { geometry, n: 6 };
            for (i, j) in [(0, 0), (2, 3), (5, 5), (5, 0)] {
                assert_eq!(g.area(i, j), g.column(i, j).area, "{geometry:?} ({i}, {j})");
            }
        }
    }
}
