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

/// The suite with no level solved by PCR: the line solve and the red-black half-sweeps of the
/// nz = 128 cases run several threads per column (`thomas_split`, kernels/common.cuh), which
/// is where the last half-sweep and its correction run as one kernel (`Tuning::fuse_correction`).
mod split_columns {
    strata_conformance::conformance_tests!(
        strata_cuda::CudaBackend::with_tuning(0, strata_cuda::kernels::Tuning {
            pcr_columns: 0,
            ..strata_cuda::kernels::Tuning::from_env().expect("the STRATA_CUDA_* tuning")
        })
        .expect("a CUDA device"),
        #[ignore = "needs an NVIDIA GPU"]
    );
}

/// The suite with no level solved by PCR nor split: one or two threads per column (`thomas`,
/// `thomas_twin`).
mod whole_columns {
    strata_conformance::conformance_tests!(
        strata_cuda::CudaBackend::with_tuning(0, strata_cuda::kernels::Tuning {
            pcr_columns: 0,
            split_columns: 0,
            ..strata_cuda::kernels::Tuning::from_env().expect("the STRATA_CUDA_* tuning")
        })
        .expect("a CUDA device"),
        #[ignore = "needs an NVIDIA GPU"]
    );
}
