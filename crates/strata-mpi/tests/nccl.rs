//! The NCCL communicator on one rank (the one GPU of a test machine; a job of several ranks needs
//! a GPU each): a solve through [`NcclComm`] equals the serial communicator's bit for bit. The
//! exchange has no neighbour there, but the Krylov sums run: `sum_slots` is an NCCL all-reduce of
//! the device slots on one rank too (a copy), queued between the kernels that write and read them,
//! so an all-reduce of the wrong slots, or one not ordered with the kernels, changes the iterates.
//! Ignored by default (needs an NVIDIA GPU and libnccl); `scripts/gpu-check tests` runs it.

use strata::comm::{Comm, SerialComm};
use strata::grid::{Block, RankGrid};
use strata::problem::{build_rhs, ProblemParams, RhsKind};
use strata::solver::{SolverConfig, SolverKind};
use strata_cuda::CudaBackend;
use strata_mpi::NcclComm;

/// A solve of the whole panel through `comm`, and its residual history.
fn run<C: Comm<CudaBackend>>(
    g: &CudaBackend,
    comm: &C,
    p: &ProblemParams,
    cfg: &SolverConfig,
    rhs: &[f64],
) -> (strata::Solution, Vec<f64>) {
    let mut history = Vec::new();
    let whole = Block::whole(p.n);
    let s = strata::solve_block(g, comm, p, whole, cfg, rhs, &mut |_, r| history.push(r))
        .expect("a solve");
    (s, history)
}

#[test]
#[ignore = "needs an NVIDIA GPU and NCCL"]
fn one_nccl_rank_solves_as_the_serial_communicator() {
    let universe = strata_mpi::mpi::initialize().expect("MPI initialises");
    let g = CudaBackend::new(0).expect("a CUDA device");
    let comm = NcclComm::new(universe.world(), RankGrid::single(), &g).expect("an NCCL comm");
    let p = ProblemParams {
        n: 128,
        nz: 64,
        ..Default::default()
    };
    let rhs = build_rhs(&p, RhsKind::Random, 3, &Block::whole(p.n));
    for kind in [SolverKind::Cg, SolverKind::MgCg, SolverKind::Mg] {
        let cfg = SolverConfig::paper(kind);
        let (a, ha) = run(&g, &SerialComm, &p, &cfg, &rhs);
        let (b, hb) = run(&g, &comm, &p, &cfg, &rhs);
        println!(
            "{}: {} / {} iterations, final residual {:e} / {:e}",
            kind.name(),
            a.info.iterations,
            b.info.iterations,
            ha.last().unwrap(),
            hb.last().unwrap()
        );
        assert!(a.info.reason.converged(), "{kind:?}: {:?}", a.info.reason);
        assert_eq!(ha, hb, "{kind:?}: residual histories");
        assert!(a.u == b.u, "{kind:?}: the solutions differ");
    }
}
