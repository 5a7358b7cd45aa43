! The whole sphere from Fortran: six panels of n x n columns, a field u(nz, n, n, 6) (k fastest,
! then i, j, panel: strata's sphere layout as it is), solved with each horizontal stencil — the
! nine-point operator (second order, the default) and the paper's two-point stencil — by mg and
! by mg-cg, each solution checked with strata's own operator; then the singular problem
! (delta = 0): f refused until projection is asked for, then solved with zero mean.
!
!   gfortran -c fortran/strata.f90 && gfortran examples/fortran/sphere.f90 strata.o \
!       -L target/release -lstrata -o sphere && LD_LIBRARY_PATH=target/release ./sphere
program sphere
    use, intrinsic :: iso_c_binding
    use strata
    implicit none
    type(strata_problem) :: problem
    type(strata_options) :: options
    type(strata_info) :: info
    type(c_ptr) :: solver
    integer(c_size_t) :: size
    real(c_double), allocatable, target :: f(:, :, :, :), u(:, :, :, :), au(:, :, :, :), u9(:, :, :, :)
    integer :: stencil, solver_kind, i, j, k, p, n, nz
    real(c_double) :: rel

    call check(strata_problem_default(problem), "strata_problem_default")
    call check(strata_options_default(options), "strata_options_default")
    problem%geometry = 2 ! the sphere
    problem%n = 32
    problem%nz = 16
    options%levels = 4
    options%backend = 1 ! cpu
    n = problem%n
    nz = problem%nz
    allocate(f(nz, n, n, 6), u(nz, n, n, 6), au(nz, n, n, 6), u9(nz, n, n, 6))
    do p = 1, 6
        do j = 1, n
            do i = 1, n
                do k = 1, nz
                    f(k, i, j, p) = 1e-6 * sin(0.2 * i + 0.1 * j + 0.7 * p) * cos(0.4 * k)
                end do
            end do
        end do
    end do

    do stencil = 0, 1 ! 0 nine-point, 1 two-point
        do solver_kind = 1, 2 ! 1 mg, 2 mg-cg
            problem%sphere_stencil = stencil
            options%solver = solver_kind
            call check(strata_solver_create(problem, options, solver), "strata_solver_create")
            call check(strata_solver_size(solver, size), "strata_solver_size")
            if (size /= 6_c_size_t * n * n * nz) stop 1
            u = 0
            call check(strata_solver_solve(solver, f, u, 0, info), "strata_solver_solve")
            call check(strata_solver_apply(solver, u, au), "strata_solver_apply")
            rel = norm2(au - f) / norm2(f)
            print '(a, a, a, a, i0, a, es9.2)', merge("nine-point", "two-point ", stencil == 0), &
                " ", merge("mg   ", "mg-cg", solver_kind == 1), ": ", info%iterations, &
                " iterations, |f - A u| / |f| = ", rel
            if (info%converged /= 1 .or. rel > 1e-4) then
                print *, "the residual check failed"
                stop 1
            end if
            ! The two stencils are different operators: their solutions differ (by the two-point
            ! stencil's inconsistency), which shows sphere_stencil reached the solver.
            if (stencil == 0 .and. solver_kind == 1) u9 = u
            if (stencil == 1 .and. solver_kind == 1) then
                rel = norm2(u - u9) / norm2(u9)
                print '(a, es9.2)', "two-point against nine-point solution: ", rel
                if (rel < 1e-4) then
                    print *, "sphere_stencil had no effect"
                    stop 1
                end if
            end if
            call strata_solver_destroy(solver)
        end do
    end do
    ! delta = 0: the constants are the operator's null space. This f has a component along
    ! them: refused, then projected (strata_solver_set_project_rhs) and solved.
    problem%delta = 0
    problem%sphere_stencil = 0
    options%solver = 1
    call check(strata_solver_create(problem, options, solver), "strata_solver_create")
    f = f + 1e-6
    u = 0
    if (strata_solver_solve(solver, f, u, 0, info) /= STRATA_INVALID_ARGUMENT) then
        print *, "an incompatible right-hand side was not refused"
        stop 1
    end if
    call check(strata_solver_set_project_rhs(solver, 1), "strata_solver_set_project_rhs")
    call check(strata_solver_solve(solver, f, u, 0, info), "strata_solver_solve (projected)")
    call check(strata_solver_apply(solver, u, au), "strata_solver_apply")
    ! The residual of the projected system: f minus its mean.
    f = f - sum(f) / real(6 * n * n * nz, c_double)
    rel = norm2(au - f) / norm2(f)
    print '(a, i0, a, es9.2)', "delta = 0, projected: ", info%iterations, &
        " iterations, |Pf - A u| / |Pf| = ", rel
    if (info%converged /= 1 .or. rel > 1e-4) then
        print *, "the singular solve failed"
        stop 1
    end if
    call strata_solver_destroy(solver)
    print '(a)', "ok"

contains

    subroutine check(status, what)
        integer(c_int), intent(in) :: status
        character(len=*), intent(in) :: what
        if (status /= STRATA_OK) then
            print '(a, a, i0, a, a)', what, " failed (", status, "): ", strata_error_message()
            stop 1
        end if
    end subroutine

end program
