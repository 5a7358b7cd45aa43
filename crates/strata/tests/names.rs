//! Every choice's table: names and C integers round-trip, unknown ones are refused with the
//! list of the known.

use strata::names::{BackendKind, Choice, HaloPath};
use strata::problem::{Geometry, SphereStencil};
use strata::solver::{Precision, Preconditioner, Smoother, SolverKind};

fn round_trip<T: Choice + std::fmt::Debug>() {
    for &(v, name, code) in T::ALL {
        assert_eq!(T::parse(name).unwrap(), v);
        assert_eq!(T::from_code(code).unwrap(), v);
        assert_eq!(v.name(), name);
        assert_eq!(v.code(), code);
    }
    let e = T::parse("no-such-thing").unwrap_err().to_string();
    assert!(
        e.contains("must be one of") && e.contains(T::ALL[0].1),
        "{e}"
    );
    let e = T::from_code(99).unwrap_err().to_string();
    assert!(e.contains("must be one of") && e.contains("99"), "{e}");
}

#[test]
fn every_choice_round_trips_and_refuses_unknown_values() {
    round_trip::<SolverKind>();
    round_trip::<Smoother>();
    round_trip::<Precision>();
    round_trip::<Preconditioner>();
    round_trip::<Geometry>();
    round_trip::<SphereStencil>();
    round_trip::<BackendKind>();
    round_trip::<HaloPath>();
}
