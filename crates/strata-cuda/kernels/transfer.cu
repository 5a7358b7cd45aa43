// Host-layout transposes and halo faces.
//
// The host layout is z-contiguous, h[(j * nx + i) * nz + k]; for each j this is an (nx x nz)
// matrix that the device stores transposed, rows k of length sx. Tiled 32 x 32 through shared
// memory so that both sides are coalesced. Launch: block (32, 8), grid (ceil(nz/32),
// ceil(nx/32), rows); the launch moves rows j0 .. j0 + rows, and h holds just those rows.

#define TILE 32

// x (device layout, interior) <- h (host layout).
extern "C" __global__ void to_device_f64(Layout L, int j0, const double* __restrict__ h, real* __restrict__ x) {
    __shared__ double tile[TILE][TILE + 1];
    const int k0 = blockIdx.x * TILE, i0 = blockIdx.y * TILE, jr = blockIdx.z;
    for (int m = threadIdx.y; m < TILE; m += blockDim.y) {
        const int i = i0 + m, k = k0 + threadIdx.x;
        if (i < L.nx && k < NZ) tile[m][threadIdx.x] = h[((i64)jr * L.nx + i) * NZ + k];
    }
    __syncthreads();
    for (int m = threadIdx.y; m < TILE; m += blockDim.y) {
        const int k = k0 + m, i = i0 + threadIdx.x;
        if (i < L.nx && k < NZ) x[at_(L, i, j0 + jr, k)] = tile[threadIdx.x][m];
    }
}

// h (host layout) <- x (device layout, interior).
extern "C" __global__ void to_host_f64(Layout L, int j0, const real* __restrict__ x, double* __restrict__ h) {
    __shared__ double tile[TILE][TILE + 1];
    const int k0 = blockIdx.x * TILE, i0 = blockIdx.y * TILE, jr = blockIdx.z;
    for (int m = threadIdx.y; m < TILE; m += blockDim.y) {
        const int k = k0 + m, i = i0 + threadIdx.x;
        if (i < L.nx && k < NZ) tile[threadIdx.x][m] = x[at_(L, i, j0 + jr, k)];
    }
    __syncthreads();
    for (int m = threadIdx.y; m < TILE; m += blockDim.y) {
        const int i = i0 + m, k = k0 + threadIdx.x;
        if (i < L.nx && k < NZ) h[((i64)jr * L.nx + i) * NZ + k] = tile[m][threadIdx.x];
    }
}

// Face position t of side (0 west, 1 east, 2 south, 3 north): the interior column next to the
// side (halo = 0) or the halo column across it (halo = 1).
__device__ __forceinline__ void face_column(const Layout& L, int side, int t, int halo, int& i, int& j) {
    switch (side) {
        case 0: i = halo ? -1 : 0; j = t; break;
        case 1: i = halo ? L.nx : L.nx - 1; j = t; break;
        case 2: i = t; j = halo ? -1 : 0; break;
        default: i = t; j = halo ? L.ny : L.ny - 1; break;
    }
}

// buf[t * nz + k] <- the interior layer next to `side`. Launch: threads over (t, k).
extern "C" __global__ void pack_face_f64(Layout L, int side, int count, const real* __restrict__ x,
                                         double* __restrict__ buf) {
    const idx_t n = (idx_t)count * NZ;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        const int t = (int)(e / NZ), k = (int)(e % NZ);
        int i, j;
        face_column(L, side, t, 0, i, j);
        buf[e] = x[at_(L, i, j, k)];
    }
}

// The halo across `side` <- buf[t * nz + k].
extern "C" __global__ void unpack_face_f64(Layout L, int side, int count, const double* __restrict__ buf,
                                           real* __restrict__ x) {
    const idx_t n = (idx_t)count * NZ;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        const int t = (int)(e / NZ), k = (int)(e % NZ);
        int i, j;
        face_column(L, side, t, 1, i, j);
        x[at_(L, i, j, k)] = buf[e];
    }
}

// A rank's halo exchange in one launch each way (TransferKernels::pack_halo / unpack_halo, and
// pack_blocks / unpack_blocks over several blocks of one layout: the sphere's tiles on a rank):
// part blockIdx.y is a face (`what` 0-3, the side; `count` columns) or a corner column (`what`
// 4-7, corner what - 4: 0 north-east, 1 north-west, 2 south-east, 3 south-west; `count` 1) of
// the field `x`, buffer `buf` of count * nz values in face order (t * nz + k); unpacking, halo
// column t takes the buffer's column count - 1 - t where `reversed`. Launch: grid
// (ceil(max count nz / 256), parts), threads over (t, k). The parts go by value (HALO_PARTS at
// most).
#define HALO_PARTS 32
struct HaloPart {
    double* buf;
    real* x;
    int what, count, reversed, pad;
};
struct HaloParts {
    int parts, pad;
    HaloPart p[HALO_PARTS];
};

// Column t of part `what`: the interior cell sent (halo = 0) or the halo cell filled (halo = 1).
__device__ __forceinline__ void part_column(const Layout& L, int what, int t, int halo, int& i, int& j) {
    if (what < 4) {
        face_column(L, what, t, halo, i, j);
        return;
    }
    const int c = what - 4;
    const bool east = (c & 1) == 0, north = c < 2;
    i = east ? (halo ? L.nx : L.nx - 1) : (halo ? -1 : 0);
    j = north ? (halo ? L.ny : L.ny - 1) : (halo ? -1 : 0);
}

extern "C" __global__ void pack_halo_f64(Layout L, HaloParts P) {
    const HaloPart h = P.p[blockIdx.y];
    const idx_t n = (idx_t)h.count * NZ;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        const int t = (int)(e / NZ), k = (int)(e % NZ);
        int i, j;
        part_column(L, h.what, t, 0, i, j);
        h.buf[e] = h.x[at_(L, i, j, k)];
    }
}

extern "C" __global__ void unpack_halo_f64(Layout L, HaloParts P) {
    const HaloPart h = P.p[blockIdx.y];
    const idx_t n = (idx_t)h.count * NZ;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        const int t = (int)(e / NZ), k = (int)(e % NZ);
        const int s = h.reversed ? h.count - 1 - t : t;
        int i, j;
        part_column(L, h.what, t, 1, i, j);
        h.x[at_(L, i, j, k)] = (real)h.buf[(idx_t)s * NZ + k];
    }
}

// buf[k] <- x at halo-inclusive column (ih, jh) (a corner of a sphere tile). One thread per k.
extern "C" __global__ void pack_column_f64(Layout L, int ih, int jh, const real* __restrict__ x,
                                           double* __restrict__ buf) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < NZ) buf[k] = x[at_(L, ih - 1, jh - 1, k)];
}

// x at halo-inclusive column (ih, jh) <- buf[k].
extern "C" __global__ void unpack_column_f64(Layout L, int ih, int jh, const double* __restrict__ buf,
                                             real* __restrict__ x) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < NZ) x[at_(L, ih - 1, jh - 1, k)] = buf[k];
}

// The wx x wy columns of x from halo-inclusive (ih, jh) <- those of src from (si, sj) (another
// block of this process: a tile corner of the sphere's nine-point operator, one column; a rank's
// block placed into the whole level gathered onto every rank, or taken back out with its halo),
// with no buffer. Launch: threads over (i, k, j) of the rectangle, x fastest.
extern "C" __global__ void copy_column_f64(Layout S, int si, int sj, const real* __restrict__ src, Layout L,
                                           int ih, int jh, int wx, int wy, real* __restrict__ x) {
    const idx_t n = (idx_t)wx * NZ * wy;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        const int i = (int)(e % wx), k = (int)((e / wx) % NZ), j = (int)(e / ((idx_t)wx * NZ));
        x[at_(L, ih - 1 + i, jh - 1 + j, k)] = src[at_(S, si - 1 + i, sj - 1 + j, k)];
    }
}

// The order of a face copy's threads (copy_halo_f64, copy_halos_f64): (t, k) with k fastest,
// or, where the source or the destination face runs along x (a south or north side), t fastest,
// so that a warp reads or writes 32 columns of one row there (one or two runs) instead of 32
// values a row apart (32 sectors). HALO_ALONG_X (the default; -DHALO_ALONG_X=0 takes k fastest
// everywhere). The same values either way.
#ifndef HALO_ALONG_X
#define HALO_ALONG_X 1
#endif
__device__ __forceinline__ void face_element(idx_t e, int count, bool along_x, int& t, int& k) {
    if (HALO_ALONG_X && along_x) {
        t = (int)(e % count);
        k = (int)(e / count);
    } else {
        t = (int)(e / NZ);
        k = (int)(e % NZ);
    }
}

// The halo of x across `side` <- the interior layer of src next to `src_side` (another block of
// this process, the same face length), the other way along the face if `reversed`: the
// exchange between tiles of the sphere, with no buffer. Launch: threads over (t, k).
extern "C" __global__ void copy_halo_f64(Layout S, int src_side, const real* __restrict__ src, Layout L,
                                         int side, int count, int reversed, real* __restrict__ x) {
    const idx_t n = (idx_t)count * NZ;
    const bool along_x = side >= 2 || src_side >= 2;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        int t, k, si, sj, i, j;
        face_element(e, count, along_x, t, k);
        face_column(S, src_side, reversed ? count - 1 - t : t, 0, si, sj);
        face_column(L, side, t, 1, i, j);
        x[at_(L, i, j, k)] = src[at_(S, si, sj, k)];
    }
}

// Several halos of equal-sized blocks in one launch (the tiles of the sphere): link blockIdx.y
// fills the halo of `dst` across `side` from the interior layer of `src` next to `src_side`, the
// other way along the face if `reversed`. Launch: grid (ceil(count nz / 256), links), threads
// over (t, k). The links go by value in the kernel's parameters (HALO_LINKS at most per launch).
#define HALO_LINKS 32
struct HaloLink {
    const real* src;
    real* dst;
    int src_side, side, reversed, pad;
};
struct HaloBatch {
    int links, pad;
    HaloLink l[HALO_LINKS];
};
extern "C" __global__ void copy_halos_f64(Layout L, int count, HaloBatch b) {
    const HaloLink h = b.l[blockIdx.y];
    const idx_t n = (idx_t)count * NZ;
    const bool along_x = h.side >= 2 || h.src_side >= 2;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        int t, k, si, sj, i, j;
        face_element(e, count, along_x, t, k);
        face_column(L, h.src_side, h.reversed ? count - 1 - t : t, 0, si, sj);
        face_column(L, h.side, t, 1, i, j);
        h.dst[at_(L, i, j, k)] = h.src[at_(L, si, sj, k)];
    }
}

// Reverses the order of the `count` columns (nz values each) of a face buffer, in place: thread
// (t, k) for t < count / 2 swaps column t with column count - 1 - t.
extern "C" __global__ void reverse_face_f64(int count, double* __restrict__ buf) {
    const idx_t n = (idx_t)(count / 2) * NZ;
    for (idx_t e = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (idx_t)gridDim.x * blockDim.x) {
        const int t = (int)(e / NZ), k = (int)(e % NZ);
        const idx_t a = (idx_t)t * NZ + k, b = (idx_t)(count - 1 - t) * NZ + k;
        const double v = buf[a];
        buf[a] = buf[b];
        buf[b] = v;
    }
}

// Arrays of the caller in device memory (src/backend/borrowed.rs), any strides (in values) of
// i, j, k: element (i, j, k) at h[i si + j sj + k sk]. Threads over i are consecutive, so the
// x-fastest order (si = 1) is coalesced on both sides; the k-fastest order goes through the
// tiled to_device/to_host instead. Launch: block (128), grid (ceil(nx/128), nz, ny).

// x (device layout, interior) <- h.
extern "C" __global__ void gather_f64(Layout L, const double* __restrict__ h, i64 si, i64 sj, i64 sk,
                                      real* __restrict__ x) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y, j = blockIdx.z;
    if (i < L.nx) x[at_(L, i, j, k)] = h[i * si + j * sj + k * sk];
}

// h <- x (device layout, interior).
extern "C" __global__ void scatter_f64(Layout L, const real* __restrict__ x, i64 si, i64 sj, i64 sk,
                                       double* __restrict__ h) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y, j = blockIdx.z;
    if (i < L.nx) h[i * si + j * sj + k * sk] = x[at_(L, i, j, k)];
}
