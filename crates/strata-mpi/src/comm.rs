//! [`MpiComm`]: halo exchange by non-blocking point-to-point messages of the four faces (only
//! halo cells travel, never padding) and global sums by allreduce.

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use strata::backend::Backend;
use strata::comm::{Comm, FaceStore};
use strata::grid::RankGrid;
use strata::grid::Side;
use strata::Result;

/// The allocator of a level's buffers after [`MpiComm::buffers`] made them: never called.
fn unreachable_alloc<F>() -> Result<F> {
    Err(strata::StrataError::Comm(
        "face buffers of a level were not prepared".into(),
    ))
}

/// A communicator over an MPI communicator arranged as a rank grid, for fields of backend `B`.
/// Faces are packed into the backend's face buffers and travel through host vectors (for a GPU
/// backend: the host-staged path); all buffers are allocated once per level, at set-up.
pub struct MpiComm<B: Backend> {
    world: SimpleCommunicator,
    rank: usize,
    grid: RankGrid,
    /// The backend's face buffers per level.
    faces: RefCell<FaceStore<B::FaceBuffer>>,
    /// Host send and receive vectors per level.
    host: RefCell<FaceStore<Vec<f64>>>,
}

impl<B: Backend> MpiComm<B> {
    /// Wraps `world` (whose size must equal the grid's) as a rank grid.
    pub fn new(world: SimpleCommunicator, grid: RankGrid) -> Result<Self> {
        let size = world.size() as usize;
        if size != grid.size() {
            return Err(strata::StrataError::invalid(
                "ranks",
                format!(
                    "{}x{} needs {} ranks, the job has {size}",
                    grid.px,
                    grid.py,
                    grid.size()
                ),
            ));
        }
        Ok(Self {
            rank: world.rank() as usize,
            world,
            grid,
            faces: RefCell::new(FaceStore::default()),
            host: RefCell::new(FaceStore::default()),
        })
    }

    /// The rank grid.
    pub fn grid(&self) -> RankGrid {
        self.grid
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The underlying MPI communicator.
    pub fn world(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// Which sides of this rank's block have a neighbouring rank.
    fn neighbours(&self) -> [Option<usize>; 4] {
        Side::ALL.map(|side| self.grid.neighbour(self.rank, side))
    }

    /// Allocates the face buffers of level `lev` the first time it is seen (the backend's, and
    /// host vectors only where those are device memory); returns whether the backend's faces
    /// are host memory.
    fn buffers(&self, b: &B, lev: &B::LevelOp) -> Result<bool> {
        let has = self.neighbours().map(|n| n.is_some());
        let mut faces = self.faces.borrow_mut();
        let faces = faces.level(b, lev, has, |len| b.alloc_face(len))?;
        let on_host = faces
            .send
            .iter()
            .flatten()
            .next()
            .is_none_or(|f| b.face_host(f).is_some());
        let staging = |len: usize| Ok(if on_host { Vec::new() } else { vec![0.0; len] });
        self.host.borrow_mut().level(b, lev, has, staging)?;
        Ok(on_host)
    }

    /// Sums `values` over all ranks (for any backend's communicator built on this one).
    pub fn all_sum(&self, values: &mut [f64]) {
        all_sum(&self.world, values);
    }
}

/// Replaces each of `values` by its sum over the ranks of `world` (allreduce; no allocation for
/// the few values a solver sums at once).
pub(crate) fn all_sum(world: &SimpleCommunicator, values: &mut [f64]) {
    let mut local = [0.0f64; 8];
    if values.len() > local.len() {
        let copy = values.to_vec();
        world.all_reduce_into(&copy[..], values, SystemOperation::sum());
        return;
    }
    let local = &mut local[..values.len()];
    local.copy_from_slice(values);
    world.all_reduce_into(&local[..], values, SystemOperation::sum());
}

impl<B: Backend> Comm<B> for MpiComm<B> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.grid.size()
    }

    fn prepare(&self, b: &B, lev: &B::LevelOp) -> Result<()> {
        self.buffers(b, lev).map(|_| ())
    }

    fn exchange(&self, b: &B, lev: &B::LevelOp, x: &mut B::Field) -> Result<()> {
        let neighbours = self.neighbours();
        let on_host = self.buffers(b, lev)?;
        let mut faces = self.faces.borrow_mut();
        let faces = faces.level(b, lev, [false; 4], |_| unreachable_alloc())?;
        let mut host = self.host.borrow_mut();
        let host = host.level(b, lev, [false; 4], |_| Ok(Vec::new()))?;
        for side in Side::ALL {
            let t = side.index();
            if let Some(face) = &mut faces.send[t] {
                b.pack_face(lev, x, side, face)?;
                if let (false, Some(h)) = (on_host, &mut host.send[t]) {
                    b.face_to_host(face, h)?;
                }
            }
        }
        // Host faces travel as they are; device faces through the host vectors.
        let send: [Option<&[f64]>; 4] = std::array::from_fn(|t| {
            if on_host {
                faces.send[t].as_ref().and_then(|f| b.face_host(f))
            } else {
                host.send[t].as_deref()
            }
        });
        let mut recv: [Option<&mut [f64]>; 4] = if on_host {
            faces
                .recv
                .each_mut()
                .map(|f| f.as_mut().and_then(|f| b.face_host_mut(f)))
        } else {
            host.recv.each_mut().map(|h| h.as_deref_mut())
        };
        mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(8);
            for (side, (sbuf, rbuf)) in Side::ALL.iter().zip(send.iter().zip(recv.iter_mut())) {
                if let (Some(n), Some(sbuf), Some(rbuf)) = (neighbours[side.index()], sbuf, rbuf) {
                    let p = self.world.process_at_rank(n as i32);
                    // A face travelling across `side` is tagged by that direction; the neighbour
                    // receives it across the opposite side.
                    let tag_out = side.index() as i32;
                    let tag_in = side.opposite().index() as i32;
                    requests.push(p.immediate_receive_into_with_tag(scope, &mut rbuf[..], tag_in));
                    requests.push(p.immediate_send_with_tag(scope, &sbuf[..], tag_out));
                }
            }
            for r in requests {
                r.wait();
            }
        });
        for side in Side::ALL {
            let t = side.index();
            if let Some(face) = &mut faces.recv[t] {
                if let (false, Some(h)) = (on_host, &host.recv[t]) {
                    b.face_from_host(h, face)?;
                }
                b.unpack_face(lev, x, side, face)?;
            }
        }
        Ok(())
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        self.all_sum(values);
        Ok(())
    }

    fn prolongation_sides(&self) -> Option<[bool; 4]> {
        strata::comm::prolongation_sides(self.neighbours().map(|n| n.is_some()))
    }
}
