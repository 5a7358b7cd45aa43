//! Where a fine cell's prolongation reads the coarse level, for the backends' host kernels:
//! the parent, its neighbour in x and in y on the child's side, and whether either neighbour is
//! a ghost outside the physical boundary (then −u_P); and the halo cells that
//! [`super::StencilKernels::prolongate_faces`] fills.

use crate::grid::Side;
use crate::stencil::LevelStencil;

/// The coarse cells of fine cell (i, j)'s prolongation, as halo-inclusive coarse indices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Parents {
    /// The parent's column.
    pub ip: usize,
    /// The parent's row.
    pub jp: usize,
    /// The neighbour in x: its column.
    pub ix: usize,
    /// The neighbour in y: its row.
    pub jy: usize,
    /// The neighbour in x beyond a wall, as a multiple of the parent (−1 Dirichlet, +1
    /// zero-flux); `None` where it is a cell of the coarse field or its halo.
    pub ghost_x: Option<f64>,
    /// The neighbour in y beyond a wall.
    pub ghost_y: Option<f64>,
}

/// The coarse cells read for fine cell (i, j) of interior coordinates (−1 and n are the halo)
/// below `coarse` (fine blocks are twice the coarse ones).
pub(crate) fn parents(coarse: &LevelStencil, i: isize, j: isize) -> Parents {
    let (ncx, ncy) = (coarse.nx() as isize, coarse.ny() as isize);
    let side = |f: isize| {
        let p = f.div_euclid(2);
        (p, if f.rem_euclid(2) == 0 { p - 1 } else { p + 1 })
    };
    let ((ip, ix), (jp, jy)) = (side(i), side(j));
    let ghost_x = ghost(coarse, ix, ncx, Side::West, Side::East);
    let ghost_y = ghost(coarse, jy, ncy, Side::South, Side::North);
    Parents {
        ip: (ip + 1) as usize,
        jp: (jp + 1) as usize,
        ix: (ix + 1) as usize,
        jy: (jy + 1) as usize,
        ghost_x,
        ghost_y,
    }
}

/// The ghost beyond a wall that coarse index `c` (of `nc` along the direction, −1 or `nc`
/// beyond the block) lies in, as a multiple of the parent: [`crate::grid::Block::ghost_sign`].
pub(crate) fn ghost(coarse: &LevelStencil, c: isize, nc: isize, lo: Side, hi: Side) -> Option<f64> {
    if c < 0 {
        coarse.block.ghost_sign(lo)
    } else if c >= nc {
        coarse.block.ghost_sign(hi)
    } else {
        None
    }
}

/// The halo cells of an `nx × ny` block on the sides set in `sides` ([`Side::index`]), faces
/// only (a corner belongs to no side), in interior coordinates.
pub(crate) fn face_cells(
    nx: usize,
    ny: usize,
    sides: [bool; 4],
) -> impl Iterator<Item = (isize, isize)> {
    let (nx, ny) = (nx as isize, ny as isize);
    Side::ALL
        .into_iter()
        .filter(move |s| sides[s.index()])
        .flat_map(move |s| {
            // The face's cells, t along it: a fixed column (west, east) or row (south, north).
            let len = match s {
                Side::West | Side::East => ny,
                Side::South | Side::North => nx,
            };
            (0..len).map(move |t| match s {
                Side::West => (-1, t),
                Side::East => (nx, t),
                Side::South => (t, -1),
                Side::North => (t, ny),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn face_cells_cover_the_sides_asked_for_and_no_corner() {
        let cells: Vec<_> = face_cells(3, 2, [true, false, false, true]).collect();
        assert_eq!(cells, [(-1, 0), (-1, 1), (0, 2), (1, 2), (2, 2)]);
        assert_eq!(face_cells(3, 2, [false; 4]).count(), 0);
        assert_eq!(face_cells(3, 2, [true; 4]).count(), 10);
    }
}
