//! [`NcclComm`]: halo exchange of device fields by NCCL point-to-point between device buffers
//! (no host copies), the NCCL communicator bootstrapped over MPI; global sums by MPI allreduce
//! of the host scalars the solvers already read back.

use crate::MpiComm;
use cudarc::driver::CudaSlice;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::any::Any;
use std::cell::RefCell;
use strata::backend::{face_len, Backend, Side};
use strata::comm::Comm;
use strata::grid::RankGrid;
use strata::{Result, StrataError};
use strata_cuda::CudaBackend;

fn nccl_err(e: impl std::fmt::Debug) -> StrataError {
    StrataError::Comm(format!("NCCL: {e:?}"))
}

/// A face buffer of the backend's type, type-erased so one communicator serves any backend.
type AnyBuffer = Box<dyn Any>;

/// A side's exchange in flight: side, peer rank, send and receive buffers.
type Exchange = (Side, usize, AnyBuffer, AnyBuffer);

/// Halo exchange with NCCL on the device, reductions with MPI.
pub struct NcclComm {
    mpi: MpiComm,
    nccl: cudarc::nccl::Comm,
    /// Send and receive face buffers per side and size, in the backend's memory.
    buffers: RefCell<Vec<((usize, usize), AnyBuffer)>>,
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
        if !nccl_available() {
            return Err(StrataError::Comm(
                "the NCCL library (libnccl.so) was not found; use --halo mpi".into(),
            ));
        }
        let mpi = MpiComm::new(world, grid)?;
        let (rank, size) = (mpi.rank(), mpi.size());
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
        mpi.world().process_at_rank(0).broadcast_into(&mut raw[..]);
        let id = cudarc::nccl::Id::uninit(raw.map(|c| c as _));
        let nccl =
            cudarc::nccl::Comm::from_rank(stream.clone(), rank, size, id).map_err(nccl_err)?;
        // NCCL connects to a peer at the first send or receive, which costs about a second:
        // do it here, in the setup, with one value to and from every neighbour.
        let cu = |e: cudarc::driver::DriverError| StrataError::Comm(format!("CUDA: {e}"));
        let peers: Vec<i32> = Side::ALL
            .iter()
            .filter_map(|&side| grid.neighbour(rank, side).map(|p| p as i32))
            .collect();
        let mut bufs = Vec::new();
        for _ in &peers {
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
        stream.synchronize().map_err(cu)?;
        Ok(Self {
            mpi,
            nccl,
            buffers: RefCell::new(Vec::new()),
        })
    }

    /// The rank grid.
    pub fn grid(&self) -> RankGrid {
        self.mpi.grid()
    }
}

fn slot(side: Side) -> usize {
    match side {
        Side::West => 0,
        Side::East => 1,
        Side::South => 2,
        Side::North => 3,
    }
}

impl Comm for NcclComm {
    fn rank(&self) -> usize {
        self.mpi.rank()
    }

    fn size(&self) -> usize {
        self.mpi.size()
    }

    fn exchange<B: Backend>(&self, b: &B, lev: &B::Level, x: &mut B::Field) -> Result<()> {
        let s = b.stencil(lev);
        let grid = self.mpi.grid();
        let rank = self.mpi.rank();
        let mut cache = self.buffers.borrow_mut();
        // Take (or make) the send and receive buffers of every side with a neighbour.
        let mut bufs: Vec<Exchange> = Vec::with_capacity(4);
        for side in Side::ALL {
            let Some(peer) = grid.neighbour(rank, side) else {
                continue;
            };
            let len = face_len(s, side);
            let mut take = |dir: usize| -> Result<Box<dyn Any>> {
                let key = (2 * slot(side) + dir, len);
                match cache.iter().position(|(k, _)| *k == key) {
                    Some(i) => Ok(cache.swap_remove(i).1),
                    None => Ok(Box::new(b.alloc_face(len)?) as Box<dyn Any>),
                }
            };
            let (mut send, recv) = (take(0)?, take(1)?);
            let sb = send.downcast_mut::<B::FaceBuffer>().expect("own type");
            b.pack_face_into(lev, x, side, sb)?;
            bufs.push((side, peer, send, recv));
        }
        {
            let dev = |a: &mut Box<dyn Any>| -> Result<*mut CudaSlice<f64>> {
                a.downcast_mut::<CudaSlice<f64>>()
                    .map(|p| p as *mut _)
                    .ok_or_else(|| {
                        StrataError::Comm("NCCL halo exchange needs the CUDA backend".into())
                    })
            };
            let mut group = self.nccl.group();
            for (_, peer, send, recv) in bufs.iter_mut() {
                let (sp, rp) = (dev(send)?, dev(recv)?);
                // SAFETY: the two pointers come from two distinct boxes that outlive the group
                // (it ends, and synchronises its buffers, at the end of this block).
                let (sbuf, rbuf) = unsafe { (&*sp, &mut *rp) };
                group.send(sbuf.as_view(), *peer as i32).map_err(nccl_err)?;
                group
                    .recv(rbuf.as_view_mut(), *peer as i32)
                    .map_err(nccl_err)?;
            }
        }
        for (side, _, send, recv) in bufs {
            let rb = recv.downcast_ref::<B::FaceBuffer>().expect("own type");
            b.unpack_face_from(lev, x, side, rb)?;
            let len = face_len(s, side);
            cache.push(((2 * slot(side), len), send));
            cache.push(((2 * slot(side) + 1, len), recv));
        }
        Ok(())
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        self.mpi.sum(values)
    }
}
