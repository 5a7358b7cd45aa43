//! `strata solve`: one solve, its convergence history and a summary in the paper's terms; on
//! one process here, under mpirun in [`distributed`].

mod args;
#[cfg(feature = "mpi")]
mod distributed;
mod output;

pub use args::{rhs_kind, RhsArg, SolveArgs};

use self::args::{output_format, overwrite, rank_grid, Setup};
use self::output::{print_header, progress, report};
use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::CliResult;
use std::process::ExitCode;
use strata::backend::Backend;
use strata::grid::{Decomposition, RankGrid};
use strata::io::{
    check_writable, read_coefficients_block, read_coefficients_panels, read_panels, Overwrite,
};
use strata::problem::{build_rhs_tiles, ProblemParams};
use strata::solver::SolverConfig;
use strata_session::OnBackend;

/// Runs `strata solve`.
pub fn run(args: SolveArgs, job: &Job) -> CliResult<ExitCode> {
    rank_grid(args.ranks.as_deref(), job.size())?;
    // Files are checked before any work, so that a long solve never ends in an unwritable path.
    if job.is_root() {
        if let Some(path) = &args.json {
            check_writable(path, Overwrite::Replace, "json")?;
        }
        if let Some(path) = &args.output {
            output_format(&args)?;
            check_writable(path, overwrite(args.force), "output")?;
        }
    }
    with_backend(&args.backend.clone(), job, Task { args, job })
}

struct Task<'a> {
    args: SolveArgs,
    job: &'a Job,
}

impl BackendTask for Task<'_> {
    type Output = ExitCode;

    fn run<B: OnBackend>(self, backend: Box<B>) -> CliResult<ExitCode> {
        let a = self.args;
        let mut setup = Setup::new(&a);
        setup.p.orography = a.problem.params_read(a.n)?.orography;
        if setup.p.orography.is_some() && matches!(a.rhs, RhsArg::Manufactured) {
            return Err(
                "--rhs manufactured is the flat ground's manufactured solution, whose \
                        error over --orography would mean nothing: use --rhs random or bump (the \
                        terrain's manufactured solution is a test, docs/MODEL.md §23.4)"
                    .into(),
            );
        }
        if let Some(path) = &a.coefficients {
            setup.p.validate()?;
            let p = &setup.p;
            let blocks =
                !p.geometry.closed() && !p.boundaries.any_periodic() && p.orography.is_none();
            let c = if self.job.size() > 1 && blocks {
                // A rank of a panel or box keeps only its block's fields (at most one whole
                // variable at a time in memory while the file is read). Across a periodic
                // edge a block keeps no ring, and over orography the terrain's factors read
                // the neighbours' fields: there every rank keeps the whole level's.
                let grid = args::rank_grid(a.ranks.as_deref(), self.job.size())?;
                let block = setup.cfg.decompose(p, grid)?.fine_block(self.job.rank());
                read_coefficients_block(path, p.n, p.nz, p.delta, block)?
            } else {
                read_coefficients_panels(path, p.panels(), p.n, p.nz, p.delta)?
            };
            setup.p.coefficients = Some(std::sync::Arc::new(c));
        }
        let Setup { p, cfg } = &setup;
        if self.job.size() > 1 {
            #[cfg(feature = "mpi")]
            return distributed::solve(&a, &setup, backend, self.job);
        }
        let backend: &B = &backend;
        validate(backend, p, cfg, RankGrid::single())?;
        let rhs = match &a.rhs_file {
            // On the sphere the six panels, whole: the host order of one process's tiles.
            Some(path) => read_panels(path, &a.rhs_var, p.panels(), p.n, p.nz)?,
            None => build_rhs_tiles(p, rhs_kind(a.rhs), a.seed, &p.whole_tiles()),
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

/// Every check that can be made before allocating anything large (the library's own checks;
/// the errors name the library's parameters, which `main` maps to flags).
pub fn validate<B: Backend>(
    backend: &B,
    p: &ProblemParams,
    cfg: &SolverConfig,
    grid: RankGrid,
) -> CliResult<Decomposition> {
    p.validate()?;
    let dec = cfg.decompose(p, grid)?;
    strata::check_memory(backend, p, cfg)?;
    Ok(dec)
}
