//! Per-level stencils: the column coefficients of a rectangular block of one level plus the shared
//! vertical vectors. Nothing of the size of a 3D field is stored for the operator.
//!
//! Levels are numbered `lev = 0` (finest) to `levels − 1` (coarsest). Level `lev` has
//! `n / 2^lev` cells per direction (horizontal semi-coarsening, nz fixed).

use crate::error::{invalid, Result};
use crate::problem::{Column, HorizontalGrid, ProblemParams, VerticalGrid};
use std::sync::Arc;

/// A rectangular block `[i0, i0 + nx) × [j0, j0 + ny)` of a level with `n × n` cells: the whole
/// level on one process, or one rank's subdomain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Global cells per direction on this level.
    pub n: usize,
    /// First global column index in x.
    pub i0: usize,
    /// First global row index in y.
    pub j0: usize,
    /// Local cells in x.
    pub nx: usize,
    /// Local cells in y.
    pub ny: usize,
}

impl Block {
    /// The whole `n × n` level.
    pub fn whole(n: usize) -> Self {
        Self {
            n,
            i0: 0,
            j0: 0,
            nx: n,
            ny: n,
        }
    }

    /// The block on the next coarser level (every index halved).
    pub fn coarsen(&self) -> Self {
        Self {
            n: self.n / 2,
            i0: self.i0 / 2,
            j0: self.j0 / 2,
            nx: self.nx / 2,
            ny: self.ny / 2,
        }
    }

    /// Which sides of the block are on the physical (Dirichlet) boundary.
    pub fn physical(&self) -> Sides {
        Sides {
            west: self.i0 == 0,
            east: self.i0 + self.nx == self.n,
            south: self.j0 == 0,
            north: self.j0 + self.ny == self.n,
        }
    }
}

/// One flag per side of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sides {
    /// Side towards i − 1.
    pub west: bool,
    /// Side towards i + 1.
    pub east: bool,
    /// Side towards j − 1.
    pub south: bool,
    /// Side towards j + 1.
    pub north: bool,
}

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

/// The largest number of multigrid levels a fine block allows: every level must halve exactly.
pub fn max_levels(block: &Block) -> usize {
    let mut levels = 1;
    let mut b = *block;
    while [b.n, b.i0, b.j0, b.nx, b.ny].iter().all(|v| v % 2 == 0) && b.nx >= 2 && b.ny >= 2 {
        b = b.coarsen();
        levels += 1;
    }
    levels
}

/// Builds the stencils of `levels` levels, finest first, for a fine block of problem `p`.
pub fn build_levels(p: &ProblemParams, fine: Block, levels: usize) -> Result<Vec<LevelStencil>> {
    p.validate()?;
    if levels < 1 {
        return invalid("the number of multigrid levels must be at least 1");
    }
    let most = max_levels(&fine);
    if levels > most {
        let f = 1usize << (levels - 1);
        return invalid(format!(
            "{levels} levels need n divisible by 2^{} = {f} (n = {}); at most {most} levels are possible",
            levels - 1,
            fine.n
        ));
    }
    let vertical = Arc::new(VerticalGrid::new(p));
    let mut out = Vec::with_capacity(levels);
    let mut b = fine;
    for _ in 0..levels {
        out.push(LevelStencil::new(p, b, vertical.clone()));
        b = b.coarsen();
    }
    Ok(out)
}
