//! Every CUDA kernel compiles with NVRTC for sm_80 and sm_90 (no GPU needed: the test command
//! installs the NVRTC library from the `nvidia-cuda-nvrtc` wheel).

use strata::precision::Storage;
use strata_cuda::kernels::{build_options, compile_ptx, nvrtc_available, Build, Kernel};

#[test]
fn kernels_compile_for_ampere_and_hopper() {
    assert!(
        nvrtc_available(),
        "libnvrtc.so.13 not found: run scripts/test (it installs the nvidia-cuda-nvrtc wheel and \
         sets LD_LIBRARY_PATH)"
    );
    for arch in ["compute_80", "compute_90"] {
        // The paper's nz, an odd nz that leaves a partial checkpoint chunk, and the smallest;
        // fields in fp64 and in fp32 (the multigrid of a mixed-precision solve); 64-bit and
        // 32-bit offsets (the build of small levels); the line kernels with the forward sweep
        // in shared memory (all levels, some, none) or checkpointed; with orography's slant
        // couplings (-DSLANT) or without.
        for (nz, storage, narrow, smem, slant) in [
            (128, Storage::F64, false, 0, false),
            (37, Storage::F64, false, 37, true),
            (2, Storage::F64, false, 0, false),
            (128, Storage::F32, false, 128, false),
            (128, Storage::F32, false, 0, true),
            (128, Storage::F32, false, 48, false),
            (37, Storage::F32, false, 10, false),
            (128, Storage::F64, true, 0, true),
            (2, Storage::F64, true, 2, false),
            (128, Storage::F32, true, 32, true),
        ] {
            let build = Build {
                nz,
                storage,
                narrow,
                slant,
            };
            let ptx = compile_ptx(nz, arch, &build_options(build, smem, &[]))
                .unwrap_or_else(|e| panic!("{arch}, {build:?}, smem {smem}: {e}"))
                .to_src();
            let target = arch.replace("compute", "sm");
            assert!(
                ptx.contains(&format!(".target {target}")),
                "{arch}: no .target line"
            );
            for name in Kernel::ALL.map(Kernel::name) {
                assert!(
                    ptx.contains(&format!(".entry {name}(")),
                    "{arch}, nz = {nz}, {storage:?}: no kernel {name}"
                );
            }
        }
    }
}

#[test]
fn compile_errors_carry_the_nvrtc_log() {
    assert!(
        nvrtc_available(),
        "libnvrtc.so.13 not found: run scripts/test"
    );
    // nz = 1 trips the kernels' own #error, which must reach the caller.
    let e = compile_ptx(1, "compute_90", &[]).unwrap_err().to_string();
    assert!(
        e.contains("NVRTC failed") && e.contains("NZ must be at least 2"),
        "{e}"
    );
}

/// The second compile of the same kernels comes from the disk cache (a file named by the
/// options), and a different nz is another file.
#[test]
fn compiled_kernels_are_cached_on_disk() {
    use strata_cuda::kernels::cached_ptx_in;
    let dir = std::env::temp_dir().join(format!("strata-ptx-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = cached_ptx_in(Some(&dir), 16, "compute_90", &[])
        .unwrap()
        .to_src();
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "one cache file");
    let t = std::time::Instant::now();
    let second = cached_ptx_in(Some(&dir), 16, "compute_90", &[])
        .unwrap()
        .to_src();
    println!("cached load: {:?}", t.elapsed());
    assert_eq!(first, second);
    cached_ptx_in(Some(&dir), 17, "compute_90", &[]).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
