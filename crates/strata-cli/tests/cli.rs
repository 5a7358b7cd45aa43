//! The `strata` command end to end: solves, reports, files, and clear errors for bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The strata binary as a command, HDF5's file locks off: the tests run in parallel threads,
/// and a process forked while another thread has a NetCDF-4 file open for writing inherits its
/// descriptor and lock (HDF5 opens files without close-on-exec), which would make a later reader
/// of that (complete, renamed) file fail while the forked run lasts.
fn strata_command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    c.env("HDF5_USE_FILE_LOCKING", "FALSE");
    c
}

fn strata(args: &[&str]) -> Output {
    strata_command().args(args).output().expect("strata runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

/// A failure with one clear line on stderr (besides the backend note of `--backend auto` on a
/// machine without a GPU) and no panic.
fn assert_error(args: &[&str], needle: &str) {
    let o = strata(args);
    let (_, err) = text(&o);
    let err: String = err
        .lines()
        .filter(|l| !l.starts_with("note: no usable GPU"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!o.status.success(), "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected '{needle}' in: {err}"
    );
}

#[test]
fn solves_and_reports_in_the_papers_terms() {
    let json = tmp("report.json");
    for solver in ["cg", "mg", "mg-cg"] {
        let o = strata(&[
            "solve",
            "--n",
            "32",
            "--nz",
            "16",
            "--solver",
            solver,
            "--levels",
            "4",
            "--json",
            json.to_str().unwrap(),
            "--profile",
        ]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{solver}: {err}");
        for needle in [
            "ConvergedRtol",
            "t_iter",
            "GFLOP/s",
            "useful bandwidth",
            "rel.residual",
        ] {
            assert!(out.contains(needle), "{solver}: no '{needle}' in\n{out}");
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let its = v["info"]["iterations"].as_u64().unwrap();
        assert!(its > 0);
        assert_eq!(
            v["info"]["residuals"].as_array().unwrap().len() as u64,
            its + 1
        );
        assert_eq!(v["solver"], solver);
        assert!(v["profile"].as_array().is_some_and(|p| !p.is_empty()));
    }
}

#[test]
fn netcdf_output_feeds_back_as_a_right_hand_side() {
    let nc = tmp("out.nc");
    let args = [
        "solve", "--n", "16", "--nz", "8", "--levels", "3", "--rhs", "bump", "-q",
    ];
    let mut first = args.to_vec();
    first.extend(["--output", nc.to_str().unwrap()]);
    let o = strata(&first);
    assert!(o.status.success(), "{}", text(&o).1);
    let its = |o: &Output| {
        let out = text(o).0;
        out.lines()
            .find(|l| l.trim_start().starts_with("iterations"))
            .map(|l| l.to_string())
            .unwrap()
    };
    let mut again = args.to_vec();
    again.extend(["--rhs-file", nc.to_str().unwrap()]);
    let o2 = strata(&again);
    assert!(o2.status.success(), "{}", text(&o2).1);
    assert_eq!(its(&o), its(&o2));
    // Refuses to overwrite, before any work (no summary printed) ...
    assert_error(&first, "exists");
    assert!(!text(&strata(&first)).0.contains("iterations"));
    // ... unless --force says so.
    let mut forced = first.clone();
    forced.push("--force");
    let o3 = strata(&forced);
    assert!(o3.status.success(), "{}", text(&o3).1);
}

/// Runs strata, failing (not hanging) if it takes longer than `limit`.
fn strata_within(args: &[&str], limit: std::time::Duration) -> Output {
    let mut child = strata_command()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("strata starts");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn absurd_thread_counts_are_refused_not_hung() {
    let limit = std::time::Duration::from_secs(20);
    for t in ["100000", "4294967296"] {
        let args = [
            "solve",
            "--n",
            "8",
            "--nz",
            "4",
            "--levels",
            "1",
            "--threads",
            t,
            "--backend",
            "cpu",
        ];
        let o = strata_within(&args, limit);
        let err = text(&o).1;
        assert!(!o.status.success(), "--threads {t} accepted");
        assert!(err.contains("threads must be between 1 and"), "{err}");
    }
    assert_error(
        &["solve", "--threads", "100000"],
        "threads must be between 1 and",
    );
}

#[test]
fn unwritable_paths_are_refused_before_the_solve() {
    let limit = std::time::Duration::from_secs(20);
    // A size whose solve would take minutes: the check must come first.
    let big = ["solve", "--n", "1024", "--nz", "128", "--backend", "cpu"];
    for (flag, path, needle) in [
        ("--json", "/nonexistent/x.json", "does not exist"),
        ("--output", "/nonexistent/u.nc", "does not exist"),
        ("--output", "/", "is a folder"),
    ] {
        let mut args = big.to_vec();
        args.extend([flag, path]);
        let o = strata_within(&args, limit);
        let (out, err) = text(&o);
        assert!(!o.status.success());
        assert!(
            err.contains(flag) && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(!out.contains("iteration"), "the solve ran: {out}");
    }
}

#[test]
fn truncated_rhs_file_is_named_as_truncated() {
    let nc = tmp("whole.nc");
    let o = strata(&[
        "solve",
        "--n",
        "8",
        "--nz",
        "4",
        "--levels",
        "1",
        "-q",
        "--output",
        nc.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let bytes = std::fs::read(&nc).unwrap();
    let cut = tmp("cut.nc");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert_error(
        &[
            "solve",
            "--n",
            "8",
            "--nz",
            "4",
            "--levels",
            "1",
            "--rhs-file",
            cut.to_str().unwrap(),
        ],
        "truncated",
    );
}

#[test]
fn json_report_gives_the_omega_used() {
    let json = tmp("omega.json");
    let o = strata(&[
        "solve",
        "--n",
        "16",
        "--nz",
        "8",
        "--levels",
        "2",
        "-q",
        "--cfl",
        "4",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // ω = ν h / 2 with h = 2/n on the panel.
    let omega = v["problem"]["omega"].as_f64().expect("omega is a number");
    assert!((omega - 4.0 * (2.0 / 16.0) / 2.0).abs() < 1e-15, "{omega}");
}

#[test]
fn manufactured_solution_reports_its_error() {
    let o = strata(&[
        "solve",
        "--n",
        "32",
        "--nz",
        "16",
        "--rhs",
        "manufactured",
        "--levels",
        "3",
        "-q",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("error vs manufactured solution"), "{out}");
}

#[test]
fn bad_input_gets_a_clear_error() {
    assert_error(
        &["solve", "--n", "100", "--levels", "5"],
        "at most 3 levels",
    );
    assert_error(&["solve", "--n", "64", "--levels", "8"], "at most 7 levels");
    assert_error(&["solve", "--nz", "1"], "nz must be at least 2");
    assert_error(&["solve", "--cfl", "-1"], "cfl must be finite and positive");
    assert_error(&["solve", "--cfl", "NaN"], "cfl");
    assert_error(&["solve", "--height", "0"], "height");
    assert_error(&["solve", "--lambda", "inf"], "lambda");
    assert_error(&["solve", "--rtol", "0"], "rtol");
    assert_error(&["solve", "--n", "0"], "n must be at least 1");
    assert_error(&["solve", "--coarse-steps", "0"], "coarse-steps");
    assert_error(&["solve", "--threads", "0"], "threads");
    // The library's checks name each subcommand's own flags.
    let unequal = [
        "--solver",
        "mg-cg",
        "--pre-smooth",
        "3",
        "--post-smooth",
        "2",
    ];
    assert_error(
        &[&["solve"], &unequal[..]].concat(),
        "--pre-smooth must equal",
    );
    assert_error(&["solve", "--post-smooth", "17"], "--post-smooth");
    assert_error(
        &[
            "bench",
            "--backend",
            "cpu",
            "--sizes",
            "16",
            "--nz",
            "8",
            "--stream-mib",
            "1",
            "--solvers",
            "mg-cg",
            "--pre-smooth",
            "3",
            "--post-smooth",
            "2",
        ],
        "--pre-smooth must equal",
    );
    assert_error(&["solve", "--n", "2000000", "--levels", "1"], "GiB");
    assert_error(
        &[
            "solve",
            "--rhs-file",
            "/nonexistent/f.nc",
            "--n",
            "8",
            "--levels",
            "1",
        ],
        "no such file",
    );
    let nc = tmp("shape.nc");
    let o = strata(&[
        "solve",
        "--n",
        "8",
        "--nz",
        "4",
        "--levels",
        "1",
        "-q",
        "--output",
        nc.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let f = nc.to_str().unwrap();
    assert_error(
        &["solve", "--n", "16", "--nz", "4", "--rhs-file", f],
        "shape",
    );
    assert_error(
        &[
            "solve",
            "--n",
            "8",
            "--nz",
            "4",
            "--levels",
            "1",
            "--rhs-file",
            f,
            "--rhs-var",
            "x3",
        ],
        "no variable 'x3'",
    );
}

#[test]
fn help_explains_every_option() {
    for sub in ["solve", "bench"] {
        let o = strata(&[sub, "--help"]);
        let out = text(&o).0;
        assert!(o.status.success());
        for opt in [
            "--geometry",
            "--nz",
            "--cfl",
            "--lambda",
            "--height",
            "--graded",
            "--levels",
            "--coarse-steps",
            "--backend",
            "--threads",
            "--json",
        ] {
            assert!(out.contains(opt), "{sub} --help lacks {opt}");
        }
        assert!(out.contains("[default: "), "{sub} --help shows no defaults");
    }
    let out = text(&strata(&["solve", "--help"])).0;
    for opt in [
        "--rhs",
        "--rhs-file",
        "--solver",
        "--rtol",
        "--max-it",
        "--output",
        "--fixed-iterations",
    ] {
        assert!(out.contains(opt), "solve --help lacks {opt}");
    }
}

#[test]
fn bench_measures_bandwidth_and_reports_fractions() {
    let json = tmp("bench.json");
    let o = strata(&[
        "bench",
        "--sizes",
        "16,32",
        "--nz",
        "8",
        "--levels",
        "3",
        "--repeat",
        "1",
        "--stream-mib",
        "16",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("copy bandwidth"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["copy_gbs"].as_f64().unwrap() > 0.0);
    assert_eq!(v["solvers"].as_array().unwrap().len(), 4);
    let kernels = v["kernels"].as_array().unwrap();
    // A row per kernel and level (the coarsest level's smoothing: red-black half-sweeps by
    // default).
    assert!(kernels
        .iter()
        .any(|k| (k["kernel"] == "Smooth" || k["kernel"] == "SmoothColor") && k["level"] == 2));
    assert!(kernels
        .iter()
        .all(|k| k["useful_fraction"].as_f64().unwrap() > 0.0));
    // Bytes per unknown and iteration: the iteration's time at the copy bandwidth, and the
    // kernels' models level by level (three levels for the multigrid solvers, one for cg, the
    // finer level moving more).
    let copy = v["copy_gbs"].as_f64().unwrap();
    for row in v["solvers"].as_array().unwrap() {
        let sum = &row["summary"];
        let at_copy = sum["seconds_per_iteration"].as_f64().unwrap() * copy * 1e9
            / sum["unknowns"].as_f64().unwrap();
        let got = row["bytes_per_unknown_at_copy"].as_f64().unwrap();
        assert!(
            (got - at_copy).abs() <= 1e-9 * at_copy,
            "{got} against {at_copy}"
        );
        let levels: Vec<f64> = row["modelled_bytes_per_unknown"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_f64().unwrap())
            .collect();
        let expect = if row["solver"] == "cg" { 1 } else { 3 };
        assert_eq!(levels.len(), expect, "{row}");
        assert!(levels.iter().all(|&b| b > 0.0), "{levels:?}");
        assert!(levels.windows(2).all(|w| w[0] > w[1]), "{levels:?}");
    }
    assert!(out.contains("bytes per unknown and iteration"), "{out}");
}

/// A coefficient file of an 8 × 8 × 4 problem: kx varies, kz has a jump; `bad` puts a negative
/// value into kx.
fn coefficient_file(name: &str, bad: bool) -> PathBuf {
    use strata::io::{write_fields, FieldGrid, OutputField, Overwrite};
    let path = tmp(name);
    let p = strata::problem::ProblemParams {
        n: 8,
        nz: 4,
        ..Default::default()
    };
    let len = 8 * 8 * 4;
    let mut kx: Vec<f64> = (0..len).map(|c| 1.0 + (c % 7) as f64).collect();
    let kz: Vec<f64> = (0..len)
        .map(|c| if c % 4 >= 2 { 100.0 } else { 1.0 })
        .collect();
    if bad {
        kx[37] = -1.0;
    }
    let field = |name, values| OutputField {
        name,
        long_name: name,
        units: "1",
        cell_methods: None,
        values,
    };
    write_fields(
        &path,
        &FieldGrid { params: p },
        &[field("kx", &kx), field("kz", &kz)],
        Overwrite::Replace,
    )
    .unwrap();
    path
}

#[test]
fn coefficient_files_drive_the_general_operator() {
    let good = coefficient_file("coeffs.nc", false);
    let g = good.to_str().unwrap();
    for solver in ["gcr", "bicgstab", "mg-cg", "cg"] {
        let o = strata(&[
            "solve",
            "--n",
            "8",
            "--nz",
            "4",
            "--levels",
            "2",
            "--solver",
            solver,
            "--backend",
            "cpu",
            "-q",
            "--coefficients",
            g,
        ]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{solver}: {err}");
        assert!(out.contains("ConvergedRtol"), "{solver}: {out}");
    }
    let bad = coefficient_file("bad-coeffs.nc", true);
    assert_error(
        &[
            "solve",
            "--n",
            "8",
            "--nz",
            "4",
            "--levels",
            "2",
            "--backend",
            "cpu",
            "--coefficients",
            bad.to_str().unwrap(),
        ],
        "variable 'kx' must be finite and positive, but is -1 at (y=1, x=1, z=1)",
    );
    assert_error(
        &[
            "solve",
            "--n",
            "16",
            "--nz",
            "4",
            "--levels",
            "2",
            "--coefficients",
            g,
        ],
        "has shape [8, 8, 4]",
    );
    // The exported matrix is the operator strata assembles from the same file.
    let mtx = tmp("op.mtx");
    let o = strata(&[
        "operator",
        "--n",
        "8",
        "--nz",
        "4",
        "--coefficients",
        g,
        "--export",
        mtx.to_str().unwrap(),
        "--force",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let read = strata::io::read_matrix_market(&mtx).unwrap();
    let mut p = strata::problem::ProblemParams {
        n: 8,
        nz: 4,
        ..Default::default()
    };
    p.coefficients = Some(std::sync::Arc::new(
        strata::io::read_coefficients(&good, 8, 4, 1.0).unwrap(),
    ));
    assert_eq!(read, strata::matrix::assemble(&p).unwrap());
    assert!(mtx.with_extension("rhs.mtx").exists());
}

#[test]
fn output_files_follow_the_cf_conventions() {
    let nc = tmp("cf.nc");
    let o = strata(&[
        "solve",
        "--n",
        "8",
        "--nz",
        "4",
        "--levels",
        "1",
        "--graded",
        "--cfl",
        "3",
        "-q",
        "--output",
        nc.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(text(&o).0.contains(if strata::io::NcFormat::NETCDF4_BUILT {
        "(netcdf4)"
    } else {
        "(netcdf3)"
    }));
    let ds = strata::io::Dataset::open(&nc).unwrap();
    assert_eq!(ds.text(None, "Conventions").as_deref(), Some("CF-1.8"));
    // The solution is a point value (not volume-integrated like the right-hand side).
    assert_eq!(ds.text(Some("u"), "units").as_deref(), Some("1"));
    assert!(!ds.text(Some("u"), "long_name").unwrap().contains("volume"));
    assert_eq!(
        ds.text(Some("rhs"), "cell_methods").as_deref(),
        Some("y: x: z: sum")
    );
    assert!(ds.var("z_face").is_some(), "no vertical faces");
    assert!(ds
        .text(None, "vertical_grid")
        .unwrap()
        .starts_with("graded"));
    let omega = ds.number(None, "omega").unwrap();
    assert!((omega - 3.0 * (2.0 / 8.0) / 2.0).abs() < 1e-15, "{omega}");
}

/// `--precision mixed`: said in the solver line, the iterations of fp64 for every solver with
/// a multigrid; refused, clearly, for cg and for a precision that does not exist.
#[test]
fn mixed_precision_from_the_command_line() {
    let line = |o: &Output, key: &str| {
        text(o)
            .0
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .map(|l| l.to_string())
            .unwrap_or_default()
    };
    for solver in ["mg", "mg-cg", "gcr", "bicgstab"] {
        let base = [
            "solve",
            "--n",
            "32",
            "--nz",
            "16",
            "--levels",
            "3",
            "--backend",
            "cpu",
            "--solver",
            solver,
            "--rtol",
            "1e-8",
        ];
        let f64_run = strata(&base);
        let mut args = base.to_vec();
        args.extend(["--precision", "mixed"]);
        let mixed = strata(&args);
        assert!(mixed.status.success(), "{solver}: {}", text(&mixed).1);
        assert!(
            text(&mixed).0.contains("mixed precision (fp32 multigrid)"),
            "{solver}"
        );
        assert_eq!(
            line(&mixed, "iterations"),
            line(&f64_run, "iterations"),
            "{solver}"
        );
    }
    assert_error(
        &[
            "solve",
            "--n",
            "32",
            "--nz",
            "8",
            "--solver",
            "cg",
            "--precision",
            "mixed",
        ],
        "precision",
    );
    let o = strata(&["solve", "--n", "32", "--precision", "fp16"]);
    assert!(!o.status.success());
    assert!(text(&o).1.contains("fp16"), "{}", text(&o).1);
}

/// The singular sphere (δ = 0) from the command line: refused without --project-rhs (exit 1,
/// saying why), solved with it, the right-hand side's incompatible part reported.
#[test]
fn the_singular_sphere_with_project_rhs() {
    let base = [
        "solve",
        "--geometry",
        "sphere",
        "--delta",
        "0",
        "--n",
        "16",
        "--nz",
        "8",
        "--backend",
        "cpu",
        "-q",
    ];
    let o = strata(&base);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("--project-rhs"), "{}", text(&o).1);
    let o = strata(&[&base[..], &["--project-rhs"]].concat());
    assert!(o.status.success(), "{}", text(&o).1);
    let out = text(&o).0;
    assert!(
        out.contains("singular problem") && out.contains("projected out"),
        "{out}"
    );
}

/// --orography (docs/MODEL.md §23): Schär's mountain solves and says so in the problem line; a
/// file without the variable, a mountain above the lid, an unknown key, the flat manufactured
/// solution over terrain, a box's heights on the sphere and the sphere's two-point stencil are
/// one-line errors naming the option; the sphere's heights read back from its output file.
#[test]
fn orography_solves_and_bad_orography_is_refused() {
    let common = [
        "solve",
        "--geometry",
        "box",
        "--n",
        "32",
        "--nz",
        "16",
        "--levels",
        "3",
    ];
    let mut args = common.to_vec();
    args.extend(["--height", "0.1", "--orography", "schaer:slope=0.5", "-q"]);
    let o = strata(&args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("orography up to") && out.contains("steepest slope 0.4"),
        "{out}"
    );
    // A file without the variable: a solution file of the same size.
    let file = tmp("no-orography.nc");
    let mut args = common.to_vec();
    let path = file.to_str().unwrap();
    args.extend(["-q", "--output", path, "--format", "netcdf3", "--force"]);
    assert!(strata(&args).status.success());
    let mut args = common.to_vec();
    args.extend(["--orography", path]);
    assert_error(&args, "no variable 'orography'");
    let mut args = common.to_vec();
    args.extend(["--orography", "schaer:slope=0.5"]);
    assert_error(&args, "at or above the model top");
    // clap's own error for a value it cannot parse (with its --help hint).
    let mut args = common.to_vec();
    args.extend(["--orography", "schaer:height=1"]);
    let o = strata(&args);
    let (_, err) = text(&o);
    assert!(!o.status.success() && !err.contains("panicked"), "{err}");
    assert!(err.contains("the mountain takes slope, a and l"), "{err}");
    let mut args = common.to_vec();
    args.extend([
        "--height",
        "0.1",
        "--orography",
        "schaer",
        "--rhs",
        "manufactured",
    ]);
    assert_error(&args, "--rhs manufactured");
    // The sphere (docs/MODEL.md §23.6): its mountain solves, its output file's orography
    // (panel, y, x) reads back, a box's (y, x) file and the two-point stencil are refused.
    let sphere = [
        "solve",
        "--geometry",
        "sphere",
        "--n",
        "16",
        "--nz",
        "8",
        "--levels",
        "3",
        "--height",
        "0.1",
    ];
    let out_file = tmp("sphere-orography.nc");
    let mut args = sphere.to_vec();
    let sphere_path = out_file.to_str().unwrap();
    args.extend([
        "--orography",
        "schaer:slope=0.3",
        "--output",
        sphere_path,
        "--force",
    ]);
    let o = strata(&args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("orography up to"), "{out}");
    let mut args = sphere.to_vec();
    args.extend(["--orography", sphere_path, "-q"]);
    let o = strata(&args);
    assert!(o.status.success(), "{}", text(&o).1);
    let box_file = tmp("box-orography.nc");
    let box_path = box_file.to_str().unwrap();
    let mut args = common.to_vec();
    args[4] = "16";
    args.extend([
        "--height",
        "0.1",
        "--orography",
        "schaer:slope=0.5",
        "-q",
        "--output",
        box_path,
        "--force",
    ]);
    assert!(strata(&args).status.success());
    let mut args = sphere.to_vec();
    args.extend(["--orography", box_path]);
    assert_error(&args, "(panel, y, x)");
    let mut args = sphere.to_vec();
    args.extend([
        "--orography",
        "schaer:slope=0.3",
        "--sphere-stencil",
        "two-point",
    ]);
    assert_error(&args, "nine-point");
}
