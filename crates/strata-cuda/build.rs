//! Compiles the CUDA kernels at build time, where NVRTC can be loaded (libnvrtc.so.13 on the
//! loader path: the test command installs the `nvidia-cuda-nvrtc` wheel and sets
//! LD_LIBRARY_PATH), so that a solver's first creation on a fresh machine loads machine code
//! instead of compiling for seconds: cubins for sm_80 and sm_90 and PTX (compute_90) for newer
//! GPUs, for every build a solve with `nz` levels takes by default — fp64 and fp32 fields, 64-
//! and 32-bit offsets, with the sphere's diagonal couplings in the relaxations or without, with
//! orography's slant couplings or without — for each `nz` of
//! `STRATA_CUDA_SHIPPED_NZ` (comma-separated; default
//! 64,128; empty: none). Without NVRTC it says so (a cargo warning) and ships none: the kernels
//! are then compiled at run time, as for other nz, tuning options and architectures.
//! Writes `$OUT_DIR/shipped.rs` (the table src/kernels.rs includes), the images,
//! deflate-compressed (96 images for the default nz, 35 MB), into one cache per target directory
//! that every profile and feature set shares (`image_cache`), and the PTX of the device-side
//! stopping test (kernels/loop.cu).

#[path = "src/compile.rs"]
#[allow(dead_code)]
mod compile;

use compile::Target;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The targets every build is compiled to.
const TARGETS: [Target; 3] = [Target::Cubin(80), Target::Cubin(90), Target::Ptx(90)];

/// Default of `STRATA_CUDA_SHIPPED_NZ`.
const DEFAULT_NZ: &str = "64,128";

/// One image to compile: nz, fp32, 32-bit offsets, (slant couplings, diagonal couplings),
/// target.
type Job = (usize, bool, bool, (bool, bool), Target);

fn main() {
    println!("cargo:rerun-if-changed=kernels");
    println!("cargo:rerun-if-changed=src/compile.rs");
    println!("cargo:rerun-if-env-changed=STRATA_CUDA_SHIPPED_NZ");
    println!("cargo:rerun-if-env-changed=LD_LIBRARY_PATH");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let nz_list = std::env::var("STRATA_CUDA_SHIPPED_NZ").unwrap_or_else(|_| DEFAULT_NZ.into());
    let nzs: Vec<usize> = nz_list
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| match t.parse::<usize>() {
            Ok(nz) if nz >= 2 => nz,
            _ => panic!("STRATA_CUDA_SHIPPED_NZ: `{t}` is not a number of levels (2 or more)"),
        })
        .collect();
    let jobs: Vec<Job> = nzs
        .iter()
        .flat_map(|&nz| {
            (0..16).flat_map(move |b| {
                let (single, narrow) = (b & 1 == 1, b & 2 == 2);
                let cross = (b & 8 == 8, b & 4 == 4);
                TARGETS.map(|t| (nz, single, narrow, cross, t))
            })
        })
        .collect();
    // SAFETY: only tries to dlopen the library; no symbol is called.
    let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    let (images, note) = if jobs.is_empty() {
        (
            Vec::new(),
            "none: STRATA_CUDA_SHIPPED_NZ is empty".to_string(),
        )
    } else if !nvrtc {
        println!(
            "cargo:warning=strata-cuda: NVRTC (libnvrtc.so.13) was not found at build time, so \
             no CUDA kernels are built into this binary: they will be compiled at run time \
             (seconds at a solver's first creation on each machine). Put the lib directory of \
             CUDA 13 or of the nvidia-cuda-nvrtc wheel on LD_LIBRARY_PATH to ship them built."
        );
        (
            Vec::new(),
            "none: NVRTC was not found when this binary was built".to_string(),
        )
    } else {
        let images = compile_all(&jobs, &out);
        let note = format!(
            "nz {} for {}",
            nzs.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            TARGETS
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        (images, note)
    };
    let mut table = table(&images, &nzs, &note);
    // The device-side stopping test (kernels/loop.cu), as PTX, wherever NVRTC was found.
    let loop_ptx = if nvrtc {
        let ptx = compile::compile_loop()
            .unwrap_or_else(|log| panic!("strata-cuda: the stopping test does not compile: {log}"));
        let path = out.join("loop.ptx");
        std::fs::write(&path, ptx).expect("writing loop.ptx into OUT_DIR");
        format!("Some(include_bytes!({:?}))", path.display().to_string())
    } else {
        "None".to_string()
    };
    let _ = writeln!(
        table,
        "/// The PTX of the device-side stopping test (kernels/loop.cu), if built.\npub const \
         SHIPPED_LOOP: Option<&[u8]> = {loop_ptx};"
    );
    std::fs::write(out.join("shipped.rs"), table).expect("writing shipped.rs into OUT_DIR");
}

/// Compiles every job that [`image_cache`] does not hold yet, on as many threads as cargo allows;
/// the images in job order with their file names.
fn compile_all(jobs: &[Job], out: &Path) -> Vec<(Job, Vec<String>, PathBuf)> {
    let cache = image_cache(out);
    let threads = std::env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, jobs.len());
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&job) = jobs.get(i) else { break };
                let (nz, single, narrow, (slant, diagonals), target) = job;
                let bytes = if single { 4 } else { 8 };
                let (levels, _) = compile::thomas_levels(nz, bytes, compile::THOMAS_SMEM);
                // The default field layout's builds (the colour-split rows, strata_cuda::layout).
                let split = [compile::SPLIT_OPTION.to_string()];
                let options = compile::options(single, narrow, (slant, diagonals), levels, &split);
                let name = format!(
                    "kernels-nz{nz}-{}{}{}{}.{}",
                    if single { "f32" } else { "f64" },
                    if narrow { "-idx32" } else { "" },
                    if slant { "-slant" } else { "" },
                    if diagonals { "-diagonals" } else { "" },
                    match target {
                        Target::Ptx(cc) => format!("compute_{cc}.ptx"),
                        Target::Cubin(cc) => format!("sm_{cc}.cubin"),
                    }
                );
                let key = image_key(nz, target, &options);
                let path = cache.join(format!("{name}-{key}.deflate"));
                if !path.is_file() {
                    let image = compile::compile(nz, target, &options).unwrap_or_else(|log| {
                        panic!("strata-cuda: the kernels do not compile (nz {nz}, {target}): {log}")
                    });
                    let packed = miniz_oxide::deflate::compress_to_vec(&image, 9);
                    // Written beside and renamed: another build reading the cache never sees
                    // half an image.
                    let tmp = cache.join(format!("{name}-{key}.{}.tmp", std::process::id()));
                    std::fs::write(&tmp, packed).expect("writing a kernel image into its cache");
                    std::fs::rename(&tmp, &path).expect("renaming a kernel image into its cache");
                }
                prune(&cache, &name, &path);
                // A deleted image makes cargo rerun this script, which compiles it again.
                println!("cargo:rerun-if-changed={}", path.display());
                done.lock()
                    .expect("no thread panicked holding it")
                    .push((i, options, path));
            });
        }
    });
    let mut done = done.into_inner().expect("no thread panicked holding it");
    done.sort_by_key(|(i, _, _)| *i);
    done.into_iter()
        .map(|(i, options, path)| (jobs[i], options, path))
        .collect()
}

/// What an image is compiled from, as a hash: the kernel sources' text, nz, the target, the
/// options and NVRTC's version (not the loader path, which cargo extends per profile when it runs
/// this script). It names the image's file in [`image_cache`]. (std's hasher may change with the
/// toolchain: that costs one compilation, not a wrong image.)
fn image_key(nz: usize, target: Target, options: &[String]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        compile::SOURCES,
        nz,
        target.to_string(),
        options,
        compile::nvrtc_version(),
    )
        .hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Where the images are kept: `strata-cuda-kernels` in cargo's target directory (the first
/// directory above OUT_DIR holding cargo's CACHEDIR.TAG), else OUT_DIR itself. Each image is
/// named by its [`image_key`], so every profile and feature set of one target directory (the test
/// command's clippy, rustdoc, tests, C library and Python wheel each have an OUT_DIR of their
/// own) shares one compilation of each, and a touched or restored source, which makes cargo rerun
/// this script (it compares times, not contents), compiles nothing.
fn image_cache(out: &Path) -> PathBuf {
    out.ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .map(|target| target.join("strata-cuda-kernels"))
        .filter(|dir| std::fs::create_dir_all(dir).is_ok())
        .unwrap_or_else(|| out.to_path_buf())
}

/// How many images of one build [`prune`] keeps: the one built now and the most recently
/// compiled others, so that checkouts of different kernel sources sharing one target directory
/// (worktrees, a branch and main) do not recompile each other's images by turns.
const KEPT_IMAGES: usize = 3;

/// Removes the images of the build `name` from `cache` but `keep` and the [`KEPT_IMAGES`] − 1
/// most recently written others (images of sources or options no longer built).
fn prune(cache: &Path, name: &str, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    let prefix = format!("{name}-");
    let mut others: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|file| {
                file.strip_prefix(&prefix)
                    .and_then(|rest| rest.strip_suffix(".deflate"))
                    .is_some_and(|key| {
                        key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit())
                    })
            }) && e.path() != keep
        })
        .map(|e| {
            let written = e
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (written, e.path())
        })
        .collect();
    others.sort_by_key(|(written, _)| std::cmp::Reverse(*written));
    for (_, path) in others.into_iter().skip(KEPT_IMAGES - 1) {
        let _ = std::fs::remove_file(path);
    }
}

/// The Rust source of the table: `SHIPPED`, `SHIPPED_NZ`, `SHIPPED_NOTE`.
fn table(images: &[(Job, Vec<String>, PathBuf)], nzs: &[usize], note: &str) -> String {
    let mut t = String::new();
    t.push_str("// Generated by build.rs.\n");
    let _ = writeln!(
        t,
        "/// The levels per column of the built-in kernels (none when NVRTC was missing at build \
         time).\npub const SHIPPED_NZ: &[usize] = &{:?};",
        if images.is_empty() { &[][..] } else { nzs }
    );
    let _ = writeln!(
        t,
        "/// What kernels this binary has built in, in words.\npub const SHIPPED_NOTE: &str = \
         {note:?};"
    );
    t.push_str("/// The built-in kernel images.\npub static SHIPPED: &[super::Shipped] = &[\n");
    for ((nz, single, narrow, (slant, diagonals), target), options, path) in images {
        let target = match target {
            Target::Ptx(cc) => format!("crate::compile::Target::Ptx({cc})"),
            Target::Cubin(cc) => format!("crate::compile::Target::Cubin({cc})"),
        };
        let _ = writeln!(
            t,
            "    super::Shipped {{ target: {target}, nz: {nz}, single: {single}, narrow: \
             {narrow}, slant: {slant}, diagonals: {diagonals}, options: &{options:?}, packed: \
             include_bytes!({:?}) }},",
            path.display().to_string()
        );
    }
    t.push_str("];\n");
    t
}
