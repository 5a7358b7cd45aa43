//! Storage precision of a level's fields (docs/MODEL.md §17): fp64, or fp32 for the multigrid
//! preconditioner of `--precision mixed`. The host backends compute in fp64 whatever the
//! storage (values widened on load, rounded once on store); the CUDA backend computes an fp32
//! level in fp32 (its `-DREAL=float` build). Reductions are fp64 everywhere.

use serde::{Deserialize, Serialize};

/// How a level's fields are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// 8-byte values.
    #[default]
    F64,
    /// 4-byte values (rounded to nearest on store).
    F32,
}

impl Storage {
    /// Bytes of one stored value.
    pub fn bytes(self) -> usize {
        match self {
            Storage::F64 => 8,
            Storage::F32 => 4,
        }
    }

    /// `v` as a field of this precision stores it.
    pub fn round(self, v: f64) -> f64 {
        match self {
            Storage::F64 => v,
            Storage::F32 => v as f32 as f64,
        }
    }
}

/// A stored value type of host fields: `f64` or `f32`. Kernels widen to `f64` on load and round
/// on store.
pub trait Real: Copy + Send + Sync + Default + PartialEq + std::fmt::Debug + 'static {
    /// Rounds an `f64` to this type.
    fn from_f64(v: f64) -> Self;
    /// Widens to `f64` (exact).
    fn to_f64(self) -> f64;
}

impl Real for f64 {
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

impl Real for f32 {
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}
