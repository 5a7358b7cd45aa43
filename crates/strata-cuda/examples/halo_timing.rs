//! What packing and unpacking one rank's halo costs on the GPU, per exchange: the parts one
//! launch each (`pack_face`, `pack_column`, … — how the communicators did it) against one
//! launch for all of them (`pack_halo`, `unpack_halo`). The parts are those of the south-west
//! rank of a 2 × 2 grid (east and north faces; with the north-east corner column on the last
//! exchange of a coarse level), on the levels of a local `m × m × nz` block. No communication:
//! this is the device-side part of an exchange that NCCL's own time adds to.
//! `halo_timing [m] [nz] [repeats]` (default 1024 128 2000).

use std::time::Instant;
use strata::backend::prelude::*;
use strata::backend::{pack_halo_one_by_one, unpack_halo_one_by_one, HaloPart};
use strata::grid::{Block, Side};
use strata::problem::Geometry;
use strata_cuda::CudaBackend;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let m: usize = args.first().map_or(Ok(1024), |a| a.parse())?;
    let nz: usize = args.get(1).map_or(Ok(128), |a| a.parse())?;
    let repeats: usize = args.get(2).map_or(Ok(2000), |a| a.parse())?;
    let b = CudaBackend::new(0)?;
    b.load_kernels(nz)?;
    println!("level m x m x nz, parts: us per exchange (pack + unpack), one launch per part / one launch for all");
    let mut side = m;
    while side >= 32 {
        let block = Block {
            n: 2 * side,
            i0: 0,
            j0: 0,
            nx: side,
            ny: side,
            panel: None,
            bc: Default::default(),
        };
        let s = strata_conformance::level(Geometry::Box, block, nz);
        let op = b.prepare_level(&s)?;
        let mut x = b.alloc(&op)?;
        for corner in [false, true] {
            let mut parts = vec![HaloPart::Face(Side::East), HaloPart::Face(Side::North)];
            if corner {
                parts.push(HaloPart::Corner(0));
            }
            let mut send: Vec<_> = parts
                .iter()
                .map(|p| b.alloc_face(p.len(&s)))
                .collect::<Result<_, _>>()?;
            let recv: Vec<_> = parts
                .iter()
                .map(|p| b.alloc_face(p.len(&s)))
                .collect::<Result<_, _>>()?;
            let mut time = |batched: bool| -> Result<f64, Box<dyn std::error::Error>> {
                let mut run = |x: &mut _| -> strata::Result<()> {
                    let mut out: Vec<(HaloPart, &mut _)> =
                        parts.iter().copied().zip(send.iter_mut()).collect();
                    let back: Vec<(HaloPart, &_)> =
                        parts.iter().copied().zip(recv.iter()).collect();
                    if batched {
                        b.pack_halo(&op, x, &mut out)?;
                        b.unpack_halo(&op, x, &back)
                    } else {
                        pack_halo_one_by_one(&b, &op, x, &mut out)?;
                        unpack_halo_one_by_one(&b, &op, x, &back)
                    }
                };
                for _ in 0..repeats / 10 {
                    run(&mut x)?;
                }
                b.synchronize()?;
                let t = Instant::now();
                for _ in 0..repeats {
                    run(&mut x)?;
                }
                b.synchronize()?;
                Ok(t.elapsed().as_secs_f64() / repeats as f64 * 1e6)
            };
            // Alternating, twice each.
            let (a1, b1, a2, b2) = (time(false)?, time(true)?, time(false)?, time(true)?);
            println!(
                "{side:5} x {side:5} x {nz}, {} parts: {:6.2} {:6.2} / {:6.2} {:6.2}",
                parts.len(),
                a1,
                a2,
                b1,
                b2
            );
        }
        side /= 2;
    }
    Ok(())
}
