//! Command-line options shared by `solve` and `bench`.

use clap::{Args, ValueEnum};
use strata::problem::{Geometry, Grading, ProblemParams, SphereStencil};
use strata::solver::{MgParams, SolverKind};

/// Horizontal geometry (command-line form).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GeometryArg {
    /// One gnomonic panel of the cubed sphere.
    Panel,
    /// The flat box `[0,1]² × [0,H]`.
    Box,
    /// The whole cubed sphere: six panels of n × n columns, no lateral boundary.
    Sphere,
}

/// Solver (command-line form).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SolverArg {
    /// CG preconditioned by vertical line relaxation (fused kernels).
    Cg,
    /// Tensor-product multigrid, V(1,1) cycles.
    Mg,
    /// Flexible CG preconditioned by one multigrid V-cycle.
    MgCg,
    /// Restarted GCR(k) for non-symmetric operators, preconditioned as --pc says.
    Gcr,
    /// BiCGStab for non-symmetric operators, preconditioned as --pc says.
    Bicgstab,
}

/// Preconditioner of gcr and bicgstab (command-line form).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PcArg {
    /// One vertical line relaxation (M⁻¹).
    Line,
    /// One multigrid V(1,1) cycle.
    Mg,
}

impl From<PcArg> for strata::solver::Preconditioner {
    fn from(p: PcArg) -> Self {
        match p {
            PcArg::Line => Self::Line,
            PcArg::Mg => Self::Multigrid,
        }
    }
}

impl From<SolverArg> for SolverKind {
    fn from(s: SolverArg) -> Self {
        match s {
            SolverArg::Cg => SolverKind::Cg,
            SolverArg::Mg => SolverKind::Mg,
            SolverArg::MgCg => SolverKind::MgCg,
            SolverArg::Gcr => SolverKind::Gcr,
            SolverArg::Bicgstab => SolverKind::BiCgStab,
        }
    }
}

/// Backend (command-line form).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum BackendArg {
    /// The GPU when one is usable, else the CPU (saying why on stderr).
    Auto,
    /// Multithreaded CPU backend.
    Cpu,
    /// NVIDIA GPU (CUDA 13 driver and NVRTC, loaded at run time).
    Cuda,
    /// Serial, unfused reference backend (slow; for checking).
    Reference,
}

/// The physical problem.
#[derive(Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Horizontal geometry.
    #[arg(long, value_enum, default_value = "panel")]
    pub geometry: GeometryArg,
    /// Vertical cells per column.
    #[arg(long, default_value_t = 128)]
    pub nz: usize,
    /// Vertical Courant number ν_CFL (dimensionless); ω = ν h / 2 with h = 2/n (panel) or 1/n
    /// (box).
    #[arg(long, default_value_t = 8.4)]
    pub cfl: f64,
    /// Vertical anisotropy factor λ (dimensionless).
    #[arg(long, default_value_t = 1.0)]
    pub lambda: f64,
    /// Height of the atmosphere H, in Earth radii on the panel (0.01 ≈ 64 km), absolute on the
    /// box.
    #[arg(long, default_value_t = 0.01)]
    pub height: f64,
    /// Coefficient δ of the zero-order term (1 in the model problem, 0 for Poisson).
    #[arg(long, default_value_t = 1.0)]
    pub delta: f64,
    /// Graded vertical grid, faces at (k/nz)² (refined near the ground); uniform otherwise.
    #[arg(long)]
    pub graded: bool,
    /// The horizontal stencil on the sphere: nine-point (consistent, second order) or
    /// two-point (the paper's fluxes, not consistent: its error stalls near 2e-3).
    #[arg(long, value_enum, default_value = "nine-point")]
    pub sphere_stencil: SphereStencilArg,
}

/// The sphere's horizontal stencil (command-line form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SphereStencilArg {
    /// Conormal fluxes with the cross terms (docs/MODEL.md §16.1).
    NinePoint,
    /// The paper's two-point fluxes (§16.2).
    TwoPoint,
}

impl ProblemArgs {
    /// The problem at horizontal size n.
    pub fn params(&self, n: usize) -> ProblemParams {
        ProblemParams {
            geometry: match self.geometry {
                GeometryArg::Panel => Geometry::Panel,
                GeometryArg::Box => Geometry::Box,
                GeometryArg::Sphere => Geometry::Sphere,
            },
            n,
            nz: self.nz,
            cfl: self.cfl,
            lambda: self.lambda,
            height: self.height,
            delta: self.delta,
            grading: if self.graded {
                Grading::Graded
            } else {
                Grading::Uniform
            },
            omega: None,
            coefficients: None,
            sphere_stencil: match self.sphere_stencil {
                SphereStencilArg::NinePoint => SphereStencil::NinePoint,
                SphereStencilArg::TwoPoint => SphereStencil::TwoPoint,
            },
        }
    }
}

/// Multigrid options.
#[derive(Args, Debug, Clone)]
pub struct MgArgs {
    /// Multigrid levels L (n must be divisible by 2^(L−1)); used by mg and mg-cg.
    #[arg(long, default_value_t = 5)]
    pub levels: usize,
    /// Smoother iterations on the coarsest level (the paper: 2 up to ν = 16.8, 30 at ν = 84,
    /// 150 at ν = 840 with 5 levels).
    #[arg(long, default_value_t = 2)]
    pub coarse_steps: usize,
    /// Smoother of the V-cycle: the paper's block-Jacobi line relaxation (damped by 2/3), or
    /// red-black line Gauss–Seidel (fewer cycles; symmetric, so mg-cg may use it).
    #[arg(long, value_enum, default_value = "jacobi")]
    pub smoother: SmootherArg,
    /// Damping ρ of the block-Jacobi smoother, in (0, 2) (the paper's 2/3; red-black does not
    /// use it).
    #[arg(long, default_value_t = 2.0 / 3.0)]
    pub rho: f64,
    /// Over-relaxation weight of the red-black smoother, in (0, 2), in the cycles of mg, gcr
    /// and bicgstab (mg-cg's symmetric cycle uses 1; the Jacobi smoother does not use it).
    #[arg(long, default_value_t = strata::solver::DEFAULT_RELAXATION)]
    pub relaxation: f64,
    /// Store the V-cycle's residual before restricting it, and mg's stopping-test residual
    /// (the paper's Residual and RestrictSmooth kernels), instead of computing the first inside
    /// the restriction and only the norm of the second (the default: fewer bytes where the
    /// backend fuses them: the CUDA backend).
    #[arg(long)]
    pub unfused_restriction: bool,
    /// Precision: `f64` everywhere, or `mixed`: the outer Krylov iteration (mg-cg, gcr,
    /// bicgstab; for mg, fp64 defect correction) and its stopping test in fp64, the multigrid
    /// preconditioner's fields stored in fp32 (half the bytes per cycle).
    #[arg(long, value_enum, default_value = "f64")]
    pub precision: PrecisionArg,
}

/// `--precision`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrecisionArg {
    /// fp64 everywhere.
    F64,
    /// fp64 outer iteration, fp32 multigrid.
    Mixed,
}

impl From<PrecisionArg> for strata::solver::Precision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::F64 => strata::solver::Precision::F64,
            PrecisionArg::Mixed => strata::solver::Precision::Mixed,
        }
    }
}

/// `--smoother`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmootherArg {
    /// Block-Jacobi line relaxation (the paper's).
    Jacobi,
    /// Red-black line Gauss–Seidel.
    RedBlack,
}

impl MgArgs {
    /// The multigrid parameters.
    pub fn params(&self) -> MgParams {
        MgParams {
            n_levels: self.levels,
            coarse_steps: self.coarse_steps,
            rho: self.rho,
            relaxation: self.relaxation,
            fuse_restriction: !self.unfused_restriction,
            smoother: match self.smoother {
                SmootherArg::Jacobi => strata::solver::Smoother::Jacobi,
                SmootherArg::RedBlack => strata::solver::Smoother::RedBlack,
            },
            ..Default::default()
        }
    }
}

/// Where to run.
#[derive(Args, Debug, Clone)]
pub struct BackendArgs {
    /// Compute backend.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendArg,
    /// CPU worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// CUDA device ordinal (default: the rank's local rank modulo the devices, 0 alone).
    #[arg(long)]
    pub device: Option<usize>,
}
