//! The CUDA C kernels (kernels/*.cu), embedded in the binary and compiled by NVRTC at run time,
//! once per process and per number of vertical levels (a compile-time constant of the kernels).

use cudarc::driver::{CudaContext, CudaFunction};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use std::sync::Arc;
use strata::{Result, StrataError};

/// The kernel sources, in the order they are concatenated into one translation unit.
pub const SOURCES: [(&str, &str); 5] = [
    ("common.cuh", include_str!("../kernels/common.cuh")),
    ("vector.cu", include_str!("../kernels/vector.cu")),
    ("stencil.cu", include_str!("../kernels/stencil.cu")),
    ("lines.cu", include_str!("../kernels/lines.cu")),
    ("transfer.cu", include_str!("../kernels/transfer.cu")),
];

/// Names of every kernel (`extern "C"`, suffixed by precision).
pub const KERNELS: [&str; 17] = [
    "fill_f64",
    "copy_f64",
    "axpy_f64",
    "xpby_f64",
    "dot_f64",
    "reduce_f64",
    "update_f64",
    "apply_f64",
    "residual_f64",
    "cg_spmv_f64",
    "prolongate_f64",
    "line_solve_f64",
    "cg_tridiag_f64",
    "smooth_f64",
    "restrict_smooth_f64",
    "to_device_f64",
    "to_host_f64",
];

/// Halo-face kernels (used by communicators).
pub const FACE_KERNELS: [&str; 2] = ["pack_face_f64", "unpack_face_f64"];

/// The NVRTC virtual architecture for a compute capability, e.g. `compute_90`.
pub fn arch_for(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (8, 0) => "compute_80",
        (8, 6) => "compute_86",
        (8, 7) => "compute_87",
        (8, 9) => "compute_89",
        (9, 0) => "compute_90",
        (10, 0) => "compute_100",
        (12, 0) => "compute_120",
        // One string per process and device kind: leaking it is the price of NVRTC's
        // `&'static str` option.
        _ => Box::leak(format!("compute_{major}{minor}").into_boxed_str()),
    }
}

/// Whether the NVRTC library can be loaded.
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the library; no symbol is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles all kernels for `nz` levels per column to PTX for `arch` (e.g. `compute_90`); the
/// error carries NVRTC's log.
pub fn compile_ptx(nz: usize, arch: &'static str) -> Result<cudarc::nvrtc::Ptx> {
    if !nvrtc_available() {
        return Err(backend_err(
            "the NVRTC library (libnvrtc.so.13) was not found; install CUDA 13 or the \
             nvidia-cuda-nvrtc wheel and put its lib directory on LD_LIBRARY_PATH",
        ));
    }
    let src: String = SOURCES
        .iter()
        .map(|(name, text)| format!("// ---- {name}\n{text}\n"))
        .collect();
    let mut options = vec![format!("-DNZ={nz}"), "--std=c++17".into()];
    // Tuning knobs for experiments (e.g. "-DKCH=8 -DFWD_UNROLL=4"), documented in README.md.
    if let Ok(extra) = std::env::var("STRATA_CUDA_OPTIONS") {
        options.extend(extra.split_whitespace().map(String::from));
    }
    let opts = CompileOptions {
        arch: Some(arch),
        options,
        name: Some("strata.cu".into()),
        ..Default::default()
    };
    compile_ptx_with_opts(src, opts).map_err(|e| match e {
        CompileError::CompileError { log, options, .. } => backend_err(format!(
            "NVRTC failed to compile the kernels (options {options:?}):\n{}",
            log.to_string_lossy()
        )),
        other => backend_err(format!("NVRTC: {other:?}")),
    })
}

/// The loaded kernels of one module (one nz).
pub struct Kernels {
    fns: Vec<(&'static str, CudaFunction)>,
}

impl Kernels {
    /// Compiles for `nz` and loads every kernel into `ctx`.
    pub fn load(ctx: &Arc<CudaContext>, nz: usize, arch: &'static str) -> Result<Self> {
        let ptx = compile_ptx(nz, arch)?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| backend_err(format!("loading the compiled kernels: {e}")))?;
        let fns = KERNELS
            .iter()
            .chain(FACE_KERNELS.iter())
            .map(|&name| {
                module
                    .load_function(name)
                    .map(|f| (name, f))
                    .map_err(|e| backend_err(format!("kernel {name}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { fns })
    }

    /// The kernel called `name`.
    pub fn get(&self, name: &str) -> &CudaFunction {
        &self
            .fns
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("kernel {name} is not in KERNELS"))
            .1
    }
}

/// A backend error of the CUDA backend.
pub fn backend_err(msg: impl Into<String>) -> StrataError {
    StrataError::Backend {
        backend: "cuda".into(),
        msg: msg.into(),
    }
}
