//! The kernel conformance suite (strata-conformance) on the CUDA backend. It needs an NVIDIA
//! GPU, so the tests are ignored by default; `scripts/gpu-check` runs them with `--ignored`.

strata_conformance::conformance_tests!(
    strata_cuda::CudaBackend::new(0).expect("a CUDA device"),
    #[ignore = "needs an NVIDIA GPU"]
);

strata_conformance::cell_coefficient_tests!(
    strata_cuda::CudaBackend::new(0).expect("a CUDA device"),
    #[ignore = "needs an NVIDIA GPU"]
);
