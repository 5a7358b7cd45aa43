! The Fortran time loop on several ranks: MPI initialised by the program, strata given its
! communicator; each rank fills and solves its own block, the residual summed over the ranks.
! Then the whole sphere on the same ranks: each rank's tiles (strata_solver_tiles) as the last
! index of its arrays.
!
!   mpif90 -I <dir of strata.mod> examples/fortran/timesteps_mpi.f90 strata.o -L target/release -lstrata
!   LD_LIBRARY_PATH=target/release mpirun -n 2 ./timesteps_mpi
program timesteps_mpi
    use, intrinsic :: iso_c_binding
    use mpi
    use strata
    implicit none
    type(strata_problem) :: problem
    type(strata_options) :: options
    type(strata_info) :: info
    type(c_ptr) :: solver
    real(c_double), allocatable :: f(:, :, :), u(:, :, :), au(:, :, :)
    integer(c_int32_t) :: i0, j0, nx, ny
    integer :: ierr, rank, size, step, i, j, k, nz
    real(c_double) :: local(2), total(2), rel
    type(strata_tile) :: tiles(64)
    integer(c_int32_t) :: ntiles
    real(c_double), allocatable :: fs(:, :, :, :), us(:, :, :, :), aus(:, :, :, :)
    integer :: t

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    call check(strata_problem_default(problem), "strata_problem_default")
    call check(strata_options_default(options), "strata_options_default")
    problem%n = 32
    problem%nz = 16
    options%solver = 2 ! mg-cg
    options%levels = 4
    options%threads = 1
    call check(strata_solver_create_mpi(problem, options, int(MPI_COMM_WORLD, c_int32_t), solver), &
        "strata_solver_create_mpi")
    call check(strata_solver_block(solver, i0, j0, nx, ny), "strata_solver_block")
    nz = problem%nz
    allocate(f(nz, nx, ny), u(nz, nx, ny), au(nz, nx, ny))
    u = 0
    do step = 0, 2
        ! The global field, evaluated on this rank's block (global indices i0 + i - 1, j0 + j - 1).
        do j = 1, ny
            do i = 1, nx
                do k = 1, nz
                    f(k, i, j) = 1e-6 * sin(0.2 * (i0 + i) + 0.1 * (j0 + j) + 0.3 * step) * cos(0.4 * k)
                end do
            end do
        end do
        call check(strata_solver_solve(solver, f, u, merge(1, 0, step > 0), info), "strata_solver_solve")
        call check(strata_solver_apply(solver, u, au), "strata_solver_apply")
        local = [sum((au - f)**2), sum(f**2)]
        call MPI_Allreduce(local, total, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
        rel = sqrt(total(1) / total(2))
        if (rank == 0) print '(a, i0, a, i0, a, i0, a, es9.2)', "ranks ", size, ", step ", step, ": ", &
            info%iterations, " iterations, |f - A u| / |f| = ", rel
        if (info%converged /= 1 .or. rel > 1e-4) then
            print *, "rank", rank, ": the residual check failed"
            call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
        end if
    end do
    call strata_solver_destroy(solver)

    ! The whole sphere: six panels of 16 x 16 columns over the same ranks.
    problem%geometry = 2
    problem%n = 16
    options%levels = 3
    call check(strata_solver_create_mpi(problem, options, int(MPI_COMM_WORLD, c_int32_t), solver), &
        "strata_solver_create_mpi (sphere)")
    call check(strata_solver_tiles(solver, tiles, 64_c_int32_t, ntiles), "strata_solver_tiles")
    nx = tiles(1)%nx
    ny = tiles(1)%ny
    allocate(fs(nz, nx, ny, ntiles), us(nz, nx, ny, ntiles), aus(nz, nx, ny, ntiles))
    do t = 1, ntiles
        do j = 1, ny
            do i = 1, nx
                do k = 1, nz
                    fs(k, i, j, t) = 1e-6 * cos(0.3 * (tiles(t)%i0 + i) + 0.2 * (tiles(t)%j0 + j) &
                        + tiles(t)%panel) * cos(0.4 * k)
                end do
            end do
        end do
    end do
    call check(strata_solver_solve(solver, fs, us, 0, info), "strata_solver_solve (sphere)")
    call check(strata_solver_apply(solver, us, aus), "strata_solver_apply (sphere)")
    local = [sum((aus - fs)**2), sum(fs**2)]
    call MPI_Allreduce(local, total, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    rel = sqrt(total(1) / total(2))
    if (rank == 0) print '(a, i0, a, i0, a, i0, a, es9.2)', "sphere, ranks ", size, ", tiles on rank 0: ", &
        ntiles, ": ", info%iterations, " iterations, |f - A u| / |f| = ", rel
    if (info%converged /= 1 .or. rel > 1e-4) then
        print *, "rank", rank, ": the sphere's residual check failed"
        call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    call strata_solver_destroy(solver)
    if (rank == 0) print '(a)', "ok"
    call MPI_Finalize(ierr)

contains

    subroutine check(status, what)
        integer(c_int), intent(in) :: status
        character(len=*), intent(in) :: what
        integer :: e
        if (status /= STRATA_OK) then
            print '(a, a, i0, a, a)', what, " failed (", status, "): ", strata_error_message()
            call MPI_Abort(MPI_COMM_WORLD, 1, e)
        end if
    end subroutine
end program timesteps_mpi
