//! The C API's own tests: every call through the C signatures, from Rust.
use super::*;

/// A 16 × 16 × 8 problem of `geometry` for the tests.
fn test_problem(geometry: i32) -> StrataProblem {
    StrataProblem {
        geometry,
        n: 16,
        nz: 8,
        cfl: 8.4,
        ..default_problem()
    }
}

/// mg-cg on 3 levels, one CPU thread, to `rtol`.
fn test_options(rtol: f64) -> StrataOptions {
    StrataOptions {
        solver: 2,
        levels: 3,
        coarse_steps: 2,
        rtol,
        max_it: 100,
        preconditioner: 1,
        restart: 5,
        backend: 1,
        threads: 1,
        device: 0,
        smoother: 0,
        rho: 2.0 / 3.0,
        precision: 0,
        relaxation: SolverConfig::default().multigrid.relaxation,
        halo: 0,
        prolongate_halos: 1,
        ..default_options()
    }
}

/// A random right-hand side for problem `p`.
fn random_rhs(p: &StrataProblem, seed: u64) -> Vec<f64> {
    // SAFETY: the tests' problems have no orography (null) or n² heights (6 n² on the sphere).
    let params = unsafe { problem_params(p) }.unwrap();
    strata_core::problem::build_rhs_tiles(
        &params,
        strata_core::problem::RhsKind::Random,
        seed,
        &params.whole_tiles(),
    )
}

/// A handle for `p` and `o` is refused (no handle made), the message naming `field`.
fn assert_refused(p: &StrataProblem, o: &StrataOptions, field: &str) {
    let mut s = std::ptr::null_mut();
    // SAFETY: valid pointers to locals.
    unsafe {
        assert_eq!(
            strata_solver_create(p, o, &mut s),
            StrataStatus::InvalidArgument,
            "{o:?}"
        );
        assert!(s.is_null());
        let msg = last_error_text();
        assert!(msg.contains(field), "{msg}");
    }
}

/// One solve from zero by a handle created for `p` and `o` (both accepted), then destroyed.
fn solve_once(p: &StrataProblem, o: &StrataOptions, rhs: &[f64]) -> StrataInfo {
    let mut s = std::ptr::null_mut();
    let mut info = StrataInfo::default();
    // SAFETY: valid pointers to locals; the handle is destroyed once.
    unsafe {
        assert_eq!(
            strata_solver_create(p, o, &mut s),
            StrataStatus::Ok,
            "{}",
            last_error_text()
        );
        let mut u = vec![0.0; rhs.len()];
        assert_eq!(
            strata_solver_solve(s, rhs.as_ptr(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::Ok,
            "{}",
            last_error_text()
        );
        strata_solver_destroy(s);
    }
    info
}

/// `relaxation` reaches the red-black smoother of mg: w = 1 (line Gauss–Seidel) and the
/// default 1.15 both converge, along different residual histories; w outside (0, 2) is
/// refused, naming the field.
#[test]
fn relaxation_weight() {
    let p = test_problem(0);
    let mut o = test_options(1e-8);
    (o.solver, o.smoother) = (1, 1);
    let rhs = random_rhs(&p, 5);
    let mut runs = vec![];
    for w in [1.0, 1.15] {
        o.relaxation = w;
        let info = solve_once(&p, &o, &rhs);
        assert_eq!(info.converged, 1, "w = {w}");
        runs.push(info.relative_residual);
    }
    assert_ne!(runs[0], runs[1], "the weight changed nothing");
    for w in [0.0, 2.0, f64::NAN] {
        o.relaxation = w;
        assert_refused(&p, &o, "relaxation");
    }
}

/// precision 1: the fp32 multigrid inside fp64 mg-cg gives the fp64 solve's iterations and
/// meets rtol on the fp64 residual; a bad value, and mixed for cg, are refused.
#[test]
fn mixed_precision() {
    let p = test_problem(0);
    let mut o = test_options(1e-9);
    let rhs = random_rhs(&p, 2);
    let mut runs = vec![];
    for precision in [0, 1] {
        o.precision = precision;
        let info = solve_once(&p, &o, &rhs);
        assert_eq!(info.converged, 1);
        assert!(info.relative_residual <= 1e-9);
        runs.push(info.iterations);
    }
    assert_eq!(runs[0], runs[1]);
    for (solver, precision) in [(2, 2), (0, 1)] {
        o.solver = solver;
        o.precision = precision;
        assert_refused(&p, &o, "precision");
    }
}

/// include/strata.h is what cbindgen makes of this file.
/// `#define STRATA_<SETTING>_<NAME> <code>` for every value of `T` ([`Choice`]).
fn constants_of<T: Choice>() -> Vec<(String, i32)> {
    T::ALL
        .iter()
        .map(|(_, name, code)| {
            let c = format!("STRATA_{}_{}", T::SETTING, name)
                .to_uppercase()
                .replace('-', "_");
            (c, *code)
        })
        .collect()
}

/// Every choice's C integer, named: the tables of `strata::names` (each enum's, beside it).
fn all_constants() -> Vec<(String, i32)> {
    use strata_core::solver::Smoother;
    [
        constants_of::<SolverKind>(),
        constants_of::<Preconditioner>(),
        constants_of::<Smoother>(),
        constants_of::<Precision>(),
        constants_of::<Geometry>(),
        constants_of::<SphereStencil>(),
        constants_of::<strata_core::grid::Boundary>(),
        constants_of::<CoarseSolve>(),
        constants_of::<BackendKind>(),
        constants_of::<HaloPath>(),
    ]
    .concat()
}

/// The header's block of choice constants, generated from the tables.
fn header_macros() -> String {
    let mut s = String::from(
        "\n// The integers of every choice (solver, preconditioner, smoother, precision,\n\
         // geometry, sphere_stencil, boundary, coarse_solve, backend, halo), generated from strata's one table of\n\
         // names (strata::names::Choice).\n",
    );
    for (name, code) in all_constants() {
        s.push_str(&format!("#define {name} {code}\n"));
    }
    let v = |part: &str| part.parse::<u32>().expect("a numeric version");
    let (major, minor, patch) = (
        v(env!("CARGO_PKG_VERSION_MAJOR")),
        v(env!("CARGO_PKG_VERSION_MINOR")),
        v(env!("CARGO_PKG_VERSION_PATCH")),
    );
    s.push_str(&format!(
        "\n// The version of strata this header belongs to (strata_version() gives the library's).\n\
         #define STRATA_VERSION_MAJOR {major}\n\
         #define STRATA_VERSION_MINOR {minor}\n\
         #define STRATA_VERSION_PATCH {patch}\n\
         #define STRATA_VERSION \"{major}.{minor}.{patch}\"\n\
         \n\
         // Fill a StrataProblem or StrataOptions of this header's layout (its size set: the library\n\
         // then knows which fields a program built against an older header has).\n\
         #define strata_problem_default(problem) strata_problem_init((problem), sizeof *(problem))\n\
         #define strata_options_default(options) strata_options_init((options), sizeof *(options))\n\
         #define strata_options_paper(options) strata_options_init_paper((options), sizeof *(options))\n"
    ));
    s
}

/// The Fortran module declares every choice constant of the header, with the same value.
#[test]
fn the_fortran_module_has_every_choice_constant() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let f90 = std::fs::read_to_string(dir.join("../../fortran/strata.f90")).unwrap();
    let mut missing = Vec::new();
    for (name, code) in all_constants() {
        let line = format!("integer(c_int), parameter, public :: {name} = {code}");
        if !f90.lines().any(|l| l.trim() == line) {
            missing.push(line);
        }
    }
    assert!(
        missing.is_empty(),
        "fortran/strata.f90 lacks:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_header_is_in_sync() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    config.after_includes = Some(header_macros());
    cbindgen::Builder::new()
        .with_src(dir.join("src/lib.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen")
        .write(&mut out);
    let committed = std::fs::read_to_string(dir.join("include/strata.h")).unwrap_or_default();
    let generated = String::from_utf8(out).unwrap();
    if committed != generated {
        if std::env::var_os("STRATA_BLESS").is_some() {
            std::fs::write(dir.join("include/strata.h"), &generated).unwrap();
        } else {
            panic!("include/strata.h is stale: run `STRATA_BLESS=1 cargo test -p strata-capi` and commit it");
        }
    }
}

/// geometry 2: the six panels, a field of 6 n² nz values; the solution is the library's,
/// and the residual of A u (the handle's apply, halos across panel edges) is small.
#[test]
fn a_solver_on_the_sphere() {
    let mut p = test_problem(2);
    let o = test_options(1e-9);
    let mut s = std::ptr::null_mut();
    // SAFETY: valid pointers to locals; the handle is destroyed once.
    unsafe {
        assert_eq!(strata_solver_create(&p, &o, &mut s), StrataStatus::Ok);
        let mut size = 0;
        assert_eq!(strata_solver_size(s, &mut size), StrataStatus::Ok);
        assert_eq!(size, 6 * 16 * 16 * 8);
        // No orography (null).
        let params = problem_params(&p).unwrap();
        let tiles = strata_core::grid::sphere::tiles(16, 1);
        let rhs = strata_core::problem::build_rhs_tiles(
            &params,
            strata_core::problem::RhsKind::Random,
            4,
            &tiles,
        );
        let mut u = vec![0.0; size];
        let mut info = StrataInfo::default();
        assert_eq!(
            strata_solver_solve(s, rhs.as_ptr(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::Ok
        );
        assert_eq!(info.converged, 1);
        let cfg = solver_config(&o).unwrap();
        let b = strata_core::backend::cpu::CpuBackend::new(Some(1)).unwrap();
        let want = strata_core::solve(&b, &params, &cfg, &rhs, &mut |_, _| {}).unwrap();
        assert_eq!(info.iterations as usize, want.info.iterations);
        assert_eq!(u, want.u);
        let mut au = vec![0.0; size];
        assert_eq!(
            strata_solver_apply(s, u.as_ptr(), au.as_mut_ptr()),
            StrataStatus::Ok
        );
        let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
        let res = norm(&mut au.iter().zip(&rhs).map(|(a, b)| a - b));
        assert!(res <= 2e-9 * norm(&mut rhs.iter().copied()), "{res}");
        // Coefficient fields of the six panels (6 n² nz values): the solve is the library's
        // with them.
        let kz: Vec<f64> = (0..size).map(|m| 1.0 + (m % 11) as f64).collect();
        let null = std::ptr::null();
        assert_eq!(
            strata_solver_set_coefficients(s, null, null, kz.as_ptr(), null, null, null, null),
            StrataStatus::Ok,
            "{}",
            last_error_text()
        );
        assert_eq!(
            strata_solver_solve(s, rhs.as_ptr(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::Ok
        );
        let mut c = strata_core::problem::Coefficients::constant_panels(6, 16, 8, 1.0);
        c.kz = kz;
        let with = strata_core::problem::ProblemParams {
            coefficients: Some(std::sync::Arc::new(c)),
            ..params.clone()
        };
        let want = strata_core::solve(&b, &with, &cfg, &rhs, &mut |_, _| {}).unwrap();
        assert_eq!(info.iterations as usize, want.info.iterations);
        assert_eq!(u, want.u);
        strata_solver_destroy(s);
        // δ = 0 is singular on the closed sphere: a right-hand side with a component along
        // the constants is refused until projection is asked for; then solved.
        p.delta = 0.0;
        let mut s = std::ptr::null_mut();
        assert_eq!(strata_solver_create(&p, &o, &mut s), StrataStatus::Ok);
        let mut info = StrataInfo::default();
        assert_eq!(
            strata_solver_solve(s, rhs.as_ptr(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::InvalidArgument
        );
        let msg = last_error_text();
        assert!(
            msg.contains("singular") && msg.contains("incompatible"),
            "{msg}"
        );
        assert_eq!(strata_solver_set_project_rhs(s, 1), StrataStatus::Ok);
        assert_eq!(
            strata_solver_solve(s, rhs.as_ptr(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::Ok
        );
        assert_eq!(info.converged, 1);
        strata_solver_destroy(s);
        assert_eq!(
            strata_solver_set_project_rhs(std::ptr::null_mut(), 1),
            StrataStatus::InvalidArgument
        );
    }
}

#[test]
fn errors_and_panics_do_not_cross() {
    let mut p = test_problem(0);
    let mut o = test_options(1e-8);
    let mut s = std::ptr::null_mut();
    // SAFETY: valid pointers to locals.
    unsafe {
        assert_eq!(
            strata_problem_init(std::ptr::null_mut(), std::mem::size_of::<StrataProblem>()),
            StrataStatus::InvalidArgument
        );
        p.n = 15;
        assert_eq!(
            strata_solver_create(&p, &o, &mut s),
            StrataStatus::InvalidArgument
        );
        assert!(s.is_null());
        let msg = last_error_text();
        assert!(msg.contains("levels"), "{msg}");
        p.n = 16;
        p.sphere_stencil = 2;
        assert_eq!(
            strata_solver_create(&p, &o, &mut s),
            StrataStatus::InvalidArgument
        );
        let msg = last_error_text();
        assert!(msg.contains("sphere_stencil"), "{msg}");
        p.sphere_stencil = 0;
        o.solver = 9;
        assert_eq!(
            strata_solver_create(&p, &o, &mut s),
            StrataStatus::InvalidArgument
        );
        o.solver = 2;
        o.smoother = 7;
        assert_eq!(
            strata_solver_create(&p, &o, &mut s),
            StrataStatus::InvalidArgument
        );
        o.smoother = 1;
        o.rho = 0.0;
        assert_eq!(
            strata_solver_create(&p, &o, &mut s),
            StrataStatus::InvalidArgument
        );
        o.rho = 2.0 / 3.0;
        assert_eq!(strata_solver_create(&p, &o, &mut s), StrataStatus::Ok);
        let mut size = 0;
        assert_eq!(strata_solver_size(s, &mut size), StrataStatus::Ok);
        assert_eq!(size, 16 * 16 * 8);
        let rhs = vec![1.0; size];
        let mut u = vec![0.0; size];
        let mut info = StrataInfo::default();
        assert_eq!(
            strata_solver_solve(s, rhs.as_ptr(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::Ok
        );
        assert_eq!(info.converged, 1);
        let mut au = vec![0.0; size];
        assert_eq!(
            strata_solver_apply(s, u.as_ptr(), au.as_mut_ptr()),
            StrataStatus::Ok
        );
        let res = au
            .iter()
            .zip(&rhs)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        assert!(res <= 1e-7 * (size as f64).sqrt(), "{res}");
        assert_eq!(
            strata_solver_solve(s, std::ptr::null(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::InvalidArgument
        );
        // A NaN in the right-hand side is an error naming the cell, not a status Ok with
        // converged = 0 that a caller checking the status would take for an answer.
        let mut nan = rhs.clone();
        nan[(2 * 16 + 3) * 8 + 4] = f64::NAN;
        assert_eq!(
            strata_solver_solve(s, nan.as_ptr(), u.as_mut_ptr(), 0, &mut info),
            StrataStatus::InvalidArgument
        );
        let msg = last_error_text();
        assert!(msg.contains("rhs") && msg.contains("(3, 2, 4)"), "{msg}");
        let bad = vec![-1.0; size];
        assert_eq!(
            strata_solver_set_coefficients(
                s,
                bad.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null()
            ),
            StrataStatus::InvalidArgument
        );
        strata_solver_destroy(s);
        strata_solver_destroy(std::ptr::null_mut());
    }
}

/// error_if_not_converged: a solve stopped by max_it returns STRATA_STATUS_NOT_CONVERGED with
/// the record filled (converged 0, the iterations run, a finite relative residual above rtol);
/// without it the same solve returns Ok and says converged 0.
#[test]
fn non_convergence_as_an_error() {
    let p = test_problem(0);
    let rhs = random_rhs(&p, 3);
    for strict in [0, 1] {
        let o = StrataOptions {
            max_it: 2,
            error_if_not_converged: strict,
            ..test_options(1e-12)
        };
        let mut s = std::ptr::null_mut();
        let mut info = StrataInfo::default();
        let mut u = vec![0.0; rhs.len()];
        // SAFETY: valid pointers to locals; the handle is destroyed once.
        let status = unsafe {
            assert_eq!(strata_solver_create(&p, &o, &mut s), StrataStatus::Ok);
            let st = strata_solver_solve(s, rhs.as_ptr(), u.as_mut_ptr(), 0, &mut info);
            strata_solver_destroy(s);
            st
        };
        let expected = if strict == 1 {
            StrataStatus::NotConverged
        } else {
            StrataStatus::Ok
        };
        assert_eq!(status, expected, "error_if_not_converged = {strict}");
        assert_eq!((info.converged, info.iterations), (0, 2));
        assert!(info.relative_residual.is_finite() && info.relative_residual > 1e-12);
        assert!(u.iter().any(|&v| v != 0.0), "u holds the last iterate");
        if strict == 1 {
            // SAFETY: the message is a valid C string until the next call.
            let msg = unsafe { std::ffi::CStr::from_ptr(strata_last_error()) };
            assert!(
                msg.to_string_lossy().contains("did not converge"),
                "{msg:?}"
            );
        }
    }
}

/// The size field: the header's layout is accepted; a struct whose size is not a layout this
/// library knows (an unset size, a layout of the 0.1 header that had no size field, a newer
/// header's larger struct) is refused with InvalidArgument naming `options.size`; the init
/// functions refuse such a size too, writing nothing.
#[test]
fn struct_sizes() {
    let p = test_problem(0);
    let o = test_options(1e-6);
    let mut s = std::ptr::null_mut();
    // SAFETY: valid pointers to locals; the handle is destroyed once.
    unsafe {
        assert_eq!(strata_solver_create(&p, &o, &mut s), StrataStatus::Ok);
        strata_solver_destroy(s);
    }
    for size in [0, 7, std::mem::size_of::<StrataOptions>() + 8, 1 << 40] {
        let bad = StrataOptions { size, ..o };
        // SAFETY: as above; no handle is made.
        unsafe {
            assert_eq!(
                strata_solver_create(&p, &bad, &mut s),
                StrataStatus::InvalidArgument
            );
            assert!(s.is_null());
            let msg = last_error_text();
            assert!(msg.contains("options.size"), "{msg}");
            let mut filled = bad;
            assert_eq!(
                strata_options_init(&mut filled, size),
                StrataStatus::InvalidArgument
            );
            assert_eq!(filled.size, size, "nothing written");
        }
    }
    // SAFETY: a buffer of the struct's size.
    unsafe {
        let mut q = StrataProblem { size: 0, ..p };
        let full = std::mem::size_of::<StrataProblem>();
        assert_eq!(strata_problem_init(&mut q, full), StrataStatus::Ok);
        assert_eq!((q.size, q.n, q.nz), (full, 128, 128));
    }
    // SAFETY: a static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(strata_version()) };
    assert_eq!(v.to_str(), Ok(env!("CARGO_PKG_VERSION")));
}

/// The reading of a struct that grew: a caller of an older, smaller layout gets its fields and
/// the defaults for the fields added since, even where the first of those sits in the older
/// layout's tail padding (as StrataOptions' pre_smooth sits after coarse_solve): those bytes
/// of the caller's struct are not read, nor written. Every released layout of the real structs
/// has its own size.
#[test]
fn an_older_smaller_layout_reads_with_defaults() {
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Grown {
        size: usize,
        a: i32,
        c: f64,
        b: i32,
        d: i32,
        e: i32,
    }
    /// Grown's layout up to `b`, its tail padding spelled as a field holding garbage.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Older {
        size: usize,
        a: i32,
        c: f64,
        b: i32,
        padding: i32,
    }
    impl sized::Grows for Grown {
        const NAME: &'static str = "grown";
        const INIT: &'static str = "grown_init";
        fn layouts() -> Vec<sized::Layout> {
            vec![
                sized::Layout::ending_at::<Self>(std::mem::offset_of!(Grown, d)),
                sized::Layout::whole::<Self>(),
            ]
        }
        fn defaults() -> Self {
            Grown {
                size: std::mem::size_of::<Grown>(),
                a: 1,
                c: 3.5,
                b: 2,
                d: 4,
                e: 5,
            }
        }
    }
    let size = std::mem::size_of::<Older>();
    assert_eq!(size, std::mem::offset_of!(Grown, e));
    let older = Older {
        size,
        a: 10,
        c: 30.5,
        b: 20,
        padding: -99,
    };
    // SAFETY: `older` holds the bytes its size says.
    let read = unsafe { sized::read(std::ptr::addr_of!(older).cast::<Grown>()) }.unwrap();
    assert_eq!(
        (read.a, read.c, read.b, read.d, read.e),
        (10, 30.5, 20, 4, 5)
    );
    let mut out = Older {
        size: 0,
        a: 0,
        c: 0.0,
        b: 0,
        padding: -99,
    };
    let defaults = <Grown as sized::Grows>::defaults();
    // SAFETY: `out` has `size` writable bytes; nothing beyond is written.
    unsafe { sized::write(std::ptr::addr_of_mut!(out).cast::<Grown>(), size, defaults) }.unwrap();
    assert_eq!(
        (out.size, out.a, out.c, out.b, out.padding),
        (size, 1, 3.5, 2, -99)
    );
    fn distinct<T: sized::Grows>() {
        let sizes: Vec<usize> = T::layouts().iter().map(|l| l.size()).collect();
        assert!(
            sizes.windows(2).all(|w| w[0] < w[1]),
            "{}: {sizes:?}",
            T::NAME
        );
        assert_eq!(sizes.last(), Some(&std::mem::size_of::<T>()));
    }
    distinct::<StrataOptions>();
    distinct::<StrataProblem>();
}

/// strata_choice gives every setting's C integer from its name (the command line's and
/// Python's) and refuses an unknown setting or name, saying which.
#[test]
fn choices_by_name() {
    let c = |s: &str| CString::new(s).unwrap();
    let mut v = -7;
    for (setting, name, want) in [
        ("solver", "mg-cg", SolverKind::MgCg.code()),
        ("geometry", "sphere", Geometry::Sphere.code()),
        (
            "smoother",
            "red-black",
            strata_core::solver::Smoother::RedBlack.code(),
        ),
        ("precision", "mixed", Precision::Mixed.code()),
        ("halo", "auto", HaloPath::Auto.code()),
    ] {
        // SAFETY: NUL-terminated strings and a writable int.
        let st = unsafe { strata_choice(c(setting).as_ptr(), c(name).as_ptr(), &mut v) };
        assert_eq!((st, v), (StrataStatus::Ok, want), "{setting}={name}");
    }
    for (setting, name, says) in [
        ("solver", "multigrid", "'mg-cg'"),
        ("colour", "red", "setting"),
    ] {
        // SAFETY: as above.
        let st = unsafe { strata_choice(c(setting).as_ptr(), c(name).as_ptr(), &mut v) };
        assert_eq!(st, StrataStatus::InvalidArgument);
        assert!(last_error_text().contains(says), "{}", last_error_text());
    }
    // SAFETY: a null name is refused before it is read.
    let st = unsafe { strata_choice(c("solver").as_ptr(), std::ptr::null(), &mut v) };
    assert_eq!(st, StrataStatus::InvalidArgument);
}

/// strata_choice_name gives back the name strata_choice reads, for every value of every
/// setting, as a static string (the same pointer each time); an unknown setting, a value the
/// setting lacks (STRATA_DEFAULT among them) and a null setting give null, saying which.
#[test]
fn names_by_choice() {
    let c = |s: &str| CString::new(s).unwrap();
    let settings = [
        "geometry",
        "sphere_stencil",
        "solver",
        "preconditioner",
        "backend",
        "smoother",
        "precision",
        "halo",
        "boundary",
        "coarse_solve",
    ];
    let mut seen = 0;
    for setting in settings {
        for &(name, code) in choices(setting).expect("a setting") {
            // SAFETY: a NUL-terminated setting.
            let p = unsafe { strata_choice_name(c(setting).as_ptr(), code) };
            assert!(!p.is_null(), "{setting} {code}: {}", last_error_text());
            // SAFETY: non-null: a static NUL-terminated string.
            let got = unsafe { CStr::from_ptr(p) }.to_str().unwrap();
            assert_eq!(got, name, "{setting} {code}");
            let mut back = -7;
            // SAFETY: NUL-terminated strings and a writable int.
            let st = unsafe { strata_choice(c(setting).as_ptr(), p, &mut back) };
            assert_eq!((st, back), (StrataStatus::Ok, code), "{setting}={name}");
            // SAFETY: as above.
            let again = unsafe { strata_choice_name(c(setting).as_ptr(), code) };
            assert_eq!(again, p, "{setting} {code}: one static string");
            seen += 1;
        }
    }
    assert!(seen >= 25, "{seen} names");
    // SAFETY: NUL-terminated strings.
    let mg_cg = unsafe { strata_choice_name(c("solver").as_ptr(), SolverKind::MgCg.code()) };
    // SAFETY: non-null (checked by the loop above for every value).
    assert_eq!(unsafe { CStr::from_ptr(mg_cg) }.to_str(), Ok("mg-cg"));
    for (setting, value, says) in [
        ("solver", STRATA_DEFAULT, "has no value -1"),
        ("solver", 99, "mg-cg"),
        ("colour", 0, "setting"),
    ] {
        // SAFETY: a NUL-terminated setting.
        let p = unsafe { strata_choice_name(c(setting).as_ptr(), value) };
        assert!(p.is_null(), "{setting} {value}");
        assert!(last_error_text().contains(says), "{}", last_error_text());
    }
    // SAFETY: a null setting is refused before it is read.
    assert!(unsafe { strata_choice_name(std::ptr::null(), 0) }.is_null());
}

/// The operator as compressed sparse rows (strata_solver_matrix) times the preconditioner's
/// output (strata_solver_precondition) is the solver's own apply of it; one V-cycle of mg-cg
/// reduces the residual of a random right-hand side.
#[test]
fn matrix_and_preconditioner() {
    let p = test_problem(0);
    let o = test_options(1e-8);
    let mut s: *mut StrataSolver = std::ptr::null_mut();
    // SAFETY: valid structs and a writable handle pointer.
    assert_eq!(
        unsafe { strata_solver_create(&p, &o, &mut s) },
        StrataStatus::Ok
    );
    let (mut size, mut nnz) = (0usize, 0usize);
    let (null, nullf) = (std::ptr::null_mut::<i64>(), std::ptr::null_mut::<f64>());
    // SAFETY: a live handle, writable sizes, arrays null to ask the sizes.
    let st = unsafe { strata_solver_matrix(s, &mut size, &mut nnz, null, null, nullf) };
    assert_eq!((st, size), (StrataStatus::Ok, 16 * 16 * 8));
    let (mut rp, mut cols, mut vals) = (vec![0i64; size + 1], vec![0i64; nnz], vec![0.0; nnz]);
    // SAFETY: arrays of the lengths just reported.
    let st = unsafe {
        strata_solver_matrix(
            s,
            &mut size,
            &mut nnz,
            rp.as_mut_ptr(),
            cols.as_mut_ptr(),
            vals.as_mut_ptr(),
        )
    };
    assert_eq!(st, StrataStatus::Ok);
    assert_eq!(rp[size] as usize, nnz);
    let r = random_rhs(&p, 5);
    let (mut z, mut az) = (vec![0.0; size], vec![0.0; size]);
    // SAFETY: a live handle and arrays of the solver's size.
    unsafe {
        assert_eq!(
            strata_solver_precondition(s, r.as_ptr(), z.as_mut_ptr()),
            StrataStatus::Ok
        );
        assert_eq!(
            strata_solver_apply(s, z.as_ptr(), az.as_mut_ptr()),
            StrataStatus::Ok
        );
    }
    let csr_az: Vec<f64> = (0..size)
        .map(|i| {
            (rp[i] as usize..rp[i + 1] as usize)
                .map(|k| vals[k] * z[cols[k] as usize])
                .sum()
        })
        .collect();
    // The two sum a row's terms in different orders: rounding is bounded by the size of the
    // terms, Σ |a_ik z_k|, which exceeds |(A z)_i| by far where z is close to A⁻¹ r (the
    // strong vertical couplings cancel).
    let terms: Vec<f64> = (0..size)
        .map(|i| {
            (rp[i] as usize..rp[i + 1] as usize)
                .map(|k| (vals[k] * z[cols[k] as usize]).abs())
                .sum()
        })
        .collect();
    for i in 0..size {
        assert!(
            (csr_az[i] - az[i]).abs() <= 1e-13 * terms[i],
            "row {i}: {} against {} (terms {})",
            csr_az[i],
            az[i],
            terms[i]
        );
    }
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let res: Vec<f64> = r.iter().zip(&az).map(|(a, b)| a - b).collect();
    assert!(
        norm(&res) < 0.5 * norm(&r),
        "{} of {}",
        norm(&res),
        norm(&r)
    );
    // Half the arrays given is refused, as is a NaN in r, naming its cell.
    // SAFETY: a live handle; the null arrays are checked before any is written.
    let st = unsafe { strata_solver_matrix(s, &mut size, &mut nnz, rp.as_mut_ptr(), null, nullf) };
    assert_eq!(st, StrataStatus::InvalidArgument);
    let mut bad = r.clone();
    bad[3] = f64::NAN;
    // SAFETY: as above.
    let st = unsafe { strata_solver_precondition(s, bad.as_ptr(), z.as_mut_ptr()) };
    assert_eq!(st, StrataStatus::InvalidArgument);
    assert!(
        last_error_text().contains("r holds NaN"),
        "{}",
        last_error_text()
    );
    // SAFETY: the handle is live and destroyed once.
    unsafe { strata_solver_destroy(s) };
}

/// The last error's sentence.
fn last_error_text() -> String {
    // SAFETY: strata_last_error returns a NUL-terminated string owned by the library.
    unsafe { std::ffi::CStr::from_ptr(strata_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// boundary_x and boundary_y reach the solver: a box periodic in x with zero-flux sides in y
/// solves as the library does; periodic on the panel and an unknown code are refused, naming
/// the field; a caller of the 0.2.0 layout (which ends at sphere_stencil) gets Dirichlet.
#[test]
fn lateral_boundaries() {
    let mut p = StrataProblem {
        boundary_x: 2, // STRATA_BOUNDARY_PERIODIC
        boundary_y: 1, // STRATA_BOUNDARY_NEUMANN
        ..test_problem(1)
    };
    let o = test_options(1e-8);
    let rhs = random_rhs(&p, 4);
    let info = solve_once(&p, &o, &rhs);
    assert_eq!(info.converged, 1);
    // SAFETY: no orography (null).
    let params = unsafe { problem_params(&p) }.unwrap();
    assert_eq!(params.boundaries.describe(), "x=periodic,y=neumann");
    let cfg = solver_config(&o).unwrap();
    let lib = strata_core::solve(
        &strata_core::backend::cpu::CpuBackend::new(Some(1)).unwrap(),
        &params,
        &cfg,
        &rhs,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(info.iterations as usize, lib.info.iterations);
    p.geometry = 0;
    assert_refused(&p, &o, "boundary");
    p.boundary_x = 7;
    assert_refused(&p, &o, "boundary");
    // The 0.2.0 layout: its size ends before boundary_x; the fields after take the defaults.
    let old = std::mem::offset_of!(StrataProblem, boundary_x);
    let q = StrataProblem {
        size: old,
        boundary_x: 99,
        boundary_y: 99,
        ..test_problem(1)
    };
    // SAFETY: `q` holds at least `old` bytes.
    let read = unsafe { sized::read(&q) }.unwrap();
    assert_eq!((read.boundary_x, read.boundary_y), (0, 0));
    assert_eq!(read.n, 16);
}

/// orography reaches the solver: over Schär's mountain the box solves as the library does (the
/// same count); heights above the top are refused, naming the column; a caller of the layout
/// before it (which ends at boundary_y) gets flat ground.
#[test]
fn orography() {
    let n = 16;
    let hill = strata_core::problem::Orography::schaer(n, &Default::default());
    let mut p = StrataProblem {
        boundary_x: 2,
        height: 0.1,
        orography: hill.h.as_ptr(),
        ..test_problem(1)
    };
    p.n = n as i32;
    let o = test_options(1e-8);
    let rhs = random_rhs(&p, 5);
    let info = solve_once(&p, &o, &rhs);
    assert_eq!(info.converged, 1);
    // SAFETY: `hill` holds n² values.
    let params = unsafe { problem_params(&p) }.unwrap();
    assert_eq!(params.orography.as_deref(), Some(&hill));
    let lib = strata_core::solve(
        &strata_core::backend::cpu::CpuBackend::new(Some(1)).unwrap(),
        &params,
        &solver_config(&o).unwrap(),
        &rhs,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(info.iterations as usize, lib.info.iterations);
    let high = vec![0.2; n * n];
    p.orography = high.as_ptr();
    assert_refused(&p, &o, "orography");
    let old = std::mem::offset_of!(StrataProblem, orography);
    let q = StrataProblem { size: old, ..p };
    // SAFETY: `q` holds at least `old` bytes.
    let read = unsafe { sized::read(&q) }.unwrap();
    assert!(read.orography.is_null());
    // The sphere reads six panels of heights, (panel, y, x).
    let (n, nz) = (8usize, 4usize);
    let mountain = strata_core::problem::Orography::schaer_sphere(
        n,
        &Default::default(),
        strata_core::problem::Orography::sphere_mountain_centre(),
    );
    let mut p = StrataProblem {
        height: 0.1,
        orography: mountain.h.as_ptr(),
        ..test_problem(2)
    };
    (p.n, p.nz) = (n as i32, nz as i32);
    // SAFETY: `mountain` holds 6 n² values.
    let params = unsafe { problem_params(&p) }.unwrap();
    assert_eq!(params.orography.as_deref(), Some(&mountain));
    let o = StrataOptions {
        levels: 2,
        ..test_options(1e-8)
    };
    let info = solve_once(&p, &o, &random_rhs(&p, 5));
    assert_eq!(info.converged, 1);
}

/// coarse_solve and coarse_rtol reach the solver: with CG on the coarsest level the count does
/// not depend on the levels; a bad code or tolerance is refused, naming the field; a caller of
/// the 0.2.0 layout (which ends at error_if_not_converged) gets the smoothing default.
#[test]
fn coarse_solve() {
    let p = test_problem(0);
    let mut o = test_options(1e-6);
    (o.solver, o.smoother, o.precision) = (1, STRATA_DEFAULT, STRATA_DEFAULT);
    let rhs = random_rhs(&p, 3);
    o.coarse_solve = 1;
    o.coarse_rtol = 1e-3;
    let counts: Vec<i32> = [2, 3, 4]
        .iter()
        .map(|&levels| {
            o.levels = levels;
            let info = solve_once(&p, &o, &rhs);
            assert_eq!(info.converged, 1);
            info.iterations
        })
        .collect();
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
        "{counts:?}"
    );
    o.coarse_solve = 2;
    assert_refused(&p, &o, "coarse_solve");
    (o.coarse_solve, o.coarse_rtol) = (1, 0.0);
    assert_refused(&p, &o, "coarse_rtol");
    // The 0.2.0 layout: its size ends before coarse_rtol; the new fields take the defaults.
    let old = std::mem::offset_of!(StrataOptions, coarse_rtol);
    let q = StrataOptions {
        size: old,
        coarse_solve: 7,
        coarse_rtol: -1.0,
        ..test_options(1e-6)
    };
    // SAFETY: `q` holds at least `old` bytes.
    let read = unsafe { sized::read(&q) }.unwrap();
    assert_eq!(read.coarse_solve, 0);
    assert_eq!(read.coarse_rtol, strata_core::solver::DEFAULT_COARSE_RTOL);
}

/// pre_smooth and post_smooth reach the solver: STRATA_DEFAULT takes the solver's cycle
/// (mg-cg's V(2,2), fewer iterations than V(1,1)), one count given sets both of mg-cg's
/// symmetric cycle; unequal or out-of-range counts are refused, naming the field; a caller of
/// the layout that ends at coarse_solve gets the defaults whatever its tail padding holds.
#[test]
fn smoothing_steps() {
    let p = StrataProblem {
        n: 32,
        nz: 32,
        ..test_problem(0)
    };
    let mut o = test_options(1e-8);
    (o.smoother, o.precision) = (STRATA_DEFAULT, STRATA_DEFAULT);
    let rhs = random_rhs(&p, 4);
    let mut its = |pre, post| {
        (o.pre_smooth, o.post_smooth) = (pre, post);
        let info = solve_once(&p, &o, &rhs);
        assert_eq!(info.converged, 1);
        info.iterations
    };
    let (v22, v11, given_once) = (
        its(STRATA_DEFAULT, STRATA_DEFAULT),
        its(1, 1),
        its(1, STRATA_DEFAULT),
    );
    assert!(v22 < v11 && v11 == given_once, "{v22} {v11} {given_once}");
    for (pre, post, field) in [
        (2, 1, "pre_smooth"),
        (0, 0, "pre_smooth"),
        (1, 17, "post_smooth"),
    ] {
        let o = StrataOptions {
            solver: if field == "post_smooth" { 1 } else { 2 },
            pre_smooth: pre,
            post_smooth: post,
            ..o
        };
        assert_refused(&p, &o, field);
    }
    assert_refused(
        &p,
        &StrataOptions {
            pre_smooth: -2,
            ..o
        },
        "pre_smooth",
    );
    let before = std::mem::offset_of!(StrataOptions, pre_smooth).next_multiple_of(8);
    let q = StrataOptions {
        size: before,
        pre_smooth: 7,
        post_smooth: 9,
        ..test_options(1e-6)
    };
    // SAFETY: `q` holds at least `before` bytes.
    let read = unsafe { sized::read(&q) }.unwrap();
    assert_eq!(
        (read.pre_smooth, read.post_smooth),
        (STRATA_DEFAULT, STRATA_DEFAULT)
    );
}

/// strata_solver_options gives the options a solver runs with: the defaults left to the library
/// resolved (mg-cg's red-black V(2,2) cycle in mixed precision, on the CPU asked for), the
/// others as given; into an older layout too; a null handle is an error.
#[test]
fn a_solvers_resolved_options() {
    let p = test_problem(0);
    let mut o = test_options(1e-6);
    (o.smoother, o.precision, o.threads) = (STRATA_DEFAULT, STRATA_DEFAULT, 1);
    let mut s = std::ptr::null_mut();
    let mut got = StrataOptions { size: 0, ..o };
    let older = std::mem::offset_of!(StrataOptions, coarse_rtol);
    let mut old = StrataOptions { size: 0, ..o };
    // SAFETY: valid pointers to locals; the handle is destroyed once.
    unsafe {
        assert_eq!(strata_solver_create(&p, &o, &mut s), StrataStatus::Ok);
        let full = std::mem::size_of::<StrataOptions>();
        assert_eq!(strata_solver_options(s, &mut got, full), StrataStatus::Ok);
        assert_eq!(strata_solver_options(s, &mut old, older), StrataStatus::Ok);
        assert_eq!(
            strata_solver_options(std::ptr::null(), &mut got, full),
            StrataStatus::InvalidArgument
        );
        strata_solver_destroy(s);
    }
    use strata_core::solver::Smoother;
    assert_eq!(got.size, std::mem::size_of::<StrataOptions>());
    assert_eq!((got.pre_smooth, got.post_smooth), (2, 2));
    assert_eq!(got.smoother, Smoother::RedBlack.code());
    assert_eq!(got.precision, Precision::Mixed.code());
    assert_eq!(got.backend, BackendKind::Cpu.code());
    assert_eq!(
        (got.solver, got.levels, got.threads),
        (o.solver, o.levels, 1)
    );
    assert_eq!((got.rtol, got.max_it), (o.rtol, o.max_it));
    assert_eq!(
        (old.size, old.smoother, old.levels),
        (older, got.smoother, 3)
    );
}
