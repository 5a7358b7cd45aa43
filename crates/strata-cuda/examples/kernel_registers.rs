//! What ptxas gives each kernel of one build — registers per thread, stack frame (spills and
//! local arrays), static shared memory — without a CUDA toolkit or a GPU: the build's sm_90 cubin
//! from NVRTC (as a backend would compile it, with `STRATA_CUDA_OPTIONS` as its extra options),
//! read from the ELF's `.nv.info` attributes. A kernel's registers bound its occupancy (65536 per
//! SM: 128 registers let two blocks of 256 threads share one, 158 only one).
//! `kernel_registers [f32|f64] [nz] [wide] [slant] [diagonals] [name filter]` (default f32 128
//! with 32-bit offsets: the fp32 levels of a large mixed-precision solve; `wide` for 64-bit).

use strata::precision::Storage;
use strata_cuda::compile::Target;
use strata_cuda::kernels::{compile_image, Build, Tuning};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let storage = match args.first().map_or("f32", String::as_str) {
        "f64" => Storage::F64,
        "f32" => Storage::F32,
        other => return Err(format!("storage `{other}`: f32 or f64").into()),
    };
    let nz: usize = args.get(1).map_or(Ok(128), |a| a.parse())?;
    let has = |word: &str| args.iter().skip(2).any(|a| a == word);
    let build = Build {
        nz,
        storage,
        narrow: !has("wide"),
        slant: has("slant"),
        diagonals: has("diagonals"),
    };
    let filter = args
        .iter()
        .skip(2)
        .find(|a| !["wide", "slant", "diagonals"].contains(&a.as_str()))
        .cloned()
        .unwrap_or_default();
    let options = build.options(&Tuning::from_env()?);
    let cubin = compile_image(nz, Target::Cubin(90), &options)?;
    println!("{build:?}, options {options:?}");
    println!(
        "{:<44} {:>5} {:>6} {:>7}",
        "kernel", "regs", "frame", "shared"
    );
    for k in kernel_info(&cubin)? {
        if k.name.contains(&filter) {
            println!(
                "{:<44} {:>5} {:>6} {:>7}",
                k.name, k.regs, k.frame, k.shared
            );
        }
    }
    Ok(())
}

/// One kernel's resources.
#[derive(Default)]
struct Info {
    name: String,
    regs: u32,
    frame: u32,
    shared: u64,
}

/// The kernels of a cubin (ELF64) with their registers (`EIATTR_REGCOUNT`) and stack frame
/// (`EIATTR_FRAME_SIZE`) from `.nv.info`, and static shared memory (`.nv.shared.<kernel>`).
fn kernel_info(elf: &[u8]) -> Result<Vec<Info>, String> {
    // The little-endian unsigned integer of `n` bytes at offset `o`.
    let uint = |o: usize, n: usize| -> Result<u64, String> {
        let bytes = elf
            .get(o..o + n)
            .ok_or_else(|| format!("truncated ELF at {o}"))?;
        Ok(bytes.iter().rev().fold(0, |v, &b| (v << 8) | u64::from(b)))
    };
    let u16_at = |o: usize| uint(o, 2).map(|v| v as u16);
    let u32_at = |o: usize| uint(o, 4).map(|v| v as u32);
    let u64_at = |o: usize| uint(o, 8);
    if elf.get(..5) != Some(b"\x7fELF\x02".as_slice()) {
        return Err("not a 64-bit ELF image".into());
    }
    let (shoff, shentsize) = (u64_at(0x28)? as usize, u16_at(0x3a)? as usize);
    let (shnum, shstrndx) = (u16_at(0x3c)? as usize, u16_at(0x3e)? as usize);
    // (name offset, type, file offset, size, link) of every section.
    let mut sections = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let o = shoff + i * shentsize;
        let (name, kind) = (u32_at(o)? as usize, u32_at(o + 4)?);
        let (off, size, link) = (u64_at(o + 24)?, u64_at(o + 32)?, u32_at(o + 40)?);
        sections.push((name, kind, off as usize, size as usize, link as usize));
    }
    let text = |table: usize, at: usize| -> String {
        let start = sections.get(table).map_or(0, |s| s.2) + at;
        let rest = elf.get(start..).unwrap_or_default();
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        String::from_utf8_lossy(&rest[..end]).into_owned()
    };
    let symtab = sections
        .iter()
        .find(|s| s.1 == 2)
        .ok_or("no symbol table")?;
    let symbols: Vec<String> = (0..symtab.3 / 24)
        .map(|i| u32_at(symtab.2 + 24 * i).map(|n| text(symtab.4, n as usize)))
        .collect::<Result<_, _>>()?;
    let mut kernels: std::collections::BTreeMap<String, Info> = Default::default();
    for &(name, _, off, size, _) in &sections {
        let name = text(shstrndx, name);
        if let Some(kernel) = name.strip_prefix(".nv.shared.") {
            kernels.entry(kernel.to_string()).or_default().shared = size as u64;
        }
        if name != ".nv.info" {
            continue;
        }
        // Attributes: format byte, attribute byte, then by format nothing, a byte, a u16, or
        // (format 4) a u16 length and that many bytes.
        let mut o = off;
        while o + 2 <= off + size {
            let (format, attribute) = (elf[o], elf[o + 1]);
            o += 2;
            match format {
                1 => {}
                2 => o += 1,
                3 => o += 2,
                4 => {
                    let len = u16_at(o)? as usize;
                    o += 2;
                    if len == 8 && (attribute == 0x2f || attribute == 0x11) {
                        let symbol = symbols
                            .get(u32_at(o)? as usize)
                            .cloned()
                            .unwrap_or_default();
                        let value = u32_at(o + 4)?;
                        let k = kernels.entry(symbol).or_default();
                        if attribute == 0x2f {
                            k.regs = value;
                        } else {
                            k.frame = value;
                        }
                    }
                    o += len;
                }
                other => return Err(format!(".nv.info attribute format {other} unknown")),
            }
        }
    }
    Ok(kernels
        .into_iter()
        .filter(|(_, k)| k.regs > 0)
        .map(|(name, k)| Info { name, ..k })
        .collect())
}
