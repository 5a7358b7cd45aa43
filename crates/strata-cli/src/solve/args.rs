//! The options of `strata solve` and the settings they give.

use crate::CliResult;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use strata::grid::RankGrid;
use strata::io::{NcFormat, Overwrite};
use strata::problem::{ProblemParams, RhsKind};
use strata::solver::{SolveParams, SolverConfig, SolverKind};

use crate::options::{choice, BackendArgs, MgArgs, ProblemArgs};
use strata::names::HaloPath;
use strata::solver::Preconditioner;

/// Right-hand side (command-line form).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RhsArg {
    /// Seeded uniform random values in [−1, 1) at the cell centres, volume-integrated.
    Random,
    /// A smooth Gaussian bump.
    Bump,
    /// The manufactured solution of the verification tests (the error is reported).
    Manufactured,
}

/// Options of `strata solve`.
#[derive(Args, Debug)]
pub struct SolveArgs {
    /// Horizontal cells per direction (nx = ny = n).
    #[arg(long, default_value_t = 128)]
    pub n: usize,
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Right-hand side.
    #[arg(long, value_enum, default_value = "random")]
    pub rhs: RhsArg,
    /// Seed of the random right-hand side.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Read the right-hand side from this NetCDF file instead (variable of shape (y, x, z) =
    /// (n, n, nz), volume-integrated).
    #[arg(long, value_name = "FILE.nc")]
    pub rhs_file: Option<PathBuf>,
    /// Name of the right-hand-side variable in --rhs-file.
    #[arg(
        long,
        default_value = "rhs",
        value_name = "NAME",
        requires = "rhs_file"
    )]
    pub rhs_var: String,
    /// Solver: cg, mg, mg-cg for the symmetric operator; gcr, bicgstab also for non-symmetric
    /// ones.
    #[arg(long, value_parser = choice::<SolverKind>(), default_value = "mg")]
    pub solver: SolverKind,
    /// Preconditioner of gcr and bicgstab: line (vertical line relaxation) or mg (a V-cycle).
    #[arg(long, value_parser = choice::<Preconditioner>(), default_value = "mg")]
    pub pc: Preconditioner,
    /// Directions GCR keeps before it restarts (the k of GCR(k)).
    #[arg(long, default_value_t = 5, value_name = "K")]
    pub restart: usize,
    /// Per-cell coefficient fields of the general operator from a NetCDF file: variables kx, ky,
    /// kz, beta and the advection vector xi_x, xi_y, xi_z, of shape (y, x, z) = (n, n, nz); a
    /// missing variable takes the model problem's value (1, --delta for beta, 0 for xi). With xi
    /// the operator is non-symmetric: use --solver gcr or bicgstab. Under mpirun each rank of a
    /// panel or box keeps only its block (one whole variable in memory at a time while reading).
    #[arg(long, value_name = "FILE.nc")]
    pub coefficients: Option<PathBuf>,
    #[command(flatten)]
    pub mg: MgArgs,
    /// Stop when ‖r‖₂ < rtol ‖f‖₂ (volume-integrated residuals; from the zero initial guess this
    /// is ‖r‖₂/‖r₀‖₂ < rtol).
    #[arg(long, default_value_t = 1e-5)]
    pub rtol: f64,
    /// Most iterations (CG steps or V-cycles).
    #[arg(long, default_value_t = 500)]
    pub max_it: usize,
    /// Run exactly --max-it iterations, ignoring --rtol (for timing).
    #[arg(long)]
    pub fixed_iterations: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Also time every kernel on every level (synchronises around each kernel).
    #[arg(long)]
    pub profile: bool,
    /// Write the report (parameters, history, timings) as JSON to this file (a report: replaced
    /// if it exists). Its folder is checked before the solve starts.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the solution u and the right-hand side as NetCDF (CF-1.8) to this file, in the
    /// --format. An existing file is kept unless --force is given; the path is checked before the
    /// solve starts.
    #[arg(long, value_name = "FILE.nc")]
    pub output: Option<PathBuf>,
    /// Format of --output: `netcdf4` (HDF5, the fields chunked by rows and deflated; the default
    /// of a strata built with NetCDF-4, the `netcdf4` feature) or `netcdf3` (64-bit offset,
    /// uncompressed; every build, and the default of one without NetCDF-4).
    #[arg(long, value_parser = ["netcdf4", "netcdf3"], value_name = "FORMAT")]
    pub format: Option<String>,
    /// zlib deflate level of the NetCDF-4 fields, with the shuffle filter: 0 (stored as they are)
    /// to 9.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=9), default_value_t = 1)]
    pub deflate: u8,
    /// A singular problem (--delta 0 on the sphere, or on a box or panel with no Dirichlet
    /// --boundary; the constants are its null space):
    /// remove the right-hand side's component along the constants before solving. Without it a
    /// right-hand side whose component is above --rtol of its norm is refused, saying so.
    #[arg(long)]
    pub project_rhs: bool,
    /// Replace the --output file if it exists (the new file is written beside it and renamed over
    /// it when complete).
    #[arg(long)]
    pub force: bool,
    /// Print only the summary, not the per-iteration history.
    #[arg(long, short)]
    pub quiet: bool,
    /// Rank grid of an MPI job, as PXxPY (default: the most nearly square grid of the ranks).
    #[arg(long, value_name = "PXxPY")]
    pub ranks: Option<String>,
    /// Halo exchange of an MPI job: `nccl` (GPU ranks, device to device; built with the `nccl`
    /// feature), `mpi` (point-to-point, through host buffers for GPU ranks), or `auto` (NCCL for
    /// GPU ranks where it is built and found, else MPI).
    #[arg(long, value_parser = choice::<HaloPath>(), default_value = "auto")]
    pub halo: HaloPath,
}

/// The solve's parameters, parsed from the options.
pub struct Setup {
    /// The problem.
    pub p: ProblemParams,
    /// The solver's settings.
    pub cfg: SolverConfig,
}

impl Setup {
    /// The settings of the options `a`.
    pub fn new(a: &SolveArgs) -> Self {
        let p = a.problem.params(a.n);
        let cfg =
            a.mg.configure(a.solver, a.pc)
                .with_restart(a.restart)
                .with_stopping(SolveParams {
                    rtol: a.rtol,
                    max_it: a.max_it,
                    fixed_iterations: a.fixed_iterations,
                    profile: a.profile,
                    project_rhs: a.project_rhs,
                    ..Default::default()
                });
        // A singular problem's hierarchy goes as deep as the grid allows, and so does a regular
        // one's whose coarsest level its smoothing cannot solve (the library does the same for
        // each rank's tiles): on the sphere, whose ranks' tiles are made for the levels, here;
        // a panel's or box's ranks split the fine level for the levels asked, and the header
        // says the depth of one process (`print_header`).
        let cfg = if p.geometry.closed() && p.n > 0 && p.validate().is_ok() {
            strata::solver::singular_levels(&cfg, &p, &strata::grid::sphere::tiles(p.n, 1))
        } else {
            cfg
        };
        Self { p, cfg }
    }
}

/// The rank grid `--ranks` asks for (default: the most nearly square grid of the job's ranks),
/// checked against the job's size.
pub fn rank_grid(ranks: Option<&str>, job_size: usize) -> CliResult<RankGrid> {
    let Some(r) = ranks else {
        return Ok(RankGrid::choose(job_size));
    };
    let grid = RankGrid::parse(r)
        .ok_or_else(|| format!("--ranks {r}: expected PXxPY with positive PX and PY, e.g. 2x2"))?;
    if grid.size() != job_size {
        return Err(format!(
            "--ranks {r} needs {} processes, the job has {job_size}{}",
            grid.size(),
            if job_size == 1 {
                " (start it with mpirun -n N, with a strata built with --features mpi)"
            } else {
                ""
            }
        )
        .into());
    }
    Ok(grid)
}

/// The --output file's format; an error (before any work) for NetCDF-4 in a build without it.
pub fn output_format(a: &SolveArgs) -> CliResult<NcFormat> {
    let netcdf4 = NcFormat::Netcdf4 { deflate: a.deflate };
    match a.format.as_deref() {
        None if NcFormat::NETCDF4_BUILT => Ok(netcdf4),
        None | Some("netcdf3") => Ok(NcFormat::Classic),
        _ if NcFormat::NETCDF4_BUILT => Ok(netcdf4),
        _ => Err(
            "--format netcdf4: this strata was built without NetCDF-4 (build it with \
                  --features netcdf4, which needs libnetcdf), or write --format netcdf3"
                .into(),
        ),
    }
}

pub fn overwrite(force: bool) -> Overwrite {
    if force {
        Overwrite::Replace
    } else {
        Overwrite::Refuse
    }
}

pub fn rhs_kind(r: RhsArg) -> RhsKind {
    match r {
        RhsArg::Random => RhsKind::Random,
        RhsArg::Bump => RhsKind::Bump,
        RhsArg::Manufactured => RhsKind::Manufactured,
    }
}
