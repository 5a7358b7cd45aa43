! strata for Fortran: a module over the C API (libstrata, include/strata.h) with iso_c_binding.
!
!   use strata
!   type(strata_problem) :: problem
!   type(strata_options) :: options
!   type(c_ptr) :: solver
!   status = strata_problem_default(problem)
!   status = strata_options_default(options)
!   status = strata_solver_create(problem, options, solver)
!   status = strata_solver_solve(solver, rhs, u, 0, info)
!   call strata_solver_destroy(solver)
!
! Arrays are z-contiguous, v((j * n + i) * nz + k + 1) with 0-based i, j, k: a Fortran array
! u(nz, n, n) (k fastest) passes as it is. Every function returns a status (STRATA_OK = 0);
! strata_error_message() gives the message of the last failed call.
module strata
    use, intrinsic :: iso_c_binding
    implicit none
    private

    integer(c_int), parameter, public :: STRATA_OK = 0
    integer(c_int), parameter, public :: STRATA_INVALID_ARGUMENT = 1
    integer(c_int), parameter, public :: STRATA_OUT_OF_MEMORY = 2
    integer(c_int), parameter, public :: STRATA_BACKEND = 3
    integer(c_int), parameter, public :: STRATA_FILE = 4
    integer(c_int), parameter, public :: STRATA_COMMUNICATION = 5
    integer(c_int), parameter, public :: STRATA_INTERNAL_ERROR = 6
    integer(c_int), parameter, public :: STRATA_NOT_CONVERGED = 7
    ! Orders of device arrays (strata_solver_solve_device): u(nz, nx, ny) is k fastest,
    ! u(nx, ny, nz) x fastest.
    integer(c_int), parameter, public :: STRATA_ORDER_K_FASTEST = 0
    integer(c_int), parameter, public :: STRATA_ORDER_X_FASTEST = 1
    ! options%smoother and options%precision: the solver's default (red-black, and mixed
    ! precision wherever there is a multigrid cycle; fp64 for cg and the line preconditioner).
    integer(c_int), parameter, public :: STRATA_DEFAULT = -1
    ! The integers of every choice, as strata.h defines them (a test of the C API keeps
    ! them equal to strata's one table of names).
    integer(c_int), parameter, public :: STRATA_SOLVER_CG = 0
    integer(c_int), parameter, public :: STRATA_SOLVER_MG = 1
    integer(c_int), parameter, public :: STRATA_SOLVER_MG_CG = 2
    integer(c_int), parameter, public :: STRATA_SOLVER_GCR = 3
    integer(c_int), parameter, public :: STRATA_SOLVER_BICGSTAB = 4
    integer(c_int), parameter, public :: STRATA_PRECONDITIONER_LINE = 0
    integer(c_int), parameter, public :: STRATA_PRECONDITIONER_MG = 1
    integer(c_int), parameter, public :: STRATA_SMOOTHER_JACOBI = 0
    integer(c_int), parameter, public :: STRATA_SMOOTHER_RED_BLACK = 1
    integer(c_int), parameter, public :: STRATA_PRECISION_F64 = 0
    integer(c_int), parameter, public :: STRATA_PRECISION_MIXED = 1
    integer(c_int), parameter, public :: STRATA_GEOMETRY_PANEL = 0
    integer(c_int), parameter, public :: STRATA_GEOMETRY_BOX = 1
    integer(c_int), parameter, public :: STRATA_GEOMETRY_SPHERE = 2
    integer(c_int), parameter, public :: STRATA_SPHERE_STENCIL_NINE_POINT = 0
    integer(c_int), parameter, public :: STRATA_SPHERE_STENCIL_TWO_POINT = 1
    integer(c_int), parameter, public :: STRATA_BOUNDARY_DIRICHLET = 0
    integer(c_int), parameter, public :: STRATA_BOUNDARY_NEUMANN = 1
    integer(c_int), parameter, public :: STRATA_BOUNDARY_PERIODIC = 2
    integer(c_int), parameter, public :: STRATA_COARSE_SOLVE_SMOOTH = 0
    integer(c_int), parameter, public :: STRATA_COARSE_SOLVE_CG = 1
    integer(c_int), parameter, public :: STRATA_BACKEND_AUTO = 0
    integer(c_int), parameter, public :: STRATA_BACKEND_CPU = 1
    integer(c_int), parameter, public :: STRATA_BACKEND_CUDA = 2
    integer(c_int), parameter, public :: STRATA_BACKEND_REFERENCE = 3
    integer(c_int), parameter, public :: STRATA_HALO_MPI = 0
    integer(c_int), parameter, public :: STRATA_HALO_NCCL = 1
    integer(c_int), parameter, public :: STRATA_HALO_AUTO = 2

    ! Mirrors StrataProblem of strata.h.
    ! The size comes first (set by strata_problem_default: the library reads the fields of the
    ! layout this module was built with and defaults the rest).
    type, bind(c), public :: strata_problem
        integer(c_size_t) :: size
        integer(c_int32_t) :: geometry  ! 0 panel, 1 box, 2 sphere (six panels, [panel][j][i][k])
        integer(c_int32_t) :: n
        integer(c_int32_t) :: nz
        real(c_double) :: cfl
        real(c_double) :: lambda
        real(c_double) :: height
        real(c_double) :: delta
        real(c_double) :: omega
        integer(c_int32_t) :: graded
        integer(c_int32_t) :: sphere_stencil  ! 0 nine-point (second order), 1 two-point (the paper's)
        integer(c_int32_t) :: boundary_x  ! west/east sides: STRATA_BOUNDARY_DIRICHLET, _NEUMANN, _PERIODIC
        integer(c_int32_t) :: boundary_y  ! south/north sides, as boundary_x
        type(c_ptr) :: orography  ! c_loc of n*n heights h(i, j) (box or panel), of 6*n*n h(i, j, panel) (sphere), or c_null_ptr: flat
    end type

    ! Mirrors StrataOptions of strata.h.
    type, bind(c), public :: strata_options
        integer(c_size_t) :: size  ! set by strata_options_default (as strata_problem's)
        integer(c_int32_t) :: solver
        integer(c_int32_t) :: levels
        integer(c_int32_t) :: coarse_steps
        real(c_double) :: rtol
        integer(c_int32_t) :: max_it
        integer(c_int32_t) :: preconditioner
        integer(c_int32_t) :: restart
        integer(c_int32_t) :: backend
        integer(c_int32_t) :: threads
        integer(c_int32_t) :: device
        integer(c_int32_t) :: smoother   ! 0 block Jacobi, 1 red-black, STRATA_DEFAULT
        real(c_double) :: rho
        integer(c_int32_t) :: precision  ! 0 fp64, 1 mixed, STRATA_DEFAULT
        real(c_double) :: relaxation  ! red-black smoother's over-relaxation weight, in (0, 2)
        integer(c_int32_t) :: halo    ! GPU ranks' halos: 2 auto, 0 MPI through host memory, 1 NCCL
        integer(c_int32_t) :: prolongate_halos  ! 1: prolongate into rank halos; 0: exchange
        integer(c_int32_t) :: error_if_not_converged  ! 1: STRATA_NOT_CONVERGED, 0: info%converged
        real(c_double) :: coarse_rtol  ! the coarse CG's relative tolerance, in (0, 1)
        integer(c_int32_t) :: coarse_solve  ! STRATA_COARSE_SOLVE_SMOOTH (default) or _CG
        integer(c_int32_t) :: pre_smooth   ! smoothing steps before the coarse correction, 1..16; STRATA_DEFAULT (strata.h)
        integer(c_int32_t) :: post_smooth  ! smoothing steps after it, 1..16; STRATA_DEFAULT: as pre_smooth
    end type

    ! Mirrors StrataInfo of strata.h.
    type, bind(c), public :: strata_info
        integer(c_int32_t) :: converged
        integer(c_int32_t) :: iterations
        real(c_double) :: initial_residual
        real(c_double) :: relative_residual
        real(c_double) :: seconds
    end type

    ! Mirrors StrataTile: a block of one panel of the sphere (panel -1: a panel or box problem).
    type, bind(c), public :: strata_tile
        integer(c_int32_t) :: panel
        integer(c_int32_t) :: i0
        integer(c_int32_t) :: j0
        integer(c_int32_t) :: nx
        integer(c_int32_t) :: ny
    end type

    public :: strata_problem_default, strata_options_default, strata_options_paper, strata_version
    public :: strata_choice_name
    public :: strata_solver_create, strata_solver_options
    public :: strata_solver_size, strata_solver_solve, strata_solver_apply
    public :: strata_solver_set_omega, strata_solver_set_coefficients, strata_solver_destroy
    public :: strata_solver_set_project_rhs
    public :: strata_error_message, strata_solver_create_mpi, strata_solver_block
    public :: strata_solver_solve_device, strata_solver_tiles, strata_solver_set_coefficients_device

    interface
        integer(c_int) function strata_problem_init(problem, size) bind(c, name="strata_problem_init")
            import :: c_int, c_size_t, strata_problem
            type(strata_problem), intent(out) :: problem
            integer(c_size_t), value :: size
        end function

        integer(c_int) function strata_options_init(options, size) bind(c, name="strata_options_init")
            import :: c_int, c_size_t, strata_options
            type(strata_options), intent(out) :: options
            integer(c_size_t), value :: size
        end function

        integer(c_int) function strata_options_init_paper(options, size) &
                bind(c, name="strata_options_init_paper")
            import :: c_int, c_size_t, strata_options
            type(strata_options), intent(out) :: options
            integer(c_size_t), value :: size
        end function

        type(c_ptr) function strata_version_c() bind(c, name="strata_version")
            import :: c_ptr
        end function

        type(c_ptr) function strata_choice_name_c(setting, value) bind(c, name="strata_choice_name")
            import :: c_ptr, c_char, c_int32_t
            character(kind=c_char), dimension(*), intent(in) :: setting
            integer(c_int32_t), value :: value
        end function

        integer(c_int) function strata_solver_create(problem, options, solver) &
                bind(c, name="strata_solver_create")
            import :: c_int, c_ptr, strata_problem, strata_options
            type(strata_problem), intent(in) :: problem
            type(strata_options), intent(in) :: options
            type(c_ptr), intent(out) :: solver
        end function

        ! One rank of a distributed solve over the communicator `comm` (an MPI Fortran handle);
        ! every array is then the rank's block (strata_solver_block), every call collective.
        integer(c_int) function strata_solver_create_mpi(problem, options, comm, solver) &
                bind(c, name="strata_solver_create_mpi")
            import :: c_int, c_int32_t, c_ptr, strata_problem, strata_options
            type(strata_problem), intent(in) :: problem
            type(strata_options), intent(in) :: options
            integer(c_int32_t), value :: comm
            type(c_ptr), intent(out) :: solver
        end function

        ! This rank's block: columns i0 .. i0 + nx - 1, rows j0 .. j0 + ny - 1 (0-based).
        integer(c_int) function strata_solver_block(solver, i0, j0, nx, ny) bind(c, name="strata_solver_block")
            import :: c_int, c_int32_t, c_ptr
            type(c_ptr), value :: solver
            integer(c_int32_t), intent(out) :: i0, j0, nx, ny
        end function

        ! The solver's tiles in the order of its arrays (the sphere's panels or blocks of panels of
        ! this rank): up to `capacity` of them into `tiles`, their number into `count`.
        integer(c_int) function strata_solver_tiles(solver, tiles, capacity, count) &
                bind(c, name="strata_solver_tiles")
            import :: c_int, c_int32_t, c_ptr, strata_tile
            type(c_ptr), value :: solver
            type(strata_tile), intent(out) :: tiles(*)
            integer(c_int32_t), value :: capacity
            integer(c_int32_t), intent(out) :: count
        end function

        integer(c_int) function strata_solver_options_c(solver, options, size) &
                bind(c, name="strata_solver_options")
            import :: c_int, c_ptr, c_size_t, strata_options
            type(c_ptr), value :: solver
            type(strata_options), intent(out) :: options
            integer(c_size_t), value :: size
        end function

        integer(c_int) function strata_solver_size(solver, size) bind(c, name="strata_solver_size")
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: solver
            integer(c_size_t), intent(out) :: size
        end function

        ! rhs and u are device addresses (c_loc of a CUDA Fortran device array, or of an OpenACC
        ! array inside `!$acc host_data use_device(rhs, u)`) on a solver of the CUDA backend.
        integer(c_int) function strata_solver_solve_device(solver, rhs, u, order, initial_guess, info) &
                bind(c, name="strata_solver_solve_device")
            import :: c_int, c_ptr, c_int32_t, strata_info
            type(c_ptr), value :: solver, rhs, u
            integer(c_int32_t), value :: order, initial_guess
            type(strata_info), intent(out) :: info
        end function

        integer(c_int) function strata_solver_solve(solver, rhs, u, initial_guess, info) &
                bind(c, name="strata_solver_solve")
            import :: c_int, c_ptr, c_double, c_int32_t, strata_info
            type(c_ptr), value :: solver
            real(c_double), intent(in) :: rhs(*)
            real(c_double), intent(inout) :: u(*)
            integer(c_int32_t), value :: initial_guess
            type(strata_info), intent(out) :: info
        end function

        integer(c_int) function strata_solver_apply(solver, x, y) bind(c, name="strata_solver_apply")
            import :: c_int, c_ptr, c_double
            type(c_ptr), value :: solver
            real(c_double), intent(in) :: x(*)
            real(c_double), intent(out) :: y(*)
        end function

        integer(c_int) function strata_solver_set_omega(solver, omega) bind(c, name="strata_solver_set_omega")
            import :: c_int, c_ptr, c_double
            type(c_ptr), value :: solver
            real(c_double), value :: omega
        end function

        ! A singular problem (delta = 0 with no Dirichlet side): 1 projects the right-hand side onto
        ! the operator's range before each solve, 0 (the default) refuses an incompatible one.
        integer(c_int) function strata_solver_set_project_rhs(solver, project) &
                bind(c, name="strata_solver_set_project_rhs")
            import :: c_int, c_ptr, c_int32_t
            type(c_ptr), value :: solver
            integer(c_int32_t), value :: project
        end function

        ! Each field: c_loc of an array of the solver's size, or c_null_ptr for the default.
        integer(c_int) function strata_solver_set_coefficients(solver, kx, ky, kz, beta, xi_x, xi_y, xi_z) &
                bind(c, name="strata_solver_set_coefficients")
            import :: c_int, c_ptr
            type(c_ptr), value :: solver, kx, ky, kz, beta, xi_x, xi_y, xi_z
        end function

        ! As strata_solver_set_coefficients with device addresses (c_loc of CUDA Fortran device
        ! arrays, or inside `!$acc host_data use_device(...)`) in `order`, c_null_ptr for the
        ! default. On one panel or box the fields stay on the GPU: fast enough for every step.
        integer(c_int) function strata_solver_set_coefficients_device(solver, kx, ky, kz, beta, xi_x, xi_y, &
                xi_z, order) bind(c, name="strata_solver_set_coefficients_device")
            import :: c_int, c_ptr, c_int32_t
            type(c_ptr), value :: solver, kx, ky, kz, beta, xi_x, xi_y, xi_z
            integer(c_int32_t), value :: order
        end function

        subroutine strata_solver_destroy(solver) bind(c, name="strata_solver_destroy")
            import :: c_ptr
            type(c_ptr), value :: solver
        end subroutine

        type(c_ptr) function strata_last_error() bind(c, name="strata_last_error")
            import :: c_ptr
        end function

        integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
            import :: c_ptr, c_size_t
            type(c_ptr), value :: s
        end function
    end interface

contains

    ! The model problem's defaults, the struct's size set for the library.
    integer(c_int) function strata_problem_default(problem)
        type(strata_problem), intent(out) :: problem
        strata_problem_default = strata_problem_init(problem, c_sizeof(problem))
    end function

    ! The defaults (red-black smoothing and mixed precision for mg and mg-cg).
    integer(c_int) function strata_options_default(options)
        type(strata_options), intent(out) :: options
        strata_options_default = strata_options_init(options, c_sizeof(options))
    end function

    ! The options a solver runs with: those it was created with, the library's defaults
    ! (STRATA_DEFAULT, backend auto) resolved.
    integer(c_int) function strata_solver_options(solver, options)
        type(c_ptr), value :: solver
        type(strata_options), intent(out) :: options
        strata_solver_options = strata_solver_options_c(solver, options, c_sizeof(options))
    end function

    ! The paper's configuration: block-Jacobi smoothing and fp64.
    integer(c_int) function strata_options_paper(options)
        type(strata_options), intent(out) :: options
        strata_options_paper = strata_options_init_paper(options, c_sizeof(options))
    end function

    ! The version of libstrata, "MAJOR.MINOR.PATCH".
    function strata_version() result(version)
        character(len=:), allocatable :: version
        version = c_string(strata_version_c())
    end function

    ! The name of a setting's value (strata_choice_name: "mg-cg" for setting "solver" and
    ! STRATA_SOLVER_MG_CG), or "" for an unknown setting or a value it lacks (STRATA_DEFAULT among
    ! them; strata_error_message says which).
    function strata_choice_name(setting, value) result(name)
        character(len=*), intent(in) :: setting
        integer(c_int32_t), intent(in) :: value
        character(len=:), allocatable :: name
        type(c_ptr) :: p
        p = strata_choice_name_c(trim(setting) // c_null_char, value)
        if (c_associated(p)) then
            name = c_string(p)
        else
            name = ""
        end if
    end function

    ! The message of the last failed strata call on this thread, as a Fortran string.
    function strata_error_message() result(message)
        character(len=:), allocatable :: message
        message = c_string(strata_last_error())
    end function

    ! A C string as a Fortran string.
    function c_string(p) result(message)
        type(c_ptr), intent(in) :: p
        character(len=:), allocatable :: message
        character(kind=c_char), pointer :: chars(:)
        integer :: i, n
        n = int(c_strlen(p))
        call c_f_pointer(p, chars, [n])
        allocate(character(len=n) :: message)
        do i = 1, n
            message(i:i) = chars(i)
        end do
    end function
end module strata
