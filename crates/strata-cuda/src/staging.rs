//! Host ↔ device transfers of whole fields through page-locked staging buffers.
//!
//! A field travels in chunks of rows (about [`CHUNK_BYTES`]): the host copies a chunk between the
//! caller's array and one of two page-locked buffers (in parallel, with rayon), the DMA engine
//! copies a page-locked buffer to or from a device staging buffer, and a kernel transposes
//! between the staging buffer's z-contiguous rows and the field's x-contiguous layout. With two
//! page-locked buffers the host's copy of one chunk overlaps the DMA of the other. From pageable
//! memory the driver itself stages through small pinned buffers, synchronously, which is what
//! this replaces.

use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError, PinnedHostSlice};
use rayon::prelude::*;
use std::sync::{Arc, Mutex, MutexGuard};

/// Bytes per chunk of a staged transfer.
pub const CHUNK_BYTES: usize = 64 << 20;

/// Values per piece of the host's parallel copy.
const PIECE: usize = 1 << 16;

/// Rows of `row` values per chunk of a field of `ny` rows: about [`CHUNK_BYTES`], at least one.
pub fn chunk_rows(row: usize, ny: usize) -> usize {
    (CHUNK_BYTES / 8 / row.max(1)).clamp(1, ny.max(1))
}

/// A page-locked buffer and the event recorded after the last device copy that used it (the
/// backend turns cudarc's own event tracking off, so its pinned slices do not record one).
pub struct Buffer {
    host: PinnedHostSlice<f64>,
    done: CudaEvent,
}

impl Buffer {
    /// The buffer's values, once the device's last copy to or from it has finished.
    pub fn host_mut(&mut self) -> Result<&mut [f64], DriverError> {
        self.done.synchronize()?;
        self.host.as_mut_slice()
    }

    /// Marks the work queued on `stream` so far as the buffer's last use.
    pub fn used(&self, stream: &CudaStream) -> Result<(), DriverError> {
        self.done.record(stream)
    }

    /// Values in the buffer.
    pub fn len(&self) -> usize {
        self.host.len()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // The page-locked memory is freed after this: no device copy may still use it.
        let _ = self.done.synchronize();
    }
}

/// Two page-locked host buffers, allocated at the first transfer and kept for the next ones
/// (page-locking costs milliseconds per call), grown when a chunk needs more.
#[derive(Default)]
pub struct Pinned(Mutex<Vec<Buffer>>);

impl Pinned {
    /// The two buffers, each of at least `len` values.
    pub fn get(
        &self,
        ctx: &Arc<CudaContext>,
        len: usize,
    ) -> Result<MutexGuard<'_, Vec<Buffer>>, DriverError> {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() != 2 || g[0].len() < len {
            // At least a whole chunk, so that a process locks its pages once.
            let len = len.max(CHUNK_BYTES / 8);
            g.clear();
            for _ in 0..2 {
                g.push(Buffer {
                    // SAFETY: the buffer's contents are written (by a host copy or a device
                    // copy) before they are read. Flags 0: cached memory, which the host also
                    // reads.
                    host: unsafe { ctx.alloc_pinned_with_flags::<f64>(len, 0) }?,
                    done: ctx.new_event(None)?,
                });
            }
        }
        Ok(g)
    }
}

/// `dst ← src` with the host's threads (a single thread copies well below the memory
/// bandwidth).
pub fn par_copy(dst: &mut [f64], src: &[f64]) {
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_rows() {
        // 2048 x 128 values per row: 32 rows of 1 MiB... per 64 MiB chunk.
        assert_eq!(chunk_rows(2048 * 128, 2048), 32);
        assert_eq!(chunk_rows(2048 * 128, 10), 10);
        // A row larger than a chunk still moves, one row at a time.
        assert_eq!(chunk_rows(CHUNK_BYTES, 5), 1);
    }

    #[test]
    fn parallel_copy_copies_everything() {
        let src: Vec<f64> = (0..3 * PIECE + 17).map(|i| i as f64).collect();
        let mut dst = vec![0.0; src.len()];
        par_copy(&mut dst, &src);
        assert_eq!(dst, src);
    }
}
