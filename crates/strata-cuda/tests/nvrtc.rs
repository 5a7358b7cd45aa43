//! Every CUDA kernel compiles with NVRTC for sm_80 and sm_90 (no GPU needed: the test command
//! installs the NVRTC library from the `nvidia-cuda-nvrtc` wheel).

use strata::precision::Storage;
use strata_cuda::kernels::{build_options, compile_ptx, nvrtc_available, Build, Kernel};

#[test]
fn kernels_compile_for_ampere_and_hopper() {
    assert!(
        nvrtc_available(),
        "libnvrtc.so.13 not found: run scripts/test (it installs the nvidia-cuda-nvrtc wheel and \
         sets LD_LIBRARY_PATH)"
    );
    for cc in [80, 90] {
        let arch = format!("compute_{cc}");
        // The paper's nz, an odd nz that leaves a partial checkpoint chunk, and the smallest;
        // fields in fp64 and in fp32 (the multigrid of a mixed-precision solve); 64-bit and
        // 32-bit offsets (the build of small levels); the line kernels with the forward sweep
        // in shared memory (all levels, some, none) or checkpointed; with orography's slant
        // couplings (-DSLANT) or without; with the sphere's diagonal couplings in the
        // relaxations (-DDIAGONALS) or without.
        for (nz, storage, narrow, smem, slant, diagonals) in [
            (128, Storage::F64, false, 0, false, false),
            (37, Storage::F64, false, 37, true, false),
            (2, Storage::F64, false, 0, false, true),
            (128, Storage::F32, false, 128, false, false),
            (128, Storage::F32, false, 0, true, true),
            (128, Storage::F32, false, 48, false, false),
            (37, Storage::F32, false, 10, false, true),
            (128, Storage::F64, true, 0, true, false),
            (2, Storage::F64, true, 2, false, false),
            (128, Storage::F32, true, 32, true, false),
            (128, Storage::F64, false, 0, false, true),
        ] {
            let build = Build {
                nz,
                storage,
                narrow,
                slant,
                diagonals,
            };
            let ptx = compile_ptx(nz, cc, &build_options(build, smem, &[]))
                .unwrap_or_else(|e| panic!("{arch}, {build:?}, smem {smem}: {e}"))
                .to_src();
            let target = arch.replace("compute", "sm");
            assert!(
                ptx.contains(&format!(".target {target}")),
                "{arch}: no .target line"
            );
            for name in Kernel::ALL.map(Kernel::name) {
                assert!(
                    ptx.contains(&format!(".entry {name}(")),
                    "{arch}, nz = {nz}, {storage:?}: no kernel {name}"
                );
            }
        }
        // The x-contiguous layout's builds (STRATA_CUDA_LAYOUT=x; the builds above take the
        // process's layout, the colour-split one by default): every operator kind.
        for (single, narrow, slant, diagonals) in [
            (true, true, false, false),
            (true, false, true, true),
            (false, false, false, false),
            (false, true, true, false),
            (false, false, false, true),
        ] {
            let options = strata_cuda::compile::options(single, narrow, (slant, diagonals), 0, &[]);
            assert!(!options
                .iter()
                .any(|o| o == strata_cuda::layout::SPLIT_OPTION));
            compile_ptx(128, cc, &options).unwrap_or_else(|e| {
                panic!("{arch}, single {single}, narrow {narrow}, x layout: {e}")
            });
        }
        // The experiments' build options (STRATA_CUDA_OPTIONS) compile too: the prolongation's
        // plain march and larger groups, the split line solve without its launch bound and with another, the
        // whole-row kernels by column instead of by slot in the colour-split rows, the face
        // copies with k fastest on every side, and (the nine-point build) the fused correction and
        // the relaxations without their launch bounds in fp32 and with them in fp64, and the fused
        // restriction's vertical entries without vector loads and in groups of 8.
        for (nz, storage, options, diagonals) in [
            (
                128,
                Storage::F32,
                ["-DPROLONG_GROUP=0", "-DSOLVE_SPLIT_MINB=0"],
                false,
            ),
            (
                128,
                Storage::F32,
                ["-DSLOT_COLUMNS=0", "-DPROLONG_GROUP=8"],
                false,
            ),
            (
                64,
                Storage::F64,
                ["-DSLOT_COLUMNS=0", "-DRR_GROUP=0"],
                false,
            ),
            (
                128,
                Storage::F32,
                ["-DHALO_ALONG_X=0", "-DRR_GROUP=0"],
                false,
            ),
            (
                37,
                Storage::F64,
                ["-DPROLONG_GROUP=8", "-DSOLVE_SPLIT_MINB=2"],
                false,
            ),
            (
                128,
                Storage::F32,
                ["-DCORRECT_MINB=0", "-DDIAG_MINB=0"],
                true,
            ),
            // The fused restriction's vertical entries: scalar loads, and vector loads in
            // groups of 8 where nz (36) ends inside the last group.
            (128, Storage::F32, ["-DV_VEC=0", "-DRR_GROUP=8"], false),
            (36, Storage::F32, ["-DV_VEC=1", "-DRR_GROUP=8"], false),
            (
                128,
                Storage::F64,
                ["-DCORRECT_MINB=2", "-DDIAG_MINB=2"],
                true,
            ),
        ] {
            let build = Build {
                nz,
                storage,
                narrow: false,
                slant: false,
                diagonals,
            };
            let options = options.map(String::from);
            compile_ptx(nz, cc, &build_options(build, 0, &options))
                .unwrap_or_else(|e| panic!("{arch}, {build:?}, {options:?}: {e}"));
        }
    }
}

#[test]
fn compile_errors_carry_the_nvrtc_log() {
    assert!(
        nvrtc_available(),
        "libnvrtc.so.13 not found: run scripts/test"
    );
    // nz = 1 trips the kernels' own #error, which must reach the caller.
    let e = compile_ptx(1, 90, &[]).unwrap_err().to_string();
    assert!(
        e.contains("NVRTC failed") && e.contains("NZ must be at least 2"),
        "{e}"
    );
}

/// The second compile of the same kernels comes from the disk cache (a file named by the
/// options), and a different nz is another file.
#[test]
fn compiled_kernels_are_cached_on_disk() {
    use strata_cuda::kernels::cached_ptx_in;
    let dir = std::env::temp_dir().join(format!("strata-ptx-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = cached_ptx_in(Some(&dir), 16, 90, &[]).unwrap().to_src();
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "one cache file");
    let t = std::time::Instant::now();
    let second = cached_ptx_in(Some(&dir), 16, 90, &[]).unwrap().to_src();
    println!("cached load: {:?}", t.elapsed());
    assert_eq!(first, second);
    cached_ptx_in(Some(&dir), 17, 90, &[]).unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The build ships kernels for every build a solve with the default nz takes (the test command
/// builds with NVRTC on the loader path), each target loads on the GPUs it should and on no
/// other, and a shipped cubin is byte for byte what NVRTC gives at run time for that build.
#[test]
fn kernels_are_shipped_built_for_the_default_builds() {
    use strata_cuda::compile::Target;
    use strata_cuda::kernels::{compile_image, shipped, Tuning, SHIPPED, SHIPPED_NOTE, SHIPPED_NZ};
    assert!(
        SHIPPED_NZ.contains(&128) && SHIPPED_NZ.contains(&64),
        "no kernels built in ({SHIPPED_NOTE}): build with libnvrtc.so.13 on LD_LIBRARY_PATH"
    );
    let tuning = Tuning::default();
    for &nz in SHIPPED_NZ {
        for storage in [Storage::F64, Storage::F32] {
            for b in 0..8 {
                let (narrow, diagonals, slant) = (b & 1 == 1, b & 2 == 2, b & 4 == 4);
                let build = Build {
                    nz,
                    storage,
                    narrow,
                    slant,
                    diagonals,
                };
                let opts = build.options(&tuning);
                let target = |major, minor| shipped(build, &opts, major, minor).map(|s| s.target);
                assert_eq!(target(9, 0), Some(Target::Cubin(90)), "{build:?}");
                assert_eq!(target(8, 0), Some(Target::Cubin(80)), "{build:?}");
                assert_eq!(target(8, 9), Some(Target::Cubin(80)), "{build:?}");
                assert_eq!(target(10, 0), Some(Target::Ptx(90)), "{build:?}");
                assert_eq!(target(12, 0), Some(Target::Ptx(90)), "{build:?}");
                // Older GPUs, other options: compiled at run time.
                assert_eq!(target(7, 5), None, "{build:?}");
                let mut other = opts.clone();
                other.push("-DKCH=8".into());
                assert!(shipped(build, &other, 9, 0).is_none());
            }
        }
    }
    assert!(shipped(Build::f64(37), &[], 9, 0).is_none());
    // Every image unpacks to a cubin (ELF) or PTX naming every kernel.
    for s in SHIPPED {
        let image = s.image().unwrap();
        match s.target {
            Target::Cubin(_) => assert_eq!(&image[..4], b"\x7fELF", "{s:?}"),
            Target::Ptx(cc) => {
                let text = String::from_utf8(image.clone()).unwrap();
                assert!(text.contains(&format!(".target sm_{cc}")));
            }
        }
        for name in Kernel::ALL.map(Kernel::name) {
            assert!(
                image.windows(name.len()).any(|w| w == name.as_bytes()),
                "{:?} nz {}: no kernel {name}",
                s.target,
                s.nz
            );
        }
    }
    // The same build compiled now is the shipped image, bit for bit (the sphere's, and the
    // terrain sphere's with the slant couplings). NVRTC is not always deterministic: in one of
    // three identical compiles of the slant build (2026-11-29) two registers of one kernel
    // were numbered the other way round. A stale image (other sources or options) differs on
    // every compile, so up to three compiles are asked for one that matches.
    for slant in [false, true] {
        let build = Build {
            nz: 128,
            storage: Storage::F32,
            narrow: true,
            slant,
            diagonals: true,
        };
        let opts = build.options(&tuning);
        let s = shipped(build, &opts, 9, 0).unwrap();
        let shipped_image = s.image().unwrap();
        let compiles = (1..=3)
            .find(|_| compile_image(128, Target::Cubin(90), &opts).unwrap() == shipped_image);
        match compiles {
            Some(1) => {}
            Some(n) => println!("{build:?}: NVRTC matched the shipped cubin on compile {n} of 3"),
            None => {
                panic!("the shipped sm_90 cubin of {build:?} differs from NVRTC's (3 compiles)")
            }
        }
    }
}

/// The device-side stopping test (kernels/loop.cu) is shipped as PTX for the oldest target,
/// is what NVRTC gives now, and calls the device runtime's `cudaGraphSetConditional`, which the
/// driver links when it loads the module.
#[test]
fn the_stopping_test_is_shipped_as_ptx() {
    use strata_cuda::compile::{compile_loop, LOOP_TARGET};
    use strata_cuda::kernels::SHIPPED_LOOP;
    let shipped = SHIPPED_LOOP.expect("built with libnvrtc.so.13 on LD_LIBRARY_PATH");
    let text = std::str::from_utf8(shipped).expect("PTX is text");
    assert_eq!(LOOP_TARGET, strata_cuda::compile::Target::Ptx(80));
    assert!(text.contains(".target sm_80"), "{text}");
    assert!(text.contains(".entry loop_test"), "{text}");
    assert!(
        text.contains(".extern .func cudaGraphSetConditional"),
        "{text}"
    );
    assert_eq!(compile_loop().unwrap(), shipped);
}
