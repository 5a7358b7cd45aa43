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
// RES_GROUP = G > 0 (an option, not the default: docs/results/performance-log.md, 2026-12-07): a
// whole column's levels go in groups of G, each group's residuals computed (its loads issued)
// before its stores, as RR_GROUP does for the fused residual-restriction. The same values and
// the same norm (summed in the same order).
#ifndef RES_GROUP
#define RES_GROUP 0
#endif
// The residuals f - A u of the column at o, level by level, in groups of G: a group's residuals
// are computed (its loads all issued) before emit(k, r) takes each (RES_GROUP here, RR_GROUP in
// the fused residual-restriction below).
template <int G, class Op, class Emit>
__device__ __forceinline__ void residual_groups(const Layout& L, const Op& op, idx_t o,
                                                const real* __restrict__ f, const real* __restrict__ u,
                                                Emit emit) {
    real below = real(0.0), mid = u[o];
    for (int k0 = 0; k0 < NZ; k0 += G) {
        real r[G];
#pragma unroll
        for (int t = 0; t < G; ++t) {
            const int k = k0 + t;
            if (k < NZ) {
                const idx_t ok = o + (idx_t)k * L.sx;
                const real above = k + 1 < NZ ? u[ok + L.sx] : real(0.0);
                r[t] = f[ok] - op.apply_n(col_nb(u, ok, L, o), ok, L, k, below, mid, above);
                below = mid;
                mid = above;
            }
        }
#pragma unroll
        for (int t = 0; t < G; ++t) {
            if (k0 + t < NZ) emit(k0 + t, r[t]);
        }
    }
}

template <bool Store, class Op, class Out>
__device__ __forceinline__ double residual_body(const Layout& L, const Op& op, idx_t o,
                                                const real* __restrict__ f, const real* __restrict__ u,
                                                Out* __restrict__ r, int k0, int k1) {
    double s = 0.0;
#if RES_GROUP > 0
    if (k0 == 0 && k1 == NZ) {
        residual_groups<RES_GROUP>(L, op, o, f, u, [&](int k, real res) {
            if (Store) r[o + (idx_t)k * L.sx] = (Out)res;
            s += (double)res * res;
        });
        return s;
    }
#endif
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
// restriction. Traffic per fine cell 2 (read f, u) + 1/4 (write fc), where residual_f64 and the
// restriction move 3 + 1.
// The levels go in groups of RR_GROUP: a group's residuals are computed (its loads all issued)
// before its stores (RR_GROUP=0: groups of one level, and the per-cell kernel's plain march).
#ifndef RR_GROUP
#define RR_GROUP STENCIL_UNROLL
#endif

// The model problem's columns (residual_restrict_f64): one thread per coarse column (ic, jc),
// which marches its four fine children together: e0 = (2ic, 2jc), o0 = (2ic + 1, 2jc), e1 and
// o1 the same in row 2jc + 1. Of each child's four horizontal neighbours two are the thread's
// own values (the other children), so per level it loads f and u above of its four children
// and the eight neighbours outside the block: 16 loads for 4 cells where a thread per fine
// column loads 6 for one, and no shuffles. (In the colour-split layout a warp's 32 coarse
// columns have their children at 32 consecutive slots of each colour: every load of the warp
// is one line of 128 bytes, or two where shifted by a slot. A thread per fine column, two rows
// of 16 columns to a warp, made the L1's data-pipe wavefronts the kernel's limit: Nsight
// Compute, 98 % of peak at 49 % of DRAM, 2026-11-29.)
template <int G>
__device__ __forceinline__ void residual_restrict_quad(const Layout& L, const Layout& Lc, const real* __restrict__ cols,
                                                       const real* __restrict__ V, int ic, int jc,
                                                       const real* __restrict__ f, const real* __restrict__ u,
                                                       real* __restrict__ fc, real scale) {
    const int i0 = 2 * ic, j0 = 2 * jc;
    const ColOp e0{load_col(cols, L, i0, j0), V}, o0{load_col(cols, L, i0 + 1, j0), V};
    const ColOp e1{load_col(cols, L, i0, j0 + 1), V}, o1{load_col(cols, L, i0 + 1, j0 + 1), V};
    const idx_t oe0 = at_(L, i0, j0, 0), oo0 = at_(L, i0 + 1, j0, 0);
    const idx_t oe1 = at_(L, i0, j0 + 1, 0), oo1 = at_(L, i0 + 1, j0 + 1, 0);
    // The west neighbours of the even children, the east ones of the odd (offsets per row).
    const int w0 = x_west(oe0), w1 = x_west(oe1), x0 = x_east(oo0), x1 = x_east(oo1);
    const idx_t oc = at_(Lc, ic, jc, 0), dy = (idx_t)L.plane;
    real be0 = real(0.0), bo0 = real(0.0), be1 = real(0.0), bo1 = real(0.0);
    real me0 = u[oe0], mo0 = u[oo0], me1 = u[oe1], mo1 = u[oo1];
    for (int k0 = 0; k0 < NZ; k0 += G) {
        real sum[G];
        const VGroup<ColOp, G> vg(e0, k0);
#pragma unroll
        for (int t = 0; t < G; ++t) {
            const int k = k0 + t;
            if (k < NZ) {
                const idx_t ok = (idx_t)k * L.sx;
                const bool top = k + 1 == NZ;
                const real ae0 = top ? real(0.0) : u[oe0 + ok + L.sx], ao0 = top ? real(0.0) : u[oo0 + ok + L.sx];
                const real ae1 = top ? real(0.0) : u[oe1 + ok + L.sx], ao1 = top ? real(0.0) : u[oo1 + ok + L.sx];
                const NbVals ne0{mo0, u[oe0 + ok + w0], me1, u[oe0 + ok - dy]};
                const NbVals no0{u[oo0 + ok + x0], me0, mo1, u[oo0 + ok - dy]};
                const NbVals ne1{mo1, u[oe1 + ok + w1], u[oe1 + ok + dy], me0};
                const NbVals no1{u[oo1 + ok + x1], me1, u[oo1 + ok + dy], mo0};
                const real re0 = f[oe0 + ok] - vg.apply(e0, t, ne0, oe0 + ok, L, k, be0, me0, ae0);
                const real ro0 = f[oo0 + ok] - vg.apply(o0, t, no0, oo0 + ok, L, k, bo0, mo0, ao0);
                const real re1 = f[oe1 + ok] - vg.apply(e1, t, ne1, oe1 + ok, L, k, be1, me1, ae1);
                const real ro1 = f[oo1 + ok] - vg.apply(o1, t, no1, oo1 + ok, L, k, bo1, mo1, ao1);
                sum[t] = (re0 + ro0) + (re1 + ro1);
                be0 = me0; bo0 = mo0; be1 = me1; bo1 = mo1;
                me0 = ae0; mo0 = ao0; me1 = ae1; mo1 = ao1;
            }
        }
#pragma unroll
        for (int t = 0; t < G; ++t) {
            if (k0 + t < NZ) fc[oc + (idx_t)(k0 + t) * Lc.sx] = scale * sum[t];
        }
    }
}

// Launched over the coarse columns (one thread each, column_config).
extern "C" __global__ void residual_restrict_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                                 const real* __restrict__ f, const real* __restrict__ u, Layout Lc,
                                                 real* __restrict__ fc, double scale) {
    const int ic = blockIdx.x * blockDim.x + threadIdx.x;
    const int jc = blockIdx.y * blockDim.y + threadIdx.y;
    if (ic >= Lc.nx || jc >= Lc.ny) return;
    residual_restrict_quad<(RR_GROUP > 0 ? RR_GROUP : 1)>(L, Lc, cols, V, ic, jc, f, u, fc, (real)scale);
}

// Per-cell coefficients without cross terms (residual_restrict_cells_f64 with has_cross = 0):
// the same mapping, one thread per coarse column. A child's west, south and down entries are,
// where the operator is symmetric, the east, north and up entries of the cells beside and
// below: those of the children inside the block and of the level below are values the thread
// holds, so per level it loads the four children's d, e, n and u and four entries outside.
// The rows in cell_row_v's arithmetic (fp32 builds), as CellOp::apply_n.
__device__ __forceinline__ real cell_row(real d, real e, real w, real n, real s, real u, real b, real ve, real vw,
                                          real vn, real vs, real mid, real above, real below) {
    if constexpr (sizeof(real) == 4) {
        return cell_row_v(d, e, w, n, s, u, b, ve, vw, vn, vs, mid, above, below);
    } else {
        return d * mid + e * ve + w * vw + n * vn + s * vs + u * above + b * below;
    }
}

__device__ __forceinline__ void residual_restrict_quad_cells(const Layout& L, const Layout& Lc, const CellOp& op,
                                                             int ic, int jc, const real* __restrict__ f,
                                                             const real* __restrict__ u, real* __restrict__ fc,
                                                             real scale) {
    const int i0 = 2 * ic, j0 = 2 * jc;
    // The children e0, o0, e1, o1 (as residual_restrict_quad).
    const idx_t o[4] = {at_(L, i0, j0, 0), at_(L, i0 + 1, j0, 0), at_(L, i0, j0 + 1, 0), at_(L, i0 + 1, j0 + 1, 0)};
    const int w0 = x_west(o[0]), w1 = x_west(o[2]), x0 = x_east(o[1]), x1 = x_east(o[3]);
    const idx_t oc = at_(Lc, ic, jc, 0), dy = (idx_t)L.plane;
    real below[4], mid[4], down[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        below[c] = real(0.0);
        mid[c] = u[o[c]];
        down[c] = real(0.0);  // the up entries of the level below (symmetric operators)
    }
#pragma unroll 2
    for (int k = 0; k < NZ; ++k) {
        const idx_t ok = (idx_t)k * L.sx;
        real above[4], D[4], E[4], N[4], U[4], W[4], S[4], B[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const idx_t q = o[c] + ok;
            above[c] = k + 1 < NZ ? u[q + L.sx] : real(0.0);
            D[c] = op.d[q];
            E[c] = op.e[q];
            N[c] = op.n[q];
            U[c] = op.u[q];
        }
        if (op.sym) {
            W[0] = op.e[o[0] + ok + w0];
            W[1] = E[0];
            W[2] = op.e[o[2] + ok + w1];
            W[3] = E[2];
            S[0] = op.n[o[0] + ok - dy];
            S[1] = op.n[o[1] + ok - dy];
            S[2] = N[0];
            S[3] = N[1];
#pragma unroll
            for (int c = 0; c < 4; ++c) B[c] = down[c];
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                W[c] = op.w[o[c] + ok];
                S[c] = op.s[o[c] + ok];
                B[c] = op.b[o[c] + ok];
            }
        }
        // Each child's east, west, north and south values: the other children's, or loaded.
        const real ve[4] = {mid[1], u[o[1] + ok + x0], mid[3], u[o[3] + ok + x1]};
        const real vw[4] = {u[o[0] + ok + w0], mid[0], u[o[2] + ok + w1], mid[2]};
        const real vn[4] = {mid[2], mid[3], u[o[2] + ok + dy], u[o[3] + ok + dy]};
        const real vs[4] = {u[o[0] + ok - dy], u[o[1] + ok - dy], mid[0], mid[1]};
        real r[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            r[c] = f[o[c] + ok] -
                   cell_row(D[c], E[c], W[c], N[c], S[c], U[c], B[c], ve[c], vw[c], vn[c], vs[c], mid[c], above[c],
                            below[c]);
            below[c] = mid[c];
            mid[c] = above[c];
            down[c] = U[c];
        }
        fc[oc + (idx_t)k * Lc.sx] = scale * ((r[0] + r[1]) + (r[2] + r[3]));
    }
}

// Per-cell coefficients with orography's slant couplings (residual_restrict_cells_f64 with
// has_cross = 2): one thread per fine column, as the
// residual; four consecutive threads in x hold the children of one coarse column (bit 0 of the
// thread's x index: the row 2J or 2J + 1; the bits above: the fine column i), so a warp reads 16
// consecutive values of each of two rows, adds each x pair and then the two rows by shuffles,
// and its first lane of four stores. Launched over 2 nx threads in x and the coarse rows in y
// (blockDim.x is a multiple of 4). Threads beyond the level work on column (0, 0) and store
// nothing (every lane takes part in the shuffles). A group's loads are all issued before its
// shuffles, since a shuffle between them would keep the loads of the next level from starting
// early.
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
    residual_groups<RR_GROUP>(L, op, o, f, u, [&](int k, real r) {
        restrict_store(r, store, fc, oc + (idx_t)k * Lc.sx, scale);
    });
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

// The sphere's diagonal couplings take the unfused path (has_cross = 1 never comes here).
// Two launches, as has_cross says (the host launches each its own way: LineKernels::
// residual_restrict_smooth): without cross terms one thread per coarse column, with the slant
// couplings one per fine column.
extern "C" __global__ void residual_restrict_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                       const real* __restrict__ f, const real* __restrict__ u,
                                                       Layout Lc, real* __restrict__ fc, double scale) {
    if (has_cross == 0) {
        const int ic = blockIdx.x * blockDim.x + threadIdx.x;
        const int jc = blockIdx.y * blockDim.y + threadIdx.y;
        if (ic >= Lc.nx || jc >= Lc.ny) return;
        residual_restrict_quad_cells(L, Lc, CELL_OP(0), ic, jc, f, u, fc, (real)scale);
        return;
    }
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
