/* A model's time loop calling strata from C: set up once, solve every step with a new
 * right-hand side (warm-started from the last solution), change the coefficient fields halfway,
 * and check each solution's residual with strata's own operator.
 *
 *   cc -I crates/strata-capi/include examples/c/timesteps.c -L target/release -lstrata -lm
 *   LD_LIBRARY_PATH=target/release ./a.out
 */
#include <math.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <strata.h>

#define CHECK(call)                                                                   \
    do {                                                                              \
        StrataStatus s_ = (call);                                                     \
        if (s_ != STRATA_STATUS_OK) {                                                 \
            fprintf(stderr, "%s failed (%d): %s\n", #call, (int)s_, strata_last_error()); \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

static double norm(const double *v, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += v[i] * v[i];
    return sqrt(s);
}

int main(void) {
    StrataProblem problem;
    StrataOptions options;
    CHECK(strata_problem_default(&problem));
    CHECK(strata_options_default(&options));
    problem.n = 32;
    problem.nz = 16;
    options.solver = 2; /* mg-cg */
    options.levels = 4;
    options.backend = 1; /* cpu */

    /* Bad input is an error with a message, not a crash. */
    problem.n = 30;
    StrataSolver *solver = NULL;
    if (strata_solver_create(&problem, &options, &solver) != STRATA_STATUS_INVALID_ARGUMENT ||
        solver != NULL) {
        fprintf(stderr, "n = 30 with 4 levels was accepted\n");
        return 1;
    }
    printf("refused as expected: %s\n", strata_last_error());
    problem.n = 32;
    /* The red-black smoother's over-relaxation weight is checked too. */
    options.smoother = STRATA_SMOOTHER_RED_BLACK;
    options.relaxation = 2.5;
    if (strata_solver_create(&problem, &options, &solver) != STRATA_STATUS_INVALID_ARGUMENT ||
        strstr(strata_last_error(), "relaxation") == NULL) {
        fprintf(stderr, "relaxation = 2.5 was accepted\n");
        return 1;
    }
    options.relaxation = 1.1;

    CHECK(strata_solver_create(&problem, &options, &solver));
    size_t size = 0;
    CHECK(strata_solver_size(solver, &size));
    double *f = malloc(size * sizeof *f), *u = calloc(size, sizeof *u), *au = malloc(size * sizeof *au);
    double *kz = malloc(size * sizeof *kz);
    int nz = problem.nz;
    for (size_t c = 0; c < size; c++) kz[c] = (c % nz) >= (size_t)nz / 2 ? 100.0 : 1.0;

    for (int step = 0; step < 4; step++) {
        if (step == 2) /* the model's state changed: a stiffer upper atmosphere */
            CHECK(strata_solver_set_coefficients(solver, NULL, NULL, kz, NULL, NULL, NULL, NULL));
        for (size_t c = 0; c < size; c++) f[c] = 1e-6 * sin(0.001 * (double)c + 0.3 * step);
        StrataInfo info;
        CHECK(strata_solver_solve(solver, f, u, step > 0, &info));
        CHECK(strata_solver_apply(solver, u, au));
        for (size_t c = 0; c < size; c++) au[c] -= f[c];
        double rel = norm(au, size) / norm(f, size);
        printf("step %d: %d iterations, converged %d, |f - A u| / |f| = %.2e\n", step,
               info.iterations, info.converged, rel);
        if (!info.converged || rel > 1e-4) {
            fprintf(stderr, "step %d: the residual check failed\n", step);
            return 1;
        }
    }
    strata_solver_destroy(solver);
    free(f);
    free(u);
    free(au);
    free(kz);
    printf("ok\n");
    return 0;
}
