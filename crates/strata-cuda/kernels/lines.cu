// Kernels with a vertical line solve (one Thomas solve per thread's column, see thomas()). As in
// stencil.cu, each body is a template over the column operator, with a `_cells` kernel for
// per-cell coefficients beside the model problem's.

// z <- w M^-1 r; traffic 3 (read r twice, write z). w = 1: the line solve; otherwise the
// smoothing step from zero of a level whose right-hand side residual_restrict_f64 wrote.
template <class Op, class Tri = Whole>
__device__ __forceinline__ void line_solve_body(const Layout& L, const Op& op, idx_t o0,
                                                const real* __restrict__ r, real* __restrict__ z, real w,
                                                const Tri& tri = Tri{}) {
    auto rhs = [&](int k) { return r[o0 + (idx_t)k * L.sx]; };
    tri(op, rhs, rhs, [&](int k, real zk) { z[o0 + (idx_t)k * L.sx] = w * zk; });
}

extern "C" __global__ void LINE_BOUNDS line_solve_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                          const real* __restrict__ r, real* __restrict__ z, double w) {
    THREAD_COLUMN
    if (!active) return;
    line_solve_body(L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), r, z, (real)w);
}

extern "C" __global__ void LINE_BOUNDS line_solve_cells_f64(Layout L, CELL_PARAMS, const real* __restrict__ r,
                                                real* __restrict__ z, double w) {
    THREAD_COLUMN
    if (!active) return;
    const idx_t o0 = at_(L, i, j, 0);
    line_solve_body(L, CELL_OP(o0), o0, r, z, (real)w);
}

// Fused CG Tridiag: r <- r - alpha q; z <- M^-1 r; adds the column's r.r and r.z to rr, rz.
// Traffic 5 (read q, r; write r; read r again; write z); the paper's Mem^(C) counts 9.
template <class Op, class Tri = Whole>
__device__ __forceinline__ void cg_tridiag_body(const Layout& L, const Op& op, idx_t o0,
                                                const real* __restrict__ q, real* __restrict__ r,
                                                real* __restrict__ z, real alpha, double& rr, double& rz,
                                                const Tri& tri = Tri{}) {
    auto fwd = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        const real rk = r[o] - alpha * q[o];
        r[o] = rk;
        rr += rk * rk;
        return rk;
    };
    auto again = [&](int k) { return r[o0 + (idx_t)k * L.sx]; };
    tri(op, fwd, again, [&](int k, real zk) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        z[o] = zk;
        rz += r[o] * zk;
    });
}

extern "C" __global__ void LINE_BOUNDS cg_tridiag_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                          const real* __restrict__ q, real* __restrict__ r,
                                          real* __restrict__ z, double alpha0, const double* __restrict__ sc,
                                          int ia, double* __restrict__ partials) {
    THREAD_COLUMN
    const double alpha = coef(alpha0, sc, ia);
    double rr = 0.0, rz = 0.0;
    if (active) cg_tridiag_body(L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), q, r, z, alpha, rr, rz);
    block_sum(rr, partials, 0, 2);
    block_sum(rz, partials, 1, 2);
}

extern "C" __global__ void LINE_BOUNDS cg_tridiag_cells_f64(Layout L, CELL_PARAMS, const real* __restrict__ q,
                                                real* __restrict__ r, real* __restrict__ z, double alpha0,
                                                const double* __restrict__ sc, int ia,
                                                double* __restrict__ partials) {
    THREAD_COLUMN
    const double alpha = coef(alpha0, sc, ia);
    double rr = 0.0, rz = 0.0;
    if (active) {
        const idx_t o0 = at_(L, i, j, 0);
        cg_tridiag_body(L, CELL_OP(o0), o0, q, r, z, alpha, rr, rz);
    }
    block_sum(rr, partials, 0, 2);
    block_sum(rz, partials, 1, 2);
}

// One block-Jacobi step, out of place: u_out <- u_in + rho M^-1 (f - A u_in).
// Traffic 5 (read f, u_in for the forward sweep and again for the backward; write u_out); the
// paper's two Smooth kernels count 8. With SMOOTH_STORE_RHS the forward sweep stores f - A u_in
// in u_out and the backward sweep reads it back instead of recomputing the stencil: traffic 6,
// but no second pass over the neighbours.
template <class Op, class Tri = Whole>
__device__ __forceinline__ void smooth_body(const Layout& L, const Op& op, idx_t o0,
                                            const real* __restrict__ f, const real* __restrict__ u_in,
                                            real* __restrict__ u_out, real rho, const Tri& tri = Tri{}) {
#ifdef SMOOTH_STORE_RHS
    auto rhs = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        const real v = f[o] - op_apply_load(op, u_in, o, L, k);
        u_out[o] = v;
        return v;
    };
    auto again = [&](int k) { return u_out[o0 + (idx_t)k * L.sx]; };
#else
    auto rhs = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        return f[o] - op_apply_load(op, u_in, o, L, k);
    };
    auto again = rhs;
#endif
    tri(op, rhs, again, [&](int k, real zk) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        u_out[o] = u_in[o] + rho * zk;
    });
}

extern "C" __global__ void LINE_BOUNDS smooth_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                      CROSS_PARAMS, const real* __restrict__ f, const real* __restrict__ u_in,
                                      real* __restrict__ u_out, double rho) {
    THREAD_COLUMN
    if (!active) return;
    WITH_RELAX_COL(smooth_body(L, op, at_(L, i, j, 0), f, u_in, u_out, rho));
}

extern "C" __global__ void LINE_BOUNDS smooth_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                            const real* __restrict__ f, const real* __restrict__ u_in,
                                            real* __restrict__ u_out, double rho) {
    THREAD_COLUMN
    if (!active) return;
    const idx_t o0 = at_(L, i, j, 0);
    WITH_CELL_SLANT(o0, smooth_body(L, op, o0, f, u_in, u_out, rho));
}

#ifdef XSPLIT
// Whether a line solve is thomas_split's (its levels' right-hand sides all read, in registers,
// before any value is written).
template <class Tri>
struct IsSplit {
    static constexpr bool value = false;
};
template <>
struct IsSplit<Split> {
    static constexpr bool value = true;
};
#endif

// One half-sweep of red-black line relaxation (or a quarter sweep of the four-colour one on
// nine-point levels: `parity` >= 2, colour_row and colour_first in common.cuh), in place: every column with (i + j + parity) even
// (parity = (i0 + j0 + colour) mod 2: the global colour) becomes T^-1 (f - H u), its exact solve
// given its neighbours, which have the other colour and are not written here. The column's own
// old values are not read (the backward sweep's recomputation reads f and the neighbours only),
// so writing in place is safe. One thread per column of the colour: thread x of row j takes
// column i = 2 x + ((j + parity) & 1) (launched over ceil(nx / 2) threads in x), so no thread
// idles (the kernel is bound by each thread's division chain, not by bandwidth).
// Over-relaxed by relax: u_c <- (1 - relax) u_c + relax T^-1 (f - H u)_c, the column's old value
// at level k read just before it is written (by this thread only); with relax = 1 exactly the
// solve, the old values not read.
template <class Op, class Tri = Whole>
__device__ __forceinline__ void smooth_color_body(const Layout& L, const Op& op, idx_t o0,
                                                  const real* __restrict__ f, real* u, real relax,
                                                  const Tri& tri = Tri{}) {
    auto rhs = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        return f[o] - op.horizontal(u, o, L, k);
    };
    if (relax == real(1.0)) {
        tri(op, rhs, rhs, [&](int k, real zk) { u[o0 + (idx_t)k * L.sx] = zk; });
    } else {
#if defined(XSPLIT) && (SPLIT_M & (SPLIT_M - 1)) == 0
        // In the colour-split layout the column's old values lie in sectors that no neighbour's
        // load brought in, and the compiler cannot read level k + 1's ahead of level k's store:
        // the split solve reads them with its right-hand sides instead (its levels' slots
        // k mod SPLIT_M are registers), so that its stores do not wait a memory latency each.
        if constexpr (IsSplit<Tri>::value) {
            real old[SPLIT_M];
            auto rhs_old = [&](int k) {
                const idx_t o = o0 + (idx_t)k * L.sx;
                old[k & (SPLIT_M - 1)] = u[o];
                return f[o] - op.horizontal(u, o, L, k);
            };
            tri(op, rhs_old, rhs_old, [&](int k, real zk) {
                u[o0 + (idx_t)k * L.sx] = relaxed(old[k & (SPLIT_M - 1)], relax, zk);
            });
            return;
        }
#endif
        tri(op, rhs, rhs, [&](int k, real zk) {
            const idx_t o = o0 + (idx_t)k * L.sx;
            u[o] = relaxed(u[o], relax, zk);
        });
    }
}

#define COLOR_COLUMN                                                                       \
    const int j = colour_row(blockIdx.y * blockDim.y + threadIdx.y, parity);             \
    const int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x) + colour_first(j, parity); \
    if (i >= L.nx || j >= L.ny) return;

extern "C" __global__ void LINE_BOUNDS smooth_color_f64(Layout L, const real* __restrict__ cols,
                                            const real* __restrict__ V, CROSS_PARAMS, const real* __restrict__ f,
                                            real* u, int parity, double relax) {
    COLOR_COLUMN
    WITH_RELAX_COL(smooth_color_body(L, op, at_(L, i, j, 0), f, u, (real)relax));
}

extern "C" __global__ void LINE_BOUNDS smooth_color_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                  const real* __restrict__ f, real* u, int parity,
                                                  double relax) {
    COLOR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    WITH_CELL_SLANT(o0, smooth_color_body(L, op, o0, f, u, (real)relax));
}

// ---- The same line kernels with two threads per column (thomas_twin, TWIN_COLUMN), for levels
// whose columns are too few to fill the GPU one thread each (strata_cuda::kernels::Tuning::
// twin_threads). Launched over 2 x (columns in x) threads in x.
extern "C" __global__ void LINE_BOUNDS line_solve_twin_f64(Layout L, const real* __restrict__ cols,
                                               const real* __restrict__ V, const real* __restrict__ r,
                                               real* __restrict__ z, double w) {
    TWIN_COLUMN(L.nx)
    const int i = x;
    line_solve_body(L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), r, z, (real)w, Twin{bottom, mask});
}

extern "C" __global__ void LINE_BOUNDS line_solve_twin_cells_f64(Layout L, CELL_PARAMS, const real* __restrict__ r,
                                                     real* __restrict__ z, double w) {
    TWIN_COLUMN(L.nx)
    const idx_t o0 = at_(L, x, j, 0);
    line_solve_body(L, CELL_OP(o0), o0, r, z, (real)w, Twin{bottom, mask});
}

// CG Tridiag by pairs: each thread adds its half's products; every thread reaches block_sum.
extern "C" __global__ void LINE_BOUNDS cg_tridiag_twin_f64(Layout L, const real* __restrict__ cols,
                                               const real* __restrict__ V, const real* __restrict__ q,
                                               real* __restrict__ r, real* __restrict__ z, double alpha0,
                                               const double* __restrict__ sc, int ia,
                                               double* __restrict__ partials) {
    TWIN_PAIR(L.nx)
    const double alpha = coef(alpha0, sc, ia);
    double rr = 0.0, rz = 0.0;
    if (active)
        cg_tridiag_body(L, ColOp{load_col(cols, L, x, j), V}, at_(L, x, j, 0), q, r, z, alpha, rr, rz,
                        Twin{bottom, mask});
    block_sum(rr, partials, 0, 2);
    block_sum(rz, partials, 1, 2);
}

extern "C" __global__ void LINE_BOUNDS cg_tridiag_twin_cells_f64(Layout L, CELL_PARAMS, const real* __restrict__ q,
                                                     real* __restrict__ r, real* __restrict__ z,
                                                     double alpha0, const double* __restrict__ sc, int ia,
                                                     double* __restrict__ partials) {
    TWIN_PAIR(L.nx)
    const double alpha = coef(alpha0, sc, ia);
    double rr = 0.0, rz = 0.0;
    if (active) {
        const idx_t o0 = at_(L, x, j, 0);
        cg_tridiag_body(L, CELL_OP(o0), o0, q, r, z, alpha, rr, rz, Twin{bottom, mask});
    }
    block_sum(rr, partials, 0, 2);
    block_sum(rz, partials, 1, 2);
}

extern "C" __global__ void LINE_BOUNDS smooth_twin_f64(Layout L, const real* __restrict__ cols,
                                           const real* __restrict__ V, CROSS_PARAMS, const real* __restrict__ f,
                                           const real* __restrict__ u_in, real* __restrict__ u_out,
                                           double rho) {
    TWIN_COLUMN(L.nx)
    const int i = x;
    WITH_RELAX_COL(smooth_body(L, op, at_(L, i, j, 0), f, u_in, u_out, rho, Twin{bottom, mask}));
}

extern "C" __global__ void LINE_BOUNDS smooth_twin_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                 const real* __restrict__ f, const real* __restrict__ u_in,
                                                 real* __restrict__ u_out, double rho) {
    TWIN_COLUMN(L.nx)
    const idx_t o0 = at_(L, x, j, 0);
    WITH_CELL_SLANT(o0, smooth_body(L, op, o0, f, u_in, u_out, rho, Twin{bottom, mask}));
}

// Row j's columns of the colour are i = 2 x + colour_first(j, parity): (nx - that + 1) / 2 of
// them; launch row y is row colour_row(y, parity).
#define TWIN_COLOR_COLUMN                                                                   \
    TWIN_PAIR_J((L.nx - colour_first(COLOUR_JROW, parity) + 1) / 2, COLOUR_JROW)                           \
    if (!active) return;                                                                    \
    const int i = 2 * x + colour_first(j, parity);
#define COLOUR_JROW colour_row((int)(blockIdx.y * blockDim.y + threadIdx.y), parity)

extern "C" __global__ void LINE_BOUNDS smooth_color_twin_f64(Layout L, const real* __restrict__ cols,
                                                 const real* __restrict__ V, CROSS_PARAMS, const real* __restrict__ f,
                                                 real* u, int parity, double relax) {
    TWIN_COLOR_COLUMN
    WITH_RELAX_COL(smooth_color_body(L, op, at_(L, i, j, 0), f, u, (real)relax, Twin{bottom, mask}));
}

extern "C" __global__ void LINE_BOUNDS smooth_color_twin_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                       const real* __restrict__ f, real* u, int parity,
                                                       double relax) {
    TWIN_COLOR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    WITH_CELL_SLANT(o0, smooth_color_body(L, op, o0, f, u, (real)relax, Twin{bottom, mask}));
}

// scale * (sum of the 4 fine children at level k of the fine column f0), the restriction of both
// RestrictSmooth kernels.
__device__ __forceinline__ real restrict_children(const Layout& Lf, const real* __restrict__ rf, idx_t f0, int k,
                                                  real scale) {
    const idx_t of = f0 + (idx_t)k * Lf.sx;
    const int ex = x_east(f0);
    return scale * ((rf[of] + rf[of + ex]) + (rf[of + Lf.plane] + rf[of + Lf.plane + ex]));
}

// Restriction fused with the first smoothing step from zero, per coarse column:
// f_c <- scale * (sum of the 4 fine children of r_f); u_c <- rho M^-1 f_c.
// Traffic per coarse cell 7 (read 4 children; write f_c; read f_c again; write u_c).
template <class Op, class Tri = Whole>
__device__ __forceinline__ void restrict_smooth_body(const Layout& Lf, const Layout& L, const Op& op, idx_t o0,
                                                     idx_t f0, const real* __restrict__ rf,
                                                     real* __restrict__ fc, real* __restrict__ uc,
                                                     real rho, real scale, const Tri& tri = Tri{}) {
    auto fwd = [&](int k) {
        const real v = restrict_children(Lf, rf, f0, k, scale);
        fc[o0 + (idx_t)k * L.sx] = v;
        return v;
    };
    auto again = [&](int k) { return fc[o0 + (idx_t)k * L.sx]; };
    tri(op, fwd, again, [&](int k, real zk) { uc[o0 + (idx_t)k * L.sx] = rho * zk; });
}

extern "C" __global__ void LINE_BOUNDS restrict_smooth_f64(Layout Lf, Layout L, const real* __restrict__ cols,
                                               const real* __restrict__ V, const real* __restrict__ rf,
                                               real* __restrict__ fc, real* __restrict__ uc, double rho,
                                               double scale) {
    THREAD_COLUMN
    if (!active) return;
    restrict_smooth_body(Lf, L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), at_(Lf, 2 * i, 2 * j, 0), rf,
                         fc, uc, rho, scale);
}

extern "C" __global__ void LINE_BOUNDS restrict_smooth_cells_f64(Layout Lf, Layout L, CELL_PARAMS,
                                                     const real* __restrict__ rf, real* __restrict__ fc,
                                                     real* __restrict__ uc, double rho, double scale) {
    THREAD_COLUMN
    if (!active) return;
    const idx_t o0 = at_(L, i, j, 0);
    restrict_smooth_body(Lf, L, CELL_OP(o0), o0, at_(Lf, 2 * i, 2 * j, 0), rf, fc, uc, rho, scale);
}

// RestrictSmooth by pairs (thomas_twin, TWIN_COLUMN): each half writes its own levels of f_c and
// reads them back.
extern "C" __global__ void LINE_BOUNDS restrict_smooth_twin_f64(Layout Lf, Layout L, const real* __restrict__ cols,
                                                    const real* __restrict__ V, const real* __restrict__ rf,
                                                    real* __restrict__ fc, real* __restrict__ uc, double rho,
                                                    double scale) {
    TWIN_COLUMN(L.nx)
    const int i = x;
    restrict_smooth_body(Lf, L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), at_(Lf, 2 * i, 2 * j, 0), rf,
                         fc, uc, rho, scale, Twin{bottom, mask});
}

extern "C" __global__ void LINE_BOUNDS restrict_smooth_twin_cells_f64(Layout Lf, Layout L, CELL_PARAMS,
                                                          const real* __restrict__ rf, real* __restrict__ fc,
                                                          real* __restrict__ uc, double rho, double scale) {
    TWIN_COLUMN(L.nx)
    const idx_t o0 = at_(L, x, j, 0);
    restrict_smooth_body(Lf, L, CELL_OP(o0), o0, at_(Lf, 2 * x, 2 * j, 0), rf, fc, uc, rho, scale,
                         Twin{bottom, mask});
}

// ---- Coarse levels: the line solve by parallel cyclic reduction (PCR) across the column.
// A coarse level has too few columns to hide the latency of one thread's Thomas chain (a 32^2
// level: 1024 threads, 128 dependent steps each). PCR gives every cell of the column its own
// thread: PCR_NZ threads per column (NZ rounded up to a power of two; rows beyond NZ are the
// identity), PCR_COLS neighbouring columns per block, log2(PCR_NZ) elimination steps through
// shared memory, each step a row combining itself with the rows s above and below. The column is
// the fastest thread index: the layout is x-contiguous, so a warp reads 32 / PCR_COLS levels of
// PCR_COLS consecutive columns, whole 32-byte sectors (with the level fastest, each of a warp's
// loads used 8 bytes of its sector: docs/PERFORMANCE.md). The kernels exist in every build; the
// backend launches them only where NZ <= 1024 and a level has few columns (Tuning::pcr_columns);
// pcr_columns_per_block in src/backend/mod.rs is the host's copy of PCR_COLS.
__host__ __device__ constexpr int pow2_at_least(int n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}
#define PCR_NZ (pow2_at_least(NZ) <= 1024 ? pow2_at_least(NZ) : 1)
// At most 512 threads per block (1024 where one column needs them), at least 4 columns where
// NZ <= 128, 128 threads at least.
#define PCR_COLS (PCR_NZ >= 512 ? 1 : PCR_NZ >= 128 ? 512 / PCR_NZ : PCR_NZ >= 32 ? 4 : 128 / PCR_NZ)

// The column of slot threadIdx.x of this block, and this thread's level k = threadIdx.y.
// Threads of a slot beyond the level's columns work on column (0, 0) (every thread must reach
// the barriers) and store nothing.
#define PCR_COLUMN                                                   \
    const int k = threadIdx.y, slot = threadIdx.x;                   \
    const int col = blockIdx.x * PCR_COLS + slot;                    \
    const bool active = col < L.nx * L.ny && PCR_NZ >= NZ;           \
    const int i = active ? col % L.nx : 0, j = active ? col / L.nx : 0;

// z_k of the column's system (lower, diag, upper of op; right-hand side d on this thread's row).
// Each row is kept as its off-diagonals a, c (<= 0), its row sum sg (>= 0) and d; its diagonal is
// sg - a - c, a sum of non-negative terms, and an elimination step adds non-negative terms to sg
// (sg' = sg + al sg[k-s] + ga sg[k+s]; the GTH trick): no subtractive cancellation however
// nearly singular the column, which plain PCR suffers (its diagonals shrink to small
// differences).
// The elimination of pcr_solve, for row k of column slot (a, c, sg, d as pcr_solve keeps them).
// Not a template, so that a kernel whose body takes several column operators (the per-cell
// kernels of a build with slant and diagonal couplings: four) holds one set of the shared
// arrays, not one per operator (four sets of 16 KiB at nz = 128 in fp64 were more than a block
// may declare).
__device__ __forceinline__ real pcr_eliminate(int k, int slot, real a, real c, real sg, real d) {
    // [level][column]: a warp's threads (consecutive columns, then levels) hit consecutive words.
    __shared__ real sa[PCR_NZ][PCR_COLS], sc[PCR_NZ][PCR_COLS], ss[PCR_NZ][PCR_COLS], sd[PCR_NZ][PCR_COLS];
    for (int s = 1; s < PCR_NZ; s <<= 1) {
        sa[k][slot] = a;
        sc[k][slot] = c;
        ss[k][slot] = sg;
        sd[k][slot] = d;
        __syncthreads();
        real a2 = real(0.0), c2 = real(0.0), sg2 = sg, d2 = d;
        if (k >= s) {
            const real am = sa[k - s][slot], cm = sc[k - s][slot], sm = ss[k - s][slot];
            const real al = -a / (sm - am - cm);
            a2 = al * am;
            sg2 += al * sm;
            d2 += al * sd[k - s][slot];
        }
        if (k + s < PCR_NZ) {
            const real ap = sa[k + s][slot], cp = sc[k + s][slot], sp = ss[k + s][slot];
            const real ga = -c / (sp - ap - cp);
            c2 = ga * cp;
            sg2 += ga * sp;
            d2 += ga * sd[k + s][slot];
        }
        __syncthreads();
        a = a2;
        c = c2;
        sg = sg2;
        d = d2;
    }
    return d / (sg - a - c);
}

template <class Op>
__device__ __forceinline__ real pcr_solve(const Op& op, int k, int slot, real d) {
    real a = real(0.0), c = real(0.0), sg = real(1.0);
    if (k < NZ) {
        a = k > 0 ? op.lower(k) : real(0.0);
        c = k + 1 < NZ ? op.upper(k) : real(0.0);
        sg = op.row_sum(k);
    } else {
        d = real(0.0);
    }
    return pcr_eliminate(k, slot, a, c, sg, d);
}

// Smooth by PCR: u_out <- u_in + rho M^-1 (f - A u_in), one thread per cell.
template <class Op>
__device__ __forceinline__ void smooth_pcr_body(const Layout& L, const Op& op, idx_t o0, int k, int slot,
                                                bool active, const real* __restrict__ f,
                                                const real* __restrict__ u_in, real* __restrict__ u_out,
                                                real rho) {
    const idx_t o = o0 + (idx_t)(k < NZ ? k : 0) * L.sx;
    const real d = k < NZ ? f[o] - op_apply_load(op, u_in, o, L, k) : real(0.0);
    const real z = pcr_solve(op, k, slot, d);
    if (active && k < NZ) u_out[o] = u_in[o] + rho * z;
}

extern "C" __global__ void smooth_pcr_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                          CROSS_PARAMS, const real* __restrict__ f, const real* __restrict__ u_in,
                                          real* __restrict__ u_out, double rho) {
    PCR_COLUMN
    WITH_RELAX_COL(smooth_pcr_body(L, op, at_(L, i, j, 0), k, slot, active, f, u_in, u_out, (real)rho));
}

extern "C" __global__ void smooth_pcr_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                const real* __restrict__ f, const real* __restrict__ u_in,
                                                real* __restrict__ u_out, double rho) {
    PCR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    WITH_CELL_SLANT(o0, smooth_pcr_body(L, op, o0, k, slot, active, f, u_in, u_out, (real)rho));
}

// The line solve by PCR: z <- w M^-1 r, one thread per cell (line_solve_f64's values up to
// rounding; no neighbour is read).
template <class Op>
__device__ __forceinline__ void line_solve_pcr_body(const Op& op, const Layout& L, idx_t o0, int k, int slot,
                                                    bool active, const real* __restrict__ r,
                                                    real* __restrict__ z, real w) {
    const idx_t o = o0 + (idx_t)(k < NZ ? k : 0) * L.sx;
    const real d = k < NZ ? r[o] : real(0.0);
    const real zk = pcr_solve(op, k, slot, d);
    if (active && k < NZ) z[o] = w * zk;
}

extern "C" __global__ void line_solve_pcr_f64(Layout L, const real* __restrict__ cols, const real* __restrict__ V,
                                              const real* __restrict__ r, real* __restrict__ z, double w) {
    PCR_COLUMN
    line_solve_pcr_body(ColOp{load_col(cols, L, i, j), V}, L, at_(L, i, j, 0), k, slot, active, r, z, (real)w);
}

extern "C" __global__ void line_solve_pcr_cells_f64(Layout L, CELL_PARAMS, const real* __restrict__ r,
                                                    real* __restrict__ z, double w) {
    PCR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    line_solve_pcr_body(CELL_OP(o0), L, o0, k, slot, active, r, z, (real)w);
}

// RestrictSmooth by PCR: f_c <- scale * (sum of the 4 fine children of r_f); u_c <- rho M^-1 f_c.
template <class Op>
__device__ __forceinline__ void restrict_smooth_pcr_body(const Layout& Lf, const Layout& L, const Op& op,
                                                         idx_t o0, idx_t f0, int k, int slot, bool active,
                                                         const real* __restrict__ rf, real* __restrict__ fc,
                                                         real* __restrict__ uc, real rho, real scale) {
    real d = real(0.0);
    if (k < NZ) {
        d = restrict_children(Lf, rf, f0, k, scale);
        if (active) fc[o0 + (idx_t)k * L.sx] = d;
    }
    const real z = pcr_solve(op, k, slot, d);
    if (active && k < NZ) uc[o0 + (idx_t)k * L.sx] = rho * z;
}

extern "C" __global__ void restrict_smooth_pcr_f64(Layout Lf, Layout L, const real* __restrict__ cols,
                                                   const real* __restrict__ V, const real* __restrict__ rf,
                                                   real* __restrict__ fc, real* __restrict__ uc, double rho,
                                                   double scale) {
    PCR_COLUMN
    restrict_smooth_pcr_body(Lf, L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), at_(Lf, 2 * i, 2 * j, 0),
                             k, slot, active, rf, fc, uc, (real)rho, (real)scale);
}

extern "C" __global__ void restrict_smooth_pcr_cells_f64(Layout Lf, Layout L, CELL_PARAMS,
                                                         const real* __restrict__ rf, real* __restrict__ fc,
                                                         real* __restrict__ uc, double rho, double scale) {
    PCR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    restrict_smooth_pcr_body(Lf, L, CELL_OP(o0), o0, at_(Lf, 2 * i, 2 * j, 0), k, slot, active, rf, fc, uc,
                             (real)rho, (real)scale);
}

// The fine residual restricted and the coarse level's first smoothing step from zero by PCR in
// one kernel (LineKernels::residual_restrict_smooth on a PCR level, the model problem's columns
// without cross terms): per coarse cell the residuals of its four fine children, each as
// residual_f64 computes it, summed as restrict_children sums the stored ones, so f_c and u_c are
// the unfused pair's bit for bit; the fine residual is not stored. Launched as the other PCR
// kernels over the coarse level's columns.
__device__ __forceinline__ real child_residual(const Layout& Lf, const ColOp& op, const real* __restrict__ f,
                                               const real* __restrict__ u, idx_t o, int k) {
    const real below = k > 0 ? u[o - Lf.sx] : real(0.0);
    const real above = k + 1 < NZ ? u[o + Lf.sx] : real(0.0);
    return f[o] - op.apply_n(global_nb(u, o, Lf), o, Lf, k, below, u[o], above);
}

extern "C" __global__ void residual_restrict_smooth_pcr_f64(Layout Lf, Layout L, const real* __restrict__ cols_f,
                                                            const real* __restrict__ V_f,
                                                            const real* __restrict__ cols,
                                                            const real* __restrict__ V, const real* __restrict__ f,
                                                            const real* __restrict__ u, real* __restrict__ fc,
                                                            real* __restrict__ uc, double rho, double scale) {
    PCR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    real d = real(0.0);
    if (k < NZ) {
        const idx_t of = at_(Lf, 2 * i, 2 * j, k);
        const real r00 = child_residual(Lf, ColOp{load_col(cols_f, Lf, 2 * i, 2 * j), V_f}, f, u, of, k);
        const int ex = x_east(of);
        const real r10 = child_residual(Lf, ColOp{load_col(cols_f, Lf, 2 * i + 1, 2 * j), V_f}, f, u, of + ex, k);
        const real r01 =
            child_residual(Lf, ColOp{load_col(cols_f, Lf, 2 * i, 2 * j + 1), V_f}, f, u, of + Lf.plane, k);
        const real r11 = child_residual(Lf, ColOp{load_col(cols_f, Lf, 2 * i + 1, 2 * j + 1), V_f}, f, u,
                                        of + Lf.plane + ex, k);
        d = (real)scale * ((r00 + r10) + (r01 + r11));
        if (active) fc[o0 + (idx_t)k * L.sx] = d;
    }
    const real z = pcr_solve(ColOp{load_col(cols, L, i, j), V}, k, slot, d);
    if (active && k < NZ) uc[o0 + (idx_t)k * L.sx] = (real)rho * z;
}

// One red-black half-sweep by PCR: the columns of one colour (parity as in smooth_color_f64),
// PCR_COLS per block, each solved exactly given its neighbours, u_c <- T_c^-1 (f - H u)_c, in
// place (the neighbours have the other colour and are not written here).
#define PCR_COLOR_COLUMN                                                      \
    const int k = threadIdx.y, slot = threadIdx.x;                            \
    const int half = (L.nx + 1) / 2;                                          \
    const int col = blockIdx.x * PCR_COLS + slot;                             \
    const int jc = colour_row(col / half, parity);                            \
    const int ic = 2 * (col % half) + colour_first(jc, parity);               \
    const bool active = jc < L.ny && ic < L.nx && PCR_NZ >= NZ;               \
    const int i = active ? ic : 0, j = active ? jc : 0;

template <class Op>
__device__ __forceinline__ void smooth_color_pcr_body(const Layout& L, const Op& op, idx_t o0, int k, int slot,
                                                      bool active, const real* __restrict__ f, real* u,
                                                      real relax) {
    const idx_t o = o0 + (idx_t)(k < NZ ? k : 0) * L.sx;
    const real d = k < NZ ? f[o] - op.horizontal(u, o, L, k) : real(0.0);
    const real z = pcr_solve(op, k, slot, d);
    // Over-relaxed as smooth_color_body: the cell's own old value, this thread's alone.
    if (active && k < NZ) u[o] = relax == real(1.0) ? z : relaxed(u[o], relax, z);
}

extern "C" __global__ void smooth_color_pcr_f64(Layout L, const real* __restrict__ cols,
                                                const real* __restrict__ V, CROSS_PARAMS, const real* __restrict__ f,
                                                real* u, int parity, double relax) {
    PCR_COLOR_COLUMN
    WITH_RELAX_COL(smooth_color_pcr_body(L, op, at_(L, i, j, 0), k, slot, active, f, u, (real)relax));
}

extern "C" __global__ void smooth_color_pcr_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                      const real* __restrict__ f, real* u, int parity,
                                                      double relax) {
    PCR_COLOR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    WITH_CELL_SLANT(o0, smooth_color_pcr_body(L, op, o0, k, slot, active, f, u, (real)relax));
}

// ---- The line solve, the colour half-sweep, Smooth and RestrictSmooth with SPLIT_P threads per
// column (thomas_split, SPLIT_PAIR_J): blocks of 32 columns x SPLIT_P segments, one launch row
// per block row.
extern "C" __global__ void SOLVE_SPLIT_BOUNDS line_solve_split_f64(Layout L, const real* __restrict__ cols,
                                                 const real* __restrict__ V, const real* __restrict__ r,
                                                 real* __restrict__ z, double w) {
    SPLIT_PAIR_J(L.nx, (int)blockIdx.y)
    line_solve_body(L, ColOp{load_col(cols, L, x, j), V}, at_(L, x, j, 0), r, z, (real)w, Split{active});
}

extern "C" __global__ void SPLIT_BOUNDS line_solve_split_cells_f64(Layout L, CELL_PARAMS, const real* __restrict__ r,
                                                       real* __restrict__ z, double w) {
    SPLIT_PAIR_J(L.nx, (int)blockIdx.y)
    const idx_t o0 = at_(L, x, j, 0);
    line_solve_body(L, CELL_OP(o0), o0, r, z, (real)w, Split{active});
}

// Row j's columns of the colour, as TWIN_COLOR_COLUMN; launch row blockIdx.y.
#define SPLIT_COLOR_COLUMN                                                                      \
    SPLIT_PAIR_J((L.nx - colour_first(colour_row((int)blockIdx.y, parity), parity) + 1) / 2,   \
                 colour_row((int)blockIdx.y, parity))                                            \
    const int i = active ? 2 * x + colour_first(j, parity) : 0;

extern "C" __global__ void RELAX_SPLIT_BOUNDS smooth_color_split_f64(Layout L, const real* __restrict__ cols,
                                                   const real* __restrict__ V, CROSS_PARAMS,
                                                   const real* __restrict__ f, real* u, int parity,
                                                   double relax) {
    SPLIT_COLOR_COLUMN
    WITH_RELAX_COL(smooth_color_body(L, op, at_(L, i, j, 0), f, u, (real)relax, Split{active}));
}

extern "C" __global__ void SPLIT_BOUNDS smooth_color_split_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                         const real* __restrict__ f, real* u, int parity,
                                                         double relax) {
    SPLIT_COLOR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    WITH_CELL_SLANT(o0, smooth_color_body(L, op, o0, f, u, (real)relax, Split{active}));
}

// The last half-sweep of mixed-precision defect correction's cycle, with the correction
// (LineKernels::smooth_color_correct): smooth_color_split's half-sweep of the colour on z, whose
// new values go into the fp64 outer iterate U (U += z) and not back into z, and the column
// beside it in its row (i ^ 1, of the other colour: final since the half-sweep before) added into
// U too. One pass where the half-sweep and axpy_from_f32 make two: per cell, f read on the
// colour (½ a value of the build), z once (1: the colour's old values and the other colour's,
// as neighbours and pairs), U read and written (2 fp64), where the two kernels move 2 values (½
// of them z's written colour) and then 1 value and 2 fp64: 6 B less per cell in the fp32 build
// (mg at 2816² x 128 on an H200: 36.35 -> 34.43 ms a cycle, 2026-11-29). The same arithmetic as
// the two kernels (relaxed()), so the same U bit for bit. Launched over ceil(nx / 2) pairs per
// row (x: columns 2x and 2x + 1) whatever the colour's first column, so that a pair whose column
// of the colour lies beyond nx still adds its other one.
#ifndef CORRECT_LOADS
#define CORRECT_LOADS 8
#endif
template <class Op>
__device__ __forceinline__ void smooth_color_correct_body(const Layout& L, const Op& op, idx_t o0, idx_t o1,
                                                          bool solve, bool pair, const real* __restrict__ f,
                                                          const real* __restrict__ z, real relax,
                                                          double* __restrict__ U) {
#if (SPLIT_M & (SPLIT_M - 1)) == 0
    real v[SPLIT_M];
    auto rhs = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        if (relax != real(1.0)) v[k & (SPLIT_M - 1)] = z[o];
        return f[o] - op.horizontal(z, o, L, k);
    };
    thomas_split(op, solve, rhs, [&](int k, real zk) {
        real& x = v[k & (SPLIT_M - 1)];
        x = relax == real(1.0) ? zk : relaxed(x, relax, zk);
    });
    // U's values read in groups of CORRECT_LOADS levels before any is written: added one by one,
    // each load would wait on the store before it (the compiler cannot tell the two columns'
    // cells apart), a memory latency per cell at the half-sweep's low occupancy.
    const int k0 = (int)threadIdx.y * SPLIT_M;
    constexpr int G = SPLIT_M % CORRECT_LOADS == 0 ? CORRECT_LOADS : SPLIT_M;
#pragma unroll
    for (int c = 0; c < SPLIT_M; c += G) {
        double u0[G], u1[G];
        real z1[G];
#pragma unroll
        for (int m = 0; m < G; ++m) {
            const idx_t dk = (idx_t)(k0 + c + m) * L.sx;
            if (solve) u0[m] = U[o0 + dk];
            if (pair) {
                u1[m] = U[o1 + dk];
                z1[m] = z[o1 + dk];
            }
        }
#pragma unroll
        for (int m = 0; m < G; ++m) {
            const idx_t dk = (idx_t)(k0 + c + m) * L.sx;
            if (solve) U[o0 + dk] = u0[m] + (double)v[c + m];
            if (pair) U[o1 + dk] = u1[m] + (double)z1[m];
        }
    }
#else
    __trap();  // not launched where SPLIT_M is not a power of two (CudaBackend::smooth_color_correct)
#endif
}

// Row j's pair x of columns (2x + first of the colour, its neighbour i ^ 1 of the other) for
// smooth_color_correct_body; `i` and `o0` the colour's column (clamped to 0 where it lies beyond
// nx: then only `pair` holds), `o1` the other's.
#define SPLIT_COLOR_PAIR                                                              \
    SPLIT_PAIR_J((L.nx + 1) / 2, (int)blockIdx.y)                                     \
    const int ic = 2 * x + colour_first(j, parity);                                   \
    const bool solve = active && ic < L.nx;                                           \
    const bool pair = active && (ic ^ 1) < L.nx;                                      \
    const int i = solve ? ic : 0;                                                     \
    const idx_t o0 = at_(L, i, j, 0);                                                 \
    const idx_t o1 = at_(L, pair ? (ic ^ 1) : 0, j, 0);

extern "C" __global__ void SPLIT_BOUNDS smooth_color_correct_split_f64(Layout L, const real* __restrict__ cols,
                                                           const real* __restrict__ V, CROSS_PARAMS,
                                                           const real* __restrict__ f,
                                                           const real* __restrict__ z, int parity,
                                                           double relax, double* __restrict__ U) {
    SPLIT_COLOR_PAIR
    WITH_RELAX_COL(smooth_color_correct_body(L, op, o0, o1, solve, pair, f, z, (real)relax, U));
}

extern "C" __global__ void CORRECT_SPLIT_BOUNDS smooth_color_correct_split_cells_f64(Layout L, CELL_PARAMS,
                                                                 CELL_CROSS_PARAMS,
                                                                 const real* __restrict__ f,
                                                                 const real* __restrict__ z, int parity,
                                                                 double relax, double* __restrict__ U) {
    SPLIT_COLOR_PAIR
    WITH_CELL_SLANT(o0, smooth_color_correct_body(L, op, o0, o1, solve, pair, f, z, (real)relax, U));
}

// ---- Red-black's step from zero in its two half-sweeps on the colours' columns only
// (LineKernels::line_solve_color, smooth_color_after_solve): the first colour's line solve
// T^-1 r (half the line solve on every column, whose other colour only fed the second
// half-sweep's blend), then the second colour's T^-1 (f - w H u), which is its half-sweep
// over-relaxed by w from T^-1 f without reading the column's old values. Levels without cross
// terms (CudaBackend::colour_split decides for both).
extern "C" __global__ void SOLVE_SPLIT_BOUNDS line_solve_color_split_f64(Layout L, const real* __restrict__ cols,
                                                        const real* __restrict__ V,
                                                        const real* __restrict__ r, real* __restrict__ z,
                                                        int parity) {
    SPLIT_COLOR_COLUMN
    line_solve_body(L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), r, z, real(1.0), Split{active});
}

extern "C" __global__ void SPLIT_BOUNDS line_solve_color_split_cells_f64(Layout L, CELL_PARAMS,
                                                             const real* __restrict__ r,
                                                             real* __restrict__ z, int parity) {
    SPLIT_COLOR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    line_solve_body(L, CELL_OP(o0), o0, r, z, real(1.0), Split{active});
}

// u_c <- T_c^-1 (f - w H u)_c on the colour's columns (the neighbours, of the other colour, are
// not written here; the column's old values are not read).
template <class Op>
__device__ __forceinline__ void smooth_color_after_body(const Layout& L, const Op& op, idx_t o0,
                                                        const real* __restrict__ f, real* u, real relax,
                                                        bool active) {
    auto rhs = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        return f[o] - relax * op.horizontal(u, o, L, k);
    };
    thomas_split(op, active, rhs, [&](int k, real zk) { u[o0 + (idx_t)k * L.sx] = zk; });
}

extern "C" __global__ void AFTER_SPLIT_BOUNDS smooth_color_after_split_f64(Layout L, const real* __restrict__ cols,
                                                         const real* __restrict__ V,
                                                         const real* __restrict__ f, real* u, int parity,
                                                         double relax) {
    SPLIT_COLOR_COLUMN
    smooth_color_after_body(L, ColOp{load_col(cols, L, i, j), V}, at_(L, i, j, 0), f, u, (real)relax, active);
}

extern "C" __global__ void SPLIT_BOUNDS smooth_color_after_split_cells_f64(Layout L, CELL_PARAMS,
                                                               const real* __restrict__ f, real* u,
                                                               int parity, double relax) {
    SPLIT_COLOR_COLUMN
    const idx_t o0 = at_(L, i, j, 0);
    smooth_color_after_body(L, CELL_OP(o0), o0, f, u, (real)relax, active);
}

extern "C" __global__ void RELAX_SPLIT_BOUNDS smooth_split_f64(Layout L, const real* __restrict__ cols,
                                             const real* __restrict__ V, CROSS_PARAMS, const real* __restrict__ f,
                                             const real* __restrict__ u_in, real* __restrict__ u_out,
                                             double rho) {
    SPLIT_PAIR_J(L.nx, (int)blockIdx.y)
    const int i = x;
    WITH_RELAX_COL(smooth_body(L, op, at_(L, i, j, 0), f, u_in, u_out, rho, Split{active}));
}

extern "C" __global__ void SPLIT_BOUNDS smooth_split_cells_f64(Layout L, CELL_PARAMS, CELL_CROSS_PARAMS,
                                                   const real* __restrict__ f, const real* __restrict__ u_in,
                                                   real* __restrict__ u_out, double rho) {
    SPLIT_PAIR_J(L.nx, (int)blockIdx.y)
    const idx_t o0 = at_(L, x, j, 0);
    WITH_CELL_SLANT(o0, smooth_body(L, op, o0, f, u_in, u_out, rho, Split{active}));
}

// RestrictSmooth by SPLIT_P threads per column: each writes its own levels of f_c (thomas_split
// reads each right-hand side once, so f_c is not read back).
extern "C" __global__ void SPLIT_BOUNDS restrict_smooth_split_f64(Layout Lf, Layout L, const real* __restrict__ cols,
                                                      const real* __restrict__ V, const real* __restrict__ rf,
                                                      real* __restrict__ fc, real* __restrict__ uc, double rho,
                                                      double scale) {
    SPLIT_PAIR_J(L.nx, (int)blockIdx.y)
    restrict_smooth_body(Lf, L, ColOp{load_col(cols, L, x, j), V}, at_(L, x, j, 0), at_(Lf, 2 * x, 2 * j, 0), rf,
                         fc, uc, rho, scale, Split{active});
}

extern "C" __global__ void SPLIT_BOUNDS restrict_smooth_split_cells_f64(Layout Lf, Layout L, CELL_PARAMS,
                                                            const real* __restrict__ rf, real* __restrict__ fc,
                                                            real* __restrict__ uc, double rho, double scale) {
    SPLIT_PAIR_J(L.nx, (int)blockIdx.y)
    const idx_t o0 = at_(L, x, j, 0);
    restrict_smooth_body(Lf, L, CELL_OP(o0), o0, at_(Lf, 2 * x, 2 * j, 0), rf, fc, uc, rho, scale, Split{active});
}
