//! `strata reproduce`: the paper's experiments rerun on this machine, each writing a CSV of its
//! numbers and PNG plots, and printing a table with the paper's numbers beside ours.

mod breakdown;
mod paper;
mod plot;
mod robustness;
mod scaling;
mod timing;

use crate::job::Job;
use crate::options::BackendArgs;
use crate::CliResult;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options of `strata reproduce`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// The experiment.
    #[command(subcommand)]
    pub experiment: Experiment,
}

/// Options every experiment shares.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Folder for the CSV and PNG files (created if missing).
    #[arg(long, default_value = "reproduce-out", value_name = "DIR")]
    pub out: PathBuf,
    /// Vertical cells.
    #[arg(long, default_value_t = 128)]
    pub nz: usize,
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// The experiments.
#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// Table "SingleGPUTiming": t_iter, GFLOP/s, % of measured bandwidth, iterations, transfer
    /// and total time of cg and mg over n.
    Timing(timing::TimingArgs),
    /// Figure "Robustness": iterations and time of cg, mg (5, 7, 10 levels) and mg-cg against
    /// ν_CFL.
    Robustness(robustness::RobustnessArgs),
    /// Table "TimingBreakdownMultigrid": time per call of every MG kernel on every level.
    Breakdown(breakdown::BreakdownArgs),
    /// Scaling under mpirun: run once per rank count (and size); rows accumulate in the CSV and
    /// the plots are redrawn from all of them.
    Scaling(scaling::ScalingArgs),
}

/// Runs `strata reproduce`.
pub fn run(args: ReproduceArgs, job: &Job) -> CliResult<ExitCode> {
    match args.experiment {
        Experiment::Timing(a) => timing::run(a, job),
        Experiment::Robustness(a) => robustness::run(a, job),
        Experiment::Breakdown(a) => breakdown::run(a, job),
        Experiment::Scaling(a) => scaling::run(a, job),
    }
}

/// Creates the output folder.
fn out_dir(dir: &Path) -> CliResult<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()).into())
}

/// Writes CSV text (header and rows).
fn write_csv(path: &Path, header: &str, rows: &[String]) -> CliResult<()> {
    let mut s = String::from(header);
    s.push('\n');
    for r in rows {
        s.push_str(r);
        s.push('\n');
    }
    std::fs::write(path, s).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// A progress bar on a terminal.
fn progress(len: usize) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}
