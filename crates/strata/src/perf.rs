//! The paper's performance model (docs/MODEL.md, "Performance model"): FLOPs and memory
//! references per cell, and the derived GFLOP/s and useful bandwidth.

use crate::error::Result;
use serde::{Deserialize, Serialize};

/// Measurement probes of a backend, kept off the compute trait [`crate::backend::Backend`]: the
/// solvers never call them; `strata bench` and the reports do.
pub trait Probes {
    /// Values (8 bytes each) the backend's implementation of `kernel` reads and writes per cell
    /// of its level, counting each cached neighbour once; `None` for kernels without a model.
    fn moved_values(&self, kernel: Kernel) -> Option<f64>;

    /// Values (8 bytes each) of per-cell coefficients that `kernel` reads per cell of its level
    /// on a level with coefficient fields (docs/MODEL.md §15), on top of [`Probes::moved_values`];
    /// `symmetric` when the operator has no advection term. `None` without a model.
    fn coefficient_values(&self, kernel: Kernel, symmetric: bool) -> Option<f64> {
        let _ = (kernel, symmetric);
        None
    }

    /// Measures the memory bandwidth in bytes per second with a STREAM-style copy of
    /// `bytes` bytes (counting the read and the write), best of `repeats`.
    fn copy_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64>;

    /// Measures the bandwidth of an in-place update y ← y + a·x over `bytes` bytes per array in
    /// bytes per second (counting two reads and one write per element, as STREAM's add does),
    /// best of `repeats`. Kernels that update fields in place are compared with this as well:
    /// they avoid the write-allocate traffic a copy's destination can cost.
    fn update_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64>;
}

/// The kernels the solvers call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kernel {
    /// Fused CG SpMV.
    Spmv,
    /// Fused CG Tridiag.
    Tridiag,
    /// Multigrid Smooth.
    Smooth,
    /// The line solve z ← M⁻¹ r on every column of a level, on its own: the line-relaxation
    /// preconditioner of CG, GCR and BiCGStab, the coarse CG's, and red-black's step from zero
    /// on a finest level with cross terms ([`crate::backend::LineKernels::line_solve`]).
    LineSolve,
    /// Multigrid RestrictSmooth.
    RestrictSmooth,
    /// The V-cycle's residual on the way down and the next level's RestrictSmooth in one call
    /// ([`crate::backend::LineKernels::residual_restrict_smooth`]), per coarse cell.
    ResidualRestrictSmooth,
    /// The first half-sweep of red-black's step from zero on the finest level: the line solve
    /// on one colour's columns where the backend can
    /// ([`crate::backend::LineKernels::line_solve_color`]; the paper's Smooth from zero).
    LineSolveColor,
    /// [`Kernel::ResidualRestrictSmooth`] as red-black's step from zero, its coarse line solve
    /// on one colour's columns where the backend can
    /// ([`crate::backend::LineKernels::residual_restrict_solve_color`]), per coarse cell.
    ResidualRestrictSolveColor,
    /// One half-sweep of the red-black line smoother (`smooth_color`, and
    /// `smooth_color_after_solve` after the step from zero's first).
    SmoothColor,
    /// Mixed-precision defect correction's last half-sweep with its u ← u + z on the fp64
    /// iterate ([`crate::backend::LineKernels::smooth_color_correct`]), per cell of the finest
    /// level.
    SmoothColorCorrect,
    /// Residual (with its norm).
    Residual,
    /// The norm of the residual without storing it (mg's stopping test,
    /// [`crate::backend::StencilKernels::residual_norm`]); the paper's Residual in the cost model.
    ResidualNorm,
    /// Multigrid Prolongate.
    Prolongate,
    /// Vector operations (dot, axpy) of mg-cg and textbook CG.
    Vector,
    /// Halo exchange.
    Halo,
}

impl Kernel {
    /// All kernels, in report order.
    pub const ALL: [Kernel; 15] = [
        Kernel::Spmv,
        Kernel::Tridiag,
        Kernel::Smooth,
        Kernel::LineSolve,
        Kernel::LineSolveColor,
        Kernel::RestrictSmooth,
        Kernel::ResidualRestrictSmooth,
        Kernel::ResidualRestrictSolveColor,
        Kernel::SmoothColor,
        Kernel::SmoothColorCorrect,
        Kernel::Residual,
        Kernel::ResidualNorm,
        Kernel::Prolongate,
        Kernel::Vector,
        Kernel::Halo,
    ];

    /// The paper's name of the kernel.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Spmv => "SpMV",
            Kernel::Tridiag => "Tridiag",
            Kernel::Smooth => "Smooth",
            Kernel::LineSolve => "LineSolve",
            Kernel::RestrictSmooth => "RestrictSmooth",
            Kernel::ResidualRestrictSmooth => "ResidualRestrictSmooth",
            Kernel::LineSolveColor => "LineSolveColor",
            Kernel::ResidualRestrictSolveColor => "ResidualRestrictSolveColor",
            Kernel::SmoothColor => "SmoothColor",
            Kernel::SmoothColorCorrect => "SmoothColorCorrect",
            Kernel::Residual => "Residual",
            Kernel::ResidualNorm => "ResidualNorm",
            Kernel::Prolongate => "Prolongate",
            Kernel::Vector => "Vector",
            Kernel::Halo => "Halo",
        }
    }
}

/// FLOPs and memory references (8-byte values) per cell of the level a kernel runs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Floating-point operations per cell.
    pub flops: f64,
    /// Memory references without caching (the paper's Mem).
    pub mem: f64,
    /// Memory references with perfect caching (the paper's Mem^(C)): the "useful" traffic.
    pub mem_cached: f64,
}

/// The paper's per-cell cost of a kernel (RestrictSmooth per coarse cell).
pub fn kernel_cost(kernel: Kernel) -> Option<Cost> {
    let c = |flops, mem, mem_cached| {
        Some(Cost {
            flops,
            mem,
            mem_cached,
        })
    };
    match kernel {
        Kernel::Spmv => c(32.0, 12.0, 6.0),
        Kernel::Tridiag => c(22.0, 12.0, 9.0),
        // The step from zero's first half-sweep and the line solve on its own: the paper's
        // kernel for that step (its Smooth from zero, M⁻¹ f), whatever part of the columns a
        // backend solves.
        Kernel::Smooth | Kernel::LineSolve | Kernel::LineSolveColor => c(37.0, 17.0, 8.0),
        // Half a sweep: the paper's Smooth on half the columns.
        Kernel::SmoothColor => c(18.5, 8.5, 4.0),
        // The half-sweep, then u ← u + z on the whole level (read z, u; write u). In mixed
        // precision only: values of the fp32 level, the fp64 u counting two each.
        Kernel::SmoothColorCorrect => c(19.5, 13.5, 9.0),
        Kernel::RestrictSmooth => c(17.0, 12.0, 6.0),
        // The paper's Residual on the four children, then its RestrictSmooth.
        Kernel::ResidualRestrictSmooth | Kernel::ResidualRestrictSolveColor => {
            c(4.0 * 23.0 + 17.0, 4.0 * 9.0 + 12.0, 4.0 * 3.0 + 6.0)
        }
        Kernel::Residual | Kernel::ResidualNorm => c(23.0, 9.0, 3.0),
        Kernel::Prolongate => c(6.0, 5.0, 3.0),
        Kernel::Vector | Kernel::Halo => None,
    }
}

/// Values the host backends' fused kernels actually move per cell (neighbours and the a, b, c, d
/// vectors cached; the per-column coefficients, 6 values per column, not counted). These differ
/// from the paper's Mem^(C) where the kernels fuse more: Smooth is one out-of-place pass (read f,
/// u_in; write u_out) instead of two kernels that store the Thomas intermediates, and Tridiag
/// keeps the Thomas intermediates in cache. Other backends report their own counts through
/// [`Probes::moved_values`].
pub fn host_moved_values(kernel: Kernel) -> Option<f64> {
    match kernel {
        Kernel::Spmv => Some(7.0),    // read z, u, p, q; write u, p, q
        Kernel::Tridiag => Some(4.0), // read q, r; write r, z
        Kernel::Smooth => Some(3.0),  // read f, u_in; write u_out
        // The line solve (read r; write z); the colour's, the trait's default: on every column.
        Kernel::LineSolve | Kernel::LineSolveColor => Some(2.0),
        Kernel::SmoothColor => Some(1.5), // half the columns: read f, u; write u
        // The half-sweep, then read z, u; write u (fp32 values, the fp64 u two each).
        Kernel::SmoothColorCorrect => Some(6.5),
        Kernel::RestrictSmooth => Some(6.0), // per coarse cell: read 4 children; write f, u
        // The residual of the four children stored, then RestrictSmooth (4 × 3 + 6).
        Kernel::ResidualRestrictSmooth | Kernel::ResidualRestrictSolveColor => Some(18.0),
        Kernel::Residual => Some(3.0),     // read f, u; write r
        Kernel::ResidualNorm => Some(3.0), // stored into the work field, as Residual
        Kernel::Prolongate => Some(2.25),  // read u_f and a quarter u_c; write u_f
        Kernel::Vector | Kernel::Halo => None,
    }
}

/// Coefficient values the host backends read per cell on a level with per-cell coefficients:
/// the face fields fx, fy, fz and β (4; 7 with the advection faces), once for each pass that
/// builds rows ([`crate::stencil::LevelStencil::row`]) — twice in Smooth (the residual and the
/// line solve).
pub fn host_coefficient_values(kernel: Kernel, symmetric: bool) -> Option<f64> {
    let per_pass = if symmetric { 4.0 } else { 7.0 };
    match kernel {
        Kernel::Spmv
        | Kernel::Tridiag
        | Kernel::Residual
        | Kernel::ResidualNorm
        | Kernel::RestrictSmooth
        | Kernel::LineSolve
        | Kernel::LineSolveColor => Some(per_pass),
        // Per coarse cell: the fine level's residual on four children, the coarse line solve.
        Kernel::ResidualRestrictSmooth | Kernel::ResidualRestrictSolveColor => Some(5.0 * per_pass),
        Kernel::Smooth => Some(2.0 * per_pass),
        Kernel::SmoothColor | Kernel::SmoothColorCorrect => Some(per_pass),
        Kernel::Prolongate => Some(0.0),
        Kernel::Vector | Kernel::Halo => None,
    }
}

/// GFLOP/s and useful bandwidth (GB/s, from Mem^(C)) of `cells` cells at `seconds` per iteration.
pub fn rates(cost: Cost, cells: f64, seconds: f64) -> (f64, f64) {
    (
        cost.flops * cells / seconds / 1e9,
        cost.mem_cached * 8.0 * cells / seconds / 1e9,
    )
}
