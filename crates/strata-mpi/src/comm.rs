//! [`MpiComm`]: halo exchange by non-blocking point-to-point messages of the four faces (only
//! halo cells travel, never padding) and global sums by allreduce.

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use strata::backend::Backend;
use strata::comm::{Comm, Corners, FaceStore};
use strata::grid::{corner_cells, RankGrid, Side};
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
    /// The backend's buffers of the halo corners that have a diagonal rank.
    corners: RefCell<Corners<B::FaceBuffer>>,
    /// Host vectors of the corners (where the backend's buffers are device memory).
    corner_host: RefCell<Corners<Vec<f64>>>,
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
            corners: RefCell::new(Corners::default()),
            corner_host: RefCell::new(Corners::default()),
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

    /// The ranks diagonally across this rank's block's corners.
    fn diagonals(&self) -> [Option<usize>; 4] {
        std::array::from_fn(|c| self.grid.diagonal(self.rank, c))
    }

    /// Allocates the face buffers of level `lev` the first time it is seen, and the corner
    /// buffers (the backend's, and host vectors only where those are device memory); returns
    /// whether the backend's faces are host memory.
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
        let (nz, diagonals) = (b.stencil(lev).nz, self.diagonals().map(|d| d.is_some()));
        self.corners
            .borrow_mut()
            .columns(nz, diagonals, |len| b.alloc_face(len))?;
        self.corner_host
            .borrow_mut()
            .columns(nz, diagonals, staging)?;
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

impl<B: Backend> MpiComm<B> {
    /// Fills the halo of `x` from the neighbouring ranks, and with `corners` the halo corners
    /// from the diagonal ranks, in one round of non-blocking messages. Slots 0–3 are the faces
    /// ([`Side::index`]; tagged by the direction they travel), 4–7 the corners (tagged 4 + the
    /// sender's corner; the receiver's is the opposite one, 3 − corner).
    fn exchange_halo(
        &self,
        b: &B,
        lev: &B::LevelOp,
        x: &mut B::Field,
        corners: bool,
    ) -> Result<()> {
        let (nx, ny) = (b.stencil(lev).nx(), b.stencil(lev).ny());
        let diagonals = if corners { self.diagonals() } else { [None; 4] };
        let on_host = self.buffers(b, lev)?;
        let mut faces = self.faces.borrow_mut();
        let faces = faces.level(b, lev, [false; 4], |_| unreachable_alloc())?;
        let mut host = self.host.borrow_mut();
        let host = host.level(b, lev, [false; 4], |_| Ok(Vec::new()))?;
        let mut cols = self.corners.borrow_mut();
        let cols = &mut *cols;
        let mut col_host = self.corner_host.borrow_mut();
        let col_host = &mut *col_host;
        for side in Side::ALL {
            let t = side.index();
            if let Some(face) = &mut faces.send[t] {
                b.pack_face(lev, x, side, face)?;
                if let (false, Some(h)) = (on_host, &mut host.send[t]) {
                    b.face_to_host(face, h)?;
                }
            }
        }
        for c in (0..4).filter(|&c| diagonals[c].is_some()) {
            if let Some(buf) = &mut cols.send[c] {
                b.pack_column(lev, x, corner_cells(nx, ny, c).1, buf)?;
                if let (false, Some(h)) = (on_host, &mut col_host.send[c]) {
                    b.face_to_host(buf, h)?;
                }
            }
        }
        // Host buffers travel as they are; device buffers through the host vectors.
        let send: Vec<Option<&[f64]>> = if on_host {
            let all = faces.send.iter().chain(&cols.send);
            all.map(|f| f.as_ref().and_then(|f| b.face_host(f)))
                .collect()
        } else {
            let all = host.send.iter().chain(&col_host.send);
            all.map(|h| h.as_deref()).collect()
        };
        let mut recv: Vec<Option<&mut [f64]>> = if on_host {
            let all = faces.recv.iter_mut().chain(cols.recv.iter_mut());
            all.map(|f| f.as_mut().and_then(|f| b.face_host_mut(f)))
                .collect()
        } else {
            let all = host.recv.iter_mut().chain(col_host.recv.iter_mut());
            all.map(|h| h.as_deref_mut()).collect()
        };
        let neighbours = self.neighbours();
        let peer = |t: usize| {
            if t < 4 {
                neighbours[t]
            } else {
                diagonals[t - 4]
            }
        };
        // (tag out, tag in): a face travelling across `side` is tagged by that direction and
        // received across the opposite side; a corner by the sender's corner.
        let tags = |t: usize| {
            if t < 4 {
                (t as i32, Side::ALL[t].opposite().index() as i32)
            } else {
                (t as i32, (4 + 3 - (t - 4)) as i32)
            }
        };
        mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(16);
            for (t, (sbuf, rbuf)) in send.iter().zip(recv.iter_mut()).enumerate() {
                if let (Some(n), Some(sbuf), Some(rbuf)) = (peer(t), sbuf, rbuf) {
                    let p = self.world.process_at_rank(n as i32);
                    let (tag_out, tag_in) = tags(t);
                    requests.push(p.immediate_receive_into_with_tag(scope, &mut rbuf[..], tag_in));
                    requests.push(p.immediate_send_with_tag(scope, &sbuf[..], tag_out));
                }
            }
            for r in requests {
                r.wait();
            }
        });
        drop((send, recv));
        for side in Side::ALL {
            let t = side.index();
            if let Some(face) = &mut faces.recv[t] {
                if let (false, Some(h)) = (on_host, &host.recv[t]) {
                    b.face_from_host(h, face)?;
                }
                b.unpack_face(lev, x, side, face)?;
            }
        }
        for c in (0..4).filter(|&c| diagonals[c].is_some()) {
            if let Some(buf) = &mut cols.recv[c] {
                if let (false, Some(h)) = (on_host, &col_host.recv[c]) {
                    b.face_from_host(h, buf)?;
                }
                b.unpack_column(lev, x, corner_cells(nx, ny, c).0, buf)?;
            }
        }
        Ok(())
    }
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
        self.exchange_halo(b, lev, x, false)
    }

    fn exchange_with_corners(&self, b: &B, lev: &B::LevelOp, x: &mut B::Field) -> Result<()> {
        self.exchange_halo(b, lev, x, true)
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        self.all_sum(values);
        Ok(())
    }

    fn prolongation_sides(&self) -> Option<[bool; 4]> {
        strata::comm::prolongation_sides(self.neighbours().map(|n| n.is_some()))
    }
}
