//! Orography: the height of the ground `h(x, y)` per column, which makes the vertical
//! coordinate terrain-following (docs/MODEL.md §23): `z = ζ + h (1 − ζ/H)` (Gal-Chen &
//! Somerville 1975), so that `ζ = 0` is the ground and `ζ = H` the flat model top.

use crate::error::{invalid, Result};

/// The ground height of every column of one `n × n` level of the box or the panel, row-major
/// (`h[j * n + i]`), or of the six panels of the sphere one after the other
/// (`h[(panel * n + j) * n + i]`), in the units of the height H (Earth radii on the panel and
/// the sphere): `0 ≤ h < H`.
#[derive(Debug, Clone, PartialEq)]
pub struct Orography {
    /// Panels of `n × n` columns: 1, or 6 on the sphere.
    pub panels: usize,
    /// Columns per direction.
    pub n: usize,
    /// Heights, `panels · n · n`, row-major panel by panel.
    pub h: Vec<f64>,
}

/// A Schär-type mountain (Schär et al. 2002) along x, `h0 exp(−((x − ½)/a)²) cos²(π (x − ½)/l)`,
/// its parameters: `h0` scaled so that the steepest slope `|∂h/∂x|` is `slope`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schaer {
    /// The steepest slope |∂h/∂x| (0 is flat).
    pub slope: f64,
    /// Half-width a of the Gaussian envelope (units of the box's side, 1).
    pub a: f64,
    /// Wavelength l of the ripples.
    pub l: f64,
}

impl Default for Schaer {
    /// Schär's mountain scaled to the unit box: a = 0.25, l = 0.2 (the paper's 5 km and 4 km on
    /// a 20 km domain).
    fn default() -> Self {
        Self {
            slope: 0.5,
            a: 0.25,
            l: 0.2,
        }
    }
}

impl Schaer {
    /// The unscaled shape `exp(−(ξ/a)²) cos²(π ξ/l)` at `x` (ξ = x − ½) and its derivative.
    pub fn shape(&self, x: f64) -> (f64, f64) {
        let xi = x - 0.5;
        let g = (-(xi / self.a).powi(2)).exp();
        let (s, c) = (std::f64::consts::PI * xi / self.l).sin_cos();
        let dg = -2.0 * xi / (self.a * self.a) * g;
        let v = g * c * c;
        let dv = dg * c * c - g * 2.0 * c * s * std::f64::consts::PI / self.l;
        (v, dv)
    }

    /// The peak height h0 that gives the steepest slope `self.slope` (the shape's largest
    /// |derivative| found on a fine sampling of [0, 1]).
    pub fn peak(&self) -> f64 {
        let m = (0..=100_000)
            .map(|s| self.shape(s as f64 / 100_000.0).1.abs())
            .fold(0.0, f64::max);
        if m == 0.0 {
            0.0
        } else {
            self.slope / m
        }
    }

    /// The height and slope `(h, ∂h/∂x)` at `x`.
    pub fn at(&self, x: f64) -> (f64, f64) {
        let h0 = self.peak();
        let (v, dv) = self.shape(x);
        (h0 * v, h0 * dv)
    }
}

impl Orography {
    /// Heights given per column of a box or a panel (`n · n` values, row-major); checked by
    /// [`Orography::validate`] against the problem's top when the problem is.
    pub fn new(n: usize, h: Vec<f64>) -> Result<Self> {
        Self::with_panels(1, n, h)
    }

    /// Heights of `panels` panels of `n × n` columns (6 on the sphere: `h[(panel * n + j) * n +
    /// i]`, each panel's x and y its own, docs/MODEL.md §16).
    pub fn with_panels(panels: usize, n: usize, h: Vec<f64>) -> Result<Self> {
        if panels != 1 && panels != 6 {
            return invalid(
                "orography",
                format!("has {panels} panels: 1, or 6 on the sphere"),
            );
        }
        if h.len() != panels * n * n {
            let shape = if panels == 1 {
                format!("{n}x{n}")
            } else {
                format!("{panels}x{n}x{n}")
            };
            return invalid(
                "orography",
                format!(
                    "has {} values, the problem's {shape} columns need {}",
                    h.len(),
                    panels * n * n
                ),
            );
        }
        Ok(Self { panels, n, h })
    }

    /// The Schär-type mountain `m` along x sampled at the cell centres of an `n × n` box.
    pub fn schaer(n: usize, m: &Schaer) -> Self {
        let h0 = m.peak();
        let h = (0..n * n)
            .map(|c| h0 * m.shape(((c % n) as f64 + 0.5) / n as f64).0)
            .collect();
        Self { panels: 1, n, h }
    }

    /// Schär's mountain `m` on the sphere (`n × n` columns per panel), round the point
    /// `centre` of the unit sphere: the shape of [`Schaer::shape`] as a function of the
    /// great-circle distance d from it (`h0 exp(−(d/a)²) cos²(π d/l)`, d, a and l in Earth
    /// radii, so radians), `h0` set by the steepest slope |∂h/∂d|, sampled at the cell centres
    /// of the six panels.
    pub fn schaer_sphere(n: usize, m: &Schaer, centre: [f64; 3]) -> Self {
        use crate::grid::sphere;
        let h0 = m.peak();
        let h = (0..6 * n * n)
            .map(|c| {
                let (p, i, j) = (c / (n * n), c % n, c % (n * n) / n);
                let d = sphere::arc(sphere::cell_centre(p, i, j, n), centre);
                h0 * m.shape(0.5 + d).0
            })
            .collect();
        Self { panels: 6, n, h }
    }

    /// Schär's mountain `m` on `geometry`'s columns: along x on the box and the panel
    /// ([`Orography::schaer`]), round [`Orography::sphere_mountain_centre`] on the sphere
    /// ([`Orography::schaer_sphere`]).
    pub fn schaer_for(geometry: super::Geometry, n: usize, m: &Schaer) -> Self {
        if geometry.closed() {
            Self::schaer_sphere(n, m, Self::sphere_mountain_centre())
        } else {
            Self::schaer(n, m)
        }
    }

    /// Where [`Orography::schaer_sphere`] puts the mountain of `--orography schaer` on the
    /// sphere: on panel 0 at gnomonic (0.6, 0.45), so that a mountain of the default width
    /// reaches over its east and north edges towards the cube's corner between panels 0, 1
    /// and 4.
    pub fn sphere_mountain_centre() -> [f64; 3] {
        crate::grid::sphere::point(0, 0.6, 0.45)
    }

    /// Checks every height against the model top `top` (H): finite, not negative, below the
    /// top. The error names the column.
    pub fn validate(&self, top: f64) -> Result<()> {
        let nn = self.n * self.n;
        for (c, &h) in self.h.iter().enumerate() {
            let (i, j) = (c % self.n, c % nn / self.n);
            let at = if self.panels > 1 {
                format!("column (panel = {}, i = {i}, j = {j})", c / nn)
            } else {
                format!("column (i = {i}, j = {j})")
            };
            if !h.is_finite() {
                return invalid("orography", format!("must be finite, but is {h} at {at}"));
            }
            if h < 0.0 {
                return invalid(
                    "orography",
                    format!(
                        "must not be negative (the ground is at 0 or above), but is {h} at {at}"
                    ),
                );
            }
            if h >= top {
                return invalid(
                    "orography",
                    format!(
                        "is {h} at {at}, at or above the model top H = {top}: the \
                         terrain-following layers would have no thickness there"
                    ),
                );
            }
        }
        Ok(())
    }

    /// The height of column (i, j) (of the first panel: the box's or the panel's).
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.h[j * self.n + i]
    }

    /// The height of column (i, j) of panel `panel`.
    pub fn at_panel(&self, panel: usize, i: usize, j: usize) -> f64 {
        self.h[(panel * self.n + j) * self.n + i]
    }

    /// The next coarser level's orography: each coarse column the mean of its four children
    /// (docs/MODEL.md §23.4), panel by panel.
    pub fn coarsen(&self) -> Self {
        let n = self.n / 2;
        let h = (0..self.panels * n * n)
            .map(|c| {
                let (p, i, j) = (c / (n * n), c % n, c % (n * n) / n);
                let at = |a, b| self.at_panel(p, a, b);
                0.25 * (at(2 * i, 2 * j)
                    + at(2 * i + 1, 2 * j)
                    + at(2 * i, 2 * j + 1)
                    + at(2 * i + 1, 2 * j + 1))
            })
            .collect();
        Self {
            panels: self.panels,
            n,
            h,
        }
    }

    /// The steepest slope between neighbouring columns, `max |Δh| / Δx` over the interior faces
    /// of a box of side 1 (and across a periodic edge where `wrap`); on the sphere `|Δh|` over
    /// the great-circle distance of the two centres, across the panels' edges too.
    pub fn max_slope(&self, wrap: [bool; 2]) -> f64 {
        let n = self.n;
        if self.panels == 6 {
            use crate::grid::{sphere, Side};
            let mut m: f64 = 0.0;
            for p in 0..6 {
                for j in 0..n {
                    for i in 0..n {
                        let c = sphere::cell_centre(p, i, j, n);
                        // Every side (an edge of the cube is no panel's east or north
                        // edge where two south edges meet).
                        let nbrs = [
                            (Side::East, i + 1 < n, (i + 1, j), j),
                            (Side::North, j + 1 < n, (i, j + 1), i),
                            (Side::West, i > 0, (i.wrapping_sub(1), j), j),
                            (Side::South, j > 0, (i, j.wrapping_sub(1)), i),
                        ]
                        .map(|(side, inside, at, along)| {
                            if inside {
                                (p, at)
                            } else {
                                let (l, at) = sphere::cell_across(p, side, along, n);
                                (l.panel, at)
                            }
                        });
                        for (q, (a, b)) in nbrs {
                            let d = sphere::arc(c, sphere::cell_centre(q, a, b, n));
                            let dh = (self.at_panel(q, a, b) - self.at_panel(p, i, j)).abs();
                            m = m.max(dh / d);
                        }
                    }
                }
            }
            return m;
        }
        let mut m: f64 = 0.0;
        for j in 0..n {
            for i in 0..n {
                let h = self.at(i, j);
                if i + 1 < n || wrap[0] {
                    m = m.max((self.at((i + 1) % n, j) - h).abs());
                }
                if j + 1 < n || wrap[1] {
                    m = m.max((self.at(i, (j + 1) % n) - h).abs());
                }
            }
        }
        m * n as f64
    }
}
