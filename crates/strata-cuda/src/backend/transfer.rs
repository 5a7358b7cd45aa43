//! Transfers (kernels/transfer.cu): host arrays in and out through page-locked staging with an on-device transpose, and the halo faces.

use super::*;
use strata::backend::{BlockPart, HaloPart, TransferKernels};

impl TransferKernels for CudaBackend {
    fn upload(&self, op: &CudaLevel, host: &[f64], x: &mut CudaField) -> Result<()> {
        self.check(op, &[x])?;
        let l = op.layout;
        let row = l.nx as usize * l.nz as usize;
        same_len("host array", host.len(), row * l.ny as usize)?;
        let rows = chunk_rows(row, l.ny as usize);
        let mut pinned = cu(self.pinned.get(&self.ctx, rows * row))?;
        // Staging for one chunk, and each copy of only the chunk's values: the page-locked
        // buffers are at least 64 MiB, and a small field must not move all of them.
        let mut staging = self.alloc_values(rows * row)?;
        for (c, j0) in (0..l.ny as usize).step_by(rows).enumerate() {
            let n = rows.min(l.ny as usize - j0);
            let buf = &mut pinned[c % 2];
            // Waits for the device's copy out of this buffer two chunks ago.
            let page_locked = &mut cu(buf.host_mut())?[..n * row];
            par_copy(page_locked, &host[j0 * row..(j0 + n) * row]);
            // A plain slice of page-locked memory: an asynchronous copy, ordered by the
            // buffer's event (`used`, and `host_mut`'s wait).
            cu(self.base().memcpy_htod(&*page_locked, &mut staging))?;
            cu(buf.used(self.base()))?;
            let mut b = self.builder(self.base(), op.k.get(K::ToDevice));
            let j0i = j0 as i32;
            b.arg(&l).arg(&j0i).arg(&staging).arg(&mut x.data);
            // SAFETY: staging holds n rows of nx·nz values; rows j0..j0+n are inside x's layout.
            cu(unsafe { b.launch(self.transpose_cfg(op, n)) })?;
        }
        Ok(())
    }

    fn download(&self, op: &CudaLevel, x: &CudaField, host: &mut [f64]) -> Result<()> {
        self.check(op, &[x])?;
        let l = op.layout;
        let row = l.nx as usize * l.nz as usize;
        same_len("host array", host.len(), row * l.ny as usize)?;
        let rows = chunk_rows(row, l.ny as usize);
        let mut pinned = cu(self.pinned.get(&self.ctx, rows * row))?;
        // One chunk's staging: the copy into the page-locked buffer moves its length only.
        let mut staging = self.alloc_values(rows * row)?;
        let chunks: Vec<usize> = (0..l.ny as usize).step_by(rows).collect();
        // The host copies chunk c − 1 out of its page-locked buffer while the device transposes
        // and copies chunk c into the other.
        let mut copy_out = |c: usize, pinned: &mut [Buffer]| {
            let (j0, n) = (chunks[c], rows.min(l.ny as usize - chunks[c]));
            let src = cu(pinned[c % 2].host_mut())?;
            par_copy(&mut host[j0 * row..(j0 + n) * row], &src[..n * row]);
            Ok::<(), StrataError>(())
        };
        for (c, &j0) in chunks.iter().enumerate() {
            let n = rows.min(l.ny as usize - j0);
            let mut b = self.builder(self.base(), op.k.get(K::ToHost));
            let j0i = j0 as i32;
            b.arg(&l).arg(&j0i).arg(&x.data).arg(&mut staging);
            // SAFETY: staging holds n rows of nx·nz values; rows j0..j0+n are inside x's layout.
            cu(unsafe { b.launch(self.transpose_cfg(op, n)) })?;
            let buf = &mut pinned[c % 2];
            // The chunk's values only (a copy into the whole page-locked slice would move its
            // length, 64 MiB or more, whatever the field's size): a plain slice of page-locked
            // memory, ordered by the buffer's event (`used`, and `host_mut`'s wait, which the
            // copy-out two chunks ago made already).
            let page_locked = &mut cu(buf.host_mut())?[..n * row];
            cu(self
                .base()
                .memcpy_dtoh(&staging.slice(..n * row), page_locked))?;
            cu(buf.used(self.base()))?;
            if c > 0 {
                copy_out(c - 1, &mut pinned)?;
            }
        }
        if let Some(last) = chunks.len().checked_sub(1) {
            copy_out(last, &mut pinned)?;
        }
        Ok(())
    }

    fn convert(
        &self,
        from: &CudaLevel,
        x: &CudaField,
        to: &CudaLevel,
        y: &mut CudaField,
    ) -> Result<()> {
        strata::backend::check_convert(&from.stencil, &to.stencil)?;
        self.check(from, &[x])?;
        self.check(to, &[y])?;
        let n = x.data.len();
        // The fp64 side is read or written by the kernel of the other side's build: widen in
        // the source's, narrow in the destination's (fp64 to fp64 is either's copy); fp32 to
        // fp32 is a plain device copy.
        let (kernel, k) = match (&x.data, &mut y.data) {
            (_, DeviceValues::F64(_)) => (K::Widen, &from.k),
            (DeviceValues::F64(_), _) => (K::Narrow, &to.k),
            (DeviceValues::F32(a), DeviceValues::F32(b)) => {
                return cu(self.base().memcpy_dtod(a, b));
            }
        };
        let cfg = LaunchConfig {
            grid_dim: ((n as u64).div_ceil(256).min(1 << 20) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let n = n as i64;
        let mut b = self.builder(self.base(), k.get(kernel));
        b.arg(&n).arg(&x.data).arg(&mut y.data);
        // SAFETY: both fields have the same layout (the same block, checked), so n values of
        // each; the kernel's build stores the non-fp64 side (`widen` reads its REAL, `narrow`
        // writes it), and the other side is fp64.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    type FaceBuffer = CudaSlice<f64>;

    fn alloc_face(&self, len: usize) -> Result<CudaSlice<f64>> {
        self.alloc_values(len)
    }

    fn pack_face(
        &self,
        op: &CudaLevel,
        x: &CudaField,
        side: Side,
        buf: &mut CudaSlice<f64>,
    ) -> Result<()> {
        self.check(op, &[x])?;
        same_len("face buffer", buf.len(), face_len(&op.stencil, side))?;
        use cudarc::driver::DevicePtrMut;
        let (src, _g) = x.data.device_ptr(self.base());
        let (dst, _h) = buf.device_ptr_mut(self.base());
        self.face_launch(op, K::PackFace, side, src, dst)
    }

    fn unpack_face(
        &self,
        op: &CudaLevel,
        x: &mut CudaField,
        side: Side,
        buf: &CudaSlice<f64>,
    ) -> Result<()> {
        self.check(op, &[x])?;
        same_len("face buffer", buf.len(), face_len(&op.stencil, side))?;
        use cudarc::driver::DevicePtr;
        let (src, _g) = buf.device_ptr(self.base());
        let (dst, _h) = x.data.device_ptr_mut(self.base());
        self.face_launch(op, K::UnpackFace, side, src, dst)
    }

    fn pack_column(
        &self,
        op: &CudaLevel,
        x: &CudaField,
        at: (usize, usize),
        buf: &mut CudaSlice<f64>,
    ) -> Result<()> {
        self.check(op, &[x])?;
        strata::backend::check_column(&op.stencil, at, buf.len())?;
        let (ih, jh) = (at.0 as i32, at.1 as i32);
        let mut b = self.builder(self.base(), op.k.get(K::PackColumn));
        b.arg(&op.layout).arg(&ih).arg(&jh).arg(&x.data).arg(buf);
        // SAFETY: the column is inside the field's layout (halo included, checked) and the
        // buffer holds nz values (checked); one thread per value.
        cu(unsafe { b.launch(column_config(op.layout.nz as u32)) }).map(|_| ())
    }

    fn unpack_column(
        &self,
        op: &CudaLevel,
        x: &mut CudaField,
        at: (usize, usize),
        buf: &CudaSlice<f64>,
    ) -> Result<()> {
        self.check(op, &[x])?;
        strata::backend::check_column(&op.stencil, at, buf.len())?;
        let (ih, jh) = (at.0 as i32, at.1 as i32);
        let mut b = self.builder(self.base(), op.k.get(K::UnpackColumn));
        b.arg(&op.layout)
            .arg(&ih)
            .arg(&jh)
            .arg(buf)
            .arg(&mut x.data);
        // SAFETY: as in pack_column.
        cu(unsafe { b.launch(column_config(op.layout.nz as u32)) }).map(|_| ())
    }

    fn copy_columns(
        &self,
        src_op: &CudaLevel,
        src: &CudaField,
        src_at: (usize, usize),
        op: &CudaLevel,
        x: &mut CudaField,
        at: (usize, usize),
        w: (usize, usize),
    ) -> Result<()> {
        self.check(src_op, &[src])?;
        self.check(op, &[x])?;
        strata::backend::check_columns(&src_op.stencil, src_at, &op.stencil, at, w)?;
        if src_op.stencil.storage != op.stencil.storage {
            return Err(backend_err("copy_columns between levels of two precisions"));
        }
        let (wx, wy) = w;
        if wx == 0 || wy == 0 {
            return Ok(());
        }
        let (si, sj) = (src_at.0 as i32, src_at.1 as i32);
        let (ih, jh) = (at.0 as i32, at.1 as i32);
        let (wxi, wyi) = (wx as i32, wy as i32);
        let n = (wx * wy) as u64 * op.layout.nz as u64;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).clamp(1, 65535) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.base(), op.k.get(K::CopyColumn));
        b.arg(&src_op.layout)
            .arg(&si)
            .arg(&sj)
            .arg(&src.data)
            .arg(&op.layout)
            .arg(&ih)
            .arg(&jh)
            .arg(&wxi)
            .arg(&wyi)
            .arg(&mut x.data);
        // SAFETY: both rectangles inside their fields' layouts (halo included, checked above),
        // both fields of one precision and nz (checked); the kernel strides over the
        // rectangle's values.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    fn copy_halo(
        &self,
        src_op: &CudaLevel,
        src: &CudaField,
        src_side: Side,
        op: &CudaLevel,
        x: &mut CudaField,
        side: Side,
        reversed: bool,
    ) -> Result<()> {
        self.check(src_op, &[src])?;
        self.check(op, &[x])?;
        let nz = op.layout.nz as usize;
        let count = face_len(&op.stencil, side) / nz;
        same_len(
            "source face",
            face_len(&src_op.stencil, src_side),
            count * nz,
        )?;
        let (s, d) = (side_index(src_side), side_index(side));
        let (count, rev) = (count as i32, i32::from(reversed));
        let n = count as u32 * op.layout.nz as u32;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.base(), op.k.get(K::CopyHalo));
        b.arg(&src_op.layout).arg(&s).arg(&src.data).arg(&op.layout);
        b.arg(&d).arg(&count).arg(&rev).arg(&mut x.data);
        // SAFETY: both fields match their layouts (checked above) and the faces have `count`
        // columns of nz values each; the kernel reads src's interior layer and writes x's halo.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    fn copy_halos(
        &self,
        ops: &[CudaLevel],
        x: &mut [CudaField],
        links: &[strata::backend::HaloLink],
    ) -> Result<()> {
        let Some(first) = ops.first() else {
            return Ok(());
        };
        let layout = first.layout;
        // One launch per batch needs square blocks of one layout (the tiles of a level are).
        if ops.iter().any(|o| o.layout != layout) || layout.nx != layout.ny {
            return strata::backend::copy_halos_one_by_one(self, ops, x, links);
        }
        for (o, f) in ops.iter().zip(x.iter()) {
            self.check(o, &[f])?;
        }
        // Square blocks: every face has nx (= ny) columns.
        let count = layout.nx;
        // The fields' device addresses; `x` is borrowed exclusively for the launch, and each
        // link's kernel reads only the interior layer of its source and writes only the halo
        // of its destination, so the raw addresses alias nothing that is written twice.
        let mut guards = Vec::with_capacity(x.len());
        let ptrs: Vec<u64> = x
            .iter()
            .map(|f| {
                let (p, g) = f.data.device_ptr(self.base());
                guards.push(g);
                p
            })
            .collect();
        let n = count as u32 * layout.nz as u32;
        for chunk in links.chunks(HALO_LINKS) {
            let mut batch = HaloBatch {
                links: chunk.len() as i32,
                pad: 0,
                l: [HaloLinkDesc::default(); HALO_LINKS],
            };
            for (d, l) in batch.l.iter_mut().zip(chunk) {
                *d = HaloLinkDesc {
                    src: ptrs[l.src],
                    dst: ptrs[l.dst],
                    src_side: side_index(l.src_side),
                    side: side_index(l.side),
                    reversed: i32::from(l.reversed),
                    pad: 0,
                };
            }
            let cfg = LaunchConfig {
                grid_dim: (n.div_ceil(256).max(1), chunk.len() as u32, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = self.builder(self.base(), first.k.get(K::CopyHalos));
            b.arg(&layout).arg(&count).arg(&batch);
            // SAFETY: every address is a live field of `layout` (checked above), held
            // exclusively through `x` for the launch; link y reads `count` columns of nz values
            // of its source's interior layer and writes its destination's halo (disjoint cells,
            // and no two links write the same halo: each tile side is filled once).
            cu(unsafe { b.launch(cfg) })?;
        }
        drop(guards);
        Ok(())
    }

    fn wrap_halo(&self, op: &CudaLevel, x: &mut CudaField, side: Side) -> Result<()> {
        let mut sides = [false; 4];
        sides[side.index()] = true;
        self.wrap_halos(op, x, sides)
    }

    /// Every periodic side's halo in one launch of the batched halo kernel (one link per side,
    /// the block its own source), or one per face length where the block is not square.
    fn wrap_halos(&self, op: &CudaLevel, x: &mut CudaField, sides: [bool; 4]) -> Result<()> {
        self.check(op, &[x])?;
        let nz = op.layout.nz as usize;
        let (ptr, guard) = x.data.device_ptr_mut(self.base());
        let mut result = Ok(());
        // The sides of one face length go in one launch (all four on a square block).
        let mut lengths: Vec<usize> = Side::ALL
            .into_iter()
            .filter(|s| sides[s.index()])
            .map(|s| face_len(&op.stencil, s) / nz)
            .collect();
        lengths.dedup();
        for count in lengths {
            let mut batch = HaloBatch {
                links: 0,
                pad: 0,
                l: [HaloLinkDesc::default(); HALO_LINKS],
            };
            for side in Side::ALL.into_iter().filter(|s| sides[s.index()]) {
                if face_len(&op.stencil, side) / nz == count {
                    batch.l[batch.links as usize] = HaloLinkDesc {
                        src: ptr,
                        dst: ptr,
                        src_side: side_index(side.opposite()),
                        side: side_index(side),
                        reversed: 0,
                        pad: 0,
                    };
                    batch.links += 1;
                }
            }
            let n = count as u32 * op.layout.nz as u32;
            let cfg = LaunchConfig {
                grid_dim: (n.div_ceil(256).max(1), batch.links as u32, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let count = count as i32;
            let mut b = self.builder(self.base(), op.k.get(K::CopyHalos));
            b.arg(&op.layout).arg(&count).arg(&batch);
            // SAFETY: `ptr` is x's live field of `op.layout` (checked above), held exclusively
            // through `x` for the launch; each link reads `count` columns of nz values of the
            // interior layer next to the opposite side and writes the halo across its side
            // (disjoint cells of the same field: the halo corners are no link's; the kernel
            // takes no `__restrict__` pointers).
            result = cu(unsafe { b.launch(cfg) }).map(|_| ());
            if result.is_err() {
                break;
            }
        }
        drop(guard);
        result
    }

    fn pack_halo(
        &self,
        op: &CudaLevel,
        x: &CudaField,
        parts: &mut [(HaloPart, &mut CudaSlice<f64>)],
    ) -> Result<()> {
        self.check(op, &[x])?;
        use cudarc::driver::DevicePtrMut;
        let (field, g) = x.data.device_ptr(self.base());
        let mut guards = Vec::with_capacity(parts.len());
        let mut descs = Vec::with_capacity(parts.len());
        for (part, buf) in parts.iter_mut() {
            let (what, count) = part_what(&op.stencil, part, buf.len())?;
            let (ptr, g) = buf.device_ptr_mut(self.base());
            guards.push(g);
            descs.push(HaloPartDesc::new(ptr, field, what, count, false));
        }
        self.halo_launch(op, K::PackHalo, &descs)?;
        drop((g, guards));
        Ok(())
    }

    fn unpack_halo(
        &self,
        op: &CudaLevel,
        x: &mut CudaField,
        parts: &[(HaloPart, &CudaSlice<f64>)],
    ) -> Result<()> {
        self.check(op, &[x])?;
        use cudarc::driver::DevicePtr;
        let (field, g) = x.data.device_ptr_mut(self.base());
        let mut guards = Vec::with_capacity(parts.len());
        let mut descs = Vec::with_capacity(parts.len());
        for (part, buf) in parts {
            let (what, count) = part_what(&op.stencil, part, buf.len())?;
            let (ptr, g) = buf.device_ptr(self.base());
            guards.push(g);
            descs.push(HaloPartDesc::new(ptr, field, what, count, false));
        }
        self.halo_launch(op, K::UnpackHalo, &descs)?;
        drop((g, guards));
        Ok(())
    }

    fn pack_blocks(
        &self,
        ops: &[CudaLevel],
        x: &[CudaField],
        parts: &mut [(BlockPart, &mut CudaSlice<f64>)],
    ) -> Result<()> {
        let Some(first) = one_layout(ops) else {
            return strata::backend::pack_blocks_one_by_one(self, ops, x, parts);
        };
        use cudarc::driver::DevicePtrMut;
        let mut fields = Vec::with_capacity(x.len());
        let mut guards = Vec::with_capacity(x.len() + parts.len());
        for (op, f) in ops.iter().zip(x) {
            self.check(op, &[f])?;
            let (ptr, g) = f.data.device_ptr(self.base());
            fields.push(ptr);
            guards.push(g);
        }
        let mut buf_guards = Vec::with_capacity(parts.len());
        let mut descs = Vec::with_capacity(parts.len());
        for (p, buf) in parts.iter_mut() {
            strata::backend::check_block(ops.len(), fields.len(), p.block)?;
            let (what, count) = part_what(&ops[p.block].stencil, &p.part, buf.len())?;
            let (ptr, g) = buf.device_ptr_mut(self.base());
            buf_guards.push(g);
            descs.push(HaloPartDesc::new(ptr, fields[p.block], what, count, false));
        }
        self.halo_launch(first, K::PackHalo, &descs)?;
        drop((guards, buf_guards));
        Ok(())
    }

    fn unpack_blocks(
        &self,
        ops: &[CudaLevel],
        x: &mut [CudaField],
        parts: &mut [(BlockPart, &mut CudaSlice<f64>)],
    ) -> Result<()> {
        let Some(first) = one_layout(ops) else {
            return strata::backend::unpack_blocks_one_by_one(self, ops, x, parts);
        };
        use cudarc::driver::DevicePtr;
        for (op, f) in ops.iter().zip(x.iter()) {
            self.check(op, &[f])?;
        }
        let mut fields = Vec::with_capacity(x.len());
        let mut guards = Vec::with_capacity(x.len());
        for f in x.iter_mut() {
            let (ptr, g) = f.data.device_ptr_mut(self.base());
            fields.push(ptr);
            guards.push(g);
        }
        let mut buf_guards = Vec::with_capacity(parts.len());
        let mut descs = Vec::with_capacity(parts.len());
        for (p, buf) in parts.iter() {
            strata::backend::check_block(ops.len(), fields.len(), p.block)?;
            let (what, count) = part_what(&ops[p.block].stencil, &p.part, buf.len())?;
            let (ptr, g) = buf.device_ptr(self.base());
            buf_guards.push(g);
            descs.push(HaloPartDesc::new(
                ptr,
                fields[p.block],
                what,
                count,
                p.reversed,
            ));
        }
        self.halo_launch(first, K::UnpackHalo, &descs)?;
        drop((guards, buf_guards));
        Ok(())
    }

    fn reverse_face(&self, op: &CudaLevel, buf: &mut CudaSlice<f64>) -> Result<()> {
        let nz = op.layout.nz as usize;
        if !buf.len().is_multiple_of(nz) {
            return Err(strata::StrataError::invalid(
                "face buffer",
                format!("has {} values, not whole columns of {nz}", buf.len()),
            ));
        }
        let count = (buf.len() / nz) as i32;
        let n = (count / 2) as u32 * nz as u32;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.builder(self.base(), op.k.get(K::ReverseFace));
        b.arg(&count).arg(buf);
        // SAFETY: the buffer holds `count` whole columns of nz values (checked); each thread
        // swaps two values of distinct columns, and no two threads touch the same value.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    fn face_to_host(&self, buf: &CudaSlice<f64>, host: &mut [f64]) -> Result<()> {
        same_len("host face", host.len(), buf.len())?;
        cu(self.base().memcpy_dtoh(buf, host))?;
        cu(self.base().synchronize())
    }

    fn face_from_host(&self, host: &[f64], buf: &mut CudaSlice<f64>) -> Result<()> {
        same_len("host face", host.len(), buf.len())?;
        cu(self.base().memcpy_htod(host, buf))
    }
}

impl CudaBackend {
    /// Launches [`K::PackHalo`] or [`K::UnpackHalo`] over `parts` ([`HaloPartDesc`]: buffer
    /// and field addresses, part code of [`part_what`], columns, direction), [`HALO_PARTS`] per
    /// launch, on fields of `op`'s layout and precision.
    pub(super) fn halo_launch(
        &self,
        op: &CudaLevel,
        kernel: K,
        parts: &[HaloPartDesc],
    ) -> Result<()> {
        let nz = op.layout.nz as usize;
        // No part twice: two blocks of a launch would write the same cells.
        for (a, p) in parts.iter().enumerate() {
            if parts[..a].iter().any(|q| (q.x, q.what) == (p.x, p.what)) {
                return Err(strata::StrataError::invalid(
                    "halo part",
                    format!("part {} of one field given twice", p.what),
                ));
            }
        }
        for chunk in parts.chunks(HALO_PARTS) {
            let mut batch = HaloParts {
                parts: chunk.len() as i32,
                pad: 0,
                p: [HaloPartDesc::default(); HALO_PARTS],
            };
            batch.p[..chunk.len()].copy_from_slice(chunk);
            let most = chunk
                .iter()
                .map(|p| p.count as usize * nz)
                .max()
                .unwrap_or(0) as u32;
            let cfg = LaunchConfig {
                grid_dim: (most.div_ceil(256).max(1), chunk.len() as u32, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = self.builder(self.base(), op.k.get(kernel));
            b.arg(&op.layout).arg(&batch);
            // SAFETY: every part's field is a live field of the level's layout and precision
            // (checked by the caller, which holds it for the launch, exclusively when
            // unpacking); each part's buffer is a live allocation of `count` columns of nz
            // values (checked in `part_what`), held by the caller for the launch; part y
            // touches only its own buffer and its own face or corner of its field (disjoint
            // cells: the interior layer when packing, the halo when unpacking, and no part of
            // a field repeated).
            cu(unsafe { b.launch(cfg) })?;
        }
        Ok(())
    }
}

/// The first of `ops` where all share its layout and kernels (the tiles of a level do); `None`
/// for no operators or different ones (then the parts go one by one).
pub(super) fn one_layout(ops: &[CudaLevel]) -> Option<&CudaLevel> {
    let first = ops.first()?;
    ops.iter()
        .all(|o| o.layout == first.layout && o.stencil.storage == first.stencil.storage)
        .then_some(first)
}

/// An error unless a length is the one expected (`what` names it): a wrong size from a caller is
/// refused, never a panic.
fn same_len(what: &str, got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(strata::StrataError::invalid(
            what,
            format!("has {got} values where {want} are needed"),
        ));
    }
    Ok(())
}

/// The kernel's code of a part (0–3 a side, 4–7 a corner) and its columns, after checking its
/// buffer's length.
pub(super) fn part_what(
    s: &strata::stencil::LevelStencil,
    part: &HaloPart,
    len: usize,
) -> Result<(i32, usize)> {
    let what = match *part {
        HaloPart::Face(side) => side_index(side),
        HaloPart::Corner(c) if c < 4 => 4 + c as i32,
        HaloPart::Corner(c) => {
            return Err(strata::StrataError::invalid(
                "halo part",
                format!("corner {c} is not one of 0..=3"),
            ))
        }
    };
    if len != part.len(s) {
        return Err(strata::StrataError::invalid(
            "halo part",
            format!(
                "{part:?} needs a buffer of {} values, not {len}",
                part.len(s)
            ),
        ));
    }
    Ok((what, len / s.nz))
}

/// Parts per launch of `pack_halo_f64` and `unpack_halo_f64` (`HALO_PARTS` of
/// kernels/transfer.cu).
const HALO_PARTS: usize = 32;

/// `HaloPart` of kernels/transfer.cu: a buffer's and a field's device addresses, what the part
/// is, its columns, and whether unpacking reads the buffer's columns backwards.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct HaloPartDesc {
    buf: u64,
    x: u64,
    what: i32,
    count: i32,
    reversed: i32,
    pad: i32,
}

impl HaloPartDesc {
    pub(super) fn new(buf: u64, x: u64, what: i32, count: usize, reversed: bool) -> Self {
        Self {
            buf,
            x,
            what,
            count: count as i32,
            reversed: i32::from(reversed),
            pad: 0,
        }
    }
}

/// `HaloParts` of kernels/transfer.cu, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct HaloParts {
    parts: i32,
    pad: i32,
    p: [HaloPartDesc; HALO_PARTS],
}

// SAFETY: plain #[repr(C)] data laid out as the C structs `HaloPart` (two 8-byte addresses, four
// i32: 32 bytes) and `HaloParts` (two i32, then the parts at offset 8) of kernels/transfer.cu;
// the addresses are device pointers the kernel dereferences.
unsafe impl cudarc::driver::DeviceRepr for HaloParts {}

/// Links per launch of `copy_halos_f64` (`HALO_LINKS` of kernels/transfer.cu).
const HALO_LINKS: usize = 32;

/// `HaloLink` of kernels/transfer.cu: device addresses, sides, direction.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct HaloLinkDesc {
    src: u64,
    dst: u64,
    src_side: i32,
    side: i32,
    reversed: i32,
    pad: i32,
}

/// `HaloBatch` of kernels/transfer.cu, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct HaloBatch {
    links: i32,
    pad: i32,
    l: [HaloLinkDesc; HALO_LINKS],
}

// SAFETY: plain #[repr(C)] data laid out as the C structs `HaloLink` (two 8-byte addresses,
// four i32: 32 bytes) and `HaloBatch` (two i32, then the links at offset 8) of
// kernels/transfer.cu; the addresses are device pointers the kernel dereferences.
unsafe impl cudarc::driver::DeviceRepr for HaloBatch {}

/// The launch of a kernel over the `nz` values of one column.
fn column_config(nz: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (nz.div_ceil(128), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}
