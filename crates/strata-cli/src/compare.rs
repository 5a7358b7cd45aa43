//! `strata compare`: the largest difference between a variable of two NetCDF files.

use crate::CliResult;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use strata::io::read_field;

/// Options of `strata compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// First file.
    pub a: PathBuf,
    /// Second file.
    pub b: PathBuf,
    /// Variable to compare.
    #[arg(long, default_value = "u")]
    pub var: String,
    /// Fail (exit status 1) when max |a − b| / max |b| exceeds this.
    #[arg(long, default_value_t = 1e-10)]
    pub rtol: f64,
}

/// Runs `strata compare`.
pub fn run(a: CompareArgs) -> CliResult<ExitCode> {
    let (x, sx) = read_field(&a.a, &a.var)?;
    let (y, sy) = read_field(&a.b, &a.var)?;
    if sx != sy {
        return Err(format!(
            "'{}' has shape {sx:?} in {} but {sy:?} in {}",
            a.var,
            a.a.display(),
            a.b.display()
        )
        .into());
    }
    let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = x
        .iter()
        .zip(&y)
        .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
    let rel = if scale > 0.0 { diff / scale } else { diff };
    println!(
        "{}: max |a - b| = {diff:.3e}, relative to max |b| = {rel:.3e}",
        a.var
    );
    Ok(if rel <= a.rtol {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "strata compare: relative difference {rel:.3e} exceeds {:e}",
            a.rtol
        );
        ExitCode::FAILURE
    })
}
