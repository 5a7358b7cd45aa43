//! Coefficient fields that each rank gives for its own block only (docs/MODEL.md §15.7). Run by
//! `cargo test`, this binary launches itself under `mpirun` for several rank grids; as an MPI
//! rank it sets up two persistent solvers of the same problem (GCR with mg, an advection vector
//! among the fields): one given the whole level's fields, one given only its block's
//! (`Coefficients::for_block`, the rings filled from the neighbouring ranks). Their solutions must
//! be equal bit for bit after set-up, after new fields and after a new ω. Then one rank gives a
//! negative κz: every rank's update must fail (and none wait for it), and the solver must still
//! solve with its old fields. And mg's smoothing steps for anisotropic fields must be the same
//! on every rank when only one rank's block holds the anisotropy. CPU ranks always; with the
//! `nccl` feature and a GPU, CUDA ranks (host-staged MPI) too.

mod common;

use mpi::traits::*;
use std::sync::Arc;
use strata::backend::cpu::CpuBackend;
use strata::backend::Backend;
use strata::comm::Comm;
use strata::grid::{Block, Decomposition, RankGrid};
use strata::problem::{build_rhs, Coefficients, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata::PersistentSolver;
use strata_mpi::MpiComm;

const GRIDS: [&str; 4] = ["2x1", "1x3", "2x2", "3x2"];
const N: usize = 48;
const NZ: usize = 8;
const LEVELS: usize = 3;

fn main() {
    common::rank_or_launch(rank_main, launcher);
}

/// Runs this binary under mpirun on `grid` with backend `kind`; whether it passed.
fn run(grid: &str, kind: &str) -> bool {
    let ranks = RankGrid::parse(grid).expect("PXxPY").size();
    common::mpirun_self(
        &format!("block_coefficients_{kind}_{grid}"),
        ranks,
        &[grid, kind],
    )
}

fn launcher() {
    #[cfg_attr(not(feature = "nccl"), allow(unused_mut))]
    let mut results: Vec<bool> = GRIDS.iter().map(|g| run(g, "cpu")).collect();
    #[cfg(feature = "nccl")]
    {
        if strata_cuda::device_count().unwrap_or(0) == 0 {
            println!("test block_coefficients_cuda_2x2 ... skipped (no CUDA device)");
        } else {
            results.push(run("2x2", "cuda"));
        }
    }
    common::finish(&results);
}

/// Fields of the whole level that differ in every cell; `scale` multiplies κx (new fields).
fn whole_fields(scale: f64) -> Coefficients {
    let len = N * N * NZ;
    let value = |seed: u64, c: usize| {
        let h = (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed.wrapping_mul(0x2545_F491);
        (h >> 11) as f64 / (1u64 << 53) as f64
    };
    let positive = |s, f: f64| (0..len).map(|c| f * (0.2 + 2.0 * value(s, c))).collect();
    let signed = |s| (0..len).map(|c| 0.5 * (value(s, c) - 0.5)).collect();
    Coefficients {
        panels: 1,
        n: N,
        nz: NZ,
        kx: positive(1, scale),
        ky: positive(2, 1.0),
        kz: positive(3, 1.0),
        beta: positive(4, 1.0),
        xi: Some([signed(5), signed(6), signed(7)]),
        window: None,
    }
}

/// The block's own values of the whole level's fields, as a model's rank holds them.
fn block_fields(whole: &Coefficients, b: &Block) -> Coefficients {
    let part = |v: &[f64]| -> Vec<f64> {
        (b.j0..b.j0 + b.ny)
            .flat_map(|j| v[(j * N + b.i0) * NZ..][..b.nx * NZ].iter().copied())
            .collect()
    };
    let xi = whole.xi.as_ref().expect("ξ");
    let given = [
        part(&whole.kx),
        part(&whole.ky),
        part(&whole.kz),
        part(&whole.beta),
        part(&xi[0]),
        part(&xi[1]),
        part(&xi[2]),
    ];
    Coefficients::for_block(*b, NZ, 1.0, given.each_ref().map(|v| Some(v.as_slice())))
        .expect("the block's fields")
}

fn rank_main() {
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    let (grid, kind) = common::rank_args();
    let rank = world.rank() as usize;
    let errors = match kind.as_str() {
        "cpu" => {
            let comm = || MpiComm::new(world.duplicate(), grid).expect("grid matches the job");
            rank_checks(&CpuBackend::new(Some(1)).unwrap(), comm, grid, rank)
        }
        #[cfg(feature = "nccl")]
        "cuda" => {
            let gpus = strata_cuda::device_count().expect("a CUDA device");
            let b = strata_cuda::CudaBackend::new(rank % gpus).expect("a CUDA device");
            let comm = || MpiComm::new(world.duplicate(), grid).expect("grid matches the job");
            rank_checks(&b, comm, grid, rank)
        }
        other => panic!("no backend {other}"),
    };
    let mut total = [0.0];
    world.all_reduce_into(
        &[errors.len() as f64][..],
        &mut total[..],
        mpi::collective::SystemOperation::sum(),
    );
    for e in &errors {
        eprintln!("rank {rank}: {e}");
    }
    drop(universe);
    std::process::exit(i32::from(total[0] > 0.0));
}

/// This rank's checks; what went wrong.
fn rank_checks<B: Backend, C: Comm<B>>(
    b: &B,
    comm: impl Fn() -> C,
    grid: RankGrid,
    rank: usize,
) -> Vec<String> {
    let mut errors = Vec::new();
    let block = Decomposition::new(N, LEVELS, grid)
        .unwrap()
        .fine_block(rank);
    let cfg = SolverConfig::paper(SolverKind::Gcr)
        .with_levels(LEVELS)
        .with_rtol(1e-9);
    let problem = |c: Coefficients| ProblemParams {
        n: N,
        nz: NZ,
        omega: Some(0.8),
        coefficients: Some(Arc::new(c)),
        ..Default::default()
    };
    let whole = whole_fields(1.0);
    let mut global = PersistentSolver::with_comm(b, comm(), &problem(whole.clone()), block, &cfg)
        .expect("set-up with the whole level's fields");
    let mut local = PersistentSolver::with_comm(
        b,
        comm(),
        &problem(block_fields(&whole, &block)),
        block,
        &cfg,
    )
    .expect("set-up with the block's fields");
    let rhs = build_rhs(&global.problem().clone(), RhsKind::Random, 3, &block);
    let compare = |what: &str,
                   global: &mut PersistentSolver<B, C>,
                   local: &mut PersistentSolver<B, C>,
                   errors: &mut Vec<String>| {
        let (mut ug, mut ul) = (vec![0.0; rhs.len()], vec![0.0; rhs.len()]);
        let ig = global.solve(b, &rhs, &mut ug, false).expect("solve");
        let il = local.solve(b, &rhs, &mut ul, false).expect("solve");
        if !ig.reason.converged() || ig.iterations < 2 {
            errors.push(format!(
                "{what}: the reference did not converge sensibly: {ig:?}"
            ));
        }
        if ig.residuals != il.residuals || ug != ul {
            errors.push(format!(
                "{what}: block fields {} its (r {:e}), whole fields {} its (r {:e}); solutions {}",
                il.iterations,
                il.relative_residual(),
                ig.iterations,
                ig.relative_residual(),
                if ug == ul { "equal" } else { "differ" }
            ));
        }
    };
    compare("set-up", &mut global, &mut local, &mut errors);
    // New fields, then a new ω (rebuilt from the kept block fields, rings again).
    let new = whole_fields(3.0);
    global
        .update_coefficients(b, Some(new.clone()))
        .expect("update");
    local
        .update_coefficients(b, Some(block_fields(&new, &block)))
        .expect("update with the block's fields");
    compare("new fields", &mut global, &mut local, &mut errors);
    global.update_omega(b, 1.3).expect("omega");
    local.update_omega(b, 1.3).expect("omega");
    compare("new omega", &mut global, &mut local, &mut errors);
    // The last rank's block has a bad value: every rank is told, none waits, and the solvers
    // keep their fields.
    let mut bad = block_fields(&whole, &block);
    if rank + 1 == grid.size() {
        let at = bad.column_at(0, block.i0, block.j0) + 1;
        bad.kz[at] = -1.0;
    }
    match local.update_coefficients(b, Some(bad)) {
        Ok(()) => errors.push("fields with a negative κz on one rank were taken".into()),
        Err(e) => {
            let e = e.to_string();
            let mine = rank + 1 == grid.size();
            if mine != e.contains("kz") || (!mine && !e.contains("were refused")) {
                errors.push(format!("the refusal says: {e}"));
            }
        }
    }
    compare(
        "after a refused update",
        &mut global,
        &mut local,
        &mut errors,
    );
    errors.extend(steps_alike(&comm(), grid, rank));
    errors
}

/// mg's smoothing steps for anisotropic fields (`strata::solver::steps_on_ranks`) on a grid
/// large enough to take them, where only the first rank's block holds an anisotropic cell: V(2,2)
/// on every rank, although the other ranks' own fields alone would keep V(1,1).
fn steps_alike<B: Backend, C: Comm<B>>(comm: &C, grid: RankGrid, rank: usize) -> Vec<String> {
    use strata::solver::{steps_for_operator, steps_on_ranks, FIELD_STEPS_MIN_N};
    let n = FIELD_STEPS_MIN_N;
    let block = Decomposition::new(n, LEVELS, grid)
        .unwrap()
        .fine_block(rank);
    let mut kx = vec![1.0; block.nx * block.ny];
    if rank == 0 {
        kx[0] = 3.0;
    }
    let fields = Coefficients::for_block(
        block,
        1,
        1.0,
        [Some(&kx[..]), None, None, None, None, None, None],
    )
    .expect("the block's fields");
    let p = ProblemParams {
        n,
        nz: 1,
        coefficients: Some(Arc::new(fields)),
        ..Default::default()
    };
    let mg = SolverConfig::new(SolverKind::Mg);
    let steps = |c: &SolverConfig| (c.multigrid.pre_smooth, c.multigrid.post_smooth);
    let mut errors = Vec::new();
    match steps_on_ranks(comm, &mg, &p) {
        Ok(c) if steps(&c) == (2, 2) => {}
        Ok(c) => errors.push(format!("steps on ranks: V{:?}, not V(2, 2)", steps(&c))),
        Err(e) => errors.push(format!("steps on ranks: {e}")),
    }
    let own = steps(&steps_for_operator(&mg, &p));
    let expected = if rank == 0 { (2, 2) } else { (1, 1) };
    if own != expected {
        errors.push(format!(
            "this rank's own fields give V{own:?}, not V{expected:?}"
        ));
    }
    errors
}
