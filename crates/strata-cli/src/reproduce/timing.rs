//! Table "SingleGPUTiming" on this machine.

use super::paper::single_gpu;
use super::plot::{line_plot, Axes, Series};
use super::{out_dir, progress, write_csv, Common};
use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::report::Summary;
use crate::CliResult;
use clap::Args;
use std::process::ExitCode;
use strata::grid::{Block, RankGrid};
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata_session::OnBackend;

/// Options of `strata reproduce timing`.
#[derive(Args, Debug)]
pub struct TimingArgs {
    /// Horizontal sizes n (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = vec![64, 128, 256])]
    pub sizes: Vec<usize>,
    #[command(flatten)]
    pub common: Common,
}

/// Runs the experiment.
pub fn run(a: TimingArgs, job: &Job) -> CliResult<ExitCode> {
    out_dir(&a.common.out)?;
    with_backend(&a.common.backend.clone(), job, Task { a })
}

struct Task {
    a: TimingArgs,
}

impl BackendTask for Task {
    type Output = ExitCode;

    fn run<B: OnBackend>(self, b: Box<B>) -> CliResult<ExitCode> {
        let b: &B = &b;
        let a = self.a;
        for &n in &a.sizes {
            let p = ProblemParams {
                n,
                nz: a.common.nz,
                ..Default::default()
            };
            let cfg = SolverConfig::paper(SolverKind::Mg);
            crate::solve::validate(b, &p, &cfg, RankGrid::single())?;
        }
        let copy = b.copy_bandwidth(256 << 20, 10)? / 1e9;
        println!("backend {}, copy bandwidth {copy:.2} GB/s", b.name());
        let bar = progress(2 * a.sizes.len());
        let mut rows = vec![];
        let mut table = String::new();
        let mut ours: [Vec<(f64, f64)>; 2] = Default::default();
        for &n in &a.sizes {
            let p = ProblemParams {
                n,
                nz: a.common.nz,
                ..Default::default()
            };
            let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(n));
            for (s, kind) in [SolverKind::Cg, SolverKind::Mg].into_iter().enumerate() {
                if let Some(bar) = &bar {
                    bar.set_message(format!("{} n = {n}", kind.name()));
                }
                let cfg = SolverConfig::paper(kind);
                let sol = strata::solve(b, &p, &cfg, &rhs, &mut |_, _| {})?;
                let m = Summary::new(&p, &cfg, &sol);
                let pct = 100.0 * m.useful_gbs / copy;
                let (t, tr) = (1e3 * m.seconds_per_iteration, 1e3 * m.transfer_seconds);
                let total = 1e3 * (m.solve_seconds + m.transfer_seconds);
                ours[s].push((n as f64, t));
                let paper = single_gpu(kind.name(), n);
                let cols = match paper {
                    Some(r) => [
                        r.t_iter.to_string(),
                        r.gflops.to_string(),
                        r.bw_percent.to_string(),
                        r.iterations.to_string(),
                    ],
                    None => ["-", "-", "-", "-"].map(String::from),
                };
                rows.push(format!(
                    "{},{n},{t:.4},{:.2},{pct:.1},{},{tr:.3},{total:.3},{}",
                    kind.name(),
                    m.gflops,
                    m.iterations,
                    cols.join(","),
                ));
                table.push_str(&format!(
                    "{:>5} {:>5} {:>10.3} {:>8.2} {:>6.1} {:>5} {:>10.2} {:>10.2} | {:>8} {:>7} {:>6} {:>5}\n",
                    kind.name(),
                    n,
                    t,
                    m.gflops,
                    pct,
                    m.iterations,
                    tr,
                    total,
                    cols[0],
                    cols[1],
                    cols[2],
                    cols[3],
                ));
                if let Some(bar) = &bar {
                    bar.inc(1);
                }
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        println!("solver     n  t_iter ms  GFLOP/s  % BW   its  transf ms   total ms | paper: t_iter GFLOP/s  % BW   its (K20X, % of peak)");
        print!("{table}");
        let out = &a.common.out;
        write_csv(
            &out.join("timing.csv"),
            "solver,n,t_iter_ms,gflops,bandwidth_percent_of_copy,iterations,transfer_ms,total_ms,paper_t_iter_ms,paper_gflops,paper_bandwidth_percent_of_peak,paper_iterations",
            &rows,
        )?;
        let paper = |s: &str| -> Vec<(f64, f64)> {
            super::paper::SINGLE_GPU
                .iter()
                .filter(|r| r.solver == s)
                .map(|r| (r.n as f64, r.t_iter))
                .collect()
        };
        let png = out.join("timing.png");
        line_plot(
            &png,
            &Axes {
                title: &format!("Time per iteration (nz = {}, ν = 8.4)", a.common.nz),
                x: "n (cells per direction)",
                y: "t_iter [ms]",
                log_x: true,
                log_y: true,
                legend_right: false,
            },
            &[
                Series {
                    label: format!("cg, {}", b.name()),
                    points: ours[0].clone(),
                    reference: false,
                },
                Series {
                    label: format!("mg, {}", b.name()),
                    points: ours[1].clone(),
                    reference: false,
                },
                Series {
                    label: "cg, paper (K20X)".into(),
                    points: paper("cg"),
                    reference: true,
                },
                Series {
                    label: "mg, paper (K20X)".into(),
                    points: paper("mg"),
                    reference: true,
                },
            ],
        )?;
        println!("wrote {}", png.display());
        Ok(ExitCode::SUCCESS)
    }
}
