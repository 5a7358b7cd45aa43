//! Orography: the height of the ground `h(x, y)` per column, which makes the vertical
//! coordinate terrain-following (docs/MODEL.md §23): `z = ζ + h (1 − ζ/H)` (Gal-Chen &
//! Somerville 1975), so that `ζ = 0` is the ground and `ζ = H` the flat model top.

use crate::error::{invalid, Result};

/// The ground height of every column of one `n × n` level of the box or the panel, row-major
/// (`h[j * n + i]`), in the units of the height H (Earth radii on the panel): `0 ≤ h < H`.
#[derive(Debug, Clone, PartialEq)]
pub struct Orography {
    /// Columns per direction.
    pub n: usize,
    /// Heights, `n · n`, row-major.
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
    /// Heights given per column (`n · n` values, row-major); checked by
    /// [`Orography::validate`] against the problem's top when the problem is.
    pub fn new(n: usize, h: Vec<f64>) -> Result<Self> {
        if h.len() != n * n {
            return invalid(
                "orography",
                format!(
                    "has {} values, the problem's {n}x{n} columns need {}",
                    h.len(),
                    n * n
                ),
            );
        }
        Ok(Self { n, h })
    }

    /// The Schär-type mountain `m` along x sampled at the cell centres of an `n × n` box.
    pub fn schaer(n: usize, m: &Schaer) -> Self {
        let h0 = m.peak();
        let h = (0..n * n)
            .map(|c| h0 * m.shape(((c % n) as f64 + 0.5) / n as f64).0)
            .collect();
        Self { n, h }
    }

    /// Checks every height against the model top `top` (H): finite, not negative, below the
    /// top. The error names the column.
    pub fn validate(&self, top: f64) -> Result<()> {
        for (c, &h) in self.h.iter().enumerate() {
            let at = format!("column (i = {}, j = {})", c % self.n, c / self.n);
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

    /// The height of column (i, j).
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.h[j * self.n + i]
    }

    /// The next coarser level's orography: each coarse column the mean of its four children
    /// (docs/MODEL.md §23.4).
    pub fn coarsen(&self) -> Self {
        let n = self.n / 2;
        let h = (0..n * n)
            .map(|c| {
                let (i, j) = (c % n, c / n);
                0.25 * (self.at(2 * i, 2 * j)
                    + self.at(2 * i + 1, 2 * j)
                    + self.at(2 * i, 2 * j + 1)
                    + self.at(2 * i + 1, 2 * j + 1))
            })
            .collect();
        Self { n, h }
    }

    /// The steepest slope between neighbouring columns, `max |Δh| / Δx` over the interior faces
    /// of a box of side 1 (and across a periodic edge where `wrap`).
    pub fn max_slope(&self, wrap: [bool; 2]) -> f64 {
        let n = self.n;
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
