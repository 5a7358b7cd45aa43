//! # strata-cuda
//!
//! The CUDA backend of strata: every kernel of [`strata::backend::Backend`] on an NVIDIA GPU, in
//! the paper's layout (x-contiguous, padded, one thread per vertical column). The kernels are
//! plain CUDA C (`kernels/*.cu`). Where the build finds NVRTC (libnvrtc.so.13 on the loader
//! path), build.rs compiles them into the binary — cubins for sm_80 and sm_90, PTX for newer
//! GPUs — for the default builds of [`kernels::SHIPPED_NZ`] levels per column, so a solver's
//! first creation loads machine code; other nz, tuning options and architectures are compiled
//! by NVRTC at first use (with a disk cache). The CUDA driver and NVRTC are loaded at run time,
//! so this crate builds on machines without CUDA; [`CudaBackend::new`] says clearly what is
//! missing.
#![warn(missing_docs)]

mod backend;
pub mod compile;
mod device_solve;
pub mod kernels;
pub mod layout;
mod staging;
mod tuning_env;

pub use backend::{
    device_count, unavailable_reason, CudaBackend, CudaField, CudaLevel, DeviceArray, Order,
    PartAt, GATHER_COLUMNS,
};
pub use device_solve::{DeviceHandle, DeviceSolve};
