//! Horizontal domain decomposition into a px × py grid of ranks, consistent on every multigrid
//! level: the coarsest level is split first (block sizes differ by at most one), and each finer
//! level's block is its coarse block times two, so every rank's children of a coarse cell are
//! its own.

use super::{Block, Boundaries, Boundary, Side};
use crate::error::{Result, StrataError};

/// A px × py grid of ranks; rank = cy · px + cx, cx along x (i), cy along y (j).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankGrid {
    /// Ranks along x.
    pub px: usize,
    /// Ranks along y.
    pub py: usize,
}

impl RankGrid {
    /// The grid of one process.
    pub const fn single() -> Self {
        Self { px: 1, py: 1 }
    }

    /// The most nearly square grid of `p` ranks (px ≥ py).
    pub fn choose(p: usize) -> Self {
        let p = p.max(1);
        let py = (1..=p)
            .filter(|d| p.is_multiple_of(*d) && d * d <= p)
            .max()
            .unwrap_or(1);
        Self { px: p / py, py }
    }

    /// Parses "PXxPY" (e.g. "3x2").
    pub fn parse(s: &str) -> Option<Self> {
        let (a, b) = s.split_once(['x', 'X'])?;
        let (px, py) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        (px > 0 && py > 0).then_some(Self { px, py })
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.px * self.py
    }

    /// Grid coordinates of a rank.
    pub fn coords(&self, rank: usize) -> (usize, usize) {
        (rank % self.px, rank / self.px)
    }

    /// The rank across `side` of `rank`, if any (none across the physical boundary).
    pub fn neighbour(&self, rank: usize, side: Side) -> Option<usize> {
        let (cx, cy) = self.coords(rank);
        let (nx, ny) = match side {
            Side::West => (cx.checked_sub(1)?, cy),
            Side::East => (cx + 1, cy),
            Side::South => (cx, cy.checked_sub(1)?),
            Side::North => (cx, cy + 1),
        };
        (nx < self.px && ny < self.py).then_some(ny * self.px + nx)
    }

    /// [`RankGrid::neighbour`] on a domain with the lateral conditions `bc`: across a periodic
    /// edge the rank at the far end of the row or column (this rank itself where it is alone
    /// there).
    pub fn neighbour_in(&self, rank: usize, side: Side, bc: Boundaries) -> Option<usize> {
        if let Some(n) = self.neighbour(rank, side) {
            return Some(n);
        }
        let (cx, cy) = self.coords(rank);
        match side {
            Side::West if bc.x == Boundary::Periodic => Some(cy * self.px + self.px - 1),
            Side::East if bc.x == Boundary::Periodic => Some(cy * self.px),
            Side::South if bc.y == Boundary::Periodic => Some((self.py - 1) * self.px + cx),
            Side::North if bc.y == Boundary::Periodic => Some(cx),
            _ => None,
        }
    }

    /// [`RankGrid::diagonal`] on a domain with the lateral conditions `bc` (the neighbour's
    /// neighbour, across periodic edges too).
    pub fn diagonal_in(&self, rank: usize, corner: usize, bc: Boundaries) -> Option<usize> {
        let (x, y) = corner_sides(corner);
        self.neighbour_in(self.neighbour_in(rank, x, bc)?, y, bc)
    }

    /// The rank diagonally across corner `corner` of `rank`'s block (0 north-east, 1
    /// north-west, 2 south-east, 3 south-west, as [`crate::grid::sphere::CornerLink`]), if any:
    /// the neighbour's neighbour, so there is one exactly where both sides at the corner have
    /// a neighbour.
    pub fn diagonal(&self, rank: usize, corner: usize) -> Option<usize> {
        let (x, y) = corner_sides(corner);
        self.neighbour(self.neighbour(rank, x)?, y)
    }
}

/// The sides that meet at corner `corner` (0 north-east, 1 north-west, 2 south-east, 3
/// south-west): the one in x, then the one in y.
pub fn corner_sides(corner: usize) -> (Side, Side) {
    let x = if corner.is_multiple_of(2) {
        Side::East
    } else {
        Side::West
    };
    let y = if corner < 2 { Side::North } else { Side::South };
    (x, y)
}

/// The halo cell at corner `corner` of an `nx × ny` block and the block's own interior cell
/// next to it, halo-inclusive: what a rank receives from the diagonal rank and what it sends
/// there (the diagonal rank's corner across the same vertex is `3 − corner`).
pub fn corner_cells(nx: usize, ny: usize, corner: usize) -> ((usize, usize), (usize, usize)) {
    let (x, y) = corner_sides(corner);
    let (hi, oi) = if x == Side::East {
        (nx + 1, nx)
    } else {
        (0, 1)
    };
    let (hj, oj) = if y == Side::North {
        (ny + 1, ny)
    } else {
        (0, 1)
    };
    ((hi, hj), (oi, oj))
}

/// Start and length of part `index` of `n` cells split into `parts` (the first `n % parts`
/// parts one longer).
pub fn split(n: usize, parts: usize, index: usize) -> (usize, usize) {
    let (base, extra) = (n / parts, n % parts);
    let start = index * base + index.min(extra);
    (start, base + usize::from(index < extra))
}

/// The decomposition of an n × n fine level with `n_levels` multigrid levels over a rank grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decomposition {
    /// Fine cells per direction.
    pub n: usize,
    /// Multigrid levels (1 for CG).
    pub n_levels: usize,
    /// The rank grid.
    pub grid: RankGrid,
}

/// The most levels an n × n problem allows on `grid`: n divisible by 2^(L−1) and every rank
/// keeping at least one cell per direction of the coarsest level.
pub fn max_levels(n: usize, grid: RankGrid) -> usize {
    let mut levels = 0;
    while levels < 64 {
        let f = 1usize << levels;
        if !n.is_multiple_of(f) || n / f < grid.px.max(grid.py) {
            break;
        }
        levels += 1;
    }
    levels
}

impl Decomposition {
    /// Checks that every level can be split over the grid.
    pub fn new(n: usize, n_levels: usize, grid: RankGrid) -> Result<Self> {
        if grid.size() == 1 {
            super::check_levels(&Block::whole(n), n_levels)?;
            return Ok(Self { n, n_levels, grid });
        }
        let most = max_levels(n, grid);
        if n_levels < 1 || n_levels > most {
            return Err(if most == 0 {
                StrataError::invalid(
                    "n",
                    format!(
                        "= {n} cannot be split over a {}x{} rank grid (fewer cells than ranks along a side)",
                        grid.px, grid.py
                    ),
                )
            } else {
                StrataError::invalid(
                    "levels",
                    format!(
                        "{n_levels} of n = {n} cannot be split over a {}x{} rank grid: at most {most} levels are possible",
                        grid.px, grid.py
                    ),
                )
            });
        }
        Ok(Self { n, n_levels, grid })
    }

    /// The fine-level block of `rank`.
    pub fn fine_block(&self, rank: usize) -> Block {
        let f = 1usize << (self.n_levels - 1);
        let nc = self.n / f;
        let (cx, cy) = self.grid.coords(rank);
        let (i0, nx) = split(nc, self.grid.px, cx);
        let (j0, ny) = split(nc, self.grid.py, cy);
        Block {
            n: self.n,
            i0: i0 * f,
            j0: j0 * f,
            nx: nx * f,
            ny: ny * f,
            panel: None,
            bc: super::Boundaries::DIRICHLET,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_as_square_as_possible() {
        let g = |p| {
            let r = RankGrid::choose(p);
            (r.px, r.py)
        };
        assert_eq!(
            [g(1), g(2), g(3), g(4), g(6), g(8), g(12)],
            [(1, 1), (2, 1), (3, 1), (2, 2), (3, 2), (4, 2), (4, 3)]
        );
        assert_eq!(RankGrid::parse("3x2"), Some(RankGrid { px: 3, py: 2 }));
        assert_eq!(RankGrid::parse("0x2"), None);
        assert_eq!(RankGrid::parse("3"), None);
    }

    #[test]
    fn neighbours_are_mutual_and_absent_at_the_boundary() {
        let grid = RankGrid { px: 3, py: 2 };
        for r in 0..6 {
            for side in Side::ALL {
                if let Some(n) = grid.neighbour(r, side) {
                    assert_eq!(grid.neighbour(n, side.opposite()), Some(r));
                }
            }
        }
        assert_eq!(grid.neighbour(0, Side::West), None);
        assert_eq!(grid.neighbour(0, Side::South), None);
        assert_eq!(grid.neighbour(0, Side::East), Some(1));
        assert_eq!(grid.neighbour(0, Side::North), Some(3));
        assert_eq!(grid.neighbour(5, Side::North), None);
    }

    #[test]
    fn periodic_neighbours_wrap_round_the_rank_grid() {
        let grid = RankGrid { px: 3, py: 2 };
        let bc = Boundaries::parse("x=periodic,y=neumann").unwrap();
        for r in 0..6 {
            for side in Side::ALL {
                if let Some(n) = grid.neighbour_in(r, side, bc) {
                    assert_eq!(grid.neighbour_in(n, side.opposite(), bc), Some(r));
                }
            }
            for c in 0..4 {
                if let Some(d) = grid.diagonal_in(r, c, bc) {
                    assert_eq!(
                        grid.diagonal_in(d, 3 - c, bc),
                        Some(r),
                        "rank {r} corner {c}"
                    );
                }
            }
        }
        assert_eq!(grid.neighbour_in(0, Side::West, bc), Some(2));
        assert_eq!(grid.neighbour_in(5, Side::East, bc), Some(3));
        assert_eq!(grid.neighbour_in(0, Side::South, bc), None);
        assert_eq!(grid.diagonal_in(0, 1, bc), Some(5));
        // Alone in its row: its own neighbour.
        let one = RankGrid { px: 1, py: 2 };
        assert_eq!(one.neighbour_in(1, Side::East, bc), Some(1));
    }

    #[test]
    fn diagonals_are_mutual_and_cross_the_corner_cells() {
        let grid = RankGrid { px: 3, py: 2 };
        for r in 0..6 {
            for c in 0..4 {
                let (x, y) = corner_sides(c);
                let both = grid.neighbour(r, x).is_some() && grid.neighbour(r, y).is_some();
                assert_eq!(grid.diagonal(r, c).is_some(), both, "rank {r} corner {c}");
                if let Some(d) = grid.diagonal(r, c) {
                    assert_eq!(grid.diagonal(d, 3 - c), Some(r));
                }
            }
        }
        // Rank 0 (south-west) has one diagonal, rank 4 (north, middle) two, to the south.
        assert_eq!(grid.diagonal(0, 0), Some(4));
        assert_eq!((0..4).filter_map(|c| grid.diagonal(0, c)).count(), 1);
        assert_eq!(grid.diagonal(4, 1), None);
        assert_eq!(grid.diagonal(4, 3), Some(0));
        assert_eq!(grid.diagonal(4, 2), Some(2));
        // A 5 × 3 block: the north-east halo corner and its own corner cell next to it.
        assert_eq!(corner_cells(5, 3, 0), ((6, 4), (5, 3)));
        assert_eq!(corner_cells(5, 3, 3), ((0, 0), (1, 1)));
        assert_eq!(corner_cells(5, 3, 1), ((0, 4), (1, 3)));
    }

    #[test]
    fn blocks_tile_every_level_exactly() {
        for (n, levels, grid) in [
            (40, 3, RankGrid { px: 3, py: 1 }),
            (40, 3, RankGrid { px: 2, py: 2 }),
            (44, 2, RankGrid { px: 3, py: 2 }),
            (64, 5, RankGrid { px: 1, py: 4 }),
        ] {
            let d = Decomposition::new(n, levels, grid).unwrap();
            let mut cover = vec![0u8; n * n];
            for r in 0..grid.size() {
                let b = d.fine_block(r);
                // Every level halves exactly.
                assert!(super::super::check_levels(&b, levels).is_ok(), "{b:?}");
                for j in b.j0..b.j0 + b.ny {
                    for i in b.i0..b.i0 + b.nx {
                        cover[j * n + i] += 1;
                    }
                }
            }
            assert!(cover.iter().all(|&c| c == 1), "n = {n}, {grid:?}");
        }
        // Uneven splits: 10 coarse cells over 3 ranks are 4, 3, 3.
        let d = Decomposition::new(40, 3, RankGrid { px: 3, py: 1 }).unwrap();
        assert_eq!(
            (0..3).map(|r| d.fine_block(r).nx).collect::<Vec<_>>(),
            [16, 12, 12]
        );
    }

    #[test]
    fn too_many_levels_for_the_grid_is_a_clear_error() {
        let e = Decomposition::new(40, 4, RankGrid { px: 8, py: 1 })
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 3 levels"), "{e}");
        let e = Decomposition::new(4, 1, RankGrid { px: 8, py: 1 })
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be split"), "{e}");
        assert_eq!(max_levels(40, RankGrid { px: 2, py: 2 }), 4);
    }
}
