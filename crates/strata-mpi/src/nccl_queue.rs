//! [`Nccl`]: an NCCL communicator whose operations are queued on the stream the CUDA backend
//! queues its own work on at the time ([`CudaBackend::queue_stream`]): its one stream, or,
//! while a V-cycle is being recorded ([`strata::backend::Fields::replay`]), its capture stream.
//! So a cycle's halo messages are recorded into its CUDA graph with its kernels and replayed
//! with one launch, as on one GPU. (cudarc's `nccl::Comm` binds every operation to the stream
//! it was made with — here the legacy default stream, which cannot be captured.)

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use cudarc::nccl::{result, sys};
use strata::{Result, StrataError};
use strata_cuda::CudaBackend;

/// An NCCL error as a communicator error.
pub(crate) fn nccl_err(e: impl std::fmt::Debug) -> StrataError {
    StrataError::Comm(format!("NCCL: {e:?}"))
}

/// An NCCL communicator of the job's ranks; each operation names the backend whose current
/// stream it is queued on.
pub(crate) struct Nccl {
    comm: sys::ncclComm_t,
}

impl Nccl {
    /// This rank's communicator of `size` ranks sharing the unique id `id` (collective: every
    /// rank calls it with the same id).
    pub(crate) fn init(rank: usize, size: usize, id: [std::ffi::c_char; 128]) -> Result<Self> {
        let (rank, size) = (
            i32::try_from(rank).map_err(nccl_err)?,
            i32::try_from(size).map_err(nccl_err)?,
        );
        let mut comm = std::mem::MaybeUninit::uninit();
        // SAFETY: `comm` is written by NCCL before it is read (only on success); the id is
        // the 128 bytes rank 0's `ncclGetUniqueId` made, broadcast to every rank.
        let comm = unsafe {
            result::comm_init_rank(
                comm.as_mut_ptr(),
                size,
                sys::ncclUniqueId { internal: id },
                rank,
            )
            .map_err(nccl_err)?;
            comm.assume_init()
        };
        Ok(Self { comm })
    }

    /// A new unique id (rank 0 makes it; every rank passes it to [`Nccl::init`]).
    pub(crate) fn unique_id() -> Result<[std::ffi::c_char; 128]> {
        Ok(result::get_uniqueid().map_err(nccl_err)?.internal)
    }

    /// Opens a group: the sends and receives queued until [`Group::end`] are one operation.
    pub(crate) fn group(&self) -> Result<Group<'_>> {
        result::group_start().map_err(nccl_err)?;
        Ok(Group {
            nccl: self,
            open: true,
        })
    }

    /// Replaces the `len` values of `buf` from `at` by their sums over the ranks, queued on
    /// `b`'s current stream.
    pub(crate) fn sum_in_place(
        &self,
        b: &CudaBackend,
        buf: &mut CudaSlice<f64>,
        at: usize,
        len: usize,
    ) -> Result<()> {
        if at + len > buf.len() {
            return Err(StrataError::invalid(
                "slots",
                format!("{at}..{} of {} scalars", at + len, buf.len()),
            ));
        }
        let stream = b.stream();
        let (ptr, _sync) = buf.device_ptr_mut(&stream);
        let ptr = (ptr + (at * std::mem::size_of::<f64>()) as u64) as *mut std::ffi::c_void;
        // SAFETY: `ptr .. ptr + len` lies in `buf` (checked above), which `&mut` keeps alive
        // and unshared for the call; the operation is queued on `b`'s current stream, in order
        // with the kernels that write and read the slots.
        unsafe {
            result::all_reduce(
                ptr,
                ptr,
                len,
                sys::ncclDataType_t::ncclFloat64,
                sys::ncclRedOp_t::ncclSum,
                self.comm,
                b.queue_stream() as _,
            )
        }
        .map_err(nccl_err)?;
        Ok(())
    }
}

impl Nccl {
    /// For each `(x, y, len, storage)`: the `len` values at device address `y` ← their sums over
    /// the ranks of those at `x` (fields stored as `storage`), all in one NCCL group queued on
    /// `b`'s current stream.
    pub(crate) fn sum_into(
        &self,
        b: &CudaBackend,
        pairs: &[(u64, u64, usize, strata::precision::Storage)],
    ) -> Result<()> {
        let group = self.group()?;
        for &(x, y, len, storage) in pairs {
            let kind = match storage {
                strata::precision::Storage::F64 => sys::ncclDataType_t::ncclFloat64,
                strata::precision::Storage::F32 => sys::ncclDataType_t::ncclFloat32,
            };
            // SAFETY: `x` and `y` are the addresses of two live device fields of `len` values
            // stored as `storage` (the caller's, of one level), in the backend's context;
            // queued on its current stream, in order with the kernels that write `x` and read
            // `y`.
            unsafe {
                result::all_reduce(
                    x as *const std::ffi::c_void,
                    y as *mut std::ffi::c_void,
                    len,
                    kind,
                    sys::ncclRedOp_t::ncclSum,
                    self.comm,
                    b.queue_stream() as _,
                )
            }
            .map_err(nccl_err)?;
        }
        group.end()
    }
}

impl Drop for Nccl {
    fn drop(&mut self) {
        // As cudarc's communicator: abort, which never waits for a peer that is gone. The
        // error, if any, has nowhere to go.
        // SAFETY: `comm` is this communicator's, never used after this.
        let _ = unsafe { result::comm_abort(self.comm) };
    }
}

/// An open NCCL group ([`Nccl::group`]); [`Group::end`] closes it and reports its errors (a
/// group dropped open is closed, its error lost: only on an early return with another error).
pub(crate) struct Group<'a> {
    nccl: &'a Nccl,
    open: bool,
}

impl Group<'_> {
    /// Queues a send of `buf` to rank `peer` on `b`'s current stream.
    pub(crate) fn send(&mut self, b: &CudaBackend, buf: &CudaSlice<f64>, peer: i32) -> Result<()> {
        let stream = b.stream();
        let (ptr, _sync) = buf.device_ptr(&stream);
        // SAFETY: `buf` is a device buffer of the backend's context that the caller keeps
        // alive and unwritten until the stream passes the send (face buffers live as long as
        // the communicator, and the next pack is queued after this on the same stream).
        unsafe {
            result::send(
                ptr as *const std::ffi::c_void,
                buf.len(),
                sys::ncclDataType_t::ncclFloat64,
                peer,
                self.nccl.comm,
                b.queue_stream() as _,
            )
        }
        .map_err(nccl_err)?;
        Ok(())
    }

    /// Queues a receive into `buf` from rank `peer` on `b`'s current stream.
    pub(crate) fn recv(
        &mut self,
        b: &CudaBackend,
        buf: &mut CudaSlice<f64>,
        peer: i32,
    ) -> Result<()> {
        let stream = b.stream();
        let len = buf.len();
        let (ptr, _sync) = buf.device_ptr_mut(&stream);
        // SAFETY: as in `send`; the buffer is read only by the unpack queued after it.
        unsafe {
            result::recv(
                ptr as *mut std::ffi::c_void,
                len,
                sys::ncclDataType_t::ncclFloat64,
                peer,
                self.nccl.comm,
                b.queue_stream() as _,
            )
        }
        .map_err(nccl_err)?;
        Ok(())
    }

    /// Closes the group: its operations are queued.
    pub(crate) fn end(mut self) -> Result<()> {
        self.open = false;
        result::group_end().map_err(nccl_err)?;
        Ok(())
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = result::group_end();
        }
    }
}
