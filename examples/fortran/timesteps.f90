! A model's time loop calling strata from Fortran: set up once, solve every step with a new
! right-hand side (warm-started from the last solution), change the coefficients halfway, and
! check each solution's residual with strata's own operator; then a channel (a box periodic in
! x with zero-flux sides in y), and the channel over a ridge (orography).
!
!   gfortran -c fortran/strata.f90 && gfortran examples/fortran/timesteps.f90 strata.o \
!       -L target/release -lstrata -o timesteps && LD_LIBRARY_PATH=target/release ./timesteps
program timesteps
    use, intrinsic :: iso_c_binding
    use strata
    implicit none
    type(strata_problem) :: problem
    type(strata_options) :: options, resolved
    type(strata_info) :: info
    type(c_ptr) :: solver
    integer(c_size_t) :: size
    real(c_double), allocatable, target :: f(:, :, :), u(:, :, :), au(:, :, :), kz(:, :, :)
    real(c_double), allocatable, target :: h(:, :)
    integer :: step, i, j, k, n, nz
    real(c_double) :: rel

    call check(strata_problem_default(problem), "strata_problem_default")
    call check(strata_options_default(options), "strata_options_default")
    problem%n = 32
    problem%nz = 16
    options%solver = 3 ! gcr, preconditioned by a V-cycle
    options%levels = 4
    options%backend = 1 ! cpu

    ! Bad input is a status and a message, not a crash.
    problem%n = 30
    if (strata_solver_create(problem, options, solver) /= STRATA_INVALID_ARGUMENT) then
        print *, "n = 30 with 4 levels was accepted"
        stop 1
    end if
    print '(a, a)', "refused as expected: ", strata_error_message()
    problem%n = 32
    ! The red-black smoother's over-relaxation weight is checked too.
    options%smoother = STRATA_SMOOTHER_RED_BLACK
    options%relaxation = 2.5
    call expect_refused("relaxation = 2.5", "relaxation")
    options%relaxation = 1.1
    ! So are the smoothing steps per level (1 to 16; STRATA_DEFAULT: the solver's).
    options%post_smooth = 17
    call expect_refused("post_smooth = 17", "post_smooth")
    options%pre_smooth = 2
    options%post_smooth = 1

    call check(strata_solver_create(problem, options, solver), "strata_solver_create")
    ! The options it runs with: those given, the library's defaults resolved (mixed precision
    ! for gcr's multigrid preconditioner, the CPU asked for).
    call check(strata_solver_options(solver, resolved), "strata_solver_options")
    if (resolved%pre_smooth /= 2 .or. resolved%post_smooth /= 1 .or. &
            resolved%precision /= STRATA_PRECISION_MIXED .or. resolved%backend /= 1) then
        print *, "strata_solver_options: not the options the solver runs with"
        stop 1
    end if
    ! ... and by name (strata_choice_name; "" for a value a setting lacks).
    if (strata_choice_name("precision", resolved%precision) /= "mixed" .or. &
            strata_choice_name("smoother", resolved%smoother) /= "red-black" .or. &
            strata_choice_name("solver", STRATA_DEFAULT) /= "") then
        print *, "strata_choice_name: ", strata_choice_name("precision", resolved%precision), &
            " ", strata_choice_name("smoother", resolved%smoother)
        stop 1
    end if
    call check(strata_solver_size(solver, size), "strata_solver_size")
    n = problem%n
    nz = problem%nz
    if (size /= int(n, c_size_t) * n * nz) stop 1
    ! k fastest: a Fortran array (nz, n, n) is strata's layout as it is.
    allocate(f(nz, n, n), u(nz, n, n), au(nz, n, n), kz(nz, n, n))
    u = 0
    kz = 1
    kz(nz / 2 + 1:, :, :) = 100

    do step = 0, 3
        if (step == 2) then
            call check(strata_solver_set_coefficients(solver, c_null_ptr, c_null_ptr, c_loc(kz), &
                c_null_ptr, c_null_ptr, c_null_ptr, c_null_ptr), "strata_solver_set_coefficients")
        end if
        do j = 1, n
            do i = 1, n
                do k = 1, nz
                    f(k, i, j) = 1e-6 * sin(0.2 * i + 0.1 * j + 0.3 * step) * cos(0.4 * k)
                end do
            end do
        end do
        call check(strata_solver_solve(solver, f, u, merge(1, 0, step > 0), info), "strata_solver_solve")
        call check(strata_solver_apply(solver, u, au), "strata_solver_apply")
        rel = norm2(au - f) / norm2(f)
        print '(a, i0, a, i0, a, es9.2)', "step ", step, ": ", info%iterations, &
            " iterations, |f - A u| / |f| = ", rel
        if (info%converged /= 1 .or. rel > 1e-4) then
            print *, "the residual check failed"
            stop 1
        end if
    end do
    call strata_solver_destroy(solver)

    ! A channel: the box periodic in x with zero-flux sides in y (docs/MODEL.md section 20).
    ! Periodic sides belong to the box: the panel refuses them, naming the setting.
    problem%boundary_x = STRATA_BOUNDARY_PERIODIC
    problem%boundary_y = STRATA_BOUNDARY_NEUMANN
    call expect_refused("a periodic panel", "boundary")
    problem%geometry = STRATA_GEOMETRY_BOX
    call check(strata_solver_create(problem, options, solver), "strata_solver_create (channel)")
    call check(strata_solver_solve(solver, f, u, 0, info), "strata_solver_solve (channel)")
    call check(strata_solver_apply(solver, u, au), "strata_solver_apply (channel)")
    rel = norm2(au - f) / norm2(f)
    print '(a, i0, a, es9.2)', "channel: ", info%iterations, " iterations, |f - A u| / |f| = ", rel
    if (info%converged /= 1 .or. rel > 1e-4) then
        print *, "the channel's residual check failed"
        stop 1
    end if
    call strata_solver_destroy(solver)

    ! The channel over a ridge: terrain-following coordinates (docs/MODEL.md section 23), the
    ! ground height of every column h(i, j) given by c_loc (read while the solver is created).
    allocate(h(n, n))
    do j = 1, n
        do i = 1, n
            h(i, j) = 0.3 * problem%height * exp(-((i - 0.5 - n / 2.0) / (0.15 * n))**2)
        end do
    end do
    problem%orography = c_loc(h)
    call check(strata_solver_create(problem, options, solver), "strata_solver_create (ridge)")
    call check(strata_solver_solve(solver, f, u, 0, info), "strata_solver_solve (ridge)")
    call check(strata_solver_apply(solver, u, au), "strata_solver_apply (ridge)")
    rel = norm2(au - f) / norm2(f)
    print '(a, i0, a, es9.2)', "ridge: ", info%iterations, " iterations, |f - A u| / |f| = ", rel
    if (info%converged /= 1 .or. rel > 1e-4) then
        print *, "the ridge's residual check failed"
        stop 1
    end if
    call strata_solver_destroy(solver)
    print '(a)', "ok"

contains

    ! Creating a solver with this problem and these options fails, the message naming field.
    subroutine expect_refused(what, field)
        character(len=*), intent(in) :: what, field
        if (strata_solver_create(problem, options, solver) /= STRATA_INVALID_ARGUMENT) then
            print '(a, a)', what, " was accepted"
            stop 1
        end if
        if (index(strata_error_message(), field) == 0) then
            print '(a, a, a)', what, ": the message does not name ", field
            stop 1
        end if
    end subroutine

    subroutine check(status, what)
        integer(c_int), intent(in) :: status
        character(len=*), intent(in) :: what
        if (status /= STRATA_OK) then
            print '(a, a, i0, a, a)', what, " failed (", status, "): ", strata_error_message()
            stop 1
        end if
    end subroutine
end program timesteps
