//! The vector instructions the CPU backend's kernels run with, chosen at run time.
//!
//! The workspace builds for its target's baseline (on x86-64: SSE2, two f64 per vector), so a
//! binary runs on any CPU of the target. The compute-bound kernels' per-row bodies (the line
//! kernels' Thomas sweeps, the red-black half-sweeps, the operator, the residual, the CG SpMV,
//! the prolongation, the precision conversion) are compiled a second time with AVX2 and FMA
//! enabled ([`run`]) and taken when the CPU has them: the Thomas sweeps' eight lanes then take
//! two vector divisions per level instead of four (docs/results/performance-log.md,
//! 2026-11-27). The vector updates (bandwidth-bound) and the column-at-a-time kernels of
//! per-cell coefficients keep the baseline's code. Rust never fuses `a * b + c` into an FMA
//! unasked, and LLVM does not reorder floating-point sums, so both paths compute the same
//! values bit for bit (tests/cpu_isa.rs; the conformance suite runs on both).

use crate::error::{Result, StrataError};

/// The instruction set the CPU backend's kernels use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// The target's baseline instructions (x86-64: SSE2): every CPU of the target has them.
    Baseline,
    /// AVX2 with FMA (x86-64 since 2013–2015): four f64 per vector.
    Avx2,
}

impl Isa {
    /// The widest instruction set this CPU has among those the kernels are built for.
    pub fn detect() -> Self {
        if Self::Avx2.available() {
            Self::Avx2
        } else {
            Self::Baseline
        }
    }

    /// The instruction set the environment variable `STRATA_CPU_ISA` names (`baseline` or
    /// `avx2`), `None` if it is unset or empty, an error for any other value: a way to measure
    /// or check one path against the other without a rebuild.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var("STRATA_CPU_ISA") {
            Err(std::env::VarError::NotPresent) => Ok(None),
            Ok(v) if v.is_empty() => Ok(None),
            Ok(v) => v.parse().map(Some),
            Err(e) => Err(StrataError::invalid("STRATA_CPU_ISA", e.to_string())),
        }
    }

    /// Whether this CPU can run kernels built for `self`.
    pub fn available(self) -> bool {
        match self {
            Self::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Self::Avx2 => false,
        }
    }

    /// `self`, or the error of an instruction set this CPU lacks.
    pub fn checked(self) -> Result<Self> {
        if self.available() {
            Ok(self)
        } else {
            Err(StrataError::invalid(
                "isa",
                format!("this CPU cannot run the {} kernels", self.name()),
            ))
        }
    }

    /// The name printed in reports: `baseline` or `avx2`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::Avx2 => "avx2",
        }
    }
}

impl std::str::FromStr for Isa {
    type Err = StrataError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "baseline" => Ok(Self::Baseline),
            "avx2" => Ok(Self::Avx2),
            _ => Err(StrataError::invalid(
                "STRATA_CPU_ISA",
                format!("must be `baseline` or `avx2` (got `{s}`)"),
            )),
        }
    }
}

/// Runs `body` compiled for `isa`. `body` must be an `#[inline(always)]` closure, so that its
/// code (and the `#[inline(always)]` kernels it calls) is compiled into each instance here, with
/// that instance's instructions. `isa` must be [`Isa::available`] on this CPU (the backend
/// checks it once, at construction).
#[inline(always)]
pub(super) fn run<R>(isa: Isa, body: impl FnOnce() -> R) -> R {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a backend holds `Isa::Avx2` only after `Isa::checked` found AVX2 and FMA on
        // this CPU (`CpuBackend::with_isa`).
        Isa::Avx2 => unsafe { avx2(body) },
        _ => body(),
    }
}

/// `body` with AVX2 and FMA enabled.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn avx2<R>(body: impl FnOnce() -> R) -> R {
    body()
}
