//! Per-kernel, per-level timers (enabled by [`super::SolveParams::profile`]).

use crate::backend::Backend;
use crate::error::Result;
pub use crate::perf::Kernel;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Calls and accumulated seconds of one kernel on one level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelStat {
    /// Number of calls.
    pub calls: u64,
    /// Total seconds.
    pub seconds: f64,
}

/// Timers per level (0 = finest) and kernel.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Profile {
    /// `levels[lev][kernel as usize]`.
    pub levels: Vec<[KernelStat; Kernel::ALL.len()]>,
}

impl Profile {
    /// The stat of one kernel on one level.
    pub fn get(&self, lev: usize, kernel: Kernel) -> KernelStat {
        self.levels
            .get(lev)
            .map(|l| l[kernel as usize])
            .unwrap_or_default()
    }
}

/// Optional timer: when enabled, synchronises the backend around each kernel.
pub(crate) struct Timer {
    profile: Option<Profile>,
    /// Added to every level timed: the levels gathered whole onto every rank are a hierarchy
    /// of their own, whose level 0 is this one's level `offset`.
    offset: usize,
}

impl Timer {
    pub(crate) fn new(enabled: bool, levels: usize) -> Self {
        Self {
            profile: enabled.then(|| Profile {
                levels: vec![[KernelStat::default(); Kernel::ALL.len()]; levels],
            }),
            offset: 0,
        }
    }

    /// Runs `f` with every level it times shifted by `by` (a nested hierarchy's levels).
    pub(crate) fn shifted<R>(&mut self, by: usize, f: impl FnOnce(&mut Self) -> R) -> R {
        self.offset += by;
        let r = f(self);
        self.offset -= by;
        r
    }

    /// Whether it times (and so synchronises around every kernel).
    pub(crate) fn enabled(&self) -> bool {
        self.profile.is_some()
    }

    /// Runs `f`, timing it as `kernel` on level `lev` when enabled.
    pub(crate) fn run<B: Backend, R>(
        &mut self,
        backend: &B,
        kernel: Kernel,
        lev: usize,
        f: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let Some(p) = self.profile.as_mut() else {
            return f();
        };
        backend.synchronize()?;
        let t = Instant::now();
        let r = f()?;
        backend.synchronize()?;
        let s = &mut p.levels[lev + self.offset][kernel as usize];
        s.calls += 1;
        s.seconds += t.elapsed().as_secs_f64();
        Ok(r)
    }

    pub(crate) fn into_profile(self) -> Option<Profile> {
        self.profile
    }
}
