//! The terrain-following operator on the box, the panel and the sphere (docs/MODEL.md §23): the
//! finite-volume operator in (x, y, ζ) with `z = ζ + h(x, y)(1 − ζ/H)`, derived from the energy
//! `ω² ∫ ∇u·K∇u dV` written in the new coordinates. Its 7-point part is the general operator's
//! (§15) with the metric folded into the face factors; the couplings to the four lateral
//! neighbours' cells above and below (the metric cross terms) are a [`Slant`].

use super::coefficients::{CellCoefficients, Coefficients};
use super::orography::Orography;
use super::{HorizontalGrid, ProblemParams, VerticalGrid};
use crate::grid::dual::VertexTensor;
use crate::grid::{sphere, Block, Boundary, Side};
use rayon::prelude::*;

/// The metric cross terms of one level's block: for each lateral face and each vertical
/// interface between cells k and k + 1, the weight `w` of the dual element between the two
/// columns and the two levels (the energy `w [(u_NE − u_SW)² − (u_SE − u_NW)²]`, SW the cell of
/// the west/south column at level k). Zero on walls and above the top cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Slant {
    /// Local cells in x.
    pub nx: usize,
    /// Local cells in y.
    pub ny: usize,
    /// Vertical cells.
    pub nz: usize,
    /// x faces as [`CellCoefficients::fx`]: `wx[(j * (nx + 1) + f) * nz + k]`.
    pub wx: Vec<f64>,
    /// y faces as [`CellCoefficients::fy`]: `wy[(f * nx + i) * nz + k]`.
    pub wy: Vec<f64>,
}

/// Indices into [`Slant::row`]'s entries: the neighbour east above, east below, west above, west
/// below, north above, north below, south above, south below.
pub const SLANT_NEIGHBOURS: [(i32, i32, i32); 8] = [
    (1, 0, 1),
    (1, 0, -1),
    (-1, 0, 1),
    (-1, 0, -1),
    (0, 1, 1),
    (0, 1, -1),
    (0, -1, 1),
    (0, -1, -1),
];

impl Slant {
    /// The entries of row (i, j, k) (block-local) for the neighbours of [`SLANT_NEIGHBOURS`], each
    /// multiplying `u_D − u_ijk` (so C's diagonal is minus their sum); 0 where the neighbour is
    /// outside the column's range (below the bottom or above the top cell).
    pub fn row(&self, i: usize, j: usize, k: usize) -> [f64; 8] {
        let (nx, nz) = (self.nx, self.nz);
        let x = |f: usize, k: usize| self.wx[(j * (nx + 1) + f) * nz + k];
        let y = |f: usize, k: usize| self.wy[(f * nx + i) * nz + k];
        let below = |v: f64| if k > 0 { v } else { 0.0 };
        let km = k.saturating_sub(1);
        [
            -x(i + 1, k),
            below(x(i + 1, km)),
            x(i, k),
            below(-x(i, km)),
            -y(j + 1, k),
            below(y(j + 1, km)),
            y(j, k),
            below(-y(j, km)),
        ]
    }
}

/// A column of the level as a block sees it: its panel and `(i, j)` there, and whether its x
/// and y are the block's panel's y and x (across some edges of the cube).
#[derive(Clone, Copy)]
struct Seen {
    panel: usize,
    i: usize,
    j: usize,
    swap: bool,
}

/// The columns of one level round a block, in the frame of the block's panel: on the box and
/// the panel wrapped across periodic edges and clamped beyond walls (the terrain mirrored); on
/// the sphere the neighbouring panel's columns across its edges.
struct View<'a> {
    oro: &'a Orography,
    coeffs: &'a Coefficients,
    grid: HorizontalGrid,
    /// On the sphere, the level's vertex tensors (`[b * (n + 1) + a]`).
    tensors: Option<&'a [VertexTensor]>,
    p: &'a ProblemParams,
    block: &'a Block,
    n: usize,
    panel: usize,
    wrap: [bool; 2],
    /// The cell areas |T| of the level's columns (the same on every panel), `[j * n + i]`.
    areas: Vec<f64>,
}

impl View<'_> {
    fn closed(&self) -> bool {
        self.tensors.is_some()
    }

    /// Column `(i, j)` of the frame, at most one step beyond the panel in each direction. On
    /// the sphere a column beyond an edge is the neighbouring panel's; one beyond a cube
    /// corner (both indices out) does not exist and is taken as the one across the edge
    /// normal to the other direction than `normal` (with index `normal` brought back into the
    /// panel): for a face in direction `normal` on a panel edge that is the column beside the
    /// face's far column along the edge, from either side of the face.
    fn seen(&self, i: isize, j: isize, normal: usize) -> Seen {
        let n = self.n as isize;
        let out = |v: isize| !(0..n).contains(&v);
        if !self.closed() {
            let fix = |v: isize, d: usize| -> usize {
                if self.wrap[d] {
                    v.rem_euclid(n) as usize
                } else {
                    v.clamp(0, n - 1) as usize
                }
            };
            return Seen {
                panel: 0,
                i: fix(i, 0),
                j: fix(j, 1),
                swap: false,
            };
        }
        let (mut i, mut j) = (i, j);
        if out(i) && out(j) {
            if normal == 0 {
                i = i.clamp(0, n - 1);
            } else {
                j = j.clamp(0, n - 1);
            }
        }
        let (side, along) = match (i, j) {
            (i, j) if !out(i) && !out(j) => {
                return Seen {
                    panel: self.panel,
                    i: i as usize,
                    j: j as usize,
                    swap: false,
                }
            }
            (i, j) if i < 0 => (Side::West, j),
            (_, j) if out(j) => (if j < 0 { Side::South } else { Side::North }, i),
            (_, j) => (Side::East, j),
        };
        let (l, (a, b)) = sphere::cell_across(self.panel, side, along as usize, self.n);
        let normal_x = |s: Side| matches!(s, Side::West | Side::East);
        Seen {
            panel: l.panel,
            i: a,
            j: b,
            swap: normal_x(side) != normal_x(l.side),
        }
    }

    fn h(&self, s: Seen) -> f64 {
        self.oro.at_panel(s.panel, s.i, s.j)
    }

    /// The height of column `(i, j)` of the frame ([`View::seen`]).
    fn height(&self, i: isize, j: isize, normal: usize) -> f64 {
        self.h(self.seen(i, j, normal))
    }

    /// The face coefficients `[east, west, north, south]` of column `(i, j)` of its own panel
    /// (on the sphere [`HorizontalGrid::sphere_faces`], the same bits as the operator's).
    fn col(&self, i: usize, j: usize) -> [f64; 4] {
        match self.tensors {
            Some(t) => {
                let n1 = self.n + 1;
                HorizontalGrid::sphere_faces(&|a, b| t[b * n1 + a], i, j)
            }
            None => {
                let c = self
                    .grid
                    .column_bounded(i, j, self.p.sphere_stencil, self.block.bc);
                [c.alpha_e, c.alpha_w, c.alpha_n, c.alpha_s]
            }
        }
    }

    /// The cross term K₁₂ of the dual element round vertex `(a, b)` of the panel (0 off the
    /// sphere, on the panel's edges and at the cube's corners).
    fn k12(&self, a: usize, b: usize) -> f64 {
        self.tensors.map_or(0.0, |t| t[b * (self.n + 1) + a].k12)
    }

    /// α of the face between column `(i, j)` of the frame and the next one in direction `d`;
    /// `None` on a wall of the box or panel.
    fn alpha(&self, d: usize, i: isize, j: isize) -> Option<f64> {
        let n = self.n as isize;
        let (di, dj) = step(d);
        if self.closed() {
            // The face's own column: the first if it is in the panel, else the second.
            let inside = (0..n).contains(&i) && (0..n).contains(&j);
            let c = if inside {
                self.col(i as usize, j as usize)
            } else {
                self.col((i + di) as usize, (j + dj) as usize)
            };
            return Some(match (d, inside) {
                (0, true) => c[0],
                (0, false) => c[1],
                (_, true) => c[2],
                (_, false) => c[3],
            });
        }
        let v = if d == 0 { i } else { j };
        if !self.wrap[d] && (v < 0 || v + 1 >= n) {
            return None;
        }
        let s = self.seen(i, j, d);
        let c = self.col(s.i, s.j);
        Some(if d == 0 { c[0] } else { c[2] })
    }

    /// The column's mean α in direction `d` (of the frame) over its faces that are not walls;
    /// on the sphere of the column's own faces in its own frame.
    fn abar(&self, d: usize, i: isize, j: isize, normal: usize) -> f64 {
        if self.closed() {
            let s = self.seen(i, j, normal);
            let c = self.col(s.i, s.j);
            return if (d == 0) != s.swap {
                0.5 * (c[0] + c[1])
            } else {
                0.5 * (c[2] + c[3])
            };
        }
        let (di, dj) = step(d);
        let a: Vec<f64> = [self.alpha(d, i - di, j - dj), self.alpha(d, i, j)]
            .into_iter()
            .flatten()
            .collect();
        if a.is_empty() {
            0.0
        } else {
            a.iter().sum::<f64>() / a.len() as f64
        }
    }

    /// The column's centred height difference in direction `d` per cell (mirrored at walls).
    fn dc(&self, d: usize, i: isize, j: isize, normal: usize) -> f64 {
        let (di, dj) = step(d);
        0.5 * (self.height(i + di, j + dj, normal) - self.height(i - di, j - dj, normal))
    }

    fn area(&self, i: isize, j: isize, normal: usize) -> f64 {
        let s = self.seen(i, j, normal);
        self.areas[s.j * self.n + s.i]
    }

    /// The column's values of the coefficient field `kx` (direction 0 of the frame: `along_x`)
    /// or `ky`, or `kz` (`None`).
    fn field(&self, i: isize, j: isize, normal: usize, along_x: Option<bool>) -> &[f64] {
        let s = self.seen(i, j, normal);
        let c = self.coeffs;
        let v = match along_x.map(|x| x != s.swap) {
            Some(true) => &c.kx,
            Some(false) => &c.ky,
            None => &c.kz,
        };
        &v[c.column_at(s.panel, s.i, s.j)..][..c.nz]
    }
}

/// The unit step of direction d (0 x, 1 y).
fn step(d: usize) -> (isize, isize) {
    if d == 0 {
        (1, 0)
    } else {
        (0, 1)
    }
}

/// Folds the terrain's metric into `cells` (the block's face factors and β from the level's
/// fields `coeffs`, docs/MODEL.md §23.2) and returns its cross terms. `oro` is the level's
/// orography, `block` a block of the box or the panel or a tile of the sphere (`tensors` then
/// the level's vertex tensors, whose cross terms K₁₂ join the slopes: §23.6). Written with the
/// level's face coefficients α and cell areas |T| (the metric of the horizontal operator: on
/// the box α = 1, |T| = Δ²; on the panel the paper's φ and the spherical areas; on the sphere
/// the dual elements' tensors) and the radial surface and volume factors, so that the three
/// share it.
pub(crate) fn fold_terrain(
    p: &ProblemParams,
    block: &Block,
    vertical: &VerticalGrid,
    oro: &Orography,
    coeffs: &Coefficients,
    tensors: Option<&[VertexTensor]>,
    cells: &mut CellCoefficients,
) -> Slant {
    let (nx, ny, nz, n) = (block.nx, block.ny, p.nz, block.n);
    debug_assert_eq!(oro.n, n);
    let (top, g) = (p.height, p.geometry);
    let lam2 = p.lambda * p.lambda;
    let w2 = p.omega() * p.omega();
    let ground = g.ground();
    let closed = block.panel.is_some();
    let grid = HorizontalGrid { geometry: g, n };
    let areas = (0..n * n)
        .into_par_iter()
        .map(|c| grid.area(c % n, c / n))
        .collect();
    let view = View {
        oro,
        coeffs,
        grid,
        tensors: tensors.filter(|_| closed),
        p,
        block,
        n,
        panel: block.panel.unwrap_or(0),
        wrap: [
            !closed && block.bc.x == Boundary::Periodic,
            !closed && block.bc.y == Boundary::Periodic,
        ],
        areas,
    };
    let v = &view;
    // τ = 1 − ζ/H, the factor of z's horizontal derivatives; the terrain's radius (or height)
    // of the flat grid's coordinate ζ over a column of height h.
    let tau = |zeta: f64| 1.0 - (zeta - ground) / top;
    let lift = |h: f64, zeta: f64| terrain_coordinate(ground, top, h, zeta);
    let (c, f) = (&vertical.centres, &vertical.faces);
    // The middles of the dual elements (between centres k and k + 1) and of the bottom and top
    // half-cells.
    let mid: Vec<f64> = (0..nz - 1).map(|k| 0.5 * (c[k] + c[k + 1])).collect();
    let (z_bot, z_top) = (0.5 * (f[0] + c[0]), 0.5 * (c[nz - 1] + f[nz]));
    let (fx0, fy0) = (cells.fx.clone(), cells.fy.clone());
    // One lateral face `fi` (the panel's face index in direction d: between columns fi − 1
    // and fi) of row or column `t`, its factors `kf` (the level's, before the terrain): its
    // Jacobian factor, and where it is not a wall the half-cell factors of its bottom and top
    // cells and the dual elements' weights.
    let face = |d: usize, fi: isize, t: isize, kf: &[f64], out: &mut [f64], w: &mut [f64]| {
        let (l, r) = if d == 0 {
            ((fi - 1, t), (fi, t))
        } else {
            ((t, fi - 1), (t, fi))
        };
        let Some(a) = v.alpha(d, l.0, l.1) else {
            // A wall: the column's own J, no cross term (the terrain mirrored).
            let inside = |(i, j): (isize, isize)| {
                (0..n as isize).contains(&i) && (0..n as isize).contains(&j)
            };
            let own = if inside(l) { l } else { r };
            let jf = 1.0 - v.height(own.0, own.1, d) / top;
            out.iter_mut().for_each(|x| *x *= jf);
            return;
        };
        let (hl, hr) = (v.height(l.0, l.1, d), v.height(r.0, r.1, d));
        let jf = 1.0 - 0.5 * (hl + hr) / top;
        out.iter_mut().for_each(|x| *x *= jf);
        let dh = hr - hl;
        let e = 1 - d;
        let along = 0.5 * (v.dc(e, l.0, l.1, d) + v.dc(e, r.0, r.1, d));
        let a_along = 0.5 * (v.abar(e, l.0, l.1, d) + v.abar(e, r.0, r.1, d));
        let t_area = 0.5 * (v.area(l.0, l.1, d) + v.area(r.0, r.1, d));
        // K₁₂ on the face (the mean of its two end vertices'; 0 but inside a sphere panel).
        let b = if v.closed() && (1..n as isize).contains(&fi) {
            let (fi, t) = (fi as usize, t as usize);
            if d == 0 {
                0.5 * (v.k12(fi, t) + v.k12(fi, t + 1))
            } else {
                0.5 * (v.k12(t, fi) + v.k12(t + 1, fi))
            }
        } else {
            0.0
        };
        // The face's part of K ∇h (per cell): across it and, with K₁₂, along it.
        let slope_n = a * dh + b * along;
        let (kal, kar) = (
            v.field(l.0, l.1, d, Some(e == 0)),
            v.field(r.0, r.1, d, Some(e == 0)),
        );
        let (kzl, kzr) = (v.field(l.0, l.1, d, None), v.field(r.0, r.1, d, None));
        // The half-cell next to the ground and the lid (docs/MODEL.md §23.2): with no cell
        // beyond it, its ∂u/∂ζ is the one of least energy, which is the zero-conormal-flux
        // condition; the face keeps G₁₁ − G₁₃²/G₃₃ of G₁₁ over half the cell.
        let strip = |k: usize, zeta: f64| {
            let t2 = tau(zeta).powi(2);
            let q = (kf[k] * (a * dh * dh + 2.0 * b * dh * along)
                + 0.5 * (kal[k] + kar[k]) * a_along * along * along)
                * t2;
            let across = kf[k] * slope_n * slope_n / a * t2;
            let vert =
                lam2 * 0.5 * (kzl[k] + kzr[k]) * g.surface(lift(0.5 * (hl + hr), zeta)) * t_area;
            1.0 - 0.5 * across / (vert + q)
        };
        out[0] *= strip(0, z_bot);
        out[nz - 1] *= strip(nz - 1, z_top);
        for k in 0..nz - 1 {
            w[k] = -0.5 * w2 * 0.5 * (kf[k] + kf[k + 1]) * slope_n * tau(mid[k]);
        }
    };
    // x faces: face fl of row jl lies between columns gi − 1 and gi. Rows in parallel.
    let xrow = (nx + 1) * nz;
    let mut wx = vec![0.0; (nx + 1) * ny * nz];
    cells
        .fx
        .par_chunks_mut(xrow)
        .zip(wx.par_chunks_mut(xrow))
        .enumerate()
        .for_each(|(jl, (fxr, wxr))| {
            let gj = (block.j0 + jl) as isize;
            for fl in 0..=nx {
                let gi = (block.i0 + fl) as isize;
                let (at, loc) = ((jl * (nx + 1) + fl) * nz, fl * nz);
                let kf = &fx0[at..at + nz];
                face(
                    0,
                    gi,
                    gj,
                    kf,
                    &mut fxr[loc..loc + nz],
                    &mut wxr[loc..loc + nz],
                );
            }
        });
    // y faces: face row fl lies between rows gj − 1 and gj.
    let yrow = nx * nz;
    let mut wy = vec![0.0; nx * (ny + 1) * nz];
    cells
        .fy
        .par_chunks_mut(yrow)
        .zip(wy.par_chunks_mut(yrow))
        .enumerate()
        .for_each(|(fl, (fyr, wyr))| {
            let gj = (block.j0 + fl) as isize;
            for il in 0..nx {
                let gi = (block.i0 + il) as isize;
                let (at, loc) = ((fl * nx + il) * nz, il * nz);
                let kf = &fy0[at..at + nz];
                face(
                    1,
                    gj,
                    gi,
                    kf,
                    &mut fyr[loc..loc + nz],
                    &mut wyr[loc..loc + nz],
                );
            }
        });
    // Vertical faces: G₃₃ = (λ² kz r² |T| + (K ∇h)·∇h (1 − ζ/H)²) / (J |T|) against the flat
    // λ² r̂²; β: the terrain cell's volume against the flat one.
    cells
        .fz
        .par_chunks_mut(nx * nz)
        .zip(cells.beta.par_chunks_mut(nx * nz))
        .enumerate()
        .for_each(|(jl, (fzr, br))| {
            for il in 0..nx {
                let (gi, gj) = (block.i0 + il, block.j0 + jl);
                let (si, sj) = (gi as isize, gj as isize);
                let h = v.height(si, sj, 0);
                let jc = 1.0 - h / top;
                let t_area = v.area(si, sj, 0);
                let (sx, sy) = (v.dc(0, si, sj, 0), v.dc(1, si, sj, 1));
                let (ax, ay) = (v.abar(0, si, sj, 0), v.abar(1, si, sj, 0));
                // K₁₂ at the centre: the mean of the column's four vertices'.
                let bc = 0.25
                    * (v.k12(gi, gj)
                        + v.k12(gi + 1, gj)
                        + v.k12(gi, gj + 1)
                        + v.k12(gi + 1, gj + 1));
                let xw = (jl * (nx + 1) + il) * nz;
                let xe = xw + nz;
                let ys = (jl * nx + il) * nz;
                let yn = ((jl + 1) * nx + il) * nz;
                let loc = il * nz;
                for k in 0..nz - 1 {
                    let kx = 0.25 * (fx0[xw + k] + fx0[xe + k] + fx0[xw + k + 1] + fx0[xe + k + 1]);
                    let ky = 0.25 * (fy0[ys + k] + fy0[yn + k] + fy0[ys + k + 1] + fy0[yn + k + 1]);
                    let t2 = tau(mid[k]).powi(2);
                    let slope = (kx * ax * sx * sx + (kx + ky) * bc * sx * sy + ky * ay * sy * sy)
                        * t2
                        / (lam2 * t_area);
                    let (flat, lifted) = (g.surface(f[k + 1]), g.surface(lift(h, f[k + 1])));
                    let fz = &mut fzr[loc + k];
                    *fz = (*fz * lifted + slope) / (jc * flat);
                }
                for (k, b) in br[loc..loc + nz].iter_mut().enumerate() {
                    *b *= g.volume(lift(h, f[k]), lift(h, f[k + 1])) / g.volume(f[k], f[k + 1]);
                }
            }
        });
    // The sphere's diagonal couplings (the K₁₂ u_x u_y part of the energy) take the Jacobian
    // of their vertex, the mean of its four columns' (zero on the panel's edges anyway).
    if let (Some(vertex), true) = (cells.vertex.as_mut(), v.closed()) {
        vertex
            .par_chunks_mut((nx + 1) * nz)
            .enumerate()
            .for_each(|(bl, row)| {
                let gb = block.j0 + bl;
                for (al, out) in row.chunks_mut(nz).enumerate() {
                    let ga = block.i0 + al;
                    if ga == 0 || gb == 0 || ga >= n || gb >= n {
                        continue;
                    }
                    let hm = 0.25
                        * (v.h(v.seen(ga as isize - 1, gb as isize - 1, 0))
                            + v.h(v.seen(ga as isize, gb as isize - 1, 0))
                            + v.h(v.seen(ga as isize - 1, gb as isize, 0))
                            + v.h(v.seen(ga as isize, gb as isize, 0)));
                    let jv = 1.0 - hm / top;
                    out.iter_mut().for_each(|x| *x *= jv);
                }
            });
    }
    Slant { nx, ny, nz, wx, wy }
}

/// The coordinate (height on the box, radius on the panel) of the flat grid's `zeta` over a
/// column whose ground is `h` above `ground`, under a lid at `ground + top`:
/// `ζ + h (1 − (ζ − ground)/top)` (Gal-Chen & Somerville 1975).
pub fn terrain_coordinate(ground: f64, top: f64, h: f64, zeta: f64) -> f64 {
    zeta + h * (1.0 - (zeta - ground) / top)
}
