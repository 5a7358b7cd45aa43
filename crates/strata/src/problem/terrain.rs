//! The terrain-following operator on the box (docs/MODEL.md §23): the finite-volume operator in
//! (x, y, ζ) with `z = ζ + h(x, y)(1 − ζ/H)`, derived from the energy
//! `ω² ∫ ∇u·K∇u dV` written in the new coordinates. Its 7-point part is the general operator's
//! (§15) with the metric folded into the face factors; the couplings to the four lateral
//! neighbours' cells above and below (the metric cross terms) are a [`Slant`].

use super::coefficients::{CellCoefficients, Coefficients};
use super::orography::Orography;
use super::{ProblemParams, VerticalGrid};
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

    /// Centred slopes (∂h/∂x, ∂h/∂y) at column (i, j), Δ the spacing.
    fn slopes(&self, i: isize, j: isize, delta: f64) -> (f64, f64) {
        (
            (self.at(i + 1, j) - self.at(i - 1, j)) / (2.0 * delta),
            (self.at(i, j + 1) - self.at(i, j - 1)) / (2.0 * delta),
        )
    }
}

/// Folds the terrain's metric into `cells` (the block's face factors and β from the level's
/// fields `coeffs`, docs/MODEL.md §23.2) and returns its cross terms. `oro` is the level's
/// orography, `block` a block of the box.
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
    let top = p.height;
    let lam2 = p.lambda * p.lambda;
    let w2 = p.omega() * p.omega();
    let delta = p.geometry.spacing(n);
    let ground = p.geometry.ground();
    let wrap = [
        block.bc.x == Boundary::Periodic,
        block.bc.y == Boundary::Periodic,
    ];
    let hs = Heights { h: oro, wrap };
    // τ = 1 − ζ/H, the factor of z's horizontal derivatives, at the middle of each dual
    // element (between centres k and k + 1) and of the bottom and top half-cells.
    let tau = |zeta: f64| 1.0 - (zeta - ground) / top;
    let c = &vertical.centres;
    let f = &vertical.faces;
    let tau_m: Vec<f64> = (0..nz - 1).map(|k| tau(0.5 * (c[k] + c[k + 1]))).collect();
    let tau_bot = tau(0.5 * (f[0] + c[0]));
    let tau_top = tau(0.5 * (c[nz - 1] + f[nz]));
    let (fx0, fy0) = (cells.fx.clone(), cells.fy.clone());
    fn column<'a>(c: &Coefficients, v: &'a [f64], i: usize, j: usize) -> &'a [f64] {
        &v[c.column_at(0, i, j)..][..c.nz]
    }
    // The half-cell next to the ground and the lid (docs/MODEL.md §23.2): with no cell beyond
    // it, its ∂u/∂ζ is the one of least energy, which is the zero-conormal-flux condition; the
    // face coefficient there keeps G₁₁ − G₁₃²/G₃₃ of G₁₁ over half the cell.
    let strip = |k_across: f64, k_along: f64, kz: f64, s_across: f64, s_along: f64, t: f64| {
        let (a, b) = (s_across * t, s_along * t);
        1.0 - 0.5 * k_across * a * a / (lam2 * kz + k_across * a * a + k_along * b * b)
    };
    let mut wx = vec![0.0; (nx + 1) * ny * nz];
    let mut wy = vec![0.0; nx * (ny + 1) * nz];
    // x faces: face fl of row jl lies between global columns gi − 1 and gi. Rows in parallel.
    let xrow = (nx + 1) * nz;
    cells
        .fx
        .par_chunks_mut(xrow)
        .zip(wx.par_chunks_mut(xrow))
        .enumerate()
        .for_each(|(jl, (fxr, wxr))| {
            let gj = block.j0 + jl;
            for fl in 0..=nx {
                let gi = block.i0 + fl;
                let at = (jl * (nx + 1) + fl) * nz;
                let loc = fl * nz;
                let inner = (gi > 0 && gi < n) || wrap[0];
                let (l, r) = ((gi as isize) - 1, gi as isize);
                let own = if gi > 0 { l } else { r };
                let jf = if inner {
                    1.0 - 0.5 * (hs.at(l, gj as isize) + hs.at(r, gj as isize)) / top
                } else {
                    1.0 - hs.at(own, gj as isize) / top
                };
                let face = &mut fxr[loc..loc + nz];
                for v in face.iter_mut() {
                    *v *= jf;
                }
                if !inner {
                    continue;
                }
                let (li, ri) = ((l.rem_euclid(n as isize)) as usize, (r as usize) % n);
                let dh = hs.at(r, gj as isize) - hs.at(l, gj as isize);
                let along =
                    0.5 * (hs.slopes(l, gj as isize, delta).1 + hs.slopes(r, gj as isize, delta).1);
                let (kyl, kyr) = (
                    column(coeffs, &coeffs.ky, li, gj),
                    column(coeffs, &coeffs.ky, ri, gj),
                );
                let (kzl, kzr) = (
                    column(coeffs, &coeffs.kz, li, gj),
                    column(coeffs, &coeffs.kz, ri, gj),
                );
                let kx = &fx0[at..at + nz];
                let sx = dh / delta;
                face[0] *= strip(
                    kx[0],
                    0.5 * (kyl[0] + kyr[0]),
                    0.5 * (kzl[0] + kzr[0]),
                    sx,
                    along,
                    tau_bot,
                );
                let t = nz - 1;
                face[t] *= strip(
                    kx[t],
                    0.5 * (kyl[t] + kyr[t]),
                    0.5 * (kzl[t] + kzr[t]),
                    sx,
                    along,
                    tau_top,
                );
                for k in 0..nz - 1 {
                    wxr[loc + k] = -0.5 * w2 * 0.5 * (kx[k] + kx[k + 1]) * dh * tau_m[k];
                }
            }
        });
    // y faces: face row fl lies between global rows gj − 1 and gj.
    let yrow = nx * nz;
    cells
        .fy
        .par_chunks_mut(yrow)
        .zip(wy.par_chunks_mut(yrow))
        .enumerate()
        .for_each(|(fl, (fyr, wyr))| {
            let gj = block.j0 + fl;
            for il in 0..nx {
                let gi = block.i0 + il;
                let at = (fl * nx + il) * nz;
                let loc = il * nz;
                let inner = (gj > 0 && gj < n) || wrap[1];
                let (s, nn) = ((gj as isize) - 1, gj as isize);
                let own = if gj > 0 { s } else { nn };
                let jf = if inner {
                    1.0 - 0.5 * (hs.at(gi as isize, s) + hs.at(gi as isize, nn)) / top
                } else {
                    1.0 - hs.at(gi as isize, own) / top
                };
                let face = &mut fyr[loc..loc + nz];
                for v in face.iter_mut() {
                    *v *= jf;
                }
                if !inner {
                    continue;
                }
                let (si, ni) = ((s.rem_euclid(n as isize)) as usize, (nn as usize) % n);
                let dh = hs.at(gi as isize, nn) - hs.at(gi as isize, s);
                let along = 0.5
                    * (hs.slopes(gi as isize, s, delta).0 + hs.slopes(gi as isize, nn, delta).0);
                let (kxs, kxn) = (
                    column(coeffs, &coeffs.kx, gi, si),
                    column(coeffs, &coeffs.kx, gi, ni),
                );
                let (kzs, kzn) = (
                    column(coeffs, &coeffs.kz, gi, si),
                    column(coeffs, &coeffs.kz, gi, ni),
                );
                let ky = &fy0[at..at + nz];
                let sy = dh / delta;
                face[0] *= strip(
                    ky[0],
                    0.5 * (kxs[0] + kxn[0]),
                    0.5 * (kzs[0] + kzn[0]),
                    sy,
                    along,
                    tau_bot,
                );
                let t = nz - 1;
                face[t] *= strip(
                    ky[t],
                    0.5 * (kxs[t] + kxn[t]),
                    0.5 * (kzs[t] + kzn[t]),
                    sy,
                    along,
                    tau_top,
                );
                for k in 0..nz - 1 {
                    wyr[loc + k] = -0.5 * w2 * 0.5 * (ky[k] + ky[k + 1]) * dh * tau_m[k];
                }
            }
        });
    // Vertical faces and β: G₃₃ = (λ² kz + kx z_x² + ky z_y²)/J over λ², and the volume J.
    cells
        .fz
        .par_chunks_mut(nx * nz)
        .zip(cells.beta.par_chunks_mut(nx * nz))
        .enumerate()
        .for_each(|(jl, (fzr, br))| {
            for il in 0..nx {
                let (gi, gj) = ((block.i0 + il) as isize, (block.j0 + jl) as isize);
                let jc = 1.0 - hs.at(gi, gj) / top;
                let (sx, sy) = hs.slopes(gi, gj, delta);
                let xw = (jl * (nx + 1) + il) * nz;
                let xe = xw + nz;
                let ys = (jl * nx + il) * nz;
                let yn = ((jl + 1) * nx + il) * nz;
                let loc = il * nz;
                for k in 0..nz - 1 {
                    let kx = 0.25 * (fx0[xw + k] + fx0[xe + k] + fx0[xw + k + 1] + fx0[xe + k + 1]);
                    let ky = 0.25 * (fy0[ys + k] + fy0[yn + k] + fy0[ys + k + 1] + fy0[yn + k + 1]);
                    let (zx, zy) = (sx * tau_m[k], sy * tau_m[k]);
                    let fz = &mut fzr[loc + k];
                    *fz = (*fz + (kx * zx * zx + ky * zy * zy) / lam2) / jc;
                }
                for b in &mut br[loc..loc + nz] {
                    *b *= jc;
                }
            }
        });
    Slant { nx, ny, nz, wx, wy }
}
