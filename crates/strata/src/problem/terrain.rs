//! The terrain-following operator on the box and the panel (docs/MODEL.md §23): the
//! finite-volume operator in (x, y, ζ) with `z = ζ + h(x, y)(1 − ζ/H)`, derived from the energy
//! `ω² ∫ ∇u·K∇u dV` written in the new coordinates. Its 7-point part is the general operator's
//! (§15) with the metric folded into the face factors; the couplings to the four lateral
//! neighbours' cells above and below (the metric cross terms) are a [`Slant`].

use super::coefficients::{CellCoefficients, Coefficients};
use super::orography::Orography;
use super::{HorizontalGrid, ProblemParams, VerticalGrid};
use crate::grid::{Block, Boundary};
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

/// The heights of one level seen from a block: wrapped across periodic edges, mirrored (the
/// column's own) beyond walls.
struct Heights<'a> {
    h: &'a Orography,
    wrap: [bool; 2],
}

impl Heights<'_> {
    /// Whether (i, j) is a column of the level (not beyond a wall).
    fn in_range(&self, (i, j): (isize, isize)) -> bool {
        let n = self.h.n as isize;
        (0..n).contains(&i) && (0..n).contains(&j)
    }

    fn at(&self, i: isize, j: isize) -> f64 {
        let n = self.h.n as isize;
        let fix = |v: isize, wrap: bool| {
            if wrap {
                v.rem_euclid(n)
            } else {
                v.clamp(0, n - 1)
            }
        };
        self.h
            .at(fix(i, self.wrap[0]) as usize, fix(j, self.wrap[1]) as usize)
    }
}

/// Folds the terrain's metric into `cells` (the block's face factors and β from the level's
/// fields `coeffs`, docs/MODEL.md §23.2) and returns its cross terms. `oro` is the level's
/// orography, `block` a block of the box or the panel. Written with the level's face
/// coefficients α and cell areas |T| (the metric of the horizontal operator: on the box α = 1,
/// |T| = Δ²; on the panel the paper's φ and the spherical areas) and the radial surface and
/// volume factors, so that the box and the panel share it.
pub(crate) fn fold_terrain(
    p: &ProblemParams,
    block: &Block,
    vertical: &VerticalGrid,
    oro: &Orography,
    coeffs: &Coefficients,
    cells: &mut CellCoefficients,
) -> Slant {
    let (nx, ny, nz, n) = (block.nx, block.ny, p.nz, block.n);
    debug_assert_eq!(oro.n, n);
    let (top, g) = (p.height, p.geometry);
    let lam2 = p.lambda * p.lambda;
    let w2 = p.omega() * p.omega();
    let ground = g.ground();
    let wrap = [
        block.bc.x == Boundary::Periodic,
        block.bc.y == Boundary::Periodic,
    ];
    let hs = Heights { h: oro, wrap };
    let grid = HorizontalGrid { geometry: g, n };
    // τ = 1 − ζ/H, the factor of z's horizontal derivatives; the terrain's radius (or height)
    // of the flat grid's coordinate ζ over a column of height h.
    let tau = |zeta: f64| 1.0 - (zeta - ground) / top;
    let lift = |h: f64, zeta: f64| terrain_coordinate(ground, top, h, zeta);
    let (c, f) = (&vertical.centres, &vertical.faces);
    // The middles of the dual elements (between centres k and k + 1) and of the bottom and top
    // half-cells.
    let mid: Vec<f64> = (0..nz - 1).map(|k| 0.5 * (c[k] + c[k + 1])).collect();
    let (z_bot, z_top) = (0.5 * (f[0] + c[0]), 0.5 * (c[nz - 1] + f[nz]));
    let fix = |v: isize, d: usize| -> usize {
        if wrap[d] {
            v.rem_euclid(n as isize) as usize
        } else {
            v.clamp(0, n as isize - 1) as usize
        }
    };
    let step = |d: usize| if d == 0 { (1isize, 0isize) } else { (0, 1) };
    // α of the face between column (i, j) and the next one in direction d; None on a wall.
    let alpha = |d: usize, i: isize, j: isize| -> Option<f64> {
        let v = if d == 0 { i } else { j };
        if !wrap[d] && (v < 0 || v + 1 >= n as isize) {
            return None;
        }
        let col = grid.column_bounded(fix(i, 0), fix(j, 1), p.sphere_stencil, block.bc);
        Some(if d == 0 { col.alpha_e } else { col.alpha_n })
    };
    // The column's mean α in direction d over its faces that are not walls.
    let abar = |d: usize, i: isize, j: isize| -> f64 {
        let (di, dj) = step(d);
        let a: Vec<f64> = [alpha(d, i - di, j - dj), alpha(d, i, j)]
            .into_iter()
            .flatten()
            .collect();
        if a.is_empty() {
            0.0
        } else {
            a.iter().sum::<f64>() / a.len() as f64
        }
    };
    // The column's centred height difference in direction d, per cell (mirrored at walls).
    let dc = |d: usize, i: isize, j: isize| -> f64 {
        let (di, dj) = step(d);
        0.5 * (hs.at(i + di, j + dj) - hs.at(i - di, j - dj))
    };
    let area = |i: isize, j: isize| grid.area(fix(i, 0), fix(j, 1));
    let (fx0, fy0) = (cells.fx.clone(), cells.fy.clone());
    fn column<'a>(c: &Coefficients, v: &'a [f64], i: usize, j: usize) -> &'a [f64] {
        &v[c.column_at(0, i, j)..][..c.nz]
    }
    // One lateral face between columns l and r (r the next in direction d), its factors `kf`
    // (the level's, before the terrain): its Jacobian factor, and where it is not a wall the
    // half-cell factors of its bottom and top cells and the dual elements' weights.
    let face = |d: usize, l: (isize, isize), kf: &[f64], out: &mut [f64], w: &mut [f64]| {
        let r = (l.0 + step(d).0, l.1 + step(d).1);
        let Some(a) = alpha(d, l.0, l.1) else {
            // A wall: the column's own J, no cross term (the terrain mirrored).
            let own = if hs.in_range(l) { l } else { r };
            let jf = 1.0 - hs.at(own.0, own.1) / top;
            out.iter_mut().for_each(|v| *v *= jf);
            return;
        };
        let (hl, hr) = (hs.at(l.0, l.1), hs.at(r.0, r.1));
        let jf = 1.0 - 0.5 * (hl + hr) / top;
        out.iter_mut().for_each(|v| *v *= jf);
        let dh = hr - hl;
        let e = 1 - d;
        let along = 0.5 * (dc(e, l.0, l.1) + dc(e, r.0, r.1));
        let a_along = 0.5 * (abar(e, l.0, l.1) + abar(e, r.0, r.1));
        let t_area = 0.5 * (area(l.0, l.1) + area(r.0, r.1));
        let (li, ri) = ((fix(l.0, 0), fix(l.1, 1)), (fix(r.0, 0), fix(r.1, 1)));
        let k_along_f = if d == 0 { &coeffs.ky } else { &coeffs.kx };
        let (kal, kar) = (
            column(coeffs, k_along_f, li.0, li.1),
            column(coeffs, k_along_f, ri.0, ri.1),
        );
        let (kzl, kzr) = (
            column(coeffs, &coeffs.kz, li.0, li.1),
            column(coeffs, &coeffs.kz, ri.0, ri.1),
        );
        // The half-cell next to the ground and the lid (docs/MODEL.md §23.2): with no cell
        // beyond it, its ∂u/∂ζ is the one of least energy, which is the zero-conormal-flux
        // condition; the face keeps G₁₁ − G₁₃²/G₃₃ of G₁₁ over half the cell.
        let strip = |k: usize, zeta: f64| {
            let t = tau(zeta);
            let across = kf[k] * a * (dh * t).powi(2);
            let side = 0.5 * (kal[k] + kar[k]) * a_along * (along * t).powi(2);
            let vert =
                lam2 * 0.5 * (kzl[k] + kzr[k]) * g.surface(lift(0.5 * (hl + hr), zeta)) * t_area;
            1.0 - 0.5 * across / (vert + across + side)
        };
        out[0] *= strip(0, z_bot);
        out[nz - 1] *= strip(nz - 1, z_top);
        for k in 0..nz - 1 {
            w[k] = -0.5 * w2 * 0.5 * (kf[k] + kf[k + 1]) * a * dh * tau(mid[k]);
        }
    };
    // x faces: face fl of row jl lies between global columns gi − 1 and gi. Rows in parallel.
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
                    (gi - 1, gj),
                    kf,
                    &mut fxr[loc..loc + nz],
                    &mut wxr[loc..loc + nz],
                );
            }
        });
    // y faces: face row fl lies between global rows gj − 1 and gj.
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
                    (gi, gj - 1),
                    kf,
                    &mut fyr[loc..loc + nz],
                    &mut wyr[loc..loc + nz],
                );
            }
        });
    // Vertical faces: G₃₃ = (λ² kz r² |T| + Σ kx α Δh² (1 − ζ/H)²) / (J |T|) against the flat
    // λ² r̂²; β: the terrain cell's volume against the flat one.
    cells
        .fz
        .par_chunks_mut(nx * nz)
        .zip(cells.beta.par_chunks_mut(nx * nz))
        .enumerate()
        .for_each(|(jl, (fzr, br))| {
            for il in 0..nx {
                let (gi, gj) = ((block.i0 + il) as isize, (block.j0 + jl) as isize);
                let h = hs.at(gi, gj);
                let jc = 1.0 - h / top;
                let t_area = area(gi, gj);
                let (sx, sy) = (dc(0, gi, gj), dc(1, gi, gj));
                let (ax, ay) = (abar(0, gi, gj), abar(1, gi, gj));
                let xw = (jl * (nx + 1) + il) * nz;
                let xe = xw + nz;
                let ys = (jl * nx + il) * nz;
                let yn = ((jl + 1) * nx + il) * nz;
                let loc = il * nz;
                for k in 0..nz - 1 {
                    let kx = 0.25 * (fx0[xw + k] + fx0[xe + k] + fx0[xw + k + 1] + fx0[xe + k + 1]);
                    let ky = 0.25 * (fy0[ys + k] + fy0[yn + k] + fy0[ys + k + 1] + fy0[yn + k + 1]);
                    let t = tau(mid[k]);
                    let slope =
                        (kx * ax * (sx * t).powi(2) + ky * ay * (sy * t).powi(2)) / (lam2 * t_area);
                    let (flat, lifted) = (g.surface(f[k + 1]), g.surface(lift(h, f[k + 1])));
                    let fz = &mut fzr[loc + k];
                    *fz = (*fz * lifted + slope) / (jc * flat);
                }
                for (k, b) in br[loc..loc + nz].iter_mut().enumerate() {
                    *b *= g.volume(lift(h, f[k]), lift(h, f[k + 1])) / g.volume(f[k], f[k + 1]);
                }
            }
        });
    Slant { nx, ny, nz, wx, wy }
}

/// The coordinate (height on the box, radius on the panel) of the flat grid's `zeta` over a
/// column whose ground is `h` above `ground`, under a lid at `ground + top`:
/// `ζ + h (1 − (ζ − ground)/top)` (Gal-Chen & Somerville 1975).
pub fn terrain_coordinate(ground: f64, top: f64, h: f64, zeta: f64) -> f64 {
    zeta + h * (1.0 - (zeta - ground) / top)
}
