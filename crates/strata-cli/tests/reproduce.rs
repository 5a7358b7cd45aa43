//! `strata reproduce`: every experiment at a tiny size writes a well-formed CSV and non-empty
//! PNG plots of the right dimensions.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("strata runs")
}

fn strata(args: &[&str]) {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strata-reproduce-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Rows of a CSV with `cols` columns after its header, every numeric-looking header's column
/// parsing as a number.
fn csv(path: &Path, header: &str, numeric: &[usize]) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header), "{}", path.display());
    let cols = header.split(',').count();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    for r in &rows {
        assert_eq!(r.len(), cols, "{}: {r:?}", path.display());
        for &c in numeric {
            assert!(
                r[c].parse::<f64>().is_ok_and(f64::is_finite),
                "{}: column {c} of {r:?}",
                path.display()
            );
        }
    }
    rows
}

/// A PNG of 900 × 600 pixels with more than a blank image's bytes.
fn png(path: &Path) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    let w = u32::from_be_bytes(b[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(b[20..24].try_into().unwrap());
    assert_eq!((w, h), (900, 600), "{}", path.display());
    assert!(
        b.len() > 10_000,
        "{} looks empty ({} bytes)",
        path.display(),
        b.len()
    );
}

#[test]
fn timing_table() {
    let d = dir("timing");
    strata(&[
        "reproduce",
        "timing",
        "--sizes",
        "16,32",
        "--nz",
        "8",
        "--backend",
        "cpu",
        "--out",
        d.to_str().unwrap(),
    ]);
    let rows = csv(
        &d.join("timing.csv"),
        "solver,n,t_iter_ms,gflops,bandwidth_percent_of_copy,iterations,transfer_ms,total_ms,paper_t_iter_ms,paper_gflops,paper_bandwidth_percent_of_peak,paper_iterations",
        &[1, 2, 3, 4, 5, 6, 7],
    );
    assert_eq!(rows.len(), 4);
    png(&d.join("timing.png"));
}

#[test]
fn robustness_sweep() {
    let d = dir("robustness");
    strata(&[
        "reproduce",
        "robustness",
        "--n",
        "32",
        "--nz",
        "8",
        "--cfl",
        "2.1,84",
        "--backend",
        "cpu",
        "--out",
        d.to_str().unwrap(),
    ]);
    let rows = csv(
        &d.join("robustness.csv"),
        "nu,solver,levels,coarse_steps,iterations,seconds,reason",
        &[0, 2, 3, 4, 5],
    );
    // cg, mg with 5 levels, mg-cg, at two values of nu; 84 takes 30 coarse steps on 5 levels.
    assert_eq!(rows.len(), 6);
    assert!(rows
        .iter()
        .any(|r| r[0] == "84" && r[1] == "mg 5 levels" && r[3] == "30"));
    png(&d.join("robustness-iterations.png"));
    png(&d.join("robustness-time.png"));
}

#[test]
fn multigrid_breakdown() {
    let d = dir("breakdown");
    strata(&[
        "reproduce",
        "breakdown",
        "--n",
        "32",
        "--nz",
        "8",
        "--levels",
        "4",
        "--cycles",
        "2",
        "--backend",
        "cpu",
        "--out",
        d.to_str().unwrap(),
    ]);
    let rows = csv(
        &d.join("breakdown.csv"),
        "kernel,level,columns,calls,ms_per_call",
        &[1, 2, 3, 4],
    );
    // Smooth on 4 levels, RestrictSmooth on 3, Residual and Prolongate on 3.
    assert_eq!(rows.len(), 13);
    png(&d.join("breakdown.png"));
}

#[test]
fn scaling_rows_accumulate() {
    let d = dir("scaling");
    for _ in 0..2 {
        strata(&[
            "reproduce",
            "scaling",
            "--n",
            "32",
            "--nz",
            "8",
            "--backend",
            "cpu",
            "--out",
            d.to_str().unwrap(),
        ]);
    }
    let rows = csv(
        &d.join("scaling.csv"),
        "ranks,n,solver,iterations,t_iter_ms,solve_s,halo_share,t_iter_profiled_ms,halo",
        &[0, 1, 3, 4, 5, 6, 7],
    );
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r[8] == "none"), "{rows:?}");
    png(&d.join("scaling-time.png"));
    png(&d.join("scaling-efficiency.png"));
    png(&d.join("scaling-weak.png"));
}

#[test]
fn scaling_refuses_a_csv_of_other_columns() {
    let d = dir("scaling-old");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("scaling.csv"), "ranks,n,solver\n1,32,cg\n").unwrap();
    let o = run(&[
        "reproduce",
        "scaling",
        "--n",
        "32",
        "--nz",
        "8",
        "--backend",
        "cpu",
        "--out",
        d.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("has other columns"), "{err}");
    // Nothing lost: the old file is left as it was.
    assert_eq!(
        std::fs::read_to_string(d.join("scaling.csv")).unwrap(),
        "ranks,n,solver\n1,32,cg\n"
    );
}
