//! Scaling under mpirun: each run (one rank count, one size) appends its rows to `scaling.csv`;
//! the plots and tables are redrawn from every row there. Strong scaling: the same `--n` on 1, 2,
//! 4, … ranks; weak scaling: `--n` growing with the ranks (rows with about the same cells per
//! rank form a weak-scaling series).

use super::plot::{line_plot, Axes, Series};
use super::{out_dir, Common};
use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::options::choice;
use crate::CliResult;
use clap::Args;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use strata::grid::Block;
use strata::grid::RankGrid;
use strata::names::HaloPath;
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{Kernel, Profile, SolveInfo, SolverConfig, SolverKind};
use strata_session::OnBackend;

/// Options of `strata reproduce scaling`.
#[derive(Args, Debug)]
pub struct ScalingArgs {
    /// Horizontal cells per direction of the global problem.
    #[arg(long, default_value_t = 64)]
    pub n: usize,
    /// Halo exchange path on more than one rank (as `strata solve --halo`).
    #[arg(long, value_parser = choice::<HaloPath>(), default_value = "auto")]
    pub halo: HaloPath,
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

const HEADER: &str =
    "ranks,n,solver,iterations,t_iter_ms,solve_s,halo_share,t_iter_profiled_ms,halo";

/// One solver's measurement: a plain solve for the time, a profiled one for the halo share.
struct Measured {
    kind: SolverKind,
    plain: SolveInfo,
    profiled: SolveInfo,
}

/// Solves with cg and mg, each twice (plain, then profiled), with `solve` (the configurations of
/// its solves, one record per solve).
fn measure(
    mut solve: impl FnMut(&[SolverConfig]) -> CliResult<Vec<SolveInfo>>,
) -> CliResult<Vec<Measured>> {
    let mut out = vec![];
    for kind in [SolverKind::Cg, SolverKind::Mg] {
        let plain = SolverConfig::paper(kind);
        let configs = [plain.clone(), plain.with_profile(true)];
        let mut infos = solve(&configs)?.into_iter();
        let (Some(plain), Some(profiled)) = (infos.next(), infos.next()) else {
            return Err("a solve gave no record".into());
        };
        out.push(Measured {
            kind,
            plain,
            profiled,
        });
    }
    Ok(out)
}

/// The share of the profiled kernel time spent in halo exchanges.
fn halo_share(prof: &Profile) -> f64 {
    let (mut halo, mut all) = (0.0, 0.0);
    for lev in &prof.levels {
        for k in Kernel::ALL {
            all += lev[k as usize].seconds;
        }
        halo += lev[Kernel::Halo as usize].seconds;
    }
    halo / f64::max(all, 1e-300)
}

/// The profile of rank 0 as text (times only: the rates of the whole problem do not apply).
fn profile_text(prof: &Profile, p: &ProblemParams) -> String {
    let mut s = String::from("  level  kernel            calls   ms/call   total ms\n");
    for r in crate::report::profile_rows(prof, p) {
        let _ = writeln!(
            s,
            "  {:5}  {:<15} {:7} {:9.3} {:10.2}",
            r.level, r.kernel, r.calls, r.ms_per_call, r.total_ms
        );
    }
    s
}

impl BackendTask for Task<'_> {
    type Output = ExitCode;

    fn run<B: OnBackend>(self, boxed: Box<B>) -> CliResult<ExitCode> {
        let (a, job) = (self.a, self.job);
        let p = ProblemParams {
            n: a.n,
            nz: a.common.nz,
            ..Default::default()
        };
        let (results, halo) = if job.size() == 1 {
            let b: &B = &boxed;
            let rhs = build_rhs(&p, RhsKind::Random, 1, &Block::whole(p.n));
            let results = measure(|configs| {
                let mut infos = vec![];
                for cfg in configs {
                    crate::solve::validate(b, &p, cfg, RankGrid::single())?;
                    infos.push(strata::solve(b, &p, cfg, &rhs, &mut |_, _| {})?.info);
                }
                Ok(infos)
            })?;
            (results, "none".to_string())
        } else {
            distributed(boxed, job, &p, a.halo)?
        };
        if !job.is_root() {
            return Ok(ExitCode::SUCCESS);
        }
        let mut rows = vec![];
        for m in &results {
            let t_iter = |i: &SolveInfo| 1e3 * i.seconds / i.iterations.max(1) as f64;
            let prof = m.profiled.profile.as_ref().ok_or("no profile")?;
            println!(
                "{} on {} ranks, n = {}, halos by {halo}: {} iterations, {:.4} ms per iteration \
                 ({:.4} profiled); profile of rank 0:\n{}",
                m.kind.name(),
                job.size(),
                a.n,
                m.plain.iterations,
                t_iter(&m.plain),
                t_iter(&m.profiled),
                profile_text(prof, &p)
            );
            rows.push(format!(
                "{},{},{},{},{:.4},{:.6},{:.4},{:.4},{halo}",
                job.size(),
                a.n,
                m.kind.name(),
                m.plain.iterations,
                t_iter(&m.plain),
                m.plain.seconds,
                halo_share(prof),
                t_iter(&m.profiled),
            ));
        }
        let path = a.common.out.join("scaling.csv");
        let mut text = match std::fs::read_to_string(&path) {
            Ok(t) if t.lines().next() == Some(HEADER) => t,
            Ok(_) => {
                return Err(format!(
                    "{} has other columns than `{HEADER}` (an older strata?); move it away or \
                     choose another --out",
                    path.display()
                )
                .into())
            }
            Err(_) => format!("{HEADER}\n"),
        };
        for r in &rows {
            text.push_str(r);
            text.push('\n');
        }
        std::fs::write(&path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("appended to {}", path.display());
        let points = parse(&text);
        print!("{}", tables(&points));
        plot(&a.common.out, &points)
    }
}

/// The distributed measurement: one communicator for all solves (NCCL's set-up is paid once).
#[cfg(feature = "mpi")]
fn distributed<B: OnBackend>(
    b: Box<B>,
    job: &Job,
    p: &ProblemParams,
    halo: HaloPath,
) -> CliResult<(Vec<Measured>, String)> {
    use crate::backend_choice::{halo_label, ranks};
    use strata::backend::tiled::Tiled;
    use strata::comm::Comm;
    use strata::names::HaloPath;
    use strata_session::{BlockShare, RanksTask, TileShare};
    struct Run<'a> {
        p: &'a ProblemParams,
    }
    impl<B: OnBackend> RanksTask<B> for Run<'_> {
        type Output = CliResult<(Vec<Measured>, String)>;
        fn block<C: Comm<B> + 'static>(
            self,
            b: Box<B>,
            comm: C,
            share: BlockShare,
            halo: HaloPath,
        ) -> strata::Result<Self::Output> {
            let rhs = build_rhs(self.p, RhsKind::Random, 1, &share.block);
            let results = measure(|configs| {
                let mut out = vec![];
                for cfg in configs {
                    let sol = strata::solve_block(
                        b.as_ref(),
                        &comm,
                        self.p,
                        share.block,
                        cfg,
                        &rhs,
                        &mut |_, _| {},
                    )?;
                    out.push(sol.info);
                }
                Ok(out)
            });
            Ok(results.map(|r| (r, halo_label::<B>(halo))))
        }
        fn tiles<C>(
            self,
            _: Box<B>,
            _: C,
            _: TileShare,
            _: HaloPath,
        ) -> strata::Result<Self::Output>
        where
            C: Comm<Tiled<Box<B>>> + for<'a> Comm<Tiled<&'a B>> + 'static,
        {
            Ok(Err(
                "reproduce scaling measures a panel; the sphere is not offered".into(),
            ))
        }
    }
    let place = ranks(job, halo, None)?;
    let cfg = strata::solver::SolverConfig::paper(SolverKind::Mg);
    strata_session::with_ranks(b, place, p, &cfg, Run { p })?
}

#[cfg(not(feature = "mpi"))]
fn distributed<B: OnBackend>(
    _: Box<B>,
    _: &Job,
    _: &ProblemParams,
    _: HaloPath,
) -> CliResult<(Vec<Measured>, String)> {
    Err("more than one rank needs strata built with --features strata-cli/mpi".into())
}

/// A CSV row: ranks, n, solver, t_iter in ms, halo share.
struct Point {
    ranks: f64,
    n: usize,
    solver: String,
    t_iter: f64,
    halo: f64,
}

fn parse(csv: &str) -> Vec<Point> {
    let mut out = vec![];
    for l in csv.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        if f.len() < 7 {
            continue;
        }
        let (Ok(ranks), Ok(n), Ok(t_iter), Ok(halo)) = (
            f[0].parse::<f64>(),
            f[1].parse::<usize>(),
            f[4].parse::<f64>(),
            f[6].parse::<f64>(),
        ) else {
            continue;
        };
        out.push(Point {
            ranks,
            n,
            solver: f[2].to_string(),
            t_iter,
            halo,
        });
    }
    out
}

/// A scaling series: label → (ranks, t_iter, halo share), sorted by ranks, one row per rank
/// count (the latest).
type SeriesMap = BTreeMap<(String, usize), Vec<(f64, f64, f64)>>;

fn series(points: &[Point], key: impl Fn(&Point) -> usize) -> SeriesMap {
    let mut m: SeriesMap = BTreeMap::new();
    for p in points {
        let v = m.entry((p.solver.clone(), key(p))).or_default();
        v.retain(|q| q.0 != p.ranks);
        v.push((p.ranks, p.t_iter, p.halo));
    }
    for v in m.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    m
}

/// Strong series: the same n on more than one rank count.
fn strong(points: &[Point]) -> SeriesMap {
    let mut m = series(points, |p| p.n);
    m.retain(|_, v| v.len() > 1);
    m
}

/// Weak series: about the same cells per rank (within a factor 2^(1/4)), keyed by the side of
/// the square of that many columns; only series of more than one rank count.
fn weak(points: &[Point]) -> SeriesMap {
    let bucket = |p: &Point| (4.0 * ((p.n * p.n) as f64 / p.ranks).log2()).round() as usize;
    let side = |b: usize| 2f64.powf(b as f64 / 8.0).round() as usize;
    let mut m = series(points, bucket);
    m.retain(|_, v| v.len() > 1);
    m.into_iter().map(|((s, b), v)| ((s, side(b)), v)).collect()
}

/// Efficiency of each point against the first of its series; `weak`: t₁/t, else t₁r₁/(t r).
fn efficiency(v: &[(f64, f64, f64)], weak: bool) -> Vec<(f64, f64)> {
    let (r1, t1) = (v[0].0, v[0].1);
    v.iter()
        .map(|&(r, t, _)| {
            let e = if weak { t1 / t } else { t1 * r1 / (t * r) };
            (r, 100.0 * e)
        })
        .collect()
}

/// The strong- and weak-scaling tables, with the paper's numbers.
fn tables(points: &[Point]) -> String {
    let mut s = String::new();
    for (title, map, weak_kind) in [
        ("strong scaling (same n)", strong(points), false),
        (
            "weak scaling (about the same cells per rank)",
            weak(points),
            true,
        ),
    ] {
        let _ = writeln!(
            s,
            "{title}:\n  solver  {:>7}  ranks   t_iter [ms]  efficiency  halo share",
            if weak_kind { "local" } else { "n" }
        );
        for ((solver, size), v) in &map {
            for ((r, t, h), (_, e)) in v.iter().zip(efficiency(v, weak_kind)) {
                let label = if weak_kind {
                    format!("~{size}²")
                } else {
                    size.to_string()
                };
                let _ = writeln!(
                    s,
                    "  {solver:<6}  {label:>7}  {r:5}  {t:12.3}  {e:9.1}%  {:9.1}%",
                    100.0 * h
                );
            }
        }
    }
    s.push_str(
        "paper (Titan, K20X): strong scaling of 8192² x 128 from 256 GPUs: cg 84.8 % at 1024, \
         24.8 % at 4096; mg 66.4 %, 27.6 %.\n\
         paper: weak scaling at local 512² x 128, halo overhead from 1 to 64 GPUs: cg +10 %, \
         mg +40 %.\n",
    );
    s
}

/// Redraws t_iter and the efficiencies against the ranks from all rows of the CSV.
fn plot(out: &std::path::Path, points: &[Point]) -> CliResult<ExitCode> {
    let lines = |map: &SeriesMap, weak_kind: bool, eff: bool| -> Vec<Series> {
        map.iter()
            .map(|((solver, size), v)| Series {
                label: if weak_kind {
                    format!("{solver}, local ~{size}²")
                } else {
                    format!("{solver}, n = {size}")
                },
                points: if eff {
                    efficiency(v, weak_kind)
                } else {
                    v.iter().map(|&(r, t, _)| (r, t)).collect()
                },
                reference: false,
            })
            .collect()
    };
    let (s, w) = (strong(points), weak(points));
    let plots = [
        (
            "scaling-time.png",
            "Time per iteration against ranks (same n)",
            "t_iter [ms]",
            lines(&s, false, false),
            true,
        ),
        (
            "scaling-efficiency.png",
            "Strong-scaling efficiency (same n)",
            "efficiency [%]",
            lines(&s, false, true),
            false,
        ),
        (
            "scaling-weak.png",
            "Weak scaling: time per iteration (same cells per rank)",
            "t_iter [ms]",
            lines(&w, true, false),
            true,
        ),
    ];
    for (file, title, y, series, log_y) in plots {
        let png = out.join(file);
        line_plot(
            &png,
            &Axes {
                title,
                x: "ranks",
                y,
                log_x: true,
                log_y,
                legend_right: !log_y,
            },
            &series,
        )?;
        println!("wrote {}", png.display());
    }
    Ok(ExitCode::SUCCESS)
}
