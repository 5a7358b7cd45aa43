//! Lateral boundary conditions of the box and the panel, per direction (docs/MODEL.md §20):
//! what lies beyond each edge of the domain, which the blocks of every level carry
//! ([`crate::grid::Block::bc`]) so that the operator, the prolongation and the halo exchange of
//! every layer ask the block, not the problem.

use crate::error::{invalid, Result};
use serde::{Deserialize, Serialize};

/// The condition on the two sides of the domain normal to one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Boundary {
    /// u = 0 on the wall (the paper's condition): the ghost cell is −u.
    #[default]
    Dirichlet,
    /// Zero normal flux: no coupling through the wall (and no advective flux).
    Neumann,
    /// The two sides are joined: the cell beyond one is the first cell of the other.
    Periodic,
}

impl crate::names::Choice for Boundary {
    const SETTING: &'static str = "boundary";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (Boundary::Dirichlet, "dirichlet", 0),
        (Boundary::Neumann, "neumann", 1),
        (Boundary::Periodic, "periodic", 2),
    ];
}

/// The lateral conditions in x (the west and east sides) and in y (south and north). The
/// vertical sides (ground and lid) are always zero-flux (docs/MODEL.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Boundaries {
    /// West and east sides.
    #[serde(default)]
    pub x: Boundary,
    /// South and north sides.
    #[serde(default)]
    pub y: Boundary,
}

/// What lies beyond one side of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// Cells of the level (another block, or the same block's far side on a periodic domain):
    /// the halo holds their values.
    Cells,
    /// A Dirichlet wall: the ghost is −u.
    Dirichlet,
    /// A zero-flux wall: the ghost is u.
    Neumann,
}

impl Boundaries {
    /// Dirichlet on every side (the paper's box and panel).
    pub const DIRICHLET: Boundaries = Boundaries {
        x: Boundary::Dirichlet,
        y: Boundary::Dirichlet,
    };

    /// The same condition in both directions.
    pub fn all(b: Boundary) -> Self {
        Self { x: b, y: b }
    }

    /// Whether any side is Dirichlet (else, with δ = 0, the constants are in the null space).
    pub fn any_dirichlet(self) -> bool {
        self.x == Boundary::Dirichlet || self.y == Boundary::Dirichlet
    }

    /// Whether any direction is periodic.
    pub fn any_periodic(self) -> bool {
        self.x == Boundary::Periodic || self.y == Boundary::Periodic
    }

    /// Whether this is the paper's condition (Dirichlet everywhere).
    pub fn is_dirichlet(self) -> bool {
        self == Self::DIRICHLET
    }

    /// Parses `x=periodic,y=neumann`, `x=periodic` (y stays Dirichlet) or one name for both
    /// directions (`neumann`).
    pub fn parse(s: &str) -> Result<Self> {
        use crate::names::Choice;
        let s = s.trim();
        if !s.contains('=') {
            return Boundary::parse(s).map(Self::all);
        }
        let mut out = Self::default();
        let mut seen = [false; 2];
        for part in s.split(',') {
            let Some((dir, name)) = part.split_once('=') else {
                return invalid(
                    "boundary",
                    format!("{part:?} is not DIRECTION=CONDITION (as in x=periodic,y=neumann)"),
                );
            };
            let b = Boundary::parse(name.trim())?;
            let (slot, d) = match dir.trim() {
                "x" => (&mut out.x, 0),
                "y" => (&mut out.y, 1),
                other => {
                    return invalid(
                        "boundary",
                        format!("the direction must be x or y (got {other:?} in {s:?})"),
                    )
                }
            };
            if seen[d] {
                return invalid(
                    "boundary",
                    format!("{} is given twice in {s:?}", dir.trim()),
                );
            }
            seen[d] = true;
            *slot = b;
        }
        Ok(out)
    }

    /// `x=…,y=…`, as [`Boundaries::parse`] reads it and the files' attributes say it.
    pub fn describe(self) -> String {
        use crate::names::Choice;
        format!("x={},y={}", self.x.name(), self.y.name())
    }
}

impl std::fmt::Display for Boundaries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_directions_and_refuses_nonsense() {
        let b = Boundaries::parse("x=periodic,y=neumann").unwrap();
        assert_eq!((b.x, b.y), (Boundary::Periodic, Boundary::Neumann));
        let b = Boundaries::parse(" y = periodic ").unwrap();
        assert_eq!((b.x, b.y), (Boundary::Dirichlet, Boundary::Periodic));
        assert_eq!(
            Boundaries::parse("neumann").unwrap(),
            Boundaries::all(Boundary::Neumann)
        );
        assert_eq!(
            Boundaries::parse(&b.describe()).unwrap(),
            b,
            "describe is parsed back"
        );
        for bad in [
            "x=wall",
            "z=periodic",
            "x=periodic,x=neumann",
            "x",
            "sticky",
        ] {
            let e = Boundaries::parse(bad).unwrap_err().to_string();
            assert!(e.contains("boundary"), "{bad}: {e}");
        }
    }

    #[test]
    fn dirichlet_and_periodic_sides_are_counted() {
        assert!(Boundaries::default().is_dirichlet());
        assert!(Boundaries::parse("x=neumann").unwrap().any_dirichlet());
        assert!(!Boundaries::parse("x=neumann,y=periodic")
            .unwrap()
            .any_dirichlet());
        assert!(Boundaries::parse("y=periodic").unwrap().any_periodic());
        assert!(!Boundaries::all(Boundary::Neumann).any_periodic());
    }
}
