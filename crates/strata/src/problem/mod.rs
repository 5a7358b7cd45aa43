//! The model problem (docs/MODEL.md §1–§6): parameters, grids and right-hand sides.
//!
//! A [`ProblemParams`] fixes the geometry (gnomonic cubed-sphere panel or flat box), the grid
//! sizes and the physical parameters. [`ProblemParams::validate`] checks them; the stencil of each
//! multigrid level is then built by [`crate::stencil`].

mod block_coefficients;
mod coefficients;
mod geometry;
mod horizontal;
mod manufactured;
mod orography;
mod rhs;
mod terrain;
mod vertical;

pub use coefficients::{
    refused_beta, refused_value, Advection, Averaging, CellCoefficients, Coefficients,
    COEFFICIENT_BOUND,
};
pub use geometry::Geometry;
pub use horizontal::{
    cell_centre, face_length, panel_cell_area, Column, Diagonals, HorizontalGrid,
};
pub use manufactured::{
    manufactured_error, manufactured_rhs, manufactured_solution, sphere_rhs, sphere_solution,
};
pub use orography::{Orography, Schaer};
pub use rhs::{build_rhs, build_rhs_tiles, cell_volumes, RhsKind};
pub(crate) use terrain::fold_terrain;
pub use terrain::{terrain_coordinate, Slant, SLANT_NEIGHBOURS};
pub use vertical::VerticalGrid;

use crate::error::{invalid, Result};
use crate::grid::Boundaries;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Spacing of the vertical grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Grading {
    /// Faces at `s_k = k / nz`.
    #[default]
    Uniform,
    /// Faces at `s_k = (k / nz)²`, refined near the ground.
    Graded,
}

/// Parameters of the model problem. `Default` is the paper's setting at n = 128.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProblemParams {
    /// Horizontal geometry.
    pub geometry: Geometry,
    /// Horizontal cells per direction (nx = ny = n).
    pub n: usize,
    /// Vertical cells.
    pub nz: usize,
    /// Vertical Courant number ν_CFL; sets ω = ν h / 2 unless `omega` is given.
    pub cfl: f64,
    /// Vertical anisotropy factor λ.
    pub lambda: f64,
    /// Height of the atmosphere H (in Earth radii on the panel, absolute on the box).
    pub height: f64,
    /// Coefficient δ of the zero-order term (1 in the model problem; 0 gives Poisson).
    pub delta: f64,
    /// Vertical grid spacing.
    pub grading: Grading,
    /// Fixed ω, overriding ω = ν h / 2 (the manufactured-solution tests keep ω fixed under
    /// refinement).
    pub omega: Option<f64>,
    /// Per-cell coefficient fields of the general operator (kx, ky, kz, β), on the fine grid;
    /// `None` is the model problem, whose operator is stored per column and per level only.
    #[serde(skip)]
    pub coefficients: Option<Arc<Coefficients>>,
    /// The horizontal stencil on the sphere (not used elsewhere).
    #[serde(default)]
    pub sphere_stencil: SphereStencil,
    /// The lateral conditions of the box (Dirichlet, Neumann or periodic per direction) or the
    /// panel (Dirichlet or Neumann); Dirichlet on the sphere, which has no lateral boundary
    /// (docs/MODEL.md §20).
    #[serde(default)]
    pub boundaries: Boundaries,
    /// The ground height per column of the box, the panel or the sphere (terrain-following
    /// coordinates, docs/MODEL.md §23); `None` is flat ground.
    #[serde(skip)]
    pub orography: Option<Arc<Orography>>,
}

/// The horizontal discretisation of the whole sphere (docs/MODEL.md §16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SphereStencil {
    /// Conormal fluxes from the dual elements round every vertex, with the cross terms of the
    /// non-orthogonal grid (couplings to the diagonal neighbours): consistent with the
    /// Laplace–Beltrami operator, second order (§16.1).
    #[default]
    NinePoint,
    /// The paper's 5-point two-point fluxes on each panel and across its edges: not consistent
    /// on the sphere (its error stalls near 2e-3, §16.2).
    TwoPoint,
}

impl Default for ProblemParams {
    fn default() -> Self {
        Self {
            geometry: Geometry::Panel,
            n: 128,
            nz: 128,
            cfl: 8.4,
            lambda: 1.0,
            height: 0.01,
            delta: 1.0,
            grading: Grading::Uniform,
            omega: None,
            coefficients: None,
            sphere_stencil: SphereStencil::NinePoint,
            boundaries: Boundaries::DIRICHLET,
            orography: None,
        }
    }
}

impl ProblemParams {
    /// Horizontal grid spacing h used in ω = ν h / 2: 2/n on the panel, 1/n on the box.
    pub fn h(&self) -> f64 {
        self.geometry.spacing(self.n)
    }

    /// ω of the operator: the fixed value if given, else ν_CFL h / 2.
    pub fn omega(&self) -> f64 {
        self.omega.unwrap_or(0.5 * self.cfl * self.h())
    }

    /// Number of unknowns: n² nz, six times that on the sphere.
    pub fn unknowns(&self) -> u64 {
        self.panels() as u64 * (self.n as u64) * (self.n as u64) * (self.nz as u64)
    }

    /// Whether the operator is the sphere's 9-point one (with cross terms).
    pub fn nine_point_sphere(&self) -> bool {
        self.geometry.closed() && self.sphere_stencil == SphereStencil::NinePoint
    }

    /// The tiles of the whole problem held by one process, in the order of its fields: the six
    /// panels of the sphere, or the one block of a panel or box.
    pub fn whole_tiles(&self) -> Vec<crate::grid::Block> {
        if self.geometry.closed() {
            crate::grid::sphere::tiles(self.n, 1)
        } else {
            vec![self.whole_block()]
        }
    }

    /// The whole `n × n` fine level of a panel or box, with its lateral conditions.
    pub fn whole_block(&self) -> crate::grid::Block {
        crate::grid::Block::whole(self.n).with_bc(self.boundaries)
    }

    /// Panels of n × n columns: six on the sphere, else one.
    pub fn panels(&self) -> usize {
        self.geometry.panels()
    }

    /// Whether the operator is singular: δ = 0 on a domain with no Dirichlet side (the whole
    /// sphere, or a box or panel whose sides are all zero-flux or periodic): with zero-flux top
    /// and bottom the constants are its null space, A·1 = 0. Solved with the right-hand side
    /// checked or projected and the answer of zero volume-weighted mean
    /// ([`crate::solver::NullSpace`]).
    ///
    /// With coefficient fields β takes δ's place: singular where β is zero in every cell (a
    /// scan of β, stopping at its first non-zero value). With advection too (docs/MODEL.md
    /// §20): the flux form keeps 1ᵀA = 0, so the compatibility condition is the same; A's own
    /// null space is then another vector.
    pub fn singular(&self) -> bool {
        let closed = self.geometry.closed() || !self.boundaries.any_dirichlet();
        closed
            && match &self.coefficients {
                None => self.delta == 0.0,
                Some(c) => c.beta_is_zero(),
            }
    }

    /// Whether the operator has an advection term (coefficient fields with ξ): then it is not
    /// symmetric.
    pub fn has_advection(&self) -> bool {
        self.coefficients.as_ref().is_some_and(|c| c.xi.is_some())
    }

    /// Checks every parameter; the error names the first one that is wrong.
    pub fn validate(&self) -> Result<()> {
        if self.n < 1 {
            return invalid("n", "must be at least 1 (got 0)");
        }
        if self.nz < 2 {
            return invalid("nz", format!("must be at least 2 (got {})", self.nz));
        }
        positive("cfl", self.cfl)?;
        positive("lambda", self.lambda)?;
        positive("height", self.height)?;
        if !(self.delta.is_finite() && self.delta >= 0.0) {
            return invalid(
                "delta",
                format!("must be finite and non-negative (got {})", self.delta),
            );
        }
        if let Some(w) = self.omega {
            positive("omega", w)?;
        }
        self.validate_boundaries()?;
        if let Some(c) = &self.coefficients {
            if c.panels != self.panels() {
                return invalid(
                    "coefficients",
                    format!(
                        "are given on {} panels, the problem has {}",
                        c.panels,
                        self.panels()
                    ),
                );
            }
            if (c.n, c.nz) != (self.n, self.nz) {
                return invalid(
                    "coefficients",
                    format!(
                        "are given on {}x{}x{}, the problem is {}x{}x{}",
                        c.n, c.n, c.nz, self.n, self.n, self.nz
                    ),
                );
            }
            c.validate()?;
        }
        self.validate_orography()
    }

    /// Checks the orography: of the problem's columns (six panels of them on the sphere, with
    /// the nine-point operator), every height on [0, H).
    fn validate_orography(&self) -> Result<()> {
        let Some(o) = &self.orography else {
            return Ok(());
        };
        let panels = self.geometry.panels();
        if (o.n, o.panels) != (self.n, panels) {
            let shape = |p: usize, n: usize| {
                if p == 1 {
                    format!("{n}x{n}")
                } else {
                    format!("{p}x{n}x{n} (panel, y, x)")
                }
            };
            return invalid(
                "orography",
                format!(
                    "is given on {} columns, the problem has {}",
                    shape(o.panels, o.n),
                    shape(panels, self.n)
                ),
            );
        }
        if self.geometry.closed() && self.sphere_stencil != SphereStencil::NinePoint {
            return invalid(
                "orography",
                "on the sphere needs the nine-point operator (sphere_stencil = nine-point, the default)",
            );
        }
        if self
            .coefficients
            .as_ref()
            .is_some_and(|c| c.window.is_some())
        {
            return invalid(
                "orography",
                "with coefficient fields of one rank's block: give every rank the whole level's fields",
            );
        }
        o.validate(self.height)
    }

    /// The radial volume factor of cell (i, j, k) of the fine grid (its volume is |T| times
    /// it): the vertical grid's, or over orography the terrain-following cell's (docs/MODEL.md
    /// §23; on the box J Δζ_k); `panel` the sphere's panel (0 elsewhere).
    pub fn volume_factor(
        &self,
        vert: &VerticalGrid,
        panel: usize,
        i: usize,
        j: usize,
        k: usize,
    ) -> f64 {
        let g = self.geometry;
        match &self.orography {
            None => vert.volume_factor(g, k),
            Some(o) => {
                let h = o.at_panel(panel, i, j);
                let lift = |z| terrain_coordinate(g.ground(), self.height, h, z);
                g.volume(lift(vert.faces[k]), lift(vert.faces[k + 1]))
            }
        }
    }

    /// Checks the lateral conditions against the geometry: none but Dirichlet on the sphere
    /// (it has no lateral boundary), no periodic side on the panel (its opposite edges are
    /// different places of the sphere).
    fn validate_boundaries(&self) -> Result<()> {
        let b = self.boundaries;
        match self.geometry {
            Geometry::Sphere if !b.is_dirichlet() => invalid(
                "boundary",
                format!("{b} on the sphere, which has no lateral boundary: leave it out"),
            ),
            Geometry::Panel if b.any_periodic() => invalid(
                "boundary",
                format!(
                    "{b} on the panel: its opposite edges are different places of the sphere, \
                     so it takes dirichlet or neumann sides only (periodic is for the box)"
                ),
            ),
            _ => Ok(()),
        }
    }
}

fn positive(name: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        invalid(name, format!("must be finite and positive (got {v})"))
    }
}

impl crate::names::Choice for SphereStencil {
    const SETTING: &'static str = "sphere_stencil";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (SphereStencil::NinePoint, "nine-point", 0),
        (SphereStencil::TwoPoint, "two-point", 1),
    ];
}
