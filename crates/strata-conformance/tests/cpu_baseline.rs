//! The conformance suite on the CPU backend with its kernels on the target's baseline
//! instructions (`Isa::Baseline`), the path a CPU without AVX2 takes; `cpu.rs` runs the widest
//! this CPU has.

strata_conformance::conformance_tests!(strata::backend::cpu::CpuBackend::with_isa(
    Some(3),
    strata::backend::cpu::Isa::Baseline
)
.unwrap());
strata_conformance::cell_coefficient_tests!(strata::backend::cpu::CpuBackend::with_isa(
    Some(3),
    strata::backend::cpu::Isa::Baseline
)
.unwrap());
