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

// The smallest host-order index (j * nx + i) * nz + k of a value that is not finite, or not
// positive where `positive`, into *first (left alone where every value is good). One thread per
// value of a row of x; grid (ceil(nx / 128), nz, ny).
extern "C" __global__ void coef_check_f64(int nx, int nz, Src a, int positive, unsigned long long* first) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y, j = blockIdx.z;
    if (i >= nx) return;
    const double v = src_at(a, i, j, k);
    const bool bad = !isfinite(v) || (positive && !(v > 0.0));
    if (bad) atomicMin(first, (unsigned long long)(((i64)j * nx + i) * nz + k));
}

// c (nxc × nyc × nz, x-fastest) <- the mean of the four children in f of each cell: arithmetic
// 0.25 (a + b + c + d), or harmonic 4 / (1/a + 1/b + 1/c + 1/d), in the host's order. Grid
// (ceil(nxc / 128), nz, nyc).
extern "C" __global__ void coef_coarsen_f64(int nxc, int nyc, Src f, int harmonic, double* __restrict__ c) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y, j = blockIdx.z;
    if (i >= nxc) return;
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
    c[((i64)k * nyc + j) * nxc + i] = m;
}

// The face factor of x face f of row j (between cells f − 1 and f): the harmonic mean, or at the
// block's edge (a physical boundary: one block is the whole panel) the cell's own value.
__device__ __forceinline__ double face_x(const Src& kx, int nx, int f, int j, int k) {
    if (f == 0) return src_at(kx, 0, j, k);
    if (f == nx) return src_at(kx, nx - 1, j, k);
    return harmonic2(src_at(kx, f - 1, j, k), src_at(kx, f, j, k));
}

__device__ __forceinline__ double face_y(const Src& ky, int ny, int i, int f, int k) {
    if (f == 0) return src_at(ky, i, 0, k);
    if (f == ny) return src_at(ky, i, ny - 1, k);
    return harmonic2(src_at(ky, i, f - 1, k), src_at(ky, i, f, k));
}

// The entries of every row of a level in the field layout (CellArrays): d, e, n, u and, where
// `w` is not null, w, s, b; the halo slot i = −1 of e holds the west entry of column 0, the halo
// row j = −1 of n the south entries of row 0. `cols` holds the level's column coefficients (6
// doubles per column, strata::problem::Column), `vert` the vertical vectors d, b, c, vol (NZ
// each). Sets *asym where a west, south or down entry would differ from its neighbour's east,
// north or up entry (then only the seven-array form is right). One thread per column; grid
// (ceil(nx / 128), ny).
extern "C" __global__ void cell_entries_f64(Layout L, Src kx, Src ky, Src kz, Src beta, const double* __restrict__ cols,
                                            const double* __restrict__ vert, real* __restrict__ d, real* __restrict__ e,
                                            real* __restrict__ n, real* __restrict__ u, real* __restrict__ w,
                                            real* __restrict__ s, real* __restrict__ b, int* asym) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
    if (i >= L.nx) return;
    const double* col = cols + 6 * ((i64)j * L.nx + i);
    const double area = col[0], ae = col[1], aw = col[2], an = col[3], as = col[4];
    // The neighbours' opposite coefficients, for the symmetry test.
    const double ae_w = i > 0 ? cols[6 * ((i64)j * L.nx + i - 1) + 1] : aw;
    const double an_s = j > 0 ? cols[6 * ((i64)(j - 1) * L.nx + i) + 3] : as;
    const double *vd = vert, *vb = vert + NZ, *vc = vert + 2 * NZ, *vvol = vert + 3 * NZ;
    bool sym = true;
    double fz_below = 0.0;
    for (int k = 0; k < NZ; ++k) {
        const double fe = face_x(kx, L.nx, i + 1, j, k), fw = face_x(kx, L.nx, i, j, k);
        const double fn = face_y(ky, L.ny, i, j + 1, k), fs = face_y(ky, L.ny, i, j, k);
        const double fz = k + 1 < NZ ? harmonic2(src_at(kz, i, j, k), src_at(kz, i, j, k + 1)) : 0.0;
        const double east = __dmul_rn(__dmul_rn(vd[k], ae), fe);
        const double west = __dmul_rn(__dmul_rn(vd[k], aw), fw);
        const double north = __dmul_rn(__dmul_rn(vd[k], an), fn);
        const double south = __dmul_rn(__dmul_rn(vd[k], as), fs);
        const double up = __dmul_rn(__dmul_rn(area, vb[k]), fz);
        const double down = k > 0 ? __dmul_rn(__dmul_rn(area, vc[k]), fz_below) : 0.0;
        double diag = __dmul_rn(__dmul_rn(area, src_at(beta, i, j, k)), vvol[k]);
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
        fz_below = fz;
    }
    if (!sym) atomicOr(asym, 1);
}
