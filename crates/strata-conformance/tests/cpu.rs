//! The conformance suite on the CPU backend (three threads, so that rows are split unevenly).

strata_conformance::conformance_tests!(strata::backend::cpu::CpuBackend::new(Some(3)).unwrap());
strata_conformance::cell_coefficient_tests!(strata::backend::cpu::CpuBackend::new(Some(3)).unwrap());
