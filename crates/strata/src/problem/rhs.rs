//! Right-hand sides (docs/MODEL.md §6): seeded random, smooth bump, manufactured solution.

use super::manufactured::sphere_rhs;
use super::{cell_centre, manufactured_rhs, Geometry, HorizontalGrid, ProblemParams, VerticalGrid};
use crate::grid::sphere;
use crate::grid::Block;
use serde::{Deserialize, Serialize};

/// Which right-hand side to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RhsKind {
    /// f ~ U(−1, 1) at the cell centres, from a seed; the same field on any decomposition.
    #[default]
    Random,
    /// A smooth Gaussian bump.
    Bump,
    /// The manufactured solution of docs/MODEL.md §12.3 (its exact solution is known).
    Manufactured,
}

/// Counter-based uniform random number in [−1, 1) for global index `idx` (SplitMix64 finaliser).
/// A counter-based generator makes the field independent of the order cells are visited in, so
/// every decomposition and backend sees the same right-hand side.
pub(crate) fn uniform_pm1(seed: u64, idx: u64) -> f64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(idx.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(0x94D0_49BB_1331_11EB);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64) * (2.0 / (1u64 << 53) as f64) - 1.0
}

/// Builds the volume-integrated right-hand side f̄ = |T| V_k f(centre) (docs/MODEL.md §3.5) on a block
/// of the fine grid, z-contiguous: `out[(j * nx + i) * nz + k]` for local `(i, j)`. On the
/// sphere the block is a tile of one panel ([`crate::grid::sphere::tiles`]); the random field
/// is keyed by the panel too, the bump is centred on panel 0 at (0.3, −0.2), and the
/// manufactured solution is a spherical harmonic (docs/MODEL.md §16).
pub fn build_rhs(p: &ProblemParams, kind: RhsKind, seed: u64, block: &Block) -> Vec<f64> {
    let vert = VerticalGrid::new(p);
    let hgrid = HorizontalGrid {
        geometry: p.geometry,
        n: p.n,
    };
    let nz = p.nz;
    let mut out = vec![0.0; block.nx * block.ny * nz];
    for jl in 0..block.ny {
        for il in 0..block.nx {
            let (i, j) = (block.i0 + il, block.j0 + jl);
            let area = hgrid.area(i, j);
            let (x, y) = cell_centre(p.geometry, p.n, i, j);
            let col = &mut out[(jl * block.nx + il) * nz..][..nz];
            for (k, v) in col.iter_mut().enumerate() {
                // Over orography the terrain-following cell's volume (docs/MODEL.md §23).
                let panel = block.panel.unwrap_or(0);
                let vol = area * p.volume_factor(&vert, panel, i, j, k);
                let r = vert.centres[k];
                let f = match (kind, p.geometry) {
                    (RhsKind::Random, _) => {
                        uniform_pm1(seed, (((panel * p.n + j) * p.n + i) * nz + k) as u64)
                    }
                    (RhsKind::Bump, Geometry::Sphere) => {
                        let (a, b) = (sphere::point(panel, x, y), sphere::point(0, 0.3, -0.2));
                        let d2: f64 = (0..3).map(|d| (a[d] - b[d]) * (a[d] - b[d])).sum();
                        let zeta = (r - 1.0) / p.height;
                        (-d2 / 0.1 - (zeta - 0.5) * (zeta - 0.5) / 0.05).exp()
                    }
                    (RhsKind::Bump, _) => bump(p, x, y, r),
                    (RhsKind::Manufactured, Geometry::Sphere) => {
                        sphere_rhs(p, sphere::point(panel, x, y), r)
                    }
                    (RhsKind::Manufactured, _) => manufactured_rhs(p, x, y, r),
                };
                *v = vol * f;
            }
        }
    }
    out
}

/// The cell volumes |T| V_k of every tile of `tiles`, one after the other, in the host layout
/// (what [`build_rhs`] integrates over).
pub fn cell_volumes(p: &ProblemParams, tiles: &[Block]) -> Vec<f64> {
    let vert = VerticalGrid::new(p);
    let hgrid = HorizontalGrid {
        geometry: p.geometry,
        n: p.n,
    };
    let factors: Vec<f64> = (0..p.nz)
        .map(|k| vert.volume_factor(p.geometry, k))
        .collect();
    let mut out = Vec::with_capacity(tiles.iter().map(|b| b.nx * b.ny * p.nz).sum());
    for b in tiles {
        for jl in 0..b.ny {
            for il in 0..b.nx {
                let (i, j) = (b.i0 + il, b.j0 + jl);
                let area = hgrid.area(i, j);
                if p.orography.is_some() {
                    let panel = b.panel.unwrap_or(0);
                    out.extend((0..p.nz).map(|k| area * p.volume_factor(&vert, panel, i, j, k)));
                } else {
                    out.extend(factors.iter().map(|v| area * v));
                }
            }
        }
    }
    out
}

/// [`build_rhs`] of every tile of `tiles`, one after the other (the host layout of a sphere
/// field, [`crate::backend::tiled`]).
pub fn build_rhs_tiles(p: &ProblemParams, kind: RhsKind, seed: u64, tiles: &[Block]) -> Vec<f64> {
    tiles
        .iter()
        .flat_map(|t| build_rhs(p, kind, seed, t))
        .collect()
}

/// f = exp(−((x−0.3)² + (y+0.2)²)/0.1 − (ζ−0.5)²/0.05), ζ the relative height.
fn bump(p: &ProblemParams, x: f64, y: f64, r: f64) -> f64 {
    let zeta = (r - p.geometry.ground()) / p.height;
    let (dx, dy, dz) = (x - 0.3, y + 0.2, zeta - 0.5);
    (-(dx * dx + dy * dy) / 0.1 - dz * dz / 0.05).exp()
}
