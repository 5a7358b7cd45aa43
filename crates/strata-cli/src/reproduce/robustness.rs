//! Figure "Robustness": iterations and time against ν_CFL.

use super::plot::{line_plot, Axes, Series};
use super::{out_dir, progress, write_csv, Common};
use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::CliResult;
use clap::Args;
use std::process::ExitCode;
use strata::grid::{max_levels, Block, RankGrid};
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata_session::OnBackend;

/// Options of `strata reproduce robustness`.
#[derive(Args, Debug)]
pub struct RobustnessArgs {
    /// Horizontal cells per direction.
    #[arg(long, default_value_t = 64)]
    pub n: usize,
    /// The values of ν_CFL (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = vec![2.1, 4.2, 8.4, 16.8, 42.0, 84.0, 168.0, 420.0, 840.0])]
    pub cfl: Vec<f64>,
    /// Most iterations of each solve (CG needs about 9 ν).
    #[arg(long, default_value_t = 3000)]
    pub max_it: usize,
    #[command(flatten)]
    pub common: Common,
}

/// Coarsest-level smoother steps the paper uses for `levels` levels at `nu` (docs/MODEL.md §9.2).
fn coarse_steps(levels: usize, nu: f64) -> usize {
    match levels {
        5 if nu > 84.0 => 150,
        5 if nu > 16.8 => 30,
        7 if nu > 84.0 => 15,
        7 if nu > 16.8 => 5,
        _ => 2,
    }
}

/// Runs the experiment.
pub fn run(a: RobustnessArgs, job: &Job) -> CliResult<ExitCode> {
    out_dir(&a.common.out)?;
    with_backend(&a.common.backend.clone(), job, Task { a })
}

struct Task {
    a: RobustnessArgs,
}

impl BackendTask for Task {
    type Output = ExitCode;

    fn run<B: OnBackend>(self, b: Box<B>) -> CliResult<ExitCode> {
        let b: &B = &b;
        let a = self.a;
        let most = max_levels(a.n, RankGrid::single());
        // (label, solver, levels): the levels the grid allows of 5, 7 and 10.
        let mut configs = vec![("cg".to_string(), SolverKind::Cg, 1)];
        for l in [5, 7, 10] {
            if l <= most {
                configs.push((format!("mg {l} levels"), SolverKind::Mg, l));
            }
        }
        if most >= 5 {
            configs.push(("mg-cg 5 levels".into(), SolverKind::MgCg, 5));
        }
        let problem = |cfl: f64| ProblemParams {
            n: a.n,
            nz: a.common.nz,
            cfl,
            ..Default::default()
        };
        for &nu in &a.cfl {
            problem(nu).validate()?;
        }
        let bar = progress(a.cfl.len() * configs.len());
        let mut rows = vec![];
        let mut its: Vec<Vec<(f64, f64)>> = vec![vec![]; configs.len()];
        let mut secs: Vec<Vec<(f64, f64)>> = vec![vec![]; configs.len()];
        println!(
            "{:>7} {:>16} {:>7} {:>6} {:>10}  reason",
            "nu", "solver", "coarse", "its", "time s"
        );
        for &nu in &a.cfl {
            let p = problem(nu);
            let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(a.n));
            for (c, (label, kind, levels)) in configs.iter().enumerate() {
                let cfg = SolverConfig::paper(*kind)
                    .with_levels(*levels)
                    .with_coarse_steps(coarse_steps(*levels, nu))
                    .with_max_it(a.max_it);
                if let Some(bar) = &bar {
                    bar.set_message(format!("{label}, nu = {nu}"));
                }
                let sol = strata::solve(b, &p, &cfg, &rhs, &mut |_, _| {})?;
                let i = sol.info;
                let steps = if *kind == SolverKind::Cg {
                    0
                } else {
                    cfg.multigrid.coarse_steps
                };
                println!(
                    "{nu:>7} {label:>16} {steps:>7} {:>6} {:>10.4}  {:?}",
                    i.iterations, i.seconds, i.reason
                );
                rows.push(format!(
                    "{nu},{label},{levels},{steps},{},{:.6},{:?}",
                    i.iterations, i.seconds, i.reason
                ));
                if i.reason.converged() {
                    its[c].push((nu, i.iterations as f64));
                    secs[c].push((nu, i.seconds));
                }
                if let Some(bar) = &bar {
                    bar.inc(1);
                }
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let out = &a.common.out;
        write_csv(
            &out.join("robustness.csv"),
            "nu,solver,levels,coarse_steps,iterations,seconds,reason",
            &rows,
        )?;
        let series = |data: &[Vec<(f64, f64)>]| -> Vec<Series> {
            configs
                .iter()
                .zip(data)
                .map(|((label, _, _), pts)| Series {
                    label: label.clone(),
                    points: pts.clone(),
                    reference: false,
                })
                .collect()
        };
        let title = format!(
            "Robustness, {n}x{n}x{nz} panel (converged solves)",
            n = a.n,
            nz = a.common.nz
        );
        let png = out.join("robustness-iterations.png");
        line_plot(
            &png,
            &Axes {
                title: &title,
                x: "ν_CFL",
                y: "iterations to rtol 1e-5",
                log_x: true,
                log_y: true,
                legend_right: false,
            },
            &series(&its),
        )?;
        println!("wrote {}", png.display());
        let png = out.join("robustness-time.png");
        line_plot(
            &png,
            &Axes {
                title: &title,
                x: "ν_CFL",
                y: "solve time [s]",
                log_x: true,
                log_y: true,
                legend_right: false,
            },
            &series(&secs),
        )?;
        println!("wrote {}", png.display());
        Ok(ExitCode::SUCCESS)
    }
}
