//! Blocks of a level and their sides: the index arithmetic every layer shares.

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
            panel: None,
        }
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

    /// The block on the next coarser level (every index halved).
    pub fn coarsen(&self) -> Self {
        Self {
            n: self.n / 2,
            i0: self.i0 / 2,
            j0: self.j0 / 2,
            nx: self.nx / 2,
            ny: self.ny / 2,
            panel: self.panel,
        }
    }

    /// Which sides of the block are on the physical (Dirichlet) boundary: none on the sphere.
    pub fn physical(&self) -> Sides {
        if self.panel.is_some() {
            return Sides {
                west: false,
                east: false,
                south: false,
                north: false,
            };
        }
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
