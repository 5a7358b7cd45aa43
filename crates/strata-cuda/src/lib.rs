//! # strata-cuda
//!
//! The CUDA backend of strata: every kernel of [`strata::backend::Backend`] on an NVIDIA GPU, in
//! the paper's layout (x-contiguous, padded, one thread per vertical column). The kernels are
//! plain CUDA C (`kernels/*.cu`), embedded in the binary and compiled by NVRTC at first use for
//! the device's architecture. The CUDA driver and NVRTC are loaded at run time, so this crate
//! builds on machines without CUDA; [`CudaBackend::new`] says clearly what is missing.
#![warn(missing_docs)]

mod backend;
mod device_solve;
pub mod kernels;
pub mod layout;
mod staging;

pub use backend::{
    device_count, unavailable_reason, CudaBackend, CudaField, CudaLevel, DeviceArray, Order,
};
pub use device_solve::{DeviceHandle, DeviceSolve};
