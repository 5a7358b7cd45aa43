//! Stopping rule, convergence reasons and the record of a solve.

use super::Profile;
use crate::backend::DeviceTest;
use serde::{Deserialize, Serialize};

/// Why a solve stopped (PETSc's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConvergedReason {
    /// ‖r‖ < rtol · ‖f‖ (or ‖r₀‖, [`SolveParams::relative_to`]).
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

/// What `rtol` is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RelativeTo {
    /// ‖f‖₂, the right-hand side (PETSc's default): a warm start that is already close stops
    /// early, and one that is far off (new coefficients) still reaches ‖r‖ < rtol ‖f‖. From a
    /// zero initial guess the same as the initial residual.
    #[default]
    Rhs,
    /// ‖r₀‖₂, the initial residual (the paper's rule; PETSc's `-ksp_converged_use_initial_residual_norm`).
    InitialResidual,
}

/// The stopping rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolveParams {
    /// Relative tolerance on ‖r‖₂ (volume-integrated residuals), relative to `relative_to`.
    pub rtol: f64,
    /// What `rtol` is relative to.
    #[serde(default)]
    pub relative_to: RelativeTo,
    /// Most iterations.
    pub max_it: usize,
    /// Run exactly `max_it` iterations, ignoring `rtol` (for timing).
    pub fixed_iterations: bool,
    /// Time every kernel (synchronising the backend around each one).
    pub profile: bool,
    /// Make a solve that did not converge an error ([`crate::StrataError::NotConverged`])
    /// of the persistent solver (so of C, Fortran and Python) instead of a record that says so
    /// (PETSc's `-ksp_error_if_not_converged`). Off by default, as in PETSc.
    #[serde(default)]
    pub error_if_not_converged: bool,
    /// For a singular problem (the sphere with δ = 0): remove the right-hand side's component
    /// along the null space before solving instead of refusing a right-hand side whose
    /// component is above rtol of its norm ([`super::NullSpace`]). Off by default: an
    /// incompatible right-hand side is usually a bug of the caller's.
    #[serde(default)]
    pub project_rhs: bool,
}

impl Default for SolveParams {
    fn default() -> Self {
        Self {
            rtol: 1e-5,
            relative_to: RelativeTo::Rhs,
            max_it: 500,
            fixed_iterations: false,
            profile: false,
            error_if_not_converged: false,
            project_rhs: false,
        }
    }
}

impl SolveParams {
    /// `info` as the result of a solve under these settings: an error if it did not converge
    /// and [`SolveParams::error_if_not_converged`] is set.
    pub fn outcome(&self, info: SolveInfo) -> crate::Result<SolveInfo> {
        if !self.error_if_not_converged || info.reason.converged() {
            return Ok(info);
        }
        Err(crate::StrataError::NotConverged {
            reason: format!("{:?}", info.reason),
            iterations: info.iterations,
            r0: info.r0,
            relative_residual: info.relative_residual(),
            seconds: info.seconds,
            rtol: self.rtol,
        })
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
    /// The norm `rtol` was relative to (‖f‖₂ or ‖r₀‖₂, [`SolveParams::relative_to`]).
    #[serde(default)]
    pub reference: f64,
    /// ‖r‖₂ after each iteration; entry 0 is ‖r₀‖₂.
    pub residuals: Vec<f64>,
    /// Wall time of the solve in seconds (excluding setup and transfers).
    pub seconds: f64,
    /// Per-kernel, per-level times when profiling was asked for.
    pub profile: Option<Profile>,
    /// Of a singular problem: the right-hand side's component along the null space, |Σ f| / √N,
    /// relative to ‖f‖, as given (before any projection); `None` for a regular problem.
    #[serde(default)]
    pub incompatible: Option<f64>,
}

impl SolveInfo {
    /// Final ‖r‖ relative to the stopping rule's reference norm: 0 when that is 0 (a zero
    /// right-hand side and initial residual: the exact answer), NaN when the norms are not
    /// finite (a solve that did not run never reports 0).
    pub fn relative_residual(&self) -> f64 {
        let reference = if self.reference > 0.0 {
            self.reference
        } else {
            self.r0
        };
        match self.residuals.last() {
            Some(r) if reference > 0.0 => r / reference,
            _ if reference == 0.0 => 0.0,
            _ => f64::NAN,
        }
    }
}

/// Tracks residuals and decides when to stop.
pub(super) struct Monitor<'a> {
    params: &'a SolveParams,
    pub r0: f64,
    /// The norm rtol is relative to.
    reference: f64,
    pub residuals: Vec<f64>,
    callback: &'a mut dyn FnMut(usize, f64),
}

impl<'a> Monitor<'a> {
    /// The monitor of a solve with ‖r₀‖² = `r0_squared` and ‖f‖² = `f_squared`.
    pub fn new(
        params: &'a SolveParams,
        r0_squared: f64,
        f_squared: f64,
        callback: &'a mut dyn FnMut(usize, f64),
    ) -> Self {
        let r0 = r0_squared.sqrt();
        let reference = match params.relative_to {
            RelativeTo::Rhs => f_squared.sqrt(),
            RelativeTo::InitialResidual => r0,
        };
        let mut residuals = Vec::with_capacity(params.max_it + 1);
        residuals.push(r0);
        Self {
            params,
            r0,
            reference,
            residuals,
            callback,
        }
    }

    /// The opening of a solve: exchanges the guess's halo, r ← f − A u on `op`, and the monitor
    /// of ‖r₀‖² and ‖f‖² summed over the ranks.
    #[allow(clippy::too_many_arguments)]
    pub fn start<B: crate::backend::Backend, C: crate::comm::Comm<B>>(
        b: &B,
        comm: &C,
        op: &B::LevelOp,
        f: &B::Field,
        u: &mut B::Field,
        r: &mut B::Field,
        params: &'a SolveParams,
        callback: &'a mut dyn FnMut(usize, f64),
    ) -> crate::error::Result<Self> {
        comm.exchange(b, op, u)?;
        let mut rr = [b.residual(op, f, u, r)?, b.dot(op, f, f)?];
        comm.sum(&mut rr)?;
        Ok(Self::new(params, rr[0], rr[1], callback))
    }

    /// A reason to stop before iterating, if any.
    pub fn initial(&self) -> Option<ConvergedReason> {
        if !(self.r0.is_finite() && self.reference.is_finite()) {
            Some(ConvergedReason::DivergedNanOrInf)
        } else if self.r0 == 0.0 {
            Some(ConvergedReason::ConvergedAtol)
        } else if !self.params.fixed_iterations && self.r0 < self.params.rtol * self.reference {
            // A warm start that already meets the rule (never from zero: there r₀ = ‖f‖).
            Some(ConvergedReason::ConvergedRtol)
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
        (self.callback)(it, r / self.reference);
        if !r_squared.is_finite() {
            return Some(ConvergedReason::DivergedNanOrInf);
        }
        if self.params.fixed_iterations {
            return (it >= self.params.max_it).then_some(ConvergedReason::ConvergedIts);
        }
        if r < self.params.rtol * self.reference {
            Some(ConvergedReason::ConvergedRtol)
        } else if it >= self.params.max_it {
            Some(ConvergedReason::DivergedMaxIt)
        } else {
            None
        }
    }

    /// The bound of the stopping rule: an iteration stops once ‖r‖ < rtol times the reference
    /// norm ([`Monitor::step`]), for a test that runs elsewhere ([`DeviceTest`]).
    pub fn device_test(&self, rr: usize, sigma: Option<usize>) -> DeviceTest {
        DeviceTest {
            rr,
            sigma,
            bound: self.params.rtol * self.reference,
            max_it: self.params.max_it,
            fixed: self.params.fixed_iterations,
        }
    }

    /// Steps through the [‖r‖², σ] of each iteration that a device ran under
    /// [`Monitor::device_test`] (σ tested only with `curvature`), as the host's loop would
    /// have: the reason to stop and the iterations run. The device stopped where this test
    /// stops, at the log's last entry; anything else is an error (a bug of the backend's test).
    pub fn replay(
        &mut self,
        log: &[[f64; 2]],
        curvature: bool,
    ) -> crate::error::Result<(ConvergedReason, usize)> {
        for (i, &[rr, sigma]) in log.iter().enumerate() {
            let it = i + 1;
            let reason = match curvature.then(|| Self::curvature(sigma)).flatten() {
                Some(r) => Some(r),
                None => self.step(it, rr),
            };
            if let Some(r) = reason {
                if it == log.len() {
                    return Ok((r, it));
                }
                break;
            }
        }
        Err(crate::StrataError::Backend {
            backend: "device loop".into(),
            msg: format!(
                "the device stopped after {} iterations where the host's stopping test does not",
                log.len()
            ),
        })
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
            reference: self.reference,
            residuals: self.residuals,
            seconds,
            profile,
            incompatible: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A monitor of rtol 1e-2 relative to ‖f‖ = 1, and what its callback saw.
    fn run(
        params: &SolveParams,
        log: &[[f64; 2]],
        curvature: bool,
    ) -> (crate::Result<(ConvergedReason, usize)>, Vec<usize>) {
        let mut seen = Vec::new();
        let mut cb = |it: usize, _: f64| seen.push(it);
        let mut mon = Monitor::new(params, 1.0, 1.0, &mut cb);
        let test = mon.device_test(3, curvature.then_some(4));
        assert_eq!(test.bound, params.rtol);
        assert_eq!((test.rr, test.sigma), (3, curvature.then_some(4)));
        let out = mon.replay(log, curvature);
        drop(mon);
        (out, seen)
    }

    #[test]
    fn a_device_log_replays_the_hosts_test_and_must_stop_where_it_does() {
        let p = SolveParams {
            rtol: 1e-2,
            max_it: 5,
            ..SolveParams::default()
        };
        // ‖r‖ = 0.5, 0.1, 0.005: stops at the third (0.005 < 0.01).
        let good = [[0.25, 1.0], [0.01, 1.0], [2.5e-5, 1.0]];
        let (out, seen) = run(&p, &good, false);
        assert_eq!(out.unwrap(), (ConvergedReason::ConvergedRtol, 3));
        assert_eq!(seen, [1, 2, 3]);
        // A log that goes on past the host's stop, or ends before it, is an error.
        assert!(run(&p, &[[0.25, 1.0], [2.5e-5, 1.0], [1e-6, 1.0]], false)
            .0
            .is_err());
        assert!(run(&p, &good[..2], false).0.is_err());
        // max_it reached without converging.
        let slow = [[0.25, 1.0]; 5];
        assert_eq!(
            run(&p, &slow, false).0.unwrap(),
            (ConvergedReason::DivergedMaxIt, 5)
        );
        // A curvature that is not positive stops before the residual is recorded.
        let (out, seen) = run(&p, &[[0.25, 1.0], [0.2, -1.0]], true);
        assert_eq!(out.unwrap(), (ConvergedReason::DivergedBreakdown, 2));
        assert_eq!(seen, [1]);
        // Without the curvature test σ is not looked at.
        assert!(run(&p, &[[0.25, 1.0], [0.2, -1.0]], false).0.is_err());
        // Fixed iterations run max_it whatever the residual.
        let fixed = SolveParams {
            fixed_iterations: true,
            max_it: 3,
            ..p
        };
        let (out, _) = run(&fixed, &[[1e-9, 1.0]; 3], false);
        assert_eq!(out.unwrap(), (ConvergedReason::ConvergedIts, 3));
        // A residual that is not finite stops at once.
        let (out, _) = run(&p, &[[f64::NAN, 1.0]], false);
        assert_eq!(out.unwrap(), (ConvergedReason::DivergedNanOrInf, 1));
    }
}
