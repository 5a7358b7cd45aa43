//! [`SphereNcclComm`]: the sphere's tiles over GPU ranks, device halos moved by NCCL (no host
//! copies). The remote halos of [`SphereMpiComm`] (whose MPI communicator bootstraps NCCL and
//! sums the reductions) bound for one peer rank travel as one message: packed in one launch
//! into one buffer per peer, in the order of their tags — the receiver's order of the same
//! halos — and unpacked in one launch, reversed where the cube's edge runs the other way. An
//! exchange is one NCCL group of a send and a receive per peer (≈ 3 on 4 ranks), where each
//! face and corner was a message of its own (≈ 25).

use crate::nccl_queue::Nccl;
use crate::sphere::{level_of, tiles_of, Remote, SphereMpiComm};
use cudarc::driver::CudaSlice;
use mpi::topology::SimpleCommunicator;
use std::cell::RefCell;
use strata::backend::prelude::*;
use strata::backend::tiled::{Handle, InnerField, Tiled, TiledLevel};
use strata::comm::{exchange_local_tiles, Comm};
use strata::grid::Block;
use strata::{Result, StrataError};
use strata_cuda::{CudaBackend, PartAt};

/// The sphere's tiles over GPU ranks, one NCCL message per peer rank and exchange.
pub struct SphereNcclComm {
    mpi: SphereMpiComm<CudaBackend>,
    nccl: Nccl,
    /// After how many direct runs a cycle is recorded with its exchanges in a CUDA graph;
    /// `None`: never (`STRATA_NCCL_GRAPHS`, [`crate::RECORD_AFTER`]).
    record: Option<usize>,
    /// The messages of each level size.
    messages: RefCell<Vec<Messages>>,
}

/// The messages of one level size: per peer rank a send and a receive buffer, and where each
/// remote halo lies in them.
struct Messages {
    /// The tiles' columns in x: identifies the level size.
    nx: usize,
    /// The peer ranks, ascending.
    peers: Vec<i32>,
    send: Vec<CudaSlice<f64>>,
    recv: Vec<CudaSlice<f64>>,
    /// What this rank sends: each part's place in `send`.
    out: Vec<PartAt>,
    /// What it receives: each part's place in `recv`.
    inc: Vec<PartAt>,
}

impl SphereNcclComm {
    /// The communicator of this rank's fine `tiles` (`k × k` blocks per panel) over the ranks of
    /// `world`, on the stream of `backend`.
    pub fn new(
        world: SimpleCommunicator,
        k: usize,
        tiles: &[Block],
        backend: &CudaBackend,
    ) -> Result<Self> {
        let mpi = SphereMpiComm::new(world, k);
        let nccl = crate::nccl::bootstrap(&mpi.world, backend, &mpi.peers(tiles), false)?;
        Ok(Self {
            mpi,
            nccl,
            record: crate::nccl::record_exchanges()?,
            messages: RefCell::new(Vec::new()),
        })
    }

    /// The messages of a level whose remote halos the MPI communicator has prepared: per peer,
    /// the parts sent in the order of their tags out and those received in the order of their
    /// tags in (a part's tag out is its receiver's tag in, so both sides lay a message out
    /// alike).
    fn messages(
        &self,
        b: &CudaBackend,
        tiles: &[strata::stencil::LevelStencil],
    ) -> Result<Messages> {
        let mut levels = self.mpi.levels.borrow_mut();
        let level = level_of(&mut levels, tiles)?;
        let mut peers: Vec<i32> = level.remotes.iter().map(|r| r.peer).collect();
        peers.sort_unstable();
        peers.dedup();
        let len = |p: &strata::backend::BlockPart| p.part.len(&tiles[p.block]);
        let mut m = Messages {
            nx: tiles.first().map_or(0, |t| t.nx()),
            peers: peers.clone(),
            send: Vec::with_capacity(peers.len()),
            recv: Vec::with_capacity(peers.len()),
            out: Vec::with_capacity(level.remotes.len()),
            inc: Vec::with_capacity(level.remotes.len()),
        };
        // The parts one after the other in buffer `buf`, in the order of `tag`; and their length.
        let lay_out = |parts: &mut Vec<PartAt>, buf: usize, tag: fn(&Remote<_>) -> i32| {
            let mut mine: Vec<_> = level
                .remotes
                .iter()
                .filter(|r| r.peer == peers[buf])
                .collect();
            mine.sort_by_key(|r| tag(r));
            let mut offset = 0;
            for r in mine {
                parts.push(PartAt {
                    part: r.part,
                    buf,
                    offset,
                });
                offset += len(&r.part);
            }
            offset
        };
        for (i, &peer) in peers.iter().enumerate() {
            let sent = lay_out(&mut m.out, i, |r| r.tag_out);
            let received = lay_out(&mut m.inc, i, |r| r.tag_in);
            if sent != received {
                return Err(StrataError::Comm(format!(
                    "the sphere's halos to and from rank {peer} differ in size ({sent} and \
                     {received} values)"
                )));
            }
            m.send.push(b.alloc_face(sent)?);
            m.recv.push(b.alloc_face(received)?);
        }
        Ok(m)
    }
}

impl<H: Handle<Inner = CudaBackend>> Comm<Tiled<H>> for SphereNcclComm {
    fn rank(&self) -> usize {
        self.mpi.rank
    }

    fn size(&self) -> usize {
        self.mpi.size
    }

    fn prepare(&self, b: &Tiled<H>, lev: &TiledLevel<CudaBackend>) -> Result<()> {
        self.mpi.prepare(b, lev)?;
        let tiles = tiles_of(b.stencil(lev))?;
        let nx = tiles.first().map_or(0, |t| t.nx());
        if self.messages.borrow().iter().any(|m| m.nx == nx) {
            return Ok(());
        }
        let m = self.messages(b.inner(), tiles)?;
        self.messages.borrow_mut().push(m);
        Ok(())
    }

    fn exchange(
        &self,
        b: &Tiled<H>,
        lev: &TiledLevel<CudaBackend>,
        x: &mut Vec<InnerField<H>>,
    ) -> Result<()> {
        let tiles = tiles_of(b.stencil(lev))?;
        let nx = tiles.first().map_or(0, |t| t.nx());
        let mut messages = self.messages.borrow_mut();
        let m = messages.iter_mut().find(|m| m.nx == nx).ok_or_else(|| {
            StrataError::Comm("the sphere's halos of a level were not prepared".into())
        })?;
        let inner = b.inner();
        inner.pack_blocks_at(&lev.tiles, x, &m.out, &mut m.send)?;
        let mut group = self.nccl.group()?;
        for (i, &peer) in m.peers.iter().enumerate() {
            group.send(inner, &m.send[i], peer)?;
            group.recv(inner, &mut m.recv[i], peer)?;
        }
        group.end()?;
        inner.unpack_blocks_at(&lev.tiles, x, &m.inc, &m.recv)?;
        drop(messages);
        exchange_local_tiles(b, lev, x)
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        crate::comm::all_sum(&self.mpi.world, values);
        Ok(())
    }

    /// The exchanges only queue kernels and NCCL operations on the backend's current stream:
    /// the cycle may be recorded with them (unless `STRATA_NCCL_GRAPHS=off`).
    fn queues_only(&self) -> bool {
        self.record.is_some()
    }

    fn record_after(&self) -> usize {
        self.record.unwrap_or(0)
    }
}
