// Stencil kernels without a line solve. Each thread walks its column upwards keeping the values
// below, at and above k in registers, so every vertical neighbour is loaded once. Each body is a
// template over the column operator (ColOp or CellOp, common.cuh), with one kernel per operator:
// `name_f64` for the model problem's coefficients, `name_cells_f64` for per-cell coefficients.

// The sphere's cross terms (docs/MODEL.md §16.1): a column's couplings to its four diagonal
// neighbours, `xc` 4 reals per column (ne, nw, se, sw) as the face coefficients, added to the
// column operator (`has_cross` = 0: none, `xc` is not read).
struct XColOp {
    ColOp op;
    real ne, nw, se, sw;
    __device__ __forceinline__ real apply(const real* __restrict__ x, idx_t o, const Layout& L, int k,
                                            real below, real mid, real above) const {
        const real h = ne * (x[o + L.plane + 1] - mid) + nw * (x[o + L.plane - 1] - mid) +
                       se * (x[o - L.plane + 1] - mid) + sw * (x[o - L.plane - 1] - mid);
        return op.apply(x, o, L, k, below, mid, above) + V_D(op.V, k) * h;
    }
};

#define CROSS_PARAMS const real *__restrict__ xc, int has_cross
// Runs `body(op, ...)` with the column's operator, with its cross terms if it has any.
#define WITH_CROSS(call)                                                                  \
    do {                                                                                  \
        const ColOp base{load_col(cols, L, i, j), V};                                      \
        if (has_cross) {                                                                  \
            const real* c4 = xc + 4 * ((idx_t)j * L.nx + i);                               \
            const XColOp op{base, __ldg(c4), __ldg(c4 + 1), __ldg(c4 + 2), __ldg(c4 + 3)}; \
            call;                                                                         \
        } else {                                                                          \
            const ColOp& op = base;                                                       \
            call;                                                                         \
        }                                                                                 \
    } while (0)

// The cross terms of a level with per-cell coefficients: the four diagonal entries of every row
// in the field layout (`has_cross` = 0: none, the arrays are not read).
struct XCellOp {
    CellOp op;
    const real* __restrict__ ne;
    const real* __restrict__ nw;
    const real* __restrict__ se;
    const real* __restrict__ sw;
    __device__ __forceinline__ real apply(const real* __restrict__ x, idx_t o, const Layout& L, int k,
                                            real below, real mid, real above) const {
        const real h = ne[o] * (x[o + L.plane + 1] - mid) + nw[o] * (x[o + L.plane - 1] - mid) +
                       se[o] * (x[o - L.plane + 1] - mid) + sw[o] * (x[o - L.plane - 1] - mid);
        return op.apply(x, o, L, k, below, mid, above) + h;
    }
};

#define CELL_CROSS_PARAMS                                                                    \
    const real *__restrict__ xne, const real *__restrict__ xnw, const real *__restrict__ xse, \
        const real *__restrict__ xsw, int has_cross
#define WITH_CELL_CROSS(o0, call)                      \
    do {                                               \
        const CellOp base = CELL_OP(o0);               \
        if (has_cross) {                               \
            const XCellOp op{base, xne, xnw, xse, xsw}; \
            call;                                      \
        } else {                                       \
            const CellOp& op = base;                   \
            call;                                      \
        }                                              \
    } while (0)

// y <- A x; traffic 2 (+ the coefficients: 4 values per cell, 7 when not symmetric).
template <class Op>
__device__ __forceinline__ void apply_body(const Layout& L, const Op& op, idx_t o, const real* __restrict__ x,
                                           real* __restrict__ y) {
    real below = real(0.0), mid = x[o];
#pragma unroll STENCIL_UNROLL
    for (int k = 0; k < NZ; ++k, o += L.sx) {
        const real above = k + 1 < NZ ? x[o + L.sx] : real(0.0);
        y[o] = op.apply(x, o, L, k, below, mid, above);
        below = mid;
        mid = above;
    }
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
template <class Op>
__device__ __forceinline__ real residual_body(const Layout& L, const Op& op, idx_t o,
                                                const real* __restrict__ f, const real* __restrict__ u,
                                                real* __restrict__ r) {
    double s = 0.0;
    real below = real(0.0), mid = u[o];
#pragma unroll STENCIL_UNROLL
    for (int k = 0; k < NZ; ++k, o += L.sx) {
        const real above = k + 1 < NZ ? u[o + L.sx] : real(0.0);
        const real res = f[o] - op.apply(u, o, L, k, below, mid, above);
        r[o] = res;
        s += res * res;
        below = mid;
        mid = above;
    }
    return s;
}

extern "C" __global__ void residual_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                        CROSS_PARAMS, const real* __restrict__ f,
                                        const real* __restrict__ u, real* __restrict__ r,
                                        double* __restrict__ partials) {
    THREAD_COLUMN
    double s = 0.0;
    if (active) WITH_CROSS(s = residual_body(L, op, at_(L, i, j, 0), f, u, r));
    block_sum(s, partials, 0, 1);
}

extern "C" __global__ void residual_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS, const real* __restrict__ f,
                                              const real* __restrict__ u, real* __restrict__ r,
                                              double* __restrict__ partials) {
    THREAD_COLUMN
    double s = 0.0;
    if (active) {
        const idx_t o = at_(L, i, j, 0);
        WITH_CELL_CROSS(o, s = residual_body(L, op, o, f, u, r));
    }
    block_sum(s, partials, 0, 1);
}

// Fused CG SpMV: u <- u + alpha p; p <- z + beta p; q <- A z + beta q; returns the column's p.q.
// Traffic 7 (read z, u, p, q; write u, p, q); the paper's Mem^(C) counts 6.
template <class Op>
__device__ __forceinline__ real cg_spmv_body(const Layout& L, const Op& op, idx_t o,
                                               const real* __restrict__ z, real* __restrict__ u,
                                               real* __restrict__ p, real* __restrict__ q, real alpha,
                                               real beta) {
    double s = 0.0;
    real below = real(0.0), mid = z[o];
#pragma unroll STENCIL_UNROLL
    for (int k = 0; k < NZ; ++k, o += L.sx) {
        const real above = k + 1 < NZ ? z[o + L.sx] : real(0.0);
        const real pold = p[o];
        u[o] += alpha * pold;
        const real pk = mid + beta * pold;
        const real qk = op.apply(z, o, L, k, below, mid, above) + beta * q[o];
        p[o] = pk;
        q[o] = qk;
        s += pk * qk;
        below = mid;
        mid = above;
    }
    return s;
}

extern "C" __global__ void cg_spmv_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                       CROSS_PARAMS, const real* __restrict__ z, real* __restrict__ u,
                                       real* __restrict__ p, real* __restrict__ q, double alpha,
                                       double beta, double* __restrict__ partials) {
    THREAD_COLUMN
    double s = 0.0;
    if (active) WITH_CROSS(s = cg_spmv_body(L, op, at_(L, i, j, 0), z, u, p, q, alpha, beta));
    block_sum(s, partials, 0, 1);
}

extern "C" __global__ void cg_spmv_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS, const real* __restrict__ z,
                                             real* __restrict__ u, real* __restrict__ p,
                                             real* __restrict__ q, double alpha, double beta,
                                             double* __restrict__ partials) {
    THREAD_COLUMN
    double s = 0.0;
    if (active) {
        const idx_t o = at_(L, i, j, 0);
        WITH_CELL_CROSS(o, s = cg_spmv_body(L, op, o, z, u, p, q, alpha, beta));
    }
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
