//! [`NcclComm`]: halo exchange of device fields by NCCL point-to-point between device buffers
//! (no host copies), the NCCL communicator bootstrapped over MPI; global sums by MPI allreduce
//! of the host scalars the solvers already read back.

use crate::MpiComm;
use cudarc::driver::CudaSlice;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use strata::backend::prelude::*;
use strata::comm::{Comm, FaceStore};
use strata::grid::RankGrid;
use strata::grid::Side;
use strata::{Result, StrataError};
use strata_cuda::{CudaBackend, CudaField, CudaLevel};

pub(crate) fn nccl_err(e: impl std::fmt::Debug) -> StrataError {
    StrataError::Comm(format!("NCCL: {e:?}"))
}

/// Halo exchange of the CUDA backend's fields with NCCL on the device, reductions with MPI.
/// It is a `Comm<CudaBackend>` and nothing else: the face buffers are device memory.
pub struct NcclComm {
    mpi: MpiComm<CudaBackend>,
    nccl: cudarc::nccl::Comm,
    /// Send and receive face buffers per level, in device memory, allocated at set-up.
    faces: RefCell<FaceStore<CudaSlice<f64>>>,
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
        let peers: Vec<i32> = Side::ALL
            .iter()
            .filter_map(|&side| grid.neighbour(rank, side).map(|p| p as i32))
            .collect();
        let nccl = bootstrap(mpi.world(), backend, &peers)?;
        Ok(Self {
            mpi,
            nccl,
            faces: RefCell::new(FaceStore::default()),
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
/// value to and from every peer.
pub(crate) fn bootstrap(
    world: &SimpleCommunicator,
    backend: &CudaBackend,
    peers: &[i32],
) -> Result<cudarc::nccl::Comm> {
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
    let mut raw = [0i8; 128];
    if rank == 0 {
        let id = cudarc::nccl::Id::new().map_err(nccl_err)?;
        for (r, c) in raw.iter_mut().zip(id.internal()) {
            *r = *c;
        }
    }
    world.process_at_rank(0).broadcast_into(&mut raw[..]);
    let id = cudarc::nccl::Id::uninit(raw.map(|c| c as _));
    let nccl = cudarc::nccl::Comm::from_rank(stream.clone(), rank, size, id).map_err(nccl_err)?;
    let cu = |e: cudarc::driver::DriverError| StrataError::Comm(format!("CUDA: {e}"));
    {
        let mut bufs = Vec::new();
        for _ in peers {
            bufs.push((
                stream.alloc_zeros::<f64>(1).map_err(cu)?,
                stream.alloc_zeros::<f64>(1).map_err(cu)?,
            ));
        }
        {
            let mut group = nccl.group();
            for (peer, (send, recv)) in peers.iter().zip(bufs.iter_mut()) {
                group.send(send.as_view(), *peer).map_err(nccl_err)?;
                group.recv(recv.as_view_mut(), *peer).map_err(nccl_err)?;
            }
        }
    }
    stream.synchronize().map_err(cu)?;
    Ok(nccl)
}

impl NcclComm {
    /// Which sides of this rank's block have a neighbouring rank.
    fn neighbours(&self) -> [Option<usize>; 4] {
        let (grid, rank) = (self.mpi.grid(), self.mpi.rank());
        Side::ALL.map(|side| grid.neighbour(rank, side))
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
        let has = self.neighbours().map(|n| n.is_some());
        self.faces
            .borrow_mut()
            .level(b, lev, has, |len| b.alloc_face(len))?;
        Ok(())
    }

    fn exchange(&self, b: &CudaBackend, lev: &CudaLevel, x: &mut CudaField) -> Result<()> {
        let neighbours = self.neighbours();
        let has = neighbours.map(|n| n.is_some());
        let mut faces = self.faces.borrow_mut();
        let faces = faces.level(b, lev, has, |len| b.alloc_face(len))?;
        for side in Side::ALL {
            if let Some(buf) = &mut faces.send[side.index()] {
                b.pack_face(lev, x, side, buf)?;
            }
        }
        {
            let mut group = self.nccl.group();
            let pairs = faces.send.iter().zip(faces.recv.iter_mut());
            for (peer, (send, recv)) in neighbours.iter().zip(pairs) {
                if let (Some(peer), Some(send), Some(recv)) = (peer, send, recv) {
                    group.send(send.as_view(), *peer as i32).map_err(nccl_err)?;
                    group
                        .recv(recv.as_view_mut(), *peer as i32)
                        .map_err(nccl_err)?;
                }
            }
        }
        for side in Side::ALL {
            if let Some(buf) = &faces.recv[side.index()] {
                b.unpack_face(lev, x, side, buf)?;
            }
        }
        Ok(())
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        self.mpi.all_sum(values);
        Ok(())
    }

    fn prolongation_sides(&self) -> Option<[bool; 4]> {
        strata::comm::prolongation_sides(self.neighbours().map(|n| n.is_some()))
    }
}
