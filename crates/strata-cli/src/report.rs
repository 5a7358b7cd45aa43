//! Text and JSON reports in the paper's terms (docs/MODEL.md §11).

use serde::Serialize;
use std::fmt::Write;
use std::path::Path;
use strata::names::Choice;
use strata::perf::{kernel_cost, rates};
use strata::problem::{Grading, ProblemParams, RhsKind};
use strata::solver::{
    Kernel, MgParams, Precision, Preconditioner, Profile, SolveInfo, SolveParams, SolverConfig,
    SolverKind,
};
use strata::Solution;

/// One line describing the problem.
pub fn problem_line(p: &ProblemParams, rhs_file: Option<&Path>, rhs: RhsKind) -> String {
    let geometry = p.geometry.label();
    let grading = match p.grading {
        Grading::Uniform => "uniform",
        Grading::Graded => "graded",
    };
    let rhs = match rhs_file {
        Some(f) => format!("from {}", f.display()),
        None => format!("{rhs:?}").to_lowercase(),
    };
    // The lateral conditions where they are not the paper's walls.
    let sides = if p.geometry.closed() || p.boundaries.is_dirichlet() {
        String::new()
    } else {
        format!(", boundary {}", p.boundaries)
    };
    let sides = match &p.orography {
        Some(o) => format!(
            "{sides}, orography up to {:.4} (steepest slope {:.3})",
            o.h.iter().fold(0.0f64, |m, &h| m.max(h)),
            o.max_slope([
                p.boundaries.x == strata::grid::Boundary::Periodic,
                p.boundaries.y == strata::grid::Boundary::Periodic
            ])
        ),
        None => sides,
    };
    format!(
        "problem: {geometry} {n}x{n}x{nz} ({u:.3e} unknowns){sides}, nu_CFL {cfl}, omega {w:.6}, lambda {l}, H {h}, delta {d}, {grading} vertical grid, rhs {rhs}",
        n = p.n,
        nz = p.nz,
        u = p.unknowns() as f64,
        cfl = p.cfl,
        w = p.omega(),
        l = p.lambda,
        h = p.height,
        d = p.delta,
    )
}

/// One line describing the solver.
pub fn solver_line(cfg: &SolverConfig, backend: &str) -> String {
    let (mg, params) = (&cfg.multigrid, &cfg.stopping);
    let mut s = format!("solver: {}", cfg.kind.name());
    if matches!(cfg.kind, SolverKind::Gcr | SolverKind::BiCgStab) {
        let pc = match cfg.preconditioner {
            Preconditioner::Line => "line",
            Preconditioner::Multigrid => "mg",
        };
        let _ = write!(s, ", pc {pc}");
        if cfg.kind == SolverKind::Gcr {
            let _ = write!(s, ", restart {}", cfg.restart);
        }
    }
    if cfg.uses_multigrid() {
        let coarse = match mg.coarse_solve {
            strata::solver::CoarseSolve::Smooth => format!("{} coarse steps", mg.coarse_steps),
            strata::solver::CoarseSolve::Cg => format!("coarse CG to {:e}", mg.coarse_rtol),
        };
        let _ = write!(
            s,
            " ({} levels, {coarse}), {} smoother",
            mg.n_levels,
            mg.smoother.name()
        );
        // The smoother's own parameter: the damping of block Jacobi, the over-relaxation of
        // red-black.
        let _ = match mg.smoother {
            strata::solver::Smoother::Jacobi => write!(s, " (rho {:.4})", mg.rho),
            strata::solver::Smoother::RedBlack => write!(s, " (relaxation {})", mg.relaxation),
        };
        let _ = write!(s, ", V({},{}) cycles", mg.pre_smooth, mg.post_smooth);
        if !mg.fuse_restriction {
            s.push_str(", residual stored before the restriction");
        }
        if cfg.precision == Precision::Mixed {
            s.push_str(", mixed precision (fp32 multigrid)");
        }
    }
    let stop = if params.fixed_iterations {
        format!("exactly {} iterations", params.max_it)
    } else {
        format!("rtol {:e}, max_it {}", params.rtol, params.max_it)
    };
    let _ = write!(s, ", {stop}, backend {backend}");
    s
}

/// The convergence history: residual and reduction per iteration.
pub fn history(info: &SolveInfo) -> String {
    let mut s = String::from("  iter     residual  rel.residual  reduction\n");
    let r0 = info.r0;
    for (it, r) in info.residuals.iter().enumerate() {
        let rel = if r0 > 0.0 { r / r0 } else { 0.0 };
        let red = if it == 0 {
            String::new()
        } else {
            format!("{:10.4}", r / info.residuals[it - 1])
        };
        let _ = writeln!(s, "{it:6} {r:12.4e} {rel:13.4e} {red}");
    }
    s
}

/// The numbers of a solve in the paper's terms.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Unknowns n² nz.
    pub unknowns: u64,
    /// Convergence reason.
    pub reason: String,
    /// Iterations.
    pub iterations: usize,
    /// Final ‖r‖ / ‖f‖ (‖r‖/‖r₀‖ from a zero guess).
    pub relative_residual: f64,
    /// Seconds per iteration.
    pub seconds_per_iteration: f64,
    /// Solve seconds (iterations only).
    pub solve_seconds: f64,
    /// Setup seconds (stencils, allocation).
    pub setup_seconds: f64,
    /// Where the set-up went: host stencils, the solver on the backend, the caller's fields.
    pub setup_stages: strata::SetupStages,
    /// Host↔backend transfer seconds.
    pub transfer_seconds: f64,
    /// The first coarse level gathered whole onto every rank (docs/MODEL.md §24), or none.
    pub gathered_from: Option<usize>,
    /// FLOPs per cell per iteration in the paper's model.
    pub flops_per_cell: f64,
    /// Mem^(C) values per cell per iteration in the paper's model.
    pub mem_cached_per_cell: f64,
    /// GFLOP/s from the model.
    pub gflops: f64,
    /// Useful bandwidth in GB/s from the model.
    pub useful_gbs: f64,
}

impl Summary {
    /// Summarises a solve.
    pub fn new(p: &ProblemParams, cfg: &SolverConfig, sol: &Solution) -> Self {
        let cost = cfg.iteration_cost();
        let its = sol.info.iterations;
        let t_iter = if its > 0 {
            sol.info.seconds / its as f64
        } else {
            0.0
        };
        let (gflops, gbs) = if t_iter > 0.0 {
            rates(cost, p.unknowns() as f64, t_iter)
        } else {
            (0.0, 0.0)
        };
        Self {
            unknowns: p.unknowns(),
            reason: format!("{:?}", sol.info.reason),
            iterations: its,
            relative_residual: sol.info.relative_residual(),
            seconds_per_iteration: t_iter,
            solve_seconds: sol.info.seconds,
            setup_seconds: sol.setup_seconds,
            setup_stages: sol.setup_stages,
            transfer_seconds: sol.transfer_seconds,
            gathered_from: sol.gathered_from,
            flops_per_cell: cost.flops,
            mem_cached_per_cell: cost.mem_cached,
            gflops,
            useful_gbs: gbs,
        }
    }

    /// The summary as aligned text.
    pub fn table(&self) -> String {
        let mut s = String::from("summary:\n");
        let rows = [
            ("reason", self.reason.clone()),
            ("unknowns", format!("{:.3e}", self.unknowns as f64)),
            ("iterations", self.iterations.to_string()),
            ("rel. residual", format!("{:.3e}", self.relative_residual)),
            (
                "t_iter",
                format!("{:.3} ms", 1e3 * self.seconds_per_iteration),
            ),
            ("solve time", format!("{:.4} s", self.solve_seconds)),
            ("transfers", format!("{:.4} s", self.transfer_seconds)),
            (
                "total",
                format!(
                    "{:.4} s (solve + transfers)",
                    self.solve_seconds + self.transfer_seconds
                ),
            ),
            (
                "setup",
                format!(
                    "{:.4} s (stencils {:.4}, solver {:.4}, fields {:.4})",
                    self.setup_seconds,
                    self.setup_stages.levels,
                    self.setup_stages.solver,
                    self.setup_stages.fields
                ),
            ),
            (
                "GFLOP/s",
                format!(
                    "{:.2} (model: {:.1} FLOP/cell/iter)",
                    self.gflops, self.flops_per_cell
                ),
            ),
            (
                "useful bandwidth",
                format!(
                    "{:.2} GB/s (model Mem^(C): {:.1} values/cell/iter)",
                    self.useful_gbs, self.mem_cached_per_cell
                ),
            ),
        ];
        for (k, v) in rows {
            let _ = writeln!(s, "  {k:<17} {v}");
        }
        if let Some(lev) = self.gathered_from {
            let _ = writeln!(
                s,
                "  {:<17} levels {lev} and coarser, whole on every rank",
                "gathered"
            );
        }
        s
    }
}

/// Per-kernel, per-level times with useful bandwidth from the paper's counts; `copy_gbs` adds a
/// column with the fraction of a measured copy bandwidth.
pub fn profile_rows(prof: &Profile, p: &ProblemParams) -> Vec<ProfileRow> {
    let mut rows = vec![];
    for (lev, stats) in prof.levels.iter().enumerate() {
        let cells = ((p.n >> lev) * (p.n >> lev) * p.nz) as f64;
        for k in Kernel::ALL {
            let st = stats[k as usize];
            if st.calls == 0 {
                continue;
            }
            let per_call = st.seconds / st.calls as f64;
            let gbs = kernel_cost(k).map(|c| c.mem_cached * 8.0 * cells / per_call / 1e9);
            rows.push(ProfileRow {
                level: lev,
                kernel: k.name(),
                calls: st.calls,
                ms_per_call: 1e3 * per_call,
                total_ms: 1e3 * st.seconds,
                useful_gbs: gbs,
            });
        }
    }
    rows
}

/// A row of the per-kernel profile.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRow {
    /// Level (0 = finest).
    pub level: usize,
    /// Kernel name.
    pub kernel: &'static str,
    /// Calls.
    pub calls: u64,
    /// Milliseconds per call.
    pub ms_per_call: f64,
    /// Milliseconds in all.
    pub total_ms: f64,
    /// Useful GB/s from Mem^(C) (none for vector and halo work).
    pub useful_gbs: Option<f64>,
}

/// The profile as text.
pub fn profile_table(prof: &Profile, p: &ProblemParams) -> String {
    let mut s = String::from("per-kernel times (level 0 = finest):\n  level  kernel            calls   ms/call   total ms   useful GB/s\n");
    for r in profile_rows(prof, p) {
        let gbs = r
            .useful_gbs
            .map(|g| format!("{g:10.2}"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {:5}  {:<15} {:7} {:9.3} {:10.2} {gbs}",
            r.level, r.kernel, r.calls, r.ms_per_call, r.total_ms
        );
    }
    s
}

#[derive(Serialize)]
struct SolveReport<'a> {
    problem: ProblemParams,
    solver: &'static str,
    multigrid: Option<&'a MgParams>,
    stopping: &'a SolveParams,
    precision: Precision,
    backend: &'a str,
    summary: &'a Summary,
    info: &'a SolveInfo,
    profile: Option<Vec<ProfileRow>>,
}

/// The JSON report of a solve.
pub fn json(
    p: &ProblemParams,
    cfg: &SolverConfig,
    backend: &str,
    summary: &Summary,
    sol: &Solution,
) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(&SolveReport {
        // ω as used, not "derived from ν" (null).
        problem: ProblemParams {
            omega: Some(p.omega()),
            ..p.clone()
        },
        solver: cfg.kind.name(),
        multigrid: cfg.uses_multigrid().then_some(&cfg.multigrid),
        stopping: &cfg.stopping,
        precision: cfg.precision,
        backend,
        summary,
        info: &sol.info,
        profile: sol.info.profile.as_ref().map(|pr| profile_rows(pr, p)),
    })
}
