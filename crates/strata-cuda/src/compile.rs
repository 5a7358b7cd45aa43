//! NVRTC compilation of the kernel sources, to PTX or to a cubin, and the options of each build.
//! Shared by the build script (which compiles the cubins shipped in the binary, build.rs) and the
//! run-time path (kernels.rs): one definition of what a build is compiled with, so a shipped
//! cubin is the one run-time compilation would give. Uses only `std` and cudarc's NVRTC
//! bindings (the build script has nothing else).

use std::ffi::{c_char, CStr, CString};

/// The kernel sources, in the order they are concatenated into one translation unit.
pub const SOURCES: [(&str, &str); 6] = [
    ("common.cuh", include_str!("../kernels/common.cuh")),
    ("vector.cu", include_str!("../kernels/vector.cu")),
    ("stencil.cu", include_str!("../kernels/stencil.cu")),
    ("lines.cu", include_str!("../kernels/lines.cu")),
    ("transfer.cu", include_str!("../kernels/transfer.cu")),
    (
        "coefficients.cu",
        include_str!("../kernels/coefficients.cu"),
    ),
];

/// The one translation unit: every source, each after a line naming it.
pub fn translation_unit() -> String {
    SOURCES
        .iter()
        .map(|(name, text)| format!("// ---- {name}\n{text}\n"))
        .collect()
}

/// Threads per block of the column kernels.
pub const BLOCK_THREADS: u32 = 128;

/// Default bytes of shared memory per block for the line kernels' forward sweep
/// (`Tuning::thomas_smem` in kernels.rs, which documents the measurement behind it).
pub const THOMAS_SMEM: usize = 16 * 1024;

/// The most dynamic shared memory a block may ask for on the GPUs this backend targets
/// (compute capability 8.0 and 9.0: 163 KiB and 227 KiB).
pub const MAX_BLOCK_SMEM: usize = 163 * 1024;

/// The NVRTC option of the kernel build with 32-bit offsets into fields (kernels/common.cuh).
pub const NARROW_OPTION: &str = "-DIDX32";

/// The NVRTC option of the kernels for the colour-split field layout (strata_cuda::layout), the
/// default: the builds shipped in the binary carry it.
pub const SPLIT_OPTION: &str = "-DXSPLIT";

/// The NVRTC option of the build with orography's slant couplings (kernels/common.cuh).
pub const SLANT_OPTION: &str = "-DSLANT";

/// The NVRTC option of the build whose line relaxations take the sphere's diagonal couplings
/// (the nine-point levels, kernels/common.cuh).
pub const DIAGONALS_OPTION: &str = "-DDIAGONALS";

/// The levels (from the top of each column) whose forward-sweep values the line kernels of a
/// build for `nz` levels of `value_bytes`-byte values keep in shared memory (`-DTHOMAS_SMEM`),
/// and the bytes per block that takes: as many as fit in `cap` at [`BLOCK_THREADS`] columns per
/// block, at most nz; (0, 0) where none do, and for the fp64 build (8-byte values: measured no
/// faster at 2048², and it changed the rounding of line-preconditioned solves whose iteration
/// counts are sensitive to it).
pub fn thomas_levels(nz: usize, value_bytes: usize, cap: usize) -> (usize, u32) {
    if value_bytes == 8 {
        return (0, 0);
    }
    let per_level = BLOCK_THREADS as usize * value_bytes;
    let levels = (cap.min(MAX_BLOCK_SMEM) / per_level).min(nz);
    (levels, (levels * per_level) as u32)
}

/// The NVRTC options of a build (its nz aside, which [`compile`] defines): `extra`, then
/// `-DTHOMAS_SMEM=<levels>` where `thomas_levels` > 0, for fp32 values (`single`)
/// `-DREAL=float --use_fast_math` (fp32 division and reciprocal to 2 ulp, denormals flushed:
/// the preconditioner's Thomas chain of divisions was what bounded the fp32 Smooth; the fp64
/// kernels are not affected by the flag; docs/PERFORMANCE.md), [`NARROW_OPTION`] for 32-bit
/// offsets, [`SLANT_OPTION`] for slant couplings and [`DIAGONALS_OPTION`] for diagonal ones.
pub fn options(
    single: bool,
    narrow: bool,
    (slant, diagonals): (bool, bool),
    thomas_levels: usize,
    extra: &[String],
) -> Vec<String> {
    let mut all = extra.to_vec();
    if thomas_levels > 0 {
        all.push(format!("-DTHOMAS_SMEM={thomas_levels}"));
    }
    if single {
        all.push("-DREAL=float".into());
        all.push("--use_fast_math".into());
    }
    if narrow {
        all.push(NARROW_OPTION.into());
    }
    if slant {
        all.push(SLANT_OPTION.into());
    }
    if diagonals {
        all.push(DIAGONALS_OPTION.into());
    }
    all
}

/// What NVRTC compiles to: PTX for a virtual architecture (`compute_90`), which the driver
/// translates for any GPU of that capability or newer, or a cubin for one real architecture
/// (`sm_90`), which the driver loads as it is on GPUs of that major capability and at least
/// that minor one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// PTX for `compute_<cc>`.
    Ptx(u32),
    /// A cubin for `sm_<cc>`.
    Cubin(u32),
}

impl Target {
    /// The NVRTC architecture option.
    pub fn arch_option(self) -> String {
        match self {
            Target::Ptx(cc) => format!("--gpu-architecture=compute_{cc}"),
            Target::Cubin(cc) => format!("--gpu-architecture=sm_{cc}"),
        }
    }

    /// Whether the driver loads this target on a GPU of compute capability `major.minor`.
    pub fn runs_on(self, major: u32, minor: u32) -> bool {
        let cc = major * 10 + minor;
        match self {
            Target::Ptx(t) => cc >= t,
            Target::Cubin(t) => major == t / 10 && minor >= t % 10,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Ptx(cc) => write!(f, "compute_{cc} PTX"),
            Target::Cubin(cc) => write!(f, "sm_{cc} cubin"),
        }
    }
}

/// Compiles all kernels for `nz` levels per column to `target` with the NVRTC `options`
/// (`-DNZ` and the architecture are added here): the PTX text (without its final NUL) or the
/// cubin. The error is NVRTC's log. The caller checks first that NVRTC can be loaded
/// (cudarc's `is_culib_present`): its functions abort the process otherwise.
pub fn compile(nz: usize, target: Target, options: &[String]) -> Result<Vec<u8>, String> {
    let mut all = vec![format!("-DNZ={nz}")];
    all.extend(options.iter().cloned());
    compile_unit(&translation_unit(), c"strata.cu", target, &all)
}

/// The source of the device-side stopping test (kernels/loop.cu): a translation unit of its
/// own, compiled to PTX only ([`LOOP_TARGET`]).
pub const LOOP_SOURCE: &str = include_str!("../kernels/loop.cu");

/// What the stopping test is compiled to: PTX, which the driver links with the device runtime's
/// `cudaGraphSetConditional` when it loads it (a cubin would need that library linked by the
/// build), for the oldest architecture the backend runs on.
pub const LOOP_TARGET: Target = Target::Ptx(80);

/// The PTX of the device-side stopping test ([`LOOP_SOURCE`]); the error is NVRTC's log. The
/// caller checks first that NVRTC can be loaded, as for [`compile`].
pub fn compile_loop() -> Result<Vec<u8>, String> {
    compile_unit(LOOP_SOURCE, c"loop.cu", LOOP_TARGET, &[])
}

/// Compiles the source `text` (named `name` in NVRTC's messages) to `target` with `options`
/// (`--std=c++17` and the architecture are added here).
fn compile_unit(
    text: &str,
    name: &CStr,
    target: Target,
    options: &[String],
) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::result;
    let src = CString::new(text).map_err(|e| e.to_string())?;
    let prog = result::create_program(&src, Some(name)).map_err(|e| format!("{e:?}"))?;
    let mut all = vec!["--std=c++17".into(), target.arch_option()];
    all.extend(options.iter().cloned());
    // SAFETY: `prog` was just created and is destroyed once, below; `src` and `name` outlive it.
    let out = unsafe {
        match result::compile_program(prog, &all) {
            Ok(()) => match target {
                Target::Ptx(_) => result::get_ptx(prog)
                    .map(|p| p.into_iter().map(|c| c as u8).collect::<Vec<u8>>())
                    .map_err(|e| format!("{e:?}")),
                Target::Cubin(_) => cubin(prog),
            },
            Err(e) => {
                let log = result::get_program_log(prog)
                    .map(|l| nul_terminated(&l))
                    .unwrap_or_default();
                Err(format!("{e:?} (options {all:?}):\n{log}"))
            }
        }
    };
    // SAFETY: created above and not destroyed before.
    let _ = unsafe { result::destroy_program(prog) };
    let mut out = out?;
    if matches!(target, Target::Ptx(_)) {
        while out.last() == Some(&0) {
            out.pop();
        }
    }
    Ok(out)
}

/// NVRTC's version (major, minor), or `None` where it does not answer. The caller checks first
/// that NVRTC can be loaded, as for [`compile`].
pub fn nvrtc_version() -> Option<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid out-pointers for the call's duration; the library is loaded (the
    // caller's check).
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .ok()
        .map(|()| (major, minor))
}

/// The cubin of a compiled program.
///
/// # Safety
/// `prog` must be a live program compiled for a real architecture.
unsafe fn cubin(prog: cudarc::nvrtc::sys::nvrtcProgram) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::sys;
    let mut size = 0usize;
    // SAFETY: `prog` is live (the caller's contract); `size` is a valid out-pointer.
    unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }
        .result()
        .map_err(|e| format!("{e:?}"))?;
    let mut bytes = vec![0u8; size];
    // SAFETY: `bytes` holds the `size` bytes NVRTC reported.
    unsafe { sys::nvrtcGetCUBIN(prog, bytes.as_mut_ptr().cast::<c_char>()) }
        .result()
        .map_err(|e| format!("{e:?}"))?;
    if bytes.is_empty() {
        return Err("NVRTC gave an empty cubin".into());
    }
    Ok(bytes)
}

/// A NUL-terminated C string from NVRTC as text.
fn nul_terminated(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned())
}
