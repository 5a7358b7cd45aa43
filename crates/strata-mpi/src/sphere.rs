//! [`SphereMpiComm`]: the sphere's tiles over MPI ranks (docs/MODEL.md §16). A halo whose
//! source tile is on this rank is copied in place ([`strata::comm::exchange_local_tiles`]); one
//! whose source is on another rank travels as a message of that tile's face, reversed on
//! arrival where the edge runs the other way. Sums by allreduce.

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::RefCell;
use strata::backend::prelude::*;
use strata::backend::tiled::{Handle, InnerField, Tiled, TiledLevel};
use strata::backend::{BlockPart, HaloPart};
use strata::comm::{exchange_local_tiles, Comm};
use strata::grid::sphere::{tile_corners, tile_link, PANELS};
use strata::grid::{split, Block, Side};
use strata::stencil::LevelStencil;
use strata::{Result, StrataError};

/// One halo of a local tile that another rank fills (a face or a corner): where it lies, who
/// fills it, and how the two ranks match what they send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RemoteHalo {
    /// The local tile, its face or corner, and whether the received face runs the other way
    /// along the edge.
    pub(crate) part: BlockPart,
    /// The rank of the tile across.
    pub(crate) peer: i32,
    /// Tag of what this rank sends (the receiver's tile and side or corner).
    pub(crate) tag_out: i32,
    /// Tag of what this rank receives (this tile and side or corner).
    pub(crate) tag_in: i32,
    /// Its values (as many each way).
    pub(crate) len: usize,
}

/// A remote halo with the buffers its messages travel through over MPI.
struct Remote<F> {
    halo: RemoteHalo,
    send: F,
    recv: F,
    host_send: Vec<f64>,
    host_recv: Vec<f64>,
}

/// The remote halos of one level size.
struct Level<F> {
    nx: usize,
    remotes: Vec<Remote<F>>,
}

/// A communicator of the sphere's tiles over MPI, for a tiled backend over `B`. Faces travel
/// through host vectors (for a GPU backend: host-staged); [`crate::SphereNcclComm`] moves device faces
/// with NCCL.
pub struct SphereMpiComm<B: Backend> {
    pub(crate) world: SimpleCommunicator,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// Blocks per panel side.
    k: usize,
    levels: RefCell<Vec<Level<B::FaceBuffer>>>,
}

impl<B: Backend> SphereMpiComm<B> {
    /// The communicator of a sphere whose tiles ([`strata::grid::sphere::rank_tiles`]) are
    /// split over the ranks of `world`, with `k × k` blocks per panel (the `k` those tiles
    /// were made with: `n / tile.nx`).
    pub fn new(world: SimpleCommunicator, k: usize) -> Self {
        Self {
            rank: world.rank() as usize,
            size: world.size() as usize,
            world,
            k,
            levels: RefCell::new(Vec::new()),
        }
    }

    /// The index of a tile among all `6 k²` (the order of `sphere::tiles`).
    fn global(&self, b: &Block) -> usize {
        let panel = b.panel.expect("a tile of the sphere");
        (panel * self.k + b.j0 / b.ny) * self.k + b.i0 / b.nx
    }

    /// The rank that holds tile `g` (consecutive tiles per rank, as `rank_tiles` splits them).
    fn owner(&self, g: usize) -> usize {
        let total = PANELS * self.k * self.k;
        (0..self.size)
            .find(|&r| {
                let (s, l) = split(total, self.size, r);
                (s..s + l).contains(&g)
            })
            .expect("every tile has a rank")
    }

    /// The ranks that hold a tile across an edge or a corner of one of `tiles` (this rank's
    /// fine tiles).
    pub fn peers(&self, tiles: &[Block]) -> Vec<i32> {
        let mut peers: Vec<i32> = tiles
            .iter()
            .flat_map(|t| {
                let faces = Side::ALL.map(|side| tile_link(t, side).0);
                // The diagonal tiles of the nine-point operator's corners too.
                faces
                    .into_iter()
                    .chain(tile_corners(t).into_iter().map(|c| c.src))
            })
            .map(|o| self.owner(self.global(&o)))
            .filter(|&r| r != self.rank)
            .map(|r| r as i32)
            .collect();
        peers.sort_unstable();
        peers.dedup();
        peers
    }

    /// The remote halos of a level's tiles (`lev`, whose stencils are `tiles`): the sides its
    /// local links do not fill and, on a level with cross terms, the corners inside a panel its
    /// local corners do not fill. Faces are tagged `4 · tile + side`, corners after them
    /// `4 · tiles + 4 · tile + corner`.
    pub(crate) fn remote_halos(
        &self,
        lev: &TiledLevel<B>,
        tiles: &[LevelStencil],
    ) -> Result<Vec<RemoteHalo>> {
        let corner_base = 4 * PANELS * self.k * self.k;
        let mut out = Vec::new();
        let mut push = |part: BlockPart, other: &Block, tags: (usize, usize), len: usize| {
            let peer = self.owner(self.global(other));
            if peer == self.rank {
                return Err(StrataError::invalid(
                    "tiles",
                    format!("{other:?} belongs to this rank but was not given to it"),
                ));
            }
            out.push(RemoteHalo {
                part,
                peer: peer as i32,
                tag_out: tags.0 as i32,
                tag_in: tags.1 as i32,
                len,
            });
            Ok(())
        };
        for (t, s) in tiles.iter().enumerate() {
            for side in Side::ALL {
                if lev.local_links.iter().any(|l| l.dst == t && l.side == side) {
                    continue;
                }
                let (other, other_side, reversed) = tile_link(&s.block, side);
                let tags = (
                    4 * self.global(&other) + other_side.index(),
                    4 * self.global(&s.block) + side.index(),
                );
                let len = strata::backend::face_len(s, side);
                let part = BlockPart {
                    block: t,
                    part: HaloPart::Face(side),
                    reversed,
                };
                push(part, &other, tags, len)?;
            }
            if s.cross.is_none() {
                continue;
            }
            for c in tile_corners(&s.block) {
                if lev
                    .local_corners
                    .iter()
                    .any(|(d, l, _)| *d == t && l.corner == c.corner)
                {
                    continue;
                }
                // The diagonal tile's opposite corner is the same vertex.
                let tags = (
                    corner_base + 4 * self.global(&c.src) + 3 - c.corner,
                    corner_base + 4 * self.global(&s.block) + c.corner,
                );
                // The corner's cells are the block's own (tile_corners and corner_cells agree).
                let part = BlockPart {
                    block: t,
                    part: HaloPart::Corner(c.corner),
                    reversed: false,
                };
                push(part, &c.src, tags, s.nz)?;
            }
        }
        Ok(out)
    }
}

/// The remote halos prepared for a level of `tiles`.
fn level_of<'a, F>(levels: &'a mut [Level<F>], tiles: &[LevelStencil]) -> Result<&'a mut Level<F>> {
    let nx = tiles.first().map_or(0, |t| t.nx());
    levels
        .iter_mut()
        .find(|l| l.nx == nx)
        .ok_or_else(|| StrataError::Comm("the sphere's halos of a level were not prepared".into()))
}

/// What each remote halo sends: its part and its send buffer.
fn sends<F>(remotes: &mut [Remote<F>]) -> Vec<(BlockPart, &mut F)> {
    remotes
        .iter_mut()
        .map(|r| (r.halo.part, &mut r.send))
        .collect()
}

/// What each remote halo received: its part and its receive buffer.
fn recvs<F>(remotes: &mut [Remote<F>]) -> Vec<(BlockPart, &mut F)> {
    remotes
        .iter_mut()
        .map(|r| (r.halo.part, &mut r.recv))
        .collect()
}

pub(crate) fn tiles_of(s: &LevelStencil) -> Result<&[LevelStencil]> {
    s.tiles.as_deref().ok_or_else(|| {
        StrataError::invalid(
            "comm",
            "the sphere's communicator serves the sphere's levels only",
        )
    })
}

impl<B: Backend, H: Handle<Inner = B>> Comm<Tiled<H>> for SphereMpiComm<B> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn prepare(&self, b: &Tiled<H>, lev: &TiledLevel<B>) -> Result<()> {
        let tiles = tiles_of(b.stencil(lev))?;
        let nx = tiles.first().map_or(0, |t| t.nx());
        if self.levels.borrow().iter().any(|l| l.nx == nx) {
            return Ok(());
        }
        let remotes = self
            .remote_halos(lev, tiles)?
            .into_iter()
            .map(|halo| {
                Ok(Remote {
                    send: b.inner().alloc_face(halo.len)?,
                    recv: b.inner().alloc_face(halo.len)?,
                    host_send: vec![0.0; halo.len],
                    host_recv: vec![0.0; halo.len],
                    halo,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.levels.borrow_mut().push(Level { nx, remotes });
        Ok(())
    }

    fn exchange(
        &self,
        b: &Tiled<H>,
        lev: &TiledLevel<B>,
        x: &mut Vec<InnerField<H>>,
    ) -> Result<()> {
        let tiles = tiles_of(b.stencil(lev))?;
        let mut levels = self.levels.borrow_mut();
        let level = level_of(&mut levels, tiles)?;
        let inner = b.inner();
        inner.pack_blocks(&lev.tiles, x, &mut sends(&mut level.remotes))?;
        for r in &mut level.remotes {
            inner.face_to_host(&r.send, &mut r.host_send)?;
        }
        mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(2 * level.remotes.len());
            for r in &mut level.remotes {
                let p = self.world.process_at_rank(r.halo.peer);
                requests.push(p.immediate_receive_into_with_tag(
                    scope,
                    &mut r.host_recv[..],
                    r.halo.tag_in,
                ));
                requests.push(p.immediate_send_with_tag(scope, &r.host_send[..], r.halo.tag_out));
            }
            for q in requests {
                q.wait();
            }
        });
        for r in &mut level.remotes {
            inner.face_from_host(&r.host_recv, &mut r.recv)?;
        }
        inner.unpack_blocks(&lev.tiles, x, &mut recvs(&mut level.remotes))?;
        drop(levels);
        exchange_local_tiles(b, lev, x)
    }

    fn sum(&self, values: &mut [f64]) -> Result<()> {
        crate::comm::all_sum(&self.world, values);
        Ok(())
    }
}
