//! `strata operator`: the assembled fine-level matrix and right-hand side as Matrix Market files,
//! for checking with SciPy or PETSc and for comparing with other solvers.

use crate::options::ProblemArgs;
use crate::solve::RhsArg;
use crate::CliResult;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use strata::io::{
    check_writable, read_coefficients_panels, write_matrix_market, write_vector_market, Overwrite,
};

/// Options of `strata operator`.
#[derive(Args, Debug)]
pub struct OperatorArgs {
    /// Horizontal cells per direction.
    #[arg(long, default_value_t = 16)]
    pub n: usize,
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Per-cell coefficient fields (kx, ky, kz, beta) from a NetCDF file, as `strata solve`.
    #[arg(long, value_name = "FILE.nc")]
    pub coefficients: Option<PathBuf>,
    /// Right-hand side written beside the matrix.
    #[arg(long, value_enum, default_value = "random")]
    pub rhs: RhsArg,
    /// Seed of the random right-hand side.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the matrix here (Matrix Market, coordinate real general, rows (j·n + i)·nz + k,
    /// 1-based); the right-hand side goes to the same name with `.rhs.mtx`.
    #[arg(long, value_name = "FILE.mtx")]
    pub export: PathBuf,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
}

/// The largest problem exported (a text file of about 40 bytes per entry, 7 entries per row).
const MAX_UNKNOWNS: u64 = 4_000_000;

/// Runs `strata operator`.
pub fn run(a: OperatorArgs) -> CliResult<ExitCode> {
    let mut p = a.problem.params_read(a.n)?;
    p.validate()?;
    if p.unknowns() > MAX_UNKNOWNS {
        return Err(format!(
            "--n {} --nz {}: {} unknowns; export is meant for checking small problems (at most {MAX_UNKNOWNS})",
            p.n,
            p.nz,
            p.unknowns()
        )
        .into());
    }
    let rhs_path = a.export.with_extension("rhs.mtx");
    let overwrite = if a.force {
        Overwrite::Replace
    } else {
        Overwrite::Refuse
    };
    check_writable(&a.export, overwrite, "export")?;
    check_writable(&rhs_path, overwrite, "export")?;
    if let Some(path) = &a.coefficients {
        p.coefficients = Some(std::sync::Arc::new(read_coefficients_panels(
            path,
            p.panels(),
            p.n,
            p.nz,
            p.delta,
        )?));
    }
    let m = strata::matrix::assemble(&p)?;
    let kind = crate::solve::rhs_kind(a.rhs);
    let rhs = strata::problem::build_rhs_tiles(&p, kind, a.seed, &p.whole_tiles());
    let comment = vec![
        format!(
            "strata {}: {} {}x{}x{}, omega {}, lambda {}, H {}, delta {}{}",
            env!("CARGO_PKG_VERSION"),
            strata::names::Choice::name(p.geometry),
            p.n,
            p.n,
            p.nz,
            p.omega(),
            p.lambda,
            p.height,
            p.delta,
            if p.coefficients.is_some() {
                ", coefficient fields"
            } else {
                ""
            }
        ),
        if p.geometry.closed() {
            "unknown (panel, i, j, k) is row ((panel * n + j) * n + i) * nz + k + 1; rows are volume-integrated".into()
        } else {
            "unknown (i, j, k) is row (j * n + i) * nz + k + 1; rows are volume-integrated".into()
        },
    ];
    write_matrix_market(&a.export, &m, &comment)?;
    write_vector_market(&rhs_path, &rhs, &comment)?;
    println!(
        "wrote {} ({} x {}, {} entries) and {}",
        a.export.display(),
        m.size,
        m.size,
        m.values.len(),
        rhs_path.display()
    );
    Ok(ExitCode::SUCCESS)
}
