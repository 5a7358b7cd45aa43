//! The grid's index arithmetic, below every other layer: blocks of a level and their sides
//! ([`Block`], [`Side`]), and the decomposition of the horizontal over a px × py grid of ranks,
//! consistent on every multigrid level ([`RankGrid`], [`Decomposition`], [`max_levels`]).

mod block;
mod boundary;
mod decomposition;
pub mod dual;
pub mod sphere;

pub use block::{Block, Side, Sides};
pub use boundary::{Boundaries, Boundary, Edge};
pub use decomposition::{corner_cells, corner_sides, max_levels, split, Decomposition, RankGrid};

use crate::error::{invalid, Result};

/// Checks that `levels` multigrid levels can be built on the fine block `fine`: every level must
/// halve exactly. The one place that says how many levels a block allows.
pub fn check_levels(fine: &Block, n_levels: usize) -> Result<()> {
    if n_levels < 1 {
        return invalid("levels", "must be at least 1 (got 0)");
    }
    let most = most_levels(fine);
    if n_levels > most {
        return invalid(
            "levels",
            format!(
                "{n_levels} needs n divisible by 2^{} = {}, but n = {}: at most {most} levels are possible",
                n_levels - 1,
                1usize << (n_levels - 1).min(63),
                fine.n
            ),
        );
    }
    Ok(())
}

/// The most levels a fine block can be coarsened into: how many times it halves exactly, plus
/// one.
pub fn most_levels(fine: &Block) -> usize {
    let mut most = 1;
    let mut b = *fine;
    while let Some(c) = b.coarsen_exact() {
        b = c;
        most += 1;
    }
    most
}
