//! [`MpiComm`]: halo exchange by non-blocking point-to-point messages of the four faces (only
//! halo cells travel, never padding) and global sums by allreduce.

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use strata::backend::{face_len, Backend, Side};
use strata::comm::Comm;
use strata::grid::RankGrid;
use strata::Result;

/// A communicator over an MPI communicator arranged as a rank grid.
pub struct MpiComm {
    world: SimpleCommunicator,
    rank: usize,
    grid: RankGrid,
    /// Send and receive buffers per side (grown once, reused).
    buffers: RefCell<[Vec<f64>; 8]>,
}

fn side_index(s: Side) -> usize {
    match s {
        Side::West => 0,
        Side::East => 1,
        Side::South => 2,
        Side::North => 3,
    }
}

impl MpiComm {
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
            buffers: RefCell::new(Default::default()),
        })
    }

    /// The rank grid.
    pub fn grid(&self) -> RankGrid {
        self.grid
    }

    /// The underlying MPI communicator.
    pub fn world(&self) -> &SimpleCommunicator {
        &self.world
    }
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.grid.size()
    }

    fn exchange<B: Backend>(&self, b: &B, lev: &B::Level, x: &mut B::Field) -> Result<()> {
        let s = b.stencil(lev);
        let mut bufs = self.buffers.borrow_mut();
        let (send, recv) = bufs.split_at_mut(4);
        let neighbours = Side::ALL.map(|side| self.grid.neighbour(self.rank, side));
        for side in Side::ALL {
            let t = side_index(side);
            if neighbours[t].is_some() {
                let len = face_len(s, side);
                send[t].resize(len, 0.0);
                recv[t].resize(len, 0.0);
                b.pack_face(lev, x, side, &mut send[t])?;
            }
        }
        mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(8);
            for (side, (sbuf, rbuf)) in Side::ALL.iter().zip(send.iter().zip(recv.iter_mut())) {
                if let Some(n) = neighbours[side_index(*side)] {
                    let p = self.world.process_at_rank(n as i32);
                    // A face travelling across `side` is tagged by that direction; the neighbour
                    // receives it across the opposite side.
                    let tag_out = side_index(*side) as i32;
                    let tag_in = side_index(side.opposite()) as i32;
                    requests.push(p.immediate_receive_into_with_tag(scope, &mut rbuf[..], tag_in));
                    requests.push(p.immediate_send_with_tag(scope, &sbuf[..], tag_out));
                }
            }
            for r in requests {
                r.wait();
            }
        });
        for side in Side::ALL {
            let t = side_index(side);
            if neighbours[t].is_some() {
                b.unpack_face(lev, x, side, &recv[t])?;
            }
        }
        Ok(())
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        let mut local = [0.0f64; 8];
        if values.len() > local.len() {
            let copy = values.to_vec();
            self.world
                .all_reduce_into(&copy[..], values, SystemOperation::sum());
            return Ok(());
        }
        let local = &mut local[..values.len()];
        local.copy_from_slice(values);
        self.world
            .all_reduce_into(&local[..], values, SystemOperation::sum());
        Ok(())
    }
}
