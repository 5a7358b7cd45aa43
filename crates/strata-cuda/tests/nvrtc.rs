//! Every CUDA kernel compiles with NVRTC for sm_80 and sm_90 (no GPU needed: the test command
//! installs the NVRTC library from the `nvidia-cuda-nvrtc` wheel).

use strata_cuda::kernels::{compile_ptx, nvrtc_available, Kernel};

#[test]
fn kernels_compile_for_ampere_and_hopper() {
    assert!(
        nvrtc_available(),
        "libnvrtc.so.13 not found: run scripts/test (it installs the nvidia-cuda-nvrtc wheel and \
         sets LD_LIBRARY_PATH)"
    );
    for arch in ["compute_80", "compute_90"] {
        // The paper's nz, an odd nz that leaves a partial checkpoint chunk, and the smallest.
        for nz in [128, 37, 2] {
            let ptx = compile_ptx(nz, arch, &[])
                .unwrap_or_else(|e| panic!("{arch}, nz = {nz}: {e}"))
                .to_src();
            let target = arch.replace("compute", "sm");
            assert!(
                ptx.contains(&format!(".target {target}")),
                "{arch}: no .target line"
            );
            for name in Kernel::ALL.map(Kernel::name) {
                assert!(
                    ptx.contains(&format!(".entry {name}(")),
                    "{arch}, nz = {nz}: no kernel {name}"
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
