//! Coefficient arrays to the device through the two page-locked staging buffers that the field
//! transfers use: the host's threads copy (or round to fp32) one chunk into a buffer while the
//! DMA engine copies the other buffer's chunk to its place in the device array. A copy straight
//! from pageable memory (`clone_htod` of a slice) runs at a few GB/s, because the driver stages
//! it through small pinned buffers synchronously.

use super::*;
use crate::staging::CHUNK_BYTES;

/// Arrays of at most this many values go in one pageable copy: the staging pair is not worth
/// allocating for them.
const SMALL: usize = 1 << 16;

/// Values per piece of the host's parallel copy.
const PIECE: usize = 1 << 15;

impl CudaBackend {
    /// `v` on the device in fp64 through the page-locked staging pair
    /// ([`CudaBackend::upload_values`]): a caller's host array (a coefficient field) uploaded at
    /// the DMA engine's rate rather than pageable memory's.
    pub(crate) fn upload_f64(&self, v: &[f64]) -> Result<CudaSlice<f64>> {
        match self.upload_values(v, Storage::F64)? {
            DeviceValues::F64(d) => Ok(d),
            DeviceValues::F32(_) => Err(StrataError::Backend {
                backend: "cuda".into(),
                msg: "an fp64 upload came back in fp32".into(),
            }),
        }
    }

    /// `v` on the device, stored in `storage` (rounded to fp32 for an fp32 level); refused, not
    /// failed, when the device has too little free memory.
    pub(super) fn upload_values(&self, v: &[f64], storage: Storage) -> Result<DeviceValues> {
        if v.len() <= SMALL {
            self.check_free(v.len(), storage.bytes() as u64)?;
            return Ok(match storage {
                Storage::F64 => DeviceValues::F64(cu(self.stream.clone_htod(v))?),
                Storage::F32 => {
                    let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                    DeviceValues::F32(cu(self.stream.clone_htod(&v32))?)
                }
            });
        }
        let chunk = CHUNK_BYTES / 8;
        // Refused here, before the staging buffers are page-locked, if the device lacks room.
        let mut dst = self.alloc_stored(v.len(), storage)?;
        let mut pinned = cu(self.pinned.get(&self.ctx, chunk))?;
        let stream = &self.stream;
        for (c, src) in v.chunks(chunk).enumerate() {
            let (start, n) = (c * chunk, src.len());
            let buf = &mut pinned[c % 2];
            // Waits for the device's copy out of this buffer two chunks ago.
            let host = cu(buf.host_mut())?;
            match &mut dst {
                DeviceValues::F64(d) => {
                    let h = &mut host[..n];
                    par_copy(h, src);
                    cu(stream.memcpy_htod(&*h, &mut d.slice_mut(start..start + n)))?;
                }
                DeviceValues::F32(d) => {
                    // SAFETY: the page-locked buffer holds at least 2n f32 values at f32's
                    // alignment (f64's is larger); all n used here are written below before
                    // the copy reads them, and the f64 view `host` is not used meanwhile.
                    let h32 = unsafe {
                        std::slice::from_raw_parts_mut(host.as_mut_ptr().cast::<f32>(), n)
                    };
                    h32.par_chunks_mut(PIECE)
                        .zip(src.par_chunks(PIECE))
                        .for_each(|(o, s)| o.iter_mut().zip(s).for_each(|(o, &x)| *o = x as f32));
                    cu(stream.memcpy_htod(&*h32, &mut d.slice_mut(start..start + n)))?;
                }
            }
            cu(buf.used(stream))?;
        }
        Ok(dst)
    }
}
