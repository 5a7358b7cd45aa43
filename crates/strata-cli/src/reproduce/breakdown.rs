//! Table "TimingBreakdownMultigrid": time per call of every MG kernel on every level.

use super::paper::BREAKDOWN_512;
use super::plot::{line_plot, Axes, Series};
use super::{out_dir, write_csv, Common};
use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::CliResult;
use clap::Args;
use std::process::ExitCode;
use strata::grid::{Block, RankGrid};
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{Kernel, SolverConfig, SolverKind};
use strata_session::OnBackend;

/// Options of `strata reproduce breakdown`.
#[derive(Args, Debug)]
pub struct BreakdownArgs {
    /// Horizontal cells per direction (the paper: 512).
    #[arg(long, default_value_t = 128)]
    pub n: usize,
    /// Multigrid levels.
    #[arg(long, default_value_t = 5)]
    pub levels: usize,
    /// V-cycles timed.
    #[arg(long, default_value_t = 5)]
    pub cycles: usize,
    #[command(flatten)]
    pub common: Common,
}

/// Runs the experiment.
pub fn run(a: BreakdownArgs, job: &Job) -> CliResult<ExitCode> {
    out_dir(&a.common.out)?;
    with_backend(&a.common.backend.clone(), job, Task { a })
}

struct Task {
    a: BreakdownArgs,
}

const KERNELS: [Kernel; 4] = [
    Kernel::Smooth,
    Kernel::RestrictSmooth,
    Kernel::Residual,
    Kernel::Prolongate,
];

impl BackendTask for Task {
    type Output = ExitCode;

    fn run<B: OnBackend>(self, b: Box<B>) -> CliResult<ExitCode> {
        let b: &B = &b;
        let a = self.a;
        let p = ProblemParams {
            n: a.n,
            nz: a.common.nz,
            ..Default::default()
        };
        // The paper's kernels: the residual stored, then RestrictSmooth.
        let cfg = SolverConfig::paper(SolverKind::Mg)
            .with_levels(a.levels)
            .with_fused_restriction(false)
            .with_max_it(a.cycles.max(1))
            .with_fixed_iterations(true)
            .with_profile(true);
        crate::solve::validate(b, &p, &cfg, RankGrid::single())?;
        let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(a.n));
        let sol = strata::solve(b, &p, &cfg, &rhs, &mut |_, _| {})?;
        let prof = sol.info.profile.ok_or("no profile was recorded")?;
        let mut rows = vec![];
        let mut series: Vec<Series> = vec![];
        println!("ms per call, level 0 = finest; paper: 512^2 x 128 on a K20X, ms per iteration");
        println!(
            "{:<15} {}",
            "kernel",
            (0..a.levels)
                .map(|l| format!("{:>9}", format!("lev {l}")))
                .collect::<String>()
        );
        for k in KERNELS {
            let mut pts = vec![];
            let mut line = format!("{:<15}", k.name());
            for lev in 0..a.levels {
                let st = prof.get(lev, k);
                if st.calls == 0 {
                    line.push_str(&format!("{:>9}", "-"));
                    continue;
                }
                let ms = 1e3 * st.seconds / st.calls as f64;
                line.push_str(&format!("{ms:>9.3}"));
                pts.push((lev as f64, ms));
                let cells = (a.n >> lev) * (a.n >> lev);
                rows.push(format!("{},{lev},{cells},{},{ms:.5}", k.name(), st.calls));
            }
            println!("{line}");
            series.push(Series {
                label: format!("{} ({})", k.name(), b.name()),
                points: pts,
                reference: false,
            });
        }
        for (name, levels) in BREAKDOWN_512 {
            let cells: String = levels
                .iter()
                .map(|v| {
                    v.map(|x| format!("{x:>9.1}"))
                        .unwrap_or_else(|| format!("{:>9}", "-"))
                })
                .collect();
            println!("{:<15} {cells}  (paper)", name);
            series.push(Series {
                label: format!("{name} (paper, 512, K20X)"),
                points: levels
                    .iter()
                    .enumerate()
                    .filter_map(|(l, v)| v.map(|x| (l as f64, x)))
                    .collect(),
                reference: true,
            });
        }
        let out = &a.common.out;
        write_csv(
            &out.join("breakdown.csv"),
            "kernel,level,columns,calls,ms_per_call",
            &rows,
        )?;
        let png = out.join("breakdown.png");
        let title = format!(
            "MG kernels per level, {n}x{n}x{nz} (level 0 = finest)",
            n = a.n,
            nz = a.common.nz
        );
        line_plot(
            &png,
            &Axes {
                title: &title,
                x: "level",
                y: "time per call [ms]",
                log_x: false,
                log_y: true,
                legend_right: true,
            },
            &series,
        )?;
        println!("wrote {}", png.display());
        Ok(ExitCode::SUCCESS)
    }
}
