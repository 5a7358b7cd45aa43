//! The horizontal geometry of the domain, behind one type: every fact of a geometry that the
//! rest of strata needs (its coordinates, its radial factors, its panels, its lateral
//! boundary, its name) is a method of [`Geometry`], defined here; the solvers, the backends'
//! kernels and the front ends ask these methods instead of matching on the geometry. The
//! discretisation of each geometry's horizontal operator is in `horizontal.rs`.

use serde::{Deserialize, Serialize};

/// Horizontal geometry of the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Geometry {
    /// One gnomonic panel of the cubed sphere, `(x, y) ∈ [−1, 1]²`, radius `r ∈ [1, 1 + H]`.
    #[default]
    Panel,
    /// The flat Cartesian box `[0, 1]² × [0, H]`.
    Box,
    /// The whole cubed sphere: six panels of `n × n` columns, no lateral boundary
    /// (docs/MODEL.md §16).
    Sphere,
}

impl Geometry {
    /// Whether the horizontal grid is gnomonic on the unit sphere (the panel and the sphere):
    /// cell areas and face lengths are spherical, the vertical coordinate a radius.
    pub fn spherical(self) -> bool {
        match self {
            Geometry::Panel | Geometry::Sphere => true,
            Geometry::Box => false,
        }
    }

    /// Whether the domain is closed, with no lateral boundary (the sphere): its fields are the
    /// six panels' (or a rank's tiles of them), joined across the panel edges.
    pub fn closed(self) -> bool {
        self == Geometry::Sphere
    }

    /// Panels of n × n columns: six on the sphere, else one.
    pub fn panels(self) -> usize {
        if self.closed() {
            crate::grid::sphere::PANELS
        } else {
            1
        }
    }

    /// The start of the computational coordinates: −1 on the gnomonic panels, 0 on the box.
    pub fn origin(self) -> f64 {
        if self.spherical() {
            -1.0
        } else {
            0.0
        }
    }

    /// Spacing of the computational coordinates with `n` cells per direction: 2/n on the
    /// gnomonic panels, 1/n on the box.
    pub fn spacing(self, n: usize) -> f64 {
        if self.spherical() {
            2.0 / n as f64
        } else {
            1.0 / n as f64
        }
    }

    /// The vertical coordinate of the ground: radius 1 on the sphere, height 0 on the box.
    pub fn ground(self) -> f64 {
        if self.spherical() {
            1.0
        } else {
            0.0
        }
    }

    /// The surface factor of a horizontal face at vertical coordinate `r`: r² on the sphere,
    /// 1 on the box.
    pub fn surface(self, r: f64) -> f64 {
        if self.spherical() {
            r * r
        } else {
            1.0
        }
    }

    /// The radial volume factor between vertical coordinates `lo` and `hi` (the cell volume is
    /// |T| times it): ∫ r² dr on the sphere, hi − lo on the box.
    pub fn volume(self, lo: f64, hi: f64) -> f64 {
        if self.spherical() {
            (hi * hi * hi - lo * lo * lo) / 3.0
        } else {
            hi - lo
        }
    }

    /// A short name with its size for reports ("sphere (6 panels)").
    pub fn label(self) -> &'static str {
        match self {
            Geometry::Panel => "panel",
            Geometry::Box => "box",
            Geometry::Sphere => "sphere (6 panels)",
        }
    }

    /// What reports and file attributes call it.
    pub fn describe(self) -> &'static str {
        match self {
            Geometry::Panel => "panel",
            Geometry::Box => "box",
            Geometry::Sphere => "sphere (six gnomonic panels, docs/MODEL.md section 16)",
        }
    }
}

impl crate::names::Choice for Geometry {
    const SETTING: &'static str = "geometry";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (Geometry::Panel, "panel", 0),
        (Geometry::Box, "box", 1),
        (Geometry::Sphere, "sphere", 2),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The methods agree with the geometries' definitions (MODEL.md §2, §4, §16).
    #[test]
    fn each_geometry_answers_for_itself() {
        for g in [Geometry::Panel, Geometry::Box, Geometry::Sphere] {
            let spherical = g != Geometry::Box;
            assert_eq!(g.spherical(), spherical);
            assert_eq!(g.closed(), g == Geometry::Sphere);
            assert_eq!(g.panels(), if g == Geometry::Sphere { 6 } else { 1 });
            assert_eq!(
                g.spacing(64),
                if spherical { 2.0 / 64.0 } else { 1.0 / 64.0 }
            );
            assert_eq!(g.origin() + 64.0 * g.spacing(64), 1.0);
            assert_eq!(g.ground(), if spherical { 1.0 } else { 0.0 });
            assert_eq!(g.surface(1.5), if spherical { 2.25 } else { 1.0 });
            let v = g.volume(1.0, 2.0);
            assert!((v - if spherical { 7.0 / 3.0 } else { 1.0 }).abs() < 1e-15);
        }
    }
}
