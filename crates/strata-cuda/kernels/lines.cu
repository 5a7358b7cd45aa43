// Kernels with a vertical line solve (one Thomas solve per thread's column, see thomas()).

// z <- M^-1 r; traffic 3 (read r twice, write z).
extern "C" __global__ void LINE_BOUNDS line_solve_f64(Layout L, const double* __restrict__ cols, const double* __restrict__ V,
                                          const double* __restrict__ r, double* __restrict__ z) {
    THREAD_COLUMN
    if (!active) return;
    const Col c = load_col(cols, L, i, j);
    const idx_t o0 = at_(L, i, j, 0);
    auto rhs = [&](int k) { return r[o0 + (idx_t)k * L.sx]; };
    thomas(V, c.t, c.at, rhs, rhs, [&](int k, double zk) { z[o0 + (idx_t)k * L.sx] = zk; });
}

// Fused CG Tridiag: r <- r - alpha q; z <- M^-1 r; partials of r.r and r.z.
// Traffic 5 (read q, r; write r; read r again; write z); the paper's Mem^(C) counts 9.
extern "C" __global__ void LINE_BOUNDS cg_tridiag_f64(Layout L, const double* __restrict__ cols, const double* __restrict__ V,
                                          const double* __restrict__ q, double* __restrict__ r,
                                          double* __restrict__ z, double alpha, double* __restrict__ partials) {
    THREAD_COLUMN
    double rr = 0.0, rz = 0.0;
    if (active) {
        const Col c = load_col(cols, L, i, j);
        const idx_t o0 = at_(L, i, j, 0);
        auto fwd = [&](int k) {
            const idx_t o = o0 + (idx_t)k * L.sx;
            const double rk = r[o] - alpha * q[o];
            r[o] = rk;
            rr += rk * rk;
            return rk;
        };
        auto again = [&](int k) { return r[o0 + (idx_t)k * L.sx]; };
        thomas(V, c.t, c.at, fwd, again, [&](int k, double zk) {
            const idx_t o = o0 + (idx_t)k * L.sx;
            z[o] = zk;
            rz += r[o] * zk;
        });
    }
    block_sum(rr, partials, 0, 2);
    block_sum(rz, partials, 1, 2);
}

// One block-Jacobi step, out of place: u_out <- u_in + rho M^-1 (f - A u_in).
// Traffic 5 (read f, u_in for the forward sweep and again for the backward; write u_out); the
// paper's two Smooth kernels count 8. With SMOOTH_STORE_RHS the forward sweep stores f - A u_in
// in u_out and the backward sweep reads it back instead of recomputing the stencil: traffic 6,
// but no second pass over the neighbours.
extern "C" __global__ void LINE_BOUNDS smooth_f64(Layout L, const double* __restrict__ cols, const double* __restrict__ V,
                                      const double* __restrict__ f, const double* __restrict__ u_in,
                                      double* __restrict__ u_out, double rho) {
    THREAD_COLUMN
    if (!active) return;
    const Col c = load_col(cols, L, i, j);
    const idx_t o0 = at_(L, i, j, 0);
#ifdef SMOOTH_STORE_RHS
    auto rhs = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        const double v = f[o] - apply_load(u_in, o, L, c, V, k);
        u_out[o] = v;
        return v;
    };
    auto again = [&](int k) { return u_out[o0 + (idx_t)k * L.sx]; };
#else
    auto rhs = [&](int k) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        return f[o] - apply_load(u_in, o, L, c, V, k);
    };
    auto again = rhs;
#endif
    thomas(V, c.t, c.at, rhs, again, [&](int k, double zk) {
        const idx_t o = o0 + (idx_t)k * L.sx;
        u_out[o] = u_in[o] + rho * zk;
    });
}

// Restriction fused with the first smoothing step from zero, per coarse column:
// f_c <- scale * (sum of the 4 fine children of r_f); u_c <- rho M^-1 f_c.
// Traffic per coarse cell 7 (read 4 children; write f_c; read f_c again; write u_c).
extern "C" __global__ void LINE_BOUNDS restrict_smooth_f64(Layout Lf, Layout L, const double* __restrict__ cols,
                                               const double* __restrict__ V, const double* __restrict__ rf,
                                               double* __restrict__ fc, double* __restrict__ uc, double rho,
                                               double scale) {
    THREAD_COLUMN
    if (!active) return;
    const Col c = load_col(cols, L, i, j);
    const idx_t o0 = at_(L, i, j, 0);
    const idx_t f0 = at_(Lf, 2 * i, 2 * j, 0);
    auto fwd = [&](int k) {
        const idx_t of = f0 + (idx_t)k * Lf.sx;
        const double v = scale * ((rf[of] + rf[of + 1]) + (rf[of + Lf.plane] + rf[of + Lf.plane + 1]));
        fc[o0 + (idx_t)k * L.sx] = v;
        return v;
    };
    auto again = [&](int k) { return fc[o0 + (idx_t)k * L.sx]; };
    thomas(V, c.t, c.at, fwd, again, [&](int k, double zk) { uc[o0 + (idx_t)k * L.sx] = rho * zk; });
}
