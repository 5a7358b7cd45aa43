//! [`MpiComm`]: halo exchange by non-blocking point-to-point messages of the four faces (only
//! halo cells travel, never padding) and global sums by allreduce.

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::{Cell, RefCell};
use strata::backend::Backend;
use strata::backend::HaloPart;
use strata::comm::{Comm, Corners, FaceStore};
use strata::grid::{Boundaries, RankGrid, Side};
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
    /// The lateral conditions of the levels' domain, learnt from the first level prepared
    /// ([`MpiComm::learn`]): across a periodic edge the neighbour is the rank at the far end
    /// of the row or column.
    bc: Cell<Boundaries>,
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
            bc: Cell::new(Boundaries::DIRICHLET),
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

    /// Which sides of this rank's block have a neighbouring rank (across periodic edges too:
    /// possibly this rank itself, whose messages to itself MPI delivers like any other).
    pub(crate) fn neighbours(&self) -> [Option<usize>; 4] {
        let bc = self.bc.get();
        Side::ALL.map(|side| self.grid.neighbour_in(self.rank, side, bc))
    }

    /// The ranks diagonally across this rank's block's corners.
    pub(crate) fn diagonals(&self) -> [Option<usize>; 4] {
        let bc = self.bc.get();
        std::array::from_fn(|c| self.grid.diagonal_in(self.rank, c, bc))
    }

    /// Takes the lateral conditions of the domain from a level's block (every level of a
    /// solver has the same): called when a level is prepared, before any exchange. A sphere's
    /// tiles (and blocks of the walled domains) leave them Dirichlet.
    pub(crate) fn learn(&self, block: &strata::grid::Block) {
        if block.panel.is_none() {
            self.bc.set(block.bc);
        }
    }

    /// Allocates the face buffers of level `lev` the first time it is seen, and the corner
    /// buffers (the backend's, and host vectors only where those are device memory); returns
    /// whether the backend's faces are host memory.
    fn buffers(&self, b: &B, lev: &B::LevelOp) -> Result<bool> {
        self.learn(&b.stencil(lev).block);
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

/// Where each rank's part starts in a buffer of all the ranks' parts (`counts[r]` values from
/// rank r, in rank order): MPI's displacements of a gather of varying counts.
pub fn displacements(counts: &[i32]) -> Vec<i32> {
    counts
        .iter()
        .scan(0i32, |at, &c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect()
}

/// Every rank's `local` values (any length per rank), in rank order: the lengths by one
/// all-gather, then the values by one all-gather of varying counts.
pub(crate) fn all_gather(world: &SimpleCommunicator, local: &[f64]) -> Vec<Vec<f64>> {
    let size = world.size() as usize;
    let mut counts = vec![0i32; size];
    world.all_gather_into(&(local.len() as i32), &mut counts[..]);
    let displs = displacements(&counts);
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut all = vec![0.0f64; total];
    {
        let mut parts = mpi::datatype::PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        world.all_gather_varcount_into(local, &mut parts);
    }
    counts
        .iter()
        .zip(&displs)
        .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
        .collect()
}

/// The parts of an exchange with their buffers: every face that has one (a neighbour), and the
/// corners whose diagonal rank is given in `diagonals` (those of this exchange).
pub(crate) fn halo_parts<'a, F>(
    faces: &'a mut [Option<F>; 4],
    corners: &'a mut [Option<F>; 4],
    diagonals: &[Option<usize>; 4],
) -> Vec<(HaloPart, &'a mut F)> {
    let faces = Side::ALL
        .into_iter()
        .map(HaloPart::Face)
        .zip(faces.iter_mut());
    let corners = (0..4)
        .map(HaloPart::Corner)
        .zip(corners.iter_mut())
        .filter(|(p, _)| matches!(p, HaloPart::Corner(c) if diagonals[*c].is_some()));
    faces
        .chain(corners)
        .filter_map(|(p, buf)| buf.as_mut().map(|buf| (p, buf)))
        .collect()
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
        {
            let mut parts = halo_parts(&mut faces.send, &mut cols.send, &diagonals);
            b.pack_halo(lev, x, &mut parts)?;
        }
        // Slots 0–3 the faces, 4–7 the corners (a corner only where this exchange sends it).
        let neighbours = self.neighbours();
        let peer = |t: usize| {
            if t < 4 {
                neighbours[t]
            } else {
                diagonals[t - 4]
            }
        };
        let live = |t: usize| peer(t).is_some();
        if !on_host {
            let bufs = faces.send.iter().chain(&cols.send);
            let hosts = host.send.iter_mut().chain(col_host.send.iter_mut());
            for (t, (buf, h)) in bufs.zip(hosts).enumerate() {
                if let (true, Some(buf), Some(h)) = (live(t), buf, h) {
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
        if !on_host {
            let bufs = faces.recv.iter_mut().chain(cols.recv.iter_mut());
            for (t, (buf, h)) in bufs.zip(host.recv.iter().chain(&col_host.recv)).enumerate() {
                if let (true, Some(buf), Some(h)) = (live(t), buf, h) {
                    b.face_from_host(h, buf)?;
                }
            }
        }
        let mut parts = halo_parts(&mut faces.recv, &mut cols.recv, &diagonals);
        let parts: Vec<(HaloPart, &B::FaceBuffer)> =
            parts.iter_mut().map(|(p, buf)| (*p, &**buf)).collect();
        b.unpack_halo(lev, x, &parts)
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

    fn all_gather(&self, local: &[f64]) -> Result<Vec<Vec<f64>>> {
        Ok(all_gather(&self.world, local))
    }

    fn prolongation_sides(&self) -> Option<[bool; 4]> {
        strata::comm::prolongation_sides(self.neighbours().map(|n| n.is_some()))
    }

    fn swap_faces(&self, send: [Option<Vec<f64>>; 4]) -> Result<[Option<Vec<f64>>; 4]> {
        self.swap_host_faces(send)
    }
}

impl<B: Backend> MpiComm<B> {
    /// [`Comm::swap_faces`]: one round of non-blocking messages, tagged 16 + the direction they
    /// travel ([`Side::index`]) apart from the halo exchange's.
    pub(crate) fn swap_host_faces(
        &self,
        send: [Option<Vec<f64>>; 4],
    ) -> Result<[Option<Vec<f64>>; 4]> {
        let neighbours = self.neighbours();
        if let Some(side) = Side::ALL
            .into_iter()
            .find(|s| send[s.index()].is_some() && neighbours[s.index()].is_none())
        {
            return Err(strata::StrataError::invalid(
                "comm",
                format!(
                    "rank {} has no neighbour across its {side:?} side",
                    self.rank
                ),
            ));
        }
        let mut recv = send
            .each_ref()
            .map(|s| s.as_ref().map(|s| vec![0.0; s.len()]));
        mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(8);
            for (side, (s, r)) in Side::ALL.into_iter().zip(send.iter().zip(recv.iter_mut())) {
                if let (Some(n), Some(s), Some(r)) = (neighbours[side.index()], s, r) {
                    let p = self.world.process_at_rank(n as i32);
                    let tag_in = 16 + side.opposite().index() as i32;
                    requests.push(p.immediate_receive_into_with_tag(scope, &mut r[..], tag_in));
                    requests.push(p.immediate_send_with_tag(
                        scope,
                        &s[..],
                        16 + side.index() as i32,
                    ));
                }
            }
            for r in requests {
                r.wait();
            }
        });
        Ok(recv)
    }
}
