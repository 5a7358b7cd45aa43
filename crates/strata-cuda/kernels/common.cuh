// strata CUDA kernels: common definitions. Compiled by NVRTC at run time with -DNZ=<levels per
// column> (every level of a hierarchy shares nz), once per process and nz.
//
// Field layout (docs/MODEL.md §10, the paper's x-contiguous padded map): element (i, j, k) of a block,
// i in [-1, nx], j in [-1, ny] (halo of width one), k in [0, nz), lives at
//     (j + 1) * plane + k * sx + XOFF + i,        plane = nz * sx.
// XOFF = 32 and sx a multiple of 32 keep every interior row 256-byte aligned; the padding is never
// read or written. One thread per column (i, j); consecutive threads are consecutive in x, so every
// access is coalesced. Indices are 64-bit.

#ifndef NZ
#error "NZ must be defined"
#endif
#if NZ < 2
#error "NZ must be at least 2"
#endif

typedef long long idx_t;

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
    idx_t plane;
    int nx, ny, nz, sx;
};

// Column coefficients: 6 doubles per column (area, aE, aW, aN, aS, aT), row-major j * nx + i.
struct Col {
    double t, ae, aw, an, as, at;
};

__device__ __forceinline__ idx_t at_(const Layout& L, int i, int j, int k) {
    return (idx_t)(j + 1) * L.plane + (idx_t)k * L.sx + XOFF + i;
}

__device__ __forceinline__ Col load_col(const double* __restrict__ cols, const Layout& L, int i, int j) {
    const double* c = cols + 6 * ((idx_t)j * L.nx + i);
    Col r;
    r.t = __ldg(c); r.ae = __ldg(c + 1); r.aw = __ldg(c + 2);
    r.an = __ldg(c + 3); r.as = __ldg(c + 4); r.at = __ldg(c + 5);
    return r;
}

// Vertical vectors of a level: amb = a - b - c, b, c, d, each NZ long, packed.
#define V_AMB(V, k) __ldg((V) + (k))
#define V_B(V, k) __ldg((V) + NZ + (k))
#define V_C(V, k) __ldg((V) + 2 * NZ + (k))
#define V_D(V, k) __ldg((V) + 3 * NZ + (k))

// (A x) at (i, j, k) given the column's own values below, at and above k (zero outside).
__device__ __forceinline__ double apply_at(const double* __restrict__ x, idx_t o, const Layout& L,
                                          const Col& c, const double* __restrict__ V, int k,
                                          double below, double mid, double above) {
    double diag = c.t * V_AMB(V, k) - c.at * V_D(V, k);
    double horiz = c.ae * x[o + 1] + c.aw * x[o - 1] + c.an * x[o + L.plane] + c.as * x[o - L.plane];
    return diag * mid + c.t * (V_B(V, k) * above + V_C(V, k) * below) + V_D(V, k) * horiz;
}

// (A x) at (i, j, k), loading the vertical neighbours itself.
__device__ __forceinline__ double apply_load(const double* __restrict__ x, idx_t o, const Layout& L,
                                            const Col& c, const double* __restrict__ V, int k) {
    double below = k > 0 ? x[o - L.sx] : 0.0;
    double above = k + 1 < NZ ? x[o + L.sx] : 0.0;
    return apply_at(x, o, L, c, V, k, below, x[o], above);
}

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
        if (lane == 0) partials[(idx_t)(blockIdx.y * gridDim.x + blockIdx.x) * ncomp + comp] = v;
    }
}

// Thomas algorithm for the column block A_T of one column, with checkpoints: the forward sweep
// keeps only (c'_k, z_k) at every KCH-th level; the backward sweep recomputes each chunk from its
// checkpoint (calling rhs_again(k)) and back-substitutes it, passing each final z_k to out(k, z).
// This moves no intermediate through memory (the paper's Smooth stores c' and z: 4 values more).
template <class Fwd, class Again, class Out>
__device__ __forceinline__ void thomas(const double* __restrict__ V, double t, double at,
                                      Fwd rhs_fwd, Again rhs_again, Out out) {
    double ck_c[NCH], ck_z[NCH];
    double cp = 0.0, zp = 0.0;
#pragma unroll FWD_UNROLL
    for (int k = 0; k < NZ; ++k) {
        if (k % KCH == 0) { ck_c[k / KCH] = cp; ck_z[k / KCH] = zp; }
        const double lower = t * V_C(V, k);
        const double inv = 1.0 / (t * V_AMB(V, k) - at * V_D(V, k) - lower * cp);
        cp = t * V_B(V, k) * inv;
        zp = (rhs_fwd(k) - lower * zp) * inv;
    }
    double next = 0.0;  // c'_{nz-1} = 0 (Neumann top), so z_{nz-1} needs no value above it
    for (int ch = NCH - 1; ch >= 0; --ch) {
        const int k0 = ch * KCH;
        double cc[KCH], zz[KCH];
        double cpp = ck_c[ch], zpp = ck_z[ch];
#pragma unroll
        for (int s = 0; s < KCH; ++s) {
            const int k = k0 + s;
            if (k < NZ) {
                const double lower = t * V_C(V, k);
                const double inv = 1.0 / (t * V_AMB(V, k) - at * V_D(V, k) - lower * cpp);
                cpp = t * V_B(V, k) * inv;
                zpp = (rhs_again(k) - lower * zpp) * inv;
                cc[s] = cpp;
                zz[s] = zpp;
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

#define THREAD_COLUMN                                    \
    const int i = blockIdx.x * blockDim.x + threadIdx.x; \
    const int j = blockIdx.y * blockDim.y + threadIdx.y; \
    const bool active = i < L.nx && j < L.ny;
