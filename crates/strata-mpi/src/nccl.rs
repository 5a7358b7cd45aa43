//! [`NcclComm`]: halo exchange of device fields by NCCL point-to-point between device buffers
//! (no host copies), the NCCL communicator bootstrapped over MPI; global sums by MPI allreduce
//! of the host scalars the solvers already read back. The messages are queued on the CUDA
//! backend's current stream ([`crate::nccl_queue`]), so the multigrid cycle, exchanges and
//! all, is recorded as one CUDA graph and replayed with one launch, as on one GPU, once it has
//! run [`RECORD_AFTER`] times ([`record_exchanges`]).

use crate::comm::halo_parts;
use crate::nccl_queue::Nccl;
use crate::MpiComm;
use cudarc::driver::CudaSlice;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use strata::backend::prelude::*;
use strata::backend::HaloPart;
use strata::comm::{Comm, Corners, FaceStore};
use strata::grid::{RankGrid, Side};
use strata::{Result, StrataError};
use strata_cuda::{CudaBackend, CudaField, CudaLevel};

/// Halo exchange of the CUDA backend's fields with NCCL on the device, reductions with MPI.
/// It is a `Comm<CudaBackend>` and nothing else: the face buffers are device memory.
pub struct NcclComm {
    mpi: MpiComm<CudaBackend>,
    nccl: Nccl,
    /// After how many direct runs a cycle is recorded with its exchanges in a CUDA graph; `None`:
    /// never ([`record_exchanges`]).
    record: Option<usize>,
    /// Send and receive face buffers per level, in device memory, allocated at set-up.
    faces: RefCell<FaceStore<CudaSlice<f64>>>,
    /// Send and receive buffers of the halo corners that have a diagonal rank.
    corners: RefCell<Corners<CudaSlice<f64>>>,
}

/// Whether the NCCL library can be loaded.
pub fn nccl_available() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::nccl::sys::is_culib_present() }
}

impl NcclComm {
    /// Builds the NCCL communicator of the job (rank 0 makes the id, MPI broadcasts it), on the
    /// stream of `backend`.
    pub fn new(world: SimpleCommunicator, grid: RankGrid, backend: &CudaBackend) -> Result<Self> {
        let mpi = MpiComm::new(world, grid)?;
        let rank = mpi.rank();
        // The neighbours and the diagonal ranks (corners for the prolongation into the halo).
        let peers: Vec<i32> = Side::ALL
            .iter()
            .filter_map(|&side| grid.neighbour(rank, side))
            .chain((0..4).filter_map(|c| grid.diagonal(rank, c)))
            .map(|p| p as i32)
            .collect();
        let (nccl, record) = bootstrap(mpi.world(), backend, &peers, true)?;
        Ok(Self {
            mpi,
            nccl,
            record,
            faces: RefCell::new(FaceStore::default()),
            corners: RefCell::new(Corners::default()),
        })
    }

    /// The rank grid.
    pub fn grid(&self) -> RankGrid {
        self.mpi.grid()
    }
}

/// The NCCL communicator of the ranks of `world` on the stream of `backend` (rank 0 makes the
/// id, MPI broadcasts it), connected to `peers` already: NCCL connects to a peer at the first
/// send or receive, which costs about a second, so that is done here, in the set-up, with one
/// value to and from every peer; and with `all_reduce` (a communicator that sums on the device,
/// [`NcclComm`]) one all-reduce, whose first call connects the collective's channels (≈ 0.25 s
/// on four H200s, which the first solve paid otherwise). Also the count of direct runs before a
/// cycle is recorded ([`record_exchanges`]), read by every rank and checked together, so that a
/// rank that cannot read it fails the set-up on every rank rather than leaving the others
/// waiting for it.
pub(crate) fn bootstrap(
    world: &SimpleCommunicator,
    backend: &CudaBackend,
    peers: &[i32],
    all_reduce: bool,
) -> Result<(Nccl, Option<usize>)> {
    if !nccl_available() {
        return Err(StrataError::Comm(
            "the NCCL library (libnccl.so) was not found; use --halo mpi".into(),
        ));
    }
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    let stream = backend.stream();
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| StrataError::Comm(format!("CUDA: {e}")))?;
    let mut raw: [std::ffi::c_char; 128] = [0; 128];
    let made = if rank == 0 {
        Nccl::unique_id().map(|id| raw = id)
    } else {
        Ok(())
    };
    let record = record_exchanges();
    // Every rank takes part in the sum and the broadcast, whatever it found: then all fail
    // alike.
    let mut failed = [
        f64::from(u8::from(made.is_err())),
        f64::from(u8::from(record.is_err())),
    ];
    crate::comm::all_sum(world, &mut failed);
    world.process_at_rank(0).broadcast_into(&mut raw[..]);
    made?;
    let record = record?;
    if failed[0] > 0.0 {
        return Err(StrataError::Comm(
            "rank 0 could not make an NCCL unique id".into(),
        ));
    }
    if failed[1] > 0.0 {
        return Err(StrataError::Comm(
            "another rank could not read STRATA_NCCL_GRAPHS (each rank must be given the same \
             value)"
                .into(),
        ));
    }
    let nccl = Nccl::init(rank, size, raw)?;
    let cu = |e: cudarc::driver::DriverError| StrataError::Comm(format!("CUDA: {e}"));
    {
        let mut bufs = Vec::new();
        for _ in peers {
            bufs.push((
                stream.alloc_zeros::<f64>(1).map_err(cu)?,
                stream.alloc_zeros::<f64>(1).map_err(cu)?,
            ));
        }
        let mut group = nccl.group()?;
        for (peer, (send, recv)) in peers.iter().zip(bufs.iter_mut()) {
            group.send(backend, send, *peer)?;
            group.recv(backend, recv, *peer)?;
        }
        group.end()?;
        if all_reduce {
            let mut one = stream.alloc_zeros::<f64>(1).map_err(cu)?;
            nccl.sum_in_place(backend, &mut one, 0, 1)?;
        }
        stream.synchronize().map_err(cu)?;
    }
    Ok((nccl, record))
}

/// How many times a multigrid cycle runs directly on NCCL ranks before it is recorded, with
/// its halo messages, as a CUDA graph. Recording NCCL messages is dear — ≈ 2.5 ms for mg's cycle
/// at global 512² × 128 on 4 H200s (21 exchanges), ≈ 12–15 ms on the sphere 6 × 512² (40
/// exchanges, as much with one message per peer as with one per face) — and the replay saves
/// 0.06 and 1.2 ms per cycle: repaid after ≈ 12–40 cycles (docs/results/performance-log.md,
/// 2026-11-28). A solve takes 3–5 cycles, so a
/// one-off solve, or a series of 10 fixed iterations, never records, and a persistent solver
/// (the C, Fortran and Python interfaces, a model's time steps) records during its fourth solve.
pub const RECORD_AFTER: usize = 12;

/// After how many direct runs a cycle is recorded with its exchanges: `STRATA_NCCL_GRAPHS`,
/// a count (default [`RECORD_AFTER`]; `0`: at its first run) or `off` (never: every exchange
/// queued by the host as it comes). Every rank must be given the same value.
pub(crate) fn record_exchanges() -> Result<Option<usize>> {
    match std::env::var("STRATA_NCCL_GRAPHS") {
        Err(_) => Ok(Some(RECORD_AFTER)),
        Ok(v) if v.trim() == "off" => Ok(None),
        Ok(v) => v.trim().parse().map(Some).map_err(|_| {
            StrataError::invalid(
                "STRATA_NCCL_GRAPHS",
                format!("must be a count of cycles or `off` (got {v:?})"),
            )
        }),
    }
}

impl NcclComm {
    /// Which sides of this rank's block have a neighbouring rank (the MPI communicator's).
    fn neighbours(&self) -> [Option<usize>; 4] {
        self.mpi.neighbours()
    }

    /// The ranks diagonally across this rank's block's corners.
    fn diagonals(&self) -> [Option<usize>; 4] {
        self.mpi.diagonals()
    }

    /// Fills the halo of `x` from the neighbouring ranks, and with `corners` the halo corners
    /// from the diagonal ranks, in one NCCL group, the parts packed and unpacked in one launch
    /// each.
    fn exchange_halo(
        &self,
        b: &CudaBackend,
        lev: &CudaLevel,
        x: &mut CudaField,
        corners: bool,
    ) -> Result<()> {
        let neighbours = self.neighbours();
        let has = neighbours.map(|n| n.is_some());
        let diagonals = if corners { self.diagonals() } else { [None; 4] };
        let nz = b.stencil(lev).nz;
        let mut faces = self.faces.borrow_mut();
        let faces = faces.level(b, lev, has, |len| b.alloc_face(len))?;
        let mut cols = self.corners.borrow_mut();
        let all = self.diagonals().map(|d| d.is_some());
        let cols = cols.columns(nz, all, |len| b.alloc_face(len))?;
        b.pack_halo(
            lev,
            x,
            &mut halo_parts(&mut faces.send, &mut cols.send, &diagonals),
        )?;
        {
            // NCCL matches the messages between two ranks in the order they are posted (it has
            // no tags), and one rank may be the peer of several slots (across a periodic edge
            // of a rank grid two ranks wide both x neighbours are the same rank; a rank alone in
            // its row is its own): every rank posts its sends in slot order (faces by
            // Side::index, then corners), and its receives in the order of the slots they were
            // sent from (the opposite side; the opposite corner, 3 − c).
            let peers: Vec<Option<usize>> = neighbours.iter().chain(&diagonals).copied().collect();
            let sender = |t: usize| {
                if t < 4 {
                    Side::ALL[t].opposite().index()
                } else {
                    4 + 3 - (t - 4)
                }
            };
            let mut group = self.nccl.group()?;
            let sends = faces.send.iter().chain(&cols.send);
            for (peer, send) in peers.iter().zip(sends) {
                if let (Some(peer), Some(send)) = (peer, send) {
                    group.send(b, send, *peer as i32)?;
                }
            }
            let mut recvs: Vec<(usize, &mut Option<CudaSlice<f64>>)> = faces
                .recv
                .iter_mut()
                .chain(cols.recv.iter_mut())
                .enumerate()
                .collect();
            recvs.sort_by_key(|(t, _)| sender(*t));
            for (t, recv) in recvs {
                if let (Some(peer), Some(recv)) = (peers[t], recv) {
                    group.recv(b, recv, peer as i32)?;
                }
            }
            group.end()?;
        }
        let mut parts = halo_parts(&mut faces.recv, &mut cols.recv, &diagonals);
        let parts: Vec<(HaloPart, &CudaSlice<f64>)> =
            parts.iter_mut().map(|(p, buf)| (*p, &**buf)).collect();
        b.unpack_halo(lev, x, &parts)?;
        Ok(())
    }
}

impl Comm<CudaBackend> for NcclComm {
    fn rank(&self) -> usize {
        self.mpi.rank()
    }

    fn size(&self) -> usize {
        self.mpi.grid().size()
    }

    fn prepare(&self, b: &CudaBackend, lev: &CudaLevel) -> Result<()> {
        self.mpi.learn(&b.stencil(lev).block);
        let has = self.neighbours().map(|n| n.is_some());
        self.faces
            .borrow_mut()
            .level(b, lev, has, |len| b.alloc_face(len))?;
        let diagonals = self.diagonals().map(|d| d.is_some());
        self.corners
            .borrow_mut()
            .columns(b.stencil(lev).nz, diagonals, |len| b.alloc_face(len))?;
        Ok(())
    }

    fn exchange(&self, b: &CudaBackend, lev: &CudaLevel, x: &mut CudaField) -> Result<()> {
        self.exchange_halo(b, lev, x, false)
    }

    fn exchange_with_corners(
        &self,
        b: &CudaBackend,
        lev: &CudaLevel,
        x: &mut CudaField,
    ) -> Result<()> {
        self.exchange_halo(b, lev, x, true)
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        self.mpi.all_sum(values);
        Ok(())
    }

    /// Through the MPI communicator (host values).
    fn all_gather(&self, local: &[f64]) -> Result<Vec<Vec<f64>>> {
        Comm::<CudaBackend>::all_gather(&self.mpi, local)
    }

    /// An NCCL all-reduce of the slots in device memory, queued on the backend's stream: the
    /// Krylov iterations' sums reach the host no more than on one GPU (the default, through
    /// the host, waits for the stream at every sum). On one rank too, where it is a copy, so
    /// that a one-rank job runs this path.
    fn sum_slots(
        &self,
        b: &CudaBackend,
        s: &mut CudaSlice<f64>,
        at: usize,
        n: usize,
    ) -> Result<()> {
        self.nccl.sum_in_place(b, s, at, n)
    }

    /// An NCCL all-reduce of the device fields (halo and padding included), all pairs in one
    /// group on the backend's current stream, so that a recorded cycle holds it.
    fn sum_fields(
        &self,
        b: &CudaBackend,
        op: &CudaLevel,
        pairs: &mut [(&CudaField, &mut CudaField)],
    ) -> Result<()> {
        let layout = op.layout();
        let mut raw = Vec::with_capacity(pairs.len());
        for (x, y) in pairs.iter() {
            if x.layout() != layout || y.layout() != layout || x.storage() != y.storage() {
                return Err(StrataError::invalid(
                    "sum_fields",
                    "every field must be of the level given, in one precision",
                ));
            }
            let ((xp, len), (yp, _)) = (x.raw(b), y.raw(b));
            raw.push((xp, yp, len, x.storage()));
        }
        self.nccl.sum_into(b, &raw)
    }

    /// The exchanges only queue kernels and NCCL operations on the backend's current stream:
    /// the cycle may be recorded with them (unless `STRATA_NCCL_GRAPHS=off`).
    fn queues_only(&self) -> bool {
        self.record.is_some()
    }

    fn record_after(&self) -> usize {
        self.record.unwrap_or(0)
    }

    fn prolongation_sides(&self) -> Option<[bool; 4]> {
        strata::comm::prolongation_sides(self.neighbours().map(|n| n.is_some()))
    }

    /// Host values through the MPI communicator (set-up only).
    fn swap_faces(&self, send: [Option<Vec<f64>>; 4]) -> Result<[Option<Vec<f64>>; 4]> {
        self.mpi.swap_host_faces(send)
    }
}
