//! Halo parts of several blocks packed into, and unpacked from, buffers they share at offsets:
//! what a rank's tiles send to one peer rank, as one message (the sphere's NCCL communicator)
//! where [`strata::backend::TransferKernels::pack_blocks`] gives each part a buffer of its own
//! (a message each). The same kernels and descriptors, each part's pointer an offset into its
//! buffer: one launch each way for all parts.

use super::transfer::{one_layout, part_what, HaloPartDesc};
use super::*;
use cudarc::driver::{DevicePtr, DevicePtrMut};
use strata::backend::{BlockPart, TransferKernels};

/// Where a halo part travels: in buffer `buf`, its values from `offset` on
/// ([`CudaBackend::pack_blocks_at`], [`CudaBackend::unpack_blocks_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartAt {
    /// The block, its face or corner, and whether it is read backwards when unpacked.
    pub part: BlockPart,
    /// The index of its buffer.
    pub buf: usize,
    /// Its first value in that buffer.
    pub offset: usize,
}

impl CudaBackend {
    /// [`TransferKernels::pack_blocks`] into shared buffers: each part's interior layer (`ops`
    /// and `x` the blocks' operators and fields) written to `bufs[part.buf]` from
    /// `part.offset`. Parts must not overlap in a buffer, nor lie outside it.
    pub fn pack_blocks_at(
        &self,
        ops: &[CudaLevel],
        x: &[CudaField],
        parts: &[PartAt],
        bufs: &mut [CudaSlice<f64>],
    ) -> Result<()> {
        check_places(ops, x.len(), parts, bufs.iter().map(|b| b.len()).collect())?;
        let Some(first) = one_layout(ops) else {
            return self.blocks_at_one_by_one(ops, x, parts, bufs);
        };
        for (op, f) in ops.iter().zip(x) {
            self.check(op, &[f])?;
        }
        let fields: Vec<_> = x.iter().map(|f| f.data.device_ptr(self.base())).collect();
        let starts: Vec<_> = bufs
            .iter_mut()
            .map(|b| b.device_ptr_mut(self.base()))
            .collect();
        let descs = descriptors(ops, parts, &fields, &starts, false)?;
        self.halo_launch(first, K::PackHalo, &descs)
    }

    /// [`TransferKernels::unpack_blocks`] from shared buffers: each part's halo cells of its
    /// block read from `bufs[part.buf]` from `part.offset` (backwards where the part is
    /// reversed). Parts must not overlap in a buffer, nor lie outside it.
    pub fn unpack_blocks_at(
        &self,
        ops: &[CudaLevel],
        x: &mut [CudaField],
        parts: &[PartAt],
        bufs: &[CudaSlice<f64>],
    ) -> Result<()> {
        check_places(ops, x.len(), parts, bufs.iter().map(|b| b.len()).collect())?;
        let Some(first) = one_layout(ops) else {
            return self.unblocks_at_one_by_one(ops, x, parts, bufs);
        };
        for (op, f) in ops.iter().zip(x.iter()) {
            self.check(op, &[f])?;
        }
        let fields: Vec<_> = x
            .iter_mut()
            .map(|f| f.data.device_ptr_mut(self.base()))
            .collect();
        let starts: Vec<_> = bufs.iter().map(|b| b.device_ptr(self.base())).collect();
        let descs = descriptors(ops, parts, &fields, &starts, true)?;
        self.halo_launch(first, K::UnpackHalo, &descs)
    }

    /// [`CudaBackend::pack_blocks_at`] for blocks of different layouts: each part packed on
    /// its own and copied into its place.
    fn blocks_at_one_by_one(
        &self,
        ops: &[CudaLevel],
        x: &[CudaField],
        parts: &[PartAt],
        bufs: &mut [CudaSlice<f64>],
    ) -> Result<()> {
        for p in parts {
            let op = &ops[p.part.block];
            let len = p.part.part.len(&op.stencil);
            let mut one = self.alloc_face(len)?;
            self.pack_halo(op, &x[p.part.block], &mut [(p.part.part, &mut one)])?;
            let mut dst = bufs[p.buf].slice_mut(p.offset..p.offset + len);
            cu(self.base().memcpy_dtod(&one, &mut dst))?;
        }
        Ok(())
    }

    /// [`CudaBackend::unpack_blocks_at`] for blocks of different layouts: each part copied out
    /// of its place and unpacked on its own.
    fn unblocks_at_one_by_one(
        &self,
        ops: &[CudaLevel],
        x: &mut [CudaField],
        parts: &[PartAt],
        bufs: &[CudaSlice<f64>],
    ) -> Result<()> {
        for p in parts {
            let op = &ops[p.part.block];
            let len = p.part.part.len(&op.stencil);
            let mut one = self.alloc_face(len)?;
            let src = bufs[p.buf].slice(p.offset..p.offset + len);
            cu(self.base().memcpy_dtod(&src, &mut one))?;
            if p.part.reversed {
                self.reverse_face(op, &mut one)?;
            }
            self.unpack_halo(op, &mut x[p.part.block], &[(p.part.part, &one)])?;
        }
        Ok(())
    }
}

/// An error unless every part's block is among `ops` and the `fields` fields, its buffer among
/// the `lens` buffers' lengths, its values inside that buffer, and no two parts of a buffer
/// overlap.
fn check_places(
    ops: &[CudaLevel],
    fields: usize,
    parts: &[PartAt],
    lens: Vec<usize>,
) -> Result<()> {
    let mut spans: Vec<(usize, usize, usize)> = Vec::with_capacity(parts.len());
    for p in parts {
        strata::backend::check_block(ops.len(), fields, p.part.block)?;
        let len = p.part.part.len(&ops[p.part.block].stencil);
        let Some(&have) = lens.get(p.buf) else {
            return Err(StrataError::invalid(
                "halo part",
                format!("buffer {} of {}", p.buf, lens.len()),
            ));
        };
        if p.offset + len > have {
            return Err(StrataError::invalid(
                "halo part",
                format!(
                    "{:?} takes values {}..{} of a buffer of {have}",
                    p.part,
                    p.offset,
                    p.offset + len
                ),
            ));
        }
        spans.push((p.buf, p.offset, p.offset + len));
    }
    spans.sort_unstable();
    if let Some(w) = spans
        .windows(2)
        .find(|w| w[0].0 == w[1].0 && w[1].1 < w[0].2)
    {
        return Err(StrataError::invalid(
            "halo part",
            format!(
                "two parts overlap in buffer {} (values {}..{} and {}..{})",
                w[0].0, w[0].1, w[0].2, w[1].1, w[1].2
            ),
        ));
    }
    Ok(())
}

/// The launch descriptors of `parts`: each part's buffer pointer is its buffer's start plus its
/// offset (`fields` and `starts`: the blocks' and the buffers' device pointers, with their
/// guards).
fn descriptors<F, G>(
    ops: &[CudaLevel],
    parts: &[PartAt],
    fields: &[(u64, F)],
    starts: &[(u64, G)],
    unpack: bool,
) -> Result<Vec<HaloPartDesc>> {
    parts
        .iter()
        .map(|p| {
            let s = &ops[p.part.block].stencil;
            let (what, count) = part_what(s, &p.part.part, p.part.part.len(s))?;
            let buf = starts[p.buf].0 + (p.offset * std::mem::size_of::<f64>()) as u64;
            Ok(HaloPartDesc::new(
                buf,
                fields[p.part.block].0,
                what,
                count,
                unpack && p.part.reversed,
            ))
        })
        .collect()
}
