//! Per-level stencils: the column coefficients of a rectangular block of one level plus the shared
//! vertical vectors. Nothing of the size of a 3D field is stored for the operator.
//!
//! Levels are numbered `lev = 0` (finest) to `levels − 1` (coarsest). Level `lev` has
//! `n / 2^lev` cells per direction (horizontal semi-coarsening, nz fixed).

use crate::error::Result;
use crate::grid::check_levels;
pub use crate::grid::Block;
use crate::problem::{Column, HorizontalGrid, ProblemParams, VerticalGrid};
use std::sync::Arc;

/// The operator of one level on one block: column coefficients (row-major, `j * nx + i`) and the
/// vertical vectors shared by all levels.
#[derive(Debug, Clone)]
pub struct LevelStencil {
    /// The block of the level.
    pub block: Block,
    /// Vertical cells.
    pub nz: usize,
    /// Column coefficients, `nx * ny`, row-major.
    pub columns: Vec<Column>,
    /// Vertical vectors a, b, c, d (shared by every level).
    pub vertical: Arc<VerticalGrid>,
}

impl LevelStencil {
    /// Builds the stencil of a block by rediscretisation on that level's grid.
    pub fn new(p: &ProblemParams, block: Block, vertical: Arc<VerticalGrid>) -> Self {
        let grid = HorizontalGrid {
            geometry: p.geometry,
            n: block.n,
        };
        let mut columns = Vec::with_capacity(block.nx * block.ny);
        for j in 0..block.ny {
            for i in 0..block.nx {
                columns.push(grid.column(block.i0 + i, block.j0 + j));
            }
        }
        Self {
            block,
            nz: p.nz,
            columns,
            vertical,
        }
    }

    /// Local cells in x.
    pub fn nx(&self) -> usize {
        self.block.nx
    }

    /// Local cells in y.
    pub fn ny(&self) -> usize {
        self.block.ny
    }

    /// Local unknowns nx · ny · nz.
    pub fn cells(&self) -> usize {
        self.block.nx * self.block.ny * self.nz
    }
}

/// Builds the stencils of `levels` levels, finest first, for a fine block of problem `p`.
pub fn build_levels(p: &ProblemParams, fine: Block, n_levels: usize) -> Result<Vec<LevelStencil>> {
    p.validate()?;
    check_levels(&fine, n_levels)?;
    let vertical = Arc::new(VerticalGrid::new(p));
    let mut out = Vec::with_capacity(n_levels);
    let mut b = fine;
    for _ in 0..n_levels {
        out.push(LevelStencil::new(p, b, vertical.clone()));
        b = b.coarsen();
    }
    Ok(out)
}
