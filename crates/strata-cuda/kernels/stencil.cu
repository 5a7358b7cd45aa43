// Stencil kernels without a line solve: one thread per column walks it upwards.

// Walks column (i, j) from element o upwards, keeping the values of x below, at and above k in
// registers (each vertical neighbour loaded once), and calls step(o, k, below, mid, above, nb)
// at every level with the cell's horizontal neighbourhood nb in global memory (L1/L2 hits: the
// rows j +- 1 are other threads' own rows). The kernels are latency-bound: their warps wait on
// global loads (Nsight Compute: long scoreboard). Staging the neighbourhood in a shared tile per
// level, a register bound, L2 prefetches ahead, streaming cache hints and column-relative
// offsets were each measured, and none made them faster; loads ahead of stores (the CG SpMV
// below) and 32-bit offsets (-DIDX32, common.cuh) did (docs/PERFORMANCE.md).
template <class Step>
__device__ __forceinline__ void march(const Layout& L, idx_t o, const real* __restrict__ x, Step step) {
    const idx_t oc = o;
    real below = real(0.0), mid = x[o];
#pragma unroll STENCIL_UNROLL
    for (int k = 0; k < NZ; ++k, o += L.sx) {
        const real above = k + 1 < NZ ? x[o + L.sx] : real(0.0);
        step(o, k, below, mid, above, col_nb(x, o, L, oc));
        below = mid;
        mid = above;
    }
}

// march over the levels [k0, k1) of the column only (a segment, SEGMENT in common.cuh), from
// element o of level 0; the whole column goes to march, unchanged.
template <class Step>
__device__ __forceinline__ void march_segment(const Layout& L, idx_t o, const real* __restrict__ x,
                                              int k0, int k1, Step step) {
    if (k0 == 0 && k1 == NZ) {
        march(L, o, x, step);
        return;
    }
    const idx_t oc = o;
    o += (idx_t)k0 * L.sx;
    real below = k0 > 0 ? x[o - L.sx] : real(0.0), mid = x[o];
    for (int k = k0; k < k1; ++k, o += L.sx) {
        const real above = k + 1 < NZ ? x[o + L.sx] : real(0.0);
        step(o, k, below, mid, above, col_nb(x, o, L, oc));
        below = mid;
        mid = above;
    }
}

// Each body below is a template over the column operator (ColOp, CellOp, or either with the
// sphere's cross terms, common.cuh), with one kernel per operator kind: `name_f64` for the model
// problem's coefficients, `name_cells_f64` for per-cell coefficients.

// y <- A x; traffic 2 (+ the coefficients: 4 values per cell, 7 when not symmetric).
template <class Op>
__device__ __forceinline__ void apply_body(const Layout& L, const Op& op, idx_t o,
                                           const real* __restrict__ x, real* __restrict__ y) {
    march(L, o, x, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        y[o] = op.apply_n(nb, o, L, k, below, mid, above);
    });
}

extern "C" __global__ void apply_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                     CROSS_PARAMS, const real* __restrict__ x, real* __restrict__ y) {
    THREAD_COLUMN
    if (!active) return;
    WITH_CROSS(apply_body(L, op, at_(L, i, j, 0), x, y));
}

extern "C" __global__ void apply_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                           const real* __restrict__ x, real* __restrict__ y) {
    THREAD_COLUMN
    if (!active) return;
    const idx_t o = at_(L, i, j, 0);
    WITH_CELL_CROSS(o, apply_body(L, op, o, x, y));
}

// r <- f - A u, returns the column's |r|^2; traffic 3 (the paper's Residual + norm).
// Over the levels [k0, k1) (SEGMENT).
// r may be stored in another type than the build's (Out: float, residual_to_f32): the norm is
// of the values before they are rounded into it. Store false: the norm only, r not written
// (residual_norm; traffic 2).
template <bool Store, class Op, class Out>
__device__ __forceinline__ double residual_body(const Layout& L, const Op& op, idx_t o,
                                                const real* __restrict__ f, const real* __restrict__ u,
                                                Out* __restrict__ r, int k0, int k1) {
    double s = 0.0;
    march_segment(L, o, u, k0, k1, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        const real res = f[o] - op.apply_n(nb, o, L, k, below, mid, above);
        if (Store) r[o] = (Out)res;
        s += (double)res * res;
    });
    return s;
}

// The residual's kernels, r stored as Out: the build's own (residual_f64), or float whatever the
// build (residual_to_f32_f64: the right-hand side of a mixed-precision cycle, used from the fp64
// build; traffic 2 values of the build + one float), or not at all (residual_norm_f64: the
// stopping test of mg, whose next cycle computes its own residual; r is unused).
#define RESIDUAL_KERNELS(name, name_cells, Out, Store)                                               \
    extern "C" __global__ void name(Layout L, const real* __restrict__ cols, const real* __restrict__ V, \
                                    CROSS_PARAMS, const real* __restrict__ f,                        \
                                    const real* __restrict__ u, Out* __restrict__ r,                 \
                                    double* __restrict__ partials) {                                 \
        THREAD_COLUMN                                                                                \
        SEGMENT                                                                                      \
        double s = 0.0;                                                                              \
        if (active) WITH_CROSS(s = residual_body<Store>(L, op, at_(L, i, j, 0), f, u, r, k0, k1));          \
        block_sum(s, partials, 0, 1);                                                                \
    }                                                                                                \
    extern "C" __global__ void name_cells(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,                  \
                                          const real* __restrict__ f, const real* __restrict__ u,    \
                                          Out* __restrict__ r, double* __restrict__ partials) {      \
        THREAD_COLUMN                                                                                \
        SEGMENT                                                                                      \
        double s = 0.0;                                                                              \
        if (active) {                                                                                \
            const idx_t o = at_(L, i, j, 0);                                                         \
            WITH_CELL_CROSS(o, s = residual_body<Store>(L, op, o, f, u, r, k0, k1));                        \
        }                                                                                            \
        block_sum(s, partials, 0, 1);                                                                \
    }

RESIDUAL_KERNELS(residual_f64, residual_cells_f64, real, true)
RESIDUAL_KERNELS(residual_to_f32_f64, residual_to_f32_cells_f64, float, true)
RESIDUAL_KERNELS(residual_norm_f64, residual_norm_cells_f64, real, false)

// The V-cycle's residual restricted without being stored (LineKernels::residual_restrict_smooth):
// fc <- scale * (sum of the 2 x 2 fine children of f - A u), summed in the order of
// restrict_children (lines.cu), so that the values are those of residual_f64 then the
// restriction. One thread per fine column, as the residual; four consecutive threads in x hold
// the children of one coarse column (bit 0 of the thread's x index: the row 2J or 2J + 1; the
// bits above: the fine column i), so a warp reads 16 consecutive values of each of two rows,
// adds each x pair and then the two rows by shuffles, and its first lane of four stores.
// Launched over 2 nx threads in x and the coarse rows in y (blockDim.x is a multiple of 4).
// Threads beyond the level work on column (0, 0) and store nothing (every lane takes part in
// the shuffles). Traffic per fine cell 2 (read f, u) + 1/4 (write fc), where residual_f64 and
// the restriction move 3 + 1.
// The levels go in groups of RR_GROUP: a group's residuals are computed (its loads all issued)
// before its shuffles and stores, since a shuffle between them would keep the loads of the next
// level from starting early (RR_GROUP=0: the plain march, a shuffle after every level).
#ifndef RR_GROUP
#define RR_GROUP STENCIL_UNROLL
#endif
__device__ __forceinline__ void restrict_store(real r, bool store, real* __restrict__ fc, idx_t at, real scale) {
    const real row = r + __shfl_xor_sync(0xffffffffu, r, 2);
    const real sum = row + __shfl_xor_sync(0xffffffffu, row, 1);
    if (store) fc[at] = scale * sum;
}

template <class Op>
__device__ __forceinline__ void residual_restrict_body(const Layout& L, const Layout& Lc, const Op& op, idx_t o,
                                                       idx_t oc, bool store, const real* __restrict__ f,
                                                       const real* __restrict__ u, real* __restrict__ fc,
                                                       real scale) {
#if RR_GROUP > 0
    real below = real(0.0), mid = u[o];
    for (int k0 = 0; k0 < NZ; k0 += RR_GROUP) {
        real r[RR_GROUP];
        const VGroup<Op, RR_GROUP> vg(op, k0);
#pragma unroll
        for (int t = 0; t < RR_GROUP; ++t) {
            const int k = k0 + t;
            if (k < NZ) {
                const idx_t ok = o + (idx_t)k * L.sx;
                const real above = k + 1 < NZ ? u[ok + L.sx] : real(0.0);
                r[t] = f[ok] - vg.apply(op, t, col_nb(u, ok, L, o), ok, L, k, below, mid, above);
                below = mid;
                mid = above;
            }
        }
#pragma unroll
        for (int t = 0; t < RR_GROUP; ++t) {
            if (k0 + t < NZ) restrict_store(r[t], store, fc, oc + (idx_t)(k0 + t) * Lc.sx, scale);
        }
    }
#else
    march(L, o, u, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        restrict_store(f[o] - op.apply_n(nb, o, L, k, below, mid, above), store, fc, oc + (idx_t)k * Lc.sx, scale);
    });
#endif
}

// The thread's fine column (i, j) and whether it stores (see residual_restrict_body).
#define RESTRICT_CHILD                                                  \
    const int t = blockIdx.x * blockDim.x + threadIdx.x;                \
    const int tj = blockIdx.y * blockDim.y + threadIdx.y;               \
    const bool active = (t >> 1) < L.nx && tj < Lc.ny;                  \
    const int i = active ? t >> 1 : 0, j = active ? 2 * tj + (t & 1) : 0; \
    const bool store = active && (t & 3) == 0;

extern "C" __global__ void residual_restrict_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                                 const real* __restrict__ f, const real* __restrict__ u, Layout Lc,
                                                 real* __restrict__ fc, double scale) {
    RESTRICT_CHILD
    residual_restrict_body(L, Lc, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), at_(Lc, i / 2, j / 2, 0),
                           store, f, u, fc, (real)scale);
}

// With orography's slant couplings where the level has them (has_cross = 2; the sphere's
// diagonal ones take the unfused path).
extern "C" __global__ void residual_restrict_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                       const real* __restrict__ f, const real* __restrict__ u,
                                                       Layout Lc, real* __restrict__ fc, double scale) {
    RESTRICT_CHILD
    const idx_t o = at_(L, i, j, 0);
    WITH_CELL_SLANT(o, residual_restrict_body(L, Lc, op, o, at_(Lc, i / 2, j / 2, 0), store, f, u, fc,
                                              (real)scale));
}

// Fused CG SpMV: u <- u + alpha p; p <- z + beta p; q <- A z + beta q; returns the column's p.q.
// Traffic 7 (read z, u, p, q; write u, p, q); the paper's Mem^(C) counts 6.
// u, p and q are read and written in place, and the compiler cannot move a load of level k + 1
// above the store of level k (it does not know that sx != 0), so a plain march has one level's
// loads in flight at a time: the levels go in groups of CG_GROUP, each group's u, p and q loaded
// before any of its stores (CG_GROUP=0: the plain march; docs/PERFORMANCE.md).
#ifndef CG_GROUP
#define CG_GROUP STENCIL_UNROLL
#endif
// Over the levels [ks, ke) of the column from element o of level 0 (SEGMENT).
template <class Op>
__device__ __forceinline__ double cg_spmv_body(const Layout& L, const Op& op, idx_t o,
                                               const real* __restrict__ z, real* __restrict__ u,
                                               real* __restrict__ p, real* __restrict__ q, real alpha,
                                               real beta, int ks, int ke) {
    double s = 0.0;
#if CG_GROUP > 0
    o += (idx_t)ks * L.sx;
    real below = ks > 0 ? z[o - L.sx] : real(0.0), mid = z[o];
    for (int k0 = ks; k0 < ke; k0 += CG_GROUP, o += (idx_t)CG_GROUP * L.sx) {
        real pv[CG_GROUP], qv[CG_GROUP], uv[CG_GROUP];
#pragma unroll
        for (int t = 0; t < CG_GROUP; ++t) {
            if (k0 + t < ke) {
                const idx_t ot = o + (idx_t)t * L.sx;
                pv[t] = p[ot];
                qv[t] = q[ot];
                uv[t] = u[ot];
            }
        }
#pragma unroll
        for (int t = 0; t < CG_GROUP; ++t) {
            const int k = k0 + t;
            if (k < ke) {
                const idx_t ot = o + (idx_t)t * L.sx;
                const real above = k + 1 < NZ ? z[ot + L.sx] : real(0.0);
                u[ot] = uv[t] + alpha * pv[t];
                const real pk = mid + beta * pv[t];
                const real qk = op.apply_n(col_nb(z, ot, L, o), ot, L, k, below, mid, above) + beta * qv[t];
                p[ot] = pk;
                q[ot] = qk;
                s += (double)pk * qk;
                below = mid;
                mid = above;
            }
        }
    }
#else
    march_segment(L, o, z, ks, ke, [&](idx_t o, int k, real below, real mid, real above, const Nb& nb) {
        const real pold = p[o];
        u[o] += alpha * pold;
        const real pk = mid + beta * pold;
        const real qk = op.apply_n(nb, o, L, k, below, mid, above) + beta * q[o];
        p[o] = pk;
        q[o] = qk;
        s += (double)pk * qk;
    });
#endif
    return s;
}

extern "C" __global__ void cg_spmv_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                       CROSS_PARAMS, const real* __restrict__ z, real* __restrict__ u,
                                       real* __restrict__ p, real* __restrict__ q, double alpha0,
                                       double beta0, const double* __restrict__ sc, int ia, int ib,
                                       double* __restrict__ partials) {
    THREAD_COLUMN
    SEGMENT
    const double alpha = coef(alpha0, sc, ia), beta = coef(beta0, sc, ib);
    double s = 0.0;
    // Whole columns with the bounds as constants: the code of the unsegmented kernel.
    if (active && k0 == 0 && k1 == NZ)
        WITH_CROSS(s = cg_spmv_body(L, op, at_(L, i, j, 0), z, u, p, q, alpha, beta, 0, NZ));
    else if (active)
        WITH_CROSS(s = cg_spmv_body(L, op, at_(L, i, j, 0), z, u, p, q, alpha, beta, k0, k1));
    block_sum(s, partials, 0, 1);
}

extern "C" __global__ void cg_spmv_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS, const real* __restrict__ z,
                                             real* __restrict__ u, real* __restrict__ p,
                                             real* __restrict__ q, double alpha0, double beta0,
                                             const double* __restrict__ sc, int ia, int ib,
                                             double* __restrict__ partials) {
    THREAD_COLUMN
    SEGMENT
    const double alpha = coef(alpha0, sc, ia), beta = coef(beta0, sc, ib);
    double s = 0.0;
    if (active) {
        const idx_t o = at_(L, i, j, 0);
        if (k0 == 0 && k1 == NZ)
            WITH_CELL_CROSS(o, s = cg_spmv_body(L, op, o, z, u, p, q, alpha, beta, 0, NZ));
        else
            WITH_CELL_CROSS(o, s = cg_spmv_body(L, op, o, z, u, p, q, alpha, beta, k0, k1));
    }
    block_sum(s, partials, 0, 1);
}

// u_f <- u_f + P u_c: weights (1/2, 1/4, 1/4) from the parent and its x and y neighbours on the
// child's side; a neighbour outside the physical boundary is the ghost -u_parent. The same for
// every operator (the prolongation does not depend on the coefficients).
// phys: bit 0 west, 1 east, 2 south, 3 north is a wall of the coarse block; bits 4-7 the same
// sides where the wall is zero-flux (its ghost is +u_parent, docs/MODEL.md section 20).
// Traffic 2.25 per fine cell. Over the levels [k0, k1) (SEGMENT).
// Where fine cell (i, j)'s prolongation reads (the parent, its x and y neighbours on the child's
// side, a ghost -u_P outside the physical boundary), from level k0 on.
struct Prolong {
    idx_t o, op, ox, oy;
    real wx, wy;
};
__device__ __forceinline__ Prolong prolong_at(const Layout& Lc, const Layout& L, int phys, int i, int j, int k0) {
    const int ip = i >> 1, jp = j >> 1;
    const int ix = (i & 1) ? ip + 1 : ip - 1;
    const int jy = (j & 1) ? jp + 1 : jp - 1;
    const int sx = ix < 0 ? 0 : ix >= Lc.nx ? 1 : -1, sy = jy < 0 ? 2 : jy >= Lc.ny ? 3 : -1;
    const bool gx = sx >= 0 && ((phys >> sx) & 1), gy = sy >= 0 && ((phys >> sy) & 1);
    const bool mx = gx && ((phys >> (sx + 4)) & 1), my = gy && ((phys >> (sy + 4)) & 1);
    const idx_t op = at_(Lc, ip, jp, k0);
    return Prolong{at_(L, i, j, k0), op, gx ? op : at_(Lc, ix, jp, k0), gy ? op : at_(Lc, ip, jy, k0),
                   gx && !mx ? -real(0.25) : real(0.25), gy && !my ? -real(0.25) : real(0.25)};
}

// The prolongation of one fine cell: the one expression both kernels below use, so that a halo
// cell prolongated here is bit for bit the neighbour's interior cell.
__device__ __forceinline__ real prolong_value(const real* __restrict__ uc, const Prolong& p, idx_t dkc) {
    return real(0.5) * uc[p.op + dkc] + p.wx * uc[p.ox + dkc] + p.wy * uc[p.oy + dkc];
}
__device__ __forceinline__ void prolong_add(real* __restrict__ uf, const real* __restrict__ uc, const Prolong& p,
                                            idx_t dk, idx_t dkc) {
    uf[p.o + dk] += prolong_value(uc, p, dkc);
}

// The whole column's march in groups of PROLONG_GROUP levels, each group's fine and coarse
// values loaded before any of its stores (the compiler cannot move a load of level k + 1 above
// the store of level k in place, not knowing that sx != 0, as CG_GROUP found for the CG SpMV);
// the same sums. Groups of 4 took the level-0 prolongation of 2816^2 x 128 from 2.84 to 2.70 ms
// on one H200 (8: 2.68-2.69 ms, more registers; docs/results/performance-log.md, 2026-11-29);
// PROLONG_GROUP=0 is the plain march.
#ifndef PROLONG_GROUP
#define PROLONG_GROUP 4
#endif

extern "C" __global__ void prolongate_f64(Layout Lc, Layout L, int phys, const real* __restrict__ uc,
                                          real* __restrict__ uf) {
    THREAD_COLUMN
    SEGMENT
    if (!active) return;
    const Prolong p = prolong_at(Lc, L, phys, i, j, k0);
    if (gridDim.z == 1) {
#if PROLONG_GROUP > 0
        for (int g0 = 0; g0 < NZ; g0 += PROLONG_GROUP) {
            real old[PROLONG_GROUP], add[PROLONG_GROUP];
#pragma unroll
            for (int g = 0; g < PROLONG_GROUP; ++g) {
                if (g0 + g < NZ) {
                    old[g] = uf[p.o + (idx_t)(g0 + g) * L.sx];
                    add[g] = prolong_value(uc, p, (idx_t)(g0 + g) * Lc.sx);
                }
            }
#pragma unroll
            for (int g = 0; g < PROLONG_GROUP; ++g) {
                if (g0 + g < NZ) uf[p.o + (idx_t)(g0 + g) * L.sx] = old[g] + add[g];
            }
        }
#else
        // The whole column, with its trip count known to the compiler.
#pragma unroll STENCIL_UNROLL
        for (int k = 0; k < NZ; ++k) prolong_add(uf, uc, p, (idx_t)k * L.sx, (idx_t)k * Lc.sx);
#endif
        return;
    }
    for (int k = k0; k < k1; ++k) prolong_add(uf, uc, p, (idx_t)(k - k0) * L.sx, (idx_t)(k - k0) * Lc.sx);
}

// prolongate_f64 on the halo cells of the sides set in `sides` (bit s for Side::index s: west,
// east, south, north; faces, not corners): what the block across each side computes for them
// (strata::backend::StencilKernels::prolongate_faces). One thread per halo cell: x of the grid
// runs over the set faces' columns one after the other in that order, y over the levels k (a
// face has few columns; one thread per column looping over k was latency-bound, ~0.1 ms).
extern "C" __global__ void prolongate_faces_f64(Layout Lc, Layout L, int phys, int sides,
                                                const real* __restrict__ uc, real* __restrict__ uf) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int k = blockIdx.y;
    if (k >= NZ) return;
    for (int s = 0; s < 4; ++s) {
        if (!((sides >> s) & 1)) continue;
        const int len = s < 2 ? L.ny : L.nx;
        if (t < len) {
            const int i = s == 0 ? -1 : s == 1 ? L.nx : t;
            const int j = s < 2 ? t : s == 2 ? -1 : L.ny;
            const Prolong p = prolong_at(Lc, L, phys, i, j, 0);
            prolong_add(uf, uc, p, (idx_t)k * L.sx, (idx_t)k * Lc.sx);
            return;
        }
        t -= len;
    }
}
