//! Scaling under mpirun: each run (one rank count, one size) appends its rows to `scaling.csv`;
//! the plots are redrawn from every row there. Strong scaling: the same `--n` on 1, 2, 4, …
//! ranks; weak scaling: `--n` growing with the ranks.

use super::plot::{line_plot, Axes, Series};
use super::{out_dir, Common};
use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::CliResult;
use clap::Args;
use std::collections::BTreeMap;
use std::process::ExitCode;
use strata::backend::Backend;
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{Kernel, MgParams, SolveInfo, SolveParams, SolverKind};
use strata::stencil::Block;

/// Options of `strata reproduce scaling`.
#[derive(Args, Debug)]
pub struct ScalingArgs {
    /// Horizontal cells per direction of the global problem.
    #[arg(long, default_value_t = 64)]
    pub n: usize,
    #[command(flatten)]
    pub common: Common,
}

/// Runs one scaling point and redraws the plots.
pub fn run(a: ScalingArgs, job: &Job) -> CliResult<ExitCode> {
    out_dir(&a.common.out)?;
    with_backend(&a.common.backend.clone(), job, Task { a, job })
}

struct Task<'a> {
    a: ScalingArgs,
    job: &'a Job,
}

const HEADER: &str = "ranks,n,solver,iterations,t_iter_ms,solve_s,halo_share";

impl BackendTask for Task<'_> {
    type Output = ExitCode;

    fn run<B: Backend + 'static>(self, b: &B) -> CliResult<ExitCode> {
        let (a, job) = (self.a, self.job);
        let p = ProblemParams {
            n: a.n,
            nz: a.common.nz,
            ..Default::default()
        };
        let mg = MgParams::default();
        let params = SolveParams {
            profile: true,
            ..Default::default()
        };
        let mut rows = vec![];
        for kind in [SolverKind::Cg, SolverKind::Mg] {
            let info = solve(b, job, &p, kind, &mg, &params)?;
            let Some(info) = info else { continue };
            let prof = info.profile.as_ref().ok_or("no profile")?;
            let (mut halo, mut all) = (0.0, 0.0);
            for lev in &prof.levels {
                for k in Kernel::ALL {
                    all += lev[k as usize].seconds;
                }
                halo += lev[Kernel::Halo as usize].seconds;
            }
            let t_iter = 1e3 * info.seconds / info.iterations.max(1) as f64;
            rows.push(format!(
                "{},{},{},{},{t_iter:.4},{:.6},{:.4}",
                job.size(),
                a.n,
                kind.name(),
                info.iterations,
                info.seconds,
                halo / all.max(1e-300)
            ));
        }
        if !job.is_root() {
            return Ok(ExitCode::SUCCESS);
        }
        let path = a.common.out.join("scaling.csv");
        let mut text = std::fs::read_to_string(&path).unwrap_or_else(|_| format!("{HEADER}\n"));
        for r in &rows {
            println!("{r}");
            text.push_str(r);
            text.push('\n');
        }
        std::fs::write(&path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("appended to {}", path.display());
        plot(&a.common.out, &text)
    }
}

/// One solve on all ranks; the root gets the record.
fn solve<B: Backend + 'static>(
    b: &B,
    job: &Job,
    p: &ProblemParams,
    kind: SolverKind,
    mg: &MgParams,
    params: &SolveParams,
) -> CliResult<Option<SolveInfo>> {
    if job.size() == 1 {
        crate::solve::validate(b, p, kind, mg, params)?;
        let rhs = build_rhs(p, RhsKind::Random, 1, &Block::whole(p.n));
        return Ok(Some(
            strata::solve(b, p, kind, mg, params, &rhs, &mut |_, _| {})?.info,
        ));
    }
    #[cfg(feature = "mpi")]
    {
        let info = crate::distributed::timed_solve(b, job, p, kind, mg, params)?;
        Ok(job.is_root().then_some(info))
    }
    #[cfg(not(feature = "mpi"))]
    Err("more than one rank needs strata built with --features strata-cli/mpi".into())
}

/// Redraws t_iter and parallel efficiency against the ranks from all rows of the CSV.
fn plot(out: &std::path::Path, csv: &str) -> CliResult<ExitCode> {
    // (solver, n) → [(ranks, t_iter)]
    let mut lines: BTreeMap<(String, usize), Vec<(f64, f64)>> = BTreeMap::new();
    for l in csv.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        if f.len() < 7 {
            continue;
        }
        let (Ok(ranks), Ok(n), Ok(t)) = (
            f[0].parse::<f64>(),
            f[1].parse::<usize>(),
            f[4].parse::<f64>(),
        ) else {
            continue;
        };
        lines
            .entry((f[2].to_string(), n))
            .or_default()
            .push((ranks, t));
    }
    let mut time = vec![];
    let mut eff = vec![];
    for ((solver, n), mut pts) in lines {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts.dedup_by(|a, b| a.0 == b.0);
        if let Some(&(r1, t1)) = pts.first() {
            eff.push(Series {
                label: format!("{solver}, n = {n}"),
                points: pts
                    .iter()
                    .map(|&(r, t)| (r, 100.0 * (t1 * r1) / (t * r)))
                    .collect(),
                reference: false,
            });
        }
        time.push(Series {
            label: format!("{solver}, n = {n}"),
            points: pts,
            reference: false,
        });
    }
    let png = out.join("scaling-time.png");
    line_plot(
        &png,
        &Axes {
            title: "Time per iteration against ranks",
            x: "ranks",
            y: "t_iter [ms]",
            log_x: true,
            log_y: true,
            legend_right: false,
        },
        &time,
    )?;
    println!("wrote {}", png.display());
    let png = out.join("scaling-efficiency.png");
    line_plot(
        &png,
        &Axes {
            title: "Strong-scaling efficiency (same n)",
            x: "ranks",
            y: "efficiency [%]",
            log_x: true,
            log_y: false,
            legend_right: true,
        },
        &eff,
    )?;
    println!("wrote {}", png.display());
    Ok(ExitCode::SUCCESS)
}
