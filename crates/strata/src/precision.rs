//! Storage precision of a level's fields (docs/MODEL.md §17): fp64, or fp32 for the multigrid
//! preconditioner of `--precision mixed`. Arithmetic is fp64 in every kernel whatever the
//! storage (values are widened on load and rounded once on store); only what a field holds in
//! memory, and so the bytes a kernel moves, changes.

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
    /// The precision this type stores.
    const PRECISION: Storage;
    /// Rounds an `f64` to this type.
    fn from_f64(v: f64) -> Self;
    /// Widens to `f64` (exact).
    fn to_f64(self) -> f64;
}

impl Real for f64 {
    const PRECISION: Storage = Storage::F64;
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
    const PRECISION: Storage = Storage::F32;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}
