//! The conformance suite on the reference backend itself: the suite's plumbing (uploads, halos,
//! downloads) must give exact agreement here.

strata_conformance::conformance_tests!(strata::backend::reference::ReferenceBackend);
strata_conformance::cell_coefficient_tests!(strata::backend::reference::ReferenceBackend);
