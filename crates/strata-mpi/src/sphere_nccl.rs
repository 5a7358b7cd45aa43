//! [`SphereNcclComm`]: the sphere's tiles over GPU ranks, device halos moved by NCCL (no host
//! copies). The remote halos [`SphereMpiComm`] finds (its MPI communicator also bootstraps
//! NCCL and sums the reductions; its host buffers are not made) bound for one peer rank travel
//! as one message: packed in one launch into one buffer per peer, in the order of their tags —
//! the receiver's order of the same halos — and unpacked in one launch, reversed where the
//! cube's edge runs the other way. An exchange is one NCCL group of a send and a receive per
//! peer (≈ 3 on 4 ranks), where each face and corner was a message of its own (≈ 25).

use crate::nccl_queue::Nccl;
use crate::sphere::{tiles_of, RemoteHalo, SphereMpiComm};
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
        let (nccl, record) = crate::nccl::bootstrap(&mpi.world, backend, &mpi.peers(tiles), false)?;
        Ok(Self {
            mpi,
            nccl,
            record,
            messages: RefCell::new(Vec::new()),
        })
    }

    /// The messages of a level (`lev`, whose stencils are `tiles`): per peer, the remote halos
    /// sent in the order of their tags out and those received in the order of their tags in
    /// (a halo's tag out is its receiver's tag in, so both sides lay a message out alike).
    fn messages(
        &self,
        b: &CudaBackend,
        lev: &TiledLevel<CudaBackend>,
        tiles: &[strata::stencil::LevelStencil],
    ) -> Result<Messages> {
        let halos = self.mpi.remote_halos(lev, tiles)?;
        let mut peers: Vec<i32> = halos.iter().map(|h| h.peer).collect();
        peers.sort_unstable();
        peers.dedup();
        // The halos of `peers[buf]` one after the other in buffer `buf`, in the order of `tag`;
        // and their length.
        let lay_out = |parts: &mut Vec<PartAt>, buf: usize, tag: fn(&RemoteHalo) -> i32| {
            let mut mine: Vec<&RemoteHalo> =
                halos.iter().filter(|h| h.peer == peers[buf]).collect();
            mine.sort_by_key(|h| tag(h));
            let mut offset = 0;
            for h in mine {
                parts.push(PartAt {
                    part: h.part,
                    buf,
                    offset,
                });
                offset += h.len;
            }
            offset
        };
        let (mut out, mut inc) = (
            Vec::with_capacity(halos.len()),
            Vec::with_capacity(halos.len()),
        );
        let (mut send, mut recv) = (Vec::new(), Vec::new());
        for (i, &peer) in peers.iter().enumerate() {
            let sent = lay_out(&mut out, i, |h| h.tag_out);
            let received = lay_out(&mut inc, i, |h| h.tag_in);
            if sent != received {
                return Err(StrataError::Comm(format!(
                    "the sphere's halos to and from rank {peer} differ in size ({sent} and \
                     {received} values)"
                )));
            }
            send.push(b.alloc_face(sent)?);
            recv.push(b.alloc_face(received)?);
        }
        Ok(Messages {
            nx: tiles.first().map_or(0, |t| t.nx()),
            peers,
            send,
            recv,
            out,
            inc,
        })
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
        let tiles = tiles_of(b.stencil(lev))?;
        let nx = tiles.first().map_or(0, |t| t.nx());
        if self.messages.borrow().iter().any(|m| m.nx == nx) {
            return Ok(());
        }
        let m = self.messages(b.inner(), lev, tiles)?;
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
