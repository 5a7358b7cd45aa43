//! Command-line options shared by `solve` and `bench`. Every choice is a core type parsed by
//! its name in `strata::names` ([`choice`]): the command line, C and Python share one table.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use strata::grid::Boundaries;
use strata::names::{BackendKind, Choice};
use strata::problem::{Geometry, Grading, Orography, ProblemParams, Schaer, SphereStencil};
use strata::solver::{CoarseSolve, Precision, Smoother, SolverConfig};

/// The clap parser of a core choice: its names ([`Choice::names`]), parsed by [`Choice::parse`].
pub fn choice<T: Choice + Clone + Send + Sync>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::names()).try_map(|s| T::parse(&s))
}

#[derive(Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Horizontal geometry: one cubed-sphere panel, the flat box, or the whole sphere (six
    /// panels).
    #[arg(long, value_parser = choice::<Geometry>(), default_value = "panel")]
    pub geometry: Geometry,
    /// Vertical cells per column.
    #[arg(long, default_value_t = 128)]
    pub nz: usize,
    /// Vertical Courant number ν_CFL (dimensionless); ω = ν h / 2 with h = 2/n (panel) or 1/n
    /// (box).
    #[arg(long, default_value_t = 8.4)]
    pub cfl: f64,
    /// Vertical anisotropy factor λ (dimensionless).
    #[arg(long, default_value_t = 1.0)]
    pub lambda: f64,
    /// Height of the atmosphere H, in Earth radii on the panel (0.01 ≈ 64 km), absolute on the
    /// box.
    #[arg(long, default_value_t = 0.01)]
    pub height: f64,
    /// Coefficient δ of the zero-order term (1 in the model problem, 0 for Poisson).
    #[arg(long, default_value_t = 1.0)]
    pub delta: f64,
    /// Graded vertical grid, faces at (k/nz)² (refined near the ground); uniform otherwise.
    #[arg(long)]
    pub graded: bool,
    /// The horizontal stencil on the sphere: nine-point (consistent, second order) or
    /// two-point (the paper's fluxes, not consistent: its error stalls near 2e-3).
    /// (docs/MODEL.md §16.1, §16.2).
    #[arg(long, value_parser = choice::<SphereStencil>(), default_value = "nine-point")]
    pub sphere_stencil: SphereStencil,
    /// Lateral boundary conditions per direction: `x=COND,y=COND` or one COND for both, each
    /// `dirichlet` (u = 0, the paper's), `neumann` (zero flux) or `periodic` (the box only).
    /// With δ = 0 and no Dirichlet side the problem is singular (see --project-rhs).
    /// (docs/MODEL.md §20).
    #[arg(long, value_parser = parse_boundaries, default_value = "x=dirichlet,y=dirichlet")]
    pub boundary: Boundaries,
    /// Orography under terrain-following coordinates (docs/MODEL.md §23): a NetCDF file with
    /// the variable `orography` of shape (y, x) = (n, n), or (panel, y, x) = (6, n, n) on the
    /// sphere, heights in [0, H) in the units of --height; or `schaer[:slope=S,a=A,l=L]`,
    /// Schär's mountain along x on the unit box (half-width a = 0.25, ripple wavelength
    /// l = 0.2; the same heights per column on the panel; on the sphere a round mountain of
    /// the great-circle distance in Earth radii, centred on panel 0 near its corner with
    /// panels 1 and 4), its height set so that the steepest slope is S (default 0.5).
    #[arg(long, value_parser = parse_orography, value_name = "FILE.nc|schaer[:slope=S,a=A,l=L]")]
    pub orography: Option<OrographyArg>,
}

/// Where `--orography` comes from.
#[derive(Debug, Clone)]
pub enum OrographyArg {
    /// The variable `orography` of a NetCDF file.
    File(PathBuf),
    /// Schär's mountain, sampled at the problem's size.
    Schaer(Schaer),
}

/// The clap parser of `--orography`: `schaer[:key=value,...]` or a file name.
fn parse_orography(s: &str) -> Result<OrographyArg, String> {
    let Some(rest) = s.strip_prefix("schaer") else {
        return Ok(OrographyArg::File(PathBuf::from(s)));
    };
    let mut m = Schaer::default();
    let rest = match rest.strip_prefix(':') {
        Some(r) => r,
        None if rest.is_empty() => "",
        None => return Ok(OrographyArg::File(PathBuf::from(s))),
    };
    for part in rest.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("{part:?}: expected key=value (slope, a or l)"))?;
        let v: f64 = v.parse().map_err(|_| format!("{k}={v}: not a number"))?;
        let slot = match k {
            "slope" => &mut m.slope,
            "a" => &mut m.a,
            "l" => &mut m.l,
            _ => return Err(format!("{k:?}: the mountain takes slope, a and l")),
        };
        *slot = v;
    }
    let ok = |v: f64| v.is_finite() && v > 0.0;
    if !(m.slope.is_finite() && m.slope >= 0.0 && ok(m.a) && ok(m.l)) {
        return Err(format!(
            "slope must be finite and non-negative, a and l finite and positive (got slope={}, a={}, l={})",
            m.slope, m.a, m.l
        ));
    }
    Ok(OrographyArg::Schaer(m))
}

/// The clap parser of `--boundary` ([`Boundaries::parse`]).
fn parse_boundaries(s: &str) -> Result<Boundaries, String> {
    Boundaries::parse(s).map_err(|e| e.to_string())
}

impl ProblemArgs {
    /// The problem at horizontal size n.
    pub fn params(&self, n: usize) -> ProblemParams {
        ProblemParams {
            geometry: self.geometry,
            n,
            nz: self.nz,
            cfl: self.cfl,
            lambda: self.lambda,
            height: self.height,
            delta: self.delta,
            grading: if self.graded {
                Grading::Graded
            } else {
                Grading::Uniform
            },
            omega: None,
            coefficients: None,
            sphere_stencil: self.sphere_stencil,
            boundaries: self.boundary,
            orography: match &self.orography {
                Some(OrographyArg::Schaer(m)) => {
                    Some(Arc::new(Orography::schaer_for(self.geometry, n, m)))
                }
                _ => None,
            },
        }
    }

    /// [`ProblemArgs::params`] with an --orography file read (checked against the problem:
    /// its shape, every height on [0, H)).
    pub fn params_read(&self, n: usize) -> strata::Result<ProblemParams> {
        let mut p = self.params(n);
        if let Some(OrographyArg::File(path)) = &self.orography {
            p.orography = Some(Arc::new(strata::io::read_orography(
                path,
                p.geometry.panels(),
                n,
                p.height,
            )?));
        }
        Ok(p)
    }

    /// The --orography file, if one is given (a command that takes only the generated
    /// mountain refuses it).
    pub fn orography_file(&self) -> Option<&PathBuf> {
        match &self.orography {
            Some(OrographyArg::File(p)) => Some(p),
            _ => None,
        }
    }
}

/// Multigrid options.
#[derive(Args, Debug, Clone)]
pub struct MgArgs {
    /// Multigrid levels L (n must be divisible by 2^(L−1)); used by mg and mg-cg. Default: 5,
    /// as many as the grid allows where the coarsest of 5 is too strongly coupled for its
    /// smoothing to solve it (δ = 0 or small, long time steps), the levels the grid has where it
    /// halves fewer times, and the coarsest level solved by CG where smoothing is far from solving it
    /// (docs/MODEL.md §9.4); given, exactly L (deeper only for a singular problem)
    #[arg(long)]
    pub levels: Option<usize>,
    /// Smoother iterations on the coarsest level (the paper: 2 up to ν = 16.8, 30 at ν = 84,
    /// 150 at ν = 840 with 5 levels).
    #[arg(long, default_value_t = 2)]
    pub coarse_steps: usize,
    /// How the coarsest level is solved: `smooth` (--coarse-steps smoothing steps, the paper's)
    /// or `cg` (preconditioned CG to --coarse-rtol: the cycle count then no longer depends on
    /// --levels or --coarse-steps; symmetric operators only) (docs/MODEL.md §9.4).
    #[arg(long, value_parser = choice::<CoarseSolve>(), default_value = "smooth")]
    pub coarse_solve: CoarseSolve,
    /// The relative residual reduction the coarse CG stops at, in (0, 1).
    #[arg(long, default_value_t = strata::solver::DEFAULT_COARSE_RTOL)]
    pub coarse_rtol: f64,
    /// Smoother of the V-cycle: the paper's block-Jacobi line relaxation (damped by --rho), or
    /// red-black line Gauss–Seidel (fewer cycles; symmetric, so mg-cg may use it). Default:
    /// red-black (jacobi with --paper).
    #[arg(long, value_parser = choice::<Smoother>())]
    pub smoother: Option<Smoother>,
    /// Damping ρ of the block-Jacobi smoother, in (0, 2) (the paper's 2/3; red-black does not
    /// use it).
    #[arg(long, default_value_t = 2.0 / 3.0)]
    pub rho: f64,
    /// Over-relaxation weight of the red-black smoother, in (0, 2), in the cycles of mg, gcr
    /// and bicgstab (mg-cg's symmetric cycle uses 1; the Jacobi smoother does not use it).
    #[arg(long, default_value_t = strata::solver::DEFAULT_RELAXATION)]
    pub relaxation: f64,
    /// Smoothing steps before the coarse correction on every level but the coarsest, in
    /// 1..=16 (mg-cg, whose cycle must be symmetric, takes as many after it when
    /// --post-smooth is not given). Default: the library's for the solver (docs/PERFORMANCE.md).
    #[arg(long)]
    pub pre_smooth: Option<usize>,
    /// Smoothing steps after the coarse correction on every level but the coarsest, in
    /// 1..=16 (for mg-cg, as many before it when --pre-smooth is not given). Default: the
    /// library's for the solver.
    #[arg(long)]
    pub post_smooth: Option<usize>,
    /// Store the V-cycle's residual before restricting it, and mg's stopping-test residual
    /// (the paper's Residual and RestrictSmooth kernels), instead of computing the first inside
    /// the restriction and only the norm of the second (the default: fewer bytes where the
    /// backend fuses them: the CUDA backend).
    #[arg(long)]
    pub unfused_restriction: bool,
    /// On a rank grid, exchange halos after every prolongation, as the paper's cycle does,
    /// instead of prolongating the neighbours' coarse values into the halo (the default: the
    /// same iterates bit for bit, a third fewer exchanges per level).
    #[arg(long)]
    pub exchange_after_prolongation: bool,
    /// Precision: `f64` everywhere, or `mixed`: the outer Krylov iteration (mg-cg, gcr,
    /// bicgstab; for mg, fp64 defect correction) and its stopping test in fp64, the multigrid
    /// preconditioner's fields stored in fp32 (half the bytes per cycle; the answer meets
    /// --rtol on the fp64 residual). Default: mixed wherever there is a multigrid cycle (mg,
    /// mg-cg, gcr and bicgstab with --pc mg), f64 for cg and --pc line (f64 with --paper).
    #[arg(long, value_parser = choice::<Precision>())]
    pub precision: Option<Precision>,
    /// The paper's configuration (Müller, Scheichl & Vainikko 2014): block-Jacobi smoothing
    /// and fp64, where the default is red-black smoothing and, wherever there is a multigrid
    /// cycle, mixed precision (the same fp64 answer in fewer cycles). --smoother and --precision still apply.
    #[arg(long)]
    pub paper: bool,
}

impl MgArgs {
    /// The configuration of solver `kind` preconditioned by `pc` (used by gcr and bicgstab)
    /// with these multigrid options: the solver's default configuration, or the paper's with
    /// --paper, then the options given (--precision after the preconditioner, so that mixed
    /// without a multigrid cycle is refused rather than dropped).
    pub fn configure(
        &self,
        kind: strata::solver::SolverKind,
        pc: strata::solver::Preconditioner,
    ) -> SolverConfig {
        let mut cfg = if self.paper {
            SolverConfig::paper(kind)
        } else {
            SolverConfig::new(kind)
        };
        cfg = cfg
            .with_preconditioner(pc)
            .with_coarse_steps(self.coarse_steps)
            .with_coarse_solve(self.coarse_solve, self.coarse_rtol)
            .with_rho(self.rho)
            .with_relaxation(self.relaxation)
            .with_fused_restriction(!self.unfused_restriction)
            .with_prolongated_halos(!self.exchange_after_prolongation);
        if let Some(s) = self.smoother {
            cfg = cfg.with_smoother(s);
        }
        if let Some(l) = self.levels {
            cfg = cfg.with_levels(l);
        }
        cfg = cfg.with_given_smoothing_steps(self.pre_smooth, self.post_smooth);
        if let Some(p) = self.precision {
            cfg = cfg.with_precision(p);
        }
        cfg
    }
}

/// Where to run.
#[derive(Args, Debug, Clone)]
pub struct BackendArgs {
    /// Compute backend: auto (the GPU when one is usable, else the CPU, saying why on stderr),
    /// cpu (multithreaded), cuda (NVIDIA GPU: CUDA 13 driver and NVRTC, loaded at run time) or
    /// reference (serial and unfused: slow, for checking).
    #[arg(long, value_parser = choice::<BackendKind>(), default_value = "auto")]
    pub backend: BackendKind,
    /// CPU worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// CUDA device ordinal (default: the rank's local rank modulo the devices, 0 alone).
    #[arg(long)]
    pub device: Option<usize>,
}
