//! Coefficient fields of one rank's block (docs/MODEL.md §15.7): a rank of a distributed solve
//! gives, keeps and coarsens only its own block's cells, and a ring of one cell around the block
//! where another rank's block lies across, filled from that rank on every level
//! ([`crate::comm::fill_rings`]): the face between two ranks' cells takes the harmonic mean of
//! both, as on one process, and no rank ever holds the whole level.

use super::coefficients::Coefficients;
use crate::error::{invalid, Result};
use crate::grid::{Block, Side};
use rayon::prelude::*;

/// Whether `b` has a ring cell across `side` (another block lies there).
fn has_ring(b: &Block, side: Side) -> bool {
    match side {
        Side::West => b.i0 > 0,
        Side::East => b.i0 + b.nx < b.n,
        Side::South => b.j0 > 0,
        Side::North => b.j0 + b.ny < b.n,
    }
}

/// The block's cells along `side`, `(edge, ring)` for each position along it: the block's own
/// cell next to the side and the ring cell across it.
fn along(b: &Block, side: Side) -> Vec<((usize, usize), (usize, usize))> {
    let (i1, j1) = (b.i0 + b.nx, b.j0 + b.ny);
    match side {
        Side::West => (b.j0..j1)
            .map(|j| ((b.i0, j), (b.i0.wrapping_sub(1), j)))
            .collect(),
        Side::East => (b.j0..j1).map(|j| ((i1 - 1, j), (i1, j))).collect(),
        Side::South => (b.i0..i1)
            .map(|i| ((i, b.j0), (i, b.j0.wrapping_sub(1))))
            .collect(),
        Side::North => (b.i0..i1).map(|i| ((i, j1 - 1), (i, j1))).collect(),
    }
}

impl Coefficients {
    /// The fields of `block` (a block of one `n × n` panel or box; `block.n` is the level's `n`)
    /// as a rank of a distributed solve gives them: each given array (κx, κy, κz, β, then ξ's
    /// three components, as [`Coefficients::from_given`]) holds the block's `nx · ny · nz`
    /// values, `v[(j * nx + i) * nz + k]` in the block's indices; a field not given is the
    /// model problem's. The ring ([`Coefficients::window`]) is NaN until the solver's
    /// communicator fills it from the neighbouring ranks ([`crate::comm::fill_rings`]). An
    /// error names a field of the wrong length.
    pub fn for_block(
        block: Block,
        nz: usize,
        beta: f64,
        given: [Option<&[f64]>; 7],
    ) -> Result<Self> {
        if block.panel.is_some() {
            return invalid(
                "coefficients",
                "of one block are taken for a panel or box, not for the sphere's tiles",
            );
        }
        let len = block.nx * block.ny * nz;
        let needs = format!("this rank's block {}x{}x{nz}", block.nx, block.ny);
        Self::shape(1, block.n, nz, Some(block)).with_given(beta, given, len, &needs, |g, c| {
            block_field(&block, nz, g, c)
        })
    }

    /// The part of these whole-level fields that [`Coefficients::for_block`] would take for
    /// `block`: its own cells (the ring to be filled by the ranks, as from a model's arrays). For
    /// a rank that has the whole fields at hand (a file read whole) but should keep and coarsen
    /// only its own.
    pub fn block_of(&self, block: Block) -> Result<Self> {
        if self.window.is_some() || self.panels != 1 || block.n != self.n {
            return invalid(
                "coefficients",
                format!("a block of {block:?} is taken from one whole panel's or box's fields of that level"),
            );
        }
        let nz = self.nz;
        let part = |v: &[f64]| block.cut(v, nz);
        let mut given: Vec<Vec<f64>> = vec![
            part(&self.kx),
            part(&self.ky),
            part(&self.kz),
            part(&self.beta),
        ];
        given.extend(self.xi.iter().flatten().map(|v| part(v)));
        let field = |f: usize| given.get(f).map(Vec::as_slice);
        // β is always given here, so the model problem's δ is not needed.
        Self::for_block(block, nz, 1.0, std::array::from_fn(field))
    }

    /// One field of the block on the next coarser level: each of the coarse block's cells the
    /// `mean` of its four children (all of them in this block: blocks are split along coarse
    /// cells); the coarse ring NaN until it is filled.
    pub(super) fn coarsen_block_field(
        &self,
        fine: &Block,
        v: &[f64],
        mean: impl Fn(f64, f64, f64, f64) -> f64 + Sync,
    ) -> Vec<f64> {
        let coarse = fine.coarsen();
        let (x0, y0, wx, wy) = coarse.with_ring();
        let nz = self.nz;
        let mut out = vec![f64::NAN; wx * wy * nz];
        out.par_chunks_mut(wx * nz)
            .enumerate()
            .for_each(|(r, row)| {
                let j = y0 + r;
                if j < coarse.j0 || j >= coarse.j0 + coarse.ny {
                    return;
                }
                for i in coarse.i0..coarse.i0 + coarse.nx {
                    let o = &mut row[(i - x0) * nz..][..nz];
                    let child = |ii: usize, jj: usize| &v[self.column_at(0, ii, jj)..][..nz];
                    let (a, b) = (child(2 * i, 2 * j), child(2 * i + 1, 2 * j));
                    let (c, d) = (child(2 * i, 2 * j + 1), child(2 * i + 1, 2 * j + 1));
                    for k in 0..nz {
                        o[k] = mean(a[k], b[k], c[k], d[k]);
                    }
                }
            });
        out
    }

    /// Every field, in the order of [`Coefficients::FIELD_NAMES`] (ξ's only when given).
    fn all_fields(&self) -> Vec<&[f64]> {
        let mut v: Vec<&[f64]> = vec![&self.kx, &self.ky, &self.kz, &self.beta];
        v.extend(self.xi.iter().flatten().map(Vec::as_slice));
        v
    }

    /// What this block sends across each side that has a ring ([`Side::index`]): its own cells
    /// next to that side, every field (`[field][position along the side][k]`), for the ring of
    /// the block across it. `None` for whole-level fields and for sides without a ring.
    pub fn edges(&self) -> [Option<Vec<f64>>; 4] {
        let Some(b) = &self.window else {
            return [None, None, None, None];
        };
        let fields = self.all_fields();
        Side::ALL.map(|side| {
            has_ring(b, side).then(|| {
                let cells = along(b, side);
                let mut out = Vec::with_capacity(fields.len() * cells.len() * self.nz);
                for f in &fields {
                    for &((i, j), _) in &cells {
                        out.extend_from_slice(&f[self.column_at(0, i, j)..][..self.nz]);
                    }
                }
                out
            })
        })
    }

    /// Writes the ring across each side from `rings` ([`Side::index`]; each what the block
    /// across that side sent as its [`Coefficients::edges`]). An error where a ring is missing
    /// or of the wrong length (the blocks do not meet as a rank grid's do).
    pub fn set_rings(&mut self, rings: [Option<Vec<f64>>; 4]) -> Result<()> {
        let Some(b) = self.window else {
            return Ok(());
        };
        let nz = self.nz;
        for (side, ring) in Side::ALL.into_iter().zip(rings) {
            if !has_ring(&b, side) {
                continue;
            }
            let cells = along(&b, side);
            let fields = 4 + if self.xi.is_some() { 3 } else { 0 };
            let want = fields * cells.len() * nz;
            let Some(ring) = ring.filter(|r| r.len() == want) else {
                return invalid(
                    "coefficients",
                    format!(
                        "the ring across the {side:?} side of {b:?} did not come ({want} values)"
                    ),
                );
            };
            let at: Vec<usize> = cells
                .iter()
                .map(|&(_, (i, j))| self.column_at(0, i, j))
                .collect();
            let mut fields: Vec<&mut Vec<f64>> =
                vec![&mut self.kx, &mut self.ky, &mut self.kz, &mut self.beta];
            fields.extend(self.xi.iter_mut().flatten());
            // One part of the ring per field, in the order of `edges`.
            for (f, part) in fields.into_iter().zip(ring.chunks_exact(cells.len() * nz)) {
                for (&a, col) in at.iter().zip(part.chunks_exact(nz)) {
                    f[a..a + nz].copy_from_slice(col);
                }
            }
        }
        Ok(())
    }
}

/// A field of `block` with its ring: the given values (block-local order) or `constant` in the
/// block's cells, NaN in the ring; written by the host's threads a stored row at a time.
fn block_field(block: &Block, nz: usize, given: Option<&[f64]>, constant: f64) -> Vec<f64> {
    let (x0, y0, wx, wy) = block.with_ring();
    let mut v = vec![f64::NAN; wx * wy * nz];
    v.par_chunks_mut(wx * nz).enumerate().for_each(|(r, row)| {
        let j = y0 + r;
        if j < block.j0 || j >= block.j0 + block.ny {
            return;
        }
        let dst = &mut row[(block.i0 - x0) * nz..][..block.nx * nz];
        match given {
            Some(g) => dst.copy_from_slice(&g[(j - block.j0) * block.nx * nz..][..block.nx * nz]),
            None => dst.fill(constant),
        }
    });
    v
}
