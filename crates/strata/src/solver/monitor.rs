//! Stopping rule, convergence reasons and the record of a solve.

use super::Profile;
use serde::{Deserialize, Serialize};

/// Why a solve stopped (PETSc's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConvergedReason {
    /// ‖r‖/‖r₀‖ < rtol.
    ConvergedRtol,
    /// The fixed number of iterations was run.
    ConvergedIts,
    /// The initial residual was zero: the initial guess solves the problem.
    ConvergedAtol,
    /// max_it iterations without reaching rtol.
    DivergedMaxIt,
    /// A NaN or infinity appeared.
    DivergedNanOrInf,
    /// CG broke down: ⟨p, A p⟩ ≤ 0 (operator or preconditioner not positive definite).
    DivergedBreakdown,
}

impl ConvergedReason {
    /// True for the converged reasons.
    pub fn converged(self) -> bool {
        matches!(
            self,
            Self::ConvergedRtol | Self::ConvergedIts | Self::ConvergedAtol
        )
    }
}

/// The stopping rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolveParams {
    /// Relative tolerance on ‖r‖₂/‖r₀‖₂ (volume-integrated residuals).
    pub rtol: f64,
    /// Most iterations.
    pub max_it: usize,
    /// Run exactly `max_it` iterations, ignoring `rtol` (for timing).
    pub fixed_iterations: bool,
    /// Time every kernel (synchronising the backend around each one).
    pub profile: bool,
}

impl Default for SolveParams {
    fn default() -> Self {
        Self {
            rtol: 1e-5,
            max_it: 500,
            fixed_iterations: false,
            profile: false,
        }
    }
}

impl SolveParams {
    /// Checks the stopping rule; the error names the parameter and says why.
    pub fn validate(&self) -> crate::Result<()> {
        if !(self.rtol.is_finite() && self.rtol > 0.0) {
            return crate::error::invalid(
                "rtol",
                format!("must be finite and positive (got {})", self.rtol),
            );
        }
        if self.max_it < 1 {
            return crate::error::invalid("max_it", "must be at least 1 (got 0)");
        }
        Ok(())
    }
}

/// What a solve did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SolveInfo {
    /// Why it stopped.
    pub reason: ConvergedReason,
    /// Iterations run (CG steps or V-cycles).
    pub iterations: usize,
    /// ‖r₀‖₂.
    pub r0: f64,
    /// ‖r‖₂ after each iteration; entry 0 is ‖r₀‖₂.
    pub residuals: Vec<f64>,
    /// Wall time of the solve in seconds (excluding setup and transfers).
    pub seconds: f64,
    /// Per-kernel, per-level times when profiling was asked for.
    pub profile: Option<Profile>,
}

impl SolveInfo {
    /// Final ‖r‖/‖r₀‖ (0 when r₀ = 0).
    pub fn relative_residual(&self) -> f64 {
        match self.residuals.last() {
            Some(r) if self.r0 > 0.0 => r / self.r0,
            _ => 0.0,
        }
    }
}

/// Tracks residuals and decides when to stop.
pub(super) struct Monitor<'a> {
    params: &'a SolveParams,
    pub r0: f64,
    pub residuals: Vec<f64>,
    callback: &'a mut dyn FnMut(usize, f64),
}

impl<'a> Monitor<'a> {
    pub fn new(
        params: &'a SolveParams,
        r0_squared: f64,
        callback: &'a mut dyn FnMut(usize, f64),
    ) -> Self {
        let r0 = r0_squared.sqrt();
        let mut residuals = Vec::with_capacity(params.max_it + 1);
        residuals.push(r0);
        Self {
            params,
            r0,
            residuals,
            callback,
        }
    }

    /// A reason to stop before iterating, if any.
    pub fn initial(&self) -> Option<ConvergedReason> {
        if !self.r0.is_finite() {
            Some(ConvergedReason::DivergedNanOrInf)
        } else if self.r0 == 0.0 {
            Some(ConvergedReason::ConvergedAtol)
        } else if self.params.max_it == 0 {
            Some(if self.params.fixed_iterations {
                ConvergedReason::ConvergedIts
            } else {
                ConvergedReason::DivergedMaxIt
            })
        } else {
            None
        }
    }

    /// Records the residual of iteration `it` (1-based); returns a reason to stop, if any.
    pub fn step(&mut self, it: usize, r_squared: f64) -> Option<ConvergedReason> {
        let r = r_squared.sqrt();
        self.residuals.push(r);
        (self.callback)(it, r / self.r0);
        if !r_squared.is_finite() {
            return Some(ConvergedReason::DivergedNanOrInf);
        }
        if self.params.fixed_iterations {
            return (it >= self.params.max_it).then_some(ConvergedReason::ConvergedIts);
        }
        if r < self.params.rtol * self.r0 {
            Some(ConvergedReason::ConvergedRtol)
        } else if it >= self.params.max_it {
            Some(ConvergedReason::DivergedMaxIt)
        } else {
            None
        }
    }

    /// A reason to stop if the CG curvature σ = ⟨p, A p⟩ is unusable.
    pub fn curvature(sigma: f64) -> Option<ConvergedReason> {
        if !sigma.is_finite() {
            Some(ConvergedReason::DivergedNanOrInf)
        } else if sigma <= 0.0 {
            Some(ConvergedReason::DivergedBreakdown)
        } else {
            None
        }
    }

    pub fn finish(
        self,
        reason: ConvergedReason,
        iterations: usize,
        seconds: f64,
        profile: Option<Profile>,
    ) -> SolveInfo {
        SolveInfo {
            reason,
            iterations,
            r0: self.r0,
            residuals: self.residuals,
            seconds,
            profile,
        }
    }
}
