//! Every choice a user makes, named once: its name on the command line, in Python and in
//! reports, its parse (with the "must be one of" error), and its integer in the C API. Each
//! choice's enum implements [`Choice`] beside its definition (the solver, smoother, precision
//! and preconditioner in `solver`, the geometry and sphere stencil in `problem`; where to run,
//! [`BackendKind`] and [`HaloPath`], here); the command line (clap), Python and the C API read
//! their tables.

use crate::error::{Result, StrataError};
use serde::{Deserialize, Serialize};

/// A setting with a fixed set of values, each with a name and a C integer.
pub trait Choice: Copy + PartialEq + Sized + 'static {
    /// The setting's name, as the errors and the C struct field say it (`"solver"`).
    const SETTING: &'static str;
    /// Every value with its name and C integer, in the order the help lists them.
    const ALL: &'static [(Self, &'static str, i32)];

    /// The value's name.
    fn name(self) -> &'static str {
        entry(self).1
    }

    /// The value's integer in the C API.
    fn code(self) -> i32 {
        entry(self).2
    }

    /// Every name, in order.
    fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|e| e.1).collect()
    }

    /// The value named `s`, or an error listing the names.
    fn parse(s: &str) -> Result<Self> {
        match Self::ALL.iter().find(|e| e.1 == s) {
            Some(e) => Ok(e.0),
            None => {
                let names: Vec<String> = Self::ALL.iter().map(|e| format!("'{}'", e.1)).collect();
                Err(StrataError::invalid(
                    Self::SETTING,
                    format!("must be one of {} (got {s:?})", names.join(", ")),
                ))
            }
        }
    }

    /// The value of the C integer `c`, or an error listing the integers.
    fn from_code(c: i32) -> Result<Self> {
        match Self::ALL.iter().find(|e| e.2 == c) {
            Some(e) => Ok(e.0),
            None => {
                let codes: Vec<String> = Self::ALL
                    .iter()
                    .map(|e| format!("{} ({})", e.2, e.1))
                    .collect();
                Err(StrataError::invalid(
                    Self::SETTING,
                    format!("must be one of {} (got {c})", codes.join(", ")),
                ))
            }
        }
    }
}

/// The table entry of `v` (every value has one: each table lists its enum's variants).
fn entry<T: Choice>(v: T) -> &'static (T, &'static str, i32) {
    T::ALL.iter().find(|e| e.0 == v).unwrap_or(&T::ALL[0])
}

/// Where a solver runs: which backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The GPU when one is usable, else the CPU.
    #[default]
    Auto,
    /// The multithreaded CPU backend.
    Cpu,
    /// The CUDA backend (NVIDIA GPUs).
    Cuda,
    /// The serial reference backend (obviously correct, slow: for checking).
    Reference,
}

/// How the GPU ranks of a distributed solve exchange halos.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HaloPath {
    /// NCCL for GPU ranks where the build has it and the library is found, else MPI.
    #[default]
    Auto,
    /// Through host memory by MPI (every backend).
    Mpi,
    /// By NCCL between device buffers (GPU ranks, one GPU per rank; a build with NCCL).
    Nccl,
}

impl Choice for BackendKind {
    const SETTING: &'static str = "backend";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (BackendKind::Auto, "auto", 0),
        (BackendKind::Cpu, "cpu", 1),
        (BackendKind::Cuda, "cuda", 2),
        (BackendKind::Reference, "reference", 3),
    ];
}

impl Choice for HaloPath {
    const SETTING: &'static str = "halo";
    const ALL: &'static [(Self, &'static str, i32)] = &[
        (HaloPath::Auto, "auto", 2),
        (HaloPath::Mpi, "mpi", 0),
        (HaloPath::Nccl, "nccl", 1),
    ];
}
