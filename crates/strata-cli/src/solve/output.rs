//! What a finished solve prints and writes: the header, the history and summary, the files.

use super::args::{output_format, overwrite, rhs_kind, RhsArg, Setup, SolveArgs};
use crate::report::{self, Summary};
use crate::CliResult;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use strata::io::{write_fields_as, FieldGrid, OutputField};
use strata::problem::manufactured_error;
use strata::solver::SolveParams;

/// The problem and solver lines.
pub fn print_header(a: &SolveArgs, s: &Setup, backend: &str) {
    println!(
        "{}",
        report::problem_line(&s.p, a.rhs_file.as_deref(), rhs_kind(a.rhs))
    );
    println!("{}", report::solver_line(&one_process(s), backend));
}

/// The configuration the library takes on one process: deeper than asked where the problem is
/// singular or its coarsest level too strongly coupled (docs/MODEL.md §9.4; ranks alike, within
/// their blocks), as the header, the summary and the JSON report say.
fn one_process(s: &Setup) -> strata::solver::SolverConfig {
    if s.p.geometry.closed() || s.p.validate().is_err() {
        s.cfg.clone()
    } else {
        strata::solver::singular_levels(&s.cfg, &s.p, &[s.p.whole_block()])
    }
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
    let (p, cfg) = (&s.p, &one_process(s));
    if !a.quiet {
        print!("{}", report::history(&sol.info));
    }
    let summary = Summary::new(p, cfg, sol);
    print!("{}", summary.table());
    // Named again after the solve: a GPU backend's name then says where its kernels came from.
    println!("  {:<17} {backend}", "backend");
    if let Some(part) = sol.info.incompatible {
        println!(
            "singular problem: the right-hand side's component along the constants was {part:.3e} \
             of its norm ({}); the answer has zero volume-weighted mean",
            if cfg.stopping.project_rhs {
                "projected out"
            } else {
                "within rtol"
            }
        );
    }
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
        let format = output_format(a)?;
        write_fields_as(
            path,
            &FieldGrid { params: p.clone() },
            &[OutputField::solution(&sol.u), OutputField::rhs(rhs)],
            overwrite(a.force),
            format,
        )?;
        println!("wrote {} ({})", path.display(), format.name());
    }
    Ok(if sol.info.reason.converged() {
        ExitCode::SUCCESS
    } else {
        eprintln!("strata: the solve did not converge ({:?})", sol.info.reason);
        ExitCode::from(3)
    })
}

/// A progress bar on a terminal, none otherwise (or with `-q`).
pub fn progress(params: &SolveParams, quiet: bool) -> Option<ProgressBar> {
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
