// strata CUDA kernels: common definitions. Compiled by NVRTC at run time with -DNZ=<levels per
// column> (every level of a hierarchy shares nz), once per process, nz, storage (-DREAL) and
// offset width (-DIDX32, below).
//
// Field layout (docs/MODEL.md §10, the paper's x-contiguous padded map): element (i, j, k) of a block,
// i in [-1, nx], j in [-1, ny] (halo of width one), k in [0, nz), lives at
//     (j + 1) * plane + k * sx + XOFF + i,        plane = nz * sx.
// XOFF = 32 and sx a multiple of 32 keep every interior row 256-byte aligned; the padding is never
// read or written. One thread per column (i, j); consecutive threads are consecutive in x, so every
// access is coalesced. Indices are 64-bit.
// With -DXSPLIT (the colour-split layout, at_ below) a row's columns are reordered by colour in
// groups of 64; the rows, planes and halo are as above.

#ifndef NZ
#error "NZ must be defined"
#endif
#if NZ < 2
#error "NZ must be at least 2"
#endif

// Kernel parameters and offsets into a caller's array: 64-bit always.
typedef long long i64;
// Offsets into a field: 64-bit, or 32-bit in the build with -DIDX32, which the host loads only
// for levels whose fields hold fewer than 2^28 values (so that the fields of the level above,
// less than four times as large, which the restriction reads with the coarse level's kernels,
// and of a neighbouring tile stay below 2^31 too; strata_cuda::kernels::NARROW_VALUES). 32-bit
// offsets take fewer registers and instructions per access, which the latency-bound stencil
// kernels feel (docs/PERFORMANCE.md).
#ifdef IDX32
typedef int idx_t;
#else
typedef i64 idx_t;
#endif

// The type of a level's fields, coefficients and arithmetic: double, or float for the fp32 levels
// of a mixed-precision solve (-DREAL=float). Reductions (block_sum, dot) accumulate in double in
// both builds; face buffers, host staging and the caller's arrays are double, converted on the
// way in and out. Kernel names keep the _f64 suffix of the fp64 build. (Float arithmetic, not
// only float storage: an fp32 field widened to fp64 for fp64 arithmetic costs an F2F
// conversion per value, whose throughput on an H200 bounds the kernels below the bandwidth
// limit, docs/PERFORMANCE.md.)
#ifndef REAL
#define REAL double
#endif
typedef REAL real;

#define XOFF 32
// Thomas checkpoint interval: the backward sweep recomputes each chunk of KCH levels from a
// checkpoint instead of storing the modified super-diagonal and the intermediate solution.
#ifndef KCH
#define KCH 4
#endif
// Unrolling of the forward sweep (lets loads of later levels issue before the division chain
// needs them).
#ifndef FWD_UNROLL
#define FWD_UNROLL 1
#endif
// Minimum resident blocks per SM asked of the compiler for the line kernels (0: no bound). Eight
// blocks of 128 threads cap them at 64 registers: the occupancy hides the division chain.
#ifndef LINE_MINB
#define LINE_MINB 8
#endif
// Unrolling of the stencil kernels' loops over k (more loads in flight per thread).
#ifndef STENCIL_UNROLL
#define STENCIL_UNROLL 4
#endif
#if LINE_MINB > 0
#define LINE_BOUNDS __launch_bounds__(128, LINE_MINB)
#else
#define LINE_BOUNDS
#endif
#define NCH ((NZ + KCH - 1) / KCH)

struct Layout {
    i64 plane;
    int nx, ny, nz, sx;
};

// Column coefficients: 6 reals per column (area, aE, aW, aN, aS, aT), row-major j * nx + i.
struct Col {
    real t, ae, aw, an, as, at;
};

#ifdef XSPLIT
// The colour-split layout (-DXSPLIT, the default: strata_cuda::layout; STRATA_CUDA_LAYOUT=x builds
// without it): each row in groups of 64 columns, the group's 32 even columns (q = i + 64 even)
// first, then its 32 odd ones, so that the columns of one colour in a row are consecutive and
// every 32-byte sector holds one colour (a red-black half-sweep reads and writes only its
// colour's sectors). Column i of a row lies at xpos(i); rows start at multiples of 64 (sx is
// one), so an element's offset o says by its low six bits where its east and west neighbours are
// (x_east, x_west).
__device__ __forceinline__ int xpos(int i) {
    const int q = i + 64;
    return (q & ~63) + ((q & 1) << 5) + ((q & 63) >> 1);
}
__device__ __forceinline__ idx_t at_(const Layout& L, int i, int j, int k) {
    return (idx_t)(j + 1) * (idx_t)L.plane + (idx_t)k * L.sx + xpos(i);
}
// The offsets from element o to its east and west neighbours: from an even column (slot m < 32
// of its group) the odd half at +32 (east) and +31 (west; -1 from the group's first, whose west
// is the last odd column of the group before); from an odd one the even half at -31 (east; +1
// from the group's last) and -32 (west).
__device__ __forceinline__ int x_east(idx_t o) {
    const int m = (int)o & 63;
    return m < 32 ? 32 : (m == 63 ? 1 : -31);
}
__device__ __forceinline__ int x_west(idx_t o) {
    const int m = (int)o & 63;
    return m < 32 ? (m == 0 ? -1 : 31) : -32;
}
#else
__device__ __forceinline__ idx_t at_(const Layout& L, int i, int j, int k) {
    return (idx_t)(j + 1) * (idx_t)L.plane + (idx_t)k * L.sx + XOFF + i;
}
__device__ __forceinline__ constexpr int x_east(idx_t) { return 1; }
__device__ __forceinline__ constexpr int x_west(idx_t) { return -1; }
#endif

__device__ __forceinline__ Col load_col(const real* __restrict__ cols, const Layout& L, int i, int j) {
    const real* c = cols + 6 * ((idx_t)j * L.nx + i);
    Col r;
    r.t = __ldg(c); r.ae = __ldg(c + 1); r.aw = __ldg(c + 2);
    r.an = __ldg(c + 3); r.as = __ldg(c + 4); r.at = __ldg(c + 5);
    return r;
}

// Vertical vectors of a level: amb = a - b - c, b, c, d, a, each NZ long, packed.
#define V_AMB(V, k) __ldg((V) + (k))
#define V_B(V, k) __ldg((V) + NZ + (k))
#define V_C(V, k) __ldg((V) + 2 * NZ + (k))
#define V_D(V, k) __ldg((V) + 3 * NZ + (k))
#define V_A(V, k) __ldg((V) + 4 * NZ + (k))

// The horizontal neighbourhood of a cell at one level: `p` points at the cell's value, `dy` is
// the distance to the row beside (in a field: its plane). (Declaring `p` __restrict__ changed
// no timing: docs/PERFORMANCE.md.)
#ifdef XSPLIT
// In the colour-split layout also the offsets to the east and west neighbours (x_east, x_west).
struct Nb {
    const real* p;
    idx_t dy;
    int ex, wx;
    __device__ __forceinline__ real e() const { return p[ex]; }
    __device__ __forceinline__ real w() const { return p[wx]; }
    __device__ __forceinline__ real n() const { return p[dy]; }
    __device__ __forceinline__ real s() const { return p[-dy]; }
    __device__ __forceinline__ real ne() const { return p[dy + ex]; }
    __device__ __forceinline__ real nw() const { return p[dy + wx]; }
    __device__ __forceinline__ real se() const { return p[-dy + ex]; }
    __device__ __forceinline__ real sw() const { return p[-dy + wx]; }
};

// The neighbourhood of element o of field x in global memory, where oc is any element of o's
// column (the neighbours' offsets are found from it: a column's level 0, so that they are found
// once per column and not at every level).
__device__ __forceinline__ Nb col_nb(const real* x, idx_t o, const Layout& L, idx_t oc) {
    return Nb{x + o, (idx_t)L.plane, x_east(oc), x_west(oc)};
}
#else
struct Nb {
    const real* p;
    idx_t dy;
    static constexpr int ex = 1, wx = -1;
    __device__ __forceinline__ real e() const { return p[1]; }
    __device__ __forceinline__ real w() const { return p[-1]; }
    __device__ __forceinline__ real n() const { return p[dy]; }
    __device__ __forceinline__ real s() const { return p[-dy]; }
    __device__ __forceinline__ real ne() const { return p[dy + 1]; }
    __device__ __forceinline__ real nw() const { return p[dy - 1]; }
    __device__ __forceinline__ real se() const { return p[-dy + 1]; }
    __device__ __forceinline__ real sw() const { return p[-dy - 1]; }
};

// The neighbourhood of element o of field x in global memory (oc: any element of o's column).
__device__ __forceinline__ Nb col_nb(const real* x, idx_t o, const Layout& L, idx_t) { return Nb{x + o, (idx_t)L.plane}; }
#endif
// A cell's four horizontal neighbours as values already in registers, for the kernels that hold
// several columns of a block (the fused residual-restriction's 2 x 2 fine children, stencil.cu):
// what apply_at reads of an Nb, where a neighbour inside the block is the thread's own value.
struct NbVals {
    real ve, vw, vn, vs;
    __device__ __forceinline__ real e() const { return ve; }
    __device__ __forceinline__ real w() const { return vw; }
    __device__ __forceinline__ real n() const { return vn; }
    __device__ __forceinline__ real s() const { return vs; }
};

// The neighbourhood of element o of field x.
__device__ __forceinline__ Nb global_nb(const real* x, idx_t o, const Layout& L) { return col_nb(x, o, L, o); }
// The neighbourhood of element o, at level k of its column, of field x (o - k sx, which the
// compiler sees is the column's level 0 where o = o0 + k sx: the neighbours' offsets once per
// column).
__device__ __forceinline__ Nb level_nb(const real* x, idx_t o, const Layout& L, int k) {
    return col_nb(x, o, L, o - (idx_t)k * L.sx);
}

// A product rounded on its own: never contracted into an FMA by the compiler or ptxas.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// (A x) at (i, j, k) given the column's own values below, at and above k (zero outside) and the
// level's vertical entries at k (amb, b, c, d of V), for the fp32 builds. Every product and FMA
// is explicit, so that the value does not depend on how the compiler contracts the expression
// in the kernel it is inlined into: the fused residual-restriction (which takes the vertical
// entries from VGroup's vector loads) and the residual it stands for give the same bits (GPU
// test fused_restrictions_give_the_unfused_iterates; written as one expression, the two
// kernels contracted it differently, 2026-11-29).
template <class X>
__device__ __forceinline__ real apply_at_v(const X& x, const Col& c, real amb, real vb, real vc, real vd,
                                            real below, real mid, real above) {
    const real diag = fma(c.t, amb, -mul_rn(c.at, vd));
    const real horiz = fma(c.as, x.s(), fma(c.an, x.n(), fma(c.aw, x.w(), mul_rn(c.ae, x.e()))));
    const real vert = fma(vb, above, mul_rn(vc, below));
    return fma(vd, horiz, fma(c.t, vert, mul_rn(diag, mid)));
}
// (A x) at (i, j, k): apply_at_v in the fp32 builds; the fp64 builds keep the one expression as
// the compiler contracts it (through apply_at_v, the fp64 outer residual ran 8 % slower at 2816²,
// with the same registers, 2026-11-29; VGroup does not serve fp64 builds, so nothing there needs
// the explicit form).
// The neighbourhood X: an Nb in global memory, or an NbVals in registers.
template <class X>
__device__ __forceinline__ real apply_at(const X& x, const Col& c, const real* __restrict__ V, int k,
                                          real below, real mid, real above) {
    if constexpr (sizeof(real) == 4) {
        return apply_at_v(x, c, V_AMB(V, k), V_B(V, k), V_C(V, k), V_D(V, k), below, mid, above);
    } else {
        real diag = c.t * V_AMB(V, k) - c.at * V_D(V, k);
        real horiz = c.ae * x.e() + c.aw * x.w() + c.an * x.n() + c.as * x.s();
        return diag * mid + c.t * (V_B(V, k) * above + V_C(V, k) * below) + V_D(V, k) * horiz;
    }
}

// Four consecutive values from p (16-byte aligned) in vector loads: one load instruction for
// four levels' entry where four scalar loads would each be a request to L1. (VGroup takes only
// the float form; the fp64 builds compile its discarded branch, which needs the double one.)
__device__ __forceinline__ void ldg4(const float* p, float (&v)[4]) {
    const float4 q = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
__device__ __forceinline__ void ldg4(const double* p, double (&v)[4]) {
    const double2 a = __ldg(reinterpret_cast<const double2*>(p));
    const double2 b = __ldg(reinterpret_cast<const double2*>(p + 2));
    v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
}

// The vertical entries of a group of G levels from k0, for the stencil kernels that march a
// column in groups (the fused residual-restriction): every level of every column of a level
// reads the same amb, b, c and d at k, each a warp-uniform load, so four of a level's load
// instructions are these where six are the field's. For the model problem's columns (ColOp)
// in the fp32 builds the group loads them four levels to a vector load (V_VEC, where G and NZ
// are multiples of four, so that every group starts 16-byte aligned in the level's packed V;
// -DV_VEC=0: the scalar loads); for any other operator or build the group holds nothing and
// `apply` is the operator's own. The same values, in the same arithmetic (apply_at_v), as
// apply_at.
#ifndef V_VEC
#define V_VEC 1
#endif
template <class Op, int G>
struct VGroup {
    __device__ __forceinline__ VGroup(const Op&, int) {}
    template <class X>
    __device__ __forceinline__ real apply(const Op& op, int, const X& x, idx_t o, const Layout& L, int k,
                                          real below, real mid, real above) const {
        return op.apply_n(x, o, L, k, below, mid, above);
    }
};

// Sum of v over the block, written to partials[block] (component `comp` of `ncomp`). Every thread
// of the block must call it. Fixed shuffle tree: deterministic.
__device__ __forceinline__ void block_sum(double v, double* __restrict__ partials, int comp, int ncomp) {
    __shared__ double warp_sums[32];
    const int lane = (threadIdx.y * blockDim.x + threadIdx.x) & 31;
    const int warp = (threadIdx.y * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (blockDim.x * blockDim.y + 31) >> 5;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    __syncthreads();
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? warp_sums[lane] : 0.0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        // One partial per block; blocks along z are the segments of a column (SEGMENT).
        const idx_t block = ((idx_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
        if (lane == 0) partials[block * ncomp + comp] = v;
    }
}

// The operator of one column, as the line kernels see it: the model problem's column (ColOp:
// coefficients per column and per level) or a column of a level with per-cell coefficients
// (CellOp). Both give A x at a cell and the tridiagonal column block A_T (diag, lower, upper);
// every kernel body is a template over the two.
struct ColOp {
    Col c;
    const real* __restrict__ V;
    // A x at (i, j, k) of element o with neighbourhood x; its 7-point parts (all of it) and its
    // cross terms (none), as XColOp splits them. (The neighbourhood X: an Nb or an NbVals.)
    template <class X>
    __device__ __forceinline__ real apply_n(const X& x, idx_t, const Layout&, int k, real below, real mid,
                                              real above) const {
        return apply_at(x, c, V, k, below, mid, above);
    }
    __device__ __forceinline__ real seven_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return apply_n(x, o, L, k, below, mid, above);
    }
    __device__ __forceinline__ real cross_n(const Nb&, idx_t, int, real) const { return real(0.0); }
    __device__ __forceinline__ real apply(const real* __restrict__ x, idx_t o, const Layout& L, int k,
                                            real below, real mid, real above) const {
        return apply_n(level_nb(x, o, L, k), o, L, k, below, mid, above);
    }
    // The horizontal couplings alone, (H x) at (i, j, k).
    __device__ __forceinline__ real horizontal(const real* x, idx_t o, const Layout& L, int k) const {
        const Nb d = level_nb(x, o, L, k);
        return V_D(V, k) * (c.ae * x[o + d.ex] + c.aw * x[o + d.wx] + c.an * x[o + L.plane] + c.as * x[o - L.plane]);
    }
    __device__ __forceinline__ real diag(int k) const { return c.t * V_AMB(V, k) - c.at * V_D(V, k); }
    __device__ __forceinline__ real lower(int k) const { return c.t * V_C(V, k); }
    __device__ __forceinline__ real upper(int k) const { return c.t * V_B(V, k); }
    // The row sum of the column block, diag + lower + upper = |T| a_k - alpha_T d_k, from its two
    // non-negative parts: no cancellation (cyclic reduction keeps its accuracy by it).
    __device__ __forceinline__ real row_sum(int k) const { return c.t * V_A(V, k) - c.at * V_D(V, k); }
};

template <int G>
struct VGroup<ColOp, G> {
    static constexpr bool vec = V_VEC && sizeof(real) == 4 && G % 4 == 0 && NZ % 4 == 0;
    real amb[G], vb[G], vc[G], vd[G];
    // Levels k0 .. k0 + G - 1 (those at NZ or above are not read).
    __device__ __forceinline__ VGroup(const ColOp& op, int k0) {
        if constexpr (vec) {
#pragma unroll
            for (int t = 0; t < G; t += 4) {
                if (k0 + t >= NZ) break;
                real q[4];
                ldg4(op.V + k0 + t, q);
#pragma unroll
                for (int m = 0; m < 4; ++m) amb[t + m] = q[m];
                ldg4(op.V + NZ + k0 + t, q);
#pragma unroll
                for (int m = 0; m < 4; ++m) vb[t + m] = q[m];
                ldg4(op.V + 2 * NZ + k0 + t, q);
#pragma unroll
                for (int m = 0; m < 4; ++m) vc[t + m] = q[m];
                ldg4(op.V + 3 * NZ + k0 + t, q);
#pragma unroll
                for (int m = 0; m < 4; ++m) vd[t + m] = q[m];
            }
        }
    }
    template <class X>
    __device__ __forceinline__ real apply(const ColOp& op, int t, const X& x, idx_t o, const Layout& L, int k,
                                          real below, real mid, real above) const {
        if constexpr (vec) {
            return apply_at_v(x, op.c, amb[t], vb[t], vc[t], vd[t], below, mid, above);
        } else {
            return op.apply_n(x, o, L, k, below, mid, above);
        }
    }
};

// A row of a per-cell operator at a cell, for the fp32 builds: its entries d, e, w, n, s, u, b
// (diagonal; east, west, north, south, up, down) times the cell's value and its neighbours'
// values. Every product and FMA is explicit (as apply_at_v), so that a kernel that holds its
// entries in registers (the fused residual-restriction's 2 x 2 children, stencil.cu) gives the
// bits of CellOp::apply_n's residual.
__device__ __forceinline__ real cell_row_v(real d, real e, real w, real n, real s, real u, real b, real ve, real vw,
                                            real vn, real vs, real mid, real above, real below) {
    return fma(b, below, fma(u, above, fma(s, vs, fma(n, vn, fma(w, vw, fma(e, ve, mul_rn(d, mid)))))));
}

// Per-cell coefficients (docs/MODEL.md §15), stored in the field layout: the diagonal d and the
// east, north and up entries e, n, u of each row. When the operator is symmetric (sym = 1) a
// row's west, south and down entries are its neighbours' east, north and up entries (the halo
// slots i = -1 and j = -1 of e and n hold those of the block's first column and row) and w, s, b
// are not read; otherwise w, s, b hold them.
struct CellOp {
    const real* __restrict__ d;
    const real* __restrict__ e;
    const real* __restrict__ n;
    const real* __restrict__ u;
    const real* __restrict__ w;
    const real* __restrict__ s;
    const real* __restrict__ b;
    int sym;
    idx_t o0;  // the column's cell k = 0
    int sx;
    __device__ __forceinline__ real apply_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        const real west = sym ? e[o + x.wx] : w[o];
        const real south = sym ? n[o - L.plane] : s[o];
        const real down = sym ? (k > 0 ? u[o - L.sx] : real(0.0)) : b[o];
        if constexpr (sizeof(real) == 4) {
            return cell_row_v(d[o], e[o], west, n[o], south, u[o], down, x.e(), x.w(), x.n(), x.s(), mid, above,
                              below);
        } else {
            return d[o] * mid + e[o] * x.e() + west * x.w() + n[o] * x.n() + south * x.s() + u[o] * above +
                   down * below;
        }
    }
    __device__ __forceinline__ real seven_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return apply_n(x, o, L, k, below, mid, above);
    }
    __device__ __forceinline__ real cross_n(const Nb&, idx_t, int, real) const { return real(0.0); }
    __device__ __forceinline__ real apply(const real* __restrict__ x, idx_t o, const Layout& L, int k,
                                            real below, real mid, real above) const {
        return apply_n(level_nb(x, o, L, k), o, L, k, below, mid, above);
    }
    __device__ __forceinline__ real horizontal(const real* x, idx_t o, const Layout& L, int k) const {
        const Nb d = level_nb(x, o, L, k);
        const real west = sym ? e[o + d.wx] : w[o];
        const real south = sym ? n[o - L.plane] : s[o];
        return e[o] * x[o + d.ex] + west * x[o + d.wx] + n[o] * x[o + L.plane] + south * x[o - L.plane];
    }
    __device__ __forceinline__ real diag(int k) const { return d[o0 + (idx_t)k * sx]; }
    __device__ __forceinline__ real lower(int k) const {
        const idx_t o = o0 + (idx_t)k * sx;
        return sym ? (k > 0 ? u[o - sx] : real(0.0)) : b[o];
    }
    __device__ __forceinline__ real upper(int k) const { return u[o0 + (idx_t)k * sx]; }
    // The row sum of the column block (with the cancellation of its entries' sum: per-cell
    // entries do not keep the diagonal's parts).
    __device__ __forceinline__ real row_sum(int k) const {
        return diag(k) + (k > 0 ? lower(k) : real(0.0)) + (k + 1 < NZ ? upper(k) : real(0.0));
    }
};

// The kernel parameters of a level with per-cell coefficients, and its CellOp for column o0.
#define CELL_PARAMS                                                                                   \
    const real *__restrict__ cd, const real *__restrict__ ce, const real *__restrict__ cn,      \
        const real *__restrict__ cu, const real *__restrict__ cw, const real *__restrict__ cs, \
        const real *__restrict__ cb, int csym
#define CELL_OP(o0) (CellOp{cd, ce, cn, cu, cw, cs, cb, csym, (o0), L.sx})

// What an operator with cross terms (XColOp, XCellOp, SCellOp: `op` its 7-point part, and its
// cross_n) gives the kernel bodies besides its own terms: A x at a cell, loading the
// neighbourhood; and for the line relaxations the horizontal couplings with the cross terms,
// C's own part times the cell's current value, over the 7-point column block (orography's
// slant couplings, docs/MODEL.md section 23.3, and the sphere's diagonal ones in the four-colour
// sweeps of nine-point levels, the -DDIAGONALS build, section 16.1: a column's cross-term
// neighbours have other colours).
#define CROSS_OP_COMMON                                                                              \
    __device__ __forceinline__ real apply(const real* __restrict__ x, idx_t o, const Layout& L, int k, \
                                          real below, real mid, real above) const {                 \
        return apply_n(level_nb(x, o, L, k), o, L, k, below, mid, above);                             \
    }                                                                                                \
    __device__ __forceinline__ real horizontal(const real* x, idx_t o, const Layout& L, int k) const { \
        return op.horizontal(x, o, L, k) + cross_n(level_nb(x, o, L, k), o, k, x[o]);                 \
    }                                                                                                \
    __device__ __forceinline__ real diag(int k) const { return op.diag(k); }                        \
    __device__ __forceinline__ real lower(int k) const { return op.lower(k); }                      \
    __device__ __forceinline__ real upper(int k) const { return op.upper(k); }                      \
    __device__ __forceinline__ real row_sum(int k) const { return op.row_sum(k); }

// The sphere's cross terms (docs/MODEL.md §16.1): a column's couplings to its four diagonal
// neighbours (ne, nw, se, sw; 4 reals per column in `xc`, as the face coefficients) added to the
// operator (apply, residual, CG SpMV, and the relaxations of the -DDIAGONALS build). (Passing
// the diagonal values from the lanes beside by warp shuffles instead of loading them was
// measured slower, docs/PERFORMANCE.md.)
struct XColOp {
    ColOp op;
    real ne, nw, se, sw;
    real atx;  // alpha_T + ne + nw + se + sw
    // (C x) at (i, j, k).
    __device__ __forceinline__ real cross_n(const Nb& x, idx_t, int k, real mid) const {
        const real h = ne * (x.ne() - mid) + nw * (x.nw() - mid) + se * (x.se() - mid) + sw * (x.sw() - mid);
        return V_D(op.V, k) * h;
    }
    __device__ __forceinline__ real seven_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return op.apply_n(x, o, L, k, below, mid, above);
    }
    __device__ __forceinline__ real apply_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        // C folded into the 7-point row: the diagonal neighbours join the horizontal sum (one
        // product with d_k for both) and their row sum joins the diagonal (`atx`): four
        // multiply-adds per cell instead of four subtractions, four multiply-adds and a product.
        const Col& c = op.c;
        const real dk = V_D(op.V, k);
        const real diag = c.t * V_AMB(op.V, k) - atx * dk;
        const real horiz = c.ae * x.e() + c.aw * x.w() + c.an * x.n() + c.as * x.s() + ne * x.ne() +
                           nw * x.nw() + se * x.se() + sw * x.sw();
        return diag * mid + c.t * (V_B(op.V, k) * above + V_C(op.V, k) * below) + dk * horiz;
    }
    CROSS_OP_COMMON
};

// The cross terms of a level with per-cell coefficients: the four diagonal entries of every row
// in the field layout.
struct XCellOp {
    CellOp op;
    const real* __restrict__ ne;
    const real* __restrict__ nw;
    const real* __restrict__ se;
    const real* __restrict__ sw;
    __device__ __forceinline__ real cross_n(const Nb& x, idx_t o, int, real mid) const {
        return ne[o] * (x.ne() - mid) + nw[o] * (x.nw() - mid) + se[o] * (x.se() - mid) + sw[o] * (x.sw() - mid);
    }
    __device__ __forceinline__ real seven_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return op.apply_n(x, o, L, k, below, mid, above);
    }
    __device__ __forceinline__ real apply_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return seven_n(x, o, L, k, below, mid, above) + cross_n(x, o, k, mid);
    }
    CROSS_OP_COMMON
};

// Orography's slant couplings (docs/MODEL.md §23.3) on a level with per-cell coefficients: the
// dual elements' weights of every cell's east and north face (`we`, `wn`, in the field layout;
// the halo slots i = -1 and j = -1 hold the block's west and south faces; zero above the top
// cell), which couple a cell to its lateral neighbours' cells one level above and below.
// Called with a neighbourhood in global memory (every kernel that applies the whole operator).
struct SCellOp {
    CellOp op;
    const real* __restrict__ we;
    const real* __restrict__ wn;
    __device__ __forceinline__ real cross_n(const Nb& x, idx_t o, int k, real mid) const {
        const idx_t sx = op.sx, dy = x.dy;
        const int ex = x.ex, wx = x.wx;
        const real* p = x.p;
        real h = real(0.0);
        if (k + 1 < NZ) {
            h += we[o + wx] * (p[sx + wx] - mid) - we[o] * (p[sx + ex] - mid) + wn[o - dy] * (p[sx - dy] - mid) -
                 wn[o] * (p[sx + dy] - mid);
        }
        if (k > 0) {
            h += we[o - sx] * (p[ex - sx] - mid) - we[o - sx + wx] * (p[-sx + wx] - mid) +
                 wn[o - sx] * (p[dy - sx] - mid) - wn[o - sx - dy] * (p[-sx - dy] - mid);
        }
        return h;
    }
    __device__ __forceinline__ real seven_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return op.apply_n(x, o, L, k, below, mid, above);
    }
    __device__ __forceinline__ real apply_n(const Nb& x, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return seven_n(x, o, L, k, below, mid, above) + cross_n(x, o, k, mid);
    }
    CROSS_OP_COMMON
};

// Orography on the sphere (docs/MODEL.md section 23.6): the nine-point operator's diagonal
// entries and the slant weights together.
struct XSCellOp {
    CellOp op;
    XCellOp x;
    SCellOp sl;
    __device__ __forceinline__ real cross_n(const Nb& nb, idx_t o, int k, real mid) const {
        return x.cross_n(nb, o, k, mid) + sl.cross_n(nb, o, k, mid);
    }
    __device__ __forceinline__ real seven_n(const Nb& nb, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return op.apply_n(nb, o, L, k, below, mid, above);
    }
    __device__ __forceinline__ real apply_n(const Nb& nb, idx_t o, const Layout& L, int k, real below, real mid,
                                              real above) const {
        return seven_n(nb, o, L, k, below, mid, above) + cross_n(nb, o, k, mid);
    }
    CROSS_OP_COMMON
};

// Orography's slant couplings (has_cross = 2; with the sphere's diagonal ones 3) are compiled
// only into the build for levels that have them (-DSLANT, chosen by the host per level:
// kernels.rs, `Build::slant`): in the other builds the branch costs the per-cell kernels
// 1.6-1.9 % (measured on one H200, docs/results/performance-log.md), and those builds are never
// given such a level.
#ifdef SLANT
#define SLANT_CASE(base, call)                                                            \
    else if (has_cross == 2) {                                                            \
        const SCellOp op{base, xwe, xwn};                                                 \
        call;                                                                             \
    }                                                                                     \
    else if (has_cross == 3) {                                                            \
        const XSCellOp op{base, XCellOp{base, xne, xnw, xse, xsw}, SCellOp{base, xwe, xwn}}; \
        call;                                                                             \
    }
#else
#define SLANT_CASE(base, call)
#endif

// The line relaxations of the nine-point levels (the sphere's diagonal couplings, has_cross = 1)
// are compiled only into their build (-DDIAGONALS, kernels.rs `Build::diagonals`): the branch
// cost the 7-point Smooth 15 % when every build carried it (docs/MODEL.md section 16.1).
#ifdef DIAGONALS
#define XCELL_CASE(base, call)                              \
    else if (has_cross == 1) {                              \
        const XCellOp op{base, xne, xnw, xse, xsw};         \
        call;                                               \
    }
// Runs `call` with `op` column (i, j)'s operator for a line relaxation (WITH_CROSS).
#define WITH_RELAX_COL(call) WITH_CROSS(call)
#else
#define XCELL_CASE(base, call)
#define WITH_RELAX_COL(call)                                \
    do {                                                    \
        const ColOp op{load_col(cols, L, i, j), V};          \
        call;                                               \
    } while (0)
#endif

// Runs `call` with `op` the column's operator for a line relaxation, with orography's slant
// couplings where the level has them (has_cross = 2, in the -DSLANT build) and the sphere's
// diagonal couplings (has_cross = 1, in the -DDIAGONALS build).
#define WITH_CELL_SLANT(o0, call)                 \
    do {                                          \
        const CellOp base = CELL_OP(o0);          \
        if (false) {                              \
        }                                         \
        XCELL_CASE(base, call)                    \
        SLANT_CASE(base, call)                    \
        else {                                    \
            const CellOp& op = base;              \
            call;                                 \
        }                                         \
    } while (0)

// The kernel parameters of the cross terms (after the operator's): `has_cross` = 0 when the
// level has none (the arrays are then not read); on a level with per-cell coefficients 1 for
// the sphere's diagonal entries (xne, xnw, xse, xsw), 2 for orography's slant weights (xwe the
// east faces', xwn the north faces'), 3 for both (orography on the sphere).
#define CROSS_PARAMS const real *__restrict__ xc, int has_cross
#define CELL_CROSS_PARAMS                                                                    \
    const real *__restrict__ xne, const real *__restrict__ xnw, const real *__restrict__ xse, \
        const real *__restrict__ xsw, const real *__restrict__ xwe, const real *__restrict__ xwn, int has_cross

// Runs `call` with `op` the column (i, j)'s operator, with its cross terms if it has any.
#define WITH_CROSS(call)                                                                  \
    do {                                                                                  \
        const ColOp base{load_col(cols, L, i, j), V};                                      \
        if (has_cross) {                                                                  \
            const real* c4 = xc + 4 * ((idx_t)j * L.nx + i);                               \
            const real xne = __ldg(c4), xnw = __ldg(c4 + 1), xse = __ldg(c4 + 2), xsw = __ldg(c4 + 3); \
            const XColOp op{base, xne, xnw, xse, xsw, base.c.at + ((xne + xnw) + (xse + xsw))}; \
            call;                                                                         \
        } else {                                                                          \
            const ColOp& op = base;                                                       \
            call;                                                                         \
        }                                                                                 \
    } while (0)
#define WITH_CELL_CROSS(o0, call)                      \
    do {                                               \
        const CellOp base = CELL_OP(o0);               \
        if (has_cross == 1) {                          \
            const XCellOp op{base, xne, xnw, xse, xsw}; \
            call;                                      \
        }                                              \
        SLANT_CASE(base, call)                         \
        else {                                         \
            const CellOp& op = base;                   \
            call;                                      \
        }                                              \
    } while (0)

// (A x) at (i, j, k) of any column operator, loading the vertical neighbours itself.
template <class Op>
__device__ __forceinline__ real op_apply_load(const Op& op, const real* __restrict__ x, idx_t o,
                                                const Layout& L, int k) {
    real below = k > 0 ? x[o - L.sx] : real(0.0);
    real above = k + 1 < NZ ? x[o + L.sx] : real(0.0);
    return op.apply(x, o, L, k, below, x[o], above);
}

// The levels of a column whose forward-sweep values the line kernels keep in shared memory
// (-DTHOMAS_SMEM=S: the top S levels, rounded down to whole checkpoint chunks; dynamic shared
// memory of S values per thread of the block, the launch's shared_mem_bytes,
// strata_cuda::kernels::thomas_smem_bytes): levels [THOMAS_KS, NZ). Without it, none.
#ifdef THOMAS_SMEM
#define THOMAS_KS ((NZ - (THOMAS_SMEM < NZ ? THOMAS_SMEM : NZ) + KCH - 1) / KCH * KCH)
#else
#define THOMAS_KS NZ
#endif

// Thomas algorithm for the column block A_T of one column, with checkpoints: the forward sweep
// keeps only (c'_k, z_k) at every KCH-th level; the backward sweep recomputes each chunk from its
// checkpoint (calling rhs_again(k)) and back-substitutes it, passing each final z_k to out(k, z).
// This moves no intermediate through memory (the paper's Smooth stores c' and z: 4 values more).
// On the levels from THOMAS_KS up the forward sweep's z_k are kept in shared memory instead and
// the backward sweep reads them there (recomputing only c'_k, which needs no memory), so it does
// not read those levels' inputs again; slot k of thread t is zs[(k - THOMAS_KS) * threads + t]
// (consecutive threads, consecutive words), each thread's own: no barrier.
template <class Op, class Fwd, class Again, class Out>
__device__ __forceinline__ void thomas(const Op& op, Fwd rhs_fwd, Again rhs_again, Out out) {
#ifdef THOMAS_SMEM
    extern __shared__ unsigned char thomas_smem[];
    real* zs = reinterpret_cast<real*>(thomas_smem);
    const int nt = blockDim.x * blockDim.y;
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
#endif
    real ck_c[NCH], ck_z[NCH];
    real cp = real(0.0), zp = real(0.0);
#pragma unroll FWD_UNROLL
    for (int k = 0; k < NZ; ++k) {
        if (k % KCH == 0) { ck_c[k / KCH] = cp; ck_z[k / KCH] = zp; }
        const real lower = op.lower(k);
        const real inv = real(1.0) / (op.diag(k) - lower * cp);
        cp = op.upper(k) * inv;
        zp = (rhs_fwd(k) - lower * zp) * inv;
#ifdef THOMAS_SMEM
        if (k >= THOMAS_KS) zs[(k - THOMAS_KS) * nt + t] = zp;
#endif
    }
    real next = real(0.0);  // c'_{nz-1} = 0 (Neumann top), so z_{nz-1} needs no value above it
    for (int ch = NCH - 1; ch >= 0; --ch) {
        const int k0 = ch * KCH;
        real cc[KCH], zz[KCH];
        real cpp = ck_c[ch], zpp = ck_z[ch];
#ifdef THOMAS_SMEM
        // Two loops, the chunk's kind decided once: one loop with the choice inside it measured
        // 5 % slower for mixed mg at 2816² (docs/PERFORMANCE.md).
        if (k0 >= THOMAS_KS) {
#pragma unroll
            for (int s = 0; s < KCH; ++s) {
                const int k = k0 + s;
                if (k < NZ) {
                    const real lower = op.lower(k);
                    const real inv = real(1.0) / (op.diag(k) - lower * cpp);
                    cpp = op.upper(k) * inv;
                    cc[s] = cpp;
                    zz[s] = zs[(k - THOMAS_KS) * nt + t];
                }
            }
        } else
#endif
        {
#pragma unroll
            for (int s = 0; s < KCH; ++s) {
                const int k = k0 + s;
                if (k < NZ) {
                    const real lower = op.lower(k);
                    const real inv = real(1.0) / (op.diag(k) - lower * cpp);
                    cpp = op.upper(k) * inv;
                    zpp = (rhs_again(k) - lower * zpp) * inv;
                    cc[s] = cpp;
                    zz[s] = zpp;
                }
            }
        }
#pragma unroll
        for (int s = KCH - 1; s >= 0; --s) {
            const int k = k0 + s;
            if (k < NZ) {
                next = zz[s] - cc[s] * next;
                out(k, next);
            }
        }
    }
}

// The column's solve by two threads at once (the "burn at both ends", or twisted, factorisation),
// for levels with too few columns to fill the GPU with one thread per column: the thread with
// bottom = 0 eliminates the top half [0, NZ/2) downwards as thomas() does, the one with bottom = 1
// the bottom half upwards from NZ - 1 (its "behind" coupling is the row's upper entry, its "ahead"
// the lower one), with the same checkpoints. Each ends with a row x_k + e x_other = z coupling its
// last level to the other's last level; one exchange (lanes l and l ^ 16 of `mask`, TWIN_COLUMN)
// and a 2 x 2 solve give both, and each substitutes back through its own half. The same divisions
// and loads as thomas(), in two chains of half the length; no shared memory.
template <class Op, class Fwd, class Again, class Out>
__device__ __forceinline__ void thomas_twin(const Op& op, int bottom, unsigned mask, Fwd rhs_fwd, Again rhs_again,
                                            Out out) {
    constexpr int T = NZ / 2, B = NZ - T, NC = (B + KCH - 1) / KCH;
    const int count = bottom ? B : T;
    auto level = [&](int st) { return bottom ? NZ - 1 - st : st; };
    real ck_e[NC], ck_z[NC];
    real ep = real(0.0), zp = real(0.0);
#pragma unroll FWD_UNROLL
    for (int st = 0; st < B; ++st) {
        if (st % KCH == 0) { ck_e[st / KCH] = ep; ck_z[st / KCH] = zp; }
        if (st < count) {
            const int k = level(st);
            const real lo = op.lower(k), up = op.upper(k);
            const real behind = bottom ? up : lo;
            const real inv = real(1.0) / (op.diag(k) - behind * ep);
            ep = (bottom ? lo : up) * inv;
            zp = (rhs_fwd(k) - behind * zp) * inv;
        }
    }
    // The meeting rows: x_me + ep x_other = zp here, x_other + eo x_me = zo in the other thread.
    const real eo = __shfl_xor_sync(mask, ep, 16);
    const real zo = __shfl_xor_sync(mask, zp, 16);
    real next = (zp - ep * zo) / (real(1.0) - ep * eo);
    for (int ch = NC - 1; ch >= 0; --ch) {
        const int s0 = ch * KCH;
        real ee[KCH], zz[KCH];
        real epp = ck_e[ch], zpp = ck_z[ch];
        // The chunk's rows again, but the half's last (its value is the meeting's).
#pragma unroll
        for (int s = 0; s < KCH; ++s) {
            const int st = s0 + s;
            if (st + 1 < count) {
                const int k = level(st);
                const real lo = op.lower(k), up = op.upper(k);
                const real behind = bottom ? up : lo;
                const real inv = real(1.0) / (op.diag(k) - behind * epp);
                epp = (bottom ? lo : up) * inv;
                zpp = (rhs_again(k) - behind * zpp) * inv;
                ee[s] = epp;
                zz[s] = zpp;
            }
        }
#pragma unroll
        for (int s = KCH - 1; s >= 0; --s) {
            const int st = s0 + s;
            if (st < count) {
                if (st + 1 < count) next = zz[s] - ee[s] * next;
                out(level(st), next);
            }
        }
    }
}

// The over-relaxed value of a column's cell, (1 - w) old + w z, in one fixed order of roundings
// (w z rounded, then one fused multiply-add) whatever the kernel around it: the compiler would
// otherwise contract the expression one way in one kernel and the other way in another, and the
// fused half-sweep with its correction (smooth_color_correct_split) would not give the half-sweep's
// values bit for bit.
__device__ __forceinline__ real relaxed(real old, real w, real z) {
    return fma(real(1.0) - w, old, w * z);
}

// The column's solve by SPLIT_P threads, each holding SPLIT_M consecutive levels in registers
// (the partitioned, or Thomas-PCR hybrid, solve of Laszlo, Giles and Appleyard 2016, with the
// reduced system solved by one warp): thread s of the column (threadIdx.y) takes the levels
// [s M, s M + M). Its forward sweep eliminates the segment's lower entries with the segment's
// first unknown x_0 kept as a parameter (x_i + c^_i x_{i+1} + a^_i x_0 = d^_i, i >= 1), its
// backward sweep the upper ones (x_i = d~_i - a~_i x_0 - c~_i x_{M-1}, 1 <= i <= M - 2), which
// leaves two rows per segment coupling only the segments' end unknowns: first
// a_0 x_prev + (b_0 - c_0 a~_1) x_0 - c_0 c~_1 x_{M-1} = d_0 - c_0 d~_1, last
// a^_{M-1} x_0 + x_{M-1} + c^_{M-1} x_next = d^_{M-1}: a tridiagonal system of 2 P rows per
// column, in shared memory, which warp 0 (one lane per column) solves by Thomas; then each thread
// substitutes its interior. The right-hand side of every level is read once (rhs_fwd, before any
// out()), so the column's values are read before any is written, as thomas() does. Every thread
// of the block reaches the barriers: `active` says whether the thread's column exists (an inactive
// thread calls neither rhs_fwd nor out). Blocks are 32 columns wide (threadIdx.x) and SPLIT_P
// segments high; NZ a multiple of SPLIT_M (strata_cuda::kernels::split_segments).
#ifndef SPLIT_M
#define SPLIT_M 16
#endif
#define SPLIT_P (NZ % SPLIT_M == 0 ? NZ / SPLIT_M : 1)
#define SPLIT_BOUNDS __launch_bounds__(32 * SPLIT_P)
// Minimum resident blocks per SM asked of the compiler for the model problem's split line solve
// (line_solve_split_f64): 3 in the fp32 builds (at most 85 registers where it took 104: 37.5 %
// occupancy instead of 25 %; its Thomas chains' latency bounds it, and the level-0 line solve
// of 2816^2 x 128 went 3.37 -> 2.57 ms on an H200, 2026-11-28, docs/results/performance-log.md;
// the half-sweeps, bounded alike, gained nothing and keep SPLIT_BOUNDS), none in the fp64 builds
// (not measured). 0: no bound.
#define STRATA_IS_FLOAT_float 1
#define STRATA_IS_FLOAT_double 0
#define STRATA_IS_FLOAT_(t) STRATA_IS_FLOAT_##t
#define STRATA_IS_FLOAT(t) STRATA_IS_FLOAT_(t)
#ifndef SOLVE_SPLIT_MINB
#if STRATA_IS_FLOAT(REAL)
#define SOLVE_SPLIT_MINB 3
#else
#define SOLVE_SPLIT_MINB 0
#endif
#endif
#if SOLVE_SPLIT_MINB > 0
#define SOLVE_SPLIT_BOUNDS __launch_bounds__(32 * SPLIT_P, SOLVE_SPLIT_MINB)
#else
#define SOLVE_SPLIT_BOUNDS SPLIT_BOUNDS
#endif
// Blocks of 32 SPLIT_P threads that make at least 512 threads per SM (at most 128 registers a
// thread): the launch bound of the split kernels bounded below (CORRECT_MINB, DIAG_MINB).
#define SPLIT_MINB_512 (16 / SPLIT_P > 0 ? 16 / SPLIT_P : 1)
// The per-cell fused last half-sweep with its correction (smooth_color_correct_split_cells,
// lines.cu): at least 512 threads per SM asked of the compiler (CORRECT_MINB blocks of 32 SPLIT_P
// threads: at most 128 registers), the half-sweeps' occupancy. Without it the kernel took 158
// registers (ptxas, the fp32 narrow build of nz = 128, 2026-11-29), one block of 256 threads per
// SM where the half-sweeps run two, and was slower than the half-sweep and axpy_from_f32 (5.62
// against 5.29 ms at 2048^2 x 128, one H200); with it 128 registers, no stack frame and 4.23 ms
// (one H200, 2026-11-29). The model problem's form holds 128 without a bound. fp32 builds only
// (the kernel corrects an fp64 u from an fp32 level; bounded alike, the fp64 build's spills 296
// bytes). 0: no bound.
#ifndef CORRECT_MINB
#if STRATA_IS_FLOAT(REAL)
#define CORRECT_MINB SPLIT_MINB_512
#else
#define CORRECT_MINB 0
#endif
#endif
#if CORRECT_MINB > 0
#define CORRECT_SPLIT_BOUNDS __launch_bounds__(32 * SPLIT_P, CORRECT_MINB)
#else
#define CORRECT_SPLIT_BOUNDS SPLIT_BOUNDS
#endif
// The second half-sweep of red-black's step from zero (smooth_color_after_split, lines.cu): at
// least AFTER_MINB blocks of 32 SPLIT_P threads per SM asked of the compiler where it is set
// (an experiment's option, -DAFTER_MINB=3: at most 85 registers); 0, the default: SPLIT_BOUNDS.
#ifndef AFTER_MINB
#define AFTER_MINB 0
#endif
#if AFTER_MINB > 0
#define AFTER_SPLIT_BOUNDS __launch_bounds__(32 * SPLIT_P, AFTER_MINB)
#else
#define AFTER_SPLIT_BOUNDS SPLIT_BOUNDS
#endif
// The split line relaxations of the model problem's columns in the nine-point build (-DDIAGONALS:
// smooth_color_split, the sphere's quarter sweeps, and smooth_split, lines.cu): at least 512
// threads per SM asked of the compiler (DIAG_MINB blocks of 32 SPLIT_P threads). Without a bound
// they hold 161 and 150 registers there (ptxas, the fp32 build with 32-bit offsets at nz = 128,
// 2026-11-29: one block of 256 threads per SM, where the five-point build's half-sweep holds 128
// and runs two); the bound (2 blocks there) caps them at 128 with no stack frame, and took the
// sphere's level-0 quarter sweep 2.07 -> 1.54 ms and its mg cycle 43.7 -> 39.4-39.8 ms at
// 6 x 1024^2 x 128 (one H200, 2026-11-29). fp32 builds only: the fp64 build bounded alike spills
// 136-304 bytes (not timed). 0: no bound.
#ifndef DIAG_MINB
#if STRATA_IS_FLOAT(REAL)
#define DIAG_MINB SPLIT_MINB_512
#else
#define DIAG_MINB 0
#endif
#endif
#if defined(DIAGONALS) && DIAG_MINB > 0
#define RELAX_SPLIT_BOUNDS __launch_bounds__(32 * SPLIT_P, DIAG_MINB)
#else
#define RELAX_SPLIT_BOUNDS SPLIT_BOUNDS
#endif
// The reduced rows' shared memory: one object per kernel (a template's static would be one per
// instantiation, and a relaxation kernel instantiates the solve once per operator form).
__device__ __forceinline__ real (*split_rows())[2 * SPLIT_P][32] {
    __shared__ real rows[4][2 * SPLIT_P][32];
    return rows;
}
template <class Op, class Fwd, class Out>
__device__ __forceinline__ void thomas_split(const Op& op, bool active, Fwd rhs_fwd, Out out) {
#if NZ % SPLIT_M == 0 && NZ / SPLIT_M >= 2 && SPLIT_M >= 3
    constexpr int M = SPLIT_M, P = SPLIT_P, R = 2 * P;
    real(*const rows)[R][32] = split_rows();
    real(&ra)[R][32] = rows[0];
    real(&rb)[R][32] = rows[1];
    real(&rc)[R][32] = rows[2];
    real(&rd)[R][32] = rows[3];
    if (blockDim.x != 32 || blockDim.y != P) __trap();  // the launch must match the build
    const int s = threadIdx.y, lane = threadIdx.x, k0 = s * M;
    real ah[M], ch[M], dh[M];
    real fa = real(0.0), fb = real(1.0), fc = real(0.0), fd = real(0.0);  // the first reduced row
    real la = real(0.0), lc = real(0.0), ld = real(0.0);                    // the last one (diag 1)
    if (active) {
#pragma unroll
        for (int i = 0; i < M; ++i) dh[i] = rhs_fwd(k0 + i);
        {
            const real inv = real(1.0) / op.diag(k0 + 1);
            ah[1] = op.lower(k0 + 1) * inv;
            ch[1] = op.upper(k0 + 1) * inv;
            dh[1] *= inv;
        }
#pragma unroll
        for (int i = 2; i < M; ++i) {
            const int k = k0 + i;
            const real lo = op.lower(k);
            const real inv = real(1.0) / (op.diag(k) - lo * ch[i - 1]);
            dh[i] = (dh[i] - lo * dh[i - 1]) * inv;
            ah[i] = -lo * ah[i - 1] * inv;
            ch[i] = op.upper(k) * inv;
        }
        la = ah[M - 1];
        lc = s + 1 < P ? ch[M - 1] : real(0.0);
        ld = dh[M - 1];
        // The backward sweep, in place: (a^, c^, d^) become (a~, c~, d~) on [1, M - 2].
#pragma unroll
        for (int i = M - 3; i >= 1; --i) {
            dh[i] -= ch[i] * dh[i + 1];
            ah[i] -= ch[i] * ah[i + 1];
            ch[i] = -ch[i] * ch[i + 1];
        }
        const real c0 = op.upper(k0);
        fa = s > 0 ? op.lower(k0) : real(0.0);
        fb = op.diag(k0) - c0 * ah[1];
        fc = -c0 * ch[1];
        fd = dh[0] - c0 * dh[1];
    }
    ra[2 * s][lane] = fa; rb[2 * s][lane] = fb; rc[2 * s][lane] = fc; rd[2 * s][lane] = fd;
    ra[2 * s + 1][lane] = la; rb[2 * s + 1][lane] = real(1.0); rc[2 * s + 1][lane] = lc;
    rd[2 * s + 1][lane] = ld;
    __syncthreads();
    if (s == 0) {
        // Thomas on the reduced rows of column `lane` (c' kept in rc, z in rd; x into rd).
        real cp = real(0.0), zp = real(0.0);
#pragma unroll
        for (int q = 0; q < R; ++q) {
            const real lo = ra[q][lane];
            const real inv = real(1.0) / (rb[q][lane] - lo * cp);
            cp = rc[q][lane] * inv;
            zp = (rd[q][lane] - lo * zp) * inv;
            rc[q][lane] = cp;
            rd[q][lane] = zp;
        }
        real next = zp;
#pragma unroll
        for (int q = R - 2; q >= 0; --q) {
            next = rd[q][lane] - rc[q][lane] * next;
            rd[q][lane] = next;
        }
    }
    __syncthreads();
    if (active) {
        const real x0 = rd[2 * s][lane], xl = rd[2 * s + 1][lane];
        out(k0, x0);
#pragma unroll
        for (int i = 1; i + 1 < M; ++i) out(k0 + i, dh[i] - ah[i] * x0 - ch[i] * xl);
        out(k0 + M - 1, xl);
    }
#else
    __trap();  // not launched for this NZ (strata_cuda::kernels::split_segments)
#endif
}

// How a line kernel's body solves its column: by one thread (Whole: thomas()) or two
// (Twin: thomas_twin(), with the thread's half and the warp's mask of TWIN_COLUMN), or by
// SPLIT_P threads (Split: thomas_split(), SPLIT_PAIR_J).
struct Whole {
    template <class Op, class Fwd, class Again, class Out>
    __device__ __forceinline__ void operator()(const Op& op, Fwd fwd, Again again, Out out) const {
        thomas(op, fwd, again, out);
    }
};
struct Twin {
    int bottom;
    unsigned mask;
    template <class Op, class Fwd, class Again, class Out>
    __device__ __forceinline__ void operator()(const Op& op, Fwd fwd, Again again, Out out) const {
        thomas_twin(op, bottom, mask, fwd, again, out);
    }
};
struct Split {
    bool active;
    template <class Op, class Fwd, class Again, class Out>
    __device__ __forceinline__ void operator()(const Op& op, Fwd fwd, Again, Out out) const {
        thomas_split(op, active, fwd, out);
    }
};

// SPLIT_P threads per column (thomas_split): blocks of 32 x SPLIT_P threads, launch row
// blockIdx.y; lane threadIdx.x of block x takes the row's x position 32 blockIdx.x + lane, of
// `ncols` (which may depend on j, set first). Every thread stays (the barriers): `active` says
// whether its column exists; an inactive thread's x and j are clamped to 0 so that what it
// loads lies in the layout.
#define SPLIT_PAIR_J(ncols, row)                                   \
    const int j_ = (row);                                          \
    const int x_ = blockIdx.x * 32 + threadIdx.x;                  \
    const bool active = j_ < L.ny && x_ < (ncols);                 \
    const int j = active ? j_ : 0;                                 \
    const int x = active ? x_ : 0;

// Two threads per column (thomas_twin): the launch has 2 x (columns in x) threads in x, in blocks a
// multiple of 32 wide; warp w of a row takes the x positions [16 w, 16 w + 16), lane l the position
// 16 w + (l & 15) and half l >> 4. `ncols` is the row's count of x positions (it may depend on j,
// which is set first). Pairs beyond it leave together; `mask` holds the pairs that stay, a prefix of
// each half-warp. TWIN_PAIR is the same without leaving (kernels whose every thread must reach a
// block reduction): `active` says whether the thread's pair has a column.
// The colours of the line relaxations' sweeps (`parity`, set by the host for the block):
// 0 and 1 the checkerboard's two halves (columns with (i + j + parity) even); 2 + q a quarter
// (the four-colour sweeps of nine-point levels): columns with i = q & 1 and j = q >> 1 (mod 2).
// Launch row y is row colour_row(y, parity); a row's first column of the colour is
// colour_first(j, parity), the next ones every second.
__device__ __forceinline__ int colour_row(int y, int parity) {
    return parity < 2 ? y : 2 * y + ((parity - 2) >> 1);
}
__device__ __forceinline__ int colour_first(int j, int parity) {
    return parity < 2 ? ((j + parity) & 1) : ((parity - 2) & 1);
}

#define TWIN_PAIR(ncols) TWIN_PAIR_J(ncols, (int)(blockIdx.y * blockDim.y + threadIdx.y))
#define TWIN_PAIR_J(ncols, row)                                                     \
    const int lane = threadIdx.x & 31, bottom = lane >> 4;                          \
    const int j = (row);                                                            \
    const int x0 = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * 16;             \
    const int live = j < L.ny ? min(16, (ncols) - x0) : 0;                          \
    const bool active = (lane & 15) < live;                                         \
    const int x = x0 + (lane & 15);                                                 \
    const unsigned mask = (live >= 16 ? 0xffffu : ((1u << live) - 1u)) * 0x10001u;
#define TWIN_COLUMN(ncols) \
    TWIN_PAIR(ncols)       \
    if (!active) return;

// A coefficient given as a value, or with a slot (>= 0) of the solver's scalars in device memory
// (strata::backend::ScalarKernels), as that value times the slot's: the Krylov kernels take α and
// β this way, so that no scalar has to reach the host between them.
__device__ __forceinline__ double coef(double value, const double* __restrict__ sc, int slot) {
    return slot >= 0 ? value * sc[slot] : value;
}

// SLOT_COLUMNS (the default; -DSLOT_COLUMNS=0 turns it off): in the colour-split rows, thread t
// of a row takes the column in slot t of its group of 64 (i = 64 g + 2 l + h for t = 64 g + 32 h
// + l), so that a warp's loads and stores are one 128-byte run of one colour instead of two
// 64-byte runs in the two halves of a group (2026-11-28, one H200: the level-0 prolongation 4.35
// -> 2.88 ms, mg -5.6 % per cycle at 2816^2 x 128). Only where the launch covers whole groups
// (blocks at least 64 wide); narrower blocks keep i = t.
#ifndef SLOT_COLUMNS
#define SLOT_COLUMNS 1
#endif
#if defined(XSPLIT) && SLOT_COLUMNS
#define THREAD_COLUMN                                                                      \
    const int t_col = blockIdx.x * blockDim.x + threadIdx.x;                               \
    const int i = blockDim.x >= 64 ? (t_col & ~63) + 2 * (t_col & 31) + ((t_col >> 5) & 1) : t_col; \
    const int j = blockIdx.y * blockDim.y + threadIdx.y;                                   \
    const bool active = i < L.nx && j < L.ny;
#else
#define THREAD_COLUMN                                    \
    const int i = blockIdx.x * blockDim.x + threadIdx.x; \
    const int j = blockIdx.y * blockDim.y + threadIdx.y; \
    const bool active = i < L.nx && j < L.ny;
#endif

// The levels [k0, k1) of the thread's column: the whole column, or on a level with few columns
// one of gridDim.z segments of it (the launch's grid z), so that more threads share the column's
// chain of loads.
#define SEGMENT                                             \
    const int seg_len = (NZ + gridDim.z - 1) / gridDim.z;   \
    const int k0 = blockIdx.z * seg_len;                    \
    const int k1 = min(NZ, k0 + seg_len);

