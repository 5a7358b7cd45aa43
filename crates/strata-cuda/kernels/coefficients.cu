// strata CUDA kernels: a level's per-cell operator entries made on the device from coefficient
// fields already there (a model's device arrays, docs/MODEL.md §15), bit for bit the entries the
// host makes (strata::stencil::LevelStencil::row, strata_cuda's CellArrays from host fields):
// every product, sum and quotient below is rounded as the host rounds it (the _rn intrinsics
// keep the compiler from fusing a multiply and an add into one FMA, which rounds once).
//
// The coefficient fields are read through strides (any order of the caller's arrays); a field
// the caller did not give is a one-value array with strides 0. Coarse levels' fields are the
// means of four children (strata::problem::Coefficients::coarsen_with), stored x-fastest.

// One coefficient field of a level: address and strides of i, j, k in values.
struct Src {
    const double* p;
    i64 si, sj, sk;
};

__device__ __forceinline__ double src_at(const Src& s, int i, int j, int k) {
    return s.p[(i64)i * s.si + (i64)j * s.sj + (i64)k * s.sk];
}

// 2ab / (a + b), rounded as the host's `2.0 * a * b / (a + b)`.
__device__ __forceinline__ double harmonic2(double a, double b) {
    return __ddiv_rn(__dmul_rn(__dmul_rn(2.0, a), b), __dadd_rn(a, b));
}

// Whether the array's k index is its fastest (then a warp reads along k, else along x).
__device__ __forceinline__ bool k_fastest(const Src& s) { return s.sk < s.si; }

// The smallest host-order index (j * nx + i) * nz + k of a value that is not finite, or not
// positive where `positive`, into *first (left alone where every value is good). One thread per
// value, along the array's fastest index: grid (ceil(nz / 128), nx, ny) when k is fastest
// (`kfast`), else (ceil(nx / 128), nz, ny).
extern "C" __global__ void coef_check_f64(int nx, int nz, Src a, int positive, int kfast, unsigned long long* first) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.z;
    const int i = kfast ? (int)blockIdx.y : t, k = kfast ? t : (int)blockIdx.y;
    if (i >= nx || k >= nz) return;
    const double v = src_at(a, i, j, k);
    const bool bad = !isfinite(v) || (positive && !(v > 0.0));
    if (bad) atomicMin(first, (unsigned long long)(((i64)j * nx + i) * nz + k));
}

// c (nxc × nyc × nz) <- the mean of the four children in f of each cell: arithmetic
// 0.25 (a + b + c + d), or harmonic 4 / (1/a + 1/b + 1/c + 1/d), in the host's order. Stored
// and computed along k when `kfast` (c[(j nxc + i) nz + k], grid (ceil(nz / 128), nxc, nyc)),
// else along x (c[(k nyc + j) nxc + i], grid (ceil(nxc / 128), nz, nyc)).
extern "C" __global__ void coef_coarsen_f64(int nxc, int nyc, int nz, Src f, int harmonic, int kfast,
                                            double* __restrict__ c) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.z;
    const int i = kfast ? (int)blockIdx.y : t, k = kfast ? t : (int)blockIdx.y;
    if (i >= nxc || k >= nz) return;
    const double a = src_at(f, 2 * i, 2 * j, k), b = src_at(f, 2 * i + 1, 2 * j, k);
    const double cc = src_at(f, 2 * i, 2 * j + 1, k), d = src_at(f, 2 * i + 1, 2 * j + 1, k);
    double m;
    if (harmonic) {
        const double s = __dadd_rn(__dadd_rn(__dadd_rn(__ddiv_rn(1.0, a), __ddiv_rn(1.0, b)), __ddiv_rn(1.0, cc)),
                                   __ddiv_rn(1.0, d));
        m = __ddiv_rn(4.0, s);
    } else {
        m = __dmul_rn(0.25, __dadd_rn(__dadd_rn(__dadd_rn(a, b), cc), d));
    }
    c[kfast ? ((i64)j * nxc + i) * nz + k : ((i64)k * nyc + j) * nxc + i] = m;
}

// The entries kernel's tile: 32 columns of one row by ENTRY_KT levels, from fields staged in
// shared memory (each read along its fastest index, so k-fastest and x-fastest arrays both load
// whole lines), 256 threads.
#define ENTRY_IT 32
#define ENTRY_KT 16

// out[ii][kk] = s(i0 + ii − hi, j, k0 + kk − hk) for ii < ni, kk < nk (0 outside the field),
// row stride ld; loaded by the block's 256 threads along the array's fastest index.
__device__ __forceinline__ void stage(double* out, int ld, const Src& s, int i0, int hi, int ni, int j, int k0,
                                      int hk, int nk, int nx, int ny) {
    const bool kf = k_fastest(s);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    for (int t = tid; t < ni * nk; t += blockDim.x * blockDim.y) {
        const int ii = kf ? t / nk : t % ni, kk = kf ? t % nk : t / ni;
        const int i = i0 + ii - hi, k = k0 + kk - hk;
        out[ii * ld + kk] = (i >= 0 && i < nx && j >= 0 && j < ny && k >= 0 && k < NZ) ? src_at(s, i, j, k) : 0.0;
    }
}

// The harmonic mean of the two values beside a face, or at the block's edge (a physical
// boundary: one block is the whole panel) the one cell's own value.
__device__ __forceinline__ double face(bool lo_edge, bool hi_edge, double lo, double hi) {
    if (lo_edge) return hi;
    if (hi_edge) return lo;
    return harmonic2(lo, hi);
}

// The entries of every row of a level in the field layout (CellArrays): d, e, n, u and, where
// `w` is not null, w, s, b; the halo slot i = −1 of e holds the west entry of column 0, the halo
// row j = −1 of n the south entries of row 0. `cols` holds the level's column coefficients (6
// doubles per column, strata::problem::Column), `vert` the vertical vectors d, b, c, vol (NZ
// each). Sets *asym where a west, south or down entry would differ from its neighbour's east,
// north or up entry (then only the seven-array form is right). A block per tile of ENTRY_IT
// columns × ENTRY_KT levels of a row: grid (ceil(nx / 32), ceil(NZ / 16), ny), block (32, 8).
extern "C" __global__ void __launch_bounds__(256) cell_entries_f64(Layout L, Src kx, Src ky, Src kz, Src beta,
                                            const double* __restrict__ cols, const double* __restrict__ vert,
                                            real* __restrict__ d, real* __restrict__ e, real* __restrict__ n,
                                            real* __restrict__ u, real* __restrict__ w, real* __restrict__ s,
                                            real* __restrict__ b, int* asym) {
    // kx with a column either side, ky of rows j − 1, j, j + 1, kz with a level either side.
    __shared__ double sx[(ENTRY_IT + 2) * (ENTRY_KT + 1)];
    __shared__ double sy[3][ENTRY_IT * (ENTRY_KT + 1)];
    __shared__ double sz[ENTRY_IT * (ENTRY_KT + 3)];
    __shared__ double sb[ENTRY_IT * (ENTRY_KT + 1)];
    const int i0 = blockIdx.x * ENTRY_IT, k0 = blockIdx.y * ENTRY_KT, j = blockIdx.z;
    const int lx = ENTRY_KT + 1, lz = ENTRY_KT + 3;
    stage(sx, lx, kx, i0, 1, ENTRY_IT + 2, j, k0, 0, ENTRY_KT, L.nx, L.ny);
    for (int r = 0; r < 3; ++r) stage(sy[r], lx, ky, i0, 0, ENTRY_IT, j + r - 1, k0, 0, ENTRY_KT, L.nx, L.ny);
    stage(sz, lz, kz, i0, 0, ENTRY_IT, j, k0, 1, ENTRY_KT + 2, L.nx, L.ny);
    stage(sb, lx, beta, i0, 0, ENTRY_IT, j, k0, 0, ENTRY_KT, L.nx, L.ny);
    __syncthreads();
    const int ii = threadIdx.x, i = i0 + ii;
    if (i >= L.nx) return;
    const double* col = cols + 6 * ((i64)j * L.nx + i);
    const double area = col[0], ae = col[1], aw = col[2], an = col[3], as = col[4];
    // The neighbours' opposite coefficients, for the symmetry test.
    const double ae_w = i > 0 ? cols[6 * ((i64)j * L.nx + i - 1) + 1] : aw;
    const double an_s = j > 0 ? cols[6 * ((i64)(j - 1) * L.nx + i) + 3] : as;
    const double *vd = vert, *vb = vert + NZ, *vc = vert + 2 * NZ, *vvol = vert + 3 * NZ;
    bool sym = true;
    for (int kk = threadIdx.y; kk < ENTRY_KT; kk += blockDim.y) {
        const int k = k0 + kk;
        if (k >= NZ) break;
        const double fe = face(false, i + 1 == L.nx, sx[(ii + 1) * lx + kk], sx[(ii + 2) * lx + kk]);
        const double fw = face(i == 0, false, sx[ii * lx + kk], sx[(ii + 1) * lx + kk]);
        const double fn = face(false, j + 1 == L.ny, sy[1][ii * lx + kk], sy[2][ii * lx + kk]);
        const double fs = face(j == 0, false, sy[0][ii * lx + kk], sy[1][ii * lx + kk]);
        const double* z = sz + ii * lz + kk;  // z[0], z[1], z[2]: kz at k − 1, k, k + 1
        const double fz = k + 1 < NZ ? harmonic2(z[1], z[2]) : 0.0;
        const double fz_below = k > 0 ? harmonic2(z[0], z[1]) : 0.0;
        const double east = __dmul_rn(__dmul_rn(vd[k], ae), fe);
        const double west = __dmul_rn(__dmul_rn(vd[k], aw), fw);
        const double north = __dmul_rn(__dmul_rn(vd[k], an), fn);
        const double south = __dmul_rn(__dmul_rn(vd[k], as), fs);
        const double up = __dmul_rn(__dmul_rn(area, vb[k]), fz);
        const double down = k > 0 ? __dmul_rn(__dmul_rn(area, vc[k]), fz_below) : 0.0;
        double diag = __dmul_rn(__dmul_rn(area, sb[ii * lx + kk]), vvol[k]);
        diag = __dsub_rn(__dsub_rn(__dsub_rn(__dsub_rn(__dsub_rn(__dsub_rn(diag, up), down), east), west), north), south);
        // The same factor multiplies both entries of a pair: they agree when the products
        // before it do.
        sym = sym && __double_as_longlong(__dmul_rn(vd[k], aw)) == __double_as_longlong(__dmul_rn(vd[k], ae_w)) &&
              __double_as_longlong(__dmul_rn(vd[k], as)) == __double_as_longlong(__dmul_rn(vd[k], an_s)) &&
              (k == 0 || __double_as_longlong(__dmul_rn(area, vc[k])) ==
                             __double_as_longlong(__dmul_rn(area, vb[k - 1])));
        const idx_t o = at_(L, i, j, k);
        d[o] = (real)diag;
        e[o] = (real)east;
        n[o] = (real)north;
        u[o] = (real)up;
        if (i == 0) e[o - 1] = (real)west;
        if (j == 0) n[o - L.plane] = (real)south;
        if (w) {
            w[o] = (real)west;
            s[o] = (real)south;
            b[o] = (real)down;
        }
    }
    if (!sym) atomicOr(asym, 1);
}
