//! Blocks of a level and their sides: the index arithmetic every layer shares.

use super::boundary::{Boundaries, Boundary, Edge};

/// A rectangular block `[i0, i0 + nx) × [j0, j0 + ny)` of a level with `n × n` cells: the whole
/// level on one process, or one rank's subdomain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// The panel of the cubed sphere this block is part of (`Some` on `--geometry sphere`,
    /// docs/MODEL.md §16), `None` on the one-panel and box problems. A block of the closed
    /// sphere has no physical boundary: every side has a neighbour.
    pub panel: Option<usize>,
    /// The lateral conditions of the level's domain (the box's or panel's edges; Dirichlet,
    /// and unused, on the sphere): what lies beyond each side of the block on the domain's edge.
    pub bc: Boundaries,
}

impl Block {
    /// The rectangle `(x0, y0, wx, wy)` of the block with a ring of one cell on every side that
    /// is not the edge of the panel or box (the cells a rank stores of a per-cell field).
    pub fn with_ring(&self) -> (usize, usize, usize, usize) {
        let (x0, y0) = (
            self.i0 - usize::from(self.i0 > 0),
            self.j0 - usize::from(self.j0 > 0),
        );
        let x1 = self.i0 + self.nx + usize::from(self.i0 + self.nx < self.n);
        let y1 = self.j0 + self.ny + usize::from(self.j0 + self.ny < self.n);
        (x0, y0, x1 - x0, y1 - y0)
    }

    /// The whole `n × n` level.
    pub fn whole(n: usize) -> Self {
        Self {
            n,
            i0: 0,
            j0: 0,
            nx: n,
            ny: n,
            panel: None,
            bc: Boundaries::DIRICHLET,
        }
    }

    /// The block with the lateral conditions `bc`.
    pub fn with_bc(self, bc: Boundaries) -> Self {
        Self { bc, ..self }
    }

    /// The whole `n × n` panel `panel` of the cubed sphere.
    pub fn panel(panel: usize, n: usize) -> Self {
        Self {
            panel: Some(panel),
            ..Self::whole(n)
        }
    }

    /// The block with `nx` local cells in x.
    pub fn with_nx(self, nx: usize) -> Self {
        Self { nx, ..self }
    }

    /// This block's values of a whole-level array with `nz` values per column, columns row by row
    /// (`v[(j * n + i) * nz + k]`; on the sphere the six panels one after the other, the block's
    /// panel taken): the block's rows, `nx · nz` values each, in the block's own order.
    pub fn cut(&self, whole: &[f64], nz: usize) -> Vec<f64> {
        let panel = self.panel.unwrap_or(0);
        let mut out = Vec::with_capacity(self.nx * self.ny * nz);
        for j in self.j0..self.j0 + self.ny {
            let row = ((panel * self.n + j) * self.n + self.i0) * nz;
            out.extend_from_slice(&whole[row..row + self.nx * nz]);
        }
        out
    }

    /// The block on the next coarser level (every index halved).
    pub fn coarsen(&self) -> Self {
        Self {
            n: self.n / 2,
            i0: self.i0 / 2,
            j0: self.j0 / 2,
            nx: self.nx / 2,
            ny: self.ny / 2,
            panel: self.panel,
            bc: self.bc,
        }
    }

    /// Which sides of the block are on a wall (a Dirichlet or zero-flux side of the domain):
    /// none on the sphere, none in a periodic direction.
    pub fn physical(&self) -> Sides {
        let wall = |s: Side| self.edge(s) != Edge::Cells;
        Sides {
            west: wall(Side::West),
            east: wall(Side::East),
            south: wall(Side::South),
            north: wall(Side::North),
        }
    }

    /// Whether `side` of the block is on the edge of the panel or box (whatever its condition).
    pub fn on_domain_edge(&self, side: Side) -> bool {
        self.panel.is_none()
            && match side {
                Side::West => self.i0 == 0,
                Side::East => self.i0 + self.nx == self.n,
                Side::South => self.j0 == 0,
                Side::North => self.j0 + self.ny == self.n,
            }
    }

    /// What lies beyond `side`: cells of the level (a neighbouring block, or across a periodic
    /// edge the far side of the domain), or a wall with its condition.
    pub fn edge(&self, side: Side) -> Edge {
        if !self.on_domain_edge(side) {
            return Edge::Cells;
        }
        let b = match side {
            Side::West | Side::East => self.bc.x,
            Side::South | Side::North => self.bc.y,
        };
        match b {
            Boundary::Dirichlet => Edge::Dirichlet,
            Boundary::Neumann => Edge::Neumann,
            Boundary::Periodic => Edge::Cells,
        }
    }

    /// The ghost cell beyond `side` as a multiple of the cell inside (what the prolongation
    /// reads there): −1 at a Dirichlet wall, +1 at a zero-flux wall, `None` where the halo
    /// holds cells.
    pub fn ghost_sign(&self, side: Side) -> Option<f64> {
        match self.edge(side) {
            Edge::Cells => None,
            Edge::Dirichlet => Some(-1.0),
            Edge::Neumann => Some(1.0),
        }
    }

    /// Whether `side` is a periodic edge of the domain (its halo is the far side's cells).
    pub fn periodic(&self, side: Side) -> bool {
        self.on_domain_edge(side) && self.edge(side) == Edge::Cells
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

/// A side of a block, for halo exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Towards i − 1.
    West,
    /// Towards i + 1.
    East,
    /// Towards j − 1.
    South,
    /// Towards j + 1.
    North,
}

impl Side {
    /// All four sides.
    pub const ALL: [Side; 4] = [Side::West, Side::East, Side::South, Side::North];

    /// The side's position in [`Side::ALL`] (0 west, 1 east, 2 south, 3 north).
    pub fn index(self) -> usize {
        match self {
            Side::West => 0,
            Side::East => 1,
            Side::South => 2,
            Side::North => 3,
        }
    }

    /// The opposite side.
    pub fn opposite(self) -> Side {
        match self {
            Side::West => Side::East,
            Side::East => Side::West,
            Side::South => Side::North,
            Side::North => Side::South,
        }
    }
}

impl Block {
    /// Values on the face of the block on `side` with `nz` vertical cells: `ny * nz` for
    /// west/east, `nx * nz` for south/north.
    pub fn face_len(&self, side: Side, nz: usize) -> usize {
        match side {
            Side::West | Side::East => self.ny * nz,
            Side::South | Side::North => self.nx * nz,
        }
    }

    /// The block one level coarser if every index halves exactly and it keeps a cell per
    /// direction.
    pub fn coarsen_exact(&self) -> Option<Self> {
        let even = [self.n, self.i0, self.j0, self.nx, self.ny]
            .iter()
            .all(|v| v % 2 == 0);
        (even && self.nx >= 2 && self.ny >= 2).then(|| self.coarsen())
    }
}

#[cfg(test)]
mod tests {
    use super::Block;

    #[test]
    fn cut_takes_the_blocks_columns_in_its_own_order() {
        // Each value names its cell: panel, row, column, level.
        let (n, nz) = (6, 2);
        let whole: Vec<f64> = (0..6 * n * n * nz)
            .map(|c| {
                let (k, i, j, panel) = (c % nz, (c / nz) % n, (c / (nz * n)) % n, c / (nz * n * n));
                (1000 * panel + 100 * j + 10 * i + k) as f64
            })
            .collect();
        let b = Block {
            n,
            i0: 2,
            j0: 1,
            nx: 3,
            ny: 2,
            panel: Some(4),
            bc: Default::default(),
        };
        let mut want = vec![];
        for j in 0..b.ny {
            for i in 0..b.nx {
                for k in 0..nz {
                    want.push((4000 + 100 * (b.j0 + j) + 10 * (b.i0 + i) + k) as f64);
                }
            }
        }
        assert_eq!(b.cut(&whole, nz), want);
        // A block of a panel or box reads the first (only) panel.
        let flat = Block { panel: None, ..b };
        assert_eq!(flat.cut(&whole, nz)[0], (100 + 20) as f64);
    }
}
