// Vector operations on the interior of a field, the bandwidth probe, and the final reduction.
// The column kernels walk the levels [k0, k1) of their column (SEGMENT, common.cuh): the whole
// column, or on a level with few columns a grid-z segment of it (a reduction's block partials then
// one per block and segment).

// x <- v; traffic 1.
extern "C" __global__ void fill_f64(Layout L, real* __restrict__ x, double v) {
    THREAD_COLUMN
    SEGMENT
    if (!active) return;
    idx_t o = at_(L, i, j, k0);
    for (int k = k0; k < k1; ++k, o += L.sx) x[o] = v;
}

// y <- x; traffic 2.
extern "C" __global__ void copy_f64(Layout L, const real* __restrict__ x, real* __restrict__ y) {
    THREAD_COLUMN
    SEGMENT
    if (!active) return;
    idx_t o = at_(L, i, j, k0);
    for (int k = k0; k < k1; ++k, o += L.sx) y[o] = x[o];
}

// y <- y + a x; traffic 3.
// a is coef(a, sc, ia) (common.cuh).
extern "C" __global__ void axpy_f64(Layout L, double a0, const double* __restrict__ sc, int ia,
                                    const real* __restrict__ x, real* __restrict__ y) {
    THREAD_COLUMN
    SEGMENT
    if (!active) return;
    const double a = coef(a0, sc, ia);
    idx_t o = at_(L, i, j, k0);
    for (int k = k0; k < k1; ++k, o += L.sx) y[o] += a * x[o];
}

// y <- y + a x with x an fp32 field of the same block (the correction of a mixed-precision cycle
// added to the fp64 iterate: used from the fp64 build); traffic 2 values of the build + one float.
extern "C" __global__ void axpy_from_f32_f64(Layout L, double a, const float* __restrict__ x,
                                             real* __restrict__ y) {
    THREAD_COLUMN
    SEGMENT
    if (!active) return;
    idx_t o = at_(L, i, j, k0);
    for (int k = k0; k < k1; ++k, o += L.sx) y[o] += a * (double)x[o];
}

// y <- x + b y; traffic 3.
extern "C" __global__ void xpby_f64(Layout L, const real* __restrict__ x, double b, real* __restrict__ y) {
    THREAD_COLUMN
    SEGMENT
    if (!active) return;
    idx_t o = at_(L, i, j, k0);
    for (int k = k0; k < k1; ++k, o += L.sx) y[o] = x[o] + b * y[o];
}

// The whole allocation of a field (halo and padding included), n values, to and from fp64: the
// conversions between the fp64 fields of a mixed-precision solve's outer iteration and the fields
// of this build (REAL). Traffic 2.
extern "C" __global__ void widen_f64(i64 n, const real* __restrict__ x, double* __restrict__ y) {
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (i64)gridDim.x * blockDim.x)
        y[t] = x[t];
}

extern "C" __global__ void narrow_f64(i64 n, const double* __restrict__ x, real* __restrict__ y) {
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (i64)gridDim.x * blockDim.x)
        y[t] = x[t];
}

// Block partials of <x, y>; traffic 2.
extern "C" __global__ void dot_f64(Layout L, const real* __restrict__ x, const real* __restrict__ y,
                                   double* __restrict__ partials) {
    THREAD_COLUMN
    SEGMENT
    double s = 0.0;
    if (active) {
        idx_t o = at_(L, i, j, k0);
        for (int k = k0; k < k1; ++k, o += L.sx) s += (double)x[o] * y[o];
    }
    block_sum(s, partials, 0, 1);
}

// y <- y + a x; block partials of <y, y> (the new y); traffic 3.
// a is coef(a, sc, ia) (common.cuh).
extern "C" __global__ void axpy_norm_f64(Layout L, double a0, const double* __restrict__ sc, int ia,
                                         const real* __restrict__ x, real* __restrict__ y,
                                         double* __restrict__ partials) {
    THREAD_COLUMN
    SEGMENT
    const double a = coef(a0, sc, ia);
    double s = 0.0;
    if (active) {
        idx_t o = at_(L, i, j, k0);
        for (int k = k0; k < k1; ++k, o += L.sx) {
            const real v = y[o] + a * x[o];
            y[o] = v;
            s += (double)v * v;
        }
    }
    block_sum(s, partials, 0, 1);
}

// Block partials of <x, y> and <y, w> in one pass; traffic 3.
extern "C" __global__ void dot_pair_f64(Layout L, const real* __restrict__ x, const real* __restrict__ y,
                                        const real* __restrict__ w, double* __restrict__ partials) {
    THREAD_COLUMN
    SEGMENT
    double s0 = 0.0, s1 = 0.0;
    if (active) {
        idx_t o = at_(L, i, j, k0);
        for (int k = k0; k < k1; ++k, o += L.sx) {
            const double yv = y[o];
            s0 += (double)x[o] * yv;
            s1 += yv * w[o];
        }
    }
    block_sum(s0, partials, 0, 2);
    block_sum(s1, partials, 1, 2);
}

// out[c] = sum over blocks of partials[b * ncomp + c], in a fixed order (one block of 256 threads).
extern "C" __global__ void reduce_f64(const double* __restrict__ partials, int nblocks, int ncomp,
                                      double* __restrict__ out) {
    __shared__ double s[256];
    for (int c = 0; c < ncomp; ++c) {
        double v = 0.0;
        for (int b = threadIdx.x; b < nblocks; b += 256) v += partials[(idx_t)b * ncomp + c];
        s[threadIdx.x] = v;
        __syncthreads();
        for (int w = 128; w > 0; w >>= 1) {
            if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) out[c] = s[0];
        __syncthreads();
    }
}

// y <- y + a x over n contiguous values (the in-place update bandwidth probe); traffic 3.
extern "C" __global__ void update_f64(i64 n, double a, const double* __restrict__ x, double* __restrict__ y) {
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (i64)gridDim.x * blockDim.x)
        y[t] += a * x[t];
}

// The solver's scalar arithmetic on its slots (strata::backend::ScalarOp), in order; launched
// with one thread:
// s[dst] = sign * s[num] * s[by] / s[den] (by, den < 0: 1); with guard, a denominator that is not
// finite and positive gives 0. The order of operations is the host's, so the values are too.
struct ScalarOp {
    int dst, num, by, den, guard, pad;
    double sign;
};
struct ScalarOps {
    int n, pad;
    ScalarOp op[4];
};

extern "C" __global__ void scalar_ops_f64(double* __restrict__ s, ScalarOps ops) {
    for (int i = 0; i < ops.n; ++i) {
        const ScalarOp o = ops.op[i];
        double v = o.sign * s[o.num];
        if (o.by >= 0) v *= s[o.by];
        if (o.den >= 0) {
            const double d = s[o.den];
            if (o.guard && !(isfinite(d) && d > 0.0)) {
                s[o.dst] = 0.0;
                continue;
            }
            v /= d;
        }
        s[o.dst] = v;
    }
}
