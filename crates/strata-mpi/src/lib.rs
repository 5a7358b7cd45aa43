//! # strata-mpi
//!
//! Distributed solves: a horizontal decomposition of the panel into a px × py grid of ranks
//! ([`strata::grid::Decomposition`]), each rank holding its block of every multigrid level with a halo of width
//! one, and [`MpiComm`], the [`strata::comm::Comm`] that exchanges the halos (non-blocking
//! point-to-point) and sums reductions (allreduce). The solvers are unchanged: they call the
//! communicator where the paper exchanges. Device fields travel through host buffers (the
//! host-staged path), or with the `nccl` feature by NCCL between device buffers ([`NcclComm`]).
//! On the sphere, [`SphereMpiComm`] joins the tiles of the six panels held by different ranks.
#![warn(missing_docs)]

mod comm;
#[cfg(feature = "nccl")]
mod nccl;
#[cfg(feature = "nccl")]
mod nccl_queue;
mod sphere;
#[cfg(feature = "nccl")]
mod sphere_nccl;

pub use comm::{displacements, MpiComm};
pub use mpi;
#[cfg(feature = "nccl")]
pub use nccl::{nccl_available, NcclComm, RECORD_AFTER};
pub use sphere::SphereMpiComm;
#[cfg(feature = "nccl")]
pub use sphere_nccl::SphereNcclComm;
