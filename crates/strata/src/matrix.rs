//! The assembled fine-level matrix, for checking strata against other solvers (SciPy, PETSc) and
//! for `strata operator --export` (PETSc users have `-mat_view` for this).
//!
//! Unknowns are numbered as the host arrays are laid out, z fastest:
//! `row = (j * n + i) * nz + k` (0-based here; Matrix Market files are 1-based).

use crate::error::Result;
use crate::grid::Block;
use crate::problem::{ProblemParams, VerticalGrid};
use crate::stencil::LevelStencil;
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

/// Assembles the fine-level operator of `p` (with its coefficient fields, if any): at most seven
/// entries per row, the Dirichlet boundary folded into the diagonal as the solvers see it.
pub fn assemble(p: &ProblemParams) -> Result<SparseMatrix> {
    p.validate()?;
    if p.geometry == crate::problem::Geometry::Sphere {
        return crate::error::invalid(
            "geometry",
            "sphere: assembling the six panels' matrix is not supported (the panel and box are)",
        );
    }
    let (n, nz) = (p.n, p.nz);
    let s = LevelStencil::new(p, Block::whole(n), Arc::new(VerticalGrid::new(p)));
    let index = |i: usize, j: usize, k: usize| (j * n + i) * nz + k;
    let size = n * n * nz;
    let (mut rows, mut cols, mut values) = (
        Vec::with_capacity(7 * size),
        Vec::with_capacity(7 * size),
        Vec::with_capacity(7 * size),
    );
    for j in 0..n {
        for i in 0..n {
            for k in 0..nz {
                let e = s.row(i, j, k);
                let row = index(i, j, k);
                let mut entries = vec![(row, e.diag)];
                if j > 0 {
                    entries.push((index(i, j - 1, k), e.south));
                }
                if i > 0 {
                    entries.push((index(i - 1, j, k), e.west));
                }
                if k > 0 {
                    entries.push((index(i, j, k - 1), e.down));
                }
                if k + 1 < nz {
                    entries.push((index(i, j, k + 1), e.up));
                }
                if i + 1 < n {
                    entries.push((index(i + 1, j, k), e.east));
                }
                if j + 1 < n {
                    entries.push((index(i, j + 1, k), e.north));
                }
                entries.sort_by_key(|&(c, _)| c);
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
    Ok(SparseMatrix {
        size,
        rows,
        cols,
        values,
    })
}
