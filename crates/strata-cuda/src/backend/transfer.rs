//! Transfers (kernels/transfer.cu): host arrays in and out through page-locked staging with an on-device transpose, and the halo faces.

use super::*;
use strata::backend::TransferKernels;

impl TransferKernels for CudaBackend {
    fn upload(&self, op: &CudaLevel, host: &[f64], x: &mut CudaField) -> Result<()> {
        self.check(op, &[x]);
        let l = op.layout;
        let row = l.nx as usize * l.nz as usize;
        assert_eq!(host.len(), row * l.ny as usize, "host array size");
        let rows = chunk_rows(row, l.ny as usize);
        let mut pinned = cu(self.pinned.get(&self.ctx, rows * row))?;
        let mut staging = self.alloc_values(pinned[0].len())?;
        for (c, j0) in (0..l.ny as usize).step_by(rows).enumerate() {
            let n = rows.min(l.ny as usize - j0);
            let buf = &mut pinned[c % 2];
            // Waits for the device's copy out of this buffer two chunks ago.
            par_copy(
                &mut cu(buf.host_mut())?[..n * row],
                &host[j0 * row..(j0 + n) * row],
            );
            cu(self.stream.memcpy_htod(&*buf.slice_mut(), &mut staging))?;
            cu(buf.used(&self.stream))?;
            let mut b = self.stream.launch_builder(op.k.get(K::ToDevice));
            let j0i = j0 as i32;
            b.arg(&l).arg(&j0i).arg(&staging).arg(&mut x.data);
            // SAFETY: staging holds n rows of nx·nz values; rows j0..j0+n are inside x's layout.
            cu(unsafe { b.launch(self.transpose_cfg(op, n)) })?;
        }
        Ok(())
    }

    fn download(&self, op: &CudaLevel, x: &CudaField, host: &mut [f64]) -> Result<()> {
        self.check(op, &[x]);
        let l = op.layout;
        let row = l.nx as usize * l.nz as usize;
        assert_eq!(host.len(), row * l.ny as usize, "host array size");
        let rows = chunk_rows(row, l.ny as usize);
        let mut pinned = cu(self.pinned.get(&self.ctx, rows * row))?;
        let mut staging = self.alloc_values(pinned[0].len())?;
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
            let mut b = self.stream.launch_builder(op.k.get(K::ToHost));
            let j0i = j0 as i32;
            b.arg(&l).arg(&j0i).arg(&x.data).arg(&mut staging);
            // SAFETY: staging holds n rows of nx·nz values; rows j0..j0+n are inside x's layout.
            cu(unsafe { b.launch(self.transpose_cfg(op, n)) })?;
            let buf = &mut pinned[c % 2];
            cu(self.stream.memcpy_dtoh(&staging, buf.slice_mut()))?;
            cu(buf.used(&self.stream))?;
            if c > 0 {
                copy_out(c - 1, &mut pinned)?;
            }
        }
        if let Some(last) = chunks.len().checked_sub(1) {
            copy_out(last, &mut pinned)?;
        }
        Ok(())
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
        self.check(op, &[x]);
        assert_eq!(buf.len(), face_len(&op.stencil, side));
        self.face_launch(op, K::PackFace, side, &x.data, buf)
    }

    fn unpack_face(
        &self,
        op: &CudaLevel,
        x: &mut CudaField,
        side: Side,
        buf: &CudaSlice<f64>,
    ) -> Result<()> {
        self.check(op, &[x]);
        assert_eq!(buf.len(), face_len(&op.stencil, side));
        self.face_launch(op, K::UnpackFace, side, buf, &mut x.data)
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
        self.check(src_op, &[src]);
        self.check(op, &[x]);
        let nz = op.layout.nz as usize;
        let count = face_len(&op.stencil, side) / nz;
        assert_eq!(face_len(&src_op.stencil, src_side), count * nz);
        let (s, d) = (side_index(src_side), side_index(side));
        let (count, rev) = (count as i32, i32::from(reversed));
        let n = count as u32 * op.layout.nz as u32;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(op.k.get(K::CopyHalo));
        b.arg(&src_op.layout).arg(&s).arg(&src.data).arg(&op.layout);
        b.arg(&d).arg(&count).arg(&rev).arg(&mut x.data);
        // SAFETY: both fields match their layouts (checked above) and the faces have `count`
        // columns of nz values each; the kernel reads src's interior layer and writes x's halo.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    fn reverse_face(&self, op: &CudaLevel, buf: &mut CudaSlice<f64>) -> Result<()> {
        let nz = op.layout.nz as usize;
        assert_eq!(buf.len() % nz, 0, "a face of whole columns");
        let count = (buf.len() / nz) as i32;
        let n = (count / 2) as u32 * nz as u32;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(op.k.get(K::ReverseFace));
        b.arg(&count).arg(buf);
        // SAFETY: the buffer holds `count` whole columns of nz values (asserted); each thread
        // swaps two values of distinct columns, and no two threads touch the same value.
        cu(unsafe { b.launch(cfg) }).map(|_| ())
    }

    fn face_to_host(&self, buf: &CudaSlice<f64>, host: &mut [f64]) -> Result<()> {
        assert_eq!(buf.len(), host.len());
        cu(self.stream.memcpy_dtoh(buf, host))?;
        cu(self.stream.synchronize())
    }

    fn face_from_host(&self, host: &[f64], buf: &mut CudaSlice<f64>) -> Result<()> {
        assert_eq!(buf.len(), host.len());
        cu(self.stream.memcpy_htod(host, buf))
    }
}
