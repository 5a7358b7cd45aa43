//! The CUDA C kernels (kernels/*.cu): shipped built in the binary where the build found NVRTC
//! (cubins for sm_80 and sm_90 and PTX for newer GPUs, for the builds of [`SHIPPED_NZ`]:
//! build.rs), else compiled by NVRTC at run time, once per process and [`Build`] (the number of
//! vertical levels is a compile-time constant of the kernels), with a disk cache.

use crate::compile::{self, Target};
use cudarc::driver::{CudaContext, CudaFunction};
use std::sync::Arc;
use strata::precision::Storage;
use strata::{Result, StrataError};

pub use crate::compile::{
    BLOCK_THREADS, DIAGONALS_OPTION, NARROW_OPTION, SLANT_OPTION, SOURCES, THOMAS_SMEM,
};

/// The kernel images compiled by build.rs: `SHIPPED` (one per build and target) and
/// `SHIPPED_NZ` (the levels per column they were built for).
mod shipped {
    include!(concat!(env!("OUT_DIR"), "/shipped.rs"));
}
pub use shipped::{SHIPPED, SHIPPED_LOOP, SHIPPED_NOTE, SHIPPED_NZ};

/// One kernel image built into the binary by build.rs.
#[derive(Debug)]
pub struct Shipped {
    /// What it was compiled to.
    pub target: Target,
    /// The levels per column.
    pub nz: usize,
    /// fp32 fields.
    pub single: bool,
    /// 32-bit offsets.
    pub narrow: bool,
    /// Slant couplings.
    pub slant: bool,
    /// Diagonal couplings in the relaxations.
    pub diagonals: bool,
    /// The NVRTC options it was compiled with (besides nz and the architecture).
    pub options: &'static [&'static str],
    /// The PTX text or the cubin, deflate-compressed.
    pub packed: &'static [u8],
}

impl Shipped {
    /// The image: the PTX text or the cubin.
    pub fn image(&self) -> Result<Vec<u8>> {
        miniz_oxide::inflate::decompress_to_vec(self.packed)
            .map_err(|e| backend_err(format!("a built-in kernel image is damaged: {e:?}")))
    }
}

/// The image built into the binary for `build` compiled with `options`, that a GPU of compute
/// capability `major.minor` loads: its cubin for that architecture (sm_90; sm_80 for 8.x), else
/// PTX the driver translates (GPUs newer than the cubins); `None` where none was built (another
/// nz, other options, or no NVRTC when this binary was built).
pub fn shipped(
    build: Build,
    options: &[String],
    major: u32,
    minor: u32,
) -> Option<&'static Shipped> {
    let fits = |s: &&Shipped| {
        s.nz == build.nz
            && s.single == (build.storage == Storage::F32)
            && s.narrow == build.narrow
            && s.slant == build.slant
            && s.diagonals == build.diagonals
            && s.options.len() == options.len()
            && s.options.iter().zip(options).all(|(a, b)| a == b)
            && s.target.runs_on(major, minor)
    };
    let found = shipped::SHIPPED.iter().filter(fits);
    // A cubin before PTX.
    found.min_by_key(|s| matches!(s.target, Target::Ptx(_)))
}

/// A kernel of the CUDA C sources, as a typed handle: the backend names kernels by this enum,
/// so a kernel that does not exist is a compile error, and [`Kernels::load`] finds every one in
/// the compiled module or fails with the missing name (candle names its kernels likewise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `fill_f64` (vector.cu).
    Fill,
    /// `copy_f64` (vector.cu).
    Copy,
    /// `axpy_f64` (vector.cu).
    Axpy,
    /// `xpby_f64` (vector.cu).
    Xpby,
    /// `dot_f64` (vector.cu).
    Dot,
    /// `reduce_f64` (vector.cu).
    Reduce,
    /// `update_f64` (vector.cu).
    Update,
    /// `apply_f64` (stencil.cu).
    Apply,
    /// `residual_f64` (stencil.cu).
    Residual,
    /// `cg_spmv_f64` (stencil.cu).
    CgSpmv,
    /// `prolongate_f64` (stencil.cu).
    Prolongate,
    /// `line_solve_f64` (lines.cu).
    LineSolve,
    /// `cg_tridiag_f64` (lines.cu).
    CgTridiag,
    /// `smooth_f64` (lines.cu).
    Smooth,
    /// `restrict_smooth_f64` (lines.cu).
    RestrictSmooth,
    /// `apply_cells_f64` (stencil.cu): [`Kernel::Apply`] for per-cell coefficients.
    ApplyCells,
    /// `residual_cells_f64` (stencil.cu): [`Kernel::Residual`] for per-cell coefficients.
    ResidualCells,
    /// `cg_spmv_cells_f64` (stencil.cu): [`Kernel::CgSpmv`] for per-cell coefficients.
    CgSpmvCells,
    /// `line_solve_cells_f64` (lines.cu): [`Kernel::LineSolve`] for per-cell coefficients.
    LineSolveCells,
    /// `cg_tridiag_cells_f64` (lines.cu): [`Kernel::CgTridiag`] for per-cell coefficients.
    CgTridiagCells,
    /// `smooth_cells_f64` (lines.cu): [`Kernel::Smooth`] for per-cell coefficients.
    SmoothCells,
    /// `restrict_smooth_cells_f64` (lines.cu): [`Kernel::RestrictSmooth`] for per-cell coefficients.
    RestrictSmoothCells,
    /// `smooth_color_f64` (lines.cu).
    SmoothColor,
    /// `smooth_color_cells_f64` (lines.cu).
    SmoothColorCells,
    /// `to_device_f64` (transfer.cu).
    ToDevice,
    /// `to_host_f64` (transfer.cu).
    ToHost,
    /// `gather_f64` (transfer.cu).
    Gather,
    /// `scatter_f64` (transfer.cu).
    Scatter,
    /// `pack_face_f64` (transfer.cu).
    PackFace,
    /// `unpack_face_f64` (transfer.cu).
    UnpackFace,
    /// `copy_halo_f64` (transfer.cu).
    CopyHalo,
    /// `pack_column_f64` (transfer.cu): one column (a tile's corner) into a buffer.
    PackColumn,
    /// `unpack_column_f64` (transfer.cu).
    UnpackColumn,
    /// `copy_column_f64` (transfer.cu): one column between two blocks, with no buffer.
    CopyColumn,
    /// `reverse_face_f64` (transfer.cu).
    ReverseFace,
    /// `copy_halos_f64` (transfer.cu).
    CopyHalos,
    /// `pack_halo_f64` (transfer.cu): a rank's faces and corner columns into their buffers, in
    /// one launch.
    PackHalo,
    /// `unpack_halo_f64` (transfer.cu).
    UnpackHalo,
    /// `widen_f64` (vector.cu): a whole field of this build's storage to fp64.
    Widen,
    /// `narrow_f64` (vector.cu): a whole fp64 field to this build's storage.
    Narrow,
    /// `smooth_pcr_f64` (lines.cu): [`Kernel::Smooth`] by parallel cyclic reduction, for coarse
    /// levels.
    SmoothPcr,
    /// `smooth_pcr_cells_f64` (lines.cu).
    SmoothPcrCells,
    /// `restrict_smooth_pcr_f64` (lines.cu): [`Kernel::RestrictSmooth`] by PCR.
    RestrictSmoothPcr,
    /// `restrict_smooth_pcr_cells_f64` (lines.cu).
    RestrictSmoothPcrCells,
    /// `smooth_color_pcr_f64` (lines.cu): [`Kernel::SmoothColor`] by PCR.
    SmoothColorPcr,
    /// `smooth_color_pcr_cells_f64` (lines.cu).
    SmoothColorPcrCells,
    /// `axpy_norm_f64` (vector.cu).
    AxpyNorm,
    /// `dot_pair_f64` (vector.cu).
    DotPair,
    /// `scalar_ops_f64` (vector.cu): the solver's scalar arithmetic on its slots.
    ScalarOps,
    /// `residual_to_f32_f64` (stencil.cu): [`Kernel::Residual`] into an fp32 field.
    ResidualToF32,
    /// `residual_to_f32_cells_f64` (stencil.cu).
    ResidualToF32Cells,
    /// `axpy_from_f32_f64` (vector.cu): [`Kernel::Axpy`] of an fp32 field into this build's.
    AxpyFromF32,
    /// `residual_restrict_f64` (stencil.cu): the fine residual restricted to the coarse
    /// right-hand side without being stored.
    ResidualRestrict,
    /// `residual_restrict_cells_f64` (stencil.cu).
    ResidualRestrictCells,
    /// `residual_norm_f64` (stencil.cu): ‖f − A u‖² without storing the residual.
    ResidualNorm,
    /// `residual_norm_cells_f64` (stencil.cu).
    ResidualNormCells,
    /// `coef_check_f64` (coefficients.cu): the first bad value of a coefficient field.
    CoefCheck,
    /// `coef_coarsen_f64` (coefficients.cu): a coefficient field on the next coarser level.
    CoefCoarsen,
    /// `cell_entries_f64` (coefficients.cu): a level's per-cell entries from coefficient fields
    /// on the device.
    CellEntries,
    /// `line_solve_twin_f64` (lines.cu): [`Kernel::LineSolve`] with two threads per column
    /// (`thomas_twin`), for levels of few columns ([`Tuning::twin_threads`]).
    LineSolveTwin,
    /// `line_solve_twin_cells_f64` (lines.cu).
    LineSolveTwinCells,
    /// `cg_tridiag_twin_f64` (lines.cu): [`Kernel::CgTridiag`] with two threads per column.
    CgTridiagTwin,
    /// `cg_tridiag_twin_cells_f64` (lines.cu).
    CgTridiagTwinCells,
    /// `smooth_twin_f64` (lines.cu): [`Kernel::Smooth`] with two threads per column.
    SmoothTwin,
    /// `smooth_twin_cells_f64` (lines.cu).
    SmoothTwinCells,
    /// `smooth_color_twin_f64` (lines.cu): [`Kernel::SmoothColor`] with two threads per column.
    SmoothColorTwin,
    /// `smooth_color_twin_cells_f64` (lines.cu).
    SmoothColorTwinCells,
    /// `prolongate_faces_f64` (stencil.cu): [`Kernel::Prolongate`] on halo faces.
    ProlongateFaces,
    /// `restrict_smooth_twin_f64` (lines.cu): [`Kernel::RestrictSmooth`] with two threads per
    /// column.
    RestrictSmoothTwin,
    /// `restrict_smooth_twin_cells_f64` (lines.cu).
    RestrictSmoothTwinCells,
    /// `line_solve_pcr_f64` (lines.cu): [`Kernel::LineSolve`] by PCR, for coarse levels.
    LineSolvePcr,
    /// `line_solve_pcr_cells_f64` (lines.cu).
    LineSolvePcrCells,
    /// `residual_restrict_smooth_pcr_f64` (lines.cu): the fine residual restricted and the
    /// coarse level's first smoothing step by PCR in one kernel (the model problem's columns).
    ResidualRestrictSmoothPcr,
    /// `line_solve_split_f64` (lines.cu): [`Kernel::LineSolve`] with [`split_segments`]
    /// threads per column (`thomas_split`), for the levels [`Tuning::split_columns`] selects.
    LineSolveSplit,
    /// `line_solve_split_cells_f64` (lines.cu).
    LineSolveSplitCells,
    /// `smooth_color_split_f64` (lines.cu): [`Kernel::SmoothColor`] with [`split_segments`]
    /// threads per column.
    SmoothColorSplit,
    /// `smooth_color_split_cells_f64` (lines.cu).
    SmoothColorSplitCells,
    /// `smooth_split_f64` (lines.cu): [`Kernel::Smooth`] with [`split_segments`] threads per
    /// column.
    SmoothSplit,
    /// `smooth_split_cells_f64` (lines.cu).
    SmoothSplitCells,
    /// `restrict_smooth_split_f64` (lines.cu): [`Kernel::RestrictSmooth`] with
    /// [`split_segments`] threads per column.
    RestrictSmoothSplit,
    /// `restrict_smooth_split_cells_f64` (lines.cu).
    RestrictSmoothSplitCells,
    /// `smooth_color_correct_split_f64` (lines.cu): [`Kernel::SmoothColorSplit`] whose new
    /// values are added into the fp64 outer iterate with the other colour's
    /// ([`strata::backend::LineKernels::smooth_color_correct`]).
    SmoothColorCorrectSplit,
    /// `smooth_color_correct_split_cells_f64` (lines.cu).
    SmoothColorCorrectSplitCells,
    /// `line_solve_color_split_f64` (lines.cu): [`Kernel::LineSolveSplit`] on one colour's
    /// columns ([`strata::backend::LineKernels::line_solve_color`]).
    LineSolveColorSplit,
    /// `line_solve_color_split_cells_f64` (lines.cu).
    LineSolveColorSplitCells,
    /// `smooth_color_after_split_f64` (lines.cu): the half-sweep T⁻¹ (f − w H u) on one
    /// colour's columns ([`strata::backend::LineKernels::smooth_color_after_solve`]).
    SmoothColorAfterSplit,
    /// `smooth_color_after_split_cells_f64` (lines.cu).
    SmoothColorAfterSplitCells,
}

impl Kernel {
    /// The kernels that solve columns by the Thomas algorithm (kernels/lines.cu: thomas()),
    /// launched with [`Kernels::line_smem`] bytes of shared memory.
    pub const LINES: [Kernel; 10] = [
        Kernel::LineSolve,
        Kernel::LineSolveCells,
        Kernel::CgTridiag,
        Kernel::CgTridiagCells,
        Kernel::Smooth,
        Kernel::SmoothCells,
        Kernel::SmoothColor,
        Kernel::SmoothColorCells,
        Kernel::RestrictSmooth,
        Kernel::RestrictSmoothCells,
    ];

    /// The form of a line kernel with two threads per column (`thomas_twin`, kernels/common.cuh),
    /// for the levels [`Tuning::twin_threads`] selects; `None` for the other kernels.
    pub const fn twin(self) -> Option<Kernel> {
        Some(match self {
            Kernel::LineSolve => Kernel::LineSolveTwin,
            Kernel::LineSolveCells => Kernel::LineSolveTwinCells,
            Kernel::CgTridiag => Kernel::CgTridiagTwin,
            Kernel::CgTridiagCells => Kernel::CgTridiagTwinCells,
            Kernel::Smooth => Kernel::SmoothTwin,
            Kernel::SmoothCells => Kernel::SmoothTwinCells,
            Kernel::SmoothColor => Kernel::SmoothColorTwin,
            Kernel::SmoothColorCells => Kernel::SmoothColorTwinCells,
            Kernel::RestrictSmooth => Kernel::RestrictSmoothTwin,
            Kernel::RestrictSmoothCells => Kernel::RestrictSmoothTwinCells,
            _ => return None,
        })
    }

    /// The form of a line kernel with [`split_segments`] threads per column (`thomas_split`,
    /// kernels/common.cuh), for the levels [`Tuning::split_columns`] selects; `None` for the
    /// kernels that have none.
    pub const fn split(self) -> Option<Kernel> {
        Some(match self {
            Kernel::LineSolve => Kernel::LineSolveSplit,
            Kernel::LineSolveCells => Kernel::LineSolveSplitCells,
            Kernel::SmoothColor => Kernel::SmoothColorSplit,
            Kernel::SmoothColorCells => Kernel::SmoothColorSplitCells,
            Kernel::Smooth => Kernel::SmoothSplit,
            Kernel::SmoothCells => Kernel::SmoothSplitCells,
            Kernel::RestrictSmooth => Kernel::RestrictSmoothSplit,
            Kernel::RestrictSmoothCells => Kernel::RestrictSmoothSplitCells,
            _ => return None,
        })
    }

    /// Every kernel, in the order of [`Kernels`]' table.
    pub const ALL: [Kernel; 87] = [
        Kernel::Fill,
        Kernel::Copy,
        Kernel::Axpy,
        Kernel::Xpby,
        Kernel::Dot,
        Kernel::Reduce,
        Kernel::Update,
        Kernel::Apply,
        Kernel::Residual,
        Kernel::CgSpmv,
        Kernel::Prolongate,
        Kernel::LineSolve,
        Kernel::CgTridiag,
        Kernel::Smooth,
        Kernel::RestrictSmooth,
        Kernel::ApplyCells,
        Kernel::ResidualCells,
        Kernel::CgSpmvCells,
        Kernel::LineSolveCells,
        Kernel::CgTridiagCells,
        Kernel::SmoothCells,
        Kernel::RestrictSmoothCells,
        Kernel::SmoothColor,
        Kernel::SmoothColorCells,
        Kernel::ToDevice,
        Kernel::ToHost,
        Kernel::Gather,
        Kernel::Scatter,
        Kernel::PackFace,
        Kernel::UnpackFace,
        Kernel::CopyHalo,
        Kernel::PackColumn,
        Kernel::UnpackColumn,
        Kernel::CopyColumn,
        Kernel::ReverseFace,
        Kernel::CopyHalos,
        Kernel::PackHalo,
        Kernel::UnpackHalo,
        Kernel::Widen,
        Kernel::Narrow,
        Kernel::SmoothPcr,
        Kernel::SmoothPcrCells,
        Kernel::RestrictSmoothPcr,
        Kernel::RestrictSmoothPcrCells,
        Kernel::SmoothColorPcr,
        Kernel::SmoothColorPcrCells,
        Kernel::AxpyNorm,
        Kernel::DotPair,
        Kernel::ScalarOps,
        Kernel::ResidualToF32,
        Kernel::ResidualToF32Cells,
        Kernel::AxpyFromF32,
        Kernel::ResidualRestrict,
        Kernel::ResidualRestrictCells,
        Kernel::ResidualNorm,
        Kernel::ResidualNormCells,
        Kernel::CoefCheck,
        Kernel::CoefCoarsen,
        Kernel::CellEntries,
        Kernel::LineSolveTwin,
        Kernel::LineSolveTwinCells,
        Kernel::CgTridiagTwin,
        Kernel::CgTridiagTwinCells,
        Kernel::SmoothTwin,
        Kernel::SmoothTwinCells,
        Kernel::SmoothColorTwin,
        Kernel::SmoothColorTwinCells,
        Kernel::ProlongateFaces,
        Kernel::RestrictSmoothTwin,
        Kernel::RestrictSmoothTwinCells,
        Kernel::LineSolvePcr,
        Kernel::LineSolvePcrCells,
        Kernel::ResidualRestrictSmoothPcr,
        Kernel::LineSolveSplit,
        Kernel::LineSolveSplitCells,
        Kernel::SmoothColorSplit,
        Kernel::SmoothColorSplitCells,
        Kernel::SmoothSplit,
        Kernel::SmoothSplitCells,
        Kernel::RestrictSmoothSplit,
        Kernel::RestrictSmoothSplitCells,
        Kernel::SmoothColorCorrectSplit,
        Kernel::SmoothColorCorrectSplitCells,
        Kernel::LineSolveColorSplit,
        Kernel::LineSolveColorSplitCells,
        Kernel::SmoothColorAfterSplit,
        Kernel::SmoothColorAfterSplitCells,
    ];

    /// The kernel's `extern "C"` name: the fp64 build's, `_f64`, which the fp32 build
    /// (`-DREAL=float`, [`build_options`]) keeps.
    pub const fn name(self) -> &'static str {
        match self {
            Kernel::Fill => "fill_f64",
            Kernel::Copy => "copy_f64",
            Kernel::Axpy => "axpy_f64",
            Kernel::Xpby => "xpby_f64",
            Kernel::Dot => "dot_f64",
            Kernel::Reduce => "reduce_f64",
            Kernel::Update => "update_f64",
            Kernel::Apply => "apply_f64",
            Kernel::Residual => "residual_f64",
            Kernel::CgSpmv => "cg_spmv_f64",
            Kernel::Prolongate => "prolongate_f64",
            Kernel::LineSolve => "line_solve_f64",
            Kernel::CgTridiag => "cg_tridiag_f64",
            Kernel::Smooth => "smooth_f64",
            Kernel::RestrictSmooth => "restrict_smooth_f64",
            Kernel::ApplyCells => "apply_cells_f64",
            Kernel::ResidualCells => "residual_cells_f64",
            Kernel::CgSpmvCells => "cg_spmv_cells_f64",
            Kernel::LineSolveCells => "line_solve_cells_f64",
            Kernel::CgTridiagCells => "cg_tridiag_cells_f64",
            Kernel::SmoothCells => "smooth_cells_f64",
            Kernel::RestrictSmoothCells => "restrict_smooth_cells_f64",
            Kernel::SmoothColor => "smooth_color_f64",
            Kernel::SmoothColorCells => "smooth_color_cells_f64",
            Kernel::ToDevice => "to_device_f64",
            Kernel::ToHost => "to_host_f64",
            Kernel::Gather => "gather_f64",
            Kernel::Scatter => "scatter_f64",
            Kernel::PackFace => "pack_face_f64",
            Kernel::UnpackFace => "unpack_face_f64",
            Kernel::CopyHalo => "copy_halo_f64",
            Kernel::PackColumn => "pack_column_f64",
            Kernel::UnpackColumn => "unpack_column_f64",
            Kernel::CopyColumn => "copy_column_f64",
            Kernel::ReverseFace => "reverse_face_f64",
            Kernel::CopyHalos => "copy_halos_f64",
            Kernel::PackHalo => "pack_halo_f64",
            Kernel::UnpackHalo => "unpack_halo_f64",
            Kernel::Widen => "widen_f64",
            Kernel::Narrow => "narrow_f64",
            Kernel::SmoothPcr => "smooth_pcr_f64",
            Kernel::SmoothPcrCells => "smooth_pcr_cells_f64",
            Kernel::RestrictSmoothPcr => "restrict_smooth_pcr_f64",
            Kernel::RestrictSmoothPcrCells => "restrict_smooth_pcr_cells_f64",
            Kernel::SmoothColorPcr => "smooth_color_pcr_f64",
            Kernel::SmoothColorPcrCells => "smooth_color_pcr_cells_f64",
            Kernel::AxpyNorm => "axpy_norm_f64",
            Kernel::DotPair => "dot_pair_f64",
            Kernel::ScalarOps => "scalar_ops_f64",
            Kernel::ResidualToF32 => "residual_to_f32_f64",
            Kernel::ResidualToF32Cells => "residual_to_f32_cells_f64",
            Kernel::AxpyFromF32 => "axpy_from_f32_f64",
            Kernel::ResidualRestrict => "residual_restrict_f64",
            Kernel::ResidualRestrictCells => "residual_restrict_cells_f64",
            Kernel::ResidualNorm => "residual_norm_f64",
            Kernel::ResidualNormCells => "residual_norm_cells_f64",
            Kernel::CoefCheck => "coef_check_f64",
            Kernel::CoefCoarsen => "coef_coarsen_f64",
            Kernel::CellEntries => "cell_entries_f64",
            Kernel::LineSolveTwin => "line_solve_twin_f64",
            Kernel::LineSolveTwinCells => "line_solve_twin_cells_f64",
            Kernel::CgTridiagTwin => "cg_tridiag_twin_f64",
            Kernel::CgTridiagTwinCells => "cg_tridiag_twin_cells_f64",
            Kernel::SmoothTwin => "smooth_twin_f64",
            Kernel::SmoothTwinCells => "smooth_twin_cells_f64",
            Kernel::SmoothColorTwin => "smooth_color_twin_f64",
            Kernel::SmoothColorTwinCells => "smooth_color_twin_cells_f64",
            Kernel::ProlongateFaces => "prolongate_faces_f64",
            Kernel::RestrictSmoothTwin => "restrict_smooth_twin_f64",
            Kernel::RestrictSmoothTwinCells => "restrict_smooth_twin_cells_f64",
            Kernel::LineSolvePcr => "line_solve_pcr_f64",
            Kernel::LineSolvePcrCells => "line_solve_pcr_cells_f64",
            Kernel::ResidualRestrictSmoothPcr => "residual_restrict_smooth_pcr_f64",
            Kernel::LineSolveSplit => "line_solve_split_f64",
            Kernel::LineSolveSplitCells => "line_solve_split_cells_f64",
            Kernel::SmoothColorSplit => "smooth_color_split_f64",
            Kernel::SmoothColorSplitCells => "smooth_color_split_cells_f64",
            Kernel::SmoothSplit => "smooth_split_f64",
            Kernel::SmoothSplitCells => "smooth_split_cells_f64",
            Kernel::RestrictSmoothSplit => "restrict_smooth_split_f64",
            Kernel::RestrictSmoothSplitCells => "restrict_smooth_split_cells_f64",
            Kernel::SmoothColorCorrectSplit => "smooth_color_correct_split_f64",
            Kernel::SmoothColorCorrectSplitCells => "smooth_color_correct_split_cells_f64",
            Kernel::LineSolveColorSplit => "line_solve_color_split_f64",
            Kernel::LineSolveColorSplitCells => "line_solve_color_split_cells_f64",
            Kernel::SmoothColorAfterSplit => "smooth_color_after_split_f64",
            Kernel::SmoothColorAfterSplitCells => "smooth_color_after_split_cells_f64",
        }
    }

    /// The source file that defines it.
    pub const fn source(self) -> &'static str {
        match self {
            Kernel::Fill => "vector.cu",
            Kernel::Copy => "vector.cu",
            Kernel::Axpy => "vector.cu",
            Kernel::Xpby => "vector.cu",
            Kernel::Dot => "vector.cu",
            Kernel::Reduce => "vector.cu",
            Kernel::Update => "vector.cu",
            Kernel::Apply => "stencil.cu",
            Kernel::Residual => "stencil.cu",
            Kernel::CgSpmv => "stencil.cu",
            Kernel::Prolongate => "stencil.cu",
            Kernel::LineSolve => "lines.cu",
            Kernel::CgTridiag => "lines.cu",
            Kernel::Smooth => "lines.cu",
            Kernel::RestrictSmooth => "lines.cu",
            Kernel::ApplyCells => "stencil.cu",
            Kernel::ResidualCells => "stencil.cu",
            Kernel::CgSpmvCells => "stencil.cu",
            Kernel::LineSolveCells => "lines.cu",
            Kernel::CgTridiagCells => "lines.cu",
            Kernel::SmoothCells => "lines.cu",
            Kernel::RestrictSmoothCells => "lines.cu",
            Kernel::SmoothColor => "lines.cu",
            Kernel::SmoothColorCells => "lines.cu",
            Kernel::ToDevice => "transfer.cu",
            Kernel::ToHost => "transfer.cu",
            Kernel::Gather => "transfer.cu",
            Kernel::Scatter => "transfer.cu",
            Kernel::PackFace => "transfer.cu",
            Kernel::UnpackFace => "transfer.cu",
            Kernel::CopyHalo => "transfer.cu",
            Kernel::PackColumn | Kernel::UnpackColumn | Kernel::CopyColumn => "transfer.cu",
            Kernel::ReverseFace => "transfer.cu",
            Kernel::CopyHalos | Kernel::PackHalo | Kernel::UnpackHalo => "transfer.cu",
            Kernel::Widen => "vector.cu",
            Kernel::Narrow => "vector.cu",
            Kernel::LineSolveTwin
            | Kernel::LineSolveTwinCells
            | Kernel::CgTridiagTwin
            | Kernel::CgTridiagTwinCells
            | Kernel::SmoothTwin
            | Kernel::SmoothTwinCells
            | Kernel::SmoothColorTwin
            | Kernel::SmoothColorTwinCells
            | Kernel::RestrictSmoothTwin
            | Kernel::RestrictSmoothTwinCells => "lines.cu",
            Kernel::SmoothPcr
            | Kernel::SmoothPcrCells
            | Kernel::RestrictSmoothPcr
            | Kernel::RestrictSmoothPcrCells
            | Kernel::SmoothColorPcr
            | Kernel::SmoothColorPcrCells
            | Kernel::LineSolvePcr
            | Kernel::LineSolvePcrCells
            | Kernel::ResidualRestrictSmoothPcr
            | Kernel::LineSolveSplit
            | Kernel::LineSolveSplitCells
            | Kernel::SmoothColorSplit
            | Kernel::SmoothColorSplitCells
            | Kernel::SmoothSplit
            | Kernel::SmoothSplitCells
            | Kernel::RestrictSmoothSplit
            | Kernel::RestrictSmoothSplitCells
            | Kernel::SmoothColorCorrectSplit
            | Kernel::SmoothColorCorrectSplitCells
            | Kernel::LineSolveColorSplit
            | Kernel::LineSolveColorSplitCells
            | Kernel::SmoothColorAfterSplit
            | Kernel::SmoothColorAfterSplitCells => "lines.cu",
            Kernel::AxpyNorm | Kernel::DotPair | Kernel::ScalarOps | Kernel::AxpyFromF32 => {
                "vector.cu"
            }
            Kernel::ResidualToF32 | Kernel::ResidualToF32Cells => "stencil.cu",
            Kernel::ResidualRestrict | Kernel::ResidualRestrictCells => "stencil.cu",
            Kernel::ResidualNorm | Kernel::ResidualNormCells => "stencil.cu",
            Kernel::CoefCheck | Kernel::CoefCoarsen | Kernel::CellEntries => "coefficients.cu",
            Kernel::ProlongateFaces => "stencil.cu",
        }
    }
}

/// Options of the kernel build, read from the environment once, when a backend is created
/// ([`Tuning::from_env`]: a value a variable does not take is an error naming it):
/// `STRATA_CUDA_OPTIONS` (NVRTC defines for experiments, e.g. `-DKCH=8 -DSMOOTH_STORE_RHS`; see
/// kernels/common.cuh), `STRATA_CUDA_BLOCK_X` (the block width of the column kernels, a
/// power of two from 8 to 128; 64 by default), `STRATA_CUDA_PCR_COLUMNS` (levels with fewer
/// columns than this run Smooth and RestrictSmooth by parallel cyclic reduction, one thread per
/// cell; 0 never; [`PCR_COLUMNS`] by default; `STRATA_CUDA_PCR_BY_BLOCK=1` compares it with a
/// rank's block instead of the whole level: [`Tuning::pcr_by_block`]) and `STRATA_CUDA_TILE_STREAMS` (tiles of at most
/// this many columns run their multigrid kernels concurrently; 0 never;
/// [`TILE_STREAMS_COLUMNS`] by default) and `STRATA_CUDA_NARROW_VALUES` (levels whose fields
/// hold fewer values than this use the kernels with 32-bit offsets; 0 never; at most
/// [`NARROW_VALUES`], or [`NARROW_FINEST_VALUES`] on a finest level, and by default those) and `STRATA_CUDA_GRAPHS` (0: run the multigrid preconditioner's
/// kernels one launch at a time instead of replaying a CUDA graph of them) and
/// `STRATA_CUDA_LOOPS` (1: [`Tuning::loops`], a solver's iterations on the device; by default
/// the host runs them and reads each one's residual) and `STRATA_CUDA_SEGMENT_THREADS` ([`Tuning::segment_threads`]; 0 never) and
/// `STRATA_CUDA_THOMAS_SMEM` ([`Tuning::thomas_smem`], bytes; 0 never) and
/// `STRATA_CUDA_FUSE_F32` (0: not [`Tuning::fuse_f32`]) and `STRATA_CUDA_FUSED_PCR_COLUMNS`
/// ([`Tuning::fused_pcr_columns`]; 0 never) and `STRATA_CUDA_TWIN_THREADS`
/// ([`Tuning::twin_threads`]; 0 never) and `STRATA_CUDA_SPLIT_COLUMNS`
/// ([`Tuning::split_columns`]; 0 never) and `STRATA_CUDA_FUSE_CORRECTION` (0: neither
/// [`Tuning::fuse_correction`] nor [`Tuning::fuse_correction_cells`]; `columns`: the first
/// only; 1, the default: both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuning {
    /// Extra NVRTC options.
    pub options: Vec<String>,
    /// Block width of the column kernels.
    pub block_x: u32,
    /// Levels with fewer columns than this smooth by PCR (where nz ≤ 1024).
    pub pcr_columns: usize,
    /// Whether [`Tuning::pcr_columns`] is compared with a block's own columns (a rank's part of
    /// the level: faster on the small blocks of strong scaling, but then the answer depends on
    /// the decomposition, PCR and the Thomas sweep rounding differently) rather than with the
    /// level's whole panel or box (the default: the same answer bit for bit on any number of
    /// ranks).
    pub pcr_by_block: bool,
    /// The tiles of a tiled level (the sphere's panels or blocks) with at most this many columns
    /// each run their multigrid kernels concurrently, one stream per tile (0: never).
    pub tile_streams_columns: usize,
    /// Levels whose fields hold fewer values than this (at most [`NARROW_VALUES`], or
    /// [`NARROW_FINEST_VALUES`] on a finest level) use the kernel build with 32-bit offsets
    /// (`-DIDX32`); 0: never.
    pub narrow_values: usize,
    /// Whether work that solvers mark as repeated ([`strata::backend::Fields::replay`]: the
    /// V-cycle of a preconditioner) is recorded once as a CUDA graph and replayed.
    pub graphs: bool,
    /// Whether a solver's whole iteration (mixed mg's cycles and their stopping test) runs on
    /// the device as one CUDA graph whose WHILE node repeats it until the test, evaluated on
    /// the device, says stop ([`strata::backend::ScalarKernels::iterate_on_device`]): the host
    /// launches once per solve and reads the residuals at the end. Needs [`Tuning::graphs`].
    /// Off by default: the same iterates, but measured 0.5–3 % slower per iteration than the
    /// host's loop at 64²–512² × 128 on one H200 (docs/PERFORMANCE.md, the latency regime):
    /// the host's launches and reads were already hidden behind the GPU's work.
    pub loops: bool,
    /// Residual and Prolongate cut each column into segments, one thread each, where a level
    /// has at most half this many columns, for at most this many threads in all
    /// ([`segments`]); 0: never.
    pub segment_threads: usize,
    /// Bytes of shared memory per block in which the line kernels keep the forward-sweep values
    /// of the top levels of each column ([`thomas_smem_bytes`]), so that the backward sweep
    /// does not read those levels' inputs again; 0: none (it recomputes them all).
    pub thomas_smem: usize,
    /// Whether fp32 levels also compute the V-cycle's residual inside the restriction
    /// (`residual_restrict_smooth`), as fp64 levels do. On by default: with the kernel's
    /// grouped loads, mixed red-black mg at 2816² × 128 on one H200 took 0.2345 s fused against
    /// 0.2385 s (docs/PERFORMANCE.md, the work of 2026-11-24 (c019126)).
    pub fuse_f32: bool,
    /// PCR levels of at most this many columns take the fine residual, its restriction and
    /// their first smoothing step in one kernel (`residual_restrict_smooth_pcr`, the model
    /// problem's columns) instead of two; 0: never ([`FUSED_PCR_COLUMNS`]).
    pub fused_pcr_columns: usize,
    /// The line kernels (Smooth, RestrictSmooth, the line solve, CG's Tridiag, the red-black
    /// half-sweep) of a launch that
    /// would have fewer than this many threads with one per column run two threads per column
    /// instead (`thomas_twin`, kernels/common.cuh); PCR levels are not affected; 0: never.
    pub twin_threads: usize,
    /// The line solve, Smooth, RestrictSmooth and the red-black half-sweep of a launch over at
    /// most this many columns run [`split_segments`] threads per column (`thomas_split`, kernels/common.cuh),
    /// where the build's nz allows it; before [`Tuning::twin_threads`]; PCR levels are not
    /// affected; 0: never ([`SPLIT_COLUMNS`]).
    pub split_columns: usize,
    /// Whether mixed-precision defect correction's last half-sweep adds its result into the
    /// fp64 iterate in the same kernel (`smooth_color_correct_split`, where the level runs the
    /// split half-sweep) instead of the half-sweep and then `axpy_from_f32`: the same iterates
    /// bit for bit, 6 B less per unknown and cycle and one kernel fewer. On levels with the
    /// model problem's column coefficients; per-cell levels ask
    /// [`Tuning::fuse_correction_cells`] too.
    pub fuse_correction: bool,
    /// [`Tuning::fuse_correction`] on levels with per-cell coefficients as well
    /// (`smooth_color_correct_split_cells`). On by default since its launch bound
    /// (`CORRECT_MINB`, kernels/common.cuh): at 2048² × 128 with the smooth fields of contrast
    /// 10 the fused kernel took 4.23 ms per cycle where the half-sweep and `axpy_from_f32` took
    /// 5.25 (5.62 before the bound; one H200, 2026-11-29, docs/results/performance-log.md); the
    /// same iterates either way.
    pub fuse_correction_cells: bool,
}

/// The levels per segment of the line kernels with several threads per column
/// (`SPLIT_M`, kernels/common.cuh; [`Tuning::split_levels`]).
pub const SPLIT_LEVELS: usize = 16;

/// The threads per column of the split line kernels (`thomas_split`) for columns of `nz`
/// levels in segments of `levels`: one per segment where `nz` is a multiple of `levels` (at
/// least 3) and at least twice it, else `None` (the kernels then stay unused).
pub fn split_segments(nz: usize, levels: usize) -> Option<u32> {
    (levels >= 3 && nz.is_multiple_of(levels) && nz >= 2 * levels).then(|| (nz / levels) as u32)
}

/// Default of [`Tuning::split_columns`].
pub const SPLIT_COLUMNS: usize = usize::MAX;

/// The levels (from the top of each column) whose forward-sweep values the line kernels of a
/// build for `nz` levels stored in `storage` keep in shared memory (`-DTHOMAS_SMEM`,
/// kernels/common.cuh), and the bytes per block that takes ([`compile::thomas_levels`]).
/// The default cap, [`THOMAS_SMEM`] = 16 KiB, holds the top 32 levels of a column of the fp32
/// build. Measured on one H200 (docs/PERFORMANCE.md): −1.2 … −3 % per iteration for mixed mg and
/// mg-cg at 512² and 2816² × 128, within ±1.6 % elsewhere; from 24 KiB the line kernels are
/// slower (the L1 that shared memory takes costs the neighbour loads more than the second reads
/// it saves), and with the whole column (64 KiB at nz = 128) 1.2–1.6× slower (three blocks per
/// SM hide too little latency).
pub fn thomas_smem_bytes(nz: usize, storage: Storage, cap: usize) -> (usize, u32) {
    compile::thomas_levels(nz, storage.bytes(), cap)
}

/// Default of [`Tuning::segment_threads`].
pub const SEGMENT_THREADS: usize = 1 << 18;

/// Segments per column for a level of `columns` columns of `nz` cells: the largest power of two
/// `s` with `columns × s ≤ threads` and at least 8 levels per segment (1: whole columns).
pub fn segments(columns: usize, nz: usize, threads: usize) -> u32 {
    let mut s = 1usize;
    while columns * s * 2 <= threads && nz / (s * 2) >= 8 {
        s *= 2;
    }
    s as u32
}

/// The bound on a field (in values, halo and padding included) below which its level uses
/// 32-bit offsets: 2^28, so that every offset its kernels form stays below 2^31 — into the
/// finer level's field too, which the restriction reads with the coarse level's kernels (less
/// than four times as large), and a neighbouring tile's. Offsets into a caller's arrays are
/// 64-bit in both builds.
pub const NARROW_VALUES: usize = 1 << 28;

/// The bound of [`NARROW_VALUES`] on a finest level, whose kernels read no finer level's field:
/// 2^30, so that its own offsets stay below 2^31 with room to spare (a 2816² × 128 panel's
/// fields hold 1.04e9 values). Its fp64 outer residual then holds 64 registers per thread
/// where the 64-bit build holds 80 (ptxas; 37.5 % occupancy against 50 %), the per-cell one 80
/// where it holds 128 (docs/results/performance-log.md, 2026-11-27).
pub const NARROW_FINEST_VALUES: usize = 1 << 30;

/// Default of [`Tuning::tile_streams_columns`]: a tile of 256 × 256 columns (512 blocks) does
/// not fill an H100 or H200 alone.
pub const TILE_STREAMS_COLUMNS: usize = 65536;

/// Default of [`Tuning::pcr_columns`]: 2^14, so that 64² levels (and smaller) use PCR and 128²
/// levels the split Thomas solve ([`Tuning::split_columns`]). Measured on one H200 with the
/// split kernels (docs/results/2026-11-27-split-columns.txt, two rounds of 2^15, 2^14 and 2^12):
/// mixed mg per cycle at 128² × 128 0.32–0.33 ms with 2^15 (128² by PCR), 0.25–0.26 with 2^14,
/// 0.29 with 2^12 (64² levels split too); 256² 0.61–0.62 / 0.58 / 0.61; 64² within noise.
/// (Before the split kernels, 2^15: a 128² level by PCR beat one or two Thomas threads per
/// column, the work of 2026-11-24 (c019126).)
pub const PCR_COLUMNS: usize = 1 << 14;

/// Default of [`Tuning::twin_threads`]: 2^17, so that the line kernels of 256² levels (one
/// thread per column: 0.4–0.5 waves on an H200) and the red-black half-sweeps of levels up to
/// 362² run two threads per column (docs/PERFORMANCE.md, the work of 2026-11-25 (b48a0b0)).
pub const TWIN_THREADS: usize = 1 << 17;

/// Default of [`Tuning::fused_pcr_columns`]: 2^10, coarse levels up to 32² columns. Measured on
/// one H200 (docs/results/2026-11-27-small-kernels.txt, mg per cycle at 64²–512² × 128, two
/// rounds of 0, 2^10, 2^12 and 2^14): 2^10 the fastest or within noise of it at every size
/// (128² −3.5 %, 256² −1 %, 512² −0.6 % against never; 64² within its ±5 % noise); 2^14 slower
/// at 256² (+2.6 %): on a 128² level the one kernel takes 105 µs against 80 for the two, its
/// fine residuals computed with four times the loads the residual kernel makes.
pub const FUSED_PCR_COLUMNS: usize = 1 << 10;

/// Default block width of the column kernels (the paper's 64 × 2).
pub const BLOCK_X: u32 = 64;

impl Default for Tuning {
    fn default() -> Self {
        Self {
            options: Vec::new(),
            block_x: BLOCK_X,
            pcr_columns: PCR_COLUMNS,
            pcr_by_block: false,
            tile_streams_columns: TILE_STREAMS_COLUMNS,
            narrow_values: NARROW_FINEST_VALUES,
            graphs: true,
            loops: false,
            segment_threads: SEGMENT_THREADS,
            thomas_smem: THOMAS_SMEM,
            fuse_f32: true,
            fused_pcr_columns: FUSED_PCR_COLUMNS,
            twin_threads: TWIN_THREADS,
            split_columns: SPLIT_COLUMNS,
            fuse_correction: true,
            fuse_correction_cells: true,
        }
    }
}

impl Tuning {
    /// Whether a level whose fields hold `len` values uses 32-bit offsets; `finest`: no finer
    /// level's fields are read with its kernels ([`strata::stencil::LevelStencil::finest`]).
    pub fn narrow(&self, len: usize, finest: bool) -> bool {
        let bound = if finest {
            NARROW_FINEST_VALUES
        } else {
            NARROW_VALUES
        };
        len < self.narrow_values.min(bound)
    }

    /// The levels per segment of the split line kernels: [`SPLIT_LEVELS`], or the build's
    /// `-DSPLIT_M=` option.
    pub fn split_levels(&self) -> usize {
        self.options
            .iter()
            .rev()
            .find_map(|o| o.strip_prefix("-DSPLIT_M=")?.parse().ok())
            .unwrap_or(SPLIT_LEVELS)
    }

    /// Whether Smooth stores its right-hand side (`-DSMOOTH_STORE_RHS`), which changes its traffic.
    pub fn smooth_stores_rhs(&self) -> bool {
        self.options.iter().any(|o| o == "-DSMOOTH_STORE_RHS")
    }
}

/// Whether the NVRTC library can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the library; no symbol is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles all kernels for `nz` levels per column to `target` with the extra NVRTC `options`:
/// the PTX text or the cubin; the error carries NVRTC's log.
pub fn compile_image(nz: usize, target: Target, options: &[String]) -> Result<Vec<u8>> {
    if !nvrtc_available() {
        return Err(backend_err(
            "the NVRTC library (libnvrtc.so.13) was not found, and this binary has no kernels \
             built for this GPU and configuration; install CUDA 13 or the nvidia-cuda-nvrtc \
             wheel and put its lib directory on LD_LIBRARY_PATH",
        ));
    }
    compile::compile(nz, target, options)
        .map_err(|log| backend_err(format!("NVRTC failed to compile the kernels: {log}")))
}

/// Compiles all kernels for `nz` levels per column to PTX for `compute_<cc>` (e.g. 90) with the
/// extra NVRTC `options`; the error carries NVRTC's log.
pub fn compile_ptx(nz: usize, cc: u32, options: &[String]) -> Result<cudarc::nvrtc::Ptx> {
    let text = compile_image(nz, Target::Ptx(cc), options)?;
    String::from_utf8(text)
        .map(cudarc::nvrtc::Ptx::from_src)
        .map_err(|_| backend_err("NVRTC gave PTX that is not text"))
}

/// The device-side stopping test (kernels/loop.cu) loaded into `ctx`: its PTX built into the
/// binary, else compiled by NVRTC now (a fraction of a second: it is one small kernel).
pub fn load_loop_test(ctx: &Arc<CudaContext>) -> Result<CudaFunction> {
    let ptx = match SHIPPED_LOOP {
        Some(p) => p.to_vec(),
        None if nvrtc_available() => compile::compile_loop().map_err(|log| {
            backend_err(format!("NVRTC failed to compile the stopping test: {log}"))
        })?,
        None => {
            return Err(backend_err(
                "no stopping test is built into this binary and NVRTC was not found",
            ))
        }
    };
    let text =
        String::from_utf8(ptx).map_err(|_| backend_err("the stopping test's PTX is not text"))?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(text))
        .map_err(|e| backend_err(format!("loading the stopping test: {e}")))?;
    module
        .load_function("loop_test")
        .map_err(|e| backend_err(format!("the stopping test's kernel: {e}")))
}

/// The folder of the compiled-kernel cache: `STRATA_CACHE_DIR`, else `$XDG_CACHE_HOME/strata`,
/// else `$HOME/.cache/strata`; `None` (no cache) when none is set or `STRATA_CACHE_DIR` is empty.
pub fn cache_dir() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    if let Some(d) = std::env::var_os("STRATA_CACHE_DIR") {
        return (!d.is_empty()).then(|| PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("strata"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join("strata"))
}

/// The cache file of the PTX for these sources, `nz`, `compute_<cc>` and options: named by a hash
/// of all of them and of this crate's version, so a change of any compiles afresh.
fn cache_file(dir: &std::path::Path, nz: usize, cc: u32, options: &[String]) -> std::path::PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (env!("CARGO_PKG_VERSION"), SOURCES, nz, cc, options).hash(&mut h);
    dir.join(format!(
        "kernels-compute_{cc}-nz{nz}-{:016x}.ptx",
        h.finish()
    ))
}

/// The PTX of [`compile_ptx`], from the on-disk cache ([`cache_dir`]) when a previous process
/// compiled it, else compiled by NVRTC and stored there (written beside and renamed: a reader
/// never sees half a file). A cache that cannot be read or written is skipped, not an error.
/// The CUDA driver caches its own translation of the PTX to machine code likewise.
pub fn cached_ptx(nz: usize, cc: u32, options: &[String]) -> Result<cudarc::nvrtc::Ptx> {
    cached_ptx_in(cache_dir().as_deref(), nz, cc, options)
}

/// [`cached_ptx`] with the cache in `dir` (`None`: no cache).
pub fn cached_ptx_in(
    dir: Option<&std::path::Path>,
    nz: usize,
    cc: u32,
    options: &[String],
) -> Result<cudarc::nvrtc::Ptx> {
    let file = dir.map(|d| cache_file(d, nz, cc, options));
    if let Some(text) = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok()) {
        if text.contains(".entry") {
            return Ok(cudarc::nvrtc::Ptx::from_src(text));
        }
    }
    let ptx = compile_ptx(nz, cc, options)?;
    if let Some(f) = file {
        let tmp = f.with_extension(format!("tmp{}", std::process::id()));
        let stored = f
            .parent()
            .map(|d| std::fs::create_dir_all(d).is_ok())
            .unwrap_or(false)
            && std::fs::write(&tmp, ptx.to_src()).is_ok()
            && std::fs::rename(&tmp, &f).is_ok();
        if !stored {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok(ptx)
}

/// Where a loaded module's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Built into the binary (build.rs), for this target.
    Shipped(Target),
    /// Compiled by NVRTC at run time (or read from the disk cache of an earlier compile) to PTX
    /// for `compute_<cc>`.
    Nvrtc(u32),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Shipped(t) => write!(f, "built in ({t})"),
            Origin::Nvrtc(cc) => write!(f, "NVRTC (compute_{cc} PTX)"),
        }
    }
}

/// What one kernel module is built for: the number of vertical levels (a compile-time constant
/// of the kernels), the storage of the fields, 32-bit offsets or not ([`Tuning::narrow`]),
/// orography's slant couplings or not (`-DSLANT`) and the sphere's diagonal couplings in the
/// relaxations or not (`-DDIAGONALS`): only levels with them take those builds, so the other
/// levels' kernels carry no branch they never run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Build {
    /// Cells per column.
    pub nz: usize,
    /// The storage of the fields.
    pub storage: Storage,
    /// 32-bit offsets into fields ([`NARROW_OPTION`]).
    pub narrow: bool,
    /// Orography's slant couplings in the per-cell kernels ([`SLANT_OPTION`]).
    pub slant: bool,
    /// The sphere's diagonal couplings in the line relaxations ([`DIAGONALS_OPTION`]: the
    /// nine-point levels' four-colour sweeps and block-Jacobi steps).
    pub diagonals: bool,
}

impl Build {
    /// The fp64 build for `nz` levels with 64-bit offsets and no slant couplings.
    pub fn f64(nz: usize) -> Self {
        Self {
            nz,
            storage: Storage::F64,
            narrow: false,
            slant: false,
            diagonals: false,
        }
    }

    /// The NVRTC options of this build under `tuning` ([`build_options`] with the shared-memory
    /// levels of [`thomas_smem_bytes`]).
    pub fn options(&self, tuning: &Tuning) -> Vec<String> {
        let (levels, _) = thomas_smem_bytes(self.nz, self.storage, tuning.thomas_smem);
        build_options(*self, levels, &tuning.options)
    }
}

/// The loaded kernels of one module (one [`Build`]), one per [`Kernel`].
pub struct Kernels {
    fns: Vec<CudaFunction>,
    /// Shared memory per block of the line kernels ([`thomas_smem_bytes`]; 0: none).
    line_smem: u32,
    origin: Origin,
}

impl Kernels {
    /// Loads every kernel of `build` under `tuning` into `ctx`, a GPU of compute capability
    /// `major.minor`: the image built into the binary where there is one ([`shipped`]), else
    /// compiled by NVRTC ([`cached_ptx`]).
    pub fn load(
        ctx: &Arc<CudaContext>,
        build: Build,
        (major, minor): (u32, u32),
        tuning: &Tuning,
    ) -> Result<Self> {
        let (_, line_smem) = thomas_smem_bytes(build.nz, build.storage, tuning.thomas_smem);
        let options = build.options(tuning);
        let (ptx, origin) = match shipped(build, &options, major, minor) {
            Some(s) => (
                match s.target {
                    Target::Cubin(_) => cudarc::nvrtc::Ptx::from_binary(s.image()?),
                    Target::Ptx(_) => cudarc::nvrtc::Ptx::from_src(
                        String::from_utf8(s.image()?)
                            .map_err(|_| backend_err("a built-in PTX image is not text"))?,
                    ),
                },
                Origin::Shipped(s.target),
            ),
            None => {
                let cc = major * 10 + minor;
                (cached_ptx(build.nz, cc, &options)?, Origin::Nvrtc(cc))
            }
        };
        let module = ctx
            .load_module(ptx)
            .map_err(|e| backend_err(format!("loading the compiled kernels: {e}")))?;
        let fns = Kernel::ALL
            .iter()
            .map(|k| {
                module
                    .load_function(k.name())
                    .map_err(|e| backend_err(format!("kernel {} of {}: {e}", k.name(), k.source())))
            })
            .collect::<Result<Vec<_>>>()?;
        let k = Self {
            fns,
            line_smem,
            origin,
        };
        if line_smem > 0 {
            // Beyond 48 KiB a kernel must be allowed its dynamic shared memory.
            for &line in &Kernel::LINES {
                k.get(line)
                    .set_attribute(
                        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        line_smem as i32,
                    )
                    .map_err(|e| backend_err(format!("shared memory of {}: {e}", line.name())))?;
            }
        }
        Ok(k)
    }

    /// The loaded kernel `k`.
    pub fn get(&self, k: Kernel) -> &CudaFunction {
        &self.fns[k as usize]
    }

    /// Where the module's machine code came from.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Shared memory per block that the line kernels ([`Kernel::LINES`]) must be launched
    /// with (0: none).
    pub fn line_smem(&self) -> u32 {
        self.line_smem
    }
}

/// The NVRTC options of `build` (its nz aside, which [`compile_ptx`] defines): `options`, and
/// those of [`compile::options`] for its storage, offsets, slant couplings and `thomas_levels`.
pub fn build_options(build: Build, thomas_levels: usize, options: &[String]) -> Vec<String> {
    let mut options = options.to_vec();
    if crate::layout::colour_split().unwrap_or(false) {
        options.push(crate::layout::SPLIT_OPTION.into());
    }
    compile::options(
        build.storage == Storage::F32,
        build.narrow,
        (build.slant, build.diagonals),
        thomas_levels,
        &options,
    )
}

/// A backend error of the CUDA backend.
pub fn backend_err(msg: impl Into<String>) -> StrataError {
    StrataError::Backend {
        backend: "cuda".into(),
        msg: msg.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::{
        segments, split_segments, thomas_smem_bytes, Kernel, Tuning, NARROW_FINEST_VALUES,
        NARROW_VALUES, SEGMENT_THREADS, SPLIT_LEVELS,
    };
    use strata::precision::Storage;

    /// Columns split into segments of 16 levels where nz allows (the kernels' SPLIT_P), with
    /// the build's -DSPLIT_M= taking over.
    #[test]
    fn split_columns_only_where_nz_divides() {
        assert_eq!(split_segments(128, SPLIT_LEVELS), Some(8));
        assert_eq!(split_segments(64, SPLIT_LEVELS), Some(4));
        assert_eq!(split_segments(32, SPLIT_LEVELS), Some(2));
        // One segment, a remainder, or segments too short: none.
        assert_eq!(split_segments(16, SPLIT_LEVELS), None);
        assert_eq!(split_segments(100, SPLIT_LEVELS), None);
        assert_eq!(split_segments(128, 2), None);
        let t = Tuning {
            options: vec!["-DKCH=8".into(), "-DSPLIT_M=8".into()],
            ..Tuning::default()
        };
        assert_eq!(t.split_levels(), 8);
        assert_eq!(split_segments(128, t.split_levels()), Some(16));
        assert_eq!(Tuning::default().split_levels(), SPLIT_LEVELS);
    }

    #[test]
    fn columns_are_cut_into_segments_only_where_few() {
        // 32² columns of 128 levels: 16 segments of 8 levels, 16 384 threads.
        assert_eq!(segments(32 * 32, 128, SEGMENT_THREADS), 16);
        // 128² columns: 2^14 × 16 = 2^18.
        assert_eq!(segments(128 * 128, 128, SEGMENT_THREADS), 16);
        assert_eq!(segments(256 * 256, 128, SEGMENT_THREADS), 4);
        // Wide levels, short columns, and 0 (never) keep whole columns.
        assert_eq!(segments(512 * 512, 128, SEGMENT_THREADS), 1);
        assert_eq!(segments(16 * 16, 8, SEGMENT_THREADS), 1);
        assert_eq!(segments(16 * 16, 20, SEGMENT_THREADS), 2);
        assert_eq!(segments(32 * 32, 128, 0), 1);
    }

    /// 32-bit offsets only below 2^28 values (2^30 on a finest level), whatever the tuning
    /// asks; 0 turns them off.
    #[test]
    fn narrow_offsets_only_for_small_fields() {
        let t = Tuning::default();
        // A 1024² × 128 panel (1026 rows of 128 × 1088 values) is narrow, a 2048² one only as
        // the finest level, a 2816² one (2818 rows of 128 × 2880) too, a 4096² one never.
        assert!(t.narrow(1026 * 128 * 1088, false));
        assert!(!t.narrow(2050 * 128 * 2112, false));
        assert!(t.narrow(2050 * 128 * 2112, true));
        assert!(t.narrow(2818 * 128 * 2880, true));
        assert!(!t.narrow(4098 * 128 * 4160, true));
        assert!(!t.narrow(NARROW_VALUES, false));
        assert!(!t.narrow(NARROW_FINEST_VALUES, true));
        let off = Tuning {
            narrow_values: 0,
            ..Tuning::default()
        };
        assert!(!off.narrow(10, true));
        // The old bound everywhere (STRATA_CUDA_NARROW_VALUES=268435456).
        let old = Tuning {
            narrow_values: NARROW_VALUES,
            ..Tuning::default()
        };
        assert!(!old.narrow(2050 * 128 * 2112, true));
        let wide = Tuning {
            narrow_values: usize::MAX,
            ..Tuning::default()
        };
        assert!(!wide.narrow(NARROW_VALUES, false));
        assert!(!wide.narrow(NARROW_FINEST_VALUES, true));
    }

    /// `Kernels::get` indexes the loaded table by the enum's value: ALL must list the kernels in
    /// declaration order.
    #[test]
    fn all_lists_the_kernels_in_declaration_order() {
        for (i, k) in Kernel::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}");
        }
    }

    #[test]
    fn shared_memory_holds_the_top_levels_that_fit() {
        // 128 threads per block: 512 B per fp32 level.
        assert_eq!(thomas_smem_bytes(128, Storage::F32, 16384), (32, 16384));
        assert_eq!(thomas_smem_bytes(128, Storage::F32, 16000), (31, 31 * 512));
        // Never more levels than the column has, nor more than a block may ask for.
        assert_eq!(thomas_smem_bytes(8, Storage::F32, 65536), (8, 4096));
        assert_eq!(
            thomas_smem_bytes(1024, Storage::F32, 1 << 30),
            (326, 326 * 512)
        );
        // None: no room, or the fp64 build.
        assert_eq!(thomas_smem_bytes(128, Storage::F32, 0), (0, 0));
        assert_eq!(thomas_smem_bytes(128, Storage::F32, 500), (0, 0));
        assert_eq!(thomas_smem_bytes(128, Storage::F64, 65536), (0, 0));
    }
}
