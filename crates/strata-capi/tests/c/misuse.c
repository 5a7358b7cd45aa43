/* The C API misused, as a caller may: every misuse must give a status and a message, never a
 * crash. Also the ABI's version query and the struct-size check (a program built against the
 * 0.1 header, whose structs had no size field, gets a clear status), and non-convergence as an
 * error. Exits 0 when every check holds; prints the failed check and exits 1 otherwise.
 *
 *   cc -I crates/strata-capi/include crates/strata-capi/tests/c/misuse.c -L target/release -lstrata
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strata.h"

static int failures = 0;

/* `status` must be `want`, and a failed call must leave a message containing `needle`. */
static void expect(const char *what, enum StrataStatus status, enum StrataStatus want,
                   const char *needle) {
    const char *msg = strata_last_error();
    int ok = status == want && (want == STRATA_STATUS_OK || (msg && strstr(msg, needle)));
    printf("%-58s %s (status %d: %s)\n", what, ok ? "ok" : "FAILED", (int)status, msg ? msg : "");
    if (!ok) failures++;
}

/* StrataProblem as the 0.1 header laid it out: no size field. */
struct StrataProblemV01 {
    int32_t geometry, n, nz;
    double cfl, lambda, height, delta, omega;
    int32_t graded, sphere_stencil;
};

int main(void) {
    /* The version: the library's and the header's agree here. */
    if (strcmp(strata_version(), STRATA_VERSION) != 0) {
        printf("strata_version() %s, header %s: FAILED\n", strata_version(), STRATA_VERSION);
        failures++;
    }

    StrataProblem p;
    StrataOptions o;
    StrataSolver *s = NULL;
    expect("problem_default", strata_problem_default(&p), STRATA_STATUS_OK, "");
    expect("options_default", strata_options_default(&o), STRATA_STATUS_OK, "");
    if (p.size != sizeof p || o.size != sizeof o) {
        printf("sizes set: FAILED\n");
        failures++;
    }
    p.n = 16;
    p.nz = 8;
    o.levels = 3;
    o.backend = STRATA_BACKEND_CPU;
    o.threads = 1;

    /* Null pointers. */
    expect("init with a null struct", strata_problem_init(NULL, sizeof p),
           STRATA_STATUS_INVALID_ARGUMENT, "null");
    expect("create with a null problem", strata_solver_create(NULL, &o, &s),
           STRATA_STATUS_INVALID_ARGUMENT, "problem is null");
    expect("create with null options", strata_solver_create(&p, NULL, &s),
           STRATA_STATUS_INVALID_ARGUMENT, "options is null");
    expect("create with a null out", strata_solver_create(&p, &o, NULL),
           STRATA_STATUS_INVALID_ARGUMENT, "out is null");

    /* Structs of a layout the library does not know. */
    StrataOptions unset = o;
    unset.size = 12345;
    expect("options of an unknown size", strata_solver_create(&p, &unset, &s),
           STRATA_STATUS_INVALID_ARGUMENT, "options.size");
    struct StrataProblemV01 old = {0, 16, 8, 8.4, 1.0, 0.01, 1.0, 0.0, 0, 0};
    expect("a problem of the 0.1 layout (no size field)",
           strata_solver_create((const StrataProblem *)(const void *)&old, &o, &s),
           STRATA_STATUS_INVALID_ARGUMENT, "problem.size");
    expect("init with a size of no layout", strata_options_init(&unset, 3),
           STRATA_STATUS_INVALID_ARGUMENT, "options.size");

    /* Bad values, then calls on the solver whose creation failed (null). */
    StrataProblem bad = p;
    bad.n = -4;
    expect("create with n < 0", strata_solver_create(&bad, &o, &s),
           STRATA_STATUS_INVALID_ARGUMENT, "n");
    if (s != NULL) {
        printf("a failed create left a handle: FAILED\n");
        failures++;
    }
    double x[16 * 16 * 8], y[16 * 16 * 8];
    StrataInfo info;
    size_t len = 0;
    expect("size of a null solver", strata_solver_size(s, &len),
           STRATA_STATUS_INVALID_ARGUMENT, "solver is null");
    expect("solve on a null solver", strata_solver_solve(s, x, y, 0, &info),
           STRATA_STATUS_INVALID_ARGUMENT, "solver is null");
    expect("apply on a null solver", strata_solver_apply(s, x, y),
           STRATA_STATUS_INVALID_ARGUMENT, "solver is null");
    expect("set_omega on a null solver", strata_solver_set_omega(s, 1.0),
           STRATA_STATUS_INVALID_ARGUMENT, "solver is null");
    strata_solver_destroy(NULL); /* ignored, documented */

    /* A live solver given bad arrays. */
    expect("create", strata_solver_create(&p, &o, &s), STRATA_STATUS_OK, "");
    expect("size with a null out", strata_solver_size(s, NULL),
           STRATA_STATUS_INVALID_ARGUMENT, "size is null");
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = sin(0.1 * (double)i);
    expect("solve with a null rhs", strata_solver_solve(s, NULL, y, 0, &info),
           STRATA_STATUS_INVALID_ARGUMENT, "rhs");
    expect("solve with a null u", strata_solver_solve(s, x, NULL, 0, &info),
           STRATA_STATUS_INVALID_ARGUMENT, "u");
    x[100] = NAN;
    expect("solve with a NaN in rhs", strata_solver_solve(s, x, y, 0, &info),
           STRATA_STATUS_INVALID_ARGUMENT, "rhs holds NaN");
    x[100] = 1e300;
    expect("solve with a rhs whose norm overflows", strata_solver_solve(s, x, y, 0, &info),
           STRATA_STATUS_INVALID_ARGUMENT, "overflow");
    x[100] = 0.5;
    expect("set_omega(-1)", strata_solver_set_omega(s, -1.0), STRATA_STATUS_INVALID_ARGUMENT,
           "omega");
    expect("device solve on a CPU solver",
           strata_solver_solve_device(s, x, y, STRATA_ORDER_K_FASTEST, 0, &info),
           STRATA_STATUS_INVALID_ARGUMENT, "CUDA");
    expect("solve", strata_solver_solve(s, x, y, 0, &info), STRATA_STATUS_OK, "");
    strata_solver_destroy(s);
    s = NULL;

    /* Non-convergence: an error only when asked. */
    o.max_it = 1;
    o.rtol = 1e-12;
    o.error_if_not_converged = 1;
    expect("create (error_if_not_converged)", strata_solver_create(&p, &o, &s), STRATA_STATUS_OK, "");
    expect("a solve that does not converge", strata_solver_solve(s, x, y, 0, &info),
           STRATA_STATUS_NOT_CONVERGED, "did not converge");
    if (info.converged != 0 || info.iterations != 1 || !(info.relative_residual > 1e-12)) {
        printf("info of the unconverged solve: FAILED\n");
        failures++;
    }
    strata_solver_destroy(s);

    printf("%s\n", failures ? "misuse test FAILED" : "misuse test passed");
    return failures ? 1 : 0;
}
