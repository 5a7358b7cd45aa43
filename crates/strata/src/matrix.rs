//! The assembled fine-level matrix, for checking strata against other solvers (SciPy, PETSc) and
//! for `strata operator --export` (PETSc users have `-mat_view` for this).
//!
//! Unknowns are numbered as the host arrays are laid out, z fastest:
//! `row = (j * n + i) * nz + k` (0-based here; Matrix Market files are 1-based); on the sphere
//! `row = ((panel * n + j) * n + i) * nz + k`.

use crate::error::Result;
use crate::grid::{sphere, Side};
use crate::problem::{ProblemParams, VerticalGrid};
use crate::stencil::{build_sphere_levels, LevelStencil};
use std::sync::Arc;

/// A sparse matrix in coordinate form, rows in order, each row's entries by column.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseMatrix {
    /// Rows and columns (n² nz).
    pub size: usize,
    /// Row of each entry.
    pub rows: Vec<usize>,
    /// Column of each entry.
    pub cols: Vec<usize>,
    /// Value of each entry.
    pub values: Vec<f64>,
}

impl SparseMatrix {
    /// y = A x.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.size];
        for ((&r, &c), &v) in self.rows.iter().zip(&self.cols).zip(&self.values) {
            y[r] += v * x[c];
        }
        y
    }
}

/// Assembles the fine-level operator of `p` (with its coefficient fields, if any): seven
/// entries per row (nine horizontal on the sphere, fifteen over orography on the box, nineteen
/// on the sphere), the Dirichlet boundary folded into the diagonal as the solvers see it; on
/// the sphere the six panels, the couplings across panel edges to the cells of the neighbouring
/// panels (docs/MODEL.md §16) — assembled from the rows and the edge links, not from the halo
/// exchange the solvers use, so the two can be checked against each other.
pub fn assemble(p: &ProblemParams) -> Result<SparseMatrix> {
    p.validate()?;
    let (n, nz) = (p.n, p.nz);
    let vertical = Arc::new(VerticalGrid::new(p));
    let stencils: Vec<LevelStencil> = if p.geometry.closed() {
        let tiles = sphere::tiles(n, 1);
        let levels = build_sphere_levels(p, &tiles, 1, Default::default())?;
        levels[0].tiles.as_deref().unwrap_or_default().to_vec()
    } else {
        vec![LevelStencil::new(p, p.whole_block(), vertical)]
    };
    let index = |panel: usize, i: usize, j: usize, k: usize| ((panel * n + j) * n + i) * nz + k;
    let whole = p.whole_block();
    // The cell next to (i, j) of `panel` across `side`: in the panel, or across its edge.
    let next = |panel: usize, i: usize, j: usize, side: Side| -> Option<(usize, usize, usize)> {
        let inside = match side {
            Side::West => i.checked_sub(1).map(|i| (i, j)),
            Side::East => (i + 1 < n).then_some((i + 1, j)),
            Side::South => j.checked_sub(1).map(|j| (i, j)),
            Side::North => (j + 1 < n).then_some((i, j + 1)),
        };
        if let Some((i, j)) = inside {
            return Some((panel, i, j));
        }
        if !p.geometry.closed() {
            // A periodic edge joins the far side's cell; any other is a wall.
            if !whole.periodic(side) {
                return None;
            }
            return Some(match side {
                Side::West => (panel, n - 1, j),
                Side::East => (panel, 0, j),
                Side::South => (panel, i, n - 1),
                Side::North => (panel, i, 0),
            });
        }
        let along = match side {
            Side::West | Side::East => j,
            Side::South | Side::North => i,
        };
        let (l, (i, j)) = sphere::cell_across(panel, side, along, n);
        Some((l.panel, i, j))
    };
    let size = stencils.len() * n * n * nz;
    let (mut rows, mut cols, mut values) = (
        Vec::with_capacity(7 * size),
        Vec::with_capacity(7 * size),
        Vec::with_capacity(7 * size),
    );
    for (panel, s) in stencils.iter().enumerate() {
        for j in 0..n {
            for i in 0..n {
                for k in 0..nz {
                    let e = s.row(i, j, k);
                    let row = index(panel, i, j, k);
                    let mut entries = vec![(row, e.diag)];
                    for (side, v) in [
                        (Side::West, e.west),
                        (Side::East, e.east),
                        (Side::South, e.south),
                        (Side::North, e.north),
                    ] {
                        if let Some((q, a, b)) = next(panel, i, j, side) {
                            entries.push((index(q, a, b, k), v));
                        }
                    }
                    // The sphere's diagonal couplings (inside a panel: zero across its edges).
                    let diagonal = s.diagonal_row(i, j, k);
                    for (v, (di, dj)) in
                        diagonal
                            .into_iter()
                            .zip([(1, 1), (-1, 1), (1, -1), (-1, -1)])
                    {
                        if v != 0.0 {
                            let (a, b) = (i as isize + di, j as isize + dj);
                            entries.push((index(panel, a as usize, b as usize, k), v));
                            entries[0].1 -= v;
                        }
                    }
                    // Orography's slant couplings (walls carry none; across the sphere's edges
                    // the neighbouring panel's cells).
                    if let Some(w) = &s.slant {
                        let sides = [Side::East, Side::West, Side::North, Side::South];
                        for (d, pair) in w.row(i, j, k).chunks(2).enumerate() {
                            let Some((q, a, b)) = next(panel, i, j, sides[d]) else {
                                continue;
                            };
                            for (v, kk) in [(pair[0], k + 1), (pair[1], k.wrapping_sub(1))] {
                                if v != 0.0 && kk < nz {
                                    entries.push((index(q, a, b, kk), v));
                                    entries[0].1 -= v;
                                }
                            }
                        }
                    }
                    if k > 0 {
                        entries.push((index(panel, i, j, k - 1), e.down));
                    }
                    if k + 1 < nz {
                        entries.push((index(panel, i, j, k + 1), e.up));
                    }
                    entries.sort_by_key(|&(c, _)| c);
                    // On a periodic direction of two cells both neighbours are one cell.
                    entries.dedup_by(|later, first| {
                        let same = later.0 == first.0;
                        if same {
                            first.1 += later.1;
                        }
                        same
                    });
                    for (c, v) in entries {
                        if v != 0.0 {
                            rows.push(row);
                            cols.push(c);
                            values.push(v);
                        }
                    }
                }
            }
        }
    }
    Ok(SparseMatrix {
        size,
        rows,
        cols,
        values,
    })
}
