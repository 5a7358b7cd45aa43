//! # strata
//!
//! Matrix-free solvers for the elliptic pressure-correction equation of atmospheric models: a
//! strongly anisotropic, positive-definite Helmholtz problem
//! `−ω²(∇_S² u + λ² r⁻² ∂_r(r² ∂_r u)) + δ u = f` on one panel of the cubed sphere (or a flat
//! box) times vertical columns, after Müller, Scheichl & Vainikko (2014).
//!
//! * [`grid`]: blocks, sides, rank grids and the decomposition (index arithmetic only).
//! * [`problem`]: parameters, grids, right-hand sides; [`stencil`]: the per-level operator.
//! * [`backend`]: the kernel trait and its implementations ([`backend::cpu::CpuBackend`], the
//!   serial [`backend::reference::ReferenceBackend`]).
//! * [`solver`]: fused CG, tensor-product multigrid and MG-preconditioned CG, written once over
//!   [`backend::Backend`] and [`comm::Comm`].
//! * [`names`]: every choice's name, parse and C integer, once.
//! * [`session`]: the object-safe [`session::SolverHandle`] over a persistent solver and its
//!   backend, the one type a front end holds.
//! * [`perf`]: the paper's FLOP and memory-traffic model; [`io`]: NetCDF and Matrix Market files;
//!   [`matrix`]: the assembled operator, for checking against other solvers.
//!
//! Levels are numbered from 0, the finest. Indices are 0-based; fields on the host are
//! z-contiguous, `u[(j * nx + i) * nz + k]`.
//!
//! ```
//! use strata::backend::cpu::CpuBackend;
//! use strata::problem::{build_rhs, ProblemParams, RhsKind};
//! use strata::solver::{SolverConfig, SolverKind};
//! use strata::grid::Block;
//!
//! let p = ProblemParams { n: 32, nz: 16, ..Default::default() };
//! let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(p.n));
//! let backend = CpuBackend::new(None)?;
//! let cfg = SolverConfig::new(SolverKind::Mg).with_levels(4);
//! let sol = strata::solve(&backend, &p, &cfg, &rhs, &mut |_, _| {})?;
//! assert!(sol.info.reason.converged());
//! assert!(sol.info.relative_residual() < 1e-5);
//! println!("{} V-cycles, u[0] = {}", sol.info.iterations, sol.u[0]);
//! # Ok::<(), strata::StrataError>(())
//! ```
#![warn(missing_docs)]

mod api;
pub mod backend;
pub mod comm;
mod error;
pub mod field;
pub mod grid;
pub mod io;
pub mod matrix;
pub mod names;
pub mod perf;
mod persistent;
pub mod precision;
pub mod problem;
pub mod session;
pub mod solver;
pub mod stencil;

pub use api::{
    available_memory, block_cell_memory, block_field_memory, cell_memory, check_block_memory,
    check_memory, field_memory, solve, solve_block, solve_tiles, SetupStages, Solution,
};
pub use error::{Result, StrataError};
pub use persistent::PersistentSolver;
