//! The vertical grid and the vectors a, b, c, d of docs/MODEL.md §3.2 (panel) and §4.2 (box).

use super::{Geometry, Grading, ProblemParams};

/// Vertical faces, centres and the operator's vertical vectors, shared by every column and every
/// multigrid level. Index `k` is 0-based (`k = 0` is the bottom cell).
#[derive(Debug, Clone, PartialEq)]
pub struct VerticalGrid {
    /// Faces r̂_0 … r̂_nz (radius on the panel, height on the box), length nz + 1.
    pub faces: Vec<f64>,
    /// Cell centres r_k = (r̂_k + r̂_{k+1}) / 2, length nz.
    pub centres: Vec<f64>,
    /// a_k = δ V_k (V_k the radial volume factor).
    pub a: Vec<f64>,
    /// b_k: coupling k → k+1 (zero in the top cell: Neumann).
    pub b: Vec<f64>,
    /// c_k: coupling k → k−1 (zero in the bottom cell: Neumann).
    pub c: Vec<f64>,
    /// d_k = −ω² Δr_k, the weight of the horizontal fluxes.
    pub d: Vec<f64>,
    /// a_k − b_k − c_k, the column diagonal without the horizontal part (precomputed).
    pub amb: Vec<f64>,
    /// V_k, the radial volume factor (cell volume |T| V_k), which β multiplies.
    pub vol: Vec<f64>,
}

impl VerticalGrid {
    /// Builds the vertical grid and vectors of a problem.
    pub fn new(p: &ProblemParams) -> Self {
        let nz = p.nz;
        let base = p.geometry.ground();
        let faces: Vec<f64> = (0..=nz)
            .map(|k| {
                let s = k as f64 / nz as f64;
                let s = match p.grading {
                    Grading::Uniform => s,
                    Grading::Graded => s * s,
                };
                base + p.height * s
            })
            .collect();
        let centres: Vec<f64> = (0..nz).map(|k| 0.5 * (faces[k] + faces[k + 1])).collect();
        // Surface factor r² on the sphere, 1 on the box; volume ∫ r² dr or Δz.
        let surface = |r: f64| p.geometry.surface(r);
        let volume = |lo: f64, hi: f64| p.geometry.volume(lo, hi);
        let w2 = p.omega() * p.omega();
        let wl2 = w2 * p.lambda * p.lambda;
        let a: Vec<f64> = (0..nz)
            .map(|k| p.delta * volume(faces[k], faces[k + 1]))
            .collect();
        let b: Vec<f64> = (0..nz)
            .map(|k| {
                if k + 1 < nz {
                    -wl2 * surface(faces[k + 1]) / (centres[k + 1] - centres[k])
                } else {
                    0.0
                }
            })
            .collect();
        let c: Vec<f64> = (0..nz)
            .map(|k| {
                if k > 0 {
                    -wl2 * surface(faces[k]) / (centres[k] - centres[k - 1])
                } else {
                    0.0
                }
            })
            .collect();
        let d: Vec<f64> = (0..nz).map(|k| -w2 * (faces[k + 1] - faces[k])).collect();
        let amb = (0..nz).map(|k| a[k] - b[k] - c[k]).collect();
        let vol = (0..nz).map(|k| volume(faces[k], faces[k + 1])).collect();
        Self {
            faces,
            centres,
            a,
            b,
            c,
            d,
            amb,
            vol,
        }
    }

    /// Number of vertical cells.
    pub fn nz(&self) -> usize {
        self.centres.len()
    }

    /// Radial volume factor V_k (so that the cell volume is |T| V_k) for the geometry.
    pub fn volume_factor(&self, geometry: Geometry, k: usize) -> f64 {
        geometry.volume(self.faces[k], self.faces[k + 1])
    }
}
