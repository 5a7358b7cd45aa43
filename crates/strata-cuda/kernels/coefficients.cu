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
// positive where `positive` is 1 (kx, ky, kz), or negative where it is 2 (beta, which may be 0),
// or beyond the bound of strata's Coefficients::validate, into *first (left alone where every
// value is good). One thread per
// value, along the array's fastest index: grid (ceil(nz / 128), nx, ny) when k is fastest
// (`kfast`), else (ceil(nx / 128), nz, ny).
extern "C" __global__ void coef_check_f64(int nx, int nz, Src a, int positive, int kfast, unsigned long long* first) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.z;
    const int i = kfast ? (int)blockIdx.y : t, k = kfast ? t : (int)blockIdx.y;
    if (i >= nx || k >= nz) return;
    const double v = src_at(a, i, j, k);
    // COEFFICIENT_BOUND of the core crate: magnitudes within 1e100 (and 1e-100 for positive fields).
    const bool small = positive == 1 ? !(v >= 1e-100) : positive == 2 && (v < 0.0 || (v > 0.0 && v < 1e-100));
    const bool bad = !isfinite(v) || small || !(fabs(v) <= 1e100);
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
// north or up entry (then only the seven-array form is right). With `adv`, the advection term
// −ω² ∇·(ξ u) of the fields xx, xy, xz is added as LevelStencil::row adds it (docs/MODEL.md
// §15.5), from `flen`, the level's face lengths (flen[f · nx + j]: face f of row j, the x faces;
// the y faces of column i are flen[f · nx + i]), `surf`, the radial surface factor of each
// level's upper face, and `omega2` = ω². A block per tile of ENTRY_IT columns × ENTRY_KT levels
// of a row: grid (ceil(nx / 32), ceil(NZ / 16), ny), block (32, 8).
extern "C" __global__ void __launch_bounds__(256)
    cell_entries_f64(Layout L, Src kx, Src ky, Src kz, Src beta, Src xx, Src xy, Src xz, const double* __restrict__ cols,
                     const double* __restrict__ vert, const double* __restrict__ flen, const double* __restrict__ surf,
                     double omega2, int adv, real* __restrict__ d, real* __restrict__ e, real* __restrict__ n,
                     real* __restrict__ u, real* __restrict__ w, real* __restrict__ s, real* __restrict__ b, int* asym) {
    // kx with a column either side, ky of rows j − 1, j, j + 1, kz with a level either side; then
    // the same for the advection vector's components.
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
    const bool live = i < L.nx;
    // The thread's levels kk = threadIdx.y + 8 m of the tile, m < SLOTS.
    constexpr int SLOTS = ENTRY_KT / 8;
    double east[SLOTS], west[SLOTS], north[SLOTS], south[SLOTS], up[SLOTS], down[SLOTS], diag[SLOTS];
    double area = 0.0, ae = 0.0, aw = 0.0, an = 0.0, as = 0.0;
    const double *vd = vert, *vb = vert + NZ, *vc = vert + 2 * NZ, *vvol = vert + 3 * NZ;
    bool sym = true;
    if (live) {
        const double* col = cols + 6 * ((i64)j * L.nx + i);
        area = col[0], ae = col[1], aw = col[2], an = col[3], as = col[4];
        // The neighbours' opposite coefficients, for the symmetry test.
        const double ae_w = i > 0 ? cols[6 * ((i64)j * L.nx + i - 1) + 1] : aw;
        const double an_s = j > 0 ? cols[6 * ((i64)(j - 1) * L.nx + i) + 3] : as;
        for (int m = 0; m < SLOTS; ++m) {
            const int kk = threadIdx.y + 8 * m, k = k0 + kk;
            if (k >= NZ) break;
            const double fe = face(false, i + 1 == L.nx, sx[(ii + 1) * lx + kk], sx[(ii + 2) * lx + kk]);
            const double fw = face(i == 0, false, sx[ii * lx + kk], sx[(ii + 1) * lx + kk]);
            const double fn = face(false, j + 1 == L.ny, sy[1][ii * lx + kk], sy[2][ii * lx + kk]);
            const double fs = face(j == 0, false, sy[0][ii * lx + kk], sy[1][ii * lx + kk]);
            const double* z = sz + ii * lz + kk;  // z[0], z[1], z[2]: kz at k − 1, k, k + 1
            const double fz = k + 1 < NZ ? harmonic2(z[1], z[2]) : 0.0;
            const double fz_below = k > 0 ? harmonic2(z[0], z[1]) : 0.0;
            east[m] = __dmul_rn(__dmul_rn(vd[k], ae), fe);
            west[m] = __dmul_rn(__dmul_rn(vd[k], aw), fw);
            north[m] = __dmul_rn(__dmul_rn(vd[k], an), fn);
            south[m] = __dmul_rn(__dmul_rn(vd[k], as), fs);
            up[m] = __dmul_rn(__dmul_rn(area, vb[k]), fz);
            down[m] = k > 0 ? __dmul_rn(__dmul_rn(area, vc[k]), fz_below) : 0.0;
            double g = __dmul_rn(__dmul_rn(area, sb[ii * lx + kk]), vvol[k]);
            diag[m] = __dsub_rn(
                __dsub_rn(__dsub_rn(__dsub_rn(__dsub_rn(__dsub_rn(g, up[m]), down[m]), east[m]), west[m]), north[m]),
                south[m]);
            // The same factor multiplies both entries of a pair: they agree when the products
            // before it do.
            sym = sym &&
                  __double_as_longlong(__dmul_rn(vd[k], aw)) == __double_as_longlong(__dmul_rn(vd[k], ae_w)) &&
                  __double_as_longlong(__dmul_rn(vd[k], as)) == __double_as_longlong(__dmul_rn(vd[k], an_s)) &&
                  (k == 0 || __double_as_longlong(__dmul_rn(area, vc[k])) ==
                                 __double_as_longlong(__dmul_rn(area, vb[k - 1])));
        }
    }
    if (adv) {
        // The advection vector into the same tiles (every thread is done with κ and β): ξx with
        // a column either side, ξy of rows j − 1, j, j + 1, ξz with a level either side.
        __syncthreads();
        stage(sx, lx, xx, i0, 1, ENTRY_IT + 2, j, k0, 0, ENTRY_KT, L.nx, L.ny);
        for (int r = 0; r < 3; ++r) stage(sy[r], lx, xy, i0, 0, ENTRY_IT, j + r - 1, k0, 0, ENTRY_KT, L.nx, L.ny);
        stage(sz, lz, xz, i0, 0, ENTRY_IT, j, k0, 1, ENTRY_KT + 2, L.nx, L.ny);
        __syncthreads();
        if (live) {
            // Face length × the mean of the normal components beside it; 0 on the physical
            // boundary (MODEL.md §15.5, strata::stencil's `advection`).
            const auto flux = [](bool wall, double len, double lo, double hi) {
                return wall ? 0.0 : __dmul_rn(len, __dmul_rn(0.5, __dadd_rn(lo, hi)));
            };
            for (int m = 0; m < SLOTS; ++m) {
                const int kk = threadIdx.y + 8 * m, k = k0 + kk;
                if (k >= NZ) break;
                const double ex = flux(i + 1 == L.nx, flen[(i64)(i + 1) * L.nx + j], sx[(ii + 1) * lx + kk],
                                       sx[(ii + 2) * lx + kk]);
                const double wx = flux(i == 0, flen[(i64)i * L.nx + j], sx[ii * lx + kk], sx[(ii + 1) * lx + kk]);
                const double ny_ = flux(j + 1 == L.ny, flen[(i64)(j + 1) * L.nx + i], sy[1][ii * lx + kk],
                                        sy[2][ii * lx + kk]);
                const double sy_ = flux(j == 0, flen[(i64)j * L.nx + i], sy[0][ii * lx + kk], sy[1][ii * lx + kk]);
                const double* z = sz + ii * lz + kk;  // ξz at k − 1, k, k + 1
                const double az = k + 1 < NZ ? __dmul_rn(surf[k], __dmul_rn(0.5, __dadd_rn(z[1], z[2]))) : 0.0;
                // The outward flux through each face, u_face = (u + u_neighbour) / 2: half of
                // each into the entry and into the diagonal, in LevelStencil::row's order.
                double h = __dmul_rn(0.5, __dmul_rn(vd[k], ex));
                east[m] = __dadd_rn(east[m], h);
                double acc = __dadd_rn(0.0, h);
                h = __dmul_rn(0.5, __dmul_rn(-vd[k], wx));
                west[m] = __dadd_rn(west[m], h);
                acc = __dadd_rn(acc, h);
                h = __dmul_rn(0.5, __dmul_rn(vd[k], ny_));
                north[m] = __dadd_rn(north[m], h);
                acc = __dadd_rn(acc, h);
                h = __dmul_rn(0.5, __dmul_rn(-vd[k], sy_));
                south[m] = __dadd_rn(south[m], h);
                acc = __dadd_rn(acc, h);
                h = __dmul_rn(0.5, __dmul_rn(__dmul_rn(-omega2, area), az));
                up[m] = __dadd_rn(up[m], h);
                acc = __dadd_rn(acc, h);
                if (k > 0) {
                    const double az_below = __dmul_rn(surf[k - 1], __dmul_rn(0.5, __dadd_rn(z[0], z[1])));
                    h = __dmul_rn(0.5, __dmul_rn(__dmul_rn(omega2, area), az_below));
                    down[m] = __dadd_rn(down[m], h);
                    acc = __dadd_rn(acc, h);
                }
                diag[m] = __dadd_rn(diag[m], acc);
            }
        }
    }
    if (live) {
        for (int m = 0; m < SLOTS; ++m) {
            const int k = k0 + threadIdx.y + 8 * m;
            if (k >= NZ) break;
            const idx_t o = at_(L, i, j, k);
            d[o] = (real)diag[m];
            e[o] = (real)east[m];
            n[o] = (real)north[m];
            u[o] = (real)up[m];
            if (i == 0) e[o + x_west(o)] = (real)west[m];
            if (j == 0) n[o - L.plane] = (real)south[m];
            if (w) {
                w[o] = (real)west[m];
                s[o] = (real)south[m];
                b[o] = (real)down[m];
            }
        }
        if (!sym) atomicOr(asym, 1);
    }
}
