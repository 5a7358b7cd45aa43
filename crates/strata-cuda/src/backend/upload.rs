//! Coefficient arrays to the device: filled by the host's threads straight into the two
//! page-locked staging buffers, one chunk at a time, each chunk copied to its place in the device
//! array while the host fills the next. A copy from pageable memory (what `clone_htod` of a
//! `Vec` does) runs at a few GB/s, because the driver stages it through small pinned buffers
//! synchronously, and needs the whole array built on the host first.

use super::*;
use crate::staging::CHUNK_BYTES;

/// Arrays of at most this many values go in one pageable copy: a page-locked staging pair is
/// not worth allocating for them.
const SMALL: usize = 1 << 16;

/// Values per piece of the host's parallel fill.
const PIECE: usize = 1 << 15;

/// Fills `out` with values `start..start + out.len()` of the array being uploaded.
pub(super) type Fill<'a> = &'a (dyn Fn(usize, &mut [f64]) + Sync);

impl CudaBackend {
    /// A device array of `len` values stored in `storage` (rounded to fp32 for an fp32 level)
    /// whose values `fill` writes; refused, not failed, when the device has too little free
    /// memory.
    pub(super) fn upload_fill(
        &self,
        len: usize,
        storage: Storage,
        fill: Fill<'_>,
    ) -> Result<DeviceValues> {
        self.check_free(len, storage.bytes() as u64)?;
        if len <= SMALL {
            let mut v = vec![0.0; len];
            fill(0, &mut v);
            return Ok(match storage {
                Storage::F64 => DeviceValues::F64(cu(self.stream.clone_htod(&v))?),
                Storage::F32 => {
                    let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
                    DeviceValues::F32(cu(self.stream.clone_htod(&v32))?)
                }
            });
        }
        let chunk = CHUNK_BYTES / 8;
        let mut pinned = cu(self.pinned.get(&self.ctx, chunk))?;
        let mut dst = self.alloc_stored(len, storage)?;
        let stream = &self.stream;
        for (c, start) in (0..len).step_by(chunk).enumerate() {
            let n = chunk.min(len - start);
            let buf = &mut pinned[c % 2];
            // Waits for the device's copy out of this buffer two chunks ago.
            let host = cu(buf.host_mut())?;
            match &mut dst {
                DeviceValues::F64(d) => {
                    let h = &mut host[..n];
                    h.par_chunks_mut(PIECE)
                        .enumerate()
                        .for_each(|(p, out)| fill(start + p * PIECE, out));
                    cu(stream.memcpy_htod(&*h, &mut d.slice_mut(start..start + n)))?;
                }
                DeviceValues::F32(d) => {
                    // SAFETY: the page-locked buffer's memory holds 2·len f32 values at f32's
                    // alignment (f64's is larger); every f32 in the first n is written below
                    // before the copy reads it, and `host`'s f64 view is not used meanwhile.
                    let h32 = unsafe {
                        std::slice::from_raw_parts_mut(host.as_mut_ptr().cast::<f32>(), n)
                    };
                    h32.par_chunks_mut(PIECE).enumerate().for_each(|(p, out)| {
                        let mut v = vec![0.0; out.len()];
                        fill(start + p * PIECE, &mut v);
                        for (o, x) in out.iter_mut().zip(&v) {
                            *o = *x as f32;
                        }
                    });
                    cu(stream.memcpy_htod(&*h32, &mut d.slice_mut(start..start + n)))?;
                }
            }
            cu(buf.used(stream))?;
        }
        Ok(dst)
    }

    /// `v` on the device, stored in `storage` (rounded to fp32 for an fp32 level); refused, not
    /// failed, when the device has too little free memory.
    pub(super) fn upload_values(&self, v: &[f64], storage: Storage) -> Result<DeviceValues> {
        self.upload_fill(v.len(), storage, &|start, out| {
            out.copy_from_slice(&v[start..start + out.len()])
        })
    }
}
