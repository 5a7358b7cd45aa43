//! Coefficient fields of the general operator −ω² ∇·(α ∇u) + β u = f (docs/MODEL.md §15): the
//! diagonal of α (`kx`, `ky`, `kz`) and β, per cell of the fine grid.

use crate::error::{invalid, Result};
use crate::grid::{sphere, Block, Side};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// How a coarse multigrid level's coefficients are made from the four children's
/// (docs/MODEL.md §15.3; the operator is then rediscretised with them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Averaging {
    /// The arithmetic mean.
    Arithmetic,
    /// The harmonic mean, as the face factors use across one face (the default: as good or
    /// better in every case of docs/COEFFICIENTS.md, 20 instead of 24 mg-cg iterations on a
    /// horizontal checkerboard of contrast 100).
    #[default]
    Harmonic,
}

/// Per-cell coefficient fields of a whole `n × n × nz` level, z-contiguous like the right-hand
/// side (`v[(j * n + i) * nz + k]`); on the sphere six such panels one after the other
/// (`v[((panel * n + j) * n + i) * nz + k]`, `panels = 6`). `kx = ky = kz = 1`, `β = δ` is the
/// model problem. On the sphere `kx` and `ky` are along each panel's own x and y.
#[derive(Debug, Clone, PartialEq)]
pub struct Coefficients {
    /// Panels of `n × n` columns: 1, or 6 on the sphere.
    pub panels: usize,
    /// Horizontal cells per direction.
    pub n: usize,
    /// Vertical cells.
    pub nz: usize,
    /// α_xx at the cell centres (multiplies the x-face coefficients α^E, α^W).
    pub kx: Vec<f64>,
    /// α_yy at the cell centres (multiplies α^N, α^S).
    pub ky: Vec<f64>,
    /// α_rr at the cell centres (multiplies the vertical couplings b, c).
    pub kz: Vec<f64>,
    /// β, the zero-order coefficient, in place of δ: the row gets β V_k |T|.
    pub beta: Vec<f64>,
    /// The advection vector ξ = (ξ_x, ξ_y, ξ_z) of −ω² ∇·(ξ u) (docs/MODEL.md §15.5), which
    /// makes the operator non-symmetric; `None` for none. Any sign; finite.
    pub xi: Option<[Vec<f64>; 3]>,
    /// `None`: the fields hold the whole level. `Some(block)`: they hold one rank's block of a
    /// panel or box and a ring of one cell around it where another rank's block lies across
    /// (docs/MODEL.md §15.7; [`Coefficients::for_block`]), so that no rank stores the whole
    /// level: arrays of [`Coefficients::stored`]'s rectangle, `v[(j * wx + i) * nz + k]` in
    /// its local indices.
    pub window: Option<Block>,
}

/// The largest magnitude of a coefficient value (and the inverse: the smallest of kx, ky, kz, β):
/// the operator's entries are products of a coefficient, ω² and the cells' geometry, and the
/// solvers' norms sums of their squares, which a value near `f64::MAX` would overflow (a solve
/// that ends in "did not converge (DivergedNanOrInf)" instead of an error naming the value).
pub const COEFFICIENT_BOUND: f64 = 1e100;

/// Why a coefficient value `x` at cell `at` is refused (it is not finite, not positive where
/// `positive`, or beyond [`COEFFICIENT_BOUND`]): the message after the field's name.
pub fn refused_value(x: f64, positive: bool, at: &str) -> String {
    if x.is_finite() && (x > 0.0 || !positive) {
        let range = if positive {
            format!("[{:e}, {COEFFICIENT_BOUND:e}]", 1.0 / COEFFICIENT_BOUND)
        } else {
            format!("±{COEFFICIENT_BOUND:e}")
        };
        return format!(
            "is {x:e} at {at}, outside {range}, where the operator's entries and the solvers' norms would overflow: rescale the problem"
        );
    }
    let what = if positive {
        "finite and positive"
    } else {
        "finite"
    };
    format!("must be {what}, but is {x} at {at}")
}

/// Why a value `x` of β at cell `at` is refused (β may be zero, never negative): not finite,
/// negative, or outside the bounds of [`refused_value`].
pub fn refused_beta(x: f64, at: &str) -> String {
    if x.is_finite() && x > 0.0 {
        return refused_value(x, true, at);
    }
    format!("must be finite and non-negative, but is {x} at {at}")
}

impl Coefficients {
    /// Constant fields: `kx = ky = kz = 1` and `β = beta` (the model problem with δ = beta).
    pub fn constant(n: usize, nz: usize, beta: f64) -> Self {
        Self::constant_panels(1, n, nz, beta)
    }

    /// [`Coefficients::constant`] on `panels` panels (6: the sphere). Filled by the host's
    /// threads (6 × 512² × 128 cells are 6.4 GB of fields, which one thread fills in seconds).
    pub fn constant_panels(panels: usize, n: usize, nz: usize, beta: f64) -> Self {
        Self::shape(panels, n, nz, None).filled(panels * n * n * nz, beta)
    }

    /// Constant fields ([`Coefficients::constant_panels`]) for the level of `block`, as its
    /// stencil reads them: a block of a panel or box without periodic sides holds its own
    /// cells and its ring ([`Coefficients::window`]), so that a rank of a distributed solve
    /// does not make the whole level's fields; the sphere's tiles, a whole level and a block
    /// with a periodic side hold the whole level.
    pub fn constant_for(block: &Block, panels: usize, nz: usize, beta: f64) -> Self {
        let whole = block.nx == block.n && block.ny == block.n;
        if block.panel.is_some() || whole || block.bc.any_periodic() {
            return Self::constant_panels(panels, block.n, nz, beta);
        }
        let (_, _, wx, wy) = block.with_ring();
        Self::shape(1, block.n, nz, Some(*block)).filled(wx * wy * nz, beta)
    }

    /// This shape with `len` values of κ = 1 and β = `beta` in each field, filled by the
    /// host's threads.
    fn filled(self, len: usize, beta: f64) -> Self {
        let value = |x: f64| {
            let mut v = Vec::with_capacity(len);
            v.par_extend(rayon::iter::repeat_n(x, len));
            v
        };
        Self {
            kx: value(1.0),
            ky: value(1.0),
            kz: value(1.0),
            beta: value(beta),
            ..self
        }
    }

    /// The names of the seven fields in the order of [`Coefficients::from_given`] (and of the C
    /// API's set_coefficients calls).
    pub const FIELD_NAMES: [&'static str; 7] = ["kx", "ky", "kz", "beta", "xi_x", "xi_y", "xi_z"];

    /// The fields a caller gives (κx, κy, κz, β, then the three components of ξ; each
    /// `panels·n·n·nz` values, copied), the model problem's for those not given (κ = 1, β =
    /// `beta`, a ξ component 0; no ξ at all if none is given). Filled and copied by the host's
    /// threads: at 2048² × 128 each field is 4.3 GB, which one thread copies in about a second.
    /// An error names a field of the wrong length.
    pub fn from_given(
        panels: usize,
        n: usize,
        nz: usize,
        beta: f64,
        given: [Option<&[f64]>; 7],
    ) -> crate::error::Result<Self> {
        let len = panels * n * n * nz;
        Self::shape(panels, n, nz, None)
            .with_given(beta, given, len, "the problem", |g, c| par_field(len, g, c))
    }

    /// Coefficients of this shape without values yet (empty fields, nothing allocated).
    pub(super) fn shape(panels: usize, n: usize, nz: usize, window: Option<Block>) -> Self {
        Self {
            panels,
            n,
            nz,
            kx: Vec::new(),
            ky: Vec::new(),
            kz: Vec::new(),
            beta: Vec::new(),
            xi: None,
            window,
        }
    }

    /// This shape's fields made by `field(array, default)` from the seven `given` arrays (the
    /// model problem's default for those not given: κ = 1, β = `beta`, ξ 0; no ξ if none is
    /// given), each first checked to have `len` values (`needs` names what needs them, for the
    /// error).
    pub(super) fn with_given(
        self,
        beta: f64,
        given: [Option<&[f64]>; 7],
        len: usize,
        needs: &str,
        field: impl Fn(Option<&[f64]>, f64) -> Vec<f64>,
    ) -> crate::error::Result<Self> {
        for (g, name) in given.iter().zip(Self::FIELD_NAMES) {
            if let Some(v) = g.filter(|v| v.len() != len) {
                return crate::error::invalid(
                    name,
                    format!("has {} values, {needs} needs {len}", v.len()),
                );
            }
        }
        let [kx, ky, kz, b, xx, xy, xz] = given;
        let xi = (xx.is_some() || xy.is_some() || xz.is_some())
            .then(|| [field(xx, 0.0), field(xy, 0.0), field(xz, 0.0)]);
        Ok(Self {
            kx: field(kx, 1.0),
            ky: field(ky, 1.0),
            kz: field(kz, 1.0),
            beta: field(b, beta),
            xi,
            ..self
        })
    }

    /// Smooth synthetic fields for benchmarks and robustness studies: `kx`, `ky`, `kz` and `β`
    /// vary in all three directions between `1/√contrast` and `√contrast` (each field with its
    /// own phase), as `contrast^(s/2)` with `s = (sin(6x + φ) cos(4y) + sin(5z + φ)) / 2` at the
    /// cell centres of the unit cube. No advection. Built in parallel (one column's levels from
    /// a horizontal and a vertical factor).
    pub fn smooth(n: usize, nz: usize, contrast: f64) -> Self {
        Self::smooth_with(1, n, nz, contrast, |col, phase| {
            let (i, j) = (col % n, col / n);
            let (x, y) = ((i as f64 + 0.5) / n as f64, (j as f64 + 0.5) / n as f64);
            0.25 * (6.0 * x + phase).sin() * (4.0 * y).cos()
        })
    }

    /// [`Coefficients::smooth`] on the six panels of the sphere: the same construction with the
    /// horizontal factor a smooth function of the cell centre's position on the unit sphere,
    /// `contrast^(sin(3X + φ) cos(2Y) / 4 + Z / 4)`, so that the fields are continuous across
    /// panel edges.
    pub fn smooth_sphere(n: usize, nz: usize, contrast: f64) -> Self {
        Self::smooth_with(sphere::PANELS, n, nz, contrast, |col, phase| {
            let (i, j, panel) = (col % n, (col / n) % n, col / (n * n));
            let q = sphere::cell_centre(panel, i, j, n);
            0.25 * (3.0 * q[0] + phase).sin() * (2.0 * q[1]).cos() + 0.25 * q[2]
        })
    }

    /// The smooth fields of `geometry` ([`Coefficients::smooth`], or on the sphere
    /// [`Coefficients::smooth_sphere`]).
    pub fn smooth_for(geometry: super::Geometry, n: usize, nz: usize, contrast: f64) -> Self {
        if geometry.closed() {
            Self::smooth_sphere(n, nz, contrast)
        } else {
            Self::smooth(n, nz, contrast)
        }
    }

    /// The smooth fields of `panels` panels: each field (its own phase φ) is
    /// `contrast^(h(column, φ)) · contrast^(sin(5z + φ)/4)`, built in parallel column by column.
    fn smooth_with(
        panels: usize,
        n: usize,
        nz: usize,
        contrast: f64,
        h: impl Fn(usize, f64) -> f64 + Sync,
    ) -> Self {
        let field = |phase: f64| -> Vec<f64> {
            let vertical: Vec<f64> = (0..nz)
                .map(|k| {
                    let z = (k as f64 + 0.5) / nz as f64;
                    contrast.powf(0.25 * (5.0 * z + phase).sin())
                })
                .collect();
            let mut v = vec![0.0; panels * n * n * nz];
            v.par_chunks_mut(nz).enumerate().for_each(|(col, out)| {
                let horizontal = contrast.powf(h(col, phase));
                for (o, z) in out.iter_mut().zip(&vertical) {
                    *o = horizontal * z;
                }
            });
            v
        };
        Self {
            panels,
            n,
            nz,
            kx: field(0.0),
            ky: field(1.0),
            kz: field(2.0),
            beta: field(3.0),
            xi: None,
            window: None,
        }
    }

    /// These fields with a smooth synthetic advection vector for benchmarks (the field of
    /// `scripts/gpu-check operator`, scaled): `ξ_d = amplitude · sin(3x + φ_d) cos(2y + z)` at
    /// the cell centres of the unit cube, `φ = 0, 1, 2` for `d = x, y, z`. One panel or box of
    /// whole levels only: on the sphere a field given along each panel's own axes would be
    /// discontinuous across the panels' edges, so it is refused there, as is a non-finite
    /// amplitude.
    ///
    /// ```
    /// use strata::problem::Coefficients;
    /// let c = Coefficients::smooth(8, 4, 10.0).with_smooth_advection(1.0).unwrap();
    /// assert!(!c.is_symmetric());
    /// assert!(Coefficients::smooth_sphere(8, 4, 10.0).with_smooth_advection(1.0).is_err());
    /// ```
    pub fn with_smooth_advection(mut self, amplitude: f64) -> Result<Self> {
        if !amplitude.is_finite() {
            return invalid(
                "advection",
                format!("the amplitude must be finite (got {amplitude})"),
            );
        }
        if self.panels != 1 || self.window.is_some() {
            return invalid(
                "advection",
                "the synthetic advection field is defined on one panel or box of whole levels, \
                 not on the sphere or a rank's block",
            );
        }
        let (n, nz) = (self.n, self.nz);
        let field = |phase: f64| -> Vec<f64> {
            let mut v = vec![0.0; n * n * nz];
            v.par_chunks_mut(nz).enumerate().for_each(|(col, out)| {
                let (i, j) = (col % n, col / n);
                let (x, y) = ((i as f64 + 0.5) / n as f64, (j as f64 + 0.5) / n as f64);
                let a = amplitude * (3.0 * x + phase).sin();
                for (k, o) in out.iter_mut().enumerate() {
                    let z = (k as f64 + 0.5) / nz as f64;
                    *o = a * (2.0 * y + z).cos();
                }
            });
            v
        };
        self.xi = Some([field(0.0), field(1.0), field(2.0)]);
        Ok(self)
    }

    /// Whether the operator is non-symmetric (an advection vector is given).
    pub fn is_symmetric(&self) -> bool {
        self.xi.is_none()
    }

    /// Checks shapes and values: every field `n · n · nz` long, finite, `kx, ky, kz, β > 0`, every
    /// magnitude within [`COEFFICIENT_BOUND`] (and its inverse for the positive fields); the
    /// error names the field and the first bad cell as (y, x, z).
    pub fn validate(&self) -> Result<()> {
        if let Some(b) = &self.window {
            let inside = b.nx > 0 && b.ny > 0 && b.i0 + b.nx <= b.n && b.j0 + b.ny <= b.n;
            if self.panels != 1 || b.panel.is_some() || b.n != self.n || !inside {
                return invalid(
                    "coefficients",
                    format!(
                        "of the block {b:?} do not fit their {}x{} level (a block of one panel or box)",
                        self.n, self.n
                    ),
                );
            }
        }
        if self.panels != 1 && self.panels != 6 {
            return invalid(
                "coefficients",
                format!("have {} panels: 1, or 6 on the sphere", self.panels),
            );
        }
        let len = self.len();
        // β may be zero (a Poisson problem; singular where it is zero everywhere and no side is
        // Dirichlet), never negative; κx, κy, κz are positive.
        let fields = self.fields();
        let positive = fields
            .into_iter()
            .filter(|(n, _)| *n != "beta")
            .map(|(n, v)| (n, v, true));
        let beta = self.beta.as_slice();
        let signed = self.xi_fields().into_iter().map(|(n, v)| (n, v, false));
        for (name, v, must_be_positive) in positive.chain(signed) {
            if v.len() != len {
                let (_, _, wx, wy) = self.stored();
                return invalid(
                    name,
                    format!(
                        "has {} values, the {} {}{wx}x{wy}x{} needs {len}",
                        v.len(),
                        if self.window.is_some() {
                            "block"
                        } else {
                            "grid"
                        },
                        if self.panels > 1 {
                            format!("{}x", self.panels)
                        } else {
                            String::new()
                        },
                        self.nz
                    ),
                );
            }
            let bad = |x: &f64| {
                !x.is_finite()
                    || (must_be_positive && *x <= 0.0)
                    || x.abs() > COEFFICIENT_BOUND
                    || (must_be_positive && *x < 1.0 / COEFFICIENT_BOUND)
            };
            if let Some((p, (pnl, i, j, k))) = self.first_bad(v, bad) {
                return invalid(
                    name,
                    refused_value(v[p], must_be_positive, &self.at(pnl, i, j, k)),
                );
            }
        }
        if beta.len() != len {
            return invalid(
                "beta",
                format!("has {} values, the fields need {len}", beta.len()),
            );
        }
        let bad = |x: &f64| {
            !(x.is_finite() && *x >= 0.0)
                || *x > COEFFICIENT_BOUND
                || (*x > 0.0 && *x < 1.0 / COEFFICIENT_BOUND)
        };
        if let Some((p, (pnl, i, j, k))) = self.first_bad(beta, bad) {
            return invalid("beta", refused_beta(beta[p], &self.at(pnl, i, j, k)));
        }
        Ok(())
    }

    /// A cell as the errors name it: `(panel=…, y=…, x=…, z=…)`.
    fn at(&self, pnl: usize, i: usize, j: usize, k: usize) -> String {
        let panel = if self.panels > 1 {
            format!("panel={pnl}, ")
        } else {
            String::new()
        };
        format!("({panel}y={j}, x={i}, z={k})")
    }

    /// The largest horizontal anisotropy of the cells this process holds: the largest ratio
    /// `max(kx / ky, ky / kx)` over them (1 where kx = ky everywhere). Red-black smoothing by
    /// columns with full coarsening converges more slowly where the two horizontal directions
    /// couple unequally (docs/results/performance-log.md, 2026-11-29). A ring not yet filled
    /// (NaN, [`Coefficients::for_block`]) does not count. In parallel.
    ///
    /// ```
    /// use strata::problem::Coefficients;
    /// assert_eq!(Coefficients::constant(8, 4, 1.0).horizontal_anisotropy(), 1.0);
    /// let a = Coefficients::smooth(64, 16, 10.0).horizontal_anisotropy();
    /// assert!(a > 2.5 && a < 10.0, "{a}");
    /// ```
    pub fn horizontal_anisotropy(&self) -> f64 {
        self.kx
            .par_iter()
            .zip(self.ky.par_iter())
            .map(|(x, y)| (x / y).max(y / x))
            .reduce(|| 1.0, f64::max)
    }

    /// Whether β is zero in every cell this process holds (the block's own cells of a rank's
    /// fields; whole-level fields: all): with no Dirichlet side, the singular operator
    /// ([`crate::problem::ProblemParams::singular`]). In parallel, stopping at the first
    /// non-zero value.
    pub fn beta_is_zero(&self) -> bool {
        self.first_bad(&self.beta, |b| *b != 0.0).is_none()
    }

    /// The first value of `v` (one of the fields) that is `bad`, with its cell `(panel, i, j,
    /// k)`: in the whole level, or in a block's own cells (its ring is its neighbours' to check).
    /// In parallel, a piece at a time (a per-element parallel search costs more than the test).
    fn first_bad(
        &self,
        v: &[f64],
        bad: impl Fn(&f64) -> bool + Sync,
    ) -> Option<(usize, (usize, usize, usize, usize))> {
        let nz = self.nz;
        let Some(b) = &self.window else {
            const CHUNK: usize = 1 << 16;
            let p = v
                .par_chunks(CHUNK)
                .enumerate()
                .find_map_first(|(c, chunk)| chunk.iter().position(&bad).map(|p| c * CHUNK + p))?;
            let (n, q) = (self.n, p % (self.n * self.n * nz));
            return Some((p, (p / (n * n * nz), (q / nz) % n, q / (n * nz), q % nz)));
        };
        (0..b.ny).into_par_iter().find_map_first(|r| {
            let at = self.column_at(0, b.i0, b.j0 + r);
            let row = &v[at..at + b.nx * nz];
            row.iter()
                .position(&bad)
                .map(|p| (at + p, (0, b.i0 + p / nz, b.j0 + r, p % nz)))
        })
    }

    /// Values of each field: panels · n² · nz, or of a block's [`Coefficients::stored`]
    /// rectangle times nz.
    pub fn len(&self) -> usize {
        let (_, _, wx, wy) = self.stored();
        self.panels * wx * wy * self.nz
    }

    /// The rectangle of cells each field holds, `(x0, y0, wx, wy)`: the whole `n × n` level (of
    /// each panel), or a block and its ring ([`Coefficients::window`]).
    pub fn stored(&self) -> (usize, usize, usize, usize) {
        match &self.window {
            None => (0, 0, self.n, self.n),
            Some(b) => b.with_ring(),
        }
    }

    /// Where column `(i, j)` of `panel` (indices of the level) starts in each field.
    pub fn column_at(&self, panel: usize, i: usize, j: usize) -> usize {
        let (x0, y0, wx, wy) = self.stored();
        debug_assert!(i >= x0 && i < x0 + wx && j >= y0 && j < y0 + wy);
        ((panel * wy + j - y0) * wx + i - x0) * self.nz
    }

    /// Whether the fields are empty (never for a valid level).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The advection components with their names (none without ξ).
    pub fn xi_fields(&self) -> Vec<(&'static str, &[f64])> {
        match &self.xi {
            Some([x, y, z]) => vec![("xi_x", x), ("xi_y", y), ("xi_z", z)],
            None => vec![],
        }
    }

    /// The fields with their names.
    pub fn fields(&self) -> [(&'static str, &[f64]); 4] {
        [
            ("kx", &self.kx),
            ("ky", &self.ky),
            ("kz", &self.kz),
            ("beta", &self.beta),
        ]
    }

    /// The next coarser level (n / 2): each coarse cell takes the [`Averaging::default`] mean of
    /// its four children, level by level in the vertical (semi-coarsening keeps nz).
    pub fn coarsen(&self) -> Self {
        self.coarsen_with(Averaging::default())
    }

    /// The next coarser level with the given averaging of the four children.
    pub fn coarsen_with(&self, averaging: Averaging) -> Self {
        let mean = |a: f64, b: f64, c: f64, d: f64| match averaging {
            Averaging::Arithmetic => 0.25 * (a + b + c + d),
            Averaging::Harmonic => 4.0 / (1.0 / a + 1.0 / b + 1.0 / c + 1.0 / d),
        };
        // ξ is a velocity: the coarse value is the children's plain mean.
        let plain = |a: f64, b: f64, c: f64, d: f64| 0.25 * (a + b + c + d);
        Self {
            panels: self.panels,
            n: self.n / 2,
            nz: self.nz,
            kx: self.coarsen_any(&self.kx, mean),
            ky: self.coarsen_any(&self.ky, mean),
            kz: self.coarsen_any(&self.kz, mean),
            beta: self.coarsen_any(&self.beta, mean),
            xi: self.xi.as_ref().map(|[x, y, z]| {
                [
                    self.coarsen_any(x, plain),
                    self.coarsen_any(y, plain),
                    self.coarsen_any(z, plain),
                ]
            }),
            window: self.window.map(|b| b.coarsen()),
        }
    }

    /// One field on the next coarser level, of the whole level or of a block.
    fn coarsen_any(&self, v: &[f64], mean: impl Fn(f64, f64, f64, f64) -> f64 + Sync) -> Vec<f64> {
        match &self.window {
            None => self.coarsen_field(v, mean),
            Some(b) => self.coarsen_block_field(b, v, mean),
        }
    }

    /// One field on the next coarser level: each coarse cell the `mean` of its four children.
    fn coarsen_field(
        &self,
        v: &[f64],
        mean: impl Fn(f64, f64, f64, f64) -> f64 + Sync,
    ) -> Vec<f64> {
        let (n, nz) = (self.n / 2, self.nz);
        let mut out = vec![0.0; self.panels * n * n * nz];
        out.par_chunks_mut((n * nz).max(1))
            .enumerate()
            .for_each(|(row_index, row)| {
                // Rows of every panel in turn.
                let (panel, j) = (row_index / n, row_index % n);
                let v = &v[panel * self.n * self.n * nz..];
                for (i, o) in row.chunks_mut(nz).enumerate() {
                    let child = |ii: usize, jj: usize| &v[(jj * self.n + ii) * nz..][..nz];
                    let (a, b) = (child(2 * i, 2 * j), child(2 * i + 1, 2 * j));
                    let (c, d) = (child(2 * i, 2 * j + 1), child(2 * i + 1, 2 * j + 1));
                    for k in 0..nz {
                        o[k] = mean(a[k], b[k], c[k], d[k]);
                    }
                }
            });
        out
    }

    /// The face factors and β of `block` (a block of this level, on the sphere a tile of one
    /// of its panels), as the operator uses them. On the sphere a face on a panel edge takes
    /// the harmonic mean of this cell's coefficient normal to the edge and the neighbouring
    /// panel's cell's coefficient normal to the same edge (its kx or ky, whichever crosses it):
    /// the same value from both sides, bit for bit (docs/MODEL.md §16).
    pub fn cells(&self, block: &Block) -> CellCoefficients {
        assert_eq!(block.n, self.n, "the block is of another level");
        let (nx, ny, nz) = (block.nx, block.ny, self.nz);
        let hm = |a: f64, b: f64| 2.0 * a * b / (a + b);
        // Row by row in parallel, a column's nz values at a time (contiguous: the loops over k
        // vectorise): at a model's size this is half a billion cells.
        let n = self.n;
        let panel = block.panel.unwrap_or(0);
        assert!(
            panel < self.panels && (block.panel.is_some() == (self.panels > 1)),
            "a sphere's coefficients for its tiles, a panel's for its blocks"
        );
        assert!(
            self.window.is_none_or(|w| w == *block),
            "the coefficients of a block for that block"
        );
        fn column<'a>(
            c: &Coefficients,
            v: &'a [f64],
            panel: usize,
            i: usize,
            j: usize,
        ) -> &'a [f64] {
            &v[c.column_at(panel, i, j)..][..c.nz]
        }
        // The face across a panel edge of the sphere: the neighbouring panel's coefficient
        // normal to it, in the cell beside it.
        let across = |side: Side, along: usize| -> &[f64] {
            let (l, (i, j)) = sphere::cell_across(panel, side, along, n);
            let v = match l.side {
                Side::West | Side::East => &self.kx,
                Side::South | Side::North => &self.ky,
            };
            column(self, v, l.panel, i, j)
        };
        let closed = block.panel.is_some();
        // Periodic directions of a box: the faces on its edges join the last and first cells
        // (whole-level fields only: a rank's block keeps no ring across a periodic edge, which
        // the stencil's builder refuses).
        let wrap_x = !closed && block.bc.x == crate::grid::Boundary::Periodic;
        let wrap_y = !closed && block.bc.y == crate::grid::Boundary::Periodic;
        let faces = |out: &mut [f64], a: &[f64], b: &[f64]| {
            for ((o, a), b) in out.iter_mut().zip(a).zip(b) {
                *o = hm(*a, *b);
            }
        };
        let mut fx = vec![0.0; (nx + 1) * ny * nz];
        let mut fy = vec![0.0; nx * (ny + 1) * nz];
        let mut fz = vec![0.0; nx * ny * nz];
        let mut beta = vec![0.0; nx * ny * nz];
        fx.par_chunks_mut((nx + 1) * nz)
            .enumerate()
            .for_each(|(j, row)| {
                let gj = block.j0 + j;
                for (f, out) in row.chunks_mut(nz).enumerate() {
                    // Face f lies between global cells gi − 1 and gi.
                    let gi = block.i0 + f;
                    match (gi.checked_sub(1), gi < self.n) {
                        (Some(w), true) => faces(
                            out,
                            column(self, &self.kx, panel, w, gj),
                            column(self, &self.kx, panel, gi, gj),
                        ),
                        (Some(w), false) if closed => faces(
                            out,
                            column(self, &self.kx, panel, w, gj),
                            across(Side::East, gj),
                        ),
                        (None, _) if closed => faces(
                            out,
                            across(Side::West, gj),
                            column(self, &self.kx, panel, gi, gj),
                        ),
                        // A periodic edge: the face between the last and the first cell, in
                        // the same order from both sides (the same bits).
                        _ if wrap_x => faces(
                            out,
                            column(self, &self.kx, panel, n - 1, gj),
                            column(self, &self.kx, panel, 0, gj),
                        ),
                        (Some(w), false) => {
                            out.copy_from_slice(column(self, &self.kx, panel, w, gj))
                        }
                        (None, _) => out.copy_from_slice(column(self, &self.kx, panel, gi, gj)),
                    }
                }
            });
        fy.par_chunks_mut(nx * nz).enumerate().for_each(|(f, row)| {
            let gj = block.j0 + f;
            for (i, out) in row.chunks_mut(nz).enumerate() {
                let gi = block.i0 + i;
                match (gj.checked_sub(1), gj < self.n) {
                    (Some(s), true) => faces(
                        out,
                        column(self, &self.ky, panel, gi, s),
                        column(self, &self.ky, panel, gi, gj),
                    ),
                    (Some(s), false) if closed => faces(
                        out,
                        column(self, &self.ky, panel, gi, s),
                        across(Side::North, gi),
                    ),
                    (None, _) if closed => faces(
                        out,
                        across(Side::South, gi),
                        column(self, &self.ky, panel, gi, gj),
                    ),
                    _ if wrap_y => faces(
                        out,
                        column(self, &self.ky, panel, gi, n - 1),
                        column(self, &self.ky, panel, gi, 0),
                    ),
                    (Some(s), false) => out.copy_from_slice(column(self, &self.ky, panel, gi, s)),
                    (None, _) => out.copy_from_slice(column(self, &self.ky, panel, gi, gj)),
                }
            }
        });
        fz.par_chunks_mut(nx * nz)
            .zip(beta.par_chunks_mut(nx * nz))
            .enumerate()
            .for_each(|(j, (fzr, br))| {
                for (i, (fzc, bc)) in fzr.chunks_mut(nz).zip(br.chunks_mut(nz)).enumerate() {
                    let (gi, gj) = (block.i0 + i, block.j0 + j);
                    bc.copy_from_slice(column(self, &self.beta, panel, gi, gj));
                    let kz = column(self, &self.kz, panel, gi, gj);
                    faces(&mut fzc[..nz - 1], &kz[..nz - 1], &kz[1..]);
                }
            });
        let vertex = closed.then(|| {
            let mut v = vec![0.0; (nx + 1) * (ny + 1) * nz];
            v.par_chunks_mut((nx + 1) * nz)
                .enumerate()
                .for_each(|(b, row)| {
                    let gb = block.j0 + b;
                    for (a, out) in row.chunks_mut(nz).enumerate() {
                        let ga = block.i0 + a;
                        if ga == 0 || gb == 0 || ga >= n || gb >= n {
                            continue;
                        }
                        let kx = |i, j| column(self, &self.kx, panel, i, j);
                        let ky = |i, j| column(self, &self.ky, panel, i, j);
                        let (s, nn) = (
                            (kx(ga - 1, gb - 1), kx(ga, gb - 1)),
                            (kx(ga - 1, gb), kx(ga, gb)),
                        );
                        let (w, e) = (
                            (ky(ga - 1, gb - 1), ky(ga - 1, gb)),
                            (ky(ga, gb - 1), ky(ga, gb)),
                        );
                        for (k, o) in out.iter_mut().enumerate() {
                            *o = 0.25
                                * (hm(s.0[k], s.1[k])
                                    + hm(nn.0[k], nn.1[k])
                                    + hm(w.0[k], w.1[k])
                                    + hm(e.0[k], e.1[k]));
                        }
                    }
                });
            v
        });
        CellCoefficients {
            nx,
            ny,
            nz,
            fx,
            fy,
            fz,
            beta,
            advection: None,
            vertex,
        }
    }
}

/// The coefficients of one level's block as the operator uses them: face factors (the harmonic
/// mean of the two cells beside a face; at a boundary face the cell's own value) that multiply
/// the model problem's face coefficients, and β per cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellCoefficients {
    /// Local cells in x.
    pub nx: usize,
    /// Local cells in y.
    pub ny: usize,
    /// Vertical cells.
    pub nz: usize,
    /// x faces, `nx + 1` per row; face `i` is the west face of cell `i`:
    /// `fx[(j * (nx + 1) + i) * nz + k]`.
    pub fx: Vec<f64>,
    /// y faces, `ny + 1` rows of `nx`; face row `j` is the south face of cell row `j`:
    /// `fy[(j * nx + i) * nz + k]`.
    pub fy: Vec<f64>,
    /// The vertical face above cell k (k + ½), `fz[(j * nx + i) * nz + k]`; 0 above the top cell.
    pub fz: Vec<f64>,
    /// β per cell, `beta[(j * nx + i) * nz + k]`.
    pub beta: Vec<f64>,
    /// The advection term's face coefficients, when ξ is given.
    pub advection: Option<Advection>,
    /// On the sphere, the factor of the cross terms at every vertex of the block, `(nx + 1)
    /// (ny + 1)` of them, `vertex[(b * (nx + 1) + a) * nz + k]`: the mean of the four face
    /// factors that meet there (from the panel's fields, also where those faces belong to the
    /// next tile), 0 on the panel's edges (no cross term there). `None` off the sphere.
    pub vertex: Option<Vec<f64>>,
}

/// The face coefficients of −ω² ∇·(ξ u) on a block (docs/MODEL.md §15.5): for each face the
/// geometric factor times the normal component of ξ on it (the mean of the two cells' values);
/// zero on the physical boundary (no flux through walls, ground or lid).
#[derive(Debug, Clone, PartialEq)]
pub struct Advection {
    /// ω².
    pub omega2: f64,
    /// x faces as [`CellCoefficients::fx`]: face length × ξ_x.
    pub ax: Vec<f64>,
    /// y faces as [`CellCoefficients::fy`]: face length × ξ_y.
    pub ay: Vec<f64>,
    /// Vertical faces as [`CellCoefficients::fz`]: the radial surface factor (r̂² on the panel, 1
    /// on the box) × ξ_z; the cell area |T| multiplies it in the row.
    pub az: Vec<f64>,
}

/// `len` values: a copy of `given` (of that length), or `constant`; written by the host's
/// threads in pieces, each piece first touched by the thread that writes it.
pub(super) fn par_field(len: usize, given: Option<&[f64]>, constant: f64) -> Vec<f64> {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 16;
    let mut v: Vec<f64> = Vec::with_capacity(len);
    let spare = &mut v.spare_capacity_mut()[..len];
    match given {
        Some(g) => spare
            .par_chunks_mut(PIECE)
            .zip(g.par_chunks(PIECE))
            .for_each(|(d, s)| {
                for (d, s) in d.iter_mut().zip(s) {
                    d.write(*s);
                }
            }),
        None => spare.par_chunks_mut(PIECE).for_each(|d| {
            for d in d {
                d.write(constant);
            }
        }),
    }
    // SAFETY: every one of the `len` values (the capacity reserved above) was written just now.
    unsafe { v.set_len(len) };
    v
}
