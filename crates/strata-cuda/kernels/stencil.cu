// Stencil kernels without a line solve: one thread per column walks it upwards.

// How the stencil kernels read a cell's horizontal neighbours: STENCIL_TILE 0, from global
// memory (L1/L2 hits: the rows j +- 1 are other threads' own rows); 1, operators with diagonal
// couplings (the sphere's cross terms) from a tile of the block's columns and their halo, staged
// in shared memory at each level k; 2, every operator from the tile (docs/PERFORMANCE.md).
#ifndef STENCIL_TILE
#define STENCIL_TILE 0
#endif
// The tile of a block of bx x by = 128 columns and its halo: (bx + 2)(by + 2) <= 130 * 3.
#define TILE_MAX 392

// The kernel's two tiles: one array for every march of a kernel (a static array in the template
// itself would be one per instantiation, the cross-term march's beside the plain one's).
__device__ __forceinline__ real (*stencil_tiles())[TILE_MAX] {
    __shared__ real tiles[2][TILE_MAX];
    return tiles;
}

// Walks column (i, j) from element o upwards, keeping the values of x below, at and above k in
// registers (each vertical neighbour loaded once), and calls step(o, k, below, mid, above, nb)
// at every level with the cell's horizontal neighbourhood nb in global memory.
template <class Step>
__device__ __forceinline__ void march_global(const Layout& L, idx_t o, const real* __restrict__ x, Step step) {
    real below = real(0.0), mid = x[o];
#pragma unroll STENCIL_UNROLL
    for (int k = 0; k < NZ; ++k, o += L.sx) {
        const real above = k + 1 < NZ ? x[o + L.sx] : real(0.0);
        step(o, k, below, mid, above, global_nb(x, o, L));
        below = mid;
        mid = above;
    }
}

// march_global with the neighbourhood from a shared tile: at each level the block stages its
// columns' values (which the threads hold in registers) and the halo around them (loaded by the
// threads at the block's edges; the corners only for diagonal couplings), then each thread reads
// its neighbours from the tile. Two tiles alternate, so one barrier per level suffices (a thread
// writes a tile again only after every thread has passed the barrier that follows its last
// read of it). Every thread of the block must call it; inactive threads only stage and wait.
template <bool Corners, class Step>
__device__ __forceinline__ void march_tile(const Layout& L, idx_t o, const real* __restrict__ x, bool active,
                                           Step step) {
    real(*tile)[TILE_MAX] = stencil_tiles();
    const int w = blockDim.x + 2;
    const int c = (threadIdx.y + 1) * w + threadIdx.x + 1;
    // The last active column and row of the block: their threads load the east and north halo.
    const int lastx = min((int)blockDim.x, L.nx - (int)(blockIdx.x * blockDim.x)) - 1;
    const int lasty = min((int)blockDim.y, L.ny - (int)(blockIdx.y * blockDim.y)) - 1;
    const bool west = threadIdx.x == 0, east = (int)threadIdx.x == lastx;
    const bool south = threadIdx.y == 0, north = (int)threadIdx.y == lasty;
    real below = real(0.0), mid = active ? x[o] : real(0.0);
#pragma unroll STENCIL_UNROLL
    for (int k = 0; k < NZ; ++k, o += L.sx) {
        const real above = active && k + 1 < NZ ? x[o + L.sx] : real(0.0);
        real* t = tile[k & 1];
        if (active) {
            t[c] = mid;
            if (west) t[c - 1] = x[o - 1];
            if (east) t[c + 1] = x[o + 1];
            if (south) {
                t[c - w] = x[o - L.plane];
                if (Corners && west) t[c - w - 1] = x[o - L.plane - 1];
                if (Corners && east) t[c - w + 1] = x[o - L.plane + 1];
            }
            if (north) {
                t[c + w] = x[o + L.plane];
                if (Corners && west) t[c + w - 1] = x[o + L.plane - 1];
                if (Corners && east) t[c + w + 1] = x[o + L.plane + 1];
            }
        }
        __syncthreads();
        if (active) step(o, k, below, mid, above, Nb{t + c, (idx_t)w});
        below = mid;
        mid = above;
    }
}

// The march of operator Op (STENCIL_TILE): every thread of the block calls it.
template <class Op, class Step>
__device__ __forceinline__ void march(const Layout& L, idx_t o, const real* __restrict__ x, bool active,
                                      Step step) {
    if (STENCIL_TILE == 2 || (STENCIL_TILE == 1 && Op::diagonals)) {
        march_tile<Op::diagonals>(L, o, x, active, step);
    } else if (active) {
        march_global(L, o, x, step);
    }
}

// Each body below is a template over the column operator (ColOp, CellOp, or either with the
// sphere's cross terms, common.cuh), called by every thread of the block (`active` where its
// column is inside the level), with one kernel per operator kind: `name_f64` for the model
// problem's coefficients, `name_cells_f64` for per-cell coefficients.

// y <- A x; traffic 2 (+ the coefficients: 4 values per cell, 7 when not symmetric).
template <class Op>
__device__ __forceinline__ void apply_body(const Layout& L, const Op& op, idx_t o, bool active,
                                           const real* __restrict__ x, real* __restrict__ y) {
    march<Op>(L, o, x, active, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        y[o] = op.apply_n(nb, o, L, k, below, mid, above);
    });
}

extern "C" __global__ void apply_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                     CROSS_PARAMS, const real* __restrict__ x, real* __restrict__ y) {
    THREAD_COLUMN_CLAMPED
    WITH_CROSS(apply_body(L, op, at_(L, ci, cj, 0), active, x, y));
}

extern "C" __global__ void apply_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                           const real* __restrict__ x, real* __restrict__ y) {
    THREAD_COLUMN_CLAMPED
    const idx_t o = at_(L, ci, cj, 0);
    WITH_CELL_CROSS(o, apply_body(L, op, o, active, x, y));
}

// r <- f - A u, returns the column's |r|^2; traffic 3 (the paper's Residual + norm).
template <class Op>
__device__ __forceinline__ double residual_body(const Layout& L, const Op& op, idx_t o, bool active,
                                                const real* __restrict__ f, const real* __restrict__ u,
                                                real* __restrict__ r) {
    double s = 0.0;
    march<Op>(L, o, u, active, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        const real res = f[o] - op.apply_n(nb, o, L, k, below, mid, above);
        r[o] = res;
        s += (double)res * res;
    });
    return s;
}

extern "C" __global__ void residual_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                        CROSS_PARAMS, const real* __restrict__ f,
                                        const real* __restrict__ u, real* __restrict__ r,
                                        double* __restrict__ partials) {
    THREAD_COLUMN_CLAMPED
    double s = 0.0;
    WITH_CROSS(s = residual_body(L, op, at_(L, ci, cj, 0), active, f, u, r));
    block_sum(s, partials, 0, 1);
}

extern "C" __global__ void residual_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS, const real* __restrict__ f,
                                              const real* __restrict__ u, real* __restrict__ r,
                                              double* __restrict__ partials) {
    THREAD_COLUMN_CLAMPED
    double s = 0.0;
    const idx_t o = at_(L, ci, cj, 0);
    WITH_CELL_CROSS(o, s = residual_body(L, op, o, active, f, u, r));
    block_sum(s, partials, 0, 1);
}

// For A = A7 + C (the sphere's cross terms): g <- f - C u, returns the column's |f - A u|^2;
// traffic 3, as the residual.
template <class Op>
__device__ __forceinline__ double split_residual_body(const Layout& L, const Op& op, idx_t o, bool active,
                                                      const real* __restrict__ f, const real* __restrict__ u,
                                                      real* __restrict__ g) {
    double s = 0.0;
    march<Op>(L, o, u, active, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        const real c = op.cross_n(nb, o, k, mid);
        const real fk = f[o];
        const real res = fk - (op.seven_n(nb, o, L, k, below, mid, above) + c);
        g[o] = fk - c;
        s += (double)res * res;
    });
    return s;
}

extern "C" __global__ void split_residual_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                              CROSS_PARAMS, const real* __restrict__ f,
                                              const real* __restrict__ u, real* __restrict__ g,
                                              double* __restrict__ partials) {
    THREAD_COLUMN_CLAMPED
    double s = 0.0;
    WITH_CROSS(s = split_residual_body(L, op, at_(L, ci, cj, 0), active, f, u, g));
    block_sum(s, partials, 0, 1);
}

extern "C" __global__ void split_residual_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                    const real* __restrict__ f, const real* __restrict__ u,
                                                    real* __restrict__ g, double* __restrict__ partials) {
    THREAD_COLUMN_CLAMPED
    double s = 0.0;
    const idx_t o = at_(L, ci, cj, 0);
    WITH_CELL_CROSS(o, s = split_residual_body(L, op, o, active, f, u, g));
    block_sum(s, partials, 0, 1);
}

// Fused CG SpMV: u <- u + alpha p; p <- z + beta p; q <- A z + beta q; returns the column's p.q.
// Traffic 7 (read z, u, p, q; write u, p, q); the paper's Mem^(C) counts 6.
template <class Op>
__device__ __forceinline__ double cg_spmv_body(const Layout& L, const Op& op, idx_t o, bool active,
                                               const real* __restrict__ z, real* __restrict__ u,
                                               real* __restrict__ p, real* __restrict__ q, real alpha,
                                               real beta) {
    double s = 0.0;
    march<Op>(L, o, z, active, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        const real pold = p[o];
        u[o] += alpha * pold;
        const real pk = mid + beta * pold;
        const real qk = op.apply_n(nb, o, L, k, below, mid, above) + beta * q[o];
        p[o] = pk;
        q[o] = qk;
        s += (double)pk * qk;
    });
    return s;
}

extern "C" __global__ void cg_spmv_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                       CROSS_PARAMS, const real* __restrict__ z, real* __restrict__ u,
                                       real* __restrict__ p, real* __restrict__ q, double alpha,
                                       double beta, double* __restrict__ partials) {
    THREAD_COLUMN_CLAMPED
    double s = 0.0;
    WITH_CROSS(s = cg_spmv_body(L, op, at_(L, ci, cj, 0), active, z, u, p, q, alpha, beta));
    block_sum(s, partials, 0, 1);
}

extern "C" __global__ void cg_spmv_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS, const real* __restrict__ z,
                                             real* __restrict__ u, real* __restrict__ p,
                                             real* __restrict__ q, double alpha, double beta,
                                             double* __restrict__ partials) {
    THREAD_COLUMN_CLAMPED
    double s = 0.0;
    const idx_t o = at_(L, ci, cj, 0);
    WITH_CELL_CROSS(o, s = cg_spmv_body(L, op, o, active, z, u, p, q, alpha, beta));
    block_sum(s, partials, 0, 1);
}

// u_f <- u_f + P u_c: weights (1/2, 1/4, 1/4) from the parent and its x and y neighbours on the
// child's side; a neighbour outside the physical boundary is the ghost -u_parent. The same for
// every operator (the prolongation does not depend on the coefficients).
// phys: bit 0 west, 1 east, 2 south, 3 north is a physical boundary of the coarse block.
// Traffic 2.25 per fine cell.
extern "C" __global__ void prolongate_f64(Layout Lc, Layout L, int phys, const real* __restrict__ uc,
                                          real* __restrict__ uf) {
    THREAD_COLUMN
    if (!active) return;
    const int ip = i >> 1, jp = j >> 1;
    const int ix = (i & 1) ? ip + 1 : ip - 1;
    const int jy = (j & 1) ? jp + 1 : jp - 1;
    const bool gx = (ix < 0 && (phys & 1)) || (ix >= Lc.nx && (phys & 2));
    const bool gy = (jy < 0 && (phys & 4)) || (jy >= Lc.ny && (phys & 8));
    idx_t op = at_(Lc, ip, jp, 0);
    idx_t ox = gx ? op : at_(Lc, ix, jp, 0);
    idx_t oy = gy ? op : at_(Lc, ip, jy, 0);
    const real wx = gx ? -real(0.25) : real(0.25), wy = gy ? -real(0.25) : real(0.25);
    idx_t o = at_(L, i, j, 0);
#pragma unroll STENCIL_UNROLL
    for (int k = 0; k < NZ; ++k, o += L.sx, op += Lc.sx, ox += Lc.sx, oy += Lc.sx)
        uf[o] += real(0.5) * uc[op] + wx * uc[ox] + wy * uc[oy];
}
