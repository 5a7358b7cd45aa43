//! `strata solve`: one solve, its convergence history and a summary in the paper's terms.

use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::options::{BackendArgs, MgArgs, ProblemArgs, SolverArg};
use crate::report::{self, Summary};
use crate::{CliError, CliResult};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use strata::backend::Backend;
use strata::grid::{Block, Decomposition, RankGrid};
use strata::io::{check_writable, read_rhs, write_fields, FieldGrid, OutputField, Overwrite};
use strata::problem::{build_rhs, manufactured_error, ProblemParams, RhsKind};
use strata::solver::{SolveParams, SolverConfig, SolverKind};
use strata::StrataError;

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

/// Halo exchange path of an MPI job.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum HaloArg {
    /// NCCL for GPU ranks when built and found, else MPI.
    Auto,
    /// MPI point-to-point through host buffers.
    Mpi,
    /// NCCL point-to-point between device buffers.
    Nccl,
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
    /// Solver.
    #[arg(long, value_enum, default_value = "mg")]
    pub solver: SolverArg,
    #[command(flatten)]
    pub mg: MgArgs,
    /// Stop when ‖r‖₂/‖r₀‖₂ < rtol (volume-integrated residuals).
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
    /// Write the solution u and the right-hand side as NetCDF-3 (CF-1.8) to this file. An
    /// existing file is kept unless --force is given; the path is checked before the solve starts.
    #[arg(long, value_name = "FILE.nc")]
    pub output: Option<PathBuf>,
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
    #[arg(long, value_enum, default_value = "auto")]
    pub halo: HaloArg,
}

/// Runs `strata solve`.
pub fn run(args: SolveArgs, job: &Job) -> CliResult<ExitCode> {
    rank_grid(args.ranks.as_deref(), job.size())?;
    // Files are checked before any work, so that a long solve never ends in an unwritable path.
    if job.is_root() {
        if let Some(path) = &args.json {
            check_writable(path, Overwrite::Replace, "json")?;
        }
        if let Some(path) = &args.output {
            check_writable(path, overwrite(args.force), "output")?;
        }
    }
    with_backend(&args.backend.clone(), job, Task { args, job })
}

struct Task<'a> {
    args: SolveArgs,
    job: &'a Job,
}

/// The solve's parameters, parsed from the options.
pub struct Setup {
    /// The problem.
    pub p: ProblemParams,
    /// The solver's settings.
    pub cfg: SolverConfig,
}

impl Setup {
    fn new(a: &SolveArgs) -> Self {
        Self {
            p: a.problem.params(a.n),
            cfg: SolverConfig::new(SolverKind::from(a.solver))
                .with_multigrid(a.mg.params())
                .with_stopping(SolveParams {
                    rtol: a.rtol,
                    max_it: a.max_it,
                    fixed_iterations: a.fixed_iterations,
                    profile: a.profile,
                }),
        }
    }
}

/// Says a library error about a parameter in terms of the flag that sets it (`levels` →
/// `--levels`), so that the checks live in the library alone.
pub fn flag_error(e: CliError) -> CliError {
    const FLAGS: [&str; 15] = [
        "n",
        "nz",
        "cfl",
        "lambda",
        "height",
        "delta",
        "levels",
        "coarse_steps",
        "rtol",
        "max_it",
        "threads",
        "device",
        "ranks",
        "output",
        "json",
    ];
    match e.downcast_ref::<StrataError>() {
        Some(StrataError::InvalidParameter { name, msg }) if FLAGS.contains(&name.as_str()) => {
            format!("--{} {msg}", name.replace('_', "-")).into()
        }
        _ => e,
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

impl BackendTask for Task<'_> {
    type Output = ExitCode;

    fn run<B: Backend + 'static>(self, backend: &B) -> CliResult<ExitCode> {
        let a = self.args;
        let setup = Setup::new(&a);
        let Setup { p, cfg } = &setup;
        if self.job.size() > 1 {
            #[cfg(feature = "mpi")]
            return crate::distributed::solve(&a, &setup, backend, self.job);
        }
        validate(backend, p, cfg, RankGrid::single())?;
        let rhs = match &a.rhs_file {
            Some(path) => read_rhs(path, &a.rhs_var, p.n, p.nz)?,
            None => build_rhs(p, rhs_kind(a.rhs), a.seed, &Block::whole(p.n)),
        };
        print_header(&a, &setup, &backend.name());
        let bar = progress(&cfg.stopping, a.quiet);
        let mut monitor = |it: usize, rel: f64| {
            if let Some(b) = &bar {
                b.set_position(it as u64);
                b.set_message(format!("rel. residual {rel:.3e}"));
            }
        };
        let sol = strata::solve(backend, p, cfg, &rhs, &mut monitor)?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        report(&a, &setup, &backend.name(), &sol, &rhs)
    }
}

/// The problem and solver lines.
pub fn print_header(a: &SolveArgs, s: &Setup, backend: &str) {
    println!(
        "{}",
        report::problem_line(&s.p, a.rhs_file.as_deref(), rhs_kind(a.rhs))
    );
    println!("{}", report::solver_line(&s.cfg, backend));
}

/// Prints the history and summary and writes the files of a finished solve (whole-grid `sol.u`
/// and `rhs`); the exit code says whether it converged.
pub fn report(
    a: &SolveArgs,
    s: &Setup,
    backend: &str,
    sol: &strata::Solution,
    rhs: &[f64],
) -> CliResult<ExitCode> {
    let (p, cfg) = (&s.p, &s.cfg);
    if !a.quiet {
        print!("{}", report::history(&sol.info));
    }
    let summary = Summary::new(p, cfg, sol);
    print!("{}", summary.table());
    if let Some(prof) = &sol.info.profile {
        print!("{}", report::profile_table(prof, p));
    }
    if matches!(a.rhs, RhsArg::Manufactured) && a.rhs_file.is_none() {
        let (emax, erms) = manufactured_error(p, &sol.u);
        println!("error vs manufactured solution: max {emax:.4e}, rms {erms:.4e}");
    }
    if let Some(path) = &a.json {
        let json = report::json(p, cfg, backend, &summary, sol)?;
        std::fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &a.output {
        write_fields(
            path,
            &FieldGrid { params: p.clone() },
            &[OutputField::solution(&sol.u), OutputField::rhs(rhs)],
            overwrite(a.force),
        )?;
        println!("wrote {}", path.display());
    }
    Ok(if sol.info.reason.converged() {
        ExitCode::SUCCESS
    } else {
        eprintln!("strata: the solve did not converge ({:?})", sol.info.reason);
        ExitCode::from(3)
    })
}

fn overwrite(force: bool) -> Overwrite {
    if force {
        Overwrite::Replace
    } else {
        Overwrite::Refuse
    }
}

pub(crate) fn rhs_kind(r: RhsArg) -> RhsKind {
    match r {
        RhsArg::Random => RhsKind::Random,
        RhsArg::Bump => RhsKind::Bump,
        RhsArg::Manufactured => RhsKind::Manufactured,
    }
}

/// Every check that can be made before allocating anything large (the library's own checks;
/// the errors name the library's parameters, which `main` maps to flags).
pub fn validate<B: Backend>(
    backend: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    grid: RankGrid,
) -> CliResult<Decomposition> {
    p.validate()?;
    let dec = cfg.validate_for(p.n, grid)?;
    strata::check_memory(backend, p, cfg)?;
    Ok(dec)
}

pub(crate) fn progress(params: &SolveParams, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(params.max_it as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} iteration {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    Some(bar)
}
