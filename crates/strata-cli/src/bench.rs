//! `strata bench`: the machine's copy bandwidth, then per-kernel and per-solver timings at each
//! size, with useful bandwidth (paper's Mem^(C)) and moved bandwidth (strata's own traffic) as
//! fractions of the copy bandwidth measured in the same run.

use crate::backend_choice::{with_backend, BackendTask};
use crate::job::Job;
use crate::options::{choice, BackendArgs, MgArgs, ProblemArgs};
use crate::report::Summary;
use crate::solve::validate;
use crate::CliResult;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::fmt::Write;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use strata::grid::RankGrid;
use strata::perf::kernel_cost;
use strata::problem::{build_rhs_tiles, Coefficients, ProblemParams, RhsKind};
use strata::solver::{Kernel, MgParams, Preconditioner, SolveParams, SolverKind};
use strata_session::OnBackend;

/// Options of `strata bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Horizontal sizes n to time (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = vec![128, 256])]
    pub sizes: Vec<usize>,
    /// Solvers to time (comma-separated).
    #[arg(long, value_parser = choice::<SolverKind>(), value_delimiter = ',', default_values = ["cg", "mg"])]
    pub solvers: Vec<SolverKind>,
    #[command(flatten)]
    pub problem: ProblemArgs,
    #[command(flatten)]
    pub mg: MgArgs,
    /// Relative tolerance of the timed solves.
    #[arg(long, default_value_t = 1e-5)]
    pub rtol: f64,
    /// Also time every solver with smooth synthetic 3D coefficient fields (kx, ky, kz and β
    /// varying in all three directions between 1/√C and √C, `Coefficients::smooth`) on the
    /// same grid, beside the model problem; the kernels' traffic then counts the coefficient
    /// values they read.
    #[arg(long, value_name = "C")]
    pub coefficient_contrast: Option<f64>,
    /// With --coefficient-contrast: add a smooth synthetic advection vector of amplitude A to
    /// those fields (`ξ_d = A sin(3x + φ_d) cos(2y + z)`, `Coefficients::with_smooth_advection`;
    /// the panel and the box). The operator is then non-symmetric: cg and mg-cg are timed on the
    /// model problem only.
    #[arg(long, value_name = "A", requires = "coefficient_contrast")]
    pub advection: Option<f64>,
    /// Size of each array of the copy-bandwidth measurement, in MiB.
    #[arg(long, default_value_t = 512)]
    pub stream_mib: usize,
    /// Timed solves per size and solver (the fastest is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Write all numbers as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `strata bench`.
pub fn run(args: BenchArgs, job: &Job) -> CliResult<ExitCode> {
    if job.size() > 1 {
        return Err("strata bench runs on one process; use strata solve under mpirun".into());
    }
    if let Some(path) = &args.json {
        strata::io::check_writable(path, strata::io::Overwrite::Replace, "json")?;
    }
    with_backend(&args.backend.clone(), job, Task { args })
}

struct Task {
    args: BenchArgs,
}

#[derive(Serialize)]
struct KernelRow {
    n: usize,
    operator: String,
    solver: &'static str,
    level: usize,
    kernel: &'static str,
    ms_per_call: f64,
    useful_gbs: f64,
    useful_fraction: f64,
    moved_gbs: f64,
    moved_fraction: f64,
}

#[derive(Serialize)]
struct SolverRow {
    n: usize,
    operator: String,
    solver: &'static str,
    summary: Summary,
    useful_fraction: f64,
    /// Kernels run and host launches per iteration, where the backend counts them
    /// ([`strata::backend::Fields::launches`]): the difference between solves of its + 2 and
    /// its iterations, halved (no set-up, no first-cycle capture).
    launches_per_iteration: Option<(f64, f64)>,
    /// Bytes per unknown and iteration that the iteration's time is worth at the copy
    /// bandwidth: t_iter × copy / unknowns (the bandwidth-bound regime's cost measure; a
    /// kernel at the copy bandwidth moves exactly this).
    bytes_per_unknown_at_copy: f64,
    /// Bytes per unknown and iteration that each level's kernels move by their traffic models
    /// ([`strata::perf::Probes::moved_values`], calls of the profiled solve; the vector
    /// updates and the halo exchanges, which have no model, are left out), level 0 first.
    modelled_bytes_per_unknown: Vec<f64>,
}

#[derive(Serialize)]
struct BenchReport {
    backend: String,
    /// The larger of the copy bandwidths measured before and after the timings: the
    /// denominator of every fraction.
    copy_gbs: f64,
    /// Copy bandwidth measured again after the timings (a check on the machine's steadiness).
    copy_gbs_after: f64,
    /// In-place update bandwidth (y += a x).
    update_gbs: f64,
    problem: ProblemParams,
    multigrid: MgParams,
    kernels: Vec<KernelRow>,
    solvers: Vec<SolverRow>,
}

impl BackendTask for Task {
    type Output = ExitCode;

    fn run<B: OnBackend>(self, backend: Box<B>) -> CliResult<ExitCode> {
        let backend: &B = &backend;
        let a = self.args;
        // The multigrid settings of the report: mg's.
        let mg =
            a.mg.configure(SolverKind::Mg, Preconditioner::Multigrid)
                .multigrid;
        let solve_params = SolveParams {
            rtol: a.rtol,
            ..Default::default()
        };
        if let Some(f) = a.problem.orography_file() {
            return Err(format!(
                "--orography {}: bench times several sizes, so it takes the generated mountain \
                 (schaer[:slope=S,a=A,l=L]), not a file of one size",
                f.display()
            )
            .into());
        }
        if let Some(c) = a.coefficient_contrast {
            if !(c.is_finite() && c >= 1.0) {
                return Err(format!(
                    "--coefficient-contrast must be a finite number of at least 1 (got {c})"
                )
                .into());
            }
        }
        if let Some(x) = a.advection {
            // Refused here, before any timing, rather than at the first size.
            Coefficients::smooth(1, 1, 1.0).with_smooth_advection(x)?;
            if a.problem.params(a.sizes[0]).geometry.closed() {
                return Err(
                    "--advection: the synthetic advection field is defined on the panel \
                            and the box, not on the sphere"
                        .into(),
                );
            }
        }
        // The operators to time at size n: the model problem, and the coefficient fields.
        let operators = |n: usize| -> CliResult<Vec<(String, ProblemParams)>> {
            let model = a.problem.params(n);
            // Over orography (--orography schaer) the flat box first, for the ratio, then the
            // terrain-following operator.
            let flat = ProblemParams {
                orography: None,
                ..model.clone()
            };
            let mut ops = vec![("model".to_string(), flat)];
            if model.orography.is_some() {
                ops.push(("terrain".to_string(), model.clone()));
            }
            if let Some(c) = a.coefficient_contrast {
                let mut coeffs = Coefficients::smooth_for(model.geometry, n, model.nz, c);
                let mut name = format!("coeff{c}");
                if let Some(x) = a.advection {
                    coeffs = coeffs.with_smooth_advection(x)?;
                    name = format!("{name}xi{x}");
                }
                ops.push((
                    name,
                    ProblemParams {
                        coefficients: Some(std::sync::Arc::new(coeffs)),
                        ..model
                    },
                ));
            }
            Ok(ops)
        };
        // Check everything before the long part.
        let config = |s: SolverKind| {
            a.mg.configure(s, Preconditioner::Multigrid)
                .with_stopping(solve_params.clone())
        };
        for &n in &a.sizes {
            for &s in &a.solvers {
                let mut p = a.problem.params(n);
                validate(backend, &p, &config(s), RankGrid::single())?;
                if a.coefficient_contrast.is_some()
                    && !(a.advection.is_some() && s.needs_symmetric())
                {
                    // The memory the coefficient fields add (the estimate needs only whether
                    // they are symmetric; a placeholder saves building them twice).
                    let mut c = Coefficients::constant(1, p.nz, 1.0);
                    if a.advection.is_some() {
                        c.xi = Some([vec![0.0; p.nz], vec![0.0; p.nz], vec![0.0; p.nz]]);
                    }
                    p.coefficients = Some(std::sync::Arc::new(c));
                    strata::check_memory(backend, &p, &config(s))?;
                }
            }
        }
        println!("backend: {}", backend.name());
        let bytes = a.stream_mib << 20;
        let copy_before = backend.copy_bandwidth(bytes, 10)? / 1e9;
        let update_before = backend.update_bandwidth(bytes, 10)? / 1e9;
        let per_size =
            1 + a.coefficient_contrast.is_some() as usize + a.problem.orography.is_some() as usize;
        let bar = progress(a.sizes.len() * a.solvers.len() * per_size);
        let copy = copy_before;
        let mut report = BenchReport {
            backend: backend.name(),
            copy_gbs: copy,
            copy_gbs_after: 0.0,
            update_gbs: update_before,
            problem: a.problem.params(a.sizes[0]),
            multigrid: mg.clone(),
            kernels: vec![],
            solvers: vec![],
        };
        for &n in &a.sizes {
            for (operator, p) in operators(n)? {
                let rhs = build_rhs_tiles(&p, RhsKind::Random, 1, &p.whole_tiles());
                // Over orography the levels have per-cell entries (symmetric) even without
                // coefficient fields.
                let symmetric = p
                    .coefficients
                    .as_ref()
                    .map(|c| c.is_symmetric())
                    .or(p.orography.as_ref().map(|_| true));
                for &s in &a.solvers {
                    if symmetric == Some(false) && s.needs_symmetric() {
                        println!(
                            "{} is not timed on {operator}: it needs a symmetric operator",
                            s.name()
                        );
                        if let Some(b) = &bar {
                            b.inc(1);
                        }
                        continue;
                    }
                    let kind: SolverKind = s;
                    let cfg = config(s);
                    let bytes_of = |k: Kernel, lev: usize| value_bytes(cfg.precision, kind, k, lev);
                    if let Some(b) = &bar {
                        b.set_message(format!("{} n = {n}", kind.name()));
                    }
                    let mut best: Option<strata::Solution> = None;
                    for _ in 0..a.repeat.max(1) {
                        let sol = strata::solve(backend, &p, &cfg, &rhs, &mut |_, _| {})?;
                        if best
                            .as_ref()
                            .is_none_or(|b| sol.info.seconds < b.info.seconds)
                        {
                            best = Some(sol);
                        }
                    }
                    let best = best.expect("at least one run");
                    let summary = Summary::new(&p, &cfg, &best);
                    let summary_unknowns = summary.unknowns as f64;
                    let frac = summary.useful_gbs / copy;
                    // Profiled run: as many iterations as the solve took.
                    let prof_cfg = cfg
                        .clone()
                        .with_max_it(best.info.iterations.max(1))
                        .with_fixed_iterations(true)
                        .with_profile(true);
                    let prof = strata::solve(backend, &p, &prof_cfg, &rhs, &mut |_, _| {})?;
                    // Bytes the kernels move per level over the profiled solve (their models).
                    let mut level_bytes = Vec::new();
                    if let Some(prof) = prof.info.profile {
                        level_bytes = vec![0.0; prof.levels.len()];
                        for (lev, stats) in prof.levels.iter().enumerate() {
                            let cells = (p.panels() * (n >> lev) * (n >> lev) * p.nz) as f64;
                            for k in Kernel::ALL {
                                let st = stats[k as usize];
                                let (Some(cost), Some(mut moved)) =
                                    (kernel_cost(k), backend.moved_values(k))
                                else {
                                    continue;
                                };
                                // Coefficient values count as moved and as useful: the kernel
                                // cannot do without reading them.
                                let mut useful = cost.mem_cached;
                                if let Some(sym) = symmetric {
                                    let extra = backend.coefficient_values(k, sym).unwrap_or(0.0);
                                    moved += extra;
                                    useful += extra;
                                }
                                // Orography's slant weights (two per cell: the east and north
                                // faces') in the CG SpMV, which applies the whole operator (the
                                // fine Residual row mixes the hierarchy's residual and the outer
                                // one: not counted there).
                                if p.orography.is_some() && lev == 0 && k == Kernel::Spmv {
                                    moved += 2.0;
                                    useful += 2.0;
                                }
                                if st.calls == 0 {
                                    continue;
                                }
                                let bytes = bytes_of(k, lev);
                                level_bytes[lev] += st.calls as f64 * moved * bytes * cells;
                                let t = st.seconds / st.calls as f64;
                                let useful = useful * bytes * cells / t / 1e9;
                                let moved = moved * bytes * cells / t / 1e9;
                                report.kernels.push(KernelRow {
                                    n,
                                    operator: operator.clone(),
                                    solver: kind.name(),
                                    level: lev,
                                    kernel: k.name(),
                                    ms_per_call: 1e3 * t,
                                    useful_gbs: useful,
                                    useful_fraction: useful / copy,
                                    moved_gbs: moved,
                                    moved_fraction: moved / copy,
                                });
                            }
                        }
                    }
                    // Launches per iteration in the steady state (backends that count them).
                    let fixed = |its: usize| -> CliResult<Option<strata::backend::Launches>> {
                        let before = backend.launches();
                        let c = cfg.clone().with_max_it(its).with_fixed_iterations(true);
                        strata::solve(backend, &p, &c, &rhs, &mut |_, _| {})?;
                        Ok(before.zip(backend.launches()).map(|(a, b)| b - a))
                    };
                    let its = best.info.iterations.max(1);
                    let launches_per_iteration = match (fixed(its)?, fixed(its + 2)?) {
                        (Some(a), Some(b)) => Some((
                            (b.kernels as f64 - a.kernels as f64) / 2.0,
                            (b.host as f64 - a.host as f64) / 2.0,
                        )),
                        _ => None,
                    };
                    report.solvers.push(SolverRow {
                        n,
                        operator: operator.clone(),
                        solver: kind.name(),
                        summary,
                        useful_fraction: frac,
                        launches_per_iteration,
                        bytes_per_unknown_at_copy: 0.0, // set by `rescale`
                        modelled_bytes_per_unknown: level_bytes
                            .iter()
                            .map(|b| b / (its as f64 * summary_unknowns))
                            .collect(),
                    });
                    if let Some(b) = &bar {
                        b.inc(1);
                    }
                }
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        report.copy_gbs_after = backend.copy_bandwidth(bytes, 10)? / 1e9;
        // The fractions are of the best copy bandwidth seen: a low-balled peak would flatter us.
        let copy = copy_before.max(report.copy_gbs_after);
        rescale(&mut report, copy);
        println!(
            "copy bandwidth: {copy_before:.2} GB/s before the timings, {:.2} GB/s after (STREAM copy, 2 x {} MiB, best of 10); fractions below are of {copy:.2} GB/s",
            report.copy_gbs_after, a.stream_mib
        );
        println!("in-place update bandwidth (y += a x, 3 values/element): {update_before:.2} GB/s");
        print!("{}", tables(&report));
        if let Some(path) = &a.json {
            std::fs::write(path, serde_json::to_string_pretty(&report)?)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The bytes of one value that kernel `k` on level `lev` moves, for the bytes-per-unknown
/// figures: the multigrid's kernels move fp32 in mixed precision (the backends count the fp64
/// u of SmoothColorCorrect as two values each). The finest level's Residual there is the outer
/// iteration's fp64 one: mg's defect-correction residual reads f and u in fp64 and writes r in
/// fp32 (20 bytes for its 3 values); the Krylov methods' residual is fp64 throughout. With the
/// restriction fused, the default, no fp32 residual of the hierarchy shares that row.
fn value_bytes(
    precision: strata::solver::Precision,
    kind: SolverKind,
    k: Kernel,
    lev: usize,
) -> f64 {
    use strata::solver::Precision::Mixed;
    match (precision, k) {
        (Mixed, Kernel::Residual) if lev == 0 && kind == SolverKind::Mg => 20.0 / 3.0,
        (Mixed, Kernel::Residual) if lev == 0 => 8.0,
        (
            Mixed,
            Kernel::Smooth
            | Kernel::LineSolve
            | Kernel::LineSolveColor
            | Kernel::SmoothColor
            | Kernel::SmoothColorCorrect
            | Kernel::RestrictSmooth
            | Kernel::ResidualRestrictSmooth
            | Kernel::ResidualRestrictSolveColor
            | Kernel::Prolongate
            | Kernel::Residual,
        ) => 4.0,
        _ => 8.0,
    }
}

/// Recomputes every fraction against the copy bandwidth `copy`.
fn rescale(r: &mut BenchReport, copy: f64) {
    r.copy_gbs = copy;
    for k in &mut r.kernels {
        k.useful_fraction = k.useful_gbs / copy;
        k.moved_fraction = k.moved_gbs / copy;
    }
    for v in &mut r.solvers {
        v.useful_fraction = v.summary.useful_gbs / copy;
        v.bytes_per_unknown_at_copy =
            v.summary.seconds_per_iteration * copy * 1e9 / v.summary.unknowns as f64;
    }
}

fn progress(total: usize) -> Option<ProgressBar> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    Some(bar)
}

fn tables(r: &BenchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nkernels (level 0 = finest; useful = paper's Mem^(C), moved = strata's traffic; % of copy {:.2} GB/s)",
        r.copy_gbs
    );
    let _ = writeln!(
        s,
        "{:>6} {:>11} {:>6} {:>5} {:<26} {:>10} {:>11} {:>8} {:>10} {:>8}",
        "n",
        "operator",
        "solver",
        "level",
        "kernel",
        "ms/call",
        "useful GB/s",
        "useful%",
        "moved GB/s",
        "moved%"
    );
    for k in &r.kernels {
        let _ = writeln!(
            s,
            "{:>6} {:>11} {:>6} {:>5} {:<26} {:>10.3} {:>11.2} {:>7.1}% {:>10.2} {:>7.1}%",
            k.n,
            k.operator,
            k.solver,
            k.level,
            k.kernel,
            k.ms_per_call,
            k.useful_gbs,
            100.0 * k.useful_fraction,
            k.moved_gbs,
            100.0 * k.moved_fraction
        );
    }
    let _ = writeln!(
        s,
        "\nsolvers (rtol as given, random rhs, fastest of the repeats)"
    );
    let _ = writeln!(
        s,
        "{:>6} {:>11} {:>6} {:>5} {:>10} {:>10} {:>11} {:>8} {:>11} {:>8} {:>8} {:>10} {:>11}",
        "n",
        "operator",
        "solver",
        "its",
        "t_iter ms",
        "solve s",
        "transfers s",
        "GFLOP/s",
        "useful GB/s",
        "useful%",
        "vs model",
        "kernels/it",
        "launches/it"
    );
    for v in &r.solvers {
        let m = &v.summary;
        // Solve time against the model problem's with the same n and solver.
        let model = r
            .solvers
            .iter()
            .find(|w| w.n == v.n && w.solver == v.solver && w.operator == "model")
            .map(|w| m.solve_seconds / w.summary.solve_seconds);
        let _ = writeln!(
            s,
            "{:>6} {:>11} {:>6} {:>5} {:>10.3} {:>10.4} {:>11.4} {:>8.2} {:>11.2} {:>7.1}% {:>7.2}x {:>10} {:>11}",
            v.n,
            v.operator,
            v.solver,
            m.iterations,
            1e3 * m.seconds_per_iteration,
            m.solve_seconds,
            m.transfer_seconds,
            m.gflops,
            m.useful_gbs,
            100.0 * v.useful_fraction,
            model.unwrap_or(f64::NAN),
            v.launches_per_iteration
                .map_or("-".into(), |(k, _)| format!("{k:.1}")),
            v.launches_per_iteration
                .map_or("-".into(), |(_, h)| format!("{h:.1}"))
        );
    }
    let _ = writeln!(
        s,
        "\nbytes per unknown and iteration: t_iter x copy bandwidth / unknowns, and the kernels' traffic models per level (vector updates and halos not modelled)"
    );
    let _ = writeln!(
        s,
        "{:>6} {:>11} {:>6} {:>12} {:>9}  per level (0 = finest)",
        "n", "operator", "solver", "at copy B/u", "model B/u"
    );
    for v in &r.solvers {
        let levels = &v.modelled_bytes_per_unknown;
        let _ = writeln!(
            s,
            "{:>6} {:>11} {:>6} {:>12.1} {:>9.1}  {}",
            v.n,
            v.operator,
            v.solver,
            v.bytes_per_unknown_at_copy,
            levels.iter().sum::<f64>(),
            levels
                .iter()
                .map(|b| format!("{b:.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::solver::Precision::{Mixed, F64};

    /// The finest residual is the outer iteration's: fp64 reads for every solver, an fp32
    /// store only for mg's defect correction; the hierarchy's kernels move fp32 in mixed
    /// precision, the Krylov vectors fp64.
    #[test]
    fn value_widths_follow_the_outer_and_inner_precisions() {
        assert_eq!(
            value_bytes(Mixed, SolverKind::Mg, Kernel::Residual, 0),
            20.0 / 3.0
        );
        for kind in [SolverKind::MgCg, SolverKind::Gcr, SolverKind::BiCgStab] {
            assert_eq!(value_bytes(Mixed, kind, Kernel::Residual, 0), 8.0);
        }
        assert_eq!(
            value_bytes(Mixed, SolverKind::MgCg, Kernel::Residual, 1),
            4.0
        );
        assert_eq!(value_bytes(Mixed, SolverKind::MgCg, Kernel::Smooth, 0), 4.0);
        assert_eq!(value_bytes(Mixed, SolverKind::MgCg, Kernel::Spmv, 0), 8.0);
        assert_eq!(value_bytes(F64, SolverKind::Mg, Kernel::Residual, 0), 8.0);
        assert_eq!(
            value_bytes(F64, SolverKind::Mg, Kernel::LineSolveColor, 2),
            8.0
        );
    }
}
